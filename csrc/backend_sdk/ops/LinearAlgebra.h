// Matrix products: mm, bmm, addmm, dot, and the composites matmul and linear.
#pragma once

#include <optional>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

SDK_API Tensor mm(const Tensor& self, const Tensor& mat2);
SDK_API Tensor bmm(const Tensor& self, const Tensor& mat2);
SDK_API Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
                     const Scalar& alpha = 1);
SDK_API Tensor dot(const Tensor& self, const Tensor& other);
// numpy's matmul rules: 1-D operands are promoted and the added dim removed,
// batch dimensions broadcast.
SDK_API Tensor matmul(const Tensor& self, const Tensor& other);
// input @ weight^T + bias
SDK_API Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {});

}  // namespace sdk::ops
