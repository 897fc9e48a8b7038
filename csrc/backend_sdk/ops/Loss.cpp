// Classification losses.
//   nll_loss_forward      CPU and Meta kernels (1-D or 2-D input, class-index targets)
//   nll_loss              CompositeImplicitAutograd: nll_loss_forward's output
//   nll_loss_nd           CompositeImplicitAutograd: any input rank, as PyTorch's: rank 1-2 call
//                         aten::nll_loss, rank 4 aten::nll_loss2d, other ranks are viewed as
//                         (N, C, 1, d1 * ...) for aten::nll_loss2d; through the dispatcher, so the
//                         autocast entries of nll_loss / nll_loss2d apply to F.nll_loss (Note [Autocast])
//   nll_loss2d            CompositeImplicitAutograd: (N * d1 * ..., C) for nll_loss_forward
//   cross_entropy_loss    CompositeImplicitAutograd: log_softmax + nll_loss_nd,
//                         label smoothing, class-probability targets
// Reductions: 0 none, 1 mean, 2 sum (PyTorch's at::Reduction). A mean with
// weights divides by the sum of the weights of the non-ignored targets.
#include <cmath>
#include <tuple>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace sdk::ops {
namespace {

constexpr int64_t kReductionNone = 0, kReductionMean = 1, kReductionSum = 2;

void check_reduction(int64_t reduction, const char* op) {
  SDK_CHECK_VALUE(reduction >= kReductionNone && reduction <= kReductionSum, op,
                  ": reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

std::tuple<Tensor, Tensor> nll_loss_forward_kernel(const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight_opt, int64_t reduction,
                                                   int64_t ignore_index) {
  const char* op = "nll_loss_forward";
  SDK_CHECK_VALUE(self.dim() > 0 && self.dim() <= 2, op, ": input tensor should be 1D or 2D, got ", self.dim(), "D");
  SDK_CHECK_VALUE(target.dim() <= 1, op, ": 0D or 1D target tensor expected, multi-target not supported");
  bool no_batch = self.dim() == 1 && target.dim() == 0;
  SDK_CHECK_VALUE(no_batch || self.size(0) == target.size(0), op, ": Expected input batch_size (", self.size(0),
                  ") to match target batch_size (", target.size(0), ").");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op, ": expected a floating point input, got ",
                 scalar_type_name(self.dtype()));
  SDK_CHECK_TYPE(target.dtype() == ScalarType::Int64 || target.dtype() == ScalarType::UInt8, op,
                 ": expected target of dtype int64 (class indices), got ", scalar_type_name(target.dtype()));
  check_reduction(reduction, op);
  check_same_device(op, self, target);
  int64_t classes = self.size(-1);
  const bool has_weight = weight_opt && weight_opt->defined();
  if (has_weight) {
    check_same_device(op, self, *weight_opt);
    SDK_CHECK_VALUE(weight_opt->numel() == classes, op, ": weight tensor should be defined either for all ", classes,
                    " classes or no classes but got weight tensor of shape: ", weight_opt->sizes());
  }
  int64_t batch = self.dim() == 1 ? 1 : self.size(0);
  bool per_sample = reduction == kReductionNone && self.dim() == 2;
  Tensor output = per_sample ? make_tensor({batch}, self.dtype(), self.device())
                             : make_tensor({}, self.dtype(), self.device());
  Tensor total_weight = make_tensor({}, self.dtype(), self.device());
  if (self.is_meta()) return {output, total_weight};

  Tensor x = copy_(make_tensor(self.sizes(), ScalarType::Float64, self.device()), self);
  Tensor t = copy_(make_tensor(target.sizes(), ScalarType::Int64, self.device()), target);
  Tensor w = has_weight ? copy_(make_tensor({classes}, ScalarType::Float64, self.device()), *weight_opt) : Tensor();
  const double* xp = x.data_ptr<double>();
  const int64_t* tp = t.data_ptr<int64_t>();
  const double* wp = has_weight ? w.data_ptr<double>() : nullptr;
  Tensor losses = make_tensor({batch}, ScalarType::Float64, self.device());
  double* lp = losses.data_ptr<double>();
  double sum = 0.0, total = 0.0;
  for (int64_t i = 0; i < batch; ++i) {
    int64_t c = tp[i];
    if (c == ignore_index) {
      lp[i] = 0.0;
      continue;
    }
    SDK_CHECK_INDEX(c >= 0 && c < classes, op, ": Target ", c, " is out of bounds for ", classes, " classes");
    double wt = wp ? wp[c] : 1.0;
    lp[i] = -wt * xp[i * classes + c];
    sum += lp[i];
    total += wt;
  }
  if (per_sample) {
    copy_(output, losses);
  } else if (reduction == kReductionNone) {
    fill_(output, Scalar(lp[0]));
  } else {
    fill_(output, Scalar(reduction == kReductionMean ? sum / total : sum));  // 0/0: nan, as PyTorch
  }
  fill_(total_weight, Scalar(reduction == kReductionNone ? 0.0 : total));
  return {output, total_weight};
}

std::tuple<Tensor, Tensor> nll_loss_forward_output(const Tensor& self, const Tensor& target,
                                                   const std::optional<Tensor>& weight, int64_t reduction,
                                                   int64_t ignore_index, const Tensor& output,
                                                   const Tensor& total_weight) {
  auto [o, tw] = nll_loss_forward_kernel(self, target, weight, reduction, ignore_index);
  for (auto [dst, src] : {std::pair<const Tensor*, const Tensor*>{&output, &o}, {&total_weight, &tw}}) {
    SDK_CHECK_TYPE(dst->dtype() == src->dtype(), "nll_loss_forward.output: expected out tensors of dtype ",
                   scalar_type_name(src->dtype()), ", got ", scalar_type_name(dst->dtype()));
    check_same_device("nll_loss_forward.output", self, *dst);
    if (!dst->sizes().equals(src->sizes())) resize_(*dst, src->sizes());
    if (!dst->is_meta()) copy_(*dst, *src);
  }
  return {output, total_weight};
}

// ---- composites (through the dispatcher) ----
template <typename Sig>
OperatorHandle::Typed<Sig> typed(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

std::tuple<Tensor, Tensor> call_nll_forward(const Tensor& self, const Tensor& target, const std::optional<Tensor>& w,
                                            int64_t reduction, int64_t ignore_index) {
  static const auto op =
      typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t)>(
          "aten::nll_loss_forward");
  return op.call(self, target, w, reduction, ignore_index);
}
Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  return copy_(empty(t.sizes(), t.dtype(), t.device()), t);
}
Tensor log_softmax(const Tensor& t, int64_t dim) {
  static const auto op = typed<Tensor(const Tensor&, int64_t, std::optional<ScalarType>)>("aten::log_softmax.int");
  return op.call(t, dim, std::nullopt);
}
Tensor sum_dims(const Tensor& t, std::optional<IntArrayRef> dims, bool keepdim = false) {
  static const auto op = typed<Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>)>(
      "aten::sum.dim_IntList");
  return op.call(t, dims, keepdim, std::nullopt);
}
Tensor mul_scalar(const Tensor& t, const Scalar& s) {
  static const auto op = typed<Tensor(const Tensor&, const Scalar&)>("aten::mul.Scalar");
  return op.call(t, s);
}
Tensor div_t(const Tensor& a, const Tensor& b) {
  static const auto op = typed<Tensor(const Tensor&, const Tensor&)>("aten::div.Tensor");
  return op.call(a, b);
}
Tensor neg(const Tensor& t) {
  static const auto op = typed<Tensor(const Tensor&)>("aten::neg");
  return op.call(t);
}
Tensor eq_scalar(const Tensor& t, const Scalar& s) {
  static const auto op = typed<Tensor(const Tensor&, const Scalar&)>("aten::eq.Scalar");
  return op.call(t, s);
}
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& v) {
  static const auto op = typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>("aten::masked_fill.Scalar");
  return op.call(t, mask, v);
}

// PyTorch's nll_loss_nd checks: a rank >= 1 input whose batch size matches the target's.
void check_nll_nd_args(const Tensor& self, const Tensor& target, const char* op) {
  SDK_CHECK_VALUE(self.dim() >= 1, op, ": Expected 1 or more dimensions (got ", self.dim(), ")");
  SDK_CHECK_VALUE(self.dim() == 1 || target.dim() >= 1, op, ": Expected input batch_size (", self.size(0),
                  ") to match target batch_size (", target.numel(), ").");
  SDK_CHECK_VALUE(self.dim() == 1 || self.size(0) == target.size(0), op, ": Expected input batch_size (", self.size(0),
                  ") to match target batch_size (", target.size(0), ").");
}

// (N, C, d1, ...) -> (N * d1 * ..., C) and the targets flattened: nll_loss_forward's shapes.
std::tuple<Tensor, Tensor> nll_nd(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                  int64_t reduction, int64_t ignore_index) {
  const char* op = "nll_loss_nd";
  check_nll_nd_args(self, target, op);
  if (self.dim() <= 2) return call_nll_forward(self, target, weight, reduction, ignore_index);
  int64_t n = self.size(0), c = self.size(1);
  DimVector expected{n};
  for (int64_t d = 2; d < self.dim(); ++d) expected.push_back(self.size(d));
  SDK_CHECK_VALUE(target.sizes().equals(expected), op, ": expected target size ", IntArrayRef(expected), ", got ",
                  target.sizes());
  // (N, C, d...) viewed as (N, d..., C), then made contiguous.
  DimVector sizes{n}, strides{self.stride(0)};
  for (int64_t d = 2; d < self.dim(); ++d) {
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  sizes.push_back(c);
  strides.push_back(self.stride(1));
  Tensor moved = contiguous(as_strided(self, sizes, strides, self.storage_offset()));
  int64_t rows = moved.numel() / std::max<int64_t>(c, 1);
  if (c == 0) rows = target.numel();
  Tensor flat_input = view(moved, {rows, c});
  Tensor flat_target = view(contiguous(target), {target.numel()});
  auto [out, total] = call_nll_forward(flat_input, flat_target, weight, reduction, ignore_index);
  if (reduction == kReductionNone) out = view(out, target.sizes());
  return {out, total};
}

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                int64_t ignore_index) {
  return std::get<0>(call_nll_forward(self, target, weight, reduction, ignore_index));
}

using NllSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t, int64_t);

Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                   int64_t ignore_index) {
  const char* op = "nll_loss_nd";
  check_nll_nd_args(self, target, op);
  static const auto nll = typed<NllSig>("aten::nll_loss");
  static const auto nll2d = typed<NllSig>("aten::nll_loss2d");
  if (self.dim() <= 2) return nll.call(self, target, weight, reduction, ignore_index);
  if (self.dim() == 4) return nll2d.call(self, target, weight, reduction, ignore_index);
  // rank 3 or > 4: (N, C, d1, ...) as (N, C, 1, d1 * ...), targets as (N, 1, d1 * ...), PyTorch's nll_loss_nd
  int64_t n = self.size(0), c = self.size(1), rest = 1;
  DimVector expected{n};
  for (int64_t d = 2; d < self.dim(); ++d) {
    expected.push_back(self.size(d));
    rest *= self.size(d);
  }
  SDK_CHECK_VALUE(target.sizes().equals(expected), op, ": expected target size ", IntArrayRef(expected), ", got ",
                  target.sizes());
  Tensor out = nll2d.call(view(contiguous(self), {n, c, 1, rest}), view(contiguous(target), {n, 1, rest}), weight,
                          reduction, ignore_index);
  return reduction == kReductionNone ? view(out, target.sizes()) : out;
}

// nll_loss2d: PyTorch's entry point for (N, C, H, W) inputs with (N, H, W) targets; the same
// computation as nll_loss_nd, with PyTorch's shape checks.
Tensor nll_loss2d(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                  int64_t ignore_index) {
  SDK_CHECK_VALUE(self.dim() == 4, "nll_loss2d: only batches of spatial inputs supported (4D tensors), but got input "
                  "of size: ", self.sizes());
  SDK_CHECK_VALUE(target.dim() == 3, "nll_loss2d: only batches of spatial targets supported (3D tensors) but got "
                  "targets of size: ", target.sizes());
  SDK_CHECK_VALUE(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
                  "nll_loss2d: input and target batch or spatial sizes don't match: target ", target.sizes(),
                  ", input ", self.sizes());
  return std::get<0>(nll_nd(self, target, weight, reduction, ignore_index));
}

// weight (C,) viewed to broadcast along the class dim of a rank-`ndim` input.
Tensor weight_view(const Tensor& weight, int64_t ndim, int64_t class_dim) {
  DimVector sizes{weight.numel()};
  for (int64_t d = class_dim + 1; d < ndim; ++d) sizes.push_back(1);
  return view(contiguous(weight), sizes);
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy_loss";
  SDK_CHECK_VALUE(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
                  ": label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  check_reduction(reduction, op);
  SDK_CHECK_VALUE(self.dim() >= 1, op, ": Expected 1 or more dimensions (got ", self.dim(), ")");
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  int64_t classes = self.size(class_dim);
  bool has_weight = weight && weight->defined();
  if (has_weight) {
    SDK_CHECK_VALUE(weight->numel() == classes, op, ": weight tensor should be defined either for all ", classes,
                    " classes or no classes but got weight tensor of shape: ", weight->sizes());
  }
  Tensor logp = log_softmax(self, class_dim);
  if (is_floating_type(target.dtype())) {
    // Class probabilities.
    SDK_CHECK_VALUE(ignore_index < 0, op, ": ignore_index is not supported for floating point target");
    SDK_CHECK_VALUE(self.sizes().equals(target.sizes()), op, ": Expected input batch_size and target to have the same "
                    "shape for class-probability targets, got input ", self.sizes(), " and target ", target.sizes());
    Tensor tgt = target;
    if (label_smoothing > 0.0) {
      tgt = add(mul_scalar(target, Scalar(1.0 - label_smoothing)), Scalar(label_smoothing / static_cast<double>(classes)));
    }
    Tensor prod = mul(logp, tgt);
    if (has_weight) prod = mul(prod, weight_view(*weight, self.dim(), class_dim));
    Tensor loss = neg(sum_dims(prod, IntArrayRef({class_dim})));
    if (reduction == kReductionNone) return loss;
    Tensor total = sum_dims(loss, std::nullopt);
    if (reduction == kReductionSum) return total;
    int64_t count = self.numel() / std::max<int64_t>(classes, 1);
    return mul_scalar(total, Scalar(1.0 / static_cast<double>(count)));
  }
  auto [nll, total_weight] = nll_nd(logp, target, weight, reduction, ignore_index);
  if (label_smoothing == 0.0) return nll;
  Tensor smooth = has_weight ? mul(logp, weight_view(*weight, self.dim(), class_dim)) : logp;
  smooth = neg(sum_dims(smooth, IntArrayRef({class_dim})));
  smooth = masked_fill(smooth, eq_scalar(target, Scalar(ignore_index)), Scalar(0.0));
  Tensor ret;
  if (reduction == kReductionNone) {
    ret = smooth;
  } else if (reduction == kReductionSum) {
    ret = sum_dims(smooth, std::nullopt);
  } else {
    ret = div_t(sum_dims(smooth, std::nullopt), total_weight);
  }
  return add(mul_scalar(nll, Scalar(1.0 - label_smoothing)),
             mul_scalar(ret, Scalar(label_smoothing / static_cast<double>(classes))));
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> "
        "(Tensor output, Tensor total_weight)");
  m.def("nll_loss_forward.output(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, *, "
        "Tensor(a!) output, Tensor(b!) total_weight) -> (Tensor(a!), Tensor(b!))");
  m.def("nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> "
        "Tensor");
  m.def("nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) "
        "-> Tensor");
  m.def("nll_loss2d(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) "
        "-> Tensor");
  m.def("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
        "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor");
  const auto implicit = sdk::DispatchKey::CompositeImplicitAutograd;
  m.impl("nll_loss", implicit, &sdk::ops::nll_loss);
  m.impl("nll_loss_nd", implicit, &sdk::ops::nll_loss_nd);
  m.impl("nll_loss2d", implicit, &sdk::ops::nll_loss2d);
  m.impl("cross_entropy_loss", implicit, &sdk::ops::cross_entropy_loss);
}

SDK_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("nll_loss_forward", &sdk::ops::nll_loss_forward_kernel);
  m.impl("nll_loss_forward.output", &sdk::ops::nll_loss_forward_output);
}
SDK_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("nll_loss_forward", &sdk::ops::nll_loss_forward_kernel);
  m.impl("nll_loss_forward.output", &sdk::ops::nll_loss_forward_output);
}
