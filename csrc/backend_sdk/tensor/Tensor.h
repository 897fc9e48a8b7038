// Tensor: a cheap reference-counted handle to a TensorImpl.
#pragma once

#include <optional>
#include <string>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace sdk {

class SDK_API Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  void reset() { impl_.reset(); }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t d) const { return impl_->size(d); }
  int64_t stride(int64_t d) const { return impl_->stride(d); }
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  size_t itemsize() const { return impl_->itemsize(); }
  // Fits for any tensor with its own bytes (storage sizes are checked, Note [Size arithmetic
  // overflow]); an expanded view's may not: Python's Tensor.nbytes computes it exactly.
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  Device device() const { return impl_->device(); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_meta() const { return device().type == DeviceType::Meta; }
  bool is_cpu() const { return device().type == DeviceType::CPU; }
  const Storage& storage() const { return impl_->storage(); }
  void* data_ptr() const { return impl_->data(); }
  template <typename T>
  T* data_ptr() const { return static_cast<T*>(impl_->data()); }

  // "Tensor(sizes=[2, 3], dtype=float32, device=cpu)": for error messages.
  std::string str() const;

  // Note [C++ Tensor methods]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~
  // The common operators as methods, as at::Tensor has them: each is a thin call
  // into the generated operator API (ops/Operators.h), so it goes through the
  // dispatcher and reaches the kernel of the tensor's backend. They are defined
  // in ops/TensorMethods.cpp (the tensor layer only declares them), so this
  // header stays light. contiguous() and reshape() are PyTorch's composites:
  // self when no copy is needed, a view when the strides allow one.
  Tensor contiguous() const;
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;      // to.dtype
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;         // to.dtype_layout
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;  // to.device
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef size) const;
  Tensor expand(IntArrayRef size, bool implicit = false) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor t() const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = {}, std::optional<int64_t> end = {},
               int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor clone() const;
  Tensor sum(std::optional<ScalarType> dtype = {}) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = {}) const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor neg() const;
  // In place: return self.
  Tensor add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul_(const Tensor& other) const;
  Tensor div_(const Tensor& other) const;
  Tensor copy_(const Tensor& src, bool non_blocking = false) const;
  Tensor fill_(const Scalar& value) const;
  Tensor zero_() const;
  // The single element as a bool, int64 or double Scalar (aten::_local_scalar_dense).
  Scalar item() const;

 private:
  intrusive_ptr<TensorImpl> impl_;
};

// Allocates an uninitialised tensor from the device type's allocator.
SDK_API Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Device device);
SDK_API Tensor make_tensor_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device);
// A view: shares `base`'s storage with new geometry. Checks the geometry stays
// inside the storage (ValueError naming `op`).
SDK_API Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                         const char* op = "view");
// A tensor over memory the caller owns and keeps alive (nothing is freed, the
// storage cannot be resized): `data` starts a buffer of `nbytes` on `device`,
// viewed with the given geometry (checked to stay inside the buffer).
SDK_API Tensor from_blob(void* data, size_t nbytes, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                         ScalarType dtype, Device device);
// A 0-dim CPU tensor holding a Python number, flagged as a wrapped number.
SDK_API Tensor wrapped_scalar_tensor(const Scalar& s);
SDK_API Tensor scalar_to_tensor(const Scalar& s, ScalarType dtype, Device device);

// "Expected all tensors to be on the same device, but found at least two devices, accel:0 and cpu!"
SDK_API void check_same_device(const char* op, const Tensor& a, const Tensor& b);

}  // namespace sdk
