// More of the C++ operator API (Functions.h): the operators the derivative
// formulas of the autograd layer call (csrc/backend_sdk/autograd/derivatives.def);
// matrix products are in LinearAlgebra.h.
// Same rules as Functions.h: each call goes through the dispatcher, so a
// formula runs on whatever backend its tensors live on, and with grad mode on
// (create_graph) its operators are recorded in turn (double backward).
#pragma once

#include <optional>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

SDK_API Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);  // sub.Tensor
SDK_API Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1); // rsub.Scalar
SDK_API Tensor div(const Tensor& self, const Tensor& other);                           // div.Tensor
SDK_API Tensor div(const Tensor& self, const Scalar& other);                           // div.Scalar
SDK_API Tensor neg(const Tensor& self);
SDK_API Tensor exp(const Tensor& self);
SDK_API Tensor tanh(const Tensor& self);
SDK_API Tensor sigmoid(const Tensor& self);
SDK_API Tensor cos(const Tensor& self);
SDK_API Tensor sin(const Tensor& self);
SDK_API Tensor pow(const Tensor& self, const Scalar& exponent);                        // pow.Tensor_Scalar
SDK_API Tensor gt(const Tensor& self, const Scalar& other);                            // gt.Scalar
SDK_API Tensor t(const Tensor& self);
// sum.dim_IntList
SDK_API Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false,
                   std::optional<ScalarType> dtype = std::nullopt);
// `self` broadcast to `size` (a view with zero strides on the broadcast dimensions; same rules as expand).
SDK_API Tensor expand_to(const Tensor& self, IntArrayRef size);
// A tensor of `size` filled with `value`, with self's dtype and device.
SDK_API Tensor full_like_sized(const Tensor& self, IntArrayRef size, const Scalar& value);
// at::sum_to: sums the dimensions broadcasting added or expanded from `shape` (identity if equal).
SDK_API Tensor sum_to(const Tensor& self, IntArrayRef shape);

}  // namespace sdk::ops
