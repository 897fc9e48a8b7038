"""The graph API of ``autograd.graph`` that sits on top of the engine, as ``torch.autograd.graph``:
``GradientEdge`` / ``get_gradient_edge``, ``increment_version``, ``register_multi_grad_hook``, and the
engine's view of the backward call running now (``_current_graph_task_id``, ``_will_engine_execute_node``)
that multi-grad hooks and anomaly mode need.

Note [Current graph task]
~~~~~~~~~~~~~~~~~~~~~~~~~
As PyTorch's engine, each backward call (``backward`` or ``grad``) is a graph task with an id. The engine
announces it here when it has found the nodes it will run (``_begin_task``) and withdraws it when done
(``_end_task``); tasks nest (a hook may call backward), so they form a per-thread stack. Hooks ask which
task they run in and whether a node will run in it; a multi-grad hook in mode "all" waits for exactly the
tensors whose node will run.
"""
from __future__ import annotations

import itertools
import threading
import traceback
import warnings
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from .. import _C

__all__ = ["GradientEdge", "get_gradient_edge", "increment_version", "register_multi_grad_hook"]


class GradientEdge(NamedTuple):
    """An edge of the autograd graph: the gradient flowing into output ``output_nr`` of ``node``.

    ``autograd.grad(loss, get_gradient_edge(x))`` equals ``autograd.grad(loss, x)``; an edge also works
    as an output of ``grad`` / ``backward`` (the gradient flowing along it is the seed).
    """

    node: Any
    output_nr: int
    #: keeps the graph alive when ``node`` alone does not (as PyTorch's); unused by backend_sdk,
    #: whose nodes own their inputs' nodes
    ownership_token: Any = None


def get_gradient_edge(tensor: Any) -> GradientEdge:
    """The edge along which the gradient of ``tensor`` is computed (its grad_fn, or a leaf's AccumulateGrad)."""
    from .graph import edge_of

    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor: Any | Iterable[Any]) -> None:
    """Bumps the version counter of ``tensor`` (or of each tensor of an iterable): for writes autograd did
    not see (a kernel writing through ``data_ptr``), so that saved copies of it are detected as stale.
    Inference tensors have no version counter and are skipped, as in PyTorch."""
    tensors = (tensor,) if isinstance(tensor, _C.TensorBase) else tuple(tensor)
    for t in tensors:
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"increment_version(): expected a Tensor or an iterable of Tensors, got "
                            f"{type(t).__name__}")
        if not _C._is_inference(t):
            _C._bump_version(t)


# ---- the running graph task (Note [Current graph task]) ----------------------------------------------
_task_ids = itertools.count(1)
_tls = threading.local()


class _Task:
    __slots__ = ("id", "nodes", "needed")

    def __init__(self, nodes: set, needed: set | None) -> None:
        self.id = next(_task_ids)
        self.nodes, self.needed = nodes, needed


def _begin_task(nodes: set, needed: set | None) -> _Task:
    """Called by the engine: the nodes reachable from the roots, and (for grad) the ones it will run."""
    task = _Task(nodes, needed)
    stack = getattr(_tls, "tasks", None)
    if stack is None:
        stack = _tls.tasks = []
    stack.append(task)
    return task


# Tracking costs a walk of the graph per backward call, so the engine does it only once something asks
# (a multi-grad hook was registered, or _will_engine_execute_node / _current_graph_task_id was called
# from a hook: those switch it on for the backward calls that follow).
_track_tasks = [False]


def _begin_task_of(roots: Any, capture: Any) -> _Task:
    """The task of a backward call from ``roots`` (``capture``: the edges autograd.grad returns): every node
    reachable from the roots, and for grad the ones on a path to a captured edge (the ones the engine runs)."""
    seen: set = set()
    stack = [n for n, _ in roots if n is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(nxt for nxt, _ in n.next_functions if nxt is not None and nxt not in seen)
    needed = None
    if capture is not None:
        # A node runs when a captured edge is reachable from it: decided after its next functions (an
        # iterative post-order; sequence numbers do not order AccumulateGrad, whose number is the largest).
        targets = {n for n, _ in capture}
        needed, done = set(), set()
        for root in {n for n, _ in roots if n is not None}:
            stack = [(root, False)]
            while stack:
                n, expanded = stack.pop()
                if n in done:
                    continue
                nexts = [nxt for nxt, _ in n.next_functions if nxt is not None]
                if not expanded:
                    stack.append((n, True))
                    stack.extend((nxt, False) for nxt in nexts if nxt not in done)
                    continue
                done.add(n)
                if n in targets or any(nxt in needed for nxt in nexts):
                    needed.add(n)
    return _begin_task(seen, needed)


def _end_task(task: _Task) -> None:
    stack = _tls.tasks
    if stack and stack[-1] is task:
        stack.pop()


def _live_task_ids() -> set[int]:
    return {t.id for t in getattr(_tls, "tasks", ())}


def _current_task() -> _Task | None:
    stack = getattr(_tls, "tasks", None)
    return stack[-1] if stack else None


def _current_graph_task_id() -> int:
    """The id of the backward call running on this thread, -1 outside backward (PyTorch's)."""
    task = _current_task()
    return task.id if task is not None else -1


def _will_engine_execute_node(node: Any) -> bool:
    """Whether the running backward call will run ``node`` (PyTorch's ``torch._C._will_engine_execute_node``)."""
    from .graph import Node

    task = _current_task()
    if task is None:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    if not isinstance(node, Node):
        raise RuntimeError("_will_engine_execute_node expects an grad_fn, node, or GradientEdge")
    if node not in task.nodes:
        return False
    return task.needed is None or node in task.needed


# ---- multi-grad hooks ----------------------------------------------------------------------------------
class _MultiHandle:
    """The handle register_multi_grad_hook returns: ``remove()`` removes every per-tensor hook."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _node_of(tensor: Any) -> Any:
    from .graph import edge_of

    return edge_of(tensor)[0]


def register_multi_grad_hook(tensors: Sequence[Any], fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """Registers ``fn`` on several tensors at once.

    mode "all": ``fn(grads)`` runs once per backward call, after the gradient of every tensor whose node
    that call runs has been computed; ``grads`` has one entry per tensor, None for those the call did not
    reach. mode "any": ``fn(grad)`` runs once per backward call, with the first of the gradients computed.
    """
    supported = ("all", "any")
    if mode not in supported:
        raise ValueError(f"Expects mode to be one of {supported} but got {mode}")
    _track_tasks[0] = True  # Note [Current graph task]: the engine announces its tasks from now on
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "all":
        nodes = [_node_of(t) for t in tensors]
        pending: dict[int, list] = {}  # task id -> [calls expected, calls seen, grads]

        def make_hook(idx: int) -> Callable:
            def hook(grad: Any) -> None:
                tid = _current_graph_task_id()
                with lock:
                    state = pending.get(tid)
                    if state is None:
                        for stale in set(pending) - _live_task_ids():  # calls that ended short of a hook
                            del pending[stale]
                        expected = sum(1 for n in nodes if n is not None and _will_engine_execute_node(n))
                        state = pending[tid] = [expected, 0, [None] * len(tensors)]
                    state[2][idx] = grad
                    state[1] += 1
                    done = state[1] == state[0]
                    if done:
                        del pending[tid]
                if done:
                    fn(state[2])

            return hook

        return _MultiHandle(tuple(t.register_hook(make_hook(i)) for i, t in enumerate(tensors)))

    ran: set[int] = set()

    def any_hook(grad: Any) -> None:
        tid = _current_graph_task_id()
        with lock:
            if tid in ran:
                return
            ran.intersection_update(_live_task_ids())  # forget finished calls
            ran.add(tid)
        fn(grad)

    return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))


# ---- anomaly mode (the engine's side; the public switches are in grad_mode) ----------------------------
# Note [Anomaly mode]: as PyTorch's, a process-wide switch. While it is on, every node remembers the
# Python traceback of the forward call that created it (Node.__init__ calls _remember_forward); the engine
# runs nodes through _apply_with_anomaly, which, when a node raises, warns with that traceback before the
# error propagates, and with check_nan refuses a node output containing NaN with PyTorch's message.
_anomaly = [False, True]  # [enabled, check_nan]


def _floating() -> frozenset:
    from ._record import _floating as floating

    return floating()


def _remember_forward(node: Any) -> None:
    node.__dict__["_anomaly_trace"] = "".join(traceback.format_stack()[:-2])


def _warn_forward_trace(node: Any) -> None:
    trace = node.__dict__.get("_anomaly_trace")
    if trace is None:
        warnings.warn("Error detected in {}. No forward pass information available. Enable detect anomaly "
                      "during forward pass for more information.".format(node.name()), UserWarning, stacklevel=3)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{trace}",
                  UserWarning, stacklevel=3)


def _apply_with_anomaly(node: Any, grads: list) -> list:
    """node.apply(grads) under anomaly mode (Note [Anomaly mode])."""
    try:
        outs = node.apply(grads)
    except BaseException:
        _warn_forward_trace(node)
        raise
    if _anomaly[1]:
        for i, g in enumerate(outs):
            if isinstance(g, _C.TensorBase) and g.dtype in _floating() and bool((g != g).any()):  # NaN != NaN
                _warn_forward_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
    return outs


# ---- GradientEdge as an output or input of backward / grad ----------------------------------------------
def _edge_meta(edge: GradientEdge) -> Any:
    """Shape, dtype and device of the gradient that flows along edge (PyTorch's ``node._input_metadata``):
    a FormulaNode's output metadata, the leaf of an AccumulateGrad, a Function node's outputs."""
    from .._size import Size
    from ._record import TensorMeta
    from .graph import AccumulateGrad

    node = edge.node
    if isinstance(node, AccumulateGrad):
        return TensorMeta(node.variable)
    cpp_metas = getattr(node, "_input_metadata", None)  # a C++ node (Note [Autograd nodes])
    if cpp_metas is not None and edge.output_nr < len(cpp_metas):
        meta = TensorMeta.__new__(TensorMeta)
        shape, meta.dtype, meta.device = cpp_metas[edge.output_nr]
        meta.shape = Size(shape)
        return meta
    metas = getattr(node, "_out_meta", None)
    if metas is None or edge.output_nr >= len(metas) or metas[edge.output_nr] is None:
        raise RuntimeError(f"autograd: no output metadata for output {edge.output_nr} of {node.name()}")
    return metas[edge.output_nr]


class _EdgeOutput:
    """A GradientEdge standing in for an output tensor in grad/backward's checks (shape, dtype, numel)."""

    __slots__ = ("edge", "meta", "shape", "dtype", "device")

    def __init__(self, edge: GradientEdge) -> None:
        self.edge, self.meta = edge, _edge_meta(edge)
        self.shape, self.dtype, self.device = self.meta.shape, self.meta.dtype, self.meta.device

    def numel(self) -> int:
        return self.meta.numel()


def _as_output(x: Any) -> Any:
    """x, or an _EdgeOutput for a GradientEdge (so that the root and grad checks treat both alike)."""
    return _EdgeOutput(x) if isinstance(x, GradientEdge) else x


def _batched_grad(grad_fn: Callable, outputs: tuple, inputs: tuple, grad_outputs: Any, retain_graph: bool | None,
                  create_graph: bool, allow_unused: bool | None, materialize_grads: bool) -> tuple:
    """autograd.grad with is_grads_batched=True: the first dimension of every grad_output is a batch
    dimension; one backward per batch entry (PyTorch vmaps over it; the values are the same), results
    stacked along a new first dimension."""
    from .. import stack, zeros

    grads = [grad_outputs] if isinstance(grad_outputs, _C.TensorBase) else list(grad_outputs or [None] * len(outputs))
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_tensors should have the same length as tensors, got {len(grads)} and "
                           f"{len(outputs)}")
    batch = None
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(out, GradientEdge):
            raise RuntimeError("Batched grads are not supported with GradientEdge")
        if g is None:
            continue
        if tuple(g.shape[1:]) != tuple(out.shape) or g.dim() == 0:
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of "
                f"corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape} "
                f"and output[{i}] has a shape of {out.shape}. If you only want some tensors in `grad_output` to "
                "be considered batched, consider using vmap.")
        batch = g.shape[0] if batch is None else batch
    if batch is None:
        raise RuntimeError("autograd.grad: is_grads_batched=True needs at least one grad_output tensor")
    keep = create_graph if retain_graph is None else retain_graph
    per_entry = []
    for b in range(batch):
        last = b == batch - 1
        per_entry.append(grad_fn(outputs, inputs, [g[b] if g is not None else None for g in grads],
                                 retain_graph=keep or not last, create_graph=create_graph, allow_unused=True))
    result = []
    for k, inp in enumerate(inputs):
        column = [entry[k] for entry in per_entry]
        if all(g is None for g in column):
            if materialize_grads:
                result.append(zeros([batch] + list(inp.shape), dtype=inp.dtype, device=inp.device))
                continue
            if not (allow_unused or materialize_grads):
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            result.append(None)
            continue
        result.append(stack([g if g is not None else zeros(list(inp.shape), dtype=inp.dtype, device=inp.device)
                             for g in column], 0))
    return tuple(result)


# ---- inference tensors entering autograd (Note [Inference tensors]) ------------------------------------
_INFERENCE_SAVE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`."
)


def saved_version(t: Any) -> int:
    """The version of a tensor being saved for backward; PyTorch's error for an inference tensor."""
    if _C._is_inference(t):
        raise RuntimeError(_INFERENCE_SAVE)
    return _C._version(t)
