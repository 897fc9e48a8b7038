// TensorIterator: the shared geometry of element-wise operators (broadcast
// shape, common dtype, common device, output allocation, output strides and
// the iteration order), computed once by build() and used both by Meta
// kernels (which stop after build) and by CPU kernels (which then loop).
//
//   TensorIterator iter("add.Tensor");
//   iter.add_output(Tensor()).add_input(self).add_input(other);
//   iter.build();                                   // allocates the output
//   iter.for_each([&](char** data, const int64_t* strides, int64_t n) { ... });
//   return iter.output();
//
// Note [TensorIterator build]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// build() follows PyTorch's TensorIterator, in this order:
//  1. shape: the broadcast of the inputs (and, when outputs are not resized,
//     of the outputs too). "The size of tensor a (3) must match the size of
//     tensor b (4) at non-singleton dimension 1" (ValueError).
//  2. device: the first operand that is not a 0-dim CPU tensor decides;
//     0-dim CPU *inputs* may accompany any device (PyTorch's "CPU scalars").
//  3. dtype: the result type of the inputs (Note [Result type computation]),
//     unless a static dtype is declared (copy_); every defined output must be
//     able to hold it (can_cast), else TypeError.
//  4. order: dims are sorted by the operands' strides, fastest first, as
//     PyTorch's reorder_dimensions does (broadcast dims do not vote; ties go
//     to the smaller dim); outputs that will be (re)allocated do not vote.
//  5. outputs: an undefined output is allocated with the broadcast shape and
//     strides that follow that order (contiguous when the order is the
//     natural one), so a + b of two transposed tensors is transposed, as in
//     PyTorch. A defined output of the wrong shape is resized when resizing
//     is allowed (out=; with PyTorch's warning if it had elements, Note
//     [Resizing out= arguments]), else ValueError (in-place self).
//  6. overlap: an output with a stride-0 dim of size > 1, or one that
//     partially overlaps an input, is rejected (ValueError).
//  7. loop geometry: dims are permuted fastest-first and adjacent dims that
//     are contiguous in every operand are merged, so a contiguous op runs as
//     one flat loop.
// Step 3 has two variations: promote_integer_inputs_to_float (true division,
// exp, sqrt...: an integral or bool common dtype becomes the default dtype)
// and allocate_outputs_as (comparisons and logical ops: outputs build()
// allocates are bool, and defined outputs of any dtype take the converted
// result, so they are not checked with can_cast).
// Steps 1-6 are everything a Meta kernel needs; they never touch data, so a
// Meta kernel and a CPU kernel that build the same iterator cannot disagree
// on the output's shape, dtype or strides.
// A 1-element iteration skips the reordering and merging (its output is
// contiguous whichever order is chosen), which keeps `a + b` on scalars cheap.
// for_each splits iterations of at least kParallelGrain elements over
// threads (Note [Parallel loops], ops/Parallel.h): a loop function is called
// concurrently on disjoint element ranges, so it must not write shared state.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

// ValueError "op: unsupported operation: more than one element of the written-to
// tensor refers to a single memory location. Please clone() ..." (PyTorch's
// wording) when `out` has elements and a dim of size > 1 with stride 0 (an
// expanded tensor): the cheap case of internal overlap, the only one checked,
// as in PyTorch. Step 6 of the iterator, and the copy_ check every backend gets
// (Note [copy_ into overlapping memory], ops/Copy.cpp).
SDK_API void check_no_internal_overlap(const Tensor& out, const char* op);

class SDK_API TensorIterator {
 public:
  static constexpr int kMaxOperands = 4;
  // One call of the inner loop: n elements; data[i] and strides[i] (bytes)
  // for operand i, outputs first.
  using Loop = void (*)(void* ctx, char** data, const int64_t* strides, int64_t n);

  // op_name ("add.Tensor") prefixes every error; it must outlive the
  // iterator (a string literal).
  explicit TensorIterator(const char* op_name) : op_(op_name) {}
  TensorIterator(const TensorIterator&) = delete;
  TensorIterator& operator=(const TensorIterator&) = delete;

  // ---- configuration (before build) ----
  // Outputs first, then inputs. Inputs are held by reference: they must
  // outlive the iterator (kernel arguments do). An undefined output is
  // allocated by build().
  TensorIterator& add_output(const Tensor& out);
  TensorIterator& add_input(const Tensor& in);
  // false: outputs are written in place and must already have the broadcast
  // shape (in-place ops, copy_, fill_). Default true (out= and functional).
  TensorIterator& resize_outputs(bool v) { resize_outputs_ = v; return *this; }
  // Compute in this dtype instead of the inputs' result type (copy_).
  TensorIterator& declare_static_dtype(ScalarType t) { static_dtype_ = t; return *this; }
  // false: skip the device check (copy_ between devices, checked by the kernel).
  TensorIterator& check_same_device(bool v) { check_device_ = v; return *this; }
  // Names the output argument in errors: "out" for out= variants, "self" for in-place.
  TensorIterator& output_name(const char* name) { out_name_ = name; return *this; }
  // An integral or bool common dtype becomes default_dtype() (true division,
  // exp, sqrt, ...); see Note [TensorIterator build], 3.
  TensorIterator& promote_integer_inputs_to_float(bool v) { promote_int_to_float_ = v; return *this; }
  // Outputs build() allocates get dtype t instead of the common dtype, and
  // defined outputs may have any dtype (comparisons and logical ops: bool).
  TensorIterator& allocate_outputs_as(ScalarType t) { output_dtype_ = t; return *this; }

  void build();

  // ---- geometry (after build) ----
  const char* op_name() const { return op_; }
  IntArrayRef shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  ScalarType common_dtype() const { return common_dtype_; }
  Device device() const { return device_; }
  int ntensors() const { return noutputs_ + ninputs_; }
  int noutputs() const { return noutputs_; }
  int ninputs() const { return ninputs_; }
  // Operand i (outputs first, then inputs).
  const Tensor& tensor(int i) const { return *ops_[i].tensor; }
  const Tensor& output(int i = 0) const { return outputs_[i]; }
  // Moves output i out of the iterator (saves a reference-count round trip
  // when a kernel returns it); output(i) is undefined afterwards.
  Tensor take_output(int i = 0) { return std::move(outputs_[i]); }
  ScalarType dtype(int i) const { return ops_[i].dtype; }
  // Loop geometry: dims fastest-first after merging (Note [TensorIterator build], 7).
  int loop_ndim() const { return static_cast<int>(loop_shape_.size()); }
  IntArrayRef loop_shape() const { return loop_shape_; }
  IntArrayRef loop_strides(int i) const { return ops_[i].strides; }
  // True when operand i is the same value everywhere (all loop strides 0),
  // e.g. a broadcast 0-dim tensor or a wrapped number.
  bool is_broadcast_scalar(int i) const;
  // Address of operand i's first element (null for meta tensors).
  char* data(int i) const { return ops_[i].data; }

  // Runs `loop` over every element, the first loop dim innermost, on several
  // threads when there are at least 2 * kParallelGrain elements (see
  // Note [Parallel loops]). CPU only: every operand must have host data.
  void for_each(Loop loop, void* ctx) const;
  // The same over the elements [begin, end) of the iteration order, on the
  // calling thread.
  void serial_for_each(Loop loop, void* ctx, int64_t begin, int64_t end) const;
  template <typename F>
  void for_each(F&& f) const {
    using Fn = std::remove_reference_t<F>;
    for_each([](void* c, char** d, const int64_t* s, int64_t n) { (*static_cast<Fn*>(c))(d, s, n); },
             const_cast<void*>(static_cast<const void*>(&f)));
  }

 private:
  struct Operand {
    const Tensor* tensor = nullptr;
    DimVector strides;  // bytes, per loop dim
    char* data = nullptr;
    ScalarType dtype = ScalarType::Undefined;
    bool is_output = false;
    bool will_allocate = false;  // undefined or resized output: no say in the order
    bool fresh = false;          // allocated by build()
  };

  void compute_shape();
  void compute_device();
  void compute_dtype();
  bool inputs_share_dtype() const;
  void check_output_shapes();
  void compute_byte_strides();
  void reorder_dims();
  void allocate_outputs();
  void check_overlap() const;
  void merge_dims();

  const char* op_;
  const char* out_name_ = "out";
  Operand ops_[kMaxOperands];
  Tensor outputs_[kMaxOperands];
  int noutputs_ = 0;
  int ninputs_ = 0;
  bool resize_outputs_ = true;
  bool check_device_ = true;
  bool promote_int_to_float_ = false;
  ScalarType static_dtype_ = ScalarType::Undefined;
  ScalarType output_dtype_ = ScalarType::Undefined;

  DimVector shape_;       // broadcast shape, in the tensors' dim order
  int64_t numel_ = 0;
  ScalarType common_dtype_ = ScalarType::Undefined;
  Device device_;
  DimVector perm_;        // perm_[k]: the tensor dim that is the k-th fastest
  DimVector loop_shape_;  // shape_ permuted by perm_, then merged
};

}  // namespace sdk::ops
