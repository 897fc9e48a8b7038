"""The autograd graph (nodes and edges) and the engine that runs backward.

Per-tensor autograd state lives in two places: the C++ requires-grad flag
(Note [Autograd fallback fast path], csrc/backend_sdk/ops/detail/Autograd.h), set on leaves that
require grad and on every recorded output, and Python attributes of the
tensor's wrapper (class defaults on backend_sdk.Tensor, instance values in its
__dict__): ``_ag_fn`` and ``_ag_nr`` (grad_fn and which of its outputs this
tensor is), ``_ag_grad`` (.grad), ``_ag_acc`` (weak reference to a leaf's
AccumulateGrad node), ``_ag_retains``, ``_ag_hooks`` and ``_ag_base`` (the base
of a view).
"""
from __future__ import annotations

import heapq
import itertools
import weakref
from typing import Any, Callable, Iterable, Sequence

from .. import _C
from . import _graph_api
from ._graph_api import GradientEdge, get_gradient_edge, increment_version, register_multi_grad_hook  # noqa: F401

__all__ = ["Node", "AccumulateGrad", "run_backward", "validate_output", "check_hook_result"]

_sequence = itertools.count()

_SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


class Node:
    """A backward function of the graph: receives one gradient per forward output and returns one per edge.

    ``next_functions`` is a tuple of ``(node, output_nr)`` pairs, one per differentiable input
    (``(None, 0)`` for an input that does not require grad), as in PyTorch.
    """

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_retains", "_hooks", "__weakref__", "__dict__")

    def __init__(self, next_functions: Sequence[tuple[Any, int]] = ()) -> None:
        self.next_functions: tuple[tuple[Any, int], ...] = tuple(next_functions)
        self._seq = next(_sequence)
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

    def __call__(self, *grads: Any) -> Any:
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


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: adds the gradient it receives into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self.variable = variable

    def name(self) -> str:
        return "backend_sdk::autograd::AccumulateGrad"

    def apply(self, grads: list[Any]) -> list[Any]:
        return []


def accumulate_node(t: Any) -> AccumulateGrad:
    """The AccumulateGrad node of leaf t (one per tensor while it is referenced)."""
    ref = t._ag_acc
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._ag_acc = weakref.ref(node)
    return node


def edge_of(t: Any) -> tuple[Any, int]:
    """The graph edge a gradient for tensor t flows along: (grad_fn, output_nr), or the leaf's accumulator."""
    fn = t._ag_fn
    if fn is not None:
        return (fn, t._ag_nr)
    if _C._requires_grad_flag(t):
        return (accumulate_node(t), 0)
    return (None, 0)


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
            for h in list(hooks):
                if buf[nr] is None:
                    continue
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
    hooks = var.__dict__.get("_ag_hooks")
    if hooks:
        for h in list(hooks):
            g = check_hook_result(g, h(g), h)
    return g


def _accumulate_into_leaf(node: AccumulateGrad, g: Any, create_graph: bool) -> None:
    var = node.variable
    g = _leaf_tensor_hooks(var, g)
    if not create_graph:
        g = _detach(g)
    old = var._ag_grad
    if old is None:
        if not create_graph:
            g = g.clone()  # .grad never aliases a tensor the caller holds
        var._ag_grad = g
    else:
        var._ag_grad = old + g


def run_backward(
    roots: Sequence[tuple[Node, int]],
    grads: Sequence[Any],
    keep_graph: bool,
    create_graph: bool,
    capture: Sequence[tuple[Node, int]] | None = None,
) -> list[Any] | None:
    """Runs the graph from roots (each (node, output_nr) with its gradient).

    Without ``capture`` gradients accumulate into leaves' ``.grad`` (Tensor.backward).
    With it, the gradients reaching those edges are returned and nothing is
    accumulated (autograd.grad); only nodes on a path to a captured edge run.
    """
    # Dependencies: how many edges point at each node, from everything reachable.
    deps: dict[Node, int] = {}
    seen: set[Node] = set()
    order: list[Node] = []
    stack = [n for n, _ in roots]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        order.append(n)
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    stack.append(nxt)
    needed: set[Node] | None = None
    captured: dict[tuple[Node, int], Any] = {}
    if capture is not None:
        targets = {n for n, _ in capture}
        needed = set()
        # Reverse topological: process in order of decreasing sequence number reversed.
        for n in sorted(order, key=lambda x: x._seq):
            if n in targets or any(nxt in needed for nxt, _ in n.next_functions if nxt is not None):
                needed.add(n)
        capture_set = set(capture)
    buffers: dict[Node, list[Any]] = {}
    for (n, nr), g in zip(roots, grads):
        buf = buffers.get(n)
        if buf is None:
            buf = buffers[n] = [None] * n.num_outputs
        buf[nr] = _add(buf[nr], g)
    ready: list[tuple[int, int, Node]] = []
    counter = itertools.count()
    for n in list(buffers):
        if deps.get(n, 0) == 0:
            heapq.heappush(ready, (-n._seq, next(counter), n))
    prev_mode = _C._is_grad_enabled()
    _C._set_grad_enabled(create_graph)
    task = _graph_api._begin_task(seen, needed)  # Note [Current graph task]
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            buf = buffers.pop(node, None) or [None] * node.num_outputs
            _apply_tensor_hooks(node, buf)
            if capture is not None and buf and buf[0] is not None and (node, 0) in capture_set \
                    and isinstance(node, AccumulateGrad):
                buf[0] = _leaf_tensor_hooks(node.variable, buf[0])  # a captured leaf's hooks run too (PyTorch)
            if capture is not None:
                for nr in range(len(buf)):
                    if (node, nr) in capture_set:
                        captured[(node, nr)] = _add(captured.get((node, nr)), buf[nr])
            if isinstance(node, AccumulateGrad):
                if capture is None and buf[0] is not None:
                    _accumulate_into_leaf(node, buf[0], create_graph)
                continue
            run = needed is None or any(nxt in needed for nxt, _ in node.next_functions if nxt is not None)
            if run and any(g is not None for g in buf):
                outs = node.apply(buf) if not _graph_api._anomaly[0] else _graph_api._apply_with_anomaly(node, buf)
                if node._hooks:
                    for h in list(node._hooks):
                        r = h(tuple(outs), tuple(buf))
                        if r is not None:
                            outs = _check_node_hook_result(tuple(outs), r, h)
            else:
                outs = [None] * len(node.next_functions)
            if not keep_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is None:
                    continue
                if g is not None:
                    b = buffers.get(nxt)
                    if b is None:
                        b = buffers[nxt] = [None] * nxt.num_outputs
                    b[nr] = _add(b[nr], g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt._seq, next(counter), nxt))
    finally:
        _graph_api._end_task(task)
        _C._set_grad_enabled(prev_mode)
    if capture is None:
        return None
    return [captured.get(c) for c in capture]


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
