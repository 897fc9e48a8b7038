// The backward engine: Note [Autograd engine].
#pragma once

#include <backend_sdk/autograd/detail/Node.h>

namespace sdk::autograd {

// Note [Autograd engine]
// ~~~~~~~~~~~~~~~~~~~~~~
// run_backward follows PyTorch's engine (torch/csrc/autograd/engine.cpp) on the
// calling thread: it counts, for every node reachable from the roots, the
// edges that point at it; a node is ready when all of them delivered (its
// input buffer sums what arrives, in grad mode = create_graph), and ready
// nodes run highest sequence number first (AccumulateGrad: UINT64_MAX, so a
// leaf's gradient is accumulated as soon as it is complete). Each gradient a
// node returns is checked against the metadata of the input it flows into,
// as validate_outputs does: a shape that broadcasts to it is summed to it,
// another shape is an error, another dtype is cast, another device is an
// error unless the gradient is 0-dim. Without retain_graph every node that
// ran frees its saved variables. With `capture` (autograd.grad) the
// gradients reaching those edges are returned, nothing is accumulated, and
// only nodes on a path to a captured edge run. With `capture` and
// `accumulate_targets` (backward(inputs=...)) the captured nodes run too, as
// PyTorch's engine marks its output edges needed when it accumulates: a leaf's
// AccumulateGrad accumulates (with its hooks), a non-leaf's grad_fn runs (its
// prehooks and hooks) but nothing past it does; the caller accumulates the
// captured non-leaf gradients into their .grad, as retain_grad would.
//
// Hook order at a node (Note [Hooks ordering] in PyTorch's engine): tensor
// hooks of its outputs, then retain_grad, then the capture, then the node's
// prehooks (only if the node runs), then the node, then its hooks. At a leaf:
// the leaf's tensor hooks, the AccumulateGrad's prehooks, the accumulation, the
// leaf's post-accumulate-grad hooks, the AccumulateGrad's hooks.
//
// What lives in Python — tensor hooks and retain_grad of a node's outputs,
// node hooks, leaf hooks, Python nodes — is reached through EngineHooks,
// installed by the bindings, only for nodes that carry Python state
// (Node::py_state, Node::is_python(), AutogradMeta::has_py_hooks); the
// bindings run the engine with the GIL released, so C++ nodes run without it.
//
// Leaves: the first gradient becomes .grad as it is when nothing else holds it and it is
// laid out as the leaf; otherwise it is copied into a new tensor laid out as the leaf
// (its strides when it is non-overlapping and dense, else contiguous: the
// gradient layout contract); later ones are added in place (`g = x.grad;
// backward; g is x.grad`), or out of place with create_graph.
struct EngineHooks {
  void (*pre)(Node& node, variable_list& grads);  // tensor hooks, retain_grad
  void (*post)(Node& node, variable_list& outputs, const variable_list& grads);  // node hooks
  void (*accumulate)(AccumulateGrad& node, const Tensor& grad, bool create_graph);  // leaf with Python hooks
  void (*node_pre)(Node& node, variable_list& grads);  // node prehooks, only when the node runs
};
SDK_API void set_engine_hooks(const EngineHooks* hooks);

// Whether the backward running on this thread needs the gradient that flows
// into `e` (PyTorch's task_should_compute_output): any valid edge, except that
// with `capture` (autograd.grad, backward(inputs=...)) only an edge into a node
// on a path to a captured edge. A formula asks it through
// FormulaContext::needs, so `autograd.grad(y, [x])` computes no gradient for
// y's other inputs and a not_implemented input raises only when its gradient
// is asked for, as in PyTorch.
SDK_API bool task_needs_edge(const Edge& e);

SDK_API variable_list run_backward(const edge_list& roots, const variable_list& grads, bool keep_graph,
                                   bool create_graph, const edge_list& capture, bool accumulate_targets = false);

// Adds `grad` into the leaf's .grad as the note says (no hooks). `holders` is how many references
// to grad's TensorImpl the caller knows of (1: the engine's buffer; the bindings add the Python
// wrapper): with no others, the first gradient is stolen rather than copied.
SDK_API void accumulate_into_leaf(const Tensor& leaf, const Tensor& grad, bool create_graph, long holders = 1);

}  // namespace sdk::autograd
