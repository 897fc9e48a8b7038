// The C++ derivative formulas: Note [Derivative formula table] (detail/Formulas.h).
#include <backend_sdk/autograd/detail/Formulas.h>
#include <backend_sdk/autograd/detail/Engine.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/LinearAlgebra.h>
#include <backend_sdk/ops/MathFunctions.h>
#include <backend_sdk/ops/detail/Geometry.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::autograd {

namespace {

using namespace ::sdk::ops;

Tensor scaled(const Tensor& g, const Scalar& s) {
  if (!s.is_floating_point() && s.to_int() == 1) return g;
  if (s.is_floating_point() && s.to_double() == 1.0) return g;
  return mul(g, s);
}

// PyTorch's pow_backward: grad * exponent * self^(exponent - 1); zeros for exponent 0.
Tensor pow_backward(const Tensor& g, const Tensor& self, const Scalar& exponent) {
  const double e = exponent.to_double();
  if (e == 0.0) return mul(g, 0);
  Tensor d = e == 2.0 ? mul(self, 2) : mul(pow(self, Scalar(e - 1.0)), exponent);
  return mul(g, d);
}

std::vector<int64_t> reduced_dims(IntArrayRef sizes, const IValue& dim) {
  // Reduction dimensions, wrapped: all of them for None or [] (PyTorch's reductions).
  const int64_t n = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  if (dim.is_none() || (dim.is_int_list() && dim.to_int_list().empty())) {
    for (int64_t i = 0; i < n; ++i) dims.push_back(i);
    return dims;
  }
  for (int64_t d : dim.is_int_list() ? dim.to_int_list() : std::vector<int64_t>{dim.to_int()}) {
    dims.push_back(d < 0 ? d + std::max<int64_t>(n, 1) : d);
  }
  return dims;
}

Tensor keep_dims(const Tensor& g, IntArrayRef sizes, const std::vector<int64_t>& dims, bool keepdim);

// sum.dim_IntList's backward: put back the reduced dimensions (keepdim=False) and broadcast.
Tensor sum_backward(const Tensor& g, IntArrayRef sizes, const IValue& dim, bool keepdim) {
  return expand_to(keep_dims(g, sizes, reduced_dims(sizes, dim), keepdim), sizes);
}

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

int64_t reduced_numel(IntArrayRef sizes, const IValue& dim) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(sizes, dim)) n *= sizes.empty() ? 1 : sizes[static_cast<size_t>(d)];
  return n;
}

// An aten operator called boxed from a formula (the table reaches operators that have no
// function in sdk::ops): through the dispatcher, so with create_graph the call is recorded.
// The handle is looked up once per call site.
#define OP(name)                                                                  \
  ([]() -> const OperatorHandle& {                                                \
    static const OperatorHandle h = Dispatcher::singleton().find_schema_or_throw(name); \
    return h;                                                                     \
  }())

// An operator call from a formula: boxed, every argument given (the stack is the schema's).
template <class... A>
Tensor call(const OperatorHandle& h, A&&... a) {
  Stack s;
  s.reserve(sizeof...(A));
  (s.emplace_back(IValue(std::forward<A>(a))), ...);
  h.call_boxed(&s);
  return s.front().to_tensor();
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return call(OP("aten::where.self"), cond, a, b); }
// a where cond holds, zeros elsewhere.
Tensor where0(const Tensor& cond, const Tensor& a) { return call(OP("aten::where.ScalarOther"), cond, a, Scalar(0.0)); }
// zeros where cond holds, a elsewhere.
Tensor zero_where(const Tensor& cond, const Tensor& a) {
  return call(OP("aten::where.ScalarSelf"), cond, Scalar(0.0), a);
}
Tensor cmp(const OperatorHandle& h, const Tensor& a, const Tensor& b) { return call(h, a, b); }
Tensor cmp(const OperatorHandle& h, const Tensor& a, const Scalar& b) { return call(h, a, b); }
Tensor unary(const OperatorHandle& h, const Tensor& a) { return call(h, a); }
Tensor zeros(const InputMetadata& m) {
  Tensor z = ops::empty(m.shape, m.dtype, m.device);
  ops::fill_(z, 0);
  return z;
}
Tensor cumsum(const Tensor& a, int64_t d) { return call(OP("aten::cumsum"), a, d, IValue()); }
Tensor flip(const Tensor& a, int64_t d) { return ops::flip(a, std::vector<int64_t>{d}); }
// The last two dimensions swapped (a view).
Tensor mT(const Tensor& a) {
  std::vector<int64_t> sz = a.sizes().vec(), st = a.strides().vec();
  const size_t n = sz.size();
  std::swap(sz[n - 1], sz[n - 2]);
  std::swap(st[n - 1], st[n - 2]);
  return as_strided(a, sz, st, a.storage_offset());
}
int64_t wrap(int64_t d, size_t ndim) {
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(ndim), 1);
  return d < 0 ? d + n : d;
}

// g, the result of reducing a tensor of `sizes` over `dims` (keepdim or not), viewed with the
// reduced dimensions back as size 1 (what broadcasting against the input needs).
Tensor keep_dims(const Tensor& g, IntArrayRef sizes, const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim || sizes.empty()) return g;
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> shape, strides;
  int64_t k = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    shape.push_back(reduced[i] ? 1 : sizes[i]);
    strides.push_back(reduced[i] ? 0 : g.stride(k++));
  }
  return as_strided(g, shape, strides, g.storage_offset());
}

// The gradient of a reduction that selects values (amax, amin, max, min): split evenly among the
// elements equal to the result (PyTorch's amax/amin backward).
Tensor select_extreme_backward(const Tensor& g, const Tensor& self, const Tensor& result,
                               const std::vector<int64_t>& dims, bool keepdim) {
  Tensor r = keep_dims(result, self.sizes(), dims, keepdim);
  Tensor mask = ops::to(cmp(OP("aten::eq.Tensor"), self, r), g.dtype());
  Tensor count = dims.empty() ? mask : ops::sum(mask, dims, /*keepdim=*/true);
  return div(mul(keep_dims(g, self.sizes(), dims, keepdim), mask), count);
}

// max.dim / min.dim / sort / topk: the values' gradient goes where the indices point.
Tensor indices_backward(const Tensor& g, const Tensor& indices, const InputMetadata& self, int64_t dim, bool keepdim) {
  if (self.shape.empty()) return g;
  const int64_t d = wrap(dim, self.shape.size());
  std::vector<int64_t> dims{d};
  Tensor gk = keep_dims(g, self.shape, dims, keepdim);
  Tensor ik = keep_dims(indices, self.shape, dims, keepdim);
  return ops::scatter(zeros(self), d, ik, gk);
}

Tensor var_backward(const Tensor& g, const Tensor& self, const IValue& dim, const IValue& correction, bool keepdim) {
  std::vector<int64_t> dims = reduced_dims(self.sizes(), dim);
  int64_t n = 1;
  for (int64_t d : dims) n *= self.dim() == 0 ? 1 : self.size(d);
  const double corr = correction.is_none() ? 1.0 : correction.to_scalar().to_double();
  Tensor mean = self.dim() == 0 ? self : call(OP("aten::mean.dim"), self, dims, true, IValue());
  return div(mul(keep_dims(g, self.sizes(), dims, keepdim), sub(self, mean)), Scalar((n - corr) / 2.0));
}

Tensor std_backward(const Tensor& g, const Tensor& self, const Tensor& result, const IValue& dim,
                    const IValue& correction, bool keepdim) {
  std::vector<int64_t> dims = reduced_dims(self.sizes(), dim);
  Tensor r = keep_dims(result, self.sizes(), dims, keepdim);
  return div(var_backward(g, self, dim, correction, keepdim), mul(r, 2));
}

Tensor gelu_backward(const Tensor& g, const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    Tensor x2 = mul(x, x);
    Tensor inner = mul(add(x, mul(mul(x2, x), 0.044715)), k);
    Tensor t = tanh(inner);
    Tensor d_inner = mul(add(mul(x2, 3 * 0.044715), 1.0), k);
    Tensor left = mul(add(t, 1.0), 0.5);
    Tensor right = mul(mul(mul(x, 0.5), rsub(mul(t, t), 1)), d_inner);
    return mul(g, add(left, right));
  }
  Tensor cdf = mul(add(unary(OP("aten::erf"), mul(x, 1.0 / std::sqrt(2.0))), 1.0), 0.5);
  Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), 1.0 / std::sqrt(2.0 * M_PI));
  return mul(g, add(cdf, mul(x, pdf)));
}

// clamp: the gradient passes where min <= self <= max.
Tensor clamp_backward(const Tensor& g, const Tensor& self, const IValue& lo, const IValue& hi) {
  Tensor out = g;
  if (!lo.is_none()) out = where0(cmp(OP("aten::ge.Scalar"), self, lo.to_scalar()), out);
  if (!hi.is_none()) out = where0(cmp(OP("aten::le.Scalar"), self, hi.to_scalar()), out);
  return out;
}

// maximum / minimum: the gradient goes to the winner, split evenly on ties (PyTorch's).
Tensor max_min_backward(const Tensor& g, const Tensor& a, const Tensor& b, bool bigger, bool for_a) {
  Tensor win = cmp(bigger ? OP("aten::gt.Tensor") : OP("aten::lt.Tensor"), for_a ? a : b, for_a ? b : a);
  Tensor tie = cmp(OP("aten::eq.Tensor"), a, b);
  return where(tie, div(g, 2), where0(win, g));
}

Tensor pow_exponent_backward(const Tensor& g, const Tensor& self, const Tensor& exponent, const Tensor& result) {
  Tensor d = mul(mul(g, result), unary(OP("aten::log"), self));
  Tensor zero_base = call(OP("aten::logical_and"), cmp(OP("aten::eq.Scalar"), self, Scalar(0)),
                          cmp(OP("aten::ge.Scalar"), exponent, Scalar(0)));
  return zero_where(zero_base, d);
}

Tensor pow_tensor_backward(const Tensor& g, const Tensor& self, const Tensor& exponent) {
  return mul(mul(g, exponent), call(OP("aten::pow.Tensor_Tensor"), self, add(exponent, Scalar(-1))));
}

bool true_division(const IValue& rounding_mode) { return rounding_mode.is_none(); }

Tensor ones_of(const Tensor& like) { return ops::full_like_sized(like, like.sizes(), 1.0); }

// Note [scatter_reduce backward]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's scatter_reduce_backward for "sum", "mean", "amax" and "amin": the
// positions of self that src is scattered into ("scattered") take no gradient
// for their self value when include_self=False (the output there does not read
// it). "mean" divides by the count of values reduced into each position;
// "amax"/"amin" split the gradient evenly among the values equal to the result
// (self's and src's alike). "prod" is refused with PyTorch's error type: its
// exact gradient with zeros needs the masked products PyTorch builds, not
// written yet.
Tensor scattered_mask(const InputMetadata& self, int64_t dim, const Tensor& index) {
  return cmp(OP("aten::ne.Scalar"), ops::scatter(zeros(self), dim, index, Scalar(1.0)), Scalar(0));
}

Tensor scatter_reduce_backward(FormulaContext& c, bool for_self) {
  const Tensor g = c.grad(0);
  const std::string& reduce = c.arg("reduce").to_string();
  const bool include_self = c.flag("include_self");
  const int64_t dim = c.integer("dim");
  const Tensor index = c.tensor("index");
  const InputMetadata& self_meta = c.node.arg_meta[static_cast<size_t>(c.index("self"))];
  if (reduce == "sum") {
    if (!for_self) return ops::gather(g, dim, index);
    return include_self ? g : call(OP("aten::masked_fill.Scalar"), g, scattered_mask(self_meta, dim, index), Scalar(0));
  }
  if (reduce == "mean") {
    Tensor n = zeros(self_meta);
    if (include_self) n = add(n, Scalar(1));
    n = ops::scatter_add(n, dim, index, ones_of(c.tensor("src")));
    n = call(OP("aten::masked_fill.Scalar"), n, cmp(OP("aten::eq.Scalar"), n, Scalar(0)), Scalar(1));
    Tensor gn = div(g, n);
    if (!for_self) return ops::gather(gn, dim, index);
    return include_self ? gn
                        : call(OP("aten::masked_fill.Scalar"), gn, scattered_mask(self_meta, dim, index), Scalar(0));
  }
  SDK_CHECK_NOT_IMPLEMENTED(reduce == "amax" || reduce == "amin", "the derivative for 'scatter_reduce' with reduce='",
                            reduce, "' is not implemented (Note [scatter_reduce backward])");
  const Tensor self = c.tensor("self");
  const Tensor src = c.tensor("src");
  const Tensor result = c.result(0);
  Tensor self_is = ops::to(cmp(OP("aten::eq.Tensor"), self, result), g.dtype());
  if (!include_self) {
    self_is = call(OP("aten::masked_fill.Scalar"), self_is, scattered_mask(self_meta, dim, index), Scalar(0));
  }
  Tensor src_is = ops::to(cmp(OP("aten::eq.Tensor"), src, ops::gather(result, dim, index)), g.dtype());
  Tensor n = ops::scatter_add(self_is, dim, index, src_is);
  n = call(OP("aten::masked_fill.Scalar"), n, cmp(OP("aten::eq.Scalar"), n, Scalar(0)), Scalar(1));
  Tensor share = div(g, n);
  return for_self ? mul(self_is, share) : mul(src_is, ops::gather(share, dim, index));
}

// masked_scatter: self keeps the gradient where mask is false; source's elements, taken in order
// by the true positions of mask, get the gradient there, and its unused tail gets zeros.
Tensor masked_scatter_source_backward(const Tensor& g, const Tensor& mask, const InputMetadata& source) {
  Tensor taken = ops::masked_select(g, mask);
  int64_t total = 1;
  for (int64_t s : source.shape) total *= s;
  const int64_t used = taken.numel();
  if (used < total) {
    Tensor pad = ops::full_like_sized(g, std::vector<int64_t>{total - used}, 0.0);
    taken = call(OP("aten::cat"), std::vector<Tensor>{taken, pad}, int64_t{0});
  }
  return ops::view(taken, source.shape);
}

// ---- the view operators' backwards (Note [View operators], ops/Views.cpp) ----
// Through the dispatcher, so with create_graph the backward's own views are recorded.
Tensor transpose(const Tensor& g, int64_t d0, int64_t d1) { return call(OP("aten::transpose.int"), g, d0, d1); }
Tensor squeeze_dim(const Tensor& g, int64_t d) { return call(OP("aten::squeeze.dim"), g, d); }
// g viewed with the shape of the input it came from (view, squeeze, unsqueeze's inverse): a copy
// first when g's strides do not allow the view (as reshape).
Tensor reshape_to(const Tensor& g, IntArrayRef sizes) {
  if (g.sizes().equals(sizes)) return g;
  if (compute_view_strides(g.sizes(), g.strides(), sizes)) return ops::view(g, sizes);
  return ops::view(call(OP("aten::clone"), g, int64_t{0}), sizes);  // contiguous_format
}
// PyTorch's permute backward: g permuted by the inverse order.
Tensor permute_backward(const Tensor& g, const std::vector<int64_t>& dims) {
  const size_t n = dims.size();
  std::vector<int64_t> inverse(n);
  for (size_t i = 0; i < n; ++i) inverse[static_cast<size_t>(wrap(dims[i], n))] = static_cast<int64_t>(i);
  return call(OP("aten::permute"), g, inverse);
}
// select_backward / slice_backward / diagonal_backward: zeros of the input's shape with g copied
// into the region the view took (one fill and one strided copy). With create_graph the zeros take
// part in autograd first, so the copy into their view is recorded (CopySlices).
Tensor zeros_for_write(const InputMetadata& m, const Tensor& g) {
  // A __torch_dispatch__ subclass's gradient makes the zeros itself (PyTorch's grad.new_zeros), so
  // its handler sees them and the input's gradient keeps the subclass; plain gradients skip the
  // extra dispatch.
  Tensor z = g.key_set().has(DispatchKey::Python)
                 ? call(OP("aten::new_zeros"), g, m.shape, m.dtype, IValue(), m.device, IValue())
                 : zeros(m);
  if (is_grad_enabled() && requires_grad(g)) z = add(z, mul(ops::sum(g, std::vector<int64_t>{}, false), 0));
  return z;
}
template <class View>
Tensor write_into_zeros(const InputMetadata& m, const Tensor& g, View view) {
  Tensor z = zeros_for_write(m, g);
  ops::copy_(view(z), g);
  return z;
}
// unfold's backward: each window's gradient added back where it came from (windows overlap when
// step < size); one strided copy when they do not.
Tensor unfold_backward(const InputMetadata& m, const Tensor& g, int64_t dim, int64_t size, int64_t step) {
  Tensor z = zeros_for_write(m, g);
  const OperatorHandle& unfold = OP("aten::unfold");
  if (step >= size || m.shape.empty()) {
    ops::copy_(call(unfold, z, dim, size, step), g);
    return z;
  }
  const int64_t d = wrap(dim, m.shape.size());
  const int64_t windows = g.size(d);
  for (int64_t w = 0; w < windows; ++w) {
    // window w of z (dims of g without the window index, the window's elements last) += g's window w
    Tensor zw = call(OP("aten::select.int"), call(unfold, z, d, size, step), d, w);
    Tensor gw = call(OP("aten::select.int"), g, d, w);
    add_(zw, gw);
  }
  return z;
}

// t as one dimension (reshape(-1)).
Tensor flat1(const Tensor& t) { return reshape_to(t, std::vector<int64_t>{t.numel()}); }

// ---- the nn operators' backwards (issue 14: moved from backend_sdk/autograd/_formulas_nn.py) ----
// An operator call from a formula returning every result (undefined where the operator gave none).
template <class... A>
std::vector<Tensor> call_all(const OperatorHandle& h, A&&... a) {
  Stack s;
  s.reserve(sizeof...(A));
  (s.emplace_back(IValue(std::forward<A>(a))), ...);
  h.call_boxed(&s);
  std::vector<Tensor> out;
  out.reserve(s.size());
  for (IValue& v : s) out.push_back(v.is_tensor() ? v.to_tensor() : Tensor());
  return out;
}
IValue opt(const Tensor& t) { return t.defined() ? IValue(t) : IValue(); }

// Note [Backward operators under create_graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With grad mode on (create_graph=True) a backward operator called by a formula
// (convolution_backward, native_layer_norm_backward, ...) is itself recorded,
// and the recording cannot return the undefined tensors that a partial
// output_mask (or a missing weight or bias) gives. So then every gradient is
// computed, a missing weight is replaced by ones and a missing bias by zeros
// (the same input gradient), and the unneeded gradients are dropped (GRADS3
// keeps the needed ones): the first-order gradient is right, and a second
// backward reaches the backward operator's own (missing) formula and raises
// its "derivative ... is not implemented" error.
IValue output_mask(const FormulaContext& c, std::initializer_list<const char*> names) {
  GenericList mask;
  const bool all = is_grad_enabled();
  for (const char* n : names) mask.emplace_back(all || c.needs(n));
  return IValue(std::move(mask));
}
// t, or (under create_graph, Note [Backward operators under create_graph]) `value` of `shape`.
Tensor or_fill(const Tensor& t, IntArrayRef shape, const Tensor& like, double value) {
  if (t.defined() || !is_grad_enabled()) return t;
  return ops::full_like_sized(like, shape, value);
}
Tensor contiguous(const Tensor& g) { return g.is_contiguous() ? g : call(OP("aten::clone"), g, int64_t{0}); }

std::vector<Tensor> convolution_backward(FormulaContext& c) {
  const Tensor weight = c.tensor("weight");
  IValue bias_sizes;
  const InputMetadata& bias = c.node.arg_meta[static_cast<size_t>(c.index("bias"))];
  if (bias.defined) {
    bias_sizes = IValue(bias.shape);
  } else if (is_grad_enabled()) {  // Note [Backward operators under create_graph]
    bias_sizes = IValue(std::vector<int64_t>{c.flag("transposed") ? weight.size(1) * c.integer("groups")
                                                                  : weight.size(0)});
  }
  return call_all(OP("aten::convolution_backward"), contiguous(c.grad(0)), c.tensor("input"), weight, bias_sizes,
                  c.arg("stride"), c.arg("padding"), c.arg("dilation"), c.arg("transposed"), c.arg("output_padding"),
                  c.arg("groups"), output_mask(c, {"input", "weight", "bias"}));
}

std::vector<Tensor> native_layer_norm_backward(FormulaContext& c) {
  const Tensor x = c.tensor("input");
  const std::vector<int64_t> shape = c.ints("normalized_shape");
  return call_all(OP("aten::native_layer_norm_backward"), contiguous(c.grad(0)), x, shape, c.result(1), c.result(2),
                  opt(or_fill(c.tensor("weight"), shape, x, 1.0)), opt(or_fill(c.tensor("bias"), shape, x, 0.0)),
                  output_mask(c, {"input", "weight", "bias"}));
}

// derivatives.yaml's native_group_norm: native_group_norm_backward(grad.contiguous(), input.contiguous(), result1,
// result2, weight, N, C, HxW, group, grad_input_mask). The backward operator is CompositeImplicitAutograd
// (ops/CoreOps20.cpp), so under create_graph its decomposition is recorded; the saved statistics are outputs
// autograd does not track, so there they are recomputed from the input by recorded operators (the same
// operators as the forward's, so the same values): a second order then sees how they depend on the input,
// as PyTorch's infinitely_differentiable_native_group_norm_backward does.
std::vector<Tensor> native_group_norm_backward(FormulaContext& c) {
  const Tensor x = contiguous(c.tensor("input"));
  Tensor mean = c.result(1), rstd = c.result(2);
  if (is_grad_enabled()) {
    const int64_t samples_groups = c.integer("N") * c.integer("group");
    const std::vector<int64_t> groups{c.integer("N"), c.integer("group"),
                                      samples_groups == 0 ? 0 : x.numel() / samples_groups};
    const std::vector<int64_t> dim2{2};
    const Tensor xg = reshape_to(x, groups);
    mean = call(OP("aten::mean.dim"), xg, dim2, false, IValue());
    rstd = unary(OP("aten::rsqrt"), add(call(OP("aten::var.correction"), xg, dim2, Scalar(int64_t{0}), false),
                                        Scalar(c.arg("eps").to_double())));
  }
  return call_all(OP("aten::native_group_norm_backward"), contiguous(c.grad(0)), x, mean, rstd,
                  opt(c.tensor("weight")), c.arg("N"), c.arg("C"), c.arg("HxW"), c.arg("group"),
                  output_mask(c, {"input", "weight", "bias"}));
}

// Training uses the batch statistics (outputs 1 and 2) only; the running buffers, updated in place by
// every later forward, are read (and version-checked) in eval mode only.
std::vector<Tensor> native_batch_norm_backward(FormulaContext& c) {
  const bool training = c.flag("training");
  const Tensor x = c.tensor("input");
  const Tensor weight = or_fill(c.tensor("weight"), std::vector<int64_t>{x.dim() > 1 ? x.size(1) : 1}, x, 1.0);
  return call_all(OP("aten::native_batch_norm_backward"), contiguous(c.grad(0)), x, opt(weight),
                  training ? IValue() : opt(c.tensor("running_mean")), training ? IValue() : opt(c.tensor("running_var")),
                  training ? opt(c.result(1)) : IValue(), training ? opt(c.result(2)) : IValue(), training,
                  c.arg("eps"), output_mask(c, {"input", "weight", "bias"}));
}

// native_dropout: grad * mask * scale, the scale 1/(1-p) in training (0 for p == 1), 1 in eval. With
// create_graph, differentiable operators (native_dropout_backward has no formula).
Tensor native_dropout_backward(FormulaContext& c) {
  const double p = c.arg("p").to_double();
  const IValue& train = c.arg("train");
  const double scale = (train.is_none() || train.to_bool()) ? (p == 1.0 ? 0.0 : 1.0 / (1.0 - p)) : 1.0;
  const Tensor g = c.grad(0);
  const Tensor mask = c.result(1);
  if (is_grad_enabled()) return mul(mul(g, ops::to(mask, g.dtype())), scale);
  return call(OP("aten::native_dropout_backward"), g, mask, scale);
}

// ---- double backward: formulas of the backward operators (derivatives.yaml's) ----
// Note [Convolution double backward]
// convolution is bilinear in (input, weight): with gI = dI(gO, W), gW = dW(gO, I) and gB = sum(gO) (the
// operator's outputs), for upstream gradients (ggI, ggW, ggB): d/dgO = conv(ggI, W) + conv(I, ggW) + ggB,
// d/dI = dI(gO, ggW), d/dW = dW(gO, ggI), each dI / dW one convolution_backward (PyTorch's
// _convolution_double_backward, which the same identities give).
Tensor conv_part(FormulaContext& c, const Tensor& a, const Tensor& b) {
  return call(OP("aten::convolution"), a, b, IValue(), c.arg("stride"), c.arg("padding"), c.arg("dilation"),
              c.arg("transposed"), c.arg("output_padding"), c.arg("groups"));
}
Tensor conv_backward_part(FormulaContext& c, const Tensor& go, const Tensor& x, const Tensor& w, size_t which) {
  GenericList mask;  // Note [Backward operators under create_graph]: all of them when recorded
  for (size_t i = 0; i < 3; ++i) mask.emplace_back(is_grad_enabled() || i == which);
  return call_all(OP("aten::convolution_backward"), contiguous(go), x, w, IValue(std::vector<int64_t>{go.size(1)}),
                  c.arg("stride"), c.arg("padding"), c.arg("dilation"), c.arg("transposed"), c.arg("output_padding"),
                  c.arg("groups"), IValue(std::move(mask)))[which];
}
std::vector<Tensor> convolution_double_backward(FormulaContext& c) {
  const Tensor go = c.tensor("grad_output"), x = c.tensor("input"), w = c.tensor("weight");
  std::vector<Tensor> out(3);
  if (c.needs("grad_output")) {
    Tensor ggo;
    auto add_part = [&](const Tensor& t) { ggo = ggo.defined() ? add(ggo, t) : t; };
    if (c.has_grad(0)) add_part(conv_part(c, c.grad(0), w));
    if (c.has_grad(1)) add_part(conv_part(c, x, c.grad(1)));
    if (c.has_grad(2)) {
      std::vector<int64_t> shape(static_cast<size_t>(go.dim()), 1);
      shape[1] = go.size(1);
      add_part(expand_to(reshape_to(c.grad(2), shape), go.sizes()));
    }
    out[0] = ggo.defined() ? ggo : mul(go, 0);
  }
  if (c.needs("input") && c.has_grad(1)) out[1] = conv_backward_part(c, go, x, c.grad(1), 0);
  if (c.needs("weight") && c.has_grad(0)) out[2] = conv_backward_part(c, go, c.grad(0), w, 1);
  return out;
}

// Note [Normalization double backward]
// For y = xh w + b, xh = (x - mean) rstd over groups of M elements (dims R: layer norm's trailing
// normalized dims; batch norm's all but dim 1 in training), the first backward is gI = rstd P(g w),
// gW = sum_S(g xh), gB = sum_S(g) (S: the dims the affine parameters are summed over), with
// P(u) = u - mean_R(u) - xh mean_R(xh u), which is symmetric. With d xh = rstd P(dx) and
// d rstd = -rstd^2 mean_R(xh dx) (mean and rstd are functions of x, whatever eps was), the gradients of
// <a, gI> + <b, gW> + <c, gB> are
//   d/dg = w rstd P(a) + b xh + c,    d/dw = sum_S(g rstd P(a)),
//   d/dx = rstd P(b g - rstd (m a + mean_R(a xh) g w)) - rstd^2 mean_R(a P(g w)) xh,  m = mean_R(g w xh)
// (PyTorch's layer_norm_double_backward / batchnorm_double_backward). mean and rstd themselves are not
// differentiable (derivatives.yaml: not_implemented; Note [Differentiable outputs]).
struct NormGeometry {
  std::vector<int64_t> R, S;        // statistics dims, affine-sum dims
  std::vector<int64_t> stat_view;   // the shape mean / rstd broadcast as
  std::vector<int64_t> param_view;  // the shape weight (and gW, gB's upstream gradients) broadcast as
  double M = 1;
};
std::vector<Tensor> norm_double_backward(FormulaContext& c, const NormGeometry& geo, const Tensor& g, const Tensor& x,
                                         const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  auto meanR = [&](const Tensor& t) { return div(ops::sum(t, geo.R, true), Scalar(geo.M)); };
  auto sumS = [&](const Tensor& t) { return ops::sum(t, geo.S, false); };
  const Tensor r = reshape_to(rstd, geo.stat_view);
  const Tensor xh = mul(sub(x, reshape_to(mean, geo.stat_view)), r);
  const Tensor w = weight.defined() ? reshape_to(weight, geo.param_view) : Tensor();
  auto P = [&](const Tensor& u) { return sub(sub(u, meanR(u)), mul(xh, meanR(mul(xh, u)))); };
  const Tensor gw = w.defined() ? mul(g, w) : g;
  std::vector<Tensor> out(3);  // grad_out, input, weight
  const bool has_a = c.has_grad(0), has_b = c.has_grad(1), has_c = c.has_grad(2);
  const Tensor a = has_a ? c.grad(0) : Tensor();
  const Tensor b = has_b ? reshape_to(c.grad(1), geo.param_view) : Tensor();
  const Tensor rPa = has_a ? mul(r, P(a)) : Tensor();
  if (c.needs("grad_out")) {
    Tensor d = has_a ? (w.defined() ? mul(w, rPa) : rPa) : mul(g, 0);
    if (has_b) d = add(d, mul(b, xh));
    if (has_c) d = add(d, expand_to(reshape_to(c.grad(2), geo.param_view), g.sizes()));
    out[0] = d;
  }
  if (c.needs("input") && (has_a || has_b)) {
    Tensor u = has_b ? mul(b, g) : mul(g, 0);
    if (has_a) {
      const Tensor m = meanR(mul(gw, xh));
      u = sub(u, mul(r, add(mul(m, a), mul(meanR(mul(a, xh)), gw))));
      out[1] = sub(mul(r, P(u)), mul(mul(mul(r, r), meanR(mul(a, P(gw)))), xh));
    } else {
      out[1] = mul(r, P(u));
    }
  }
  if (c.needs("weight") && has_a && weight.defined()) out[2] = reshape_to(sumS(mul(g, rPa)), weight.sizes());
  return out;
}

// mean and rstd: derivatives.yaml's not_implemented, in derivatives.def.
std::vector<Tensor> native_layer_norm_double_backward(FormulaContext& c) {
  const Tensor x = c.tensor("input");
  const size_t n = static_cast<size_t>(x.dim()), k = c.ints("normalized_shape").size();
  NormGeometry geo;
  geo.stat_view = x.sizes().vec();  // mean / rstd: the leading dims, 1 over the normalized ones
  geo.param_view = x.sizes().vec();  // weight: the normalized dims
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<int64_t>(i);
    if (i + k >= n) {
      geo.R.push_back(d);
      geo.M *= static_cast<double>(x.size(d));
      geo.stat_view[i] = 1;
    } else {
      geo.S.push_back(d);
      geo.param_view[i] = 1;
    }
  }
  return norm_double_backward(c, geo, c.tensor("grad_out"), x, c.tensor("mean"), c.tensor("rstd"),
                              c.tensor("weight"));
}

// native_batch_norm_backward: in training, Note [Normalization double backward] over all dims but 1 with
// the saved batch statistics; in eval, gI = g w istd, gW = sum(g (x - rm) istd) with istd = (rv + eps)^-1/2
// constants, so d/dg = a w istd + b xh + c, d/dw = sum(a g istd), d/dx = b g istd.
std::vector<Tensor> native_batch_norm_double_backward(FormulaContext& c) {
  const Tensor x = c.tensor("input"), g = c.tensor("grad_out"), weight = c.tensor("weight");
  const size_t n = static_cast<size_t>(x.dim());
  NormGeometry geo;
  geo.param_view.assign(n, 1);
  if (n > 1) geo.param_view[1] = x.size(1);
  geo.stat_view = geo.param_view;
  for (size_t i = 0; i < n; ++i) {
    if (i == 1) continue;
    geo.R.push_back(static_cast<int64_t>(i));
    geo.M *= static_cast<double>(x.size(static_cast<int64_t>(i)));
  }
  geo.S = geo.R;
  if (c.flag("train")) {
    return norm_double_backward(c, geo, g, x, c.tensor("save_mean"), c.tensor("save_invstd"), weight);
  }
  const Tensor istd = reshape_to(
      unary(OP("aten::rsqrt"), add(c.tensor("running_var"), Scalar(c.arg("eps").to_double()))), geo.param_view);
  const Tensor xh = mul(sub(x, reshape_to(c.tensor("running_mean"), geo.param_view)), istd);
  const Tensor w = weight.defined() ? reshape_to(weight, geo.param_view) : Tensor();
  std::vector<Tensor> out(3);
  if (c.needs("grad_out")) {
    Tensor d = c.has_grad(0) ? mul(c.grad(0), w.defined() ? mul(w, istd) : istd) : mul(g, 0);
    if (c.has_grad(1)) d = add(d, mul(reshape_to(c.grad(1), geo.param_view), xh));
    if (c.has_grad(2)) d = add(d, expand_to(reshape_to(c.grad(2), geo.param_view), g.sizes()));
    out[0] = d;
  }
  if (c.needs("input") && c.has_grad(1)) out[1] = mul(mul(reshape_to(c.grad(1), geo.param_view), g), istd);
  if (c.needs("weight") && c.has_grad(0) && weight.defined()) {
    out[2] = reshape_to(ops::sum(mul(mul(c.grad(0), g), istd), geo.S, false), weight.sizes());
  }
  return out;
}

// max_pool2d_with_indices_backward: d/dg gathers the upstream gradient where the indices point (PyTorch's
// max_pool_double_backward); embedding_dense_backward: the rows the indices select, scaled by 1/count
// where the first backward scaled (PyTorch's embedding_dense_double_backward omits that scale).
Tensor max_pool_double_backward(const Tensor& gg, const Tensor& indices) {
  std::vector<int64_t> flat = gg.sizes().vec(), iflat = indices.sizes().vec();
  const int64_t hw = flat[flat.size() - 1] * flat[flat.size() - 2];
  flat.resize(flat.size() - 2);
  flat.push_back(hw);
  const int64_t ohw = iflat[iflat.size() - 1] * iflat[iflat.size() - 2];
  iflat.resize(iflat.size() - 2);
  iflat.push_back(ohw);
  const int64_t last = static_cast<int64_t>(flat.size()) - 1;
  return reshape_to(ops::gather(reshape_to(gg, flat), last, reshape_to(indices, iflat)), indices.sizes());
}
Tensor embedding_double_backward(FormulaContext& c) {
  const Tensor gg = c.grad(0);
  const Tensor idx = flat1(contiguous(c.tensor("indices")));
  Tensor rows = ops::index_select(gg, 0, idx);
  const int64_t pad = c.integer("padding_idx");
  const int64_t num = c.integer("num_weights");
  if (c.flag("scale_grad_by_freq")) {
    InputMetadata cm(gg);
    cm.shape = {num};
    Tensor counts = ops::scatter_add(zeros(cm), 0, idx, ops::full_like_sized(gg, idx.sizes(), 1.0));
    rows = div(rows, reshape_to(ops::index_select(counts, 0, idx), std::vector<int64_t>{idx.numel(), 1}));
  }
  if (pad >= 0) {
    Tensor keep = cmp(OP("aten::ne.Scalar"), reshape_to(idx, std::vector<int64_t>{idx.numel(), 1}), Scalar(pad));
    rows = where0(keep, rows);
  }
  std::vector<int64_t> shape = c.tensor("indices").sizes().vec();
  shape.push_back(gg.size(1));
  return reshape_to(rows, shape);
}

// ---- issue 14: the formulas moved from backend_sdk/autograd/_formulas.py ----
// clamp.Tensor: PyTorch's clamp_backward_min_max (a bound that does not bind gets no gradient; where
// min > max the result is max, whose gradient wins).
Tensor clamp_tensor_backward(FormulaContext& c, int which) {
  const Tensor g = c.grad(0), x = c.tensor("self"), lo = c.tensor("min"), hi = c.tensor("max");
  const OperatorHandle& land = OP("aten::logical_and");
  if (which == 0) {
    Tensor pred;
    if (lo.defined()) pred = cmp(OP("aten::ge.Tensor"), x, lo);
    if (hi.defined()) {
      Tensor le = cmp(OP("aten::le.Tensor"), x, hi);
      pred = pred.defined() ? call(land, pred, le) : le;
    }
    return pred.defined() ? where0(pred, g) : g;
  }
  if (which == 1) {
    Tensor pred = cmp(OP("aten::lt.Tensor"), x, lo);
    if (hi.defined()) pred = call(land, pred, cmp(OP("aten::lt.Tensor"), lo, hi));
    return where0(pred, g);
  }
  Tensor pred = cmp(OP("aten::gt.Tensor"), x, hi);
  if (lo.defined()) pred = call(OP("aten::logical_or"), pred, cmp(OP("aten::lt.Tensor"), hi, lo));
  return where0(pred, g);
}

// The p-norm's gradient (PyTorch's norm_backward): p = 0: zeros; 1: g * sign(x); inf: split evenly
// among the elements of largest magnitude; 2: g * x / r; otherwise g * x * |x|^(p-2) / r^(p-1), zero
// where the norm is zero.
Tensor norm_backward(FormulaContext& c, const IValue& ord, const IValue& dim, bool keepdim) {
  const Tensor x = c.tensor("self");
  const double p = ord.is_none() ? 2.0 : ord.to_scalar().to_double();
  std::vector<int64_t> dims = reduced_dims(x.sizes(), dim);
  Tensor g = keep_dims(c.grad(0), x.sizes(), dims, keepdim);
  Tensor r = keep_dims(c.result(0), x.sizes(), dims, keepdim);
  if (p == 0.0) return mul(x, 0);
  if (p == 1.0) return mul(g, unary(OP("aten::sign"), x));
  if (std::isinf(p)) {
    Tensor mask = ops::to(cmp(OP("aten::eq.Tensor"), unary(OP("aten::abs"), x), r), g.dtype());
    Tensor count = dims.empty() || x.dim() == 0 ? mask : ops::sum(mask, dims, /*keepdim=*/true);
    return div(mul(mul(g, unary(OP("aten::sign"), x)), mask), count);
  }
  Tensor zero = cmp(OP("aten::eq.Scalar"), r, Scalar(0));
  if (p == 2.0) return zero_where(zero, div(mul(g, x), r));
  Tensor num = mul(mul(g, x), pow(unary(OP("aten::abs"), x), Scalar(p - 2.0)));
  return zero_where(zero, div(num, pow(r, Scalar(p - 1.0))));
}

// prod_{j != i} x_j along d, exact with zeros (the products of the elements left and right of each).
Tensor exclusive_products(const Tensor& x, int64_t d) {
  const int64_t n = x.size(d);
  std::vector<int64_t> one_shape = x.sizes().vec();
  one_shape[static_cast<size_t>(d)] = 1;
  Tensor one = ops::full_like_sized(x, one_shape, 1.0);
  if (n == 1) return one;
  const OperatorHandle& cat = OP("aten::cat");
  const OperatorHandle& narrow = OP("aten::narrow");
  const OperatorHandle& cumprod = OP("aten::cumprod");
  Tensor left = call(cat, std::vector<Tensor>{one, call(narrow, call(cumprod, x, d, IValue()), d, int64_t{0}, n - 1)}, d);
  Tensor right = flip(call(cat, std::vector<Tensor>{one, call(narrow, call(cumprod, flip(x, d), d, IValue()), d,
                                                                         int64_t{0}, n - 1)}, d), d);
  return mul(left, right);
}

Tensor prod_backward(const Tensor& g, const Tensor& x) {
  if (x.numel() == 0) return mul(x, 0);
  if (x.dim() == 0) return g;
  Tensor flat = flat1(x);
  return mul(g, reshape_to(exclusive_products(flat, 0), x.sizes().vec()));
}

Tensor prod_dim_backward(const Tensor& g, const Tensor& x, int64_t dim, bool keepdim) {
  if (x.dim() == 0) return g;
  const int64_t d = wrap(dim, x.dim());
  if (x.size(d) == 0) return mul(x, 0);
  return mul(keep_dims(g, x.sizes(), {d}, keepdim), exclusive_products(x, d));
}

// Exact for inputs without zeros (as PyTorch's fast path): the reverse cumsum of g * result, over self.
Tensor cumprod_backward(const Tensor& g, const Tensor& x, const Tensor& result, int64_t dim) {
  if (x.dim() == 0) return g;
  const int64_t d = wrap(dim, x.dim());
  return div(flip(cumsum(flip(mul(g, result), d), d), d), x);
}

// Zeros of the input's shape with g accumulated at the positions the indices name (index_put_ with
// accumulate=True into fresh zeros, as PyTorch's index_select / take / index backwards; the functional
// index_put under create_graph, so the zeros stay out of the graph).
Tensor index_put_into(const Tensor& zeros_, const std::vector<std::optional<Tensor>>& indices, const Tensor& g) {
  if (is_grad_enabled() && requires_grad(g)) return ops::index_put(zeros_, indices, g, true);
  return ops::index_put_(zeros_, indices, g, true);
}
Tensor on_device(const Tensor& t, Device d) {
  return t.device() == d ? t : call(OP("aten::_to_copy"), t, IValue(), IValue(), d, IValue(), false, IValue());
}
// The zeros of the input's shape a scattering backward writes into (grad.new_zeros: a
// __torch_dispatch__ subclass's gradient gets zeros of its own class).
Tensor new_zeros(const InputMetadata& m, const Tensor& g) {
  if (g.key_set().has(DispatchKey::Python)) {
    return call(OP("aten::new_zeros"), g, m.shape, m.dtype, IValue(), m.device, IValue());
  }
  return zeros(m);
}

Tensor index_select_backward(const Tensor& g, const InputMetadata& self, int64_t dim, const Tensor& index) {
  if (self.shape.empty()) return reshape_to(g, std::vector<int64_t>{});
  const int64_t d = wrap(dim, self.shape.size());
  std::vector<std::optional<Tensor>> indices(static_cast<size_t>(d));
  indices.emplace_back(on_device(index, self.device));
  return index_put_into(new_zeros(self, g), indices, g);
}

Tensor take_backward(const Tensor& g, const InputMetadata& self, const Tensor& index) {
  Tensor z = flat1(new_zeros(self, g));
  z = ops::index_put(z, {std::optional<Tensor>(flat1(on_device(index, self.device)))},
                     flat1(g), true);
  return reshape_to(z, self.shape);
}

// self and mask broadcast together (masked_select): the gradient is scattered into the broadcast shape
// and the node sums it back to self's. A boolean-mask index_put has a data-dependent shape that device
// kernels may refuse to plan (Meta cannot): off the CPU it runs on the host and moves back.
Tensor masked_select_backward(const Tensor& g, const InputMetadata& self, const Tensor& mask) {
  // The broadcast shape of self and mask (numpy's rule, right-aligned).
  const size_t n = std::max(self.shape.size(), static_cast<size_t>(mask.dim()));
  std::vector<int64_t> shape(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = i < n - self.shape.size() ? 1 : self.shape[i - (n - self.shape.size())];
    const int64_t b = i < n - static_cast<size_t>(mask.dim()) ? 1 : mask.size(static_cast<int64_t>(i - (n - mask.dim())));
    shape[i] = a == 1 ? b : a;
  }
  const Device cpu(DeviceType::CPU);
  const bool host = self.device.type != DeviceType::CPU;
  InputMetadata z{};
  z.shape = shape;
  z.dtype = self.dtype;
  z.device = host ? cpu : self.device;
  z.defined = true;
  Tensor m = host ? on_device(mask, cpu) : mask;
  if (!m.sizes().equals(shape)) m = expand_to(m, shape);
  Tensor out = ops::index_put(zeros(z), {std::optional<Tensor>(m)}, host ? on_device(g, cpu) : g, true);
  return host ? on_device(out, self.device) : out;
}

// nll_loss_forward: -w[t] * g at (row, t) (divided by the total weight for reduction='mean'); rows whose
// target is ignore_index get none.
Tensor nll_loss_backward(FormulaContext& c) {
  const Tensor g = c.grad(0);
  const InputMetadata& self = c.node.arg_meta[static_cast<size_t>(c.index("self"))];
  const Tensor target = c.tensor("target");
  const Tensor weight = c.tensor("weight");
  const bool batched = self.shape.size() == 2;
  Tensor t = batched ? target : reshape_to(target, std::vector<int64_t>{1});
  Tensor keep = cmp(OP("aten::ne.Scalar"), t, Scalar(c.integer("ignore_index")));
  Tensor safe_t = call(OP("aten::where.ScalarOther"), keep, t, Scalar(int64_t{0}));
  Tensor w = weight.defined() ? ops::index_select(weight, 0, safe_t) : ops::full_like_sized(g, t.sizes(), 1.0);
  w = mul(w, ops::to(keep, w.dtype()));
  Tensor coef = mul(neg(w), g);
  if (c.integer("reduction") == 1) coef = div(coef, c.result(1));
  InputMetadata zm = self;
  zm.shape = {t.size(0), self.shape.back()};
  zm.dtype = g.dtype();
  zm.device = g.device();
  const OperatorHandle& unsq = OP("aten::unsqueeze");
  Tensor z = ops::scatter(zeros(zm), 1, call(unsq, safe_t, int64_t{1}), call(unsq, coef, int64_t{1}));
  return batched ? z : reshape_to(z, self.shape);
}

// ---- Tensor[] and Tensor?[] arguments (Note [Tensor lists in the formula table]) ----
// cat: each input's slice of g along dim (legacy 1-D empty inputs, skipped by cat, get none).
std::vector<Tensor> cat_backward(const Tensor& g, const std::vector<InputMetadata>& metas, int64_t dim) {
  size_t nd = 0;
  for (const InputMetadata& m : metas) {
    if (!(m.shape.size() == 1 && m.shape[0] == 0)) nd = std::max(nd, m.shape.size());
  }
  if (nd == 0) nd = 1;
  const int64_t d = wrap(dim, nd);
  const OperatorHandle& narrow = OP("aten::narrow");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (const InputMetadata& m : metas) {
    if (m.shape.size() == 1 && m.shape[0] == 0 && nd != 1) {
      out.emplace_back();
      continue;
    }
    const int64_t len = m.shape[static_cast<size_t>(d)];
    out.push_back(call(narrow, g, d, start, len));
    start += len;
  }
  return out;
}
// stack: g's slice i along the new dimension for input i.
std::vector<Tensor> stack_backward(const Tensor& g, const std::vector<InputMetadata>& metas, int64_t dim) {
  std::vector<Tensor> out;
  if (metas.empty()) return out;
  const int64_t d = wrap(dim, metas[0].shape.size() + 1);
  const OperatorHandle& select = OP("aten::select.int");
  for (size_t i = 0; i < metas.size(); ++i) out.push_back(call(select, g, d, static_cast<int64_t>(i)));
  return out;
}
// Index tensors may live on the CPU for a device tensor (as in PyTorch); index_put wants them beside it.
std::vector<std::optional<Tensor>> indices_on(std::vector<std::optional<Tensor>> indices, Device d) {
  for (std::optional<Tensor>& i : indices) {
    if (i) i = on_device(*i, d);
  }
  return indices;
}
// index.Tensor: zeros of self's shape with g accumulated at the indices.
Tensor index_backward(const Tensor& g, const InputMetadata& self, const std::vector<std::optional<Tensor>>& indices) {
  return index_put_into(new_zeros(self, g), indices_on(indices, self.device), g);
}
// index_put: self keeps g where nothing was written (all of it with accumulate=True); values gets g
// at the indices (summed to its shape by the node where it broadcast).
Tensor index_put_self_backward(const Tensor& g, const std::vector<std::optional<Tensor>>& indices, bool accumulate) {
  if (accumulate) return g;
  return ops::index_put(g, indices_on(indices, g.device()), ops::full_like_sized(g, std::vector<int64_t>{}, 0.0),
                        false);
}

// repeat: each input element's gradient is the sum over its copies (g viewed as [r0, s0, r1, s1, ...],
// summed over the repeat dimensions).
Tensor repeat_backward(const Tensor& g, const InputMetadata& self, const std::vector<int64_t>& repeats) {
  const size_t lead = repeats.size() - self.shape.size();
  std::vector<int64_t> split, dims;
  for (size_t i = 0; i < repeats.size(); ++i) {
    split.push_back(repeats[i]);
    split.push_back(i < lead ? 1 : self.shape[i - lead]);
    dims.push_back(static_cast<int64_t>(2 * i));
  }
  if (dims.empty()) return g;
  return reshape_to(ops::sum(reshape_to(g, split), dims, /*keepdim=*/false), self.shape);
}

// as_strided (issue 14: moved from backend_sdk/autograd/_formulas.py): g is written (or, where the
// output geometry overlaps itself, accumulated) into zeros over the storage positions that self and
// the output cover, which are then viewed with self's geometry. The storage offset is relative to
// self's. self is saved for its geometry (strides and offset, which InputMetadata does not keep).
bool no_internal_overlap(const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  // True if no two elements share a storage position (dims by stride, each stride beyond the extent of
  // the smaller ones); conservative: false can still be overlap-free.
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] > 1) dims.emplace_back(stride[i], size[i]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [st, sz] : dims) {
    if (st <= reach) return false;
    reach += (sz - 1) * st;
  }
  return true;
}
int64_t storage_extent(IntArrayRef shape, IntArrayRef strides, int64_t offset) {
  int64_t e = offset;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] > 0) e += (shape[i] - 1) * strides[i];
  }
  return e + 1;
}
Tensor as_strided_geometry_backward(const Tensor& g, IntArrayRef self_sizes, IntArrayRef self_strides,
                                    int64_t self_offset, const std::vector<int64_t>& size,
                                    const std::vector<int64_t>& stride, int64_t offset);
Tensor as_strided_backward(const Tensor& g, const Tensor& self, const std::vector<int64_t>& size,
                           const std::vector<int64_t>& stride, const IValue& offset) {
  return as_strided_geometry_backward(g, self.sizes(), self.strides(), self.storage_offset(), size, stride,
                                      offset.is_none() ? self.storage_offset() : offset.to_int());
}
// The same from the input's geometry (sizes, strides, storage offset) alone.
Tensor as_strided_geometry_backward(const Tensor& g, IntArrayRef self_sizes, IntArrayRef self_strides,
                                    int64_t self_offset, const std::vector<int64_t>& size,
                                    const std::vector<int64_t>& stride, int64_t offset) {
  const int64_t out_off = offset - self_offset;
  const int64_t n = std::max<int64_t>({storage_extent(self_sizes, self_strides, 0),
                                       storage_extent(size, stride, out_off), int64_t{1}});
  InputMetadata m = InputMetadata(g);
  m.shape = {n};
  Tensor flat = zeros_for_write(m, g);  // g's class and, with create_graph, part of the graph
  const OperatorHandle& strided = OP("aten::as_strided");
  if (no_internal_overlap(size, stride)) {
    ops::copy_(call(strided, flat, size, stride, out_off), g);
  } else {
    Tensor pos = call(OP("aten::arange.start_step"), Scalar(int64_t{0}), Scalar(n), Scalar(int64_t{1}),
                      ScalarType::Int64, IValue(), m.device, IValue());
    Tensor out_pos = flat1(contiguous(call(strided, pos, size, stride, out_off)));
    flat = ops::index_put(flat, {std::optional<Tensor>(out_pos)}, flat1(contiguous(g)), true);
  }
  return call(strided, flat, self_sizes.vec(), self_strides.vec(), int64_t{0});
}

// Note [View grad_fn regeneration] (Node.cpp).
struct ViewRebaseNode final : Node {
  explicit ViewRebaseNode(edge_list edges) : Node(std::move(edges)) {}
  variable_list apply(variable_list&& grads) override {
    if (grads.empty() || !grads[0].defined()) return {Tensor()};
    return {as_strided_geometry_backward(grads[0], base_sizes, base_strides, base_offset, view_sizes, view_strides,
                                         view_offset)};
  }
  std::string name() const override { return "AsStridedBackward0"; }
  std::vector<int64_t> base_sizes, base_strides, view_sizes, view_strides;
  int64_t base_offset = 0, view_offset = 0;
};

#define G (c.grad(0))
#define G_(i) (c.grad(i))
#define GRADS_ALL (c.all_grads())
#define HAS_G(i) (c.has_grad(i))
#define R_(i) (c.result(i))
#define INT(x) (c.integer(#x))
#define INTS(x) (c.ints(#x))
#define META(x) (c.node.arg_meta[static_cast<size_t>(c.index(#x))])
#define T(x) (c.tensor(#x))
#define S(x) (c.scalar(#x))
#define FLAG(x) (c.flag(#x))
#define ARG(x) (c.arg(#x))
#define SIZES(x) (c.sizes(#x))
#define DTYPE(x) (c.dtype(#x))
#define R (c.result(0))
#define GRAD(input, expr) \
  if (c.needs(#input)) c.set(#input, (expr));
// Note [Tensor lists in the formula table]: one gradient per element of a Tensor[] argument.
#define GRAD_LIST(input, expr) \
  if (c.needs(#input)) c.set_list(#input, (expr));
#define METAS(x) (c.list_metas(#x))
#define TLIST(x) (c.tensor_list(#x))
// derivatives.yaml's not_implemented("what"): raises only when the input's gradient is needed (task_needs_edge).
#define NOT_IMPLEMENTED(input, what) \
  SDK_CHECK_NOT_IMPLEMENTED(!c.needs(#input), "the derivative for '" what "' is not implemented.");
// Three inputs' gradients from one backward operator (convolution_backward, ...): one call if any is needed.
#define GRADS3(a, b, d, expr)                          \
  if (c.needs(#a) || c.needs(#b) || c.needs(#d)) {     \
    std::vector<Tensor> r_ = (expr);                   \
    c.set_if(#a, r_.size() > 0 ? r_[0] : Tensor());    \
    c.set_if(#b, r_.size() > 1 ? r_[1] : Tensor());    \
    c.set_if(#d, r_.size() > 2 ? r_[2] : Tensor());    \
  }
#define SDK_DERIVATIVE(op, node, saves, ...) {op, #node, saves, [](FormulaContext& c) { __VA_ARGS__ }},
#define SDK_NOT_DIFFERENTIABLE(op)
#define SDK_DIFFERENTIABLE_OUTPUTS(op, n)

const Formula kFormulas[] = {
#include "derivatives.def"
};

#undef SDK_DERIVATIVE
#undef SDK_NOT_DIFFERENTIABLE
#undef SDK_DIFFERENTIABLE_OUTPUTS
#undef NOT_IMPLEMENTED
// Note [Operators that are not differentiable]: the same file read for its other entries.
#define SDK_DERIVATIVE(op, node, saves, ...)
#define SDK_DIFFERENTIABLE_OUTPUTS(op, n)
#define SDK_NOT_DIFFERENTIABLE(op) op,
const char* const kNotDifferentiable[] = {
#include "derivatives.def"
};
#undef SDK_NOT_DIFFERENTIABLE
#undef SDK_DIFFERENTIABLE_OUTPUTS
// Note [Differentiable outputs]: and once more for the output counts.
struct OutputCount {
  const char* op;
  size_t n;
};
#define SDK_NOT_DIFFERENTIABLE(op)
#define SDK_DIFFERENTIABLE_OUTPUTS(op, n) {op, n},
const OutputCount kDifferentiableOutputs[] = {
#include "derivatives.def"
};
#undef SDK_DERIVATIVE
#undef SDK_NOT_DIFFERENTIABLE
#undef SDK_DIFFERENTIABLE_OUTPUTS
#undef GRAD
#undef GRADS3
#undef GRAD_LIST
#undef METAS
#undef TLIST
#undef R
#undef R_
#undef G_
#undef GRADS_ALL
#undef HAS_G
#undef INT
#undef INTS
#undef META
#undef DTYPE
#undef SIZES
#undef ARG
#undef FLAG
#undef S
#undef T
#undef G

bool is_tensor_type(const Argument& a) {
  const Type& t = a.type->is_optional() ? *a.type->elem : *a.type;
  return t.kind == TypeKind::Tensor;
}

// Builds every entry's FormulaInfo for the definitions current at first use
// (the aten operators are defined when the library loads, before any call).
struct Table {
  std::unordered_map<const SchemaRecord*, FormulaInfo> by_record;
  Table() {
    for (const Formula& f : kFormulas) {
      std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(f.op);
      if (!op || !op->entry().has_schema()) continue;
      const SchemaRecord* rec = op->entry().schema_record();
      const FunctionSchema& s = rec->schema;
      // Note [Tensor lists in the formula table]: a single Tensor[] return.
      const bool returns_list = s.returns.size() == 1 && s.returns[0].type->kind == TypeKind::List &&
                                s.returns[0].type->elem && s.returns[0].type->elem->kind == TypeKind::Tensor;
      bool tensor_returns = !s.returns.empty();
      for (const Argument& r : s.returns) tensor_returns = tensor_returns && r.type->kind == TypeKind::Tensor;
      bool writes_only_buffers = true;  // Note [Derivative formula table]: optional buffers only
      for (size_t i = 0; i < s.arguments.size(); ++i) {
        writes_only_buffers = writes_only_buffers && (!s.arguments[i].is_write() || s.arguments[i].type->is_optional());
      }
      // Note [In-place entries in the formula table]: self written and returned, nothing else written.
      bool inplace = !s.arguments.empty() && s.arguments[0].is_write() && s.returns.size() == 1;
      for (size_t i = 1; i < s.arguments.size(); ++i) inplace = inplace && !s.arguments[i].is_write();
      FormulaInfo info;
      if (s.is_mutable() && !inplace) {
        for (const Argument& a : s.arguments) info.written.push_back(a.is_write());
      }
      SDK_CHECK((writes_only_buffers || inplace) && (tensor_returns || returns_list), "derivatives.def: ", f.op,
                " must be a functional operator returning tensors, or an in-place one");
      info.formula = &f;
      info.num_returns = s.returns.size();
      info.returns_list = returns_list;
      info.inplace = inplace;
      info.saved.assign(s.arguments.size(), false);
      for (size_t i = 0; i < s.arguments.size(); ++i) {
        info.names.push_back(s.arguments[i].name);
        if (is_tensor_type(s.arguments[i])) info.tensor_args.push_back(static_cast<uint16_t>(i));
        const Type& t = *s.arguments[i].type;
        const Type* e = t.kind == TypeKind::List ? t.elem.get() : nullptr;
        if (e != nullptr && e->is_optional()) e = e->elem.get();
        const bool list = e != nullptr && e->kind == TypeKind::Tensor;
        info.is_list.push_back(list);
        if (list && !t.elem->is_optional()) info.list_args.push_back(static_cast<uint16_t>(i));
      }
      std::string saves = f.saves;
      size_t pos = 0;
      while (pos < saves.size()) {
        size_t end = saves.find(',', pos);
        if (end == std::string::npos) end = saves.size();
        std::string name = saves.substr(pos, end - pos);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (name == "result") {
          info.saves_result = true;
        } else if (!name.empty()) {
          std::optional<size_t> idx = s.argument_index(name);
          SDK_CHECK(idx.has_value(), "derivatives.def: ", f.op, " has no argument '", name, "'");
          info.saved[*idx] = true;
        }
        pos = end + 1;
      }
      by_record.emplace(rec, std::move(info));
    }
    for (const OutputCount& oc : kDifferentiableOutputs) {
      std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(oc.op);
      auto it = op && op->entry().has_schema() ? by_record.find(op->entry().schema_record()) : by_record.end();
      SDK_CHECK(it != by_record.end(), "derivatives.def: SDK_DIFFERENTIABLE_OUTPUTS(", oc.op, ") has no entry");
      it->second.differentiable_outputs = oc.n;
    }
    for (const char* name : kNotDifferentiable) {
      std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(name);
      if (!op || !op->entry().has_schema()) continue;
      not_differentiable.emplace(op->entry().schema_record(), name);
    }
  }
  std::unordered_map<const SchemaRecord*, std::string> not_differentiable;
};

const Table& table() {
  static const Table* t = new Table();  // never destroyed: read by calls during exit
  return *t;
}

}  // namespace

const FormulaInfo* formula_for(const OperatorHandle& op) {
  const Table& t = table();
  auto it = t.by_record.find(op.entry().schema_record());
  return it == t.by_record.end() ? nullptr : &it->second;
}

bool not_differentiable(const OperatorHandle& op) {
  const Table& t = table();
  return t.not_differentiable.count(op.entry().schema_record()) != 0;
}

std::vector<std::string> not_differentiable_names() {
  std::vector<std::string> out;
  for (const auto& kv : table().not_differentiable) out.push_back(kv.second);
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<Node> make_view_rebase_node(const Tensor& view, const Tensor& base, Edge base_edge) {
  auto node = std::make_shared<ViewRebaseNode>(edge_list{std::move(base_edge)});
  node->base_sizes = base.sizes().vec();
  node->base_strides = base.strides().vec();
  node->base_offset = base.storage_offset();
  node->view_sizes = view.sizes().vec();
  node->view_strides = view.strides().vec();
  node->view_offset = view.storage_offset();
  node->input_metadata.emplace_back(view);
  if (!view.is_cpu() && !view.is_meta()) node->stream_id = runtime::current_stream(view.device()).id();
  return node;
}

const FormulaInfo* formula_for_name(const std::string& qualname) {
  std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(qualname);
  if (!op || !op->entry().has_schema()) return nullptr;
  return formula_for(*op);
}

int FormulaContext::index(const char* name) const {
  const auto& names = node.info->names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::strcmp(names[i].c_str(), name) == 0) return static_cast<int>(i);
  }
  SDK_CHECK(false, node.name(), ": the formula reads an unknown argument '", name, "'");
  return -1;
}

Tensor FormulaContext::tensor(const char* name) const {
  const SavedVariable& v = node.saved[static_cast<size_t>(index(name))];
  SDK_CHECK(v.was_saved() || !node.released, kSecondBackwardMessage);
  SDK_CHECK(v.was_saved(), node.name(), ": the formula reads '", name, "', which derivatives.def does not save");
  return v.unpack(node.shared_from_this());
}

Scalar FormulaContext::scalar(const char* name) const {
  const IValue& v = arg(name);
  return v.is_none() ? Scalar(1) : v.to_scalar();
}

bool FormulaContext::flag(const char* name) const { return arg(name).to_bool(); }

IntArrayRef FormulaContext::sizes(const char* name) const {
  return node.arg_meta[static_cast<size_t>(index(name))].shape;
}

ScalarType FormulaContext::dtype(const char* name) const {
  return node.arg_meta[static_cast<size_t>(index(name))].dtype;
}

int64_t FormulaContext::integer(const char* name) const { return arg(name).to_int(); }

std::vector<int64_t> FormulaContext::ints(const char* name) const {
  const IValue& v = arg(name);
  if (v.is_none()) return {};
  if (v.is_int_list()) return v.to_int_list();
  return {v.to_int()};
}

Tensor FormulaContext::grad(size_t i) const {
  SDK_CHECK(i < node.input_metadata.size(), node.name(), ": the formula reads the gradient of output ", i,
            " of ", node.input_metadata.size());
  if (i < grads.size() && grads[i].defined()) return grads[i];
  // No gradient flowed into this output: zeros, as PyTorch materializes them for formulas.
  const InputMetadata& m = node.input_metadata[i];
  Tensor z = ops::empty(m.shape, m.dtype, m.device);
  ops::fill_(z, 0);
  return z;
}

std::vector<Tensor> FormulaContext::all_grads() const {
  std::vector<Tensor> out;
  out.reserve(node.input_metadata.size());
  for (size_t i = 0; i < node.input_metadata.size(); ++i) out.push_back(grad(i));
  return out;
}

Tensor FormulaContext::result(size_t i) const {
  SDK_CHECK(i < node.results.size() && node.results[i].was_saved(), kSecondBackwardMessage);
  return node.results[i].unpack(node.shared_from_this());
}

bool FormulaContext::needs(const char* name) const {
  const int idx = index(name);
  const auto& pos = node.info->tensor_args;
  for (size_t k = 0; k < pos.size(); ++k) {
    if (pos[k] != idx) continue;
    return node.needs_mask.empty() ? task_needs_edge(node.next_edges()[k]) : node.needs_mask[k];
  }
  const auto& lists = node.info->list_args;
  for (size_t j = 0; j < lists.size() && j < node.list_begin.size(); ++j) {
    if (lists[j] != idx) continue;
    const size_t end = node.list_begin[j] + node.list_meta[j].size();
    for (size_t e = node.list_begin[j]; e < end; ++e) {
      if (task_needs_edge(node.next_edges()[e])) return true;
    }
  }
  return false;
}

size_t FormulaContext::list_slot(const char* name) const {
  const int idx = index(name);
  const auto& pos = node.info->list_args;
  for (size_t j = 0; j < pos.size(); ++j) {
    if (pos[j] == idx) return j;
  }
  SDK_CHECK(false, node.name(), ": '", name, "' is not a Tensor[] argument");
  return 0;
}

const std::vector<InputMetadata>& FormulaContext::list_metas(const char* name) const {
  const size_t j = list_slot(name);
  SDK_CHECK(j < node.list_meta.size(), node.name(), ": no metadata for '", name, "'");
  return node.list_meta[j];
}

std::vector<std::optional<Tensor>> FormulaContext::tensor_list(const char* name) const {
  const size_t i = static_cast<size_t>(index(name));
  SDK_CHECK(i < node.saved_lists.size() && (!node.saved_lists[i].empty() || !node.released),
            node.released ? kSecondBackwardMessage : "the formula reads an unsaved list");
  std::vector<std::optional<Tensor>> out;
  out.reserve(node.saved_lists[i].size());
  for (const SavedVariable& v : node.saved_lists[i]) {
    Tensor t = v.unpack(node.shared_from_this());
    out.push_back(t.defined() ? std::optional<Tensor>(std::move(t)) : std::nullopt);
  }
  return out;
}

namespace {
// A formula's gradient for tensor argument `arg`, reduced to the argument's shape and cast to its
// dtype (the gradient of a broadcast input has the broadcast shape; PyTorch's engine does the same).
Tensor conform(Tensor g, const InputMetadata& m) {
  if (!g.defined()) return g;
  if (!g.sizes().equals(m.shape)) g = ops::sum_to(g, m.shape);
  if (g.dtype() != m.dtype) g = ops::to(g, m.dtype);
  return g;
}
}  // namespace

variable_list FormulaNode::apply(variable_list&& grads) {
  // A released node still runs if its formula reads nothing saved (PyTorch: a graph whose nodes
  // saved nothing can be backpropagated twice); reading a freed SavedVariable raises. Gradients of
  // outputs none flowed into stay undefined: Note [Derivative formula table], multiple outputs.
  FormulaContext c{*this, grads, std::vector<Tensor>(info->names.size()),
                   std::vector<std::vector<Tensor>>(info->list_args.size())};
  info->formula->fn(c);
  variable_list result(next_edges_.size());
  const size_t nplain = info->tensor_args.size();
  for (size_t k = 0; k < nplain && k < next_edges_.size(); ++k) {
    if (!next_edges_[k].is_valid()) continue;
    const size_t arg = info->tensor_args[k];
    result[k] = conform(std::move(c.out[arg]), arg_meta[arg]);
  }
  for (size_t j = 0; j < list_begin.size(); ++j) {  // Note [Tensor lists in the formula table]
    std::vector<Tensor>& gs = c.list_out[j];
    for (size_t e = 0; e < list_meta[j].size() && e < gs.size(); ++e) {
      const size_t k = list_begin[j] + e;
      if (next_edges_[k].is_valid()) result[k] = conform(std::move(gs[e]), list_meta[j][e]);
    }
  }
  return result;
}

std::vector<SavedVariable> save_list(const IValue& v) {
  std::vector<SavedVariable> out;
  if (v.is_tensor_list()) {
    for (const Tensor& t : v.to_tensor_list()) out.emplace_back(t, /*is_output=*/false);
  } else if (v.is_list()) {
    for (const IValue& e : v.to_list()) out.emplace_back(e.is_tensor() ? e.to_tensor() : Tensor(), /*is_output=*/false);
  }
  return out;
}

variable_list run_formula_for(const FormulaInfo& info, std::vector<IValue> args, std::vector<InputMetadata> meta,
                              variable_list grads, variable_list results, std::vector<bool> needs) {
  const size_t nargs = info.names.size();
  SDK_CHECK_VALUE(args.size() == nargs && meta.size() == nargs, info.formula->node_name, ": expected ", nargs,
                  " arguments and metadata, got ", args.size(), " and ", meta.size());
  SDK_CHECK_VALUE(needs.size() == info.tensor_args.size(), info.formula->node_name, ": expected ",
                  info.tensor_args.size(), " needs flags, got ", needs.size());
  SDK_CHECK_VALUE(info.returns_list || grads.size() == info.num_returns, info.formula->node_name, ": expected ",
                  info.num_returns, " gradients, got ", grads.size());
  auto node = std::make_shared<FormulaNode>(&info, edge_list{});
  node->args.resize(nargs);
  node->saved.resize(nargs);
  node->arg_meta = std::move(meta);
  node->needs_mask = std::move(needs);
  node->saved_lists.resize(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    if (info.is_list[i]) {  // Note [Tensor lists in the formula table]
      if (info.saved[i]) node->saved_lists[i] = save_list(args[i]);
    } else if (args[i].is_tensor()) {
      if (info.saved[i]) node->saved[i] = SavedVariable(args[i].to_tensor(), /*is_output=*/false);
    } else if (info.saved[i]) {
      node->saved[i] = SavedVariable(Tensor(), /*is_output=*/false);  // an absent Tensor? argument
    } else {
      node->args[i] = std::move(args[i]);
    }
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    InputMetadata m;
    if (grads[i].defined()) {
      m = InputMetadata(grads[i]);
    } else if (i < results.size() && results[i].defined()) {
      m = InputMetadata(results[i]);
    }
    node->input_metadata.push_back(std::move(m));
  }
  if (info.saves_result) {
    for (const Tensor& r : results) node->results.emplace_back(r, /*is_output=*/false);
  }
  FormulaContext c{*node, grads, std::vector<Tensor>(nargs), std::vector<std::vector<Tensor>>(info.list_args.size())};
  info.formula->fn(c);
  variable_list out(info.tensor_args.size());
  for (size_t k = 0; k < info.tensor_args.size(); ++k) {
    if (!node->needs_mask[k]) continue;
    const size_t arg = info.tensor_args[k];
    out[k] = conform(std::move(c.out[arg]), node->arg_meta[arg]);
  }
  return out;
}

void FormulaNode::release_variables() {
  released = true;
  for (SavedVariable& v : saved) v.reset();
  for (std::vector<SavedVariable>& l : saved_lists) l.clear();
  for (SavedVariable& v : results) v.reset();
}

}  // namespace sdk::autograd
