#include <backend_sdk/ops/TensorIterator.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include <backend_sdk/core/detail/SafeSize.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/Resize.h>

namespace sdk::ops {

namespace {

bool is_cpu_scalar(const Tensor& t) { return t.device().type == DeviceType::CPU && t.dim() == 0; }

// element_size() without its range check: dtypes of existing tensors are valid.
int64_t itemsize_of(ScalarType t) {
  static constexpr int64_t sizes[kNumScalarTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[static_cast<int>(t)];
}

// shape = broadcast(shape, other); `shape` is the running result ("tensor a").
void broadcast_into(DimVector& shape, IntArrayRef other, const char* op) {
  if (other.size() > shape.size()) {
    DimVector wider(other.size(), 1);
    size_t offset = other.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i) wider[offset + i] = shape[i];
    shape = std::move(wider);
  }
  size_t offset = shape.size() - other.size();
  for (size_t i = offset; i < shape.size(); ++i) {
    int64_t a = shape[i], b = other[i - offset];
    if (a == b || b == 1) continue;
    SDK_CHECK_KIND(::sdk::ErrorKind::Value, a == 1, op, ": The size of tensor a (", a, ") must match the size of tensor b (", b,
                   ") at non-singleton dimension ", i);
    shape[i] = b;
  }
}

// A stride in bytes. An empty tensor may have element strides whose byte
// value does not fit in int64 (empty(0, 2**62) viewed with huge strides): it
// is never addressed, so its byte strides are 0. A non-empty one cannot get
// here (its storage size was checked: Note [Size arithmetic overflow]).
int64_t byte_stride(int64_t stride, int64_t itemsize, bool empty, const char* op) {
  int64_t bytes;
  if (!mul_overflows(stride, itemsize, &bytes)) return bytes;
  SDK_CHECK(empty, op, ": Stride calculation overflowed: stride ", stride, " of ", itemsize, "-byte elements");
  return 0;
}
}  // namespace

TensorIterator& TensorIterator::add_output(const Tensor& out) {
  SDK_CHECK_KIND(::sdk::ErrorKind::Runtime, ninputs_ == 0 && noutputs_ < kMaxOperands, op_,
                 ": TensorIterator outputs must be added first, at most ", kMaxOperands, " operands");
  outputs_[noutputs_] = out;
  Operand& o = ops_[noutputs_];
  o.tensor = &outputs_[noutputs_];
  o.is_output = true;
  ++noutputs_;
  return *this;
}

TensorIterator& TensorIterator::add_input(const Tensor& in) {
  SDK_CHECK_KIND(::sdk::ErrorKind::Runtime, ntensors() < kMaxOperands, op_, ": TensorIterator takes at most ", kMaxOperands,
                 " operands");
  SDK_CHECK_KIND(::sdk::ErrorKind::Value, in.defined(), op_, ": expected a defined tensor for input ", ninputs_);
  ops_[ntensors()].tensor = &in;
  ++ninputs_;
  return *this;
}

void TensorIterator::build() {
  compute_shape();
  compute_device();
  compute_dtype();
  check_output_shapes();
  if (numel_ != 1) {
    compute_byte_strides();
    reorder_dims();
  }
  allocate_outputs();
  for (int i = 0; i < ntensors(); ++i) ops_[i].data = static_cast<char*>(ops_[i].tensor->data_ptr());
  check_overlap();
  if (numel_ > 1) merge_dims();
}

// Step 1 of Note [TensorIterator build].
void TensorIterator::compute_shape() {
  const Tensor* first = nullptr;
  bool broadcast = false;
  for (int i = 0; i < ntensors(); ++i) {
    const Tensor& t = *ops_[i].tensor;
    // Outputs that may be resized do not constrain the shape.
    if (ops_[i].is_output && (resize_outputs_ || !t.defined())) continue;
    if (!first) {
      first = &t;
      shape_.assign(t.sizes());
    } else if (!t.sizes().equals(shape_)) {
      broadcast_into(shape_, t.sizes(), op_);
      broadcast = true;
    }
  }
  // Broadcasting can multiply sizes past int64; a tensor's own numel cannot.
  numel_ = broadcast || !first ? checked_numel(shape_, op_) : first->numel();
}

// Step 2: the first operand that is not a CPU scalar decides the device.
void TensorIterator::compute_device() {
  const Tensor* decider = nullptr;
  const Tensor* first = nullptr;
  for (int i = 0; i < ntensors(); ++i) {
    const Tensor& t = *ops_[i].tensor;
    if (!t.defined()) continue;
    if (!first) first = &t;
    if (!is_cpu_scalar(t)) {
      decider = &t;
      break;
    }
  }
  if (!decider) decider = first;
  device_ = decider ? decider->device() : Device(DeviceType::CPU);
  if (!check_device_) return;
  for (int i = 0; i < ntensors(); ++i) {
    const Tensor& t = *ops_[i].tensor;
    if (!t.defined() || t.device() == device_) continue;
    if (!ops_[i].is_output && is_cpu_scalar(t)) continue;
    sdk::check_same_device(op_, *decider, t);
  }
}

// Inputs of one dtype and no wrapped number (a wrapped float counts as the
// default dtype, not as its own) promote to that dtype: the common case,
// decided without ResultTypeState.
bool TensorIterator::inputs_share_dtype() const {
  const ScalarType t = ops_[noutputs_].tensor->dtype();
  for (int i = noutputs_; i < ntensors(); ++i) {
    const TensorImpl* impl = ops_[i].tensor->impl();
    if (impl->dtype() != t || impl->is_wrapped_number()) return false;
  }
  return true;
}

// Step 3.
void TensorIterator::compute_dtype() {
  if (static_dtype_ != ScalarType::Undefined) {
    common_dtype_ = static_dtype_;
  } else if (ninputs_ > 0 && inputs_share_dtype()) {
    common_dtype_ = ops_[noutputs_].tensor->dtype();
  } else if (ninputs_ > 0) {
    ResultTypeState state;
    for (int i = noutputs_; i < ntensors(); ++i) {
      const Tensor& t = *ops_[i].tensor;
      state.update_tensor(t.dtype(), t.dim(), t.impl()->is_wrapped_number());
    }
    common_dtype_ = state.result();
  } else {
    SDK_CHECK_KIND(::sdk::ErrorKind::Runtime, noutputs_ > 0 && outputs_[0].defined(), op_,
                   ": TensorIterator needs an input or a defined output");
    common_dtype_ = outputs_[0].dtype();
  }
  if (promote_int_to_float_ && is_integral_type(common_dtype_, /*include_bool=*/true)) common_dtype_ = default_dtype();
  const bool own_output_dtype = output_dtype_ != ScalarType::Undefined;
  const ScalarType allocated = own_output_dtype ? output_dtype_ : common_dtype_;
  for (int i = 0; i < ntensors(); ++i) {
    const Tensor& t = *ops_[i].tensor;
    ops_[i].dtype = t.defined() ? t.dtype() : allocated;
    if (ops_[i].is_output && t.defined() && !own_output_dtype) check_can_cast(op_, common_dtype_, t.dtype());
  }
}

void TensorIterator::check_output_shapes() {
  for (int i = 0; i < noutputs_; ++i) {
    const Tensor& t = outputs_[i];
    if (!t.defined()) {
      ops_[i].will_allocate = true;
      continue;
    }
    if (t.sizes().equals(shape_)) continue;
    SDK_CHECK_KIND(::sdk::ErrorKind::Value, resize_outputs_, op_, ": output with shape ", t.sizes(),
                   " doesn't match the broadcast shape ", shape_);
    // Note [Resizing out= arguments]: a non-empty out= is resized too, with PyTorch's warning.
    if (t.numel() != 0) {
      std::ostringstream msg;
      msg << op_ << ": An output with one or more elements was resized since it had shape " << t.sizes()
          << ", which does not match the required output shape " << IntArrayRef(shape_)
          << ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they "
             "have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
             "with t.resize_(0).";
      warn(msg.str());
    }
    ops_[i].will_allocate = true;
  }
}

// Byte strides of every existing operand over shape_, in the tensors' dim
// order; broadcast dims (missing or size 1 against a bigger size) get 0.
void TensorIterator::compute_byte_strides() {
  const size_t ndim = shape_.size();
  for (int i = 0; i < ntensors(); ++i) {
    Operand& o = ops_[i];
    if (o.will_allocate) continue;
    const Tensor& t = *o.tensor;
    o.strides.resize(ndim);
    const size_t offset = ndim - static_cast<size_t>(t.dim());
    const int64_t itemsize = itemsize_of(t.dtype());
    for (size_t d = 0; d < ndim; ++d) {
      if (d < offset) {
        o.strides[d] = 0;
        continue;
      }
      int64_t size = t.sizes()[d - offset];
      o.strides[d] = (size == 1 && shape_[d] != 1) ? 0 : byte_stride(t.strides()[d - offset], itemsize, numel_ == 0, op_);
    }
  }
}

// Step 4: perm_[0] is the fastest-moving dim. An insertion sort whose
// comparison may abstain (0): an abstaining pair is stepped over, not swapped,
// so the result matches PyTorch's order dim for dim.
void TensorIterator::reorder_dims() {
  const int64_t ndim = static_cast<int64_t>(shape_.size());
  perm_.resize(ndim);
  for (int64_t k = 0; k < ndim; ++k) perm_[k] = ndim - 1 - k;
  if (ndim <= 1) return;
  // > 0: `slow` should move before `fast`; < 0: keep; 0: no operand decides.
  auto compare = [&](int64_t fast, int64_t slow) -> int {
    for (int i = 0; i < ntensors(); ++i) {
      const Operand& o = ops_[i];
      if (o.will_allocate) continue;
      int64_t s_fast = o.strides[fast], s_slow = o.strides[slow];
      if (s_fast == 0 || s_slow == 0) continue;  // a broadcast dim has no layout to follow
      if (s_fast != s_slow) return s_fast < s_slow ? -1 : 1;
      if (shape_[fast] > shape_[slow]) return 1;
    }
    return 0;
  };
  for (int64_t k = 1; k < ndim; ++k) {
    int64_t pos = k;
    for (int64_t j = k - 1; j >= 0; --j) {
      int c = compare(perm_[j], perm_[pos]);
      if (c > 0) {
        std::swap(perm_[j], perm_[pos]);
        pos = j;
      } else if (c < 0) {
        break;
      }
    }
  }
}

// Step 5.
void TensorIterator::allocate_outputs() {
  const int64_t ndim = static_cast<int64_t>(shape_.size());
  bool natural = true;
  for (int64_t k = 0; k < static_cast<int64_t>(perm_.size()); ++k) natural &= perm_[k] == ndim - 1 - k;
  for (int i = 0; i < noutputs_; ++i) {
    Operand& o = ops_[i];
    if (!o.will_allocate) continue;
    DimVector strides;
    if (!natural) {
      // Dense strides in perm_ order (PyTorch multiplies raw sizes here).
      strides.resize(ndim);
      int64_t next = 1;
      for (int64_t k = 0; k < ndim; ++k) {
        strides[perm_[k]] = next;
        next *= shape_[perm_[k]];
      }
    }
    if (!outputs_[i].defined()) {
      o.fresh = true;
      outputs_[i] = natural ? make_tensor(shape_, o.dtype, device_) : make_tensor_strided(shape_, strides, o.dtype, device_);
    } else {
      resize_impl(outputs_[i], shape_, natural ? std::nullopt : std::make_optional<IntArrayRef>(strides),
                  /*keep_data=*/false, op_);
    }
    if (numel_ != 1) {
      const Tensor& t = outputs_[i];
      const int64_t itemsize = itemsize_of(t.dtype());
      o.strides.resize(ndim);
      for (int64_t d = 0; d < ndim; ++d) o.strides[d] = byte_stride(t.strides()[d], itemsize, numel_ == 0, op_);
    }
  }
}

void check_no_internal_overlap(const Tensor& out, const char* op) {
  // An empty output has no element to write twice (PyTorch: a numel-0 tensor is contiguous,
  // so it has no internal overlap even with stride-0 dims, e.g. numpy's empty arrays).
  for (int64_t d = 0; d < out.dim() && out.numel() > 0; ++d) {
    SDK_CHECK_KIND(::sdk::ErrorKind::Value, out.sizes()[d] <= 1 || out.strides()[d] != 0, op,
                   ": unsupported operation: more than one element of the written-to tensor refers to a single "
                   "memory location. Please clone() the tensor before performing the operation.");
  }
}

// Step 6. Only the cases that are cheap to decide are rejected: a stride-0
// output dim, and contiguous operands whose byte ranges overlap without
// coinciding; anything else is allowed, as in PyTorch ("too hard" to tell).
void TensorIterator::check_overlap() const {
  for (int i = 0; i < noutputs_; ++i) {
    if (ops_[i].fresh) continue;  // allocated by build(): shares nothing
    const Tensor& out = outputs_[i];
    check_no_internal_overlap(out, op_);
    if (out.numel() == 0 || !out.is_contiguous()) continue;
    const int64_t out_begin = out.storage_offset() * itemsize_of(out.dtype());
    const int64_t out_end = out_begin + out.numel() * itemsize_of(out.dtype());
    for (int j = noutputs_; j < ntensors(); ++j) {
      const Tensor& in = *ops_[j].tensor;
      if (in.storage() != out.storage() || in.numel() == 0 || !in.is_contiguous()) continue;
      const int64_t in_begin = in.storage_offset() * itemsize_of(in.dtype());
      const int64_t in_end = in_begin + in.numel() * itemsize_of(in.dtype());
      bool same = in_begin == out_begin && in_end == out_end;
      bool disjoint = in_end <= out_begin || out_end <= in_begin;
      SDK_CHECK_KIND(::sdk::ErrorKind::Value, same || disjoint, op_,
                     ": unsupported operation: some elements of the input tensors and the written-to tensor refer "
                     "to a single memory location. Please clone() the tensor before performing the operation.");
    }
  }
}

// Step 7: permute to perm_ order, then merge dim k into the merged dim
// before it when every operand steps through k exactly where that dim ends.
void TensorIterator::merge_dims() {
  const int64_t ndim = static_cast<int64_t>(shape_.size());
  loop_shape_.resize(ndim);
  for (int64_t k = 0; k < ndim; ++k) loop_shape_[k] = shape_[perm_[k]];
  for (int i = 0; i < ntensors(); ++i) {
    DimVector permuted(ndim);
    for (int64_t k = 0; k < ndim; ++k) permuted[k] = ops_[i].strides[perm_[k]];
    ops_[i].strides = std::move(permuted);
  }
  int64_t last = 0;  // the merged dim being grown
  for (int64_t k = 1; k < ndim; ++k) {
    bool mergeable = loop_shape_[last] == 1 || loop_shape_[k] == 1;
    if (!mergeable) {
      mergeable = true;
      for (int i = 0; i < ntensors(); ++i) {
        mergeable &= ops_[i].strides[last] * loop_shape_[last] == ops_[i].strides[k];
      }
    }
    if (mergeable) {
      // A size-1 dim carries no stride information: keep the other's.
      if (loop_shape_[last] == 1) {
        for (int i = 0; i < ntensors(); ++i) ops_[i].strides[last] = ops_[i].strides[k];
      }
      loop_shape_[last] *= loop_shape_[k];
    } else {
      ++last;
      loop_shape_[last] = loop_shape_[k];
      for (int i = 0; i < ntensors(); ++i) ops_[i].strides[last] = ops_[i].strides[k];
    }
  }
  loop_shape_.resize(last + 1);
  for (int i = 0; i < ntensors(); ++i) ops_[i].strides.resize(last + 1);
}

bool TensorIterator::is_broadcast_scalar(int i) const {
  for (int64_t s : ops_[i].strides) {
    if (s != 0) return false;
  }
  return true;
}

void TensorIterator::for_each(Loop loop, void* ctx) const {
  if (numel_ == 0) return;
  for (int i = 0; i < ntensors(); ++i) {
    SDK_CHECK_KIND(::sdk::ErrorKind::Runtime, ops_[i].data != nullptr, op_,
                   ": cannot run a CPU loop over a tensor without host data (device ", ops_[i].tensor->device(), ")");
  }
  if (numel_ < 2 * kParallelGrain) {
    serial_for_each(loop, ctx, 0, numel_);
    return;
  }
  parallel_for(0, numel_, kParallelGrain, [&](int64_t b, int64_t e) { serial_for_each(loop, ctx, b, e); });
}

// An odometer over the outer loop dims, started at element `begin`; each
// call of `loop` covers the rest of one inner row or the range, whichever
// ends first.
void TensorIterator::serial_for_each(Loop loop, void* ctx, int64_t begin, int64_t end) const {
  if (begin >= end) return;
  const int nt = ntensors();
  char* base[kMaxOperands] = {};
  int64_t inner[kMaxOperands] = {};
  for (int i = 0; i < nt; ++i) base[i] = ops_[i].data;
  char* data[kMaxOperands];
  const int nd = loop_ndim();
  if (nd == 0) {  // one element: see Note [TensorIterator build]
    std::copy(base, base + nt, data);
    loop(ctx, data, inner, 1);
    return;
  }
  DimVector counter(static_cast<size_t>(nd), 0);
  int64_t rest = begin;
  for (int d = 0; d < nd; ++d) {
    counter[d] = rest % loop_shape_[d];
    rest /= loop_shape_[d];
    for (int i = 0; i < nt; ++i) base[i] += counter[d] * ops_[i].strides[d];
  }
  for (int i = 0; i < nt; ++i) inner[i] = ops_[i].strides[0];
  const int64_t row = loop_shape_[0];
  int64_t pos = begin;
  for (;;) {
    const int64_t n = std::min(row - counter[0], end - pos);
    std::copy(base, base + nt, data);  // the loop may not keep its changes
    loop(ctx, data, inner, n);
    pos += n;
    if (pos >= end) return;
    // Back to the row's start, then one step of the odometer over the outer dims.
    for (int i = 0; i < nt; ++i) base[i] -= counter[0] * ops_[i].strides[0];
    counter[0] = 0;
    for (int d = 1; d < nd; ++d) {
      for (int i = 0; i < nt; ++i) base[i] += ops_[i].strides[d];
      if (++counter[d] < loop_shape_[d]) break;
      for (int i = 0; i < nt; ++i) base[i] -= ops_[i].strides[d] * loop_shape_[d];
      counter[d] = 0;
    }
  }
}

}  // namespace sdk::ops
