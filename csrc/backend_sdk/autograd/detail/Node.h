// (Internal for now: the graph state it reads lives in ops/detail/Autograd.h.)
// The autograd graph in C++: Node, Edge, AccumulateGrad, SavedVariable, and
// the graph state of a tensor (grad_fn, output_nr, its AccumulateGrad).
//
// Note [Autograd nodes]
// ~~~~~~~~~~~~~~~~~~~~~
// (Destruction is iterative: Note [Iterative graph destruction], Node.cpp.)
// As in PyTorch (torch/csrc/autograd/function.h), a Node is a backward
// function: it receives one gradient per output of the forward operator that
// created it (its "inputs", described by `input_metadata`: shape, dtype,
// device) and returns one gradient per edge in `next_edges` (one per
// differentiable input of the forward). An Edge is (node, input_nr): which of
// that node's gradients the value feeds. Nodes are owned by shared_ptr: a
// non-leaf tensor's AutogradMeta owns its grad_fn, each node owns the nodes
// its edges point to, so a graph lives exactly as long as a tensor that can
// reach it. A leaf that requires grad reaches the graph through its
// AccumulateGrad node, which holds the leaf (strongly); the leaf's
// AutogradMeta holds the node weakly, so there is no cycle and one
// AccumulateGrad exists per leaf while some graph uses it.
//
// `sequence_nr` is taken from one process-wide counter when a node is created
// (forward order); the engine runs ready nodes highest sequence number first,
// as PyTorch's ReadyQueue does, so backward visits nodes in reverse forward
// order where dependencies allow. Nodes written in Python (formulas still in
// Python, autograd.Function) live in the same graph through a PyNode (the
// bindings, csrc/python/PyAutograd.cpp) holding the Python object.
//
// `pyobj` / `py_state` (Note [Node Python state]): the Python wrapper of a C++
// node is created on demand and may die while the node lives; what Python
// code attaches to the node (tensor hooks by output number, retain_grad
// references, node hooks and prehooks) is kept in `py_state`, an owned Python
// dict the bindings create, and released through `release_py_state` (under
// the GIL) when the node dies.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <backend_sdk/ops/detail/Autograd.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::autograd {

using variable_list = std::vector<Tensor>;

struct SDK_API Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};
using edge_list = std::vector<Edge>;

// What a node knows of a tensor it does not keep: its shape, dtype and device.
struct SDK_API InputMetadata {
  std::vector<int64_t> shape;
  ScalarType dtype = ScalarType::Float32;
  Device device;
  bool defined = false;  // false: no tensor (an absent Tensor? argument, an output none flowed into)
  InputMetadata() = default;
  explicit InputMetadata(const Tensor& t)
      : shape(t.sizes().vec()), dtype(t.dtype()), device(t.device()), defined(true) {}
};

SDK_API uint64_t next_sequence_nr();

struct SDK_API Node : std::enable_shared_from_this<Node> {
  explicit Node(edge_list next_edges = {});
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node();

  // One gradient per input (undefined where none flowed) -> one per next edge.
  virtual variable_list apply(variable_list&& grads) = 0;
  virtual std::string name() const = 0;
  // Frees what the node saved for backward (a backward without retain_graph is done with it).
  virtual void release_variables() {}

  // A node written in Python (PyNode): the engine calls its hooks through the bindings.
  virtual bool is_python() const { return false; }

  uint64_t sequence_nr() const { return sequence_nr_; }
  const edge_list& next_edges() const { return next_edges_; }
  // Gradients received; PyNode (no metadata) overrides it.
  virtual size_t num_inputs() const { return input_metadata.size(); }

  std::vector<InputMetadata> input_metadata;  // one per gradient received (forward output)
  // The stream (runtime::Stream::id) current on the forward's device when the node was
  // recorded, -1 on cpu and meta: backward runs the node on it (Note [Autograd engine]).
  int64_t stream_id = -1;
  void* pyobj = nullptr;     // Note [Node Python state]: borrowed, the live wrapper
  void* py_state = nullptr;  // owned Python dict, or null
  static void (*release_py_state)(void*);

 protected:
  uint64_t sequence_nr_;
  edge_list next_edges_;
};

// The node at a leaf that requires grad: what reaches it is added into the leaf's .grad.
struct SDK_API AccumulateGrad final : Node {
  explicit AccumulateGrad(Tensor variable);
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "backend_sdk::autograd::AccumulateGrad"; }
  Tensor variable;
};

// ---- the graph state of a tensor (in its AutogradMeta) ----
// The node and output number a gradient for `t` flows to: (grad_fn, output_nr) for a
// non-leaf, (its AccumulateGrad, 0) for a leaf that requires grad, an invalid edge otherwise.
SDK_API Edge gradient_edge(const Tensor& t);
// The leaf's AccumulateGrad (created on first use; one per leaf while alive).
SDK_API std::shared_ptr<Node> grad_accumulator(const Tensor& t);
// Makes `t` output `output_nr` of `fn` (and requires grad); a null fn makes it a leaf again.
SDK_API void set_history(const Tensor& t, std::shared_ptr<Node> fn, uint32_t output_nr);
SDK_API std::shared_ptr<Node> grad_fn(const Tensor& t);
SDK_API uint32_t output_nr(const Tensor& t);

// A new tensor sharing t's storage, sizes and strides (and version counter) without autograd state.
SDK_API Tensor detached_alias(const Tensor& t);
// "backend_sdk.FloatTensor [2, 3]": how autograd's messages name a tensor (PyTorch's "torch.FloatTensor [2, 3]").
SDK_API std::string tensor_type_name(const Tensor& t);

// PyTorch's message for a graph run again after its saved tensors were freed.
SDK_API extern const char* const kSecondBackwardMessage;

// Note [Saved variables]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A tensor a node keeps for backward, with the version counter value it had
// when saved: unpack() raises PyTorch's message if the tensor was written in
// place since. A saved *output* of the node is kept as a detached alias (same
// storage and version counter, no grad_fn), since output -> node -> output
// would be a cycle; when unpacked with grad mode on (create_graph) a fresh
// alias is made output `output_nr` of the node again, so the formula's use of
// it is recorded. reset() frees it (release_variables); unpacking afterwards
// raises kSecondBackwardMessage.
class SDK_API SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output, uint32_t output_nr = 0);
  Tensor unpack(const std::shared_ptr<Node>& owner) const;
  void reset();
  bool was_saved() const { return saved_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool saved_ = false;
};

}  // namespace sdk::autograd
