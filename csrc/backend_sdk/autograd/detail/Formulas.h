// The derivative formula table (derivatives.def) and the node recorded for it.
//
// Note [Derivative formula table]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's tools/autograd/derivatives.yaml, one entry per operator
// overload names the backward node (PyTorch's name: MulBackward0, SumBackward1
// for sum.dim_IntList, ...), the arguments it saves, and one formula per
// differentiable input, written against the C++ operator API (sdk::ops).
// derivatives.def is an X-macro file rather than YAML plus a generator: the
// formulas are C++ expressions either way, and an X-macro needs no build step,
// is checked by the compiler where it is used, and lets one generic
// FormulaNode serve every entry (PyTorch generates one class per entry; our
// node reads its saved arguments by name, a handful of string compares per
// backward, to keep the table one line per formula). The table is bound to
// operator definitions once (formula_for), by schema record, and read without
// a lock afterwards.
//
// Recording (Fallback.cpp, record_with_formula): the Autograd fallback finds
// the operator's entry, collects one edge per Tensor argument (an invalid edge
// where the argument does not require grad or is not floating point), saves
// the arguments the entry names (SavedVariable: version checked), runs the
// operator below Autograd with grad mode off, and makes each floating-point
// output output i of the node. An entry's operator is functional, except that
// it may write optional buffers it takes no gradient for (native_batch_norm's
// Tensor(a!)? running_mean / running_var: its kernel bumps their versions; the
// formula reads them only where the forward did not write them, in eval mode;
// a written argument is saved after the forward ran, since a backend may bump
// its version even where it writes nothing).
// A formula with one backward operator for several inputs
// (convolution_backward's output_mask) is GRADS3(input, weight, bias, expr):
// one call if any of them needs a gradient, each needed one taken from its
// result (Note [Backward operators under create_graph], Formulas.cpp).
//
// Note [Tensor lists in the formula table]
// A Tensor[] argument (cat's and stack's tensors) has one edge per element,
// after the edges of the Tensor / Tensor? arguments; its formula is
// GRAD_LIST(tensors, expr), expr giving one gradient per element (undefined
// where none), METAS(tensors) the elements' shape/dtype/device. A saved
// Tensor[] or Tensor?[] argument (index.Tensor's and index_put's indices) is
// saved per element (version checked) and read as TLIST(indices), a list of
// optional tensors. A Tensor[] return (unbind, split, chunk) is one node
// input per element (G_(i), GRADS_ALL: every element's gradient, zeros where
// none flowed); the elements are views of one node, marked
// CreationMeta::MultiOutputNode, so an in-place write into one is refused
// with PyTorch's message (a node cannot be rebased for one of its outputs).
//
// Note [In-place entries in the formula table]
// The in-place samplers (uniform_, normal_, bernoulli_.float, random_, ...)
// have no functional form in aten, so their entries name the in-place
// overload. The fallback never records them (an in-place operator needs the
// leaf and view checks and CopySlices of the Python hook); the hook runs
// their formula through run_formula_for, as for the functional twins of other
// in-place variants.
//
// Note [Operators that are not differentiable]
// SDK_NOT_DIFFERENTIABLE(op) entries (rand_like, new_zeros, detach, ...: what
// PyTorch does not differentiate, its outputs are fresh samples or constants)
// run below Autograd and record nothing: their outputs do not require grad.
//
// Note [Differentiable outputs]
// SDK_DIFFERENTIABLE_OUTPUTS(op, n): only the first n outputs of the entry's
// operator take part in autograd, as PyTorch's output_differentiability (which
// torchgen infers where a formula reads `grad` alone): native_layer_norm's and
// native_batch_norm's statistics, nll_loss_forward's total_weight. The others
// do not require grad; saved, they are plain tensors (no history under
// create_graph), so a formula treats them as the functions of its inputs they
// are (the norm backwards' double backward differentiates through them).
// Operators without an entry keep the Python
// recording hook (backend_sdk/autograd/_record.py) and its Python formulas.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <backend_sdk/autograd/detail/Node.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/IValue.h>

namespace sdk::autograd {

struct FormulaContext;
struct FormulaNode;

struct Formula {
  const char* op;         // "aten::mul.Tensor"
  const char* node_name;  // "MulBackward0"
  const char* saves;      // "self, other" (and "result" for the outputs)
  void (*fn)(FormulaContext&);
};

// An entry bound to the operator's definition.
struct FormulaInfo {
  const Formula* formula = nullptr;
  std::vector<std::string> names;     // argument names, in schema order
  std::vector<uint16_t> tensor_args;  // positions of Tensor / Tensor? arguments (one edge each)
  std::vector<uint16_t> list_args;    // positions of Tensor[] arguments (one edge per element, after those)
  std::vector<bool> is_list;          // per argument: a Tensor[] or Tensor?[] (saved per element)
  std::vector<bool> saved;            // per argument: saved for backward
  std::vector<bool> written;          // per argument: written by the operator (empty: none is)
  bool saves_result = false;
  size_t num_returns = 1;
  bool returns_list = false;  // a single Tensor[] return (Note [Tensor lists in the formula table])
  bool inplace = false;       // Note [In-place entries in the formula table]: never recorded by the fallback
  size_t differentiable_outputs = SIZE_MAX;  // Note [Differentiable outputs]
};

// The entry for an operator overload by name ("aten::mul.Tensor"), or null.
SDK_API const FormulaInfo* formula_for_name(const std::string& qualname);

// The entry for the operator's current definition, or null (in-place entries included).
const FormulaInfo* formula_for(const OperatorHandle& op);

// Whether the operator's current definition is in the table as not differentiable
// (Note [Operators that are not differentiable]).
bool not_differentiable(const OperatorHandle& op);
// The overloads the table declares not differentiable (those bound to an operator).
SDK_API std::vector<std::string> not_differentiable_names();

struct FormulaNode final : Node {
  FormulaNode(const FormulaInfo* info, edge_list edges) : Node(std::move(edges)), info(info) {}
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return info->formula->node_name; }
  void release_variables() override;

  const FormulaInfo* info;
  std::vector<IValue> args;               // non-tensor arguments; None where a tensor was
  std::vector<SavedVariable> saved;       // per argument (only the saved ones are set)
  std::vector<InputMetadata> arg_meta;    // per argument: metadata of tensor arguments
  std::vector<SavedVariable> results;     // saved outputs
  std::vector<bool> needs_mask;           // per tensor argument, when run without edges (run_formula_for)
  // Note [Tensor lists in the formula table]: per Tensor[] argument (list_args order), the first edge
  // of its elements and their metadata; per saved Tensor[] / Tensor?[] argument, its elements (an
  // undefined one where the element was None).
  std::vector<uint32_t> list_begin;
  std::vector<std::vector<InputMetadata>> list_meta;
  std::vector<std::vector<SavedVariable>> saved_lists;
  bool released = false;
};

// What a formula body sees (the helpers of derivatives.def).
struct FormulaContext {
  FormulaNode& node;
  variable_list& grads;
  std::vector<Tensor> out;  // per argument: the gradient computed for it
  std::vector<std::vector<Tensor>> list_out;  // per Tensor[] argument (list_args order): one per element

  int index(const char* name) const;
  Tensor tensor(const char* name) const;  // a saved tensor argument
  Scalar scalar(const char* name) const;
  bool flag(const char* name) const;
  IntArrayRef sizes(const char* name) const;  // shape of a tensor argument
  ScalarType dtype(const char* name) const;
  Tensor result(size_t i = 0) const;
  Tensor grad(size_t i) const;  // gradient of output i; zeros where none flowed
  std::vector<Tensor> all_grads() const;  // every output's gradient (grad(i) for each)
  bool has_grad(size_t i) const { return i < grads.size() && grads[i].defined(); }
  int64_t integer(const char* name) const;
  std::vector<int64_t> ints(const char* name) const;
  bool needs(const char* name) const;  // for a Tensor[] argument: some element needs a gradient
  // A saved Tensor[] / Tensor?[] argument (nullopt for a None element).
  std::vector<std::optional<Tensor>> tensor_list(const char* name) const;
  // The metadata of a Tensor[] argument's elements.
  const std::vector<InputMetadata>& list_metas(const char* name) const;
  void set_list(const char* name, std::vector<Tensor> gs) { list_out[list_slot(name)] = std::move(gs); }
  size_t list_slot(const char* name) const;
  void set(const char* name, Tensor g) { out[static_cast<size_t>(index(name))] = std::move(g); }
  // Sets the gradient of `name` if it needs one and g is defined (GRADS3).
  void set_if(const char* name, Tensor g) {
    if (g.defined() && needs(name)) set(name, std::move(g));
  }
  const IValue& arg(const char* name) const { return node.args[static_cast<size_t>(index(name))]; }
};

// Note [View grad_fn regeneration] (Node.cpp): PyTorch's AsStridedBackward0 for `view` of `base`, whose
// gradient flows to `base_edge` (the base's current history); it keeps geometry only.
std::shared_ptr<Node> make_view_rebase_node(const Tensor& view, const Tensor& base, Edge base_edge);

// A Tensor[] / Tensor?[] argument saved per element (Note [Tensor lists in the formula table]).
std::vector<SavedVariable> save_list(const IValue& v);

// Runs the formula of `info` outside a graph (the in-place path of the Python hook): `args` per
// argument in schema order (tensors: the saved ones; undefined where not saved), `meta` per
// argument (shape/dtype/device of tensor arguments), one gradient per output (undefined where
// none flowed), the outputs if the entry saves them, and per tensor argument whether it needs a
// gradient. Returns per tensor argument its gradient (undefined where none), reduced to the
// argument's shape and dtype.
SDK_API variable_list run_formula_for(const FormulaInfo& info, std::vector<IValue> args, std::vector<InputMetadata> meta,
                              variable_list grads, variable_list results, std::vector<bool> needs);

}  // namespace sdk::autograd
