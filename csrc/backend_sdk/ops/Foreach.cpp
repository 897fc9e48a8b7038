// The multi-tensor (_foreach_*) and fused optimizer (_fused_adam_, _fused_adamw_,
// _fused_sgd_) operators torch.optim's foreach/fused paths call, with
// PyTorch 2.13's schemas.
//
// Note [Foreach kernels]
// ~~~~~~~~~~~~~~~~~~~~~~
// A _foreach_ operator applies one element-wise operator to every tensor of
// a list (or pair of lists). Its kernel loops over the list and calls the
// per-tensor operator through the dispatcher, so each element gets exactly the
// per-tensor kernel's values, dtype rules and checks (the foreach optimizer
// step equals the per-parameter one bit for bit), and the same kernel serves
// CPU and Meta (the per-tensor Meta kernels size the results). What it saves
// is launches: registered as one device operator (the accel sample's
// simulated kernels), a whole list is one launch whose worker runs the loop
// over host aliases, instead of one launch per tensor and operator. The
// CompositeExplicitAutograd registration gives every other backend the same
// loop (one call per tensor there). They are not differentiable (PyTorch
// has formulas; optimizers call them under no_grad).
//
// The fused optimizers are one pass over each parameter's elements (param,
// grad, moments read and written once, in the parameter's dtype; float32 and
// float64), split over the thread pool: the update PyTorch's fused CPU
// kernels compute (Adam/AdamW: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); SGD with
// momentum, dampening, nesterov). The step counts are the state_steps
// tensors, already incremented by the caller, as torch.optim does.
#include <cmath>
#include <string>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CompositeOps.h>

namespace sdk::ops {
namespace {

using cx::typed;
using TL = std::vector<Tensor>;

// ---- argument checks (PyTorch's texts, ForeachUtils) ----
void check_nonempty(const TL& a, const char* op) {
  SDK_CHECK(!a.empty(), op, ": Tensor list must have at least one tensor.");
}
void check_same_length(const TL& a, const TL& b, const char* op) {
  SDK_CHECK(a.size() == b.size(), op, ": Tensor lists must have the same number of tensors, got ", a.size(), " and ",
            b.size());
}
void check_scalars(const TL& a, size_t n, const char* op) {
  SDK_CHECK(a.size() == n, op, ": Tensor list must have same number of elements as scalar list, got ", a.size(),
            " and ", n);
}

std::vector<Scalar> scalar_list(const IValue& v) {
  std::vector<Scalar> out;
  if (v.is_int_list()) {
    for (int64_t x : v.to_int_list()) out.emplace_back(x);
  } else if (v.is_double_list()) {
    for (double x : v.to_double_list()) out.emplace_back(x);
  } else {
    for (const IValue& x : v.to_list()) out.push_back(x.to_scalar());
  }
  return out;
}

// The values of the `Tensor scalars` overloads (one per list element): read on the host; a Meta
// run only sizes results, so it uses 1.
std::vector<Scalar> tensor_scalars(const Tensor& t, size_t n, const char* op) {
  SDK_CHECK(t.dim() == 1 && static_cast<size_t>(t.numel()) == n, op, ": Expected scalars to be a 1-D tensor with ",
            n, " elements, but got a tensor of shape ", t.sizes());
  std::vector<Scalar> out;
  if (t.device().type == DeviceType::Meta) return std::vector<Scalar>(n, Scalar(1.0));
  Tensor host = t.device().type == DeviceType::CPU ? t : _to_copy(t, std::nullopt, Device(DeviceType::CPU));
  Tensor d = to(host, ScalarType::Float64);
  for (size_t i = 0; i < n; ++i) out.emplace_back(item(cx::narrow(d, 0, static_cast<int64_t>(i), 1)).to_double());
  return out;
}

void push_list(Stack& s, size_t base, TL out) {
  s.resize(base);
  s.emplace_back(std::move(out));
}

// ---- the per-tensor operators the families call ----
using TT = Tensor(const Tensor&, const Tensor&);
using TTS = Tensor(const Tensor&, const Tensor&, const Scalar&);
using TTTS = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&);
using TTT = Tensor(const Tensor&, const Tensor&, const Tensor&);

struct BinaryFamily {
  const char* functional;  // Tensor overload taking (self, other[, alpha])
  const char* inplace;
  bool has_alpha;
};
constexpr BinaryFamily kAdd{"aten::add.Tensor", "aten::add_.Tensor", true};
constexpr BinaryFamily kSub{"aten::sub.Tensor", "aten::sub_.Tensor", true};
constexpr BinaryFamily kMul{"aten::mul.Tensor", "aten::mul_.Tensor", false};
constexpr BinaryFamily kDiv{"aten::div.Tensor", "aten::div_.Tensor", false};

Tensor binary_call(const BinaryFamily& f, bool inplace, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const char* name = inplace ? f.inplace : f.functional;
  if (f.has_alpha) return Dispatcher::singleton().find_schema_or_throw(name).typed<TTS>().call(a, b, alpha);
  return Dispatcher::singleton().find_schema_or_throw(name).typed<TT>().call(a, b);
}

// Overload kinds of the binary families: .Scalar, .List, .ScalarList, .Tensor.
enum class Kind { Scalar, List, ScalarList, Tensor };

template <const BinaryFamily& F, Kind K, bool kInplace>
void binary_boxed(OperatorKernel*, const OperatorHandle& h, DispatchKeySet, Stack* stack) {
  const std::string& op = h.schema().name;
  const size_t nargs = h.schema().arguments.size();
  Stack& s = *stack;
  const size_t base = s.size() - nargs;
  const TL self = s[base].to_tensor_list();
  check_nonempty(self, op.c_str());
  const Scalar alpha = (F.has_alpha && (K == Kind::List || K == Kind::Tensor)) ? s[base + 2].to_scalar() : Scalar(int64_t{1});
  TL out;
  out.reserve(self.size());
  auto apply = [&](size_t i, const Tensor& other) {
    Tensor r = binary_call(F, kInplace, self[i], other, alpha);
    if (!kInplace) out.push_back(std::move(r));
  };
  if constexpr (K == Kind::Scalar) {
    const Scalar v = s[base + 1].to_scalar();
    for (size_t i = 0; i < self.size(); ++i) apply(i, wrapped_scalar_tensor(v));
  } else if constexpr (K == Kind::List) {
    const TL other = s[base + 1].to_tensor_list();
    check_same_length(self, other, op.c_str());
    for (size_t i = 0; i < self.size(); ++i) apply(i, other[i]);
  } else if constexpr (K == Kind::ScalarList) {
    const std::vector<Scalar> v = scalar_list(s[base + 1]);
    check_scalars(self, v.size(), op.c_str());
    for (size_t i = 0; i < self.size(); ++i) apply(i, wrapped_scalar_tensor(v[i]));
  } else {
    const Tensor other = s[base + 1].to_tensor();
    for (size_t i = 0; i < self.size(); ++i) apply(i, other);
  }
  if (kInplace) {
    s.resize(base);
  } else {
    push_list(s, base, std::move(out));
  }
}

// addcmul / addcdiv: self + value * t1 (*|/) t2, value one Scalar, a Scalar[] or a Tensor of values.
template <bool kDiv, Kind K, bool kInplace>
void pointwise3_boxed(OperatorKernel*, const OperatorHandle& h, DispatchKeySet, Stack* stack) {
  const std::string& op = h.schema().name;
  Stack& s = *stack;
  const size_t base = s.size() - 4;
  const TL self = s[base].to_tensor_list(), t1 = s[base + 1].to_tensor_list(), t2 = s[base + 2].to_tensor_list();
  check_nonempty(self, op.c_str());
  check_same_length(self, t1, op.c_str());
  check_same_length(self, t2, op.c_str());
  std::vector<Scalar> values;
  if constexpr (K == Kind::Scalar) {
    values.assign(self.size(), s[base + 3].to_scalar());
  } else if constexpr (K == Kind::ScalarList) {
    values = scalar_list(s[base + 3]);
    check_scalars(self, values.size(), op.c_str());
  } else {
    values = tensor_scalars(s[base + 3].to_tensor(), self.size(), op.c_str());
  }
  const char* name = kDiv ? (kInplace ? "aten::addcdiv_" : "aten::addcdiv")
                          : (kInplace ? "aten::addcmul_" : "aten::addcmul");
  const auto f = Dispatcher::singleton().find_schema_or_throw(name).typed<TTTS>();
  TL out;
  for (size_t i = 0; i < self.size(); ++i) {
    Tensor r = f.call(self[i], t1[i], t2[i], values[i]);
    if (!kInplace) out.push_back(std::move(r));
  }
  if (kInplace) {
    s.resize(base);
  } else {
    push_list(s, base, std::move(out));
  }
}

// lerp: weight one Scalar, a Scalar[] or a list of weight tensors.
template <Kind K, bool kInplace>
void lerp_boxed(OperatorKernel*, const OperatorHandle& h, DispatchKeySet, Stack* stack) {
  const std::string& op = h.schema().name;
  Stack& s = *stack;
  const size_t base = s.size() - 3;
  const TL self = s[base].to_tensor_list(), end = s[base + 1].to_tensor_list();
  check_nonempty(self, op.c_str());
  check_same_length(self, end, op.c_str());
  const auto by_scalar = Dispatcher::singleton()
                             .find_schema_or_throw(kInplace ? "aten::lerp_.Scalar" : "aten::lerp.Scalar")
                             .typed<TTS>();
  const auto by_tensor = Dispatcher::singleton()
                             .find_schema_or_throw(kInplace ? "aten::lerp_.Tensor" : "aten::lerp.Tensor")
                             .typed<TTT>();
  TL out;
  std::vector<Scalar> w;
  TL wt;
  if constexpr (K == Kind::Scalar) {
    w.assign(self.size(), s[base + 2].to_scalar());
  } else if constexpr (K == Kind::ScalarList) {
    w = scalar_list(s[base + 2]);
    check_scalars(self, w.size(), op.c_str());
  } else {
    wt = s[base + 2].to_tensor_list();
    check_same_length(self, wt, op.c_str());
  }
  for (size_t i = 0; i < self.size(); ++i) {
    Tensor r = K == Kind::List ? by_tensor.call(self[i], end[i], wt[i]) : by_scalar.call(self[i], end[i], w[i]);
    if (!kInplace) out.push_back(std::move(r));
  }
  if (kInplace) {
    s.resize(base);
  } else {
    push_list(s, base, std::move(out));
  }
}

// Unary families: sqrt, neg, reciprocal (functional and in-place).
template <bool kInplace>
void unary_boxed_impl(const char* name, Stack& s) {
  const size_t base = s.size() - 1;
  const TL self = s[base].to_tensor_list();
  check_nonempty(self, name);
  const auto f = Dispatcher::singleton().find_schema_or_throw(name).typed<Tensor(const Tensor&)>();
  TL out;
  for (const Tensor& t : self) {
    Tensor r = f.call(t);
    if (!kInplace) out.push_back(std::move(r));
  }
  if (kInplace) {
    s.resize(base);
  } else {
    push_list(s, base, std::move(out));
  }
}
#define SDK_FOREACH_UNARY(id, name)                                                                       \
  void id##_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* s) {                    \
    unary_boxed_impl<false>("aten::" name, *s);                                                           \
  }                                                                                                       \
  void id##_inplace_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* s) {            \
    unary_boxed_impl<true>("aten::" name "_", *s);                                                        \
  }
SDK_FOREACH_UNARY(sqrt, "sqrt")
SDK_FOREACH_UNARY(neg, "neg")
SDK_FOREACH_UNARY(reciprocal, "reciprocal")
#undef SDK_FOREACH_UNARY

void zero_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 1;
  const TL self = s[base].to_tensor_list();
  check_nonempty(self, "aten::_foreach_zero_");
  for (const Tensor& t : self) fill_(t, Scalar(int64_t{0}));
  s.resize(base);
}

void copy_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 3;
  const TL self = s[base].to_tensor_list(), src = s[base + 1].to_tensor_list();
  const bool non_blocking = s[base + 2].to_bool();
  check_nonempty(self, "aten::_foreach_copy_");
  check_same_length(self, src, "aten::_foreach_copy_");
  for (size_t i = 0; i < self.size(); ++i) copy_(self[i], src[i], non_blocking);
  s.resize(base);
}

// maximum_ (List): self[i] = maximum(self[i], other[i]), written through maximum.out.
void maximum_list_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 2;
  const TL self = s[base].to_tensor_list(), other = s[base + 1].to_tensor_list();
  check_nonempty(self, "aten::_foreach_maximum_.List");
  check_same_length(self, other, "aten::_foreach_maximum_.List");
  const auto f = typed<TTT>("aten::maximum.out");
  for (size_t i = 0; i < self.size(); ++i) f.call(self[i], other[i], self[i]);
  s.resize(base);
}

void norm_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 3;
  const TL self = s[base].to_tensor_list();
  const Scalar ord = s[base + 1].to_scalar();
  const std::optional<ScalarType> dtype =
      s[base + 2].is_none() ? std::nullopt : std::optional<ScalarType>(s[base + 2].to_scalar_type());
  check_nonempty(self, "aten::_foreach_norm.Scalar");
  static const auto f = typed<Tensor(const Tensor&, const Scalar&, std::optional<IntArrayRef>, bool,
                                     std::optional<ScalarType>)>("aten::linalg_vector_norm");
  TL out;
  for (const Tensor& t : self) out.push_back(f.call(t, ord, std::nullopt, false, dtype));
  push_list(s, base, std::move(out));
}

// ---- fused optimizers (Note [Foreach kernels]) ----
struct FusedLists {
  TL params, grads, a, b, c, steps;
};

void check_fused_tensor(const Tensor& t, const Tensor& p, const char* what, const char* op) {
  SDK_CHECK(t.sizes().vec() == p.sizes().vec() && t.dtype() == p.dtype() && t.device() == p.device(), op, ": ", what,
            " must match its parameter's shape, dtype and device, got ", t.sizes(), " ", legacy_type_name(t.dtype()),
            " on ", t.device(), " for a parameter ", p.sizes(), " ", legacy_type_name(p.dtype()), " on ",
            p.device());
  SDK_CHECK(t.is_contiguous(), op, ": ", what, " must be contiguous");
}

double read_scalar(const Tensor& t) {
  if (t.device().type == DeviceType::Meta) return 1.0;
  return item(t).to_double();
}

// A fused kernel runs only where the data is addressable (CPU, or a device worker's host alias);
// on Meta it checks the arguments.
template <typename Fn>
void for_each_param(const FusedLists& l, const char* op, bool need_c, bool need_steps, const Fn& fn) {
  check_nonempty(l.params, op);
  check_same_length(l.params, l.grads, op);
  check_same_length(l.params, l.a, op);
  if (need_c && !l.c.empty()) check_same_length(l.params, l.c, op);
  if (need_steps) check_same_length(l.params, l.steps, op);
  for (size_t i = 0; i < l.params.size(); ++i) {
    const Tensor& p = l.params[i];
    SDK_CHECK_TYPE(p.dtype() == ScalarType::Float32 || p.dtype() == ScalarType::Float64, op,
                   ": fused optimizer kernels support float32 and float64 parameters, got ", legacy_type_name(p.dtype()));
    SDK_CHECK(p.is_contiguous(), op, ": parameters must be contiguous");
    check_fused_tensor(l.grads[i], p, "grad", op);
    check_fused_tensor(l.a[i], p, "state", op);
    if (!l.b.empty()) check_fused_tensor(l.b[i], p, "state", op);
    if (need_c && !l.c.empty()) check_fused_tensor(l.c[i], p, "max_exp_avg_sq", op);
    if (p.device().type == DeviceType::Meta) continue;
    fn(i);
    p.impl()->bump_version();
  }
}

// One Adam/AdamW element update over [lo, hi): straight-line code the compiler vectorises (this file is
// built with -fno-math-errno, so sqrt is the vector instruction).
template <typename T>
struct AdamStep {
  T *p, *g, *m, *v, *vmax;
  T b1, b2, one_b1, one_b2, decay, l2, gmul, ss, bc2s, eps;
};

template <typename T, bool kAmsgrad>
inline void adam_range(const AdamStep<T>& st, int64_t lo, int64_t hi) {
  T *p = st.p, *g = st.g, *m = st.m, *v = st.v, *vmax = st.vmax;
  for (int64_t k = lo; k < hi; ++k) {
    const T param = p[k];
    const T grad = g[k] * st.gmul + st.l2 * param;
    const T mk = m[k] * st.b1 + st.one_b1 * grad;
    const T vk = v[k] * st.b2 + st.one_b2 * (grad * grad);
    m[k] = mk;
    v[k] = vk;
    T dv = vk;
    if constexpr (kAmsgrad) {
      dv = vmax[k] > vk ? vmax[k] : vk;
      vmax[k] = dv;
    }
    p[k] = param * st.decay - st.ss * (mk / (std::sqrt(dv) / st.bc2s + st.eps));
  }
}

// AVX2 and baseline clones on x86-64 (picked at load time; no FMA, so every clone rounds alike).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SDK_ADAM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SDK_ADAM_CLONES
#endif
#define SDK_ADAM_RANGE(name, T, ams) \
  SDK_ADAM_CLONES void name(const AdamStep<T>& st, int64_t lo, int64_t hi) { adam_range<T, ams>(st, lo, hi); }
SDK_ADAM_RANGE(adam_range_f, float, false)
SDK_ADAM_RANGE(adam_range_f_ams, float, true)
SDK_ADAM_RANGE(adam_range_d, double, false)
SDK_ADAM_RANGE(adam_range_d_ams, double, true)
#undef SDK_ADAM_RANGE

void adam_dispatch(const AdamStep<float>& st, int64_t lo, int64_t hi) {
  st.vmax ? adam_range_f_ams(st, lo, hi) : adam_range_f(st, lo, hi);
}
void adam_dispatch(const AdamStep<double>& st, int64_t lo, int64_t hi) {
  st.vmax ? adam_range_d_ams(st, lo, hi) : adam_range_d(st, lo, hi);
}

template <bool kAdamW>
void fused_adam_boxed(OperatorKernel*, const OperatorHandle& h, DispatchKeySet, Stack* stack) {
  const char* op = kAdamW ? "_fused_adamw_" : "_fused_adam_";
  Stack& s = *stack;
  const size_t base = s.size() - 15;
  FusedLists l{s[base].to_tensor_list(), s[base + 1].to_tensor_list(), s[base + 2].to_tensor_list(),
               s[base + 3].to_tensor_list(), s[base + 4].to_tensor_list(), s[base + 5].to_tensor_list()};
  const double lr = s[base + 6].to_double(), beta1 = s[base + 7].to_double(), beta2 = s[base + 8].to_double(),
               wd = s[base + 9].to_double(), eps = s[base + 10].to_double();
  const bool amsgrad = s[base + 11].to_bool(), maximize = s[base + 12].to_bool();
  std::optional<Tensor> grad_scale = cx::opt_tensor(s[base + 13]), found_inf = cx::opt_tensor(s[base + 14]);
  check_same_length(l.params, l.b, op);
  SDK_CHECK(!amsgrad || l.c.size() == l.params.size(), op, ": amsgrad needs one max_exp_avg_sq per parameter");
  if (found_inf && l.params[0].device().type != DeviceType::Meta && read_scalar(*found_inf) != 0.0) {
    s.resize(base);
    return;  // an overflowed step is skipped, as GradScaler's fused path expects
  }
  const double inv_scale = grad_scale && l.params[0].device().type != DeviceType::Meta ? 1.0 / read_scalar(*grad_scale)
                                                                                      : 1.0;
  for_each_param(l, op, amsgrad, true, [&](size_t i) {
    const double step = read_scalar(l.steps[i]);
    const double bc1 = 1 - std::pow(beta1, step), bc2_sqrt = std::sqrt(1 - std::pow(beta2, step));
    const double step_size = lr / bc1;
    auto run = [&](auto zero) {
      using T = decltype(zero);
      AdamStep<T> st;
      st.p = l.params[i].template data_ptr<T>();
      st.g = l.grads[i].template data_ptr<T>();
      st.m = l.a[i].template data_ptr<T>();
      st.v = l.b[i].template data_ptr<T>();
      st.vmax = amsgrad ? l.c[i].template data_ptr<T>() : nullptr;
      // Branch-free constants (Note [Foreach kernels]): a zero weight decay is decay 1 / l2 0, the sign of
      // maximize and the gradient scale fold into one factor.
      st.b1 = static_cast<T>(beta1);
      st.b2 = static_cast<T>(beta2);
      st.one_b1 = static_cast<T>(1 - beta1);
      st.one_b2 = static_cast<T>(1 - beta2);
      st.decay = static_cast<T>(kAdamW ? 1 - lr * wd : 1.0);
      st.l2 = static_cast<T>(kAdamW ? 0.0 : wd);
      st.gmul = static_cast<T>((maximize ? -1.0 : 1.0) * inv_scale);
      st.ss = static_cast<T>(step_size);
      st.bc2s = static_cast<T>(bc2_sqrt);
      st.eps = static_cast<T>(eps);
      parallel_for(0, l.params[i].numel(), 1 << 15, [&](int64_t lo, int64_t hi) { adam_dispatch(st, lo, hi); });
    };
    if (l.params[i].dtype() == ScalarType::Float32) {
      run(float{});
    } else {
      run(double{});
    }
    l.a[i].impl()->bump_version();
    l.b[i].impl()->bump_version();
  });
  s.resize(base);
}

void fused_sgd_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  const char* op = "_fused_sgd_";
  Stack& s = *stack;
  const size_t base = s.size() - 12;
  FusedLists l{s[base].to_tensor_list(), s[base + 1].to_tensor_list(), s[base + 2].to_tensor_list(), {}, {}, {}};
  const double wd = s[base + 3].to_double(), momentum = s[base + 4].to_double(), lr = s[base + 5].to_double(),
               dampening = s[base + 6].to_double();
  const bool nesterov = s[base + 7].to_bool(), maximize = s[base + 8].to_bool(), first = s[base + 9].to_bool();
  std::optional<Tensor> grad_scale = cx::opt_tensor(s[base + 10]), found_inf = cx::opt_tensor(s[base + 11]);
  const bool meta = !l.params.empty() && l.params[0].device().type == DeviceType::Meta;
  if (found_inf && !meta && read_scalar(*found_inf) != 0.0) {
    s.resize(base);
    return;
  }
  const double inv_scale = grad_scale && !meta ? 1.0 / read_scalar(*grad_scale) : 1.0;
  if (momentum == 0) l.a.assign(l.params.begin(), l.params.end());  // no buffers: checked against the params
  for_each_param(l, op, false, false, [&](size_t i) {
    auto run = [&](auto zero) {
      using T = decltype(zero);
      T* p = l.params[i].template data_ptr<T>();
      T* g = l.grads[i].template data_ptr<T>();
      T* buf = momentum != 0 ? l.a[i].template data_ptr<T>() : nullptr;
      const T mom = static_cast<T>(momentum), damp = static_cast<T>(1 - dampening), w = static_cast<T>(wd),
              rate = static_cast<T>(lr), sc = static_cast<T>(inv_scale);
      parallel_for(0, l.params[i].numel(), 1 << 15, [&](int64_t lo, int64_t hi) {
        for (int64_t k = lo; k < hi; ++k) {
          T grad = maximize ? -g[k] : g[k];
          if (grad_scale) grad *= sc;
          if (wd != 0) grad += w * p[k];
          if (buf) {
            const T b = first ? grad : mom * buf[k] + damp * grad;
            buf[k] = b;
            grad = nesterov ? grad + mom * b : b;
          }
          p[k] -= rate * grad;
        }
      });
    };
    if (l.params[i].dtype() == ScalarType::Float32) {
      run(float{});
    } else {
      run(double{});
    }
    if (momentum != 0) l.a[i].impl()->bump_version();
  });
  s.resize(base);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  for (const char* fam : {"add", "sub"}) {
    const std::string f = std::string("_foreach_") + fam;
    m.def(f + ".Scalar(Tensor[] self, Scalar scalar) -> Tensor[]");
    m.def(f + "_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()");
    m.def(f + ".List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]");
    m.def(f + "_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()");
    m.def(f + ".ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]");
    m.def(f + "_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()");
  }
  m.def("_foreach_add.Tensor(Tensor[] self, Tensor other, *, Scalar alpha=1) -> Tensor[]");
  m.def("_foreach_add_.Tensor(Tensor(a!)[] self, Tensor other, *, Scalar alpha=1) -> ()");
  for (const char* fam : {"mul", "div"}) {
    const std::string f = std::string("_foreach_") + fam;
    m.def(f + ".Scalar(Tensor[] self, Scalar scalar) -> Tensor[]");
    m.def(f + "_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()");
    m.def(f + ".List(Tensor[] self, Tensor[] other) -> Tensor[]");
    m.def(f + "_.List(Tensor(a!)[] self, Tensor[] other) -> ()");
    m.def(f + ".ScalarList(Tensor[] self, Scalar[] scalars) -> Tensor[]");
    m.def(f + "_.ScalarList(Tensor(a!)[] self, Scalar[] scalars) -> ()");
    m.def(f + ".Tensor(Tensor[] self, Tensor other) -> Tensor[]");
    m.def(f + "_.Tensor(Tensor(a!)[] self, Tensor other) -> ()");
  }
  for (const char* fam : {"addcmul", "addcdiv"}) {
    const std::string f = std::string("_foreach_") + fam;
    m.def(f + ".Scalar(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> Tensor[]");
    m.def(f + "_.Scalar(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar value=1) -> ()");
    m.def(f + ".ScalarList(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> Tensor[]");
    m.def(f + "_.ScalarList(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Scalar[] scalars) -> ()");
    m.def(f + ".Tensor(Tensor[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> Tensor[]");
    m.def(f + "_.Tensor(Tensor(a!)[] self, Tensor[] tensor1, Tensor[] tensor2, Tensor scalars) -> ()");
  }
  m.def("_foreach_lerp.List(Tensor[] self, Tensor[] tensors1, Tensor[] weights) -> Tensor[]");
  m.def("_foreach_lerp_.List(Tensor(a!)[] self, Tensor[] tensors1, Tensor[] weights) -> ()");
  m.def("_foreach_lerp.Scalar(Tensor[] self, Tensor[] tensors1, Scalar weight) -> Tensor[]");
  m.def("_foreach_lerp_.Scalar(Tensor(a!)[] self, Tensor[] tensors1, Scalar weight) -> ()");
  m.def("_foreach_lerp.ScalarList(Tensor[] self, Tensor[] tensors1, Scalar[] weight) -> Tensor[]");
  m.def("_foreach_lerp_.ScalarList(Tensor(a!)[] self, Tensor[] tensors1, Scalar[] weight) -> ()");
  for (const char* fam : {"sqrt", "neg", "reciprocal"}) {
    const std::string f = std::string("_foreach_") + fam;
    m.def(f + "(Tensor[] self) -> Tensor[]");
    m.def(f + "_(Tensor(a!)[] self) -> ()");
  }
  m.def("_foreach_zero_(Tensor(a!)[] self) -> ()");
  m.def("_foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False) -> ()");
  m.def("_foreach_maximum_.List(Tensor(a!)[] self, Tensor[] other) -> ()");
  m.def("_foreach_norm.Scalar(Tensor[] self, Scalar ord=2, ScalarType? dtype=None) -> Tensor[]");
  for (const char* f : {"_fused_adam_", "_fused_adamw_"}) {
    m.def(std::string(f) + "(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, Tensor(d!)[] exp_avg_sqs, "
          "Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, float lr, float beta1, float beta2, "
          "float weight_decay, float eps, bool amsgrad, bool maximize, Tensor? grad_scale=None, "
          "Tensor? found_inf=None) -> ()");
  }
  m.def("_fused_sgd_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] momentum_buffer_list, *, float weight_decay, "
        "float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step, "
        "Tensor? grad_scale=None, Tensor? found_inf=None) -> ()");
}

namespace {
using sdk::CppFunction;
using namespace sdk::ops;

// One table of every foreach/fused kernel, registered for CPU, Meta and CompositeExplicitAutograd
// (Note [Foreach kernels]).
void register_foreach(sdk::Library& m, sdk::DispatchKey key) {
  auto reg = [&](const char* name, sdk::BoxedKernelFn fn) { m.impl(name, key, CppFunction::make_from_boxed(fn)); };
#define SDK_FOREACH_BINARY(fam, F)                                                     \
  reg("_foreach_" fam ".Scalar", &binary_boxed<F, Kind::Scalar, false>);               \
  reg("_foreach_" fam "_.Scalar", &binary_boxed<F, Kind::Scalar, true>);               \
  reg("_foreach_" fam ".List", &binary_boxed<F, Kind::List, false>);                   \
  reg("_foreach_" fam "_.List", &binary_boxed<F, Kind::List, true>);                   \
  reg("_foreach_" fam ".ScalarList", &binary_boxed<F, Kind::ScalarList, false>);       \
  reg("_foreach_" fam "_.ScalarList", &binary_boxed<F, Kind::ScalarList, true>)
  SDK_FOREACH_BINARY("add", kAdd);
  SDK_FOREACH_BINARY("sub", kSub);
  SDK_FOREACH_BINARY("mul", kMul);
  SDK_FOREACH_BINARY("div", kDiv);
#undef SDK_FOREACH_BINARY
  reg("_foreach_add.Tensor", &binary_boxed<kAdd, Kind::Tensor, false>);
  reg("_foreach_add_.Tensor", &binary_boxed<kAdd, Kind::Tensor, true>);
  reg("_foreach_mul.Tensor", &binary_boxed<kMul, Kind::Tensor, false>);
  reg("_foreach_mul_.Tensor", &binary_boxed<kMul, Kind::Tensor, true>);
  reg("_foreach_div.Tensor", &binary_boxed<kDiv, Kind::Tensor, false>);
  reg("_foreach_div_.Tensor", &binary_boxed<kDiv, Kind::Tensor, true>);
#define SDK_FOREACH_POINTWISE(fam, kDivide)                                            \
  reg("_foreach_" fam ".Scalar", &pointwise3_boxed<kDivide, Kind::Scalar, false>);     \
  reg("_foreach_" fam "_.Scalar", &pointwise3_boxed<kDivide, Kind::Scalar, true>);     \
  reg("_foreach_" fam ".ScalarList", &pointwise3_boxed<kDivide, Kind::ScalarList, false>); \
  reg("_foreach_" fam "_.ScalarList", &pointwise3_boxed<kDivide, Kind::ScalarList, true>); \
  reg("_foreach_" fam ".Tensor", &pointwise3_boxed<kDivide, Kind::Tensor, false>);     \
  reg("_foreach_" fam "_.Tensor", &pointwise3_boxed<kDivide, Kind::Tensor, true>)
  SDK_FOREACH_POINTWISE("addcmul", false);
  SDK_FOREACH_POINTWISE("addcdiv", true);
#undef SDK_FOREACH_POINTWISE
  reg("_foreach_lerp.List", &lerp_boxed<Kind::List, false>);
  reg("_foreach_lerp_.List", &lerp_boxed<Kind::List, true>);
  reg("_foreach_lerp.Scalar", &lerp_boxed<Kind::Scalar, false>);
  reg("_foreach_lerp_.Scalar", &lerp_boxed<Kind::Scalar, true>);
  reg("_foreach_lerp.ScalarList", &lerp_boxed<Kind::ScalarList, false>);
  reg("_foreach_lerp_.ScalarList", &lerp_boxed<Kind::ScalarList, true>);
  reg("_foreach_sqrt", &sqrt_boxed);
  reg("_foreach_sqrt_", &sqrt_inplace_boxed);
  reg("_foreach_neg", &neg_boxed);
  reg("_foreach_neg_", &neg_inplace_boxed);
  reg("_foreach_reciprocal", &reciprocal_boxed);
  reg("_foreach_reciprocal_", &reciprocal_inplace_boxed);
  reg("_foreach_zero_", &zero_boxed);
  reg("_foreach_copy_", &copy_boxed);
  reg("_foreach_maximum_.List", &maximum_list_boxed);
  reg("_foreach_norm.Scalar", &norm_boxed);
  reg("_fused_adam_", &fused_adam_boxed<false>);
  reg("_fused_adamw_", &fused_adam_boxed<true>);
  reg("_fused_sgd_", &fused_sgd_boxed);
}
}  // namespace

SDK_LIBRARY_IMPL(aten, CPU, m) { register_foreach(m, sdk::DispatchKey::CPU); }
SDK_LIBRARY_IMPL(aten, Meta, m) { register_foreach(m, sdk::DispatchKey::Meta); }
SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  register_foreach(m, sdk::DispatchKey::CompositeExplicitAutograd);
}
