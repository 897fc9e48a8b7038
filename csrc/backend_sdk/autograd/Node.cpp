#include <backend_sdk/autograd/detail/Node.h>

#include <backend_sdk/autograd/detail/Formulas.h>

#include <sstream>

#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include <backend_sdk/dispatch/RecordFunction.h>
#include <backend_sdk/dispatch/RecordFunctionExtras.h>
#include <backend_sdk/ops/Functions.h>

namespace sdk::autograd {

const char* const kSecondBackwardMessage =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.";

namespace {
std::atomic<uint64_t> g_sequence_nr{0};
}

uint64_t next_sequence_nr() { return g_sequence_nr.fetch_add(1, std::memory_order_relaxed); }

void (*Node::release_py_state)(void*) = nullptr;

Node::Node(edge_list next_edges) : sequence_nr_(next_sequence_nr()), next_edges_(std::move(next_edges)) {
  // Note [Record function extras]: the operator being recorded links to this node.
  if (profiler::record_function_active()) profiler::set_current_sequence_nr(static_cast<int64_t>(sequence_nr_), true);
}

// Note [Iterative graph destruction]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A node owns the nodes its edges point to, so dropping the last output of a
// chain of a million operators would destroy a million nodes recursively and
// overflow the stack (PyTorch's deleteNode solves the same problem). Instead
// the outermost ~Node on a thread moves its edges' nodes to a thread-local
// list and releases them one at a time; nested destructors only append.
namespace {
thread_local bool t_deleting = false;
thread_local std::vector<std::shared_ptr<Node>>* t_pending = nullptr;
}  // namespace

Node::~Node() {
  if (py_state != nullptr && release_py_state != nullptr) release_py_state(py_state);
  if (t_pending == nullptr) t_pending = new std::vector<std::shared_ptr<Node>>();  // never freed: thread exit order
  for (Edge& e : next_edges_) {
    if (e.function) t_pending->push_back(std::move(e.function));
  }
  if (t_deleting) return;
  t_deleting = true;
  while (!t_pending->empty()) {
    std::shared_ptr<Node> n = std::move(t_pending->back());
    t_pending->pop_back();
    n.reset();  // its destructor appends its own edges
  }
  t_deleting = false;
}

AccumulateGrad::AccumulateGrad(Tensor v) : variable(std::move(v)) {
  // PyTorch gives AccumulateGrad the highest sequence number (UINT64_MAX): a
  // leaf's gradient is accumulated as soon as it is ready.
  sequence_nr_ = UINT64_MAX;
  input_metadata.emplace_back(variable);
}

variable_list AccumulateGrad::apply(variable_list&&) {
  // Accumulation into .grad is done by the engine (it runs the leaf's hooks first).
  return {};
}

// Note [View grad_fn regeneration]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's VariableHooks::grad_fn: a view with a history remembers the
// version its grad_fn was set at (attr_version). An in-place write into its
// base or into another view of it (CopySlices) changes the shared version
// counter and the base's history, so the view's node is stale: the next time
// its history is read (grad_fn, or an edge for recording), it is regenerated as
// an AsStridedBackward0 of the root base's current history
// (make_view_rebase_node, Formulas.cpp), which takes the view's region of the
// base's gradient. Without this, `v = base[1:]; w = v[:2]; w.mul_(y); v * 2`
// would reach base's history from before the write (wrong gradients).
// A view made in grad mode of a base outside autograd has no history of its own; once a write into
// another view of the base gave the base one, it is regenerated the same way (PyTorch's differentiable
// views). A view made under no_grad or in inference mode of a base in autograd cannot be regenerated:
// reading its history after such a write raises PyTorch's error (handle_view_on_rebase).
void refresh_view_history(const Tensor& t, AutogradMeta& m) {
  if (!m.view_base.defined()) return;
  const uint32_t v = t.impl()->version();
  if (v == m.attr_version) return;
  Edge base = gradient_edge(m.view_base);
  if (!base.is_valid()) return;  // the base takes no part in autograd (yet): nothing to regenerate from
  if (m.creation_meta == CreationMeta::NoGradMode || m.creation_meta == CreationMeta::InferenceMode) {
    const bool inference = m.creation_meta == CreationMeta::InferenceMode;
    std::string who = "A view was created";
    if (m.grad_fn) {
      const std::string n = m.grad_fn->name();
      who = "Output " + std::to_string(m.output_nr) + " of " + n.substr(0, n.rfind("Backward")) +
            " is a view of a view which was created";
    }
    const char* block = inference ? "inference_mode" : "no_grad";
    SDK_CHECK(false, who, inference ? " in inference mode" : " in no_grad mode",
              " and its base or another view of its base has been modified inplace ",
              inference ? "in normal mode" : "with grad mode enabled",
              ". Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
              "moving both the view and the inplace either both inside the ", block,
              " block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be "
              "tracked).");
  }
  m.attr_version = v;
  m.grad_fn = make_view_rebase_node(t, m.view_base, std::move(base));
  m.output_nr = 0;
  m.requires_grad_ = true;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = maybe_autograd_meta(t);
  if (m == nullptr) return {};
  refresh_view_history(t, *m);
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad_) return {};
  return {grad_accumulator(t), 0};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = autograd_meta_of(t);
  SDK_CHECK(!m.grad_fn, "grad_accumulator: the tensor is not a leaf");
  // Note [Autograd nodes]: one AccumulateGrad per leaf while alive. Recording
  // on two threads at once can race here; the meta is not shared state PyTorch
  // protects either (it takes a per-tensor mutex), so we take a global one.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Node> node = m.grad_accumulator.lock();
  if (!node) {
    node = std::make_shared<AccumulateGrad>(t);
    m.grad_accumulator = node;
  }
  return node;
}

void set_history(const Tensor& t, std::shared_ptr<Node> fn, uint32_t nr) {
  AutogradMeta& m = autograd_meta_of(t);
  if (fn) m.requires_grad_ = true;
  m.creation_meta = CreationMeta::Default;  // a recorded result (Note [View creation meta])
  m.grad_fn = std::move(fn);
  m.output_nr = nr;
  m.attr_version = t.impl()->version();  // Note [View grad_fn regeneration]
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* m = maybe_autograd_meta(t);
  if (m == nullptr) return nullptr;
  refresh_view_history(t, *m);
  return m->grad_fn;
}

uint32_t output_nr(const Tensor& t) {
  AutogradMeta* m = maybe_autograd_meta(t);
  return m != nullptr ? m->output_nr : 0;
}

// As PyTorch's tensor_data(): a new TensorImpl over the same storage (so the same version counter),
// no dispatch and no view tracking. A __torch_dispatch__ subclass (Python key) keeps a dispatched
// alias (as_strided), whose handler makes an alias of its own class.
Tensor detached_alias(const Tensor& t) {
  if (!t.key_set().has(DispatchKey::Python)) {
    auto impl = make_intrusive<TensorImpl>(t.storage(), t.dtype(), t.device(), t.key_set());
    impl->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    impl->set_inference(t.impl()->is_inference());
    return Tensor(std::move(impl));
  }
  ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
  return ops::as_strided(t, t.sizes(), t.strides(), t.storage_offset());
}

std::string tensor_type_name(const Tensor& t) {
  const char* name = "Tensor";
  switch (t.dtype()) {
    case ScalarType::Float32: name = "FloatTensor"; break;
    case ScalarType::Float64: name = "DoubleTensor"; break;
    case ScalarType::Float16: name = "HalfTensor"; break;
    case ScalarType::BFloat16: name = "BFloat16Tensor"; break;
    case ScalarType::Int64: name = "LongTensor"; break;
    case ScalarType::Int32: name = "IntTensor"; break;
    case ScalarType::Bool: name = "BoolTensor"; break;
    default: name = scalar_type_name(t.dtype());
  }
  std::ostringstream os;
  os << "backend_sdk.";
  if (!t.is_cpu()) os << t.device().type << ".";
  os << name << " [";
  for (int64_t i = 0; i < t.dim(); ++i) os << (i ? ", " : "") << t.size(i);
  os << "]";
  return os.str();
}

// Note [Inference tensors cannot be saved]: as PyTorch's SavedVariable, an inference tensor (made under
// inference_mode) is refused where autograd would save it (x * i with x requiring grad), before the forward
// runs; ops that save nothing (x + i) record as usual. backend_sdk/autograd/_graph_api.py's saved_version
// gives the same message on the Python path.
const char* const kInferenceSavedMessage =
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.";

SavedVariable::SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr)
    : version_(t.defined() ? t.impl()->version() : 0), output_nr_(output_nr), is_output_(is_output), saved_(true) {
  SDK_CHECK(!t.defined() || !t.impl()->is_inference(), kInferenceSavedMessage);
  data_ = is_output && t.defined() ? detached_alias(t) : t;
}

void SavedVariable::reset() {
  data_ = Tensor();
  saved_ = false;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner) const {
  SDK_CHECK(saved_, kSecondBackwardMessage);
  if (!data_.defined()) return data_;
  const uint32_t now = data_.impl()->version();
  if (now != version_) {
    std::shared_ptr<Node> fn = is_output_ ? owner : grad_fn(data_);
    const uint32_t nr = is_output_ ? output_nr_ : output_nr(data_);
    std::ostringstream where;
    if (fn) where << ", which is output " << nr << " of " << fn->name() << ",";
    SDK_CHECK(false, "one of the variables needed for gradient computation has been modified by an inplace "
              "operation: [", tensor_type_name(data_), "]", where.str(), " is at version ", now,
              "; expected version ", version_, " instead. Hint: the tensor was changed in place after it was "
              "saved for backward (e.g. by x.add_(...) or an out= operation); clone it before modifying it.");
  }
  if (is_output_ && owner && is_grad_enabled()) {
    Tensor t = detached_alias(data_);  // create_graph: the formula's use of the output is recorded
    set_history(t, owner, output_nr_);
    return t;
  }
  return data_;
}

}  // namespace sdk::autograd
