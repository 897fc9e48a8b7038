// The backward engine: Note [Autograd engine] (detail/Engine.h).
#include <backend_sdk/autograd/detail/Engine.h>

#include <algorithm>
#include <optional>
#include <atomic>
#include <numeric>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/RecordFunctionExtras.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/MathFunctions.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::autograd {

namespace {

std::atomic<const EngineHooks*> g_hooks{nullptr};

struct GradModeGuard {
  explicit GradModeGuard(bool enabled) : prev(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(prev); }
  bool prev;
};

// The running backward's `needed` map (with capture only; Note [Autograd engine]), for task_needs_edge.
thread_local const std::unordered_map<Node*, bool>* t_needed = nullptr;

// Installs a backward's `needed` map for the nodes it runs; a nested backward (a node's apply may run one)
// installs its own and restores the outer one.
class NeededScope {
 public:
  explicit NeededScope(const std::unordered_map<Node*, bool>* needed) : saved_(t_needed) { t_needed = needed; }
  ~NeededScope() { t_needed = saved_; }
  NeededScope(const NeededScope&) = delete;
  NeededScope& operator=(const NeededScope&) = delete;

 private:
  const std::unordered_map<Node*, bool>* saved_;
};

bool has_py_state(const Node& n) { return n.py_state != nullptr || n.is_python(); }

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

bool expandable_to(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[shape.size() - 1 - i], d = desired[desired.size() - 1 - i];
    if (s != d && s != 1) return false;
  }
  return true;
}

Tensor to_device(const Tensor& t, Device device) {
  static const OperatorHandle op = Dispatcher::singleton().find_schema_or_throw("aten::to.device");
  Stack stack{IValue(t), IValue(device), IValue(t.dtype()), IValue(false), IValue(false), IValue()};
  op.call_boxed(&stack);
  return stack.back().to_tensor();
}

// validate_outputs (engine.cpp): the gradient `g` that `node` returned at `index`, made to match `meta`.
Tensor validate(const Node& node, size_t index, Tensor g, const InputMetadata& meta) {
  if (!g.sizes().equals(meta.shape)) {
    SDK_CHECK(expandable_to(meta.shape, g.sizes()), "Function ", node.name(), " returned an invalid gradient at index ",
              index, " - got ", shape_str(g.sizes()), " but expected shape compatible with ", shape_str(meta.shape));
    g = ops::sum_to(g, meta.shape);
  }
  if (g.dtype() != meta.dtype) g = ops::to(g, meta.dtype);
  if (g.device() != meta.device) {
    SDK_CHECK(g.dim() == 0, "Function ", node.name(), " returned an invalid gradient at index ", index,
              " - expected device ", meta.device, " but got ", g.device());
    g = to_device(g, meta.device);
  }
  return g;
}

void add_into(Tensor& slot, Tensor g) {
  slot = slot.defined() ? ops::add(slot, g) : std::move(g);
}

bool non_overlapping_and_dense(const Tensor& t) {
  const int64_t n = t.dim();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

}  // namespace

void set_engine_hooks(const EngineHooks* hooks) { g_hooks.store(hooks, std::memory_order_release); }

void accumulate_into_leaf(const Tensor& leaf, const Tensor& grad, bool create_graph, long holders) {
  AutogradMeta& m = autograd_meta_of(leaf);
  if (!m.grad.defined()) {
    if (create_graph) {
      m.grad = grad;
      return;
    }
    // A gradient nothing else references, laid out as the leaf, becomes .grad as it is (PyTorch
    // "steals" it too); the engine's buffer holds the only reference.
    const bool dense = non_overlapping_and_dense(leaf);
    if (grad.impl()->use_count() <= holders && grad.storage().use_count() == 1 && grad.storage_offset() == 0 &&
        grad.sizes().equals(leaf.sizes()) && (dense ? grad.strides().equals(leaf.strides()) : grad.is_contiguous()) &&
        grad.dtype() == leaf.dtype() && grad.device() == leaf.device() && !grad_fn(grad)) {
      m.grad = grad;
      return;
    }
    if (grad.key_set().has(DispatchKey::Python)) {
      // A __torch_dispatch__ subclass's gradient: copied by an operator its handler sees (PyTorch's
      // new_empty_strided/clone dispatch on the gradient too), so .grad keeps the subclass.
      static const auto clone = Dispatcher::singleton().find_schema_or_throw("aten::clone").typed<
          Tensor(const Tensor&, std::optional<int64_t>)>();  // MemoryFormat travels as an int
      m.grad = clone.call(grad, std::nullopt);
      return;
    }
    // The gradient layout contract: strides of the leaf when it is non-overlapping and dense.
    Tensor g = dense ? ops::empty_strided(leaf.sizes(), leaf.strides(), leaf.dtype(), leaf.device())
                                               : ops::empty(leaf.sizes(), leaf.dtype(), leaf.device());
    ops::copy_(g, grad);
    m.grad = std::move(g);
  } else if (!create_graph) {
    ops::add_(m.grad, grad);  // in place: .grad keeps its identity
  } else {
    m.grad = ops::add(m.grad, grad);
  }
}

variable_list run_backward(const edge_list& roots, const variable_list& grads, bool keep_graph, bool create_graph,
                           const edge_list& capture, bool accumulate_targets) {
  SDK_CHECK(roots.size() == grads.size(), "run_backward: ", roots.size(), " roots but ", grads.size(), " gradients");
  const EngineHooks* hooks = g_hooks.load(std::memory_order_acquire);
  GradModeGuard grad_mode(create_graph);

  // Dependencies: how many edges point at each node reachable from the roots.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> seen;  // also keeps every node alive for the run
  std::vector<Node*> stack;
  for (const Edge& r : roots) {
    SDK_CHECK(r.is_valid(), "run_backward: a root has no grad_fn");
    if (seen.emplace(r.function.get(), r.function).second) stack.push_back(r.function.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.is_valid()) continue;
      ++deps[e.function.get()];
      if (seen.emplace(e.function.get(), e.function).second) stack.push_back(e.function.get());
    }
  }

  // With capture: the nodes on a path to a captured edge (post-order over the DAG).
  std::unordered_map<Node*, bool> needed;
  std::unordered_map<Node*, bool> is_target;
  if (!capture.empty()) {
    for (const Edge& c : capture) is_target[c.function.get()] = true;
    std::vector<std::pair<Node*, size_t>> dfs;
    for (const Edge& r : roots) dfs.emplace_back(r.function.get(), 0);
    while (!dfs.empty()) {
      auto& [n, next] = dfs.back();
      if (next == 0 && needed.count(n)) {
        dfs.pop_back();
        continue;
      }
      const edge_list& edges = n->next_edges();
      while (next < edges.size() && (!edges[next].is_valid() || needed.count(edges[next].function.get()))) ++next;
      if (next < edges.size()) {
        Node* child = edges[next].function.get();
        dfs.emplace_back(child, 0);
        continue;
      }
      bool need = is_target.count(n) > 0;
      for (const Edge& e : edges) need = need || (e.is_valid() && needed[e.function.get()]);
      needed[n] = need;
      dfs.pop_back();
    }
  }

  std::unordered_map<Node*, variable_list> buffers;
  auto buffer_of = [&](Node* n) -> variable_list& {
    variable_list& b = buffers[n];
    if (b.size() < n->num_inputs()) b.resize(n->num_inputs());
    return b;
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    variable_list& b = buffer_of(roots[i].function.get());
    if (b.size() <= roots[i].input_nr) b.resize(roots[i].input_nr + 1);
    if (grads[i].defined()) add_into(b[roots[i].input_nr], grads[i]);
  }
  using Ready = std::pair<uint64_t, Node*>;
  std::priority_queue<Ready> ready;  // highest sequence number first
  for (const auto& [n, _] : buffers) {
    if (deps[n] == 0) ready.emplace(n->sequence_nr(), n);
  }
  variable_list captured(capture.size());
  std::set<int64_t> leaf_streams;  // streams that produced gradients for nodes without a stream (leaves)

  while (!ready.empty()) {
    Node* node = ready.top().second;
    ready.pop();
    variable_list buf;
    if (auto it = buffers.find(node); it != buffers.end()) {
      buf = std::move(it->second);
      buffers.erase(it);
    }
    // With capture, a node on no path to a captured edge is not evaluated at all (no hooks run there),
    // as PyTorch's exec_info skips it; its successors are not on such a path either.
    if (!capture.empty() && !needed[node]) continue;
    // PyTorch's evaluate_function event for the profiler, with the node's sequence number
    // (Note [Record function extras]); one flag load when no profiler records.
    std::optional<profiler::RecordFunctionGuard> profiled;
    if (profiler::record_function_active()) {
      profiled.emplace("autograd::engine::evaluate_function: " + node->name());
      const uint64_t seq = node->sequence_nr();
      profiler::set_current_sequence_nr(seq == UINT64_MAX ? -1 : static_cast<int64_t>(seq), false);
    }
    if (buf.size() < node->num_inputs()) buf.resize(node->num_inputs());
    // The node runs on its forward's stream (PyTorch's engine does the same).
    std::optional<runtime::StreamGuard> stream_guard;
    if (node->stream_id >= 0) stream_guard.emplace(runtime::Stream::from_id(node->stream_id));
    const bool py = hooks != nullptr && has_py_state(*node);
    if (py) hooks->pre(*node, buf);
    for (size_t i = 0; i < capture.size(); ++i) {
      if (capture[i].function.get() == node && capture[i].input_nr < buf.size() && buf[capture[i].input_nr].defined()) {
        add_into(captured[i], buf[capture[i].input_nr]);
      }
    }
    const bool runs_as_target = accumulate_targets && is_target.count(node) > 0;
    if (auto* acc = dynamic_cast<AccumulateGrad*>(node)) {
      if ((capture.empty() || runs_as_target) && !buf.empty() && buf[0].defined()) {
        const AutogradMeta* m = maybe_autograd_meta(acc->variable);
        if (hooks != nullptr && (py || (m != nullptr && m->has_py_hooks))) {
          hooks->accumulate(*acc, buf[0], create_graph);  // tensor hooks, prehooks, post-accumulate hooks, hooks
        } else {
          accumulate_into_leaf(acc->variable, buf[0], create_graph);
        }
      }
      continue;
    }
    const edge_list& edges = node->next_edges();
    bool run = capture.empty() || runs_as_target;
    for (size_t k = 0; !run && k < edges.size(); ++k) run = edges[k].is_valid() && needed[edges[k].function.get()];
    if (run && py) hooks->node_pre(*node, buf);
    bool any = std::any_of(buf.begin(), buf.end(), [](const Tensor& t) { return t.defined(); });
    variable_list outs;
    if (run && any) {
      variable_list in = buf;
      NeededScope needed_scope(capture.empty() ? nullptr : &needed);
      outs = node->apply(std::move(in));
      if (py) hooks->post(*node, outs, buf);
      SDK_CHECK(outs.size() == edges.size(), "Function ", node->name(), " returned an incorrect number of gradients "
                "(expected ", edges.size(), ", got ", outs.size(), ")");
    } else {
      outs.resize(edges.size());
    }
    if (!keep_graph) node->release_variables();
    for (size_t k = 0; k < edges.size(); ++k) {
      const Edge& e = edges[k];
      if (!e.is_valid()) continue;
      Node* next = e.function.get();
      if (outs[k].defined()) {
        Tensor g = std::move(outs[k]);
        if (node->stream_id >= 0 && next->stream_id >= 0 && next->stream_id != node->stream_id) {
          // The consumer's stream waits for the work that produced its gradient.
          runtime::Event produced;
          produced.record(runtime::Stream::from_id(node->stream_id));
          runtime::Stream::from_id(next->stream_id).wait(produced);
        } else if (node->stream_id >= 0 && next->stream_id < 0) {
          leaf_streams.insert(node->stream_id);  // into a node without a stream (a leaf): synced at the end
        }
        if (e.input_nr < next->input_metadata.size()) g = validate(*node, k, std::move(g), next->input_metadata[e.input_nr]);
        variable_list& b = buffer_of(next);
        if (b.size() <= e.input_nr) b.resize(e.input_nr + 1);
        add_into(b[e.input_nr], std::move(g));
      }
      if (--deps[next] == 0) ready.emplace(next->sequence_nr(), next);
    }
  }
  // PyTorch's leaf-stream sync: a gradient that reached a leaf (AccumulateGrad has no stream) was
  // produced on its node's stream; the caller's current stream waits for it, so using x.grad
  // after backward() on the caller's stream sees the finished values.
  for (const int64_t id : leaf_streams) {
    const runtime::Stream producer = runtime::Stream::from_id(id);
    runtime::Stream caller = runtime::current_stream(producer.device());
    if (caller.id() == id) continue;
    runtime::Event produced;
    produced.record(producer);
    caller.wait(produced);
  }
  return captured;
}

bool task_needs_edge(const Edge& e) {
  if (!e.is_valid()) return false;
  if (t_needed == nullptr) return true;
  const auto it = t_needed->find(e.function.get());
  return it != t_needed->end() && it->second;
}

}  // namespace sdk::autograd
