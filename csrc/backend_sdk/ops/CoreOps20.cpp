// Issue 20's core-tagged operators that PyTorch's decompositions express
// through other operators: activations, the underscore batch-norm
// entry points, native_group_norm(_backward), reductions with other
// signatures, factories, scatter-into-slice, 1-d and 3-d pooling, 3-d
// padding's neighbours, upsampling by scale factors, col2im, distances,
// grid sampling, embedding bags and the sym_* metadata queries.
//
// Note [Core composites]
// ~~~~~~~~~~~~~~~~~~~~~~
// Every operator here is CompositeImplicitAutograd (Note [Composite tensor
// methods], ops/TensorOps.cpp): its kernel calls other operators through the
// dispatcher only, so autograd records the operators it calls (no formula of
// its own), Meta and every device run it once they have the primitives, and a
// vendor may still register a kernel of its own for any of them. The
// decompositions are chosen so that the recorded gradient is the one
// PyTorch's formula gives:
//  - hardtanh / leaky_relu / elu are where-selections, so the gradient is
//    zero exactly where PyTorch's *_backward makes it zero (hardtanh: outside
//    the open interval (min_val, max_val); NaN passes through, as clamp's);
//  - select_scatter / slice_scatter are a where over a mask of the slice,
//    with src spread along `dim` by index_select: self's gradient is zero on
//    the slice, src's is the gradient's slice (derivatives.yaml);
//  - 3-d average pooling and adaptive pooling are separable: a window's sum
//    and its divisor factor into the (H, W) part and the D part (the padded
//    and ceil-mode extents are per dimension), so they are a 2-d pooling over
//    (H, W) with D as channels followed by one over D; max pooling is
//    separable the same way, and the flat index is rebuilt from the D
//    position and the 2-d index chosen there (ties go to the first element
//    in (d, h, w) order, as the 3-d kernel scans);
//  - col2im adds each column entry into its place of the padded image with
//    scatter_add (host-built index, ops/detail/CompositeOps.h) and crops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CompositeOps.h>
#include <backend_sdk/ops/detail/MemoryFormat.h>

namespace sdk::ops {
namespace {

using namespace cx;
using OptT = std::optional<Tensor>;
using OptDtype = std::optional<ScalarType>;
using OptLayout = std::optional<int64_t>;
using OptDevice = std::optional<Device>;
using OptBool = std::optional<bool>;
using Tup3 = std::tuple<Tensor, Tensor, Tensor>;

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  SDK_CHECK_INDEX(dim >= -n && dim < n, op, ": Dimension out of range (expected to be in range of [", -n, ", ",
                  n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// ---- activations ----
Tensor where_scalar_self(const Tensor& cond, const Scalar& a, const Tensor& b) {
  SDK_CX_OP("aten::where.ScalarSelf", T(CT, const Scalar&, CT));
  return op.call(cond, a, b);
}

Tensor hardtanh_impl(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  SDK_CHECK_VALUE(self.dtype() != ScalarType::Bool, "hardtanh: \"hardtanh\" not implemented for 'Bool'");
  SDK_CHECK_VALUE(min_val.to_double() <= max_val.to_double(), "hardtanh: min_val cannot be greater than max_val");
  Tensor low = where_scalar_self(le_s(self, min_val), min_val, self);
  return where_scalar_self(ge_s(low, max_val), max_val, low);
}

Tensor leaky_relu_impl(const Tensor& self, const Scalar& negative_slope) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "leaky_relu: \"leaky_relu_cpu\" not implemented for '",
                 legacy_type_name(self.dtype()), "'");
  return where(gt_s(self, Scalar(0.0)), self, mul(self, negative_slope));
}

Tensor elu_impl(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "elu: \"elu_cpu\" not implemented for '",
                 legacy_type_name(self.dtype()), "'");
  SDK_CX_OP("aten::expm1", T(CT));
  Tensor negative = mul(op.call(mul(self, input_scale)), Scalar(alpha.to_double() * scale.to_double()));
  return where(gt_s(self, Scalar(0.0)), mul(self, scale), negative);
}

// ---- _native_batch_norm_legit: native_batch_norm with its stats arguments spelled three ways ----
Tup3 batch_norm_call(CT input, const OptT& w, const OptT& b, const OptT& rm, const OptT& rv, bool training,
                     double momentum, double eps) {
  using Sig = Tup3(CT, const OptT&, const OptT&, const OptT&, const OptT&, bool, double, double);
  SDK_CX_OP("aten::native_batch_norm", Sig);
  return op.call(input, w, b, rm, rv, training, momentum, eps);
}
Tup3 bn_legit(CT input, const OptT& w, const OptT& b, CT rm, CT rv, bool training, double momentum, double eps) {
  return batch_norm_call(input, w, b, rm, rv, training, momentum, eps);
}
Tup3 bn_legit_no_stats(CT input, const OptT& w, const OptT& b, bool training, double momentum, double eps) {
  SDK_CHECK_VALUE(training, "_native_batch_norm_legit.no_stats: running statistics are required for evaluation "
                  "(training=False needs running_mean and running_var)");
  return batch_norm_call(input, w, b, std::nullopt, std::nullopt, training, momentum, eps);
}
Tup3 bn_legit_no_training(CT input, const OptT& w, const OptT& b, CT rm, CT rv, double momentum, double eps) {
  return batch_norm_call(input, w, b, rm, rv, false, momentum, eps);
}

// ---- native_group_norm(_backward): statistics per (sample, group) over C/group * HxW values ----
void check_group_norm(CT input, const OptT& weight, int64_t n, int64_t c, int64_t hxw, int64_t group) {
  SDK_CHECK_VALUE(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, "
                  "but got input of shape ", input.sizes(), " and num_groups=", group);
  SDK_CHECK_VALUE(input.numel() == n * c * hxw, "native_group_norm: expected input with N * C * HxW = ", n, " * ", c,
                  " * ", hxw, " elements, but got input of shape ", input.sizes());
  if (weight) {
    SDK_CHECK_VALUE(weight->numel() == c, "Expected weight to be a vector of size equal to the number of channels in "
                    "input, but got weight of shape ", weight->sizes(), " and input of shape ", input.sizes());
  }
}

Tup3 native_group_norm_impl(CT input, const OptT& weight, const OptT& bias, int64_t n, int64_t c, int64_t hxw,
                            int64_t group, double eps) {
  check_group_norm(input, weight, n, c, hxw, group);
  if (bias) {
    SDK_CHECK_VALUE(bias->numel() == c, "Expected bias to be a vector of size equal to the number of channels in "
                    "input, but got bias of shape ", bias->sizes(), " and input of shape ", input.sizes());
  }
  const ScalarType ct = compute_type(input.dtype());
  Tensor x = reshape(as_dtype(input, ct), {n, group, (c / group) * hxw});
  Tensor mu = mean(x, {2}, true);
  Tensor rstd = rsqrt(add(var(x, {2}, 0, true), Scalar(eps)));
  Tensor y = reshape(mul(sub(x, mu), rstd), {n, c, hxw});
  if (weight) y = mul(y, view(as_dtype(*weight, ct), {c, 1}));
  if (bias) y = add(y, view(as_dtype(*bias, ct), {c, 1}));
  return {as_dtype(view(y, input.sizes()), input.dtype()), as_dtype(view(mu, {n, group}), input.dtype()),
          as_dtype(view(rstd, {n, group}), input.dtype())};
}

// d(input) = rstd * (dy_w - mean(dy_w) - xhat * mean(dy_w * xhat)) per (sample, group), dy_w = dy * weight[c];
// d(weight)[c] = sum over samples and HxW of dy * xhat; d(bias)[c] = sum of dy.
void native_group_norm_backward_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 10;
  Tensor grad = s[base].to_tensor(), input = s[base + 1].to_tensor(), mu = s[base + 2].to_tensor(),
         rstd = s[base + 3].to_tensor();
  OptT weight = opt_tensor(s[base + 4]);
  const int64_t n = s[base + 5].to_int(), c = s[base + 6].to_int(), hxw = s[base + 7].to_int(),
                group = s[base + 8].to_int();
  bool mask[3];
  for (size_t i = 0; i < 3; ++i) mask[i] = list_bool(s[base + 9], i);
  check_group_norm(input, weight, n, c, hxw, group);
  const ScalarType ct = compute_type(input.dtype());
  const int64_t d = (c / group) * hxw;
  Tensor x = reshape(as_dtype(input, ct), {n, group, d});
  Tensor m = view(as_dtype(mu, ct), {n, group, 1}), r = view(as_dtype(rstd, ct), {n, group, 1});
  Tensor xhat = mul(sub(x, m), r);
  Tensor dy = reshape(as_dtype(grad, ct), {n, c, hxw});
  Tensor gi, gw, gb;
  if (mask[0]) {
    Tensor dyw = weight ? mul(dy, view(as_dtype(*weight, ct), {c, 1})) : dy;
    dyw = reshape(dyw, {n, group, d});
    Tensor t = sub(sub(dyw, mean(dyw, {2}, true)), mul(xhat, mean(mul(dyw, xhat), {2}, true)));
    gi = as_dtype(view(mul(t, r), input.sizes()), input.dtype());
  }
  if (mask[1]) {
    Tensor prod = mul(dy, reshape(xhat, {n, c, hxw}));
    gw = as_dtype(sum(prod, {0, 2}, false), weight ? weight->dtype() : input.dtype());
  }
  if (mask[2]) gb = as_dtype(sum(dy, {0, 2}, false), weight ? weight->dtype() : input.dtype());
  s.resize(base);
  s.emplace_back(std::move(gi));
  s.emplace_back(std::move(gw));
  s.emplace_back(std::move(gb));
}

// ---- reductions with PyTorch's other signatures ----
Tensor any_dims_impl(CT self, std::optional<IntArrayRef> dim, bool keepdim) {
  static const auto any_all = typed<T(CT)>("aten::any");
  static const auto any_dim = typed<T(CT, int64_t, bool)>("aten::any.dim");
  if (!dim || dim->empty()) {
    Tensor r = any_all.call(self);
    if (!keepdim || self.dim() == 0) return r;
    return view(r, DimVector(static_cast<size_t>(self.dim()), 1));
  }
  std::vector<int64_t> dims;
  for (int64_t d : *dim) dims.push_back(wrap_dim(d, self.dim(), "any"));
  std::sort(dims.begin(), dims.end());
  SDK_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), "dim ", *std::adjacent_find(dims.begin(),
            dims.end()), " appears multiple times in the list of dims");
  Tensor r = self;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) r = any_dim.call(r, *it, keepdim);
  return r;
}

Tensor var_dim_impl(CT self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  SDK_CX_OP("aten::var.correction", T(CT, std::optional<IntArrayRef>, const std::optional<Scalar>&, bool));
  return op.call(self, dim, std::optional<Scalar>(Scalar(int64_t{unbiased ? 1 : 0})), keepdim);
}

// ---- functional copy / fill and the factories ----
// copy(self, src): src's values broadcast to self's shape, in self's dtype and on self's device.
Tensor copy_impl(CT self, CT src, bool non_blocking) {
  (void)non_blocking;
  Tensor values = expand(src, self.sizes());
  SDK_CX_OP("aten::_to_copy", T(CT, OptDtype, OptLayout, OptDevice, OptBool, bool, std::optional<int64_t>));
  return op.call(values, self.dtype(), std::nullopt, self.device(), std::nullopt, false, std::nullopt);
}

Tensor new_empty_like(CT self, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin,
                      std::optional<int64_t> memory_format) {
  int64_t fmt = memory_format.value_or(kPreserveFormat);
  if (fmt == kPreserveFormat) fmt = suggest_memory_format(self);
  SDK_CX_OP("aten::empty.memory_format", T(IntArrayRef, OptDtype, OptLayout, OptDevice, OptBool, std::optional<int64_t>));
  return op.call(self.sizes(), dtype.value_or(self.dtype()), layout, device ? device : OptDevice(self.device()), pin,
                 fmt);
}

Tensor filled(Tensor t, const Scalar& value) {
  if (t.device().type == DeviceType::Meta) return t;
  return fill_(t, value);
}

Tensor fill_scalar_impl(CT self, const Scalar& value) {
  return filled(new_empty_like(self, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt), value);
}

Tensor full_like_impl(CT self, const Scalar& value, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin,
                      std::optional<int64_t> memory_format) {
  return filled(new_empty_like(self, dtype, layout, device, pin, memory_format), value);
}

Tensor empty_of(IntArrayRef size, ScalarType dtype, OptLayout layout, OptDevice device, OptBool pin) {
  SDK_CX_OP("aten::empty.memory_format", T(IntArrayRef, OptDtype, OptLayout, OptDevice, OptBool, std::optional<int64_t>));
  return op.call(size, dtype, layout, device, pin, std::nullopt);
}

// full infers bool / int64 / the default float dtype from the fill value, as PyTorch's.
Tensor full_impl(IntArrayRef size, const Scalar& value, OptDtype dtype, OptLayout layout, OptDevice device,
                 OptBool pin) {
  for (int64_t s : size) SDK_CHECK_VALUE(s >= 0, "full: Trying to create tensor with negative dimension ", s, ": ", size);
  const ScalarType t = dtype ? *dtype
                       : value.is_boolean()      ? ScalarType::Bool
                       : value.is_integral(false) ? ScalarType::Int64
                                                  : default_dtype();
  return filled(empty_of(size, t, layout, device, pin), value);
}

Tensor scalar_tensor_impl(const Scalar& s, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin) {
  return filled(empty_of({}, dtype.value_or(default_dtype()), layout, device, pin), s);
}

// arange(start, end, step): PyTorch's length ceil((end - start) / step) (in double, or exactly for integers)
// and values start + i * step computed in double (int64 for integer arguments), then cast.
Tensor arange_impl(const Scalar& start, const Scalar& end, const Scalar& step, OptDtype dtype, OptLayout layout,
                   OptDevice device, OptBool pin) {
  const bool all_int = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
  const ScalarType t = dtype ? *dtype : all_int ? ScalarType::Int64 : default_dtype();
  const double xs = start.to_double(), xe = end.to_double(), st = step.to_double();
  SDK_CHECK_VALUE(st != 0, "arange: step must be nonzero");
  SDK_CHECK_VALUE(std::isfinite(xs) && std::isfinite(xe), "arange: unsupported range: ", xs, " -> ", xe);
  SDK_CHECK_VALUE((st > 0 && xe >= xs) || (st < 0 && xe <= xs),
                  "arange: upper bound and larger bound inconsistent with step sign");
  int64_t count;
  if (all_int && is_integral_type(t, true)) {
    const int64_t a = start.to_int(), b = end.to_int(), k = step.to_int();
    count = k > 0 ? (b - a + k - 1) / k : (a - b - k - 1) / (-k);
  } else {
    count = static_cast<int64_t>(std::ceil((xe - xs) / st));
  }
  count = std::max<int64_t>(count, 0);
  Tensor out = empty_of({count}, t, layout, device, pin);
  if (out.device().type == DeviceType::Meta || count == 0) return out;
  const bool exact_int = all_int;
  Tensor host = make_tensor({count}, exact_int ? ScalarType::Int64 : ScalarType::Float64, Device(DeviceType::CPU));
  if (exact_int) {
    auto* p = host.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i) p[i] = start.to_int() + i * step.to_int();
  } else {
    auto* p = host.data_ptr<double>();
    for (int64_t i = 0; i < count; ++i) p[i] = xs + static_cast<double>(i) * st;
  }
  // Non-blocking: `host` is a temporary, so a device copies it from a staging buffer without waiting for its
  // stream (a blocking host-to-device copy synchronises it: arange(L, device) in a causal mask would).
  return copy_(out, host, /*non_blocking=*/true);
}

// ---- select_scatter / slice_scatter: Note [Core composites] ----
Tensor scatter_positions(CT self, CT src, int64_t dim, const std::vector<int64_t>& positions, bool keep_dim,
                         const char* op) {
  DimVector slice_sizes(self.sizes());
  if (keep_dim) {
    slice_sizes[static_cast<size_t>(dim)] = static_cast<int64_t>(positions.size());
  } else {
    slice_sizes.erase(static_cast<size_t>(dim));
  }
  SDK_CHECK(IntArrayRef(slice_sizes).vec() == src.sizes().vec(), op, ": expected src to have a size equal to the slice of self. ",
            "src size = ", src.sizes(), ", slice size = ", IntArrayRef(slice_sizes));
  const int64_t n = self.size(dim);
  std::vector<int64_t> where_in_src(static_cast<size_t>(n), 0);
  std::vector<int64_t> in_slice(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < positions.size(); ++i) {
    where_in_src[static_cast<size_t>(positions[i])] = static_cast<int64_t>(i);
    in_slice[static_cast<size_t>(positions[i])] = 1;
  }
  Tensor spread = keep_dim ? cx::index_select(src, dim, index_tensor(where_in_src, self.device()))
                           : unsqueeze(src, dim);
  DimVector mask_shape(static_cast<size_t>(self.dim()), 1);
  mask_shape[static_cast<size_t>(dim)] = n;
  Tensor mask = view(ne_s(index_tensor(in_slice, self.device()), Scalar(int64_t{0})), mask_shape);
  return where(mask, to_dtype(spread, self.dtype()), self);
}

Tensor select_scatter_impl(CT self, CT src, int64_t dim, int64_t index) {
  SDK_CHECK_INDEX(self.dim() > 0, "select_scatter: select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim(), "select_scatter");
  const int64_t n = self.size(dim);
  SDK_CHECK_INDEX(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ",
                  self.sizes(), " at dimension ", dim);
  return scatter_positions(self, src, dim, {index < 0 ? index + n : index}, false, "select_scatter");
}

Tensor slice_scatter_impl(CT self, CT src, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                          int64_t step) {
  SDK_CHECK_INDEX(self.dim() > 0, "slice_scatter: slice() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim(), "slice_scatter");
  SDK_CHECK_VALUE(step > 0, "slice step must be positive");
  const int64_t n = self.size(dim);
  auto clampi = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t lo = clampi(start.value_or(0)), hi = std::max(lo, clampi(end.value_or(n)));
  std::vector<int64_t> positions;
  for (int64_t i = lo; i < hi; i += step) positions.push_back(i);
  return scatter_positions(self, src, dim, positions, true, "slice_scatter");
}

// ---- pooling: 1-d through the 2-d operators, 3-d separably (Note [Core composites]) ----
std::vector<int64_t> expand_param(IntArrayRef v, size_t n, int64_t dflt, const char* op, const char* what) {
  if (v.empty()) return std::vector<int64_t>(n, dflt);
  SDK_CHECK_VALUE(v.size() == 1 || v.size() == n, op, ": ", what, " must either be a single int, or a tuple of ", n,
                  " ints");
  return v.size() == 1 ? std::vector<int64_t>(n, v[0]) : v.vec();
}

Tensor avg_pool2d_call(CT x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil_mode, bool cip,
                       std::optional<int64_t> divisor) {
  SDK_CX_OP("aten::avg_pool2d", T(CT, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool, std::optional<int64_t>));
  return op.call(x, k, s, p, ceil_mode, cip, divisor);
}
Tensor adaptive2d_call(CT x, IntArrayRef out) {
  SDK_CX_OP("aten::_adaptive_avg_pool2d", T(CT, IntArrayRef));
  return op.call(x, out);
}
std::tuple<Tensor, Tensor> max_pool2d_call(CT x, IntArrayRef k, IntArrayRef s, IntArrayRef p, IntArrayRef d,
                                           bool ceil_mode) {
  using Sig = std::tuple<Tensor, Tensor>(CT, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool);
  SDK_CX_OP("aten::max_pool2d_with_indices", Sig);
  return op.call(x, k, s, p, d, ceil_mode);
}

void check_pool1d(CT self, const char* op) {
  SDK_CHECK_VALUE(self.dim() == 2 || self.dim() == 3, op, ": Expected 2D or 3D (batch mode) tensor, but got ",
                  self.sizes());
}

Tensor avg_pool1d_impl(CT self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                       bool count_include_pad) {
  check_pool1d(self, "avg_pool1d");
  const int64_t k = expand_param(kernel, 1, 0, "avg_pool1d", "kernel_size")[0];
  const int64_t s = expand_param(stride, 1, k, "avg_pool1d", "stride")[0];
  const int64_t p = expand_param(padding, 1, 0, "avg_pool1d", "padding")[0];
  Tensor y = avg_pool2d_call(unsqueeze(self, -2), {1, k}, {1, s}, {0, p}, ceil_mode, count_include_pad, std::nullopt);
  return reshape(y, [&] {
    DimVector sz(self.sizes());
    sz[sz.size() - 1] = y.size(-1);
    return sz;
  }());
}

Tensor adaptive_avg_pool1d_impl(CT self, IntArrayRef output_size) {
  check_pool1d(self, "adaptive_avg_pool1d");
  SDK_CHECK_VALUE(output_size.size() == 1, "adaptive_avg_pool1d: output_size must be 1");
  Tensor y = adaptive2d_call(unsqueeze(self, -2), {1, output_size[0]});
  DimVector sz(self.sizes());
  sz[sz.size() - 1] = output_size[0];
  return reshape(y, sz);
}

struct Pool3d {
  Tensor x;  // (N*C, D, H, W), contiguous
  DimVector lead;  // the sizes before D (N, C or C)
};
Pool3d pool3d_input(CT self, const char* op) {
  SDK_CHECK_VALUE(self.dim() == 4 || self.dim() == 5, op, ": Expected 4D or 5D (batch mode) tensor, but got ",
                  self.sizes());
  const int64_t d = self.size(-3), h = self.size(-2), w = self.size(-1);
  DimVector lead(IntArrayRef(self.sizes().data(), static_cast<size_t>(self.dim() - 3)));
  int64_t b = 1;
  for (int64_t s : lead) b *= s;
  return {reshape(self, {b, d, h, w}), lead};
}
Tensor pool3d_output(CT y, const DimVector& lead, int64_t od, int64_t oh, int64_t ow) {
  DimVector sz = lead;
  sz.push_back(od);
  sz.push_back(oh);
  sz.push_back(ow);
  return reshape(y, sz);
}

Tensor avg_pool3d_impl(CT self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                       bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* name = "avg_pool3d";
  auto k = expand_param(kernel, 3, 0, name, "kernel_size");
  auto s = expand_param(stride, 3, 0, name, "stride");
  if (stride.empty()) s = k;
  auto p = expand_param(padding, 3, 0, name, "padding");
  SDK_CHECK_VALUE(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  Pool3d in = pool3d_input(self, name);
  // A divisor override divides the window's sum: pool both steps as sums (divisor 1), then divide.
  const std::optional<int64_t> step_divisor = divisor_override ? std::optional<int64_t>(1) : std::nullopt;
  Tensor hw = avg_pool2d_call(in.x, {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, ceil_mode, count_include_pad,
                              step_divisor);
  const int64_t b = hw.size(0), oh = hw.size(2), ow = hw.size(3);
  Tensor dd = avg_pool2d_call(view(hw, {b, 1, hw.size(1), oh * ow}), {k[0], 1}, {s[0], 1}, {p[0], 0}, ceil_mode,
                              count_include_pad, step_divisor);
  if (divisor_override) dd = div_s(dd, Scalar(*divisor_override));
  return pool3d_output(dd, in.lead, dd.size(2), oh, ow);
}

Tensor adaptive_avg_pool3d_impl(CT self, IntArrayRef output_size) {
  SDK_CHECK_VALUE(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  Pool3d in = pool3d_input(self, "adaptive_avg_pool3d");
  Tensor hw = adaptive2d_call(in.x, {output_size[1], output_size[2]});
  const int64_t b = hw.size(0), oh = hw.size(2), ow = hw.size(3);
  Tensor dd = adaptive2d_call(view(hw, {b, 1, hw.size(1), oh * ow}), {output_size[0], oh * ow});
  return pool3d_output(dd, in.lead, output_size[0], oh, ow);
}

std::tuple<Tensor, Tensor> max_pool3d_impl(CT self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                                           IntArrayRef dilation, bool ceil_mode) {
  const char* name = "max_pool3d_with_indices";
  auto k = expand_param(kernel, 3, 0, name, "kernel_size");
  auto s = expand_param(stride, 3, 0, name, "stride");
  if (stride.empty()) s = k;
  auto p = expand_param(padding, 3, 0, name, "padding");
  auto d = expand_param(dilation, 3, 1, name, "dilation");
  Pool3d in = pool3d_input(self, name);
  const int64_t h = in.x.size(2), w = in.x.size(3);
  auto [hw, hw_idx] = max_pool2d_call(in.x, {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, ceil_mode);
  const int64_t b = hw.size(0), depth = hw.size(1), oh = hw.size(2), ow = hw.size(3);
  auto [vals, d_idx] = max_pool2d_call(view(hw, {b, 1, depth, oh * ow}), {k[0], 1}, {s[0], 1}, {p[0], 0}, {d[0], 1},
                                       ceil_mode);
  // d_idx = d * (oh * ow) + j: the depth chosen for output column j; the 2-d index is the one chosen at that depth.
  SDK_CX_OP("aten::floor_divide", T(CT, CT));
  Tensor depth_of = op.call(d_idx, wrapped(Scalar(oh * ow)));
  Tensor plane_idx = gather(view(hw_idx, {b, 1, depth, oh * ow}), 2, depth_of);
  Tensor flat = add(mul(depth_of, Scalar(h * w)), plane_idx);
  const int64_t od = vals.size(2);
  return {pool3d_output(vals, in.lead, od, oh, ow), pool3d_output(flat, in.lead, od, oh, ow)};
}

// ---- upsampling given scale factors: output_size = floor(input size * scale), the scales passed on ----
struct UpsampleArgs {
  Tensor input;
  std::vector<int64_t> size;
  std::optional<double> sh, sw;
};
UpsampleArgs upsample_vec_args(const IValue& input, const IValue& output_size, const IValue& scales, const char* op) {
  UpsampleArgs a{input.to_tensor(), {}, std::nullopt, std::nullopt};
  const bool has_size = !output_size.is_none(), has_scales = !scales.is_none();
  SDK_CHECK_VALUE(has_size != has_scales, op, ": must specify exactly one of output_size and scale_factors");
  SDK_CHECK_VALUE(a.input.dim() == 4, op, ": Non-empty 4D data tensor expected but got a tensor with sizes ",
                  a.input.sizes());
  if (has_size) {
    a.size = output_size.to_int_list();
    SDK_CHECK_VALUE(a.size.size() == 2, op, ": It is expected output_size equals to 2, but got size ", a.size.size());
  } else {
    const std::vector<double>& sc = scales.to_double_list();
    SDK_CHECK_VALUE(sc.size() == 2, op, ": It is expected scale_factors equals to 2, but got size ", sc.size());
    for (size_t i = 0; i < 2; ++i) {
      a.size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(a.input.size(2 + static_cast<int64_t>(i))) * sc[i])));
    }
    a.sh = sc[0];
    a.sw = sc[1];
  }
  return a;
}

void upsample_nearest2d_vec_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 3;
  UpsampleArgs a = upsample_vec_args(s[base], s[base + 1], s[base + 2], "upsample_nearest2d");
  SDK_CX_OP("aten::upsample_nearest2d", T(CT, IntArrayRef, std::optional<double>, std::optional<double>));
  Tensor r = op.call(a.input, a.size, a.sh, a.sw);
  s.resize(base);
  s.emplace_back(std::move(r));
}

void upsample_bilinear2d_vec_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 4;
  const bool align = s[base + 2].to_bool();
  UpsampleArgs a = upsample_vec_args(s[base], s[base + 1], s[base + 3], "upsample_bilinear2d");
  SDK_CX_OP("aten::upsample_bilinear2d", T(CT, IntArrayRef, bool, std::optional<double>, std::optional<double>));
  Tensor r = op.call(a.input, a.size, align, a.sh, a.sw);
  s.resize(base);
  s.emplace_back(std::move(r));
}

// ---- col2im (fold): Note [Core composites] ----
Tensor col2im_impl(CT self, IntArrayRef output_size, IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride) {
  const char* name = "col2im";
  for (auto [v, what] : {std::pair{output_size, "output_size"}, {kernel, "kernel_size"}, {dilation, "dilation"},
                         {padding, "padding"}, {stride, "stride"}}) {
    SDK_CHECK_VALUE(v.size() == 2, name, ": It is expected ", what, " equals to 2, but got size ", v.size());
  }
  SDK_CHECK_VALUE(kernel[0] > 0 && kernel[1] > 0, name, ": kernel size should be greater than zero, but got kernel_height: ",
                  kernel[0], " kernel_width: ", kernel[1]);
  SDK_CHECK_VALUE(stride[0] > 0 && stride[1] > 0, name, ": stride should be greater than zero, but got stride_height: ",
                  stride[0], " stride_width: ", stride[1]);
  SDK_CHECK_VALUE(dilation[0] > 0 && dilation[1] > 0, name, ": dilation should be greater than zero, but got ",
                  "dilation_height: ", dilation[0], " dilation_width: ", dilation[1]);
  SDK_CHECK_VALUE(padding[0] >= 0 && padding[1] >= 0, name, ": padding should be non-negative, but got pad_height: ",
                  padding[0], " pad_width: ", padding[1]);
  SDK_CHECK_VALUE((self.dim() == 2 || self.dim() == 3) && self.numel() > 0, name, ": Expected 2D or 3D (batch mode) ",
                  "tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: ",
                  self.sizes());
  const bool batched = self.dim() == 3;
  Tensor x = batched ? self : unsqueeze(self, 0);
  const int64_t n = x.size(0), ckk = x.size(1), l = x.size(2), kk = kernel[0] * kernel[1];
  SDK_CHECK_VALUE(ckk % kk == 0, name, ": Expected size of input's dimension 1 to be divisible by the product of ",
                  "kernel_size, but got input.size(1)=", ckk, " and kernel_size=", kernel);
  const int64_t c = ckk / kk;
  const int64_t hp = output_size[0] + 2 * padding[0], wp = output_size[1] + 2 * padding[1];
  const int64_t bh = (hp - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t bw = (wp - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  SDK_CHECK_VALUE(bh >= 1 && bw >= 1 && l == bh * bw, name, ": Given output_size=", output_size, ", kernel_size=",
                  kernel, ", dilation=", dilation, ", padding=", padding, ", stride=", stride,
                  ", expected size of input's dimension 2 to match the calculated number of sliding blocks ", bh,
                  " * ", bw, " = ", bh * bw, ", but got input.size(2)=", l, ".");
  // Column entry (ki, kj, block) lands at padded position (bi * sh + ki * dh, bj * sw + kj * dw).
  std::vector<int64_t> dest(static_cast<size_t>(kk * l));
  for (int64_t ki = 0; ki < kernel[0]; ++ki) {
    for (int64_t kj = 0; kj < kernel[1]; ++kj) {
      for (int64_t bi = 0; bi < bh; ++bi) {
        for (int64_t bj = 0; bj < bw; ++bj) {
          const int64_t row = bi * stride[0] + ki * dilation[0], col = bj * stride[1] + kj * dilation[1];
          dest[static_cast<size_t>(((ki * kernel[1] + kj) * bh + bi) * bw + bj)] = row * wp + col;
        }
      }
    }
  }
  Tensor cols = reshape(x, {n, c, kk * l});
  Tensor idx = expand(view(index_tensor(dest, self.device()), {1, 1, kk * l}), {n, c, kk * l});
  Tensor img = scatter_add(full({n, c, hp * wp}, Scalar(0.0), self.dtype(), self.device()), 2, idx, cols);
  img = view(img, {n, c, hp, wp});
  img = narrow(narrow(img, 2, padding[0], output_size[0]), 3, padding[1], output_size[1]);
  img = contiguous(img);
  return batched ? img : view(img, {c, output_size[0], output_size[1]});
}

// ---- distances ----
Tensor vector_norm_last(CT diff, double p) {
  SDK_CX_OP("aten::linalg_vector_norm", T(CT, const Scalar&, std::optional<IntArrayRef>, bool, OptDtype));
  const std::vector<int64_t> last{-1};
  return op.call(diff, Scalar(p), std::optional<IntArrayRef>(IntArrayRef(last)), false, std::nullopt);
}

Tensor cdist_forward_impl(CT x1, CT x2, double p, std::optional<int64_t> compute_mode) {
  (void)compute_mode;  // the matrix-product shortcut of p=2 is a speed choice; the values are the norm's
  SDK_CHECK_VALUE(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  SDK_CHECK_VALUE(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  SDK_CHECK_VALUE(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
                  " X2: ", x2.size(-1));
  SDK_CHECK_VALUE(p >= 0, "cdist only supports non-negative p values");
  SDK_CHECK_TYPE(is_floating_type(x1.dtype()), "cdist only supports floating-point dtypes, X1 got: ",
                 legacy_type_name(x1.dtype()));
  SDK_CHECK_TYPE(is_floating_type(x2.dtype()), "cdist only supports floating-point dtypes, X2 got: ",
                 legacy_type_name(x2.dtype()));
  return vector_norm_last(sub(unsqueeze(x1, -2), unsqueeze(x2, -3)), p);
}

Tensor pdist_forward_impl(CT self, double p) {
  SDK_CHECK_VALUE(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  SDK_CHECK_VALUE(p >= 0, "pdist only supports non-negative p values");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "pdist only supports floating-point dtypes");
  const int64_t n = self.size(0);
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i + 1; j < n; ++j) {
      rows.push_back(i);
      cols.push_back(j);
    }
  }
  if (rows.empty()) return full({0}, Scalar(0.0), self.dtype(), self.device());
  Tensor a = cx::index_select(self, 0, index_tensor(rows, self.device()));
  Tensor b = cx::index_select(self, 0, index_tensor(cols, self.device()));
  return vector_norm_last(sub(a, b), p);
}

// ---- grid_sampler_2d: PyTorch's coordinate rules, the taps gathered (bilinear: 4, nearest: 1) ----
// Gradients: to input through gather, to grid through the tap weights (floor and round carry none), and a
// clipped coordinate has none outside the border, as PyTorch's clip_coordinates_set_grad.
Tensor unary_op(const char* name, CT a) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<T(CT)>().call(a);
}

Tensor reflect_coordinates(CT x, double twice_low, double twice_high) {
  if (twice_low == twice_high) return mul(x, Scalar(0.0));
  const double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  Tensor in = abs(add(x, Scalar(-lo)));
  SDK_CX_OP("aten::fmod.Scalar", T(CT, const Scalar&));
  Tensor extra = op.call(in, Scalar(span));
  Tensor flips = floor(div_s(in, Scalar(span)));
  Tensor even = eq_s(unary_op("aten::trunc", sub(flips, mul(floor(div_s(flips, Scalar(2.0))), Scalar(2.0)))),
                     Scalar(0.0));
  return where(even, add(extra, Scalar(lo)), add(add(neg(extra), Scalar(span)), Scalar(lo)));
}

Tensor source_index(CT coord, int64_t size, int64_t padding_mode, bool align_corners) {
  Tensor x = align_corners ? mul(add(coord, Scalar(1.0)), Scalar(0.5 * static_cast<double>(size - 1)))
                           : div_s(add(mul(add(coord, Scalar(1.0)), Scalar(static_cast<double>(size))), Scalar(-1.0)),
                                   Scalar(2.0));
  const double hi = static_cast<double>(size - 1);
  if (padding_mode == 1) {
    x = clamp(x, Scalar(0.0), Scalar(hi));
  } else if (padding_mode == 2) {
    x = align_corners ? reflect_coordinates(x, 0, 2 * hi)
                      : reflect_coordinates(x, -1, 2 * static_cast<double>(size) - 1);
    x = clamp(x, Scalar(0.0), Scalar(hi));
  }
  return x;
}

// The value of input at integer positions (ix, iy) (float tensors holding integers), 0 outside.
Tensor tap(CT flat, CT ix, CT iy, int64_t h, int64_t w, int64_t c) {
  Tensor valid = logical_and(logical_and(ge_s(ix, Scalar(0.0)), le_s(ix, Scalar(static_cast<double>(w - 1)))),
                             logical_and(ge_s(iy, Scalar(0.0)), le_s(iy, Scalar(static_cast<double>(h - 1)))));
  Tensor cx_ = clamp(ix, Scalar(0.0), Scalar(static_cast<double>(w - 1)));
  Tensor cy_ = clamp(iy, Scalar(0.0), Scalar(static_cast<double>(h - 1)));
  Tensor idx = to_dtype(add(mul(cy_, Scalar(static_cast<double>(w))), cx_), ScalarType::Int64);  // (N, L)
  const int64_t n = idx.size(0), l = idx.size(1);
  Tensor vals = gather(flat, 2, expand(view(idx, {n, 1, l}), {n, c, l}));
  return mul(vals, to_dtype(view(valid, {n, 1, l}), flat.dtype()));
}

Tensor grid_sampler_2d_impl(CT input, CT grid, int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  SDK_CHECK_VALUE(input.dim() == 4 && grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0),
                  "grid_sampler(): expected 4D input and grid with same number of dimensions and batch size, and "
                  "grid to have size 2 in its last dimension, but got input with sizes ", input.sizes(),
                  " and grid with sizes ", grid.sizes());
  SDK_CHECK_VALUE(padding_mode >= 0 && padding_mode <= 2, "grid_sampler(): unknown padding_mode ", padding_mode);
  SDK_CHECK_NOT_IMPLEMENTED(interpolation_mode == 0 || interpolation_mode == 1,
                            "grid_sampler_2d: interpolation_mode ", interpolation_mode,
                            " (bicubic) is not implemented");
  SDK_CHECK_TYPE(input.dtype() == grid.dtype() && is_floating_type(input.dtype()),
                 "grid_sampler(): expected input and grid to be floating point tensors of the same dtype, but got ",
                 "input ", legacy_type_name(input.dtype()), " and grid ", legacy_type_name(grid.dtype()));
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3), oh = grid.size(1),
                ow = grid.size(2);
  Tensor flat = reshape(input, {n, c, h * w});
  Tensor g = reshape(grid, {n, oh * ow, 2});
  Tensor gx = reshape(narrow(g, 2, 0, 1), {n, oh * ow}), gy = reshape(narrow(g, 2, 1, 1), {n, oh * ow});
  Tensor ix = source_index(gx, w, padding_mode, align_corners), iy = source_index(gy, h, padding_mode, align_corners);
  Tensor out;
  if (interpolation_mode == 1) {
    out = tap(flat, unary_op("aten::round", ix), unary_op("aten::round", iy), h, w, c);
  } else {
    Tensor x0 = floor(ix), y0 = floor(iy);
    Tensor x1 = add(x0, Scalar(1.0)), y1 = add(y0, Scalar(1.0));
    Tensor wx1 = sub(ix, x0), wy1 = sub(iy, y0);
    Tensor wx0 = add(neg(wx1), Scalar(1.0)), wy0 = add(neg(wy1), Scalar(1.0));
    auto weighted = [&](CT xi, CT yi, CT wx, CT wy) {
      return mul(tap(flat, xi, yi, h, w, c), view(mul(wx, wy), {n, 1, oh * ow}));
    };
    out = add(add(weighted(x0, y0, wx0, wy0), weighted(x1, y0, wx1, wy0)),
              add(weighted(x0, y1, wx0, wy1), weighted(x1, y1, wx1, wy1)));
  }
  return view(out, {n, c, oh, ow});
}

// ---- _embedding_bag: the bags' rows gathered and reduced by scatter (sum, mean, max) ----
// The bag of each index is built on the host from the offsets (a Meta run only sizes the results). The
// three extra outputs are what PyTorch's CPU kernel returns: offset2bag (empty for sum), bag_size (the
// non-padding indices per bag; zeros for sum), max_indices (the chosen weight row per bag and column for
// max; bag_size for mean; zeros for sum). A bag's last one runs to the end of indices.
std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_impl(CT weight, CT indices, CT offsets,
                                                              bool scale_grad_by_freq, int64_t mode, bool sparse,
                                                              const OptT& per_sample_weights,
                                                              bool include_last_offset, int64_t padding_idx) {
  (void)scale_grad_by_freq;
  (void)sparse;
  SDK_CHECK_VALUE(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension ",
                  weight.dim());
  SDK_CHECK_VALUE(indices.dim() == 1, "embedding_bag: input has to be a 1D Tensor, but got Tensor of dimension ",
                  indices.dim());
  SDK_CHECK_VALUE(offsets.dim() == 1, "embedding_bag: offsets has to be a 1D Tensor, but got Tensor of dimension ",
                  offsets.dim());
  SDK_CHECK_TYPE(!is_floating_type(indices.dtype()) && !is_floating_type(offsets.dtype()),
                 "embedding_bag: expected indices and offsets to be integer tensors");
  SDK_CHECK_VALUE(mode >= 0 && mode <= 2, "embedding_bag: mode has to be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  SDK_CHECK_NOT_IMPLEMENTED(!per_sample_weights || mode == 0, "embedding_bag: per_sample_weights was not None. "
                            "per_sample_weights is only supported for mode='sum' (got mode=", mode,
                            "). Please open a feature request on GitHub.");
  const int64_t n = indices.numel(), d = weight.size(1);
  const int64_t b = std::max<int64_t>(offsets.size(0) - (include_last_offset ? 1 : 0), 0);
  const Device dev = weight.device();
  std::vector<int64_t> offs(static_cast<size_t>(offsets.size(0)), 0);
  if (offsets.device().type != DeviceType::Meta && offsets.numel() > 0) {
    Tensor host = to_dtype(_to_copy(offsets, std::nullopt, Device(DeviceType::CPU)), ScalarType::Int64);
    host = contiguous(host);
    std::copy(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel(), offs.begin());
    SDK_CHECK_VALUE(offs[0] == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                    "from position 0. However, got ", offs[0]);
    for (size_t i = 1; i < offs.size(); ++i) {
      SDK_CHECK_VALUE(offs[i] >= offs[i - 1] && offs[i] <= n, "embedding_bag: offsets must be non-decreasing and "
                      "at most the number of indices (", n, "), got offsets[", i, "] = ", offs[i]);
    }
  }
  // With include_last_offset the reduction stops at offsets[B], while offset2bag and bag_size give the
  // indices after it to the last bag (PyTorch's CPU kernel).
  const int64_t end = include_last_offset && b > 0 ? offs[static_cast<size_t>(b)] : n;
  std::vector<int64_t> bag(static_cast<size_t>(n), 0), reduced(static_cast<size_t>(n), 0);
  for (int64_t bi = 0, j = 0; j < n; ++j) {
    while (bi + 1 < b && offs[static_cast<size_t>(bi + 1)] <= j) ++bi;
    bag[static_cast<size_t>(j)] = bi;
    reduced[static_cast<size_t>(j)] = j < end ? 1 : 0;
  }
  Tensor idx = to_dtype(indices, ScalarType::Int64);
  Tensor bag_t = index_tensor(bag, dev);
  Tensor emb = cx::index_select(weight, 0, idx);
  if (per_sample_weights) emb = mul(emb, unsqueeze(*per_sample_weights, 1));
  Tensor keep = padding_idx >= 0 ? ne_s(idx, Scalar(padding_idx)) : eq(idx, idx);  // all true without padding
  Tensor in_sum = logical_and(keep, ne_s(index_tensor(reduced, dev), Scalar(int64_t{0})));
  Tensor rows = expand(view(bag_t, {n, 1}), {n, d});
  Tensor count = scatter_add(full({b}, Scalar(int64_t{0}), ScalarType::Int64, dev), 0, bag_t,
                             to_dtype(keep, ScalarType::Int64));
  Tensor zeros_b = full({b}, Scalar(int64_t{0}), ScalarType::Int64, dev);
  if (mode == 2) {
    Tensor masked = where_so(unsqueeze(in_sum, 1), emb, Scalar(-std::numeric_limits<double>::infinity()));
    SDK_CX_OP("aten::scatter_reduce.two", T(CT, int64_t, CT, CT, std::string_view, bool));
    Tensor out = op.call(full({b, d}, Scalar(0.0), weight.dtype(), dev), 0, rows, masked, "amax", false);
    Tensor hit = eq(masked, cx::index_select(out, 0, bag_t));
    Tensor cand = where_so(hit, expand(view(idx, {n, 1}), {n, d}), Scalar(std::numeric_limits<int64_t>::max()));
    Tensor arg = op.call(full({b, d}, Scalar(int64_t{0}), ScalarType::Int64, dev), 0, rows, cand, "amin", false);
    return {out, bag_t, count, arg};
  }
  Tensor summed = scatter_add(full({b, d}, Scalar(0.0), weight.dtype(), dev), 0, rows,
                              mul(emb, to_dtype(unsqueeze(in_sum, 1), weight.dtype())));
  if (mode == 0) return {summed, full({0}, Scalar(int64_t{0}), ScalarType::Int64, dev), zeros_b, zeros_b};
  SDK_CX_OP("aten::clamp", T(CT, const std::optional<Scalar>&, const std::optional<Scalar>&));
  Tensor denom = to_dtype(op.call(count, Scalar(int64_t{1}), std::nullopt), weight.dtype());
  return {div(summed, unsqueeze(denom, 1)), bag_t, count, count};
}

// ---- sym_* metadata queries (plain integers here: there are no symbolic sizes) ----
int64_t sym_size_impl(CT self, int64_t dim) { return self.size(wrap_dim(dim, self.dim(), "sym_size")); }
int64_t sym_stride_impl(CT self, int64_t dim) { return self.stride(wrap_dim(dim, self.dim(), "sym_stride")); }
int64_t sym_numel_impl(CT self) { return self.numel(); }
int64_t sym_storage_offset_impl(CT self) { return self.storage_offset(); }

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor");
  m.def("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor");
  m.def("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor");
  m.def("_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
        "Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, "
        "float momentum, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, "
        "float eps) -> (Tensor, Tensor, Tensor)");
  m.def("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, "
        "SymInt N, SymInt C, SymInt HxW, int group, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  m.def("any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor");
  m.def("var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor");
  m.def("copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor");
  m.def("fill.Scalar(Tensor self, Scalar value) -> Tensor");
  m.def("full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor");
  m.def("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
        "-> Tensor");
  m.def("avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, "
        "bool count_include_pad=True) -> Tensor");
  m.def("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor");
  m.def("avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor");
  m.def("max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
        "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  m.def("upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor");
  m.def("upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) "
        "-> Tensor");
  m.def("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
        "int[2] stride) -> Tensor");
  m.def("_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor");
  m.def("_pdist_forward(Tensor self, float p=2) -> Tensor");
  m.def("grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) "
        "-> Tensor");
  m.def("_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, "
        "bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1) -> "
        "(Tensor, Tensor, Tensor, Tensor)");
  m.def("sym_size.int(Tensor self, int dim) -> SymInt");
  m.def("sym_stride.int(Tensor self, int dim) -> SymInt");
  m.def("sym_numel(Tensor self) -> SymInt");
  m.def("sym_storage_offset(Tensor self) -> SymInt");

  constexpr auto kCIA = sdk::DispatchKey::CompositeImplicitAutograd;
  constexpr auto kCEA = sdk::DispatchKey::CompositeExplicitAutograd;
  using namespace sdk::ops;
  m.impl("hardtanh", kCIA, &hardtanh_impl);
  m.impl("leaky_relu", kCIA, &leaky_relu_impl);
  m.impl("elu", kCIA, &elu_impl);
  m.impl("_native_batch_norm_legit", kCIA, &bn_legit);
  m.impl("_native_batch_norm_legit.no_stats", kCIA, &bn_legit_no_stats);
  m.impl("_native_batch_norm_legit_no_training", kCIA, &bn_legit_no_training);
  // CompositeExplicitAutograd: every backend runs the composite, autograd records NativeGroupNormBackward0
  // (derivatives.def), as PyTorch's.
  m.impl("native_group_norm", kCEA, &native_group_norm_impl);
  m.impl("native_group_norm_backward", kCIA, sdk::CppFunction::make_from_boxed(&native_group_norm_backward_boxed));
  m.impl("any.dims", kCIA, &any_dims_impl);
  m.impl("var.dim", kCIA, &var_dim_impl);
  m.impl("copy", kCIA, &copy_impl);
  m.impl("fill.Scalar", kCEA, &fill_scalar_impl);  // recorded as FillBackward0 (derivatives.def)
  // Factories have no tensor argument to dispatch on: CompositeExplicitAutograd, as PyTorch's.
  m.impl("full", kCEA, &full_impl);
  m.impl("full_like", kCIA, &full_like_impl);
  m.impl("scalar_tensor", kCEA, &scalar_tensor_impl);
  m.impl("arange.start_step", kCEA, &arange_impl);
  m.impl("select_scatter", kCIA, &select_scatter_impl);
  m.impl("slice_scatter", kCIA, &slice_scatter_impl);
  m.impl("avg_pool1d", kCIA, &avg_pool1d_impl);
  m.impl("adaptive_avg_pool1d", kCIA, &adaptive_avg_pool1d_impl);
  m.impl("avg_pool3d", kCIA, &avg_pool3d_impl);
  m.impl("_adaptive_avg_pool3d", kCIA, &adaptive_avg_pool3d_impl);
  m.impl("max_pool3d_with_indices", kCIA, &max_pool3d_impl);
  m.impl("upsample_nearest2d.vec", kCIA, sdk::CppFunction::make_from_boxed(&upsample_nearest2d_vec_boxed));
  m.impl("upsample_bilinear2d.vec", kCIA, sdk::CppFunction::make_from_boxed(&upsample_bilinear2d_vec_boxed));
  m.impl("col2im", kCIA, &col2im_impl);
  m.impl("_cdist_forward", kCIA, &cdist_forward_impl);
  m.impl("_pdist_forward", kCIA, &pdist_forward_impl);
  m.impl("grid_sampler_2d", kCIA, &grid_sampler_2d_impl);
  m.impl("_embedding_bag", kCIA, &embedding_bag_impl);
  m.impl("sym_size.int", kCIA, &sym_size_impl);
  m.impl("sym_stride.int", kCIA, &sym_stride_impl);
  m.impl("sym_numel", kCIA, &sym_numel_impl);
  m.impl("sym_storage_offset", kCIA, &sym_storage_offset_impl);
}
