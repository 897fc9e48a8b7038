// The boxed autograd fallback: Note [Autograd fallback fast path] (ops/detail/Autograd.h),
// and the recording of operators with a C++ formula: Note [Derivative formula table].
#include <backend_sdk/ops/detail/Autograd.h>

#include <backend_sdk/autograd/detail/Formulas.h>

#include <atomic>
#include <mutex>
#include <vector>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/detail/ViewHook.h>

namespace sdk::autograd {

void (*AutogradMeta::release_py_state)(void*) = nullptr;

// The flag itself (an inference tensor's too); the fallback's check is boxing::tensor_requires_grad.
bool requires_grad(const Tensor& t) {
  const AutogradMetaInterface* m = t.defined() ? t.impl()->autograd_meta() : nullptr;
  return m != nullptr && m->requires_grad();
}

AutogradMeta* maybe_autograd_meta(const Tensor& t) {
  if (!t.defined()) return nullptr;
  return dynamic_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

AutogradMeta& autograd_meta_of(const Tensor& t) {
  SDK_CHECK_VALUE(t.defined(), "autograd: undefined tensor");
  AutogradMeta* m = maybe_autograd_meta(t);
  if (m == nullptr) {
    t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
    m = static_cast<AutogradMeta*>(t.impl()->autograd_meta());
  }
  return *m;
}

void set_requires_grad(const Tensor& t, bool value) {
  SDK_CHECK_VALUE(t.defined(), "requires_grad_(): undefined tensor");
  if (!value && maybe_autograd_meta(t) == nullptr) return;
  autograd_meta_of(t).requires_grad_ = value;
}

namespace {
std::atomic<const KernelFunction*> g_hook{nullptr};

DispatchKeySet below_autograd(DispatchKeySet ks) { return ks & keys_after(DispatchKey::AutogradFunctionality); }

// "native_batch_norm" for "aten::native_batch_norm" (how PyTorch's messages name an operator).
std::string function_name(const std::string& qualname) {
  const size_t ns = qualname.find("::");
  std::string name = ns == std::string::npos ? qualname : qualname.substr(ns + 2);
  return name.substr(0, name.find('.'));
}

// Records `op` with its C++ formula (Note [Derivative formula table]).
void record_with_formula(const FormulaInfo& info, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const size_t nargs = info.names.size();
  SDK_CHECK(stack->size() >= nargs, op.name(), ": the stack holds fewer values than the operator's arguments");
  IValue* args = stack->data() + (stack->size() - nargs);
  edge_list edges;
  edges.reserve(info.tensor_args.size());
  for (uint16_t pos : info.tensor_args) {
    const IValue& v = args[pos];
    if (v.is_tensor() && is_floating_type(v.to_tensor().dtype())) {
      edges.push_back(gradient_edge(v.to_tensor()));
    } else {
      edges.emplace_back();
    }
  }
  // Note [Tensor lists in the formula table]: one edge per element of a Tensor[] argument.
  std::vector<uint32_t> list_begin;
  std::vector<std::vector<InputMetadata>> list_meta;
  for (uint16_t pos : info.list_args) {
    list_begin.push_back(static_cast<uint32_t>(edges.size()));
    list_meta.emplace_back();
    const IValue& v = args[pos];
    auto add = [&](const Tensor& t) {
      edges.push_back(t.defined() && is_floating_type(t.dtype()) ? gradient_edge(t) : Edge());
      list_meta.back().push_back(t.defined() ? InputMetadata(t) : InputMetadata());
    };
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) add(t);
    } else if (v.is_list()) {
      for (const IValue& e : v.to_list()) add(e.is_tensor() ? e.to_tensor() : Tensor());
    }
  }
  auto node = std::make_shared<FormulaNode>(&info, std::move(edges));
  node->args.resize(nargs);
  node->saved.resize(nargs);
  node->arg_meta.resize(nargs);
  if (!list_begin.empty()) {
    node->list_begin = std::move(list_begin);
    node->list_meta = std::move(list_meta);
  }
  const TensorImpl* inputs[8] = {};
  size_t ninputs = 0;
  for (size_t i = 0; i < nargs; ++i) {
    IValue& v = args[i];
    if (info.is_list[i]) {  // tensors of a list reach the formula as METAS / TLIST only
      if (info.saved[i]) {
        node->saved_lists.resize(nargs);
        node->saved_lists[i] = save_list(v);
      }
    } else if (v.is_tensor()) {
      const Tensor& t = v.to_tensor();
      node->arg_meta[i] = InputMetadata(t);
      const bool written = !info.written.empty() && info.written[i];  // saved after the forward
      // A buffer the operator writes takes no gradient (native_batch_norm's running statistics): PyTorch refuses
      // one that requires grad before running anything.
      SDK_CHECK(!written || !requires_grad(t), "The function '", function_name(info.formula->op),
                "' is not differentiable with respect to argument '", info.names[i],
                "'. This input cannot have requires_grad True.");
      if (info.saved[i] && !written) node->saved[i] = SavedVariable(t, /*is_output=*/false);
      if (ninputs < 8) inputs[ninputs++] = t.impl();
    } else {
      if (info.saved[i]) node->saved[i] = SavedVariable(Tensor(), /*is_output=*/false);  // absent Tensor?
      node->args[i] = v;
    }
  }
  {
    ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
    std::vector<IValue> written;  // the saved arguments the operator writes (Note [Derivative formula table])
    if (!info.written.empty()) {
      for (size_t i = 0; i < nargs; ++i) {
        if (info.written[i] && info.saved[i] && args[i].is_tensor()) written.push_back(args[i]);
      }
    }
    op.redispatch_boxed(below_autograd(ks), stack);
    for (size_t i = 0, k = 0; i < nargs && k < written.size(); ++i) {
      if (info.written[i] && info.saved[i] && node->arg_meta[i].defined) {
        node->saved[i] = SavedVariable(written[k++].to_tensor(), /*is_output=*/false);
      }
    }
  }
  // One node input per return (Note [Derivative formula table], multiple outputs), or per element of a
  // Tensor[] return (Note [Tensor lists in the formula table]).
  SDK_CHECK(stack->size() >= info.num_returns, op.name(), ": the stack holds fewer values than the operator's returns");
  std::vector<IValue> elements;
  IValue* rets = stack->data() + (stack->size() - info.num_returns);
  if (info.returns_list) {
    if (rets[0].is_tensor_list()) {
      for (const Tensor& t : rets[0].to_tensor_list()) elements.emplace_back(t);
    } else if (rets[0].is_list()) {
      for (const IValue& e : rets[0].to_list()) elements.push_back(e);
    }
    rets = elements.data();
  }
  const size_t nret = info.returns_list ? elements.size() : info.num_returns;
  bool any = false;
  std::vector<bool> differentiable(nret, false);
  for (size_t r = 0; r < nret; ++r) {
    if (!rets[r].is_tensor()) continue;
    const Tensor& out = rets[r].to_tensor();
    bool aliased = false;
    for (size_t i = 0; i < ninputs; ++i) aliased = aliased || inputs[i] == out.impl();
    // An input returned as it is keeps its own history; integer outputs (indices) have none.
    differentiable[r] = !aliased && out.defined() && is_floating_type(out.dtype()) &&
                        r < info.differentiable_outputs;  // Note [Differentiable outputs]
    any = any || differentiable[r];
  }
  if (!any) return;
  node->input_metadata.reserve(nret);
  for (size_t r = 0; r < nret; ++r) {
    const Tensor out = rets[r].is_tensor() ? rets[r].to_tensor() : Tensor();
    node->input_metadata.push_back(out.defined() ? InputMetadata(out) : InputMetadata());
    if (info.saves_result) node->results.emplace_back(out, /*is_output=*/differentiable[r], static_cast<uint32_t>(r));
  }
  for (size_t r = 0; r < nret; ++r) {
    if (!differentiable[r]) continue;
    const Tensor& out = rets[r].to_tensor();
    if (!out.is_cpu() && !out.is_meta()) node->stream_id = runtime::current_stream(out.device()).id();
    break;
  }
  for (size_t r = 0; r < nret; ++r) {
    if (!differentiable[r]) continue;
    const Tensor& out = rets[r].to_tensor();
    // Note [View creation meta]: a view keeps the creation meta the view hook propagated from a view it was
    // taken of (PyTorch's propagate_creation_meta: a view of a no_grad view refuses in-place writes too);
    // views that share one node (unbind, split) refuse them (Note [Tensor lists in the formula table]).
    AutogradMeta& m = autograd_meta_of(out);
    const CreationMeta propagated = m.view_base.defined() ? m.creation_meta : CreationMeta::Default;
    set_history(out, node, static_cast<uint32_t>(r));
    if (propagated != CreationMeta::Default) {
      m.creation_meta = propagated;
    } else if (info.returns_list && m.view_base.defined()) {
      m.creation_meta = CreationMeta::MultiOutputNode;
    }
  }
}

void autograd_fallback(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  if (!op.entry().any_requires_grad_boxed(*stack)) {
    op.redispatch_boxed(below_autograd(ks), stack);
    return;
  }
  const FormulaInfo* info = formula_for(op);
  if (info != nullptr && !info->inplace) {  // Note [In-place entries in the formula table]: the hook's
    record_with_formula(*info, op, ks, stack);
    return;
  }
  if (info == nullptr && not_differentiable(op)) {  // Note [Operators that are not differentiable]
    ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
    op.redispatch_boxed(below_autograd(ks), stack);
    return;
  }
  const KernelFunction* hook = g_hook.load(std::memory_order_acquire);
  if (hook == nullptr) {
    ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
    op.redispatch_boxed(below_autograd(ks), stack);
    return;
  }
  hook->call_boxed(op, ks, stack);
}
}  // namespace

namespace {
// Note [Autograd view bases].
// Note [View creation meta]: with grad mode off or in inference mode the view is recorded too, with its
// creation meta (a view of such a view keeps the first one's, as PyTorch propagates it).
void remember_view_base(const Tensor& base, const Tensor& view) {
  if (!is_floating_type(base.dtype())) return;
  if (base.impl()->is_inference()) return;  // inference tensors take no part in autograd, nor their views
  const bool inference = TensorImpl::inference_mode_enabled();
  CreationMeta meta = inference ? CreationMeta::InferenceMode
                                : (is_grad_enabled() ? CreationMeta::Default : CreationMeta::NoGradMode);
  const AutogradMeta* bm = maybe_autograd_meta(base);
  const bool base_is_view = bm != nullptr && bm->view_base.defined();
  if (base_is_view && bm->creation_meta != CreationMeta::Default) meta = bm->creation_meta;
  AutogradMeta& vm = autograd_meta_of(view);
  vm.view_base = base_is_view ? bm->view_base : base;
  vm.creation_meta = meta;
  vm.attr_version = view.impl()->version();  // Note [View grad_fn regeneration] (Node.cpp)
}
const bool g_view_hook_installed = [] {
  set_view_created_hook(&remember_view_base);
  return true;
}();
}  // namespace

Tensor view_base(const Tensor& t) {
  const AutogradMeta* m = maybe_autograd_meta(t);
  return m != nullptr ? m->view_base : Tensor();
}

void set_recording_hook(KernelFunction hook) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<KernelFunction>>* keep = new std::vector<std::unique_ptr<KernelFunction>>();
  std::lock_guard<std::mutex> lock(mu);
  keep->push_back(std::make_unique<KernelFunction>(std::move(hook)));
  g_hook.store(keep->back().get(), std::memory_order_release);
}

bool has_recording_hook() { return g_hook.load(std::memory_order_acquire) != nullptr; }

// Note [Grad mode and the Autograd keys]
// Grad mode is a thread-local flag of its own, as c10's GradMode, and is_grad_enabled() reads it.
// Turning it off also excludes AutogradFunctionality on the thread, so calls skip the Autograd keys
// entirely (the SDK's no_grad costs nothing per call). The autograd kernels' own "below autograd"
// regions (record_with_formula, the Python recording hook, a custom op's autograd kernel:
// PyTorch's AutoDispatchBelowADInplaceOrView) exclude the key without touching the flag, so code
// they reach -- a __torch_dispatch__ handler, a backend kernel -- sees grad mode as the caller set
// it (True in an ordinary training step), as in PyTorch. set_grad_enabled(true) lifts only an
// exclusion that set_grad_enabled(false) put there (t_grad_mode_excludes): `with no_grad()` inside
// such a region leaves the region's exclusion in place when it exits.
namespace {
thread_local bool t_grad_mode = true;
thread_local bool t_grad_mode_excludes = false;
}  // namespace

bool is_grad_enabled() { return t_grad_mode; }

void set_grad_enabled(bool enabled) {
  LocalDispatchKeySet s = tls_local_dispatch_key_set();
  const DispatchKeySet k(DispatchKey::AutogradFunctionality);
  t_grad_mode = enabled;
  if (!enabled) {
    if (s.excluded.has(DispatchKey::AutogradFunctionality)) return;  // a region's exclusion (or ours) holds
    s.excluded = s.excluded | k;
    t_grad_mode_excludes = true;
  } else {
    if (!t_grad_mode_excludes) return;
    t_grad_mode_excludes = false;
    s.excluded = s.excluded - k;
  }
  tls_set_local_dispatch_key_set(s);
}

}  // namespace sdk::autograd

// Replaces the fallthroughs Note [Fallthrough keys] had for these keys.
#define SDK_AUTOGRAD_FALLBACK(key)                                                                                    \
  SDK_LIBRARY_IMPL(_, key, m) {                                                                                       \
    m.fallback(::sdk::CppFunction(::sdk::KernelFunction::make_autograd_fallback(&::sdk::autograd::autograd_fallback))); \
  }

SDK_AUTOGRAD_FALLBACK(AutogradCPU)
SDK_AUTOGRAD_FALLBACK(AutogradMeta)
SDK_AUTOGRAD_FALLBACK(AutogradPrivateUse1)
SDK_AUTOGRAD_FALLBACK(AutogradPrivateUse2)
SDK_AUTOGRAD_FALLBACK(AutogradPrivateUse3)
