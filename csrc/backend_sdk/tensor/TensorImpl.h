// TensorImpl: sizes, strides, offset, dtype, device and dispatch keys over a Storage.
#pragma once

#include <memory>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/core/DispatchKeySet.h>
#include <backend_sdk/core/ScalarType.h>
#include <backend_sdk/core/Storage.h>

namespace sdk {

// Per-tensor autograd state is defined by the autograd layer; the tensor only
// owns it. Kept abstract here so the tensor layer does not depend on autograd.
struct SDK_API AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
};

class SDK_API TensorImpl : public intrusive_target {
 public:
  TensorImpl(Storage storage, ScalarType dtype, Device device, DispatchKeySet keys);
  ~TensorImpl() override;

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t size(int64_t d) const;    // d may be negative
  int64_t stride(int64_t d) const;  // d may be negative
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  size_t itemsize() const { return element_size(dtype_); }
  Device device() const { return device_; }
  DispatchKeySet key_set() const { return key_set_; }
  void set_key_set(DispatchKeySet ks) { key_set_ = ks; }
  bool is_contiguous() const { return is_contiguous_; }
  const Storage& storage() const { return storage_; }
  void set_storage(Storage s) { storage_ = std::move(s); }

  // Address of element 0 (storage data + offset). Null for meta tensors.
  void* data() const {
    char* base = static_cast<char*>(storage_->data());
    return base ? base + storage_offset_ * static_cast<int64_t>(itemsize()) : nullptr;
  }

  void set_sizes_contiguous(IntArrayRef sizes);
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  void set_storage_offset(int64_t offset) { storage_offset_ = offset; }

  // Python scalars converted to 0-dim tensors take part in type promotion as
  // "wrapped numbers"; see Note [Result type computation].
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool v) { is_wrapped_number_ = v; }

  uint32_t version() const { return storage_->version(); }
  // Every in-place write goes through here, so this is where a write into an inference tensor
  // outside inference mode is refused (Note [Inference tensors]).
  void bump_version() {
    if (inference_) check_inference_write();
    storage_->bump_version();
  }

  // Note [Inference tensors]
  // ~~~~~~~~~~~~~~~~~~~~~~~~
  // As PyTorch's: a tensor allocated while inference mode is on (the thread-local flag below,
  // set by backend_sdk.inference_mode) is an inference tensor, and so is every view of one; a
  // view of a normal tensor stays normal (make_view copies its base's flag). Inference tensors
  // have no version counter for Python (`_version` raises), cannot be saved for backward, and
  // refuse in-place writes outside inference mode. The kernels count a write after doing it
  // (Note [Version counter]), so such a refused write has already changed the data: PyTorch
  // refuses it before. The flag sits in the padding after the two bools above, so the layout
  // of the fields an inline accessor reads does not change.
  bool is_inference() const { return inference_; }
  void set_inference(bool v) { inference_ = v; }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m) { autograd_meta_ = std::move(m); }

  // Note [Python object back-pointer]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // The Python wrapper of this tensor, if one exists: a non-owning pointer set
  // when the wrapper is created and cleared when it is deallocated, both under
  // the GIL. It makes wrapping idempotent (x.add_(y) returns the very object
  // x), and lets Python attributes live as long as the tensor's wrapper.
  void* pyobj() const { return pyobj_; }
  void set_pyobj(void* p) { pyobj_ = p; }

  // Bytes of storage a tensor of these sizes/strides/offset needs: ValueError
  // for negative or mismatched geometry, RuntimeError when the byte count
  // overflows (Note [Size arithmetic overflow], core/detail/SafeSize.h); `op` names the caller.
  static size_t compute_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                                       int64_t storage_offset, const char* op = "from_blob");

 private:
  void refresh();  // numel and contiguity from sizes/strides
  [[noreturn]] static void refuse_inference_write();
  void check_inference_write() const {
    if (!inference_mode_enabled()) refuse_inference_write();
  }

 public:
  // Inference mode of this thread (Note [Inference tensors]); backend_sdk.inference_mode sets it.
  static bool inference_mode_enabled();
  static void set_inference_mode_enabled(bool enabled);

 private:

#ifdef SDK_TEST_TENSORIMPL_PADDING
  // Only in the test build of CMake option SDK_TEST_TENSORIMPL_PADDING: moves every field
  // below, so an extension compiled against the normal layout that touched TensorImpl would
  // break, while one built on the stable C shim must not (tools/stable_abi_check.sh).
  int64_t abi_test_padding_[3] = {0, 0, 0};
#endif
  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  ScalarType dtype_;
  Device device_;
  DispatchKeySet key_set_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
  bool inference_;  // Note [Inference tensors]: set by the constructor from the thread's mode
  void* pyobj_ = nullptr;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

// Wraps a (possibly negative) dim into [0, ndim); IndexError otherwise, worded
// as PyTorch words it. A 0-dim tensor accepts dims -1 and 0.
SDK_API int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool wrap_scalar = true);
// Contiguous strides for sizes; RuntimeError "op: Stride calculation overflowed ..." when they overflow.
SDK_API DimVector contiguous_strides(IntArrayRef sizes, const char* op = "empty");
// Product of sizes: ValueError naming `what` for a negative size, RuntimeError
// "what: numel: integer multiplication overflow ..." (Note [Size arithmetic overflow]).
SDK_API int64_t checked_numel(IntArrayRef sizes, const char* what);

}  // namespace sdk
