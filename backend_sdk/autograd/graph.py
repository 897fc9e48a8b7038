"""The autograd graph (nodes and edges) and the engine that runs backward.

Per-tensor autograd state lives in two places. The C++ AutogradMeta
(csrc/backend_sdk/ops/detail/Autograd.h) keeps the requires-grad flag, grad_fn, output_nr and
.grad (``Tensor._ag_fn`` / ``_ag_nr`` / ``_ag_grad`` read them) and a leaf's AccumulateGrad node
(Note [Autograd nodes], csrc/backend_sdk/autograd/detail/Node.h); ``_C._set_history`` writes
the history. Python attributes of the tensor's wrapper (instance values in its __dict__) keep
``_ag_retains``, ``_ag_hooks`` (a leaf's hooks; ``_C._set_leaf_py_hooks`` marks the leaf) and
``_ag_base`` (the base of a view recorded in Python). The engine is C++ (``run_backward``).

Nodes are C++ nodes (operators with a formula in csrc/backend_sdk/autograd/derivatives.def,
AccumulateGrad; Python type ``_C._CppNode``) or Python ``Node`` subclasses (Python formulas,
in-place operators' nodes, autograd.Function, CopySlices), which the C++ graph holds through a PyNode.
Both have the same Python interface (``name()``, ``next_functions``, ``apply``, ``release``,
``register_hook``, ``register_prehook``).
"""
from __future__ import annotations

import abc
import sys
from typing import Any, Callable, Iterable, Sequence

from .. import _C
from . import _graph_api
from ._graph_api import GradientEdge, get_gradient_edge, increment_version, register_multi_grad_hook  # noqa: F401

__all__ = ["Node", "AccumulateGrad", "run_backward", "validate_output", "check_hook_result"]


_SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


class Node(metaclass=abc.ABCMeta):
    """A backward function of the graph: receives one gradient per forward output and returns one per edge.

    ``next_functions`` is a tuple of ``(node, output_nr)`` pairs, one per differentiable input
    (``(None, 0)`` for an input that does not require grad), as in PyTorch.
    """

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_retains", "_hooks", "__weakref__", "__dict__")

    def __init__(self, next_functions: Sequence[tuple[Any, int]] = ()) -> None:
        self.next_functions: tuple[tuple[Any, int], ...] = tuple(next_functions)
        self._seq = _C._next_sequence_nr()
        self._pre_hooks: dict[int, list[Callable]] | None = None  # tensor hooks by output number
        self._retains: dict[int, Any] | None = None  # output number -> weakref of a tensor with retain_grad
        self._hooks: list[Callable] | None = None
        if _graph_api._anomaly[0]:
            _graph_api._remember_forward(self)  # Note [Anomaly mode]

    def name(self) -> str:
        """The node's class name, e.g. ``AddBackward0``."""
        return type(self).__name__

    @property
    def num_outputs(self) -> int:
        """Number of forward outputs (gradients this node receives)."""
        return 1

    def apply(self, grads: list[Any]) -> list[Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def release(self) -> None:
        """Frees saved tensors (after a backward without retain_graph)."""

    def register_hook(self, fn: Callable) -> Any:
        """fn(grad_inputs, grad_outputs) runs after this node; may return replacement grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable) -> Any:
        """fn(grad_outputs) runs before this node (after the tensor hooks of its outputs) and only when the
        node runs; it may return replacement grad_outputs (a tuple, one per gradient)."""
        prehooks = self._prehooks
        if prehooks is None:
            prehooks = []
            self._prehooks = prehooks
        return _RemovableHandle(prehooks, fn)._add()

    @property
    def _prehooks(self) -> list[Callable] | None:
        return self.__dict__.get("_prehooks_list")

    @_prehooks.setter
    def _prehooks(self, value: list[Callable] | None) -> None:
        self.__dict__["_prehooks_list"] = value

    def __call__(self, *grads: Any) -> Any:
        if len(grads) != self.num_outputs:
            raise TypeError(f"expected {self.num_outputs} arguments, got {len(grads)} instead")
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


class _RemovableHandle:
    """Returned by register_hook; ``remove()`` unregisters."""

    def __init__(self, container: list, fn: Callable) -> None:
        self._container, self._fn = container, fn

    def _add(self) -> "_RemovableHandle":
        self._container.append(self._fn)
        return self

    def remove(self) -> None:
        try:
            self._container.remove(self._fn)
        except ValueError:
            pass


# The node at a leaf that requires grad (C++): adds the gradient it receives into ``variable.grad``.
AccumulateGrad = _C.AccumulateGrad  # type(node).__name__ is PyTorch's "AccumulateGrad"
Node.register(_C._CppNode)
# C++ nodes share the Python interface of Node (Note [Node Python state] keeps their hook state).
for _name in ("register_hook", "register_prehook", "__call__", "__repr__"):
    setattr(_C._CppNode, _name, getattr(Node, _name))
del _name


def accumulate_node(t: Any) -> Any:
    """The AccumulateGrad node of leaf t (one per tensor while a graph or caller holds it)."""
    return _C._grad_accumulator(t)


def edge_of(t: Any) -> tuple[Any, int]:
    """The graph edge a gradient for tensor t flows along: (grad_fn, output_nr), or the leaf's accumulator."""
    return _C._gradient_edge(t)


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                      "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                      "bool": "Bool"}


def _type_string(t: Any) -> str:
    """PyTorch's ``Tensor.toString()``: backend and scalar type, e.g. ``CPUFloatType``."""
    dtype = str(t.dtype).replace("backend_sdk.", "")
    backend = "CPU" if t.device.type == "cpu" else t.device.type
    return f"{backend}{_SCALAR_TYPE_NAMES.get(dtype, dtype)}Type"


def _hook_name(hook: Any) -> str:
    name = getattr(hook, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def check_hook_result(original: Any, result: Any, hook: Any) -> Any:
    """The gradient a tensor hook leaves: ``original`` if it returned None, else ``result`` checked as
    PyTorch's hooks check it (python_hook.cpp): a tensor of the same type (backend and dtype) and size."""
    from .._tensor import Tensor

    if result is None:
        return original
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if result.dtype != original.dtype or result.device.type != original.device.type:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was "
                           f"{_type_string(original)} got {_type_string(result)})")
    if tuple(result.shape) != tuple(original.shape):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    return result


def _check_node_hook_result(previous: tuple, result: Any, hook: Any) -> list[Any]:
    """A node hook's replacement gradients, checked as PyTorch checks them (a tuple, one per gradient)."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(previous):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values (got "
                           f"{len(result)}, but expected {len(previous)})")
    return [check_hook_result(p, r, hook) for p, r in zip(previous, result)]


def validate_output(node_name: str, index: int, grad: Any, meta: Any) -> Any:
    """The gradient ``grad`` a node returned for its input ``index`` (described by ``meta``: shape, dtype,
    device), made to match it as PyTorch's engine does (``validate_outputs`` in engine.cpp): a shape that
    broadcasts to the input's is sum-reduced to it (``at::sum_to``), another shape is an error; another
    dtype is cast; another device is an error, except for a 0-dim gradient, which is moved."""
    if tuple(grad.shape) != tuple(meta.shape):
        from ._formulas import sum_to

        if not _expandable_to(tuple(meta.shape), tuple(grad.shape)):
            raise RuntimeError(
                f"Function {node_name} returned an invalid gradient at index {index} - got "
                f"{list(grad.shape)} but expected shape compatible with {list(meta.shape)}")
        grad = sum_to(grad, meta.shape)
    if grad.dtype != meta.dtype:
        grad = grad.to(dtype=meta.dtype)
    if grad.device != meta.device:
        if grad.dim() != 0:
            raise RuntimeError(f"Function {node_name} returned an invalid gradient at index {index} - "
                               f"expected device {meta.device} but got {grad.device}")
        grad = grad.to(device=meta.device)
    return grad


def _expandable_to(shape: tuple, desired: tuple) -> bool:
    """``at::is_expandable_to(shape, desired)``: shape broadcasts to desired."""
    if len(shape) > len(desired):
        return False
    for s, d in zip(reversed(shape), reversed(desired)):
        if s != d and s != 1:
            return False
    return True


def _apply_tensor_hooks(node: Node, buf: list[Any]) -> None:
    if node._pre_hooks:
        for nr, hooks in node._pre_hooks.items():
            for h in list(hooks):  # also when no gradient reached this output: the hook sees None
                buf[nr] = check_hook_result(buf[nr], h(buf[nr]), h)
    if node._retains:
        for nr, ref in node._retains.items():
            t = ref()
            if t is not None and buf[nr] is not None:
                g = buf[nr] if _C._is_grad_enabled() else _detach(buf[nr])
                t._ag_grad = g if t._ag_grad is None else t._ag_grad + g


def _detach(t: Any) -> Any:
    from . import _detach_tensor

    return _detach_tensor(t)


def _leaf_tensor_hooks(var: Any, g: Any) -> Any:
    """Runs a leaf's tensor hooks on its gradient (each may replace it)."""
    hooks = var.__dict__.get("_ag_hooks")
    if hooks:
        for h in list(hooks):
            g = check_hook_result(g, h(g), h)
    return g


def _accumulate_into_leaf(node: Any, g: Any, create_graph: bool) -> None:
    """The engine's callback for a leaf with Python hooks or an AccumulateGrad with Python state."""
    accumulate_with_hooks(node, g, create_graph, tensor_hooks=True)


def accumulate_with_hooks(node: Any, g: Any, create_graph: bool, tensor_hooks: bool) -> None:
    """What PyTorch's AccumulateGrad does at a leaf, hooks in their order (Note [Autograd engine]):
    the leaf's tensor hooks (unless the caller ran them), the node's prehooks, the accumulation, the
    leaf's post-accumulate-grad hooks, the node's hooks (``hook((), (grad,))``)."""
    var = node.variable
    received = g
    if tensor_hooks:
        g = _leaf_tensor_hooks(var, g)
    if node._prehooks:
        g = _accumulate_prehooks(node._prehooks, g)
    # The first gradient becomes .grad itself when nothing else refers to it (PyTorch steals it). The
    # C++ count also sees the engine's and the bindings' references, so Python decides from its own:
    # ``g`` and getrefcount's argument; while g is the gradient received, also ``received``, the
    # engine callback's local and the bindings' argument.
    sole = sys.getrefcount(g) <= (5 if g is received else 2)  # not inside the call: its argument counts
    _C._accumulate_into_leaf(var, g, create_graph, sole)
    post = var.__dict__.get("_ag_post_acc_hooks")
    if post:
        for h in list(post):
            if h(var) is not None:
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
    hooks = node._hooks
    if hooks:
        for h in list(hooks):
            h((), (g,))


def _run_node_hooks(node: Any, outs: list[Any], buf: list[Any]) -> list[Any]:
    """The engine's callback after a node with Python state ran: its hooks may replace the outputs."""
    hooks = node._hooks
    if hooks:
        for h in list(hooks):
            r = h(tuple(outs), tuple(buf))
            if r is not None:
                outs = _check_node_hook_result(tuple(outs), r, h)
    return list(outs)


def _accumulate_prehooks(prehooks: list[Callable], g: Any) -> Any:
    """An AccumulateGrad's prehooks, each may replace the gradient (returns the last one)."""
    for h in list(prehooks):
        r = h((g,))
        if r is not None:
            (g,) = _check_node_hook_result((g,), r, h)
    return g


def _run_node_prehooks(node: Any, buf: list[Any]) -> None:
    """The engine's callback before a node with Python state runs: its prehooks may replace the gradients."""
    prehooks = node._prehooks
    if prehooks:
        for h in list(prehooks):
            r = h(tuple(buf))
            if r is not None:
                buf[:] = _check_node_hook_result(tuple(buf), r, h)


_C._set_engine_callbacks(_apply_tensor_hooks, _run_node_hooks, _accumulate_into_leaf, _run_node_prehooks)


def run_backward(
    roots: Sequence[tuple[Any, int]],
    grads: Sequence[Any],
    keep_graph: bool,
    create_graph: bool,
    capture: Sequence[tuple[Any, int]] | None = None,
    accumulate_targets: bool = False,
) -> list[Any] | None:
    """Runs the graph from roots (each (node, output_nr) with its gradient) in the C++ engine
    (Note [Autograd engine], csrc/backend_sdk/autograd/detail/Engine.h).

    Without ``capture`` gradients accumulate into leaves' ``.grad`` (Tensor.backward).
    With it, the gradients reaching those edges are returned and nothing is
    accumulated (autograd.grad); only nodes on a path to a captured edge run.
    With ``accumulate_targets`` too (backward(inputs=...)) the captured nodes run
    themselves: a leaf's AccumulateGrad accumulates into ``.grad`` with its hooks.
    """
    task = _graph_api._begin_task_of(roots, capture) if _graph_api._track_tasks[0] else None
    try:
        captured = _C._run_backward(list(roots), list(grads), keep_graph, create_graph,
                                    None if capture is None else list(capture), accumulate_targets)
        if capture is not None and not accumulate_targets:  # a captured leaf's tensor hooks run too
            captured = [_leaf_tensor_hooks(n.variable, g) if g is not None and isinstance(n, AccumulateGrad) else g
                        for (n, _), g in zip(capture, captured)]
        return captured
    finally:
        if task is not None:
            _graph_api._end_task(task)


def iter_tensors(values: Iterable[Any]) -> Iterable[Any]:
    """The tensors among values, looking one level into lists and tuples."""
    from .._tensor import Tensor

    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for e in v:
                if isinstance(e, Tensor):
                    yield e
