// The C++ API of the aten operators: what a vendor's code and the Python
// bindings call. Every function goes through the dispatcher (one key-set
// computation and one table lookup, with the operator handle cached in a
// function-static), so it reaches whichever kernel is registered for the
// arguments' backend: CPU, Meta, a vendor's device, a Python kernel.
// Argument order follows PyTorch's C++ API (at::add_out takes `out` first).
#pragma once

#include <optional>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

// ---- factories ----
// empty.memory_format; dtype defaults to default_dtype(), device to cpu.
SDK_API Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype = {}, std::optional<Device> device = {});
SDK_API Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype = {},
                             std::optional<Device> device = {});

// ---- arithmetic ----
SDK_API Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);     // add.Tensor
SDK_API Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);     // add.Scalar
SDK_API Tensor add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);    // add_.Tensor
SDK_API Tensor add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
SDK_API Tensor mul(const Tensor& self, const Tensor& other);                              // mul.Tensor
SDK_API Tensor mul(const Tensor& self, const Scalar& other);                              // mul.Scalar
SDK_API Tensor mul_(const Tensor& self, const Tensor& other);                             // mul_.Tensor
SDK_API Tensor mul_out(const Tensor& out, const Tensor& self, const Tensor& other);

// ---- in-place writes (return self) ----
SDK_API Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking = false);
SDK_API Tensor fill_(const Tensor& self, const Scalar& value);
SDK_API Tensor resize_(const Tensor& self, IntArrayRef size);

// ---- views (share self's storage) ----
SDK_API Tensor view(const Tensor& self, IntArrayRef size);
SDK_API Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                          std::optional<int64_t> storage_offset = {});

// ---- indexing (Indexing.cpp); an absent entry of `indices` is a full slice ----
SDK_API Tensor index(const Tensor& self, ArrayRef<std::optional<Tensor>> indices);  // index.Tensor
SDK_API Tensor index_put_(const Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values,
                          bool accumulate = false);
SDK_API Tensor index_put(const Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values,
                         bool accumulate = false);
SDK_API Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
SDK_API Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad = false);
SDK_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);    // scatter.src
SDK_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);  // scatter.value
SDK_API Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
SDK_API Tensor masked_select(const Tensor& self, const Tensor& mask);
SDK_API Tensor nonzero(const Tensor& self);
SDK_API Tensor take(const Tensor& self, const Tensor& index);
SDK_API Tensor flip(const Tensor& self, IntArrayRef dims);

// ---- conversions (Conversions.cpp) ----
// _to_copy: always a new tensor (strides kept when self is dense, see Note [Memory format of copies]).
SDK_API Tensor _to_copy(const Tensor& self, std::optional<ScalarType> dtype = {}, std::optional<Device> device = {},
                        bool non_blocking = false);
// to.dtype: self when the dtype already matches and copy is false.
SDK_API Tensor to(const Tensor& self, ScalarType dtype, bool non_blocking = false, bool copy = false);

// ---- values ----
// The single element of self as a bool, int64 or double Scalar (by dtype).
SDK_API Scalar item(const Tensor& self);  // _local_scalar_dense
SDK_API Scalar _local_scalar_dense(const Tensor& self);

}  // namespace sdk::ops
