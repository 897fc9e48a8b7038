// The C++ operator API of the aten operators: one function per overload, generated from the
// registered schemas by tools/gen_cpp_ops.py (see its docstring for the naming and default rules).
// DO NOT EDIT: rerun the script after adding operators; tests/test_cpp_operators.py fails when
// this file is stale.
//
// Each function calls the dispatcher, so it reaches whichever kernel is registered for the
// arguments' backend (CPU, Meta, a vendor's device, a Python kernel), with autograd and the other
// dispatch keys in between, like at::add. Out= overloads take their outputs first
// (sdk::ops::sum_out(out, self, dim)). The factory overloads take their dtype, layout, device and
// pin_memory explicitly (pass {} for "default"); the short forms empty(size, dtype, device) and
// friends are in Functions.h.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/LinearAlgebra.h>
#include <backend_sdk/ops/MathFunctions.h>
#include <backend_sdk/ops/Random.h>
#include <backend_sdk/tensor/Generator.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk {
using TensorList = ArrayRef<Tensor>;                   // Tensor[] (as in dispatch/Boxing.h)
using OptionalTensorList = ArrayRef<std::optional<Tensor>>;  // Tensor?[]
}  // namespace sdk

namespace sdk::ops {

// aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
SDK_API Tensor _adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
// aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor
SDK_API Tensor _adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self);
// aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
SDK_API Tensor _adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size);
// aten::_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> ()
SDK_API void _amp_foreach_non_finite_check_and_unscale_(TensorList self, const Tensor& found_inf, const Tensor& inv_scale);
// aten::_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)
SDK_API Tensor _amp_update_scale_(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf, double scale_growth_factor, double scale_backoff_factor, int64_t growth_interval);
// aten::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor
SDK_API Tensor _cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode);
// aten::_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor, Tensor> _embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq = false, int64_t mode = 0, bool sparse = false, const std::optional<Tensor>& per_sample_weights = {}, bool include_last_offset = false, int64_t padding_idx = -1);
// aten::_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_add(TensorList self, TensorList other, const Scalar& alpha = 1);
// aten::_foreach_add.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_add(TensorList self, const Scalar& scalar);
// aten::_foreach_add.ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_add(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_add.Tensor(Tensor[] self, Tensor other, *, Scalar alpha=1) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_add(TensorList self, const Tensor& other, const Scalar& alpha = 1);
// aten::_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()
SDK_API void _foreach_add_(TensorList self, TensorList other, const Scalar& alpha = 1);
// aten::_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()
SDK_API void _foreach_add_(TensorList self, const Scalar& scalar);
// aten::_foreach_add_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()
SDK_API void _foreach_add_(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_add_.Tensor(Tensor(a!)[] self, Tensor other, *, Scalar alpha=1) -> ()
SDK_API void _foreach_add_(TensorList self, const Tensor& other, const Scalar& alpha = 1);
// aten::_foreach_addcdiv.Scalar(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcdiv(TensorList self, TensorList tensor1, TensorList tensor2, const Scalar& value = 1);
// aten::_foreach_addcdiv.ScalarList(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcdiv(TensorList self, TensorList tensor1, TensorList tensor2, ArrayRef<Scalar> scalars);
// aten::_foreach_addcdiv.Tensor(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcdiv(TensorList self, TensorList tensor1, TensorList tensor2, const Tensor& scalars);
// aten::_foreach_addcdiv_.Scalar(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> ()
SDK_API void _foreach_addcdiv_(TensorList self, TensorList tensor1, TensorList tensor2, const Scalar& value = 1);
// aten::_foreach_addcdiv_.ScalarList(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> ()
SDK_API void _foreach_addcdiv_(TensorList self, TensorList tensor1, TensorList tensor2, ArrayRef<Scalar> scalars);
// aten::_foreach_addcdiv_.Tensor(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> ()
SDK_API void _foreach_addcdiv_(TensorList self, TensorList tensor1, TensorList tensor2, const Tensor& scalars);
// aten::_foreach_addcmul.Scalar(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcmul(TensorList self, TensorList tensor1, TensorList tensor2, const Scalar& value = 1);
// aten::_foreach_addcmul.ScalarList(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcmul(TensorList self, TensorList tensor1, TensorList tensor2, ArrayRef<Scalar> scalars);
// aten::_foreach_addcmul.Tensor(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_addcmul(TensorList self, TensorList tensor1, TensorList tensor2, const Tensor& scalars);
// aten::_foreach_addcmul_.Scalar(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> ()
SDK_API void _foreach_addcmul_(TensorList self, TensorList tensor1, TensorList tensor2, const Scalar& value = 1);
// aten::_foreach_addcmul_.ScalarList(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> ()
SDK_API void _foreach_addcmul_(TensorList self, TensorList tensor1, TensorList tensor2, ArrayRef<Scalar> scalars);
// aten::_foreach_addcmul_.Tensor(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> ()
SDK_API void _foreach_addcmul_(TensorList self, TensorList tensor1, TensorList tensor2, const Tensor& scalars);
// aten::_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) -> ()
SDK_API void _foreach_copy_(TensorList self, TensorList src, bool non_blocking = false);
// aten::_foreach_div.List(Tensor[] self, Tensor[] other) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_div(TensorList self, TensorList other);
// aten::_foreach_div.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_div(TensorList self, const Scalar& scalar);
// aten::_foreach_div.ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_div(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_div.Tensor(Tensor[] self, Tensor other) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_div(TensorList self, const Tensor& other);
// aten::_foreach_div_.List(Tensor(a!)[] self, Tensor[] other) -> ()
SDK_API void _foreach_div_(TensorList self, TensorList other);
// aten::_foreach_div_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()
SDK_API void _foreach_div_(TensorList self, const Scalar& scalar);
// aten::_foreach_div_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()
SDK_API void _foreach_div_(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_div_.Tensor(Tensor(a!)[] self, Tensor other) -> ()
SDK_API void _foreach_div_(TensorList self, const Tensor& other);
// aten::_foreach_lerp.List(Tensor[] self, Tensor[] tensors1, Tensor[] weights) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_lerp(TensorList self, TensorList tensors1, TensorList weights);
// aten::_foreach_lerp.Scalar(Tensor[] self, Tensor[] tensors1, Scalar weight) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_lerp(TensorList self, TensorList tensors1, const Scalar& weight);
// aten::_foreach_lerp.ScalarList(Tensor[] self, Tensor[] tensors1, Scalar[] weight) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_lerp(TensorList self, TensorList tensors1, ArrayRef<Scalar> weight);
// aten::_foreach_lerp_.List(Tensor(a!)[] self, Tensor[] tensors1, Tensor[] weights) -> ()
SDK_API void _foreach_lerp_(TensorList self, TensorList tensors1, TensorList weights);
// aten::_foreach_lerp_.Scalar(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()
SDK_API void _foreach_lerp_(TensorList self, TensorList tensors1, const Scalar& weight);
// aten::_foreach_lerp_.ScalarList(Tensor(a!)[] self, Tensor[] tensors1, Scalar[] weight) -> ()
SDK_API void _foreach_lerp_(TensorList self, TensorList tensors1, ArrayRef<Scalar> weight);
// aten::_foreach_maximum_.List(Tensor(a!)[] self, Tensor[] other) -> ()
SDK_API void _foreach_maximum_(TensorList self, TensorList other);
// aten::_foreach_mul.List(Tensor[] self, Tensor[] other) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_mul(TensorList self, TensorList other);
// aten::_foreach_mul.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_mul(TensorList self, const Scalar& scalar);
// aten::_foreach_mul.ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_mul(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_mul.Tensor(Tensor[] self, Tensor other) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_mul(TensorList self, const Tensor& other);
// aten::_foreach_mul_.List(Tensor(a!)[] self, Tensor[] other) -> ()
SDK_API void _foreach_mul_(TensorList self, TensorList other);
// aten::_foreach_mul_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()
SDK_API void _foreach_mul_(TensorList self, const Scalar& scalar);
// aten::_foreach_mul_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()
SDK_API void _foreach_mul_(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_mul_.Tensor(Tensor(a!)[] self, Tensor other) -> ()
SDK_API void _foreach_mul_(TensorList self, const Tensor& other);
// aten::_foreach_neg(Tensor[] self) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_neg(TensorList self);
// aten::_foreach_neg_(Tensor(a!)[] self) -> ()
SDK_API void _foreach_neg_(TensorList self);
// aten::_foreach_norm.Scalar(Tensor[] self, Scalar ord=2, ScalarType? dtype=None) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_norm(TensorList self, const Scalar& ord = 2, std::optional<ScalarType> dtype = {});
// aten::_foreach_reciprocal(Tensor[] self) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_reciprocal(TensorList self);
// aten::_foreach_reciprocal_(Tensor(a!)[] self) -> ()
SDK_API void _foreach_reciprocal_(TensorList self);
// aten::_foreach_sqrt(Tensor[] self) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_sqrt(TensorList self);
// aten::_foreach_sqrt_(Tensor(a!)[] self) -> ()
SDK_API void _foreach_sqrt_(TensorList self);
// aten::_foreach_sub.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_sub(TensorList self, TensorList other, const Scalar& alpha = 1);
// aten::_foreach_sub.Scalar(Tensor[] self, Scalar scalar) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_sub(TensorList self, const Scalar& scalar);
// aten::_foreach_sub.ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]
SDK_API std::vector<Tensor> _foreach_sub(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_sub_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()
SDK_API void _foreach_sub_(TensorList self, TensorList other, const Scalar& alpha = 1);
// aten::_foreach_sub_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()
SDK_API void _foreach_sub_(TensorList self, const Scalar& scalar);
// aten::_foreach_sub_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()
SDK_API void _foreach_sub_(TensorList self, ArrayRef<Scalar> scalars);
// aten::_foreach_zero_(Tensor(a!)[] self) -> ()
SDK_API void _foreach_zero_(TensorList self);
// aten::_fused_adam_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs, Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()
SDK_API void _fused_adam_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize, const std::optional<Tensor>& grad_scale = {}, const std::optional<Tensor>& found_inf = {});
// aten::_fused_adamw_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs, Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, float weight_decay, float eps, bool amsgrad, bool maximize, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()
SDK_API void _fused_adamw_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize, const std::optional<Tensor>& grad_scale = {}, const std::optional<Tensor>& found_inf = {});
// aten::_fused_sgd_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] momentum_buffer_list, *, float weight_decay, float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()
SDK_API void _fused_sgd_(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay, double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step, const std::optional<Tensor>& grad_scale = {}, const std::optional<Tensor>& found_inf = {});
// aten::_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, bool unsafe=False) -> Tensor(a!)
SDK_API Tensor _index_put_impl_(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate = false, bool unsafe = false);
// aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
SDK_API Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float);
// aten::_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor
SDK_API Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype);
// aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps);
// aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, bool training, double momentum, double eps);
// aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> _native_batch_norm_legit_no_training(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& running_mean, const Tensor& running_var, double momentum, double eps);
// aten::_pdist_forward(Tensor self, float p=2) -> Tensor
SDK_API Tensor _pdist_forward(const Tensor& self, double p = 2);
// aten::_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None, bool enable_gqa=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> _scaled_dot_product_attention_math(const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false, const std::optional<Tensor>& dropout_mask = {}, std::optional<double> scale = {}, bool enable_gqa = false);
// aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
SDK_API Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float);
// aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor
SDK_API Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype);
// aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor _to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking = false, std::optional<int64_t> memory_format = {});
// aten::abs(Tensor self) -> Tensor
SDK_API Tensor abs(const Tensor& self);
// aten::abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor abs_out(const Tensor& out, const Tensor& self);
// aten::abs_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor abs_(const Tensor& self);
// aten::acos(Tensor self) -> Tensor
SDK_API Tensor acos(const Tensor& self);
// aten::acos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor acos_out(const Tensor& out, const Tensor& self);
// aten::acos_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor acos_(const Tensor& self);
// aten::acosh(Tensor self) -> Tensor
SDK_API Tensor acosh(const Tensor& self);
// aten::acosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor acosh_out(const Tensor& out, const Tensor& self);
// aten::acosh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor acosh_(const Tensor& self);
// aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor
SDK_API Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size);
// aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
SDK_API Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
// aten::addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
SDK_API Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
// aten::addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
SDK_API Tensor addcdiv_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
// aten::addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
SDK_API Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
// aten::addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)
SDK_API Tensor addcmul_(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1);
// aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor addmm_out(const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1);
// aten::addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)
SDK_API Tensor addmm_(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1);
// aten::alias(Tensor(a) self) -> Tensor(a)
SDK_API Tensor alias(const Tensor& self);
// aten::all(Tensor self) -> Tensor
SDK_API Tensor all(const Tensor& self);
// aten::all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
SDK_API Tensor all(const Tensor& self, int64_t dim, bool keepdim = false);
// aten::allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool
SDK_API bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
// aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
SDK_API Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
// aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
SDK_API Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
// aten::any(Tensor self) -> Tensor
SDK_API Tensor any(const Tensor& self);
// aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
SDK_API Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
// aten::any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
SDK_API Tensor any(const Tensor& self, std::optional<IntArrayRef> dim = {}, bool keepdim = false);
// aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
SDK_API Tensor argmax(const Tensor& self, std::optional<int64_t> dim = {}, bool keepdim = false);
// aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
SDK_API Tensor argmin(const Tensor& self, std::optional<int64_t> dim = {}, bool keepdim = false);
// aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor
SDK_API Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false);
// aten::argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor
SDK_API Tensor argsort(const Tensor& self, bool stable, int64_t dim = -1, bool descending = false);
// aten::as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)
SDK_API Tensor as_strided_(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset = {});
// aten::asin(Tensor self) -> Tensor
SDK_API Tensor asin(const Tensor& self);
// aten::asin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor asin_out(const Tensor& out, const Tensor& self);
// aten::asin_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor asin_(const Tensor& self);
// aten::asinh(Tensor self) -> Tensor
SDK_API Tensor asinh(const Tensor& self);
// aten::asinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor asinh_out(const Tensor& out, const Tensor& self);
// aten::asinh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor asinh_(const Tensor& self);
// aten::atan(Tensor self) -> Tensor
SDK_API Tensor atan(const Tensor& self);
// aten::atan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor atan_out(const Tensor& out, const Tensor& self);
// aten::atan2(Tensor self, Tensor other) -> Tensor
SDK_API Tensor atan2(const Tensor& self, const Tensor& other);
// aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor atan2_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor atan2_(const Tensor& self, const Tensor& other);
// aten::atan_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor atan_(const Tensor& self);
// aten::atanh(Tensor self) -> Tensor
SDK_API Tensor atanh(const Tensor& self);
// aten::atanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor atanh_out(const Tensor& out, const Tensor& self);
// aten::atanh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor atanh_(const Tensor& self);
// aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor
SDK_API Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true);
// aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
SDK_API Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = {});
// aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor
SDK_API Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);
// aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
SDK_API Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0, 0}, bool ceil_mode = false, bool count_include_pad = true, std::optional<int64_t> divisor_override = {});
// aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
SDK_API Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1, const Scalar& alpha = 1);
// aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor
SDK_API Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training, double momentum, double eps, bool cudnn_enabled);
// aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor
SDK_API Tensor bernoulli(const Tensor& self, const std::optional<Generator>& generator = {});
// aten::bernoulli.out(Tensor self, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bernoulli_out(const Tensor& out, const Tensor& self, const std::optional<Generator>& generator = {});
// aten::bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor
SDK_API Tensor bernoulli(const Tensor& self, double p, const std::optional<Generator>& generator = {});
// aten::bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)
SDK_API Tensor bernoulli_(const Tensor& self, const Tensor& p, const std::optional<Generator>& generator = {});
// aten::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor bitwise_and(const Tensor& self, const Scalar& other);
// aten::bitwise_and.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
SDK_API Tensor bitwise_and(const Scalar& self, const Tensor& other);
// aten::bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_and_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor bitwise_and(const Tensor& self, const Tensor& other);
// aten::bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_and_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::bitwise_and_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor bitwise_and_(const Tensor& self, const Scalar& other);
// aten::bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor bitwise_and_(const Tensor& self, const Tensor& other);
// aten::bitwise_not(Tensor self) -> Tensor
SDK_API Tensor bitwise_not(const Tensor& self);
// aten::bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_not_out(const Tensor& out, const Tensor& self);
// aten::bitwise_not_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor bitwise_not_(const Tensor& self);
// aten::bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor bitwise_or(const Tensor& self, const Scalar& other);
// aten::bitwise_or.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
SDK_API Tensor bitwise_or(const Scalar& self, const Tensor& other);
// aten::bitwise_or.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_or_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor bitwise_or(const Tensor& self, const Tensor& other);
// aten::bitwise_or.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_or_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::bitwise_or_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor bitwise_or_(const Tensor& self, const Scalar& other);
// aten::bitwise_or_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor bitwise_or_(const Tensor& self, const Tensor& other);
// aten::bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor bitwise_xor(const Tensor& self, const Scalar& other);
// aten::bitwise_xor.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
SDK_API Tensor bitwise_xor(const Scalar& self, const Tensor& other);
// aten::bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_xor_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor bitwise_xor(const Tensor& self, const Tensor& other);
// aten::bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bitwise_xor_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::bitwise_xor_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor bitwise_xor_(const Tensor& self, const Scalar& other);
// aten::bitwise_xor_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor bitwise_xor_(const Tensor& self, const Tensor& other);
// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);
// aten::cat(Tensor[] tensors, int dim=0) -> Tensor
SDK_API Tensor cat(TensorList tensors, int64_t dim = 0);
// aten::ceil(Tensor self) -> Tensor
SDK_API Tensor ceil(const Tensor& self);
// aten::ceil.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor ceil_out(const Tensor& out, const Tensor& self);
// aten::ceil_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor ceil_(const Tensor& self);
// aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
SDK_API std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
// aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
SDK_API Tensor clamp(const Tensor& self, const std::optional<Scalar>& min = {}, const std::optional<Scalar>& max = {});
// aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
SDK_API Tensor clamp(const Tensor& self, const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {});
// aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor clamp_out(const Tensor& out, const Tensor& self, const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {});
// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor clamp_out(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min = {}, const std::optional<Scalar>& max = {});
// aten::clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)
SDK_API Tensor clamp_(const Tensor& self, const std::optional<Scalar>& min = {}, const std::optional<Scalar>& max = {});
// aten::clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)
SDK_API Tensor clamp_(const Tensor& self, const std::optional<Tensor>& min = {}, const std::optional<Tensor>& max = {});
// aten::clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
SDK_API Tensor clip(const Tensor& self, const std::optional<Scalar>& min = {}, const std::optional<Scalar>& max = {});
// aten::clip_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)
SDK_API Tensor clip_(const Tensor& self, const std::optional<Scalar>& min = {}, const std::optional<Scalar>& max = {});
// aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor clone(const Tensor& self, std::optional<int64_t> memory_format = {});
// aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor
SDK_API Tensor col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride);
// aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
SDK_API Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0);
// aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor
SDK_API Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {}, IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
// aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor
SDK_API Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {}, IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, int64_t groups = 1);
// aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> Tensor
SDK_API Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {}, IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0}, int64_t groups = 1, IntArrayRef dilation = {1});
// aten::conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor
SDK_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = {}, IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef output_padding = {0, 0}, int64_t groups = 1, IntArrayRef dilation = {1, 1});
// aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor
SDK_API Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups);
// aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight, std::optional<IntArrayRef> bias_sizes, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups, std::array<bool, 3> output_mask);
// aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor
SDK_API Tensor copy(const Tensor& self, const Tensor& src, bool non_blocking = false);
// aten::cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor cos_out(const Tensor& out, const Tensor& self);
// aten::cos_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor cos_(const Tensor& self);
// aten::cosh(Tensor self) -> Tensor
SDK_API Tensor cosh(const Tensor& self);
// aten::cosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor cosh_out(const Tensor& out, const Tensor& self);
// aten::cosh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor cosh_(const Tensor& self);
// aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor
SDK_API Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {}, int64_t reduction = 1, int64_t ignore_index = -100, double label_smoothing = 0.0);
// aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor cumprod_out(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)
SDK_API Tensor cumprod_(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor cumsum_out(const Tensor& out, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)
SDK_API Tensor cumsum_(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::detach(Tensor(a) self) -> Tensor(a)
SDK_API Tensor detach(const Tensor& self);
// aten::diag(Tensor self, int diagonal=0) -> Tensor
SDK_API Tensor diag(const Tensor& self, int64_t diagonal = 0);
// aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
SDK_API Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
// aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor
SDK_API Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode);
// aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor
SDK_API Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode);
// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor div_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor div_out(const Tensor& out, const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode);
// aten::div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor div_(const Tensor& self, const Scalar& other);
// aten::div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)
SDK_API Tensor div_(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode);
// aten::div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor div_(const Tensor& self, const Tensor& other);
// aten::div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)
SDK_API Tensor div_(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode);
// aten::dropout(Tensor input, float p, bool train) -> Tensor
SDK_API Tensor dropout(const Tensor& input, double p, bool train);
// aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor
SDK_API Tensor einsum(std::string_view equation, TensorList tensors, std::optional<IntArrayRef> path = {});
// aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
SDK_API Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
// aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
SDK_API Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1, bool scale_grad_by_freq = false, bool sparse = false);
// aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor
SDK_API Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq);
// aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::eq.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor eq(const Tensor& self, const Scalar& other);
// aten::eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor eq_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::eq.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor eq(const Tensor& self, const Tensor& other);
// aten::eq.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor eq_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor eq_(const Tensor& self, const Scalar& other);
// aten::eq_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor eq_(const Tensor& self, const Tensor& other);
// aten::equal(Tensor self, Tensor other) -> bool
SDK_API bool equal(const Tensor& self, const Tensor& other);
// aten::erf(Tensor self) -> Tensor
SDK_API Tensor erf(const Tensor& self);
// aten::erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor erf_out(const Tensor& out, const Tensor& self);
// aten::erf_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor erf_(const Tensor& self);
// aten::erfinv(Tensor self) -> Tensor
SDK_API Tensor erfinv(const Tensor& self);
// aten::erfinv.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor erfinv_out(const Tensor& out, const Tensor& self);
// aten::erfinv_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor erfinv_(const Tensor& self);
// aten::exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor exp_out(const Tensor& out, const Tensor& self);
// aten::exp_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor exp_(const Tensor& self);
// aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
SDK_API Tensor expand(const Tensor& self, IntArrayRef size, bool implicit = false);
// aten::expm1(Tensor self) -> Tensor
SDK_API Tensor expm1(const Tensor& self);
// aten::expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor expm1_out(const Tensor& out, const Tensor& self);
// aten::expm1_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor expm1_(const Tensor& self);
// aten::exponential_(Tensor(a!) self, float lambd=1, *, Generator? generator=None) -> Tensor(a!)
SDK_API Tensor exponential_(const Tensor& self, double lambd = 1, const std::optional<Generator>& generator = {});
// aten::eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor eye(int64_t n, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor eye(int64_t n, int64_t m, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::eye.m_out(SymInt n, SymInt m, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor eye_out(const Tensor& out, int64_t n, int64_t m);
// aten::eye.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor eye_out(const Tensor& out, int64_t n);
// aten::fill.Scalar(Tensor self, Scalar value) -> Tensor
SDK_API Tensor fill(const Tensor& self, const Scalar& value);
// aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)
SDK_API Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
// aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor flip_out(const Tensor& out, const Tensor& self, IntArrayRef dims);
// aten::floor(Tensor self) -> Tensor
SDK_API Tensor floor(const Tensor& self);
// aten::floor.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor floor_out(const Tensor& out, const Tensor& self);
// aten::floor_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor floor_(const Tensor& self);
// aten::floor_divide(Tensor self, Tensor other) -> Tensor
SDK_API Tensor floor_divide(const Tensor& self, const Tensor& other);
// aten::floor_divide.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor floor_divide(const Tensor& self, const Scalar& other);
// aten::floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor floor_divide_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor floor_divide_(const Tensor& self, const Scalar& other);
// aten::floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor floor_divide_(const Tensor& self, const Tensor& other);
// aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor fmod(const Tensor& self, const Scalar& other);
// aten::fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor fmod_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor fmod(const Tensor& self, const Tensor& other);
// aten::fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor fmod_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::fmod_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor fmod_(const Tensor& self, const Scalar& other);
// aten::fmod_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor fmod_(const Tensor& self, const Tensor& other);
// aten::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor full(IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor gather_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad = false);
// aten::ge.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor ge(const Tensor& self, const Scalar& other);
// aten::ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor ge_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::ge.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor ge(const Tensor& self, const Tensor& other);
// aten::ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor ge_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::ge_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor ge_(const Tensor& self, const Scalar& other);
// aten::ge_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor ge_(const Tensor& self, const Tensor& other);
// aten::gelu(Tensor self, *, str approximate="none") -> Tensor
SDK_API Tensor gelu(const Tensor& self, std::string_view approximate = "none");
// aten::gelu.out(Tensor self, *, str approximate="none", Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor gelu_out(const Tensor& out, const Tensor& self, std::string_view approximate = "none");
// aten::gelu_(Tensor(a!) self, *, str approximate="none") -> Tensor(a!)
SDK_API Tensor gelu_(const Tensor& self, std::string_view approximate = "none");
// aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor
SDK_API Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode, bool align_corners);
// aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor
SDK_API Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight = {}, const std::optional<Tensor>& bias = {}, double eps = 1e-05, bool cudnn_enabled = true);
// aten::gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor gt_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::gt.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor gt(const Tensor& self, const Tensor& other);
// aten::gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor gt_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::gt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor gt_(const Tensor& self, const Scalar& other);
// aten::gt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor gt_(const Tensor& self, const Tensor& other);
// aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
SDK_API Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
// aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor index_out(const Tensor& out, const Tensor& self, OptionalTensorList indices);
// aten::index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor
SDK_API Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// aten::index_add.out(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor index_add_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// aten::index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)
SDK_API Tensor index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// aten::index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor
SDK_API Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
// aten::index_copy.out(Tensor self, int dim, Tensor index, Tensor source, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor index_copy_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
// aten::index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)
SDK_API Tensor index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
// aten::index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
SDK_API Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
// aten::index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor
SDK_API Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value);
// aten::index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)
SDK_API Tensor index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
// aten::index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)
SDK_API Tensor index_fill_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value);
// aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor index_select_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index);
// aten::is_floating_point(Tensor self) -> bool
SDK_API bool is_floating_point(const Tensor& self);
// aten::isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor
SDK_API Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
// aten::isfinite(Tensor self) -> Tensor
SDK_API Tensor isfinite(const Tensor& self);
// aten::isinf(Tensor self) -> Tensor
SDK_API Tensor isinf(const Tensor& self);
// aten::isnan(Tensor self) -> Tensor
SDK_API Tensor isnan(const Tensor& self);
// aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor
SDK_API Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = {}, const std::optional<Tensor>& bias = {}, double eps = 1e-05, bool cudnn_enable = true);
// aten::le.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor le(const Tensor& self, const Scalar& other);
// aten::le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor le_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::le.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor le(const Tensor& self, const Tensor& other);
// aten::le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor le_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::le_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor le_(const Tensor& self, const Scalar& other);
// aten::le_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor le_(const Tensor& self, const Tensor& other);
// aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor
SDK_API Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
// aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor
SDK_API Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
// aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor
SDK_API Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
// aten::lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)
SDK_API Tensor lerp_(const Tensor& self, const Tensor& end, const Scalar& weight);
// aten::lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)
SDK_API Tensor lerp_(const Tensor& self, const Tensor& end, const Tensor& weight);
// aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord = 2, std::optional<IntArrayRef> dim = {}, bool keepdim = false, std::optional<ScalarType> dtype = {});
// aten::linalg_vector_norm.out(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor linalg_vector_norm_out(const Tensor& out, const Tensor& self, const Scalar& ord = 2, std::optional<IntArrayRef> dim = {}, bool keepdim = false, std::optional<ScalarType> dtype = {});
// aten::linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor linspace_out(const Tensor& out, const Scalar& start, const Scalar& end, int64_t steps);
// aten::log(Tensor self) -> Tensor
SDK_API Tensor log(const Tensor& self);
// aten::log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor log_out(const Tensor& out, const Tensor& self);
// aten::log10(Tensor self) -> Tensor
SDK_API Tensor log10(const Tensor& self);
// aten::log10.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor log10_out(const Tensor& out, const Tensor& self);
// aten::log10_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor log10_(const Tensor& self);
// aten::log1p(Tensor self) -> Tensor
SDK_API Tensor log1p(const Tensor& self);
// aten::log1p.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor log1p_out(const Tensor& out, const Tensor& self);
// aten::log1p_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor log1p_(const Tensor& self);
// aten::log2(Tensor self) -> Tensor
SDK_API Tensor log2(const Tensor& self);
// aten::log2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor log2_out(const Tensor& out, const Tensor& self);
// aten::log2_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor log2_(const Tensor& self);
// aten::log_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor log_(const Tensor& self);
// aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
SDK_API Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::logical_and(Tensor self, Tensor other) -> Tensor
SDK_API Tensor logical_and(const Tensor& self, const Tensor& other);
// aten::logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor logical_and_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::logical_and_(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor logical_and_(const Tensor& self, const Tensor& other);
// aten::logical_not(Tensor self) -> Tensor
SDK_API Tensor logical_not(const Tensor& self);
// aten::logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor logical_not_out(const Tensor& out, const Tensor& self);
// aten::logical_not_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor logical_not_(const Tensor& self);
// aten::logical_or(Tensor self, Tensor other) -> Tensor
SDK_API Tensor logical_or(const Tensor& self, const Tensor& other);
// aten::logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor logical_or_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::logical_or_(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor logical_or_(const Tensor& self, const Tensor& other);
// aten::logical_xor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor logical_xor(const Tensor& self, const Tensor& other);
// aten::logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor logical_xor_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::logical_xor_(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor logical_xor_(const Tensor& self, const Tensor& other);
// aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor
SDK_API Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);
// aten::lt.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor lt(const Tensor& self, const Scalar& other);
// aten::lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor lt_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::lt.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor lt(const Tensor& self, const Tensor& other);
// aten::lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor lt_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::lt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor lt_(const Tensor& self, const Scalar& other);
// aten::lt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor lt_(const Tensor& self, const Tensor& other);
// aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor
SDK_API Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
// aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor
SDK_API Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
// aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)
SDK_API Tensor masked_fill_(const Tensor& self, const Tensor& mask, const Scalar& value);
// aten::masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)
SDK_API Tensor masked_fill_(const Tensor& self, const Tensor& mask, const Tensor& value);
// aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
SDK_API Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);
// aten::masked_scatter.out(Tensor self, Tensor mask, Tensor source, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor masked_scatter_out(const Tensor& out, const Tensor& self, const Tensor& mask, const Tensor& source);
// aten::masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)
SDK_API Tensor masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source);
// aten::masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor masked_select_out(const Tensor& out, const Tensor& self, const Tensor& mask);
// aten::matmul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor matmul_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::max(Tensor self) -> Tensor
SDK_API Tensor max(const Tensor& self);
// aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
SDK_API std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
// aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor
SDK_API Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
// aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1}, bool ceil_mode = false);
// aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor
SDK_API Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices);
// aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0, 0, 0}, IntArrayRef dilation = {1, 1, 1}, bool ceil_mode = false);
// aten::maximum(Tensor self, Tensor other) -> Tensor
SDK_API Tensor maximum(const Tensor& self, const Tensor& other);
// aten::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor maximum_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = {});
// aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor mean(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false, std::optional<ScalarType> dtype = {});
// aten::min(Tensor self) -> Tensor
SDK_API Tensor min(const Tensor& self);
// aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
SDK_API std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
// aten::minimum(Tensor self, Tensor other) -> Tensor
SDK_API Tensor minimum(const Tensor& self, const Tensor& other);
// aten::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor minimum_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);
// aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor
SDK_API Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction = 1);
// aten::multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor
SDK_API Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement = false, const std::optional<Generator>& generator = {});
// aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor
SDK_API Tensor nan_to_num(const Tensor& self, std::optional<double> nan = {}, std::optional<double> posinf = {}, std::optional<double> neginf = {});
// aten::nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor(a!)
SDK_API Tensor nan_to_num_(const Tensor& self, std::optional<double> nan = {}, std::optional<double> posinf = {}, std::optional<double> neginf = {});
// aten::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
SDK_API Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
// aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training, double momentum, double eps);
// aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train, double eps, std::array<bool, 3> output_mask);
// aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p, std::optional<bool> train);
// aten::native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor
SDK_API Tensor native_dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale);
// aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, int64_t N, int64_t C, int64_t HxW, int64_t group, double eps);
// aten::native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight, int64_t N, int64_t C, int64_t HxW, int64_t group, std::array<bool, 3> output_mask);
// aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps);
// aten::native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, std::array<bool, 3> output_mask);
// aten::ne.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor ne(const Tensor& self, const Scalar& other);
// aten::ne.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor ne_out(const Tensor& out, const Tensor& self, const Scalar& other);
// aten::ne.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor ne(const Tensor& self, const Tensor& other);
// aten::ne.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor ne_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::ne_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor ne_(const Tensor& self, const Scalar& other);
// aten::ne_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor ne_(const Tensor& self, const Tensor& other);
// aten::neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor neg_out(const Tensor& out, const Tensor& self);
// aten::neg_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor neg_(const Tensor& self);
// aten::new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor new_empty(const Tensor& self, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor new_full(const Tensor& self, IntArrayRef size, const Scalar& fill_value, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor new_ones(const Tensor& self, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor new_zeros(const Tensor& self, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor
SDK_API Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {}, int64_t reduction = 1, int64_t ignore_index = -100);
// aten::nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor
SDK_API Tensor nll_loss2d(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {}, int64_t reduction = 1, int64_t ignore_index = -100);
// aten::nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)
SDK_API std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index);
// aten::nll_loss_forward.output(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, *, Tensor(a!) output, Tensor(b!) total_weight) -> (Tensor(a!), Tensor(b!))
SDK_API std::tuple<Tensor, Tensor> nll_loss_forward_out(const Tensor& output, const Tensor& total_weight, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index);
// aten::nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor
SDK_API Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {}, int64_t reduction = 1, int64_t ignore_index = -100);
// aten::nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor nonzero_out(const Tensor& out, const Tensor& self);
// aten::nonzero_numpy(Tensor self) -> Tensor[]
SDK_API std::vector<Tensor> nonzero_numpy(const Tensor& self);
// aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor
SDK_API Tensor norm(const Tensor& self, const Scalar& p = 2);
// aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor
SDK_API Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim = false);
// aten::norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor
SDK_API Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim, ScalarType dtype);
// aten::norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor
SDK_API Tensor norm(const Tensor& self, const std::optional<Scalar>& p, ScalarType dtype);
// aten::norm.dtype_out(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor norm_out(const Tensor& out, const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim, ScalarType dtype);
// aten::norm.out(Tensor self, Scalar? p, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor norm_out(const Tensor& out, const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim = false);
// aten::normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor
SDK_API Tensor normal(const Tensor& mean, const Tensor& std, const std::optional<Generator>& generator = {});
// aten::normal.Tensor_float(Tensor mean, float std=1, *, Generator? generator=None) -> Tensor
SDK_API Tensor normal(const Tensor& mean, double std = 1, const std::optional<Generator>& generator = {});
// aten::normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor
SDK_API Tensor normal(double mean, const Tensor& std, const std::optional<Generator>& generator = {});
// aten::normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor normal(double mean, double std, IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::outer(Tensor self, Tensor vec2) -> Tensor
SDK_API Tensor outer(const Tensor& self, const Tensor& vec2);
// aten::pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor
SDK_API Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode = "constant", std::optional<double> value = {});
// aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)
SDK_API Tensor permute(const Tensor& self, IntArrayRef dims);
// aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor
SDK_API Tensor pow(const Scalar& self, const Tensor& exponent);
// aten::pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor pow_out(const Tensor& out, const Scalar& self, const Tensor& exponent);
// aten::pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor pow_out(const Tensor& out, const Tensor& self, const Scalar& exponent);
// aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
SDK_API Tensor pow(const Tensor& self, const Tensor& exponent);
// aten::pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor pow_out(const Tensor& out, const Tensor& self, const Tensor& exponent);
// aten::pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
SDK_API Tensor pow_(const Tensor& self, const Scalar& exponent);
// aten::pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)
SDK_API Tensor pow_(const Tensor& self, const Tensor& exponent);
// aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = {});
// aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = {});
// aten::rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor rand(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor rand(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::rand.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor rand_out(const Tensor& out, IntArrayRef size, const std::optional<Generator>& generator);
// aten::rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor rand_out(const Tensor& out, IntArrayRef size);
// aten::rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor rand_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::rand_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor rand_like(const Tensor& self, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randint(int64_t high, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randint(int64_t high, IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randint.generator_out(SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randint_out(const Tensor& out, int64_t high, IntArrayRef size, const std::optional<Generator>& generator);
// aten::randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randint(int64_t low, int64_t high, IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randint.low_generator_out(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randint_out(const Tensor& out, int64_t low, int64_t high, IntArrayRef size, const std::optional<Generator>& generator);
// aten::randint.low_out(SymInt low, SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randint_out(const Tensor& out, int64_t low, int64_t high, IntArrayRef size);
// aten::randint.out(SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randint_out(const Tensor& out, int64_t high, IntArrayRef size);
// aten::randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randint_like(const Tensor& self, int64_t high, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randint_like.generator(Tensor self, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randint_like(const Tensor& self, int64_t high, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randint_like(const Tensor& self, int64_t low, int64_t high, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randint_like(const Tensor& self, int64_t low, int64_t high, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randn(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randn(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randn.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randn_out(const Tensor& out, IntArrayRef size, const std::optional<Generator>& generator);
// aten::randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor randn_out(const Tensor& out, IntArrayRef size);
// aten::randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randn_like(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::randn_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
SDK_API Tensor randn_like(const Tensor& self, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format = {});
// aten::random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)
SDK_API Tensor random_(const Tensor& self, const std::optional<Generator>& generator = {});
// aten::random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)
SDK_API Tensor random_(const Tensor& self, int64_t from, std::optional<int64_t> to, const std::optional<Generator>& generator = {});
// aten::random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)
SDK_API Tensor random_(const Tensor& self, int64_t to, const std::optional<Generator>& generator = {});
// aten::randperm(SymInt n, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randperm(int64_t n, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor randperm(int64_t n, const std::optional<Generator>& generator, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::reciprocal(Tensor self) -> Tensor
SDK_API Tensor reciprocal(const Tensor& self);
// aten::reciprocal.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor reciprocal_out(const Tensor& out, const Tensor& self);
// aten::reciprocal_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor reciprocal_(const Tensor& self);
// aten::reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor
SDK_API Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding);
// aten::reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor
SDK_API Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding);
// aten::reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor
SDK_API Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding);
// aten::relu(Tensor self) -> Tensor
SDK_API Tensor relu(const Tensor& self);
// aten::relu_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor relu_(const Tensor& self);
// aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor
SDK_API Tensor remainder(const Tensor& self, const Scalar& other);
// aten::remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
SDK_API Tensor remainder(const Scalar& self, const Tensor& other);
// aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor
SDK_API Tensor remainder(const Tensor& self, const Tensor& other);
// aten::remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor remainder_out(const Tensor& out, const Tensor& self, const Tensor& other);
// aten::remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
SDK_API Tensor remainder_(const Tensor& self, const Scalar& other);
// aten::remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
SDK_API Tensor remainder_(const Tensor& self, const Tensor& other);
// aten::repeat(Tensor self, SymInt[] repeats) -> Tensor
SDK_API Tensor repeat(const Tensor& self, IntArrayRef repeats);
// aten::repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor
SDK_API Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = {});
// aten::repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
SDK_API Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim = {}, std::optional<int64_t> output_size = {});
// aten::repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
SDK_API Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim = {}, std::optional<int64_t> output_size = {});
// aten::replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor
SDK_API Tensor replication_pad1d(const Tensor& self, IntArrayRef padding);
// aten::replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor
SDK_API Tensor replication_pad2d(const Tensor& self, IntArrayRef padding);
// aten::replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor
SDK_API Tensor replication_pad3d(const Tensor& self, IntArrayRef padding);
// aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
SDK_API Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = {}, std::optional<double> eps = {});
// aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor
SDK_API Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
// aten::round(Tensor self) -> Tensor
SDK_API Tensor round(const Tensor& self);
// aten::round.decimals(Tensor self, *, int decimals) -> Tensor
SDK_API Tensor round(const Tensor& self, int64_t decimals);
// aten::round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor round_out(const Tensor& out, const Tensor& self, int64_t decimals);
// aten::round.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor round_out(const Tensor& out, const Tensor& self);
// aten::round_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor round_(const Tensor& self);
// aten::round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)
SDK_API Tensor round_(const Tensor& self, int64_t decimals);
// aten::rsqrt(Tensor self) -> Tensor
SDK_API Tensor rsqrt(const Tensor& self);
// aten::rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor rsqrt_out(const Tensor& out, const Tensor& self);
// aten::rsqrt_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor rsqrt_(const Tensor& self);
// aten::rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
SDK_API Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
// aten::scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
SDK_API Tensor scalar_tensor(const Scalar& s, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory);
// aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor
SDK_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = {}, bool enable_gqa = false);
// aten::scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor
SDK_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
// aten::scatter.reduce_out(Tensor self, int dim, Tensor index, Tensor src, *, str reduce, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
// aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
// aten::scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor
SDK_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
// aten::scatter.value_reduce_out(Tensor self, int dim, Tensor index, Scalar value, *, str reduce, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
// aten::scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)
SDK_API Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
// aten::scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)
SDK_API Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// aten::scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)
SDK_API Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
// aten::scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)
SDK_API Tensor scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
// aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_add_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)
SDK_API Tensor scatter_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor
SDK_API Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self = true);
// aten::scatter_reduce.two_out(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor scatter_reduce_out(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self = true);
// aten::scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor(a!)
SDK_API Tensor scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce, bool include_self = true);
// aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
SDK_API Tensor select(const Tensor& self, int64_t dim, int64_t index);
// aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
SDK_API Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index);
// aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sigmoid_out(const Tensor& out, const Tensor& self);
// aten::sigmoid_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor sigmoid_(const Tensor& self);
// aten::sign(Tensor self) -> Tensor
SDK_API Tensor sign(const Tensor& self);
// aten::sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sign_out(const Tensor& out, const Tensor& self);
// aten::sign_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor sign_(const Tensor& self);
// aten::silu(Tensor self) -> Tensor
SDK_API Tensor silu(const Tensor& self);
// aten::silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor silu_out(const Tensor& out, const Tensor& self);
// aten::silu_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor silu_(const Tensor& self);
// aten::sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sin_out(const Tensor& out, const Tensor& self);
// aten::sin_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor sin_(const Tensor& self);
// aten::sinh(Tensor self) -> Tensor
SDK_API Tensor sinh(const Tensor& self);
// aten::sinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sinh_out(const Tensor& out, const Tensor& self);
// aten::sinh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor sinh_(const Tensor& self);
// aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
SDK_API Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<int64_t> start = {}, std::optional<int64_t> end = {}, int64_t step = 1);
// aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
SDK_API Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = {}, std::optional<int64_t> end = {}, int64_t step = 1);
// aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
SDK_API Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = {});
// aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
SDK_API std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false);
// aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
SDK_API std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
// aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
SDK_API std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
// aten::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
SDK_API std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
// aten::sqrt(Tensor self) -> Tensor
SDK_API Tensor sqrt(const Tensor& self);
// aten::sqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sqrt_out(const Tensor& out, const Tensor& self);
// aten::sqrt_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor sqrt_(const Tensor& self);
// aten::square(Tensor self) -> Tensor
SDK_API Tensor square(const Tensor& self);
// aten::squeeze(Tensor(a) self) -> Tensor(a)
SDK_API Tensor squeeze(const Tensor& self);
// aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)
SDK_API Tensor squeeze(const Tensor& self, int64_t dim);
// aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)
SDK_API Tensor squeeze(const Tensor& self, IntArrayRef dim);
// aten::squeeze_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor squeeze_(const Tensor& self);
// aten::squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)
SDK_API Tensor squeeze_(const Tensor& self, int64_t dim);
// aten::squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)
SDK_API Tensor squeeze_(const Tensor& self, IntArrayRef dim);
// aten::stack(Tensor[] tensors, int dim=0) -> Tensor
SDK_API Tensor stack(TensorList tensors, int64_t dim = 0);
// aten::std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
SDK_API Tensor std(const Tensor& self, std::optional<IntArrayRef> dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false);
// aten::std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> std_mean(const Tensor& self, bool unbiased = true);
// aten::std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false);
// aten::std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> std_mean(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased = true, bool keepdim = false);
// aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
SDK_API Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
// aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sub_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
// aten::sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
SDK_API Tensor sub_(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
// aten::sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
SDK_API Tensor sub_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
// aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
SDK_API Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = {});
// aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor sum_out(const Tensor& out, const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false, std::optional<ScalarType> dtype = {});
// aten::sym_numel(Tensor self) -> SymInt
SDK_API int64_t sym_numel(const Tensor& self);
// aten::sym_size.int(Tensor self, int dim) -> SymInt
SDK_API int64_t sym_size(const Tensor& self, int64_t dim);
// aten::sym_storage_offset(Tensor self) -> SymInt
SDK_API int64_t sym_storage_offset(const Tensor& self);
// aten::sym_stride.int(Tensor self, int dim) -> SymInt
SDK_API int64_t sym_stride(const Tensor& self, int64_t dim);
// aten::t_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor t_(const Tensor& self);
// aten::take.out(Tensor self, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor take_out(const Tensor& out, const Tensor& self, const Tensor& index);
// aten::tan(Tensor self) -> Tensor
SDK_API Tensor tan(const Tensor& self);
// aten::tan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor tan_out(const Tensor& out, const Tensor& self);
// aten::tan_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor tan_(const Tensor& self);
// aten::tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor tanh_out(const Tensor& out, const Tensor& self);
// aten::tanh_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor tanh_(const Tensor& self);
// aten::tile(Tensor self, SymInt[] dims) -> Tensor
SDK_API Tensor tile(const Tensor& self, IntArrayRef dims);
// aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)
SDK_API Tensor to(const Tensor& self, Device device, ScalarType dtype, bool non_blocking = false, bool copy = false, std::optional<int64_t> memory_format = {});
// aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)
SDK_API Tensor to(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking = false, bool copy = false, std::optional<int64_t> memory_format = {});
// aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)
SDK_API Tensor to(const Tensor& self, const Tensor& other, bool non_blocking = false, bool copy = false, std::optional<int64_t> memory_format = {});
// aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
SDK_API std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
// aten::trace(Tensor self) -> Tensor
SDK_API Tensor trace(const Tensor& self);
// aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
SDK_API Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
// aten::transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
SDK_API Tensor transpose_(const Tensor& self, int64_t dim0, int64_t dim1);
// aten::tril(Tensor self, int diagonal=0) -> Tensor
SDK_API Tensor tril(const Tensor& self, int64_t diagonal = 0);
// aten::tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)
SDK_API Tensor tril_(const Tensor& self, int64_t diagonal = 0);
// aten::triu(Tensor self, int diagonal=0) -> Tensor
SDK_API Tensor triu(const Tensor& self, int64_t diagonal = 0);
// aten::triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)
SDK_API Tensor triu_(const Tensor& self, int64_t diagonal = 0);
// aten::trunc(Tensor self) -> Tensor
SDK_API Tensor trunc(const Tensor& self);
// aten::trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor trunc_out(const Tensor& out, const Tensor& self);
// aten::trunc_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor trunc_(const Tensor& self);
// aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
SDK_API std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
// aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)
SDK_API Tensor unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step);
// aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)
SDK_API Tensor unsqueeze(const Tensor& self, int64_t dim);
// aten::unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)
SDK_API Tensor unsqueeze_(const Tensor& self, int64_t dim);
// aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor
SDK_API Tensor upsample_bilinear2d(const Tensor& self, IntArrayRef output_size, bool align_corners, std::optional<double> scales_h = {}, std::optional<double> scales_w = {});
// aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) -> Tensor
SDK_API Tensor upsample_bilinear2d(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners, std::optional<ArrayRef<double>> scale_factors);
// aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor
SDK_API Tensor upsample_nearest2d(const Tensor& self, IntArrayRef output_size, std::optional<double> scales_h = {}, std::optional<double> scales_w = {});
// aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor
SDK_API Tensor upsample_nearest2d(const Tensor& input, std::optional<IntArrayRef> output_size, std::optional<ArrayRef<double>> scale_factors);
// aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
SDK_API Tensor var(const Tensor& self, std::optional<IntArrayRef> dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false);
// aten::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor
SDK_API Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased = true, bool keepdim = false);
// aten::var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> var_mean(const Tensor& self, bool unbiased = true);
// aten::var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim = {}, const std::optional<Scalar>& correction = {}, bool keepdim = false);
// aten::var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)
SDK_API std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased = true, bool keepdim = false);
// aten::where(Tensor condition) -> Tensor[]
SDK_API std::vector<Tensor> where(const Tensor& condition);
// aten::where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor
SDK_API Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);
// aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
SDK_API Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
// aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor
SDK_API Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
// aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
SDK_API Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
// aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
SDK_API Tensor where_out(const Tensor& out, const Tensor& condition, const Tensor& self, const Tensor& other);
// aten::zero_(Tensor(a!) self) -> Tensor(a!)
SDK_API Tensor zero_(const Tensor& self);

}  // namespace sdk::ops
