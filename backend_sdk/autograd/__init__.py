"""``backend_sdk.autograd``: reverse-mode automatic differentiation, as ``torch.autograd``.

Operators are recorded by the C++ autograd fallback registered at every
Autograd<Backend> key (Note [Autograd fallback fast path], csrc/backend_sdk/ops/detail/Autograd.h),
which calls into ``_record`` only when grad mode is on and a tensor argument
requires grad. Derivative formulas live in ``_formulas``; the graph and the
engine in ``graph``; ``Function`` is the custom-function API.
"""
from __future__ import annotations

import warnings

import weakref
from typing import Any, Sequence

from .. import _C
from . import _record
from ._graph_api import GradientEdge, _as_output, _batched_grad, _EdgeOutput
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_check_nan_enabled,  # noqa: F401
                        is_anomaly_enabled, is_grad_enabled, is_inference, is_inference_mode_enabled, no_grad,
                        set_anomaly_enabled, set_detect_anomaly, set_grad_enabled)
from .graph import AccumulateGrad, Node, edge_of, run_backward
from . import functional, graph  # noqa: F401,E402

__all__ = [
    "backward", "grad", "gradcheck", "gradgradcheck", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
    "set_grad_enabled", "is_grad_enabled", "Node", "AccumulateGrad", "inference_mode", "detect_anomaly",
    "set_detect_anomaly", "functional", "graph",
]


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


def gradcheck(*args: Any, **kwargs: Any) -> bool:
    """``backend_sdk.testing.gradcheck`` (also reachable here, as ``torch.autograd.gradcheck``)."""
    from ..testing import gradcheck as _gradcheck

    return _gradcheck(*args, **kwargs)


def gradgradcheck(*args: Any, **kwargs: Any) -> bool:
    """``backend_sdk.testing.gradgradcheck``."""
    from ..testing import gradgradcheck as _gradgradcheck

    return _gradgradcheck(*args, **kwargs)


def _detach_tensor(t: Any) -> Any:
    """A new tensor sharing t's storage (and version counter) with no autograd history (not a view)."""
    return _C._detach(t)


def _tensor_tuple(x: Any, what: str) -> tuple:
    if x is None:
        return ()
    if _is_tensor(x) or isinstance(x, GradientEdge):
        return (x,)
    return tuple(x)


def _make_grads(outputs: Sequence[Any], grads: Sequence[Any] | None) -> list[Any]:
    from .. import ones

    if grads is None or _is_tensor(grads):
        grads = [grads] * len(outputs) if grads is None else [grads]
    grads = list(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad_tensors should have the same length as tensors, got {len(grads)} and {len(outputs)}")
    result = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out.dtype not in _record._floating():
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {out.dtype}"
                )
            if _is_tensor(out) and getattr(type(out), "__torch_dispatch__", None) is not None:
                # PyTorch seeds with ones_like(out): a __torch_dispatch__ subclass's loss gets a seed of its
                # own type (made by operators its handler sees), so its gradients stay in the subclass.
                with no_grad():
                    g = _C._detach(out).clone().fill_(1)
            else:
                g = ones(list(out.shape), dtype=out.dtype, device=out.device)
        elif _is_tensor(g):
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a shape "
                    f"of {out.shape}."
                )
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        result.append(g)
    return result


def _roots(outputs: Sequence[Any]) -> list[tuple[Any, int]]:
    roots = []
    for i, t in enumerate(outputs):
        if isinstance(t, _EdgeOutput):
            roots.append((t.edge.node, t.edge.output_nr))
            continue
        if not _is_tensor(t):
            raise TypeError(f"element {i} of tensors is not a Tensor but {type(t).__name__}")
        node, nr = edge_of(t)
        if node is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((node, nr))
    return roots


_CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
    "after use to break the cycle and avoid the leak."
)


def backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Any = None,
) -> None:
    """Accumulates the gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``)."""
    outputs = tuple(_as_output(o) for o in _tensor_tuple(tensors, "tensors"))
    grads = _make_grads(outputs, grad_tensors if grad_tensors is None or not _is_tensor(grad_tensors)
                        else [grad_tensors])
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:  # PyTorch's engine warns when it accumulates with create_graph (once per call site here)
        warnings.warn(_CREATE_GRAPH_CYCLE, UserWarning, stacklevel=2)
    roots = _roots(outputs)
    if inputs is None:
        run_backward(roots, grads, retain_graph, create_graph)
        return
    ins = _tensor_tuple(inputs, "inputs")
    if not ins:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    capture = [tuple(t[:2]) if isinstance(t, GradientEdge) else edge_of(t) for t in ins]
    for t, (n, _) in zip(ins, capture):
        if n is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    # The captured nodes run (Note [Autograd engine]): leaves accumulate there, with their hooks; a
    # non-leaf input retains its grad first, as PyTorch's run_backward makes it.
    for t in ins:
        if not isinstance(t, GradientEdge) and t.grad_fn is not None:
            t.retain_grad()
    run_backward(roots, grads, retain_graph, create_graph, capture, accumulate_targets=True)


def grad(
    outputs: Any,
    inputs: Any,
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Any, ...]:
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated into ``.grad``)."""
    outs = _tensor_tuple(outputs, "outputs")
    ins = _tensor_tuple(inputs, "inputs")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if is_grads_batched:
        return _batched_grad(grad, outs, ins, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    outs = tuple(_as_output(o) for o in outs)
    grads = _make_grads(outs, grad_outputs if grad_outputs is None or not _is_tensor(grad_outputs)
                        else [grad_outputs])
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(outs)
    capture = []
    for t in ins:
        if isinstance(t, GradientEdge):
            capture.append(tuple(t[:2]))
            continue
        if not _is_tensor(t):
            raise TypeError(f"autograd.grad: inputs must be Tensors, got {type(t).__name__}")
        e = edge_of(t)
        if e[0] is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.append(e)
    res = run_backward(roots, grads, retain_graph, create_graph, capture) or []
    result = []
    for t, g in zip(ins, res):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                from .. import zeros

                if isinstance(t, GradientEdge):
                    raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
                g = zeros(list(t.shape), dtype=t.dtype, device=t.device).requires_grad_(create_graph)
        elif not create_graph:
            g = _detach_tensor(g)
        result.append(g)
    return tuple(result)


# ---- Tensor API -------------------------------------------------------------------------
def _install_tensor_api() -> None:
    from .._tensor import Tensor

    Tensor._ag_fn = property(_C._grad_fn, doc="grad_fn, from the C++ AutogradMeta (graph.py's docstring).")
    Tensor._ag_nr = property(_C._output_nr, doc="output_nr, from the C++ AutogradMeta.")
    Tensor._ag_grad = property(_C._grad, _C._set_grad, doc=".grad, kept in the C++ AutogradMeta.")
    Tensor._ag_retains = False
    Tensor._ag_hooks = None
    Tensor._ag_base = None

    def requires_grad_(self: Any, requires_grad: bool = True) -> Any:
        """Sets whether autograd records operations on this (leaf) tensor; returns self."""
        requires_grad = bool(requires_grad)
        if self._ag_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self.dtype not in _record._floating():
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        _C._set_requires_grad_flag(self, requires_grad)
        return self

    def _get_requires_grad(self: Any) -> bool:
        return _C._requires_grad_flag(self)

    def _set_requires_grad(self: Any, value: bool) -> None:
        requires_grad_(self, value)

    def _get_grad(self: Any) -> Any:
        if self._ag_fn is not None and not self._ag_retains:
            import warnings

            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be "
                "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._ag_grad

    def _set_grad(self: Any, value: Any) -> None:
        if value is not None:
            if not _is_tensor(value):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value.dtype != self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError("assigned grad has data of a different size")
        _C._set_grad(self, value)

    def _del_grad(self: Any) -> None:
        _C._set_grad(self, None)

    def _get_grad_fn(self: Any) -> Any:
        return self._ag_fn

    def _get_is_leaf(self: Any) -> bool:
        return self._ag_fn is None

    def _get_output_nr(self: Any) -> int:
        return self._ag_nr

    def retain_grad(self: Any) -> None:
        """Makes backward populate ``.grad`` of this non-leaf tensor."""
        if not _C._requires_grad_flag(self):
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        node = self._ag_fn
        if node is None or self._ag_retains:
            return
        if node._retains is None:
            node._retains = {}
        node._retains[self._ag_nr] = weakref.ref(self)
        self._ag_retains = True

    def _get_retains_grad(self: Any) -> bool:
        return bool(self._ag_retains)

    def register_hook(self: Any, hook: Any) -> Any:
        """hook(grad) runs when the gradient of this tensor is computed; it may return a replacement."""
        if not _C._requires_grad_flag(self):
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .graph import _RemovableHandle

        node = self._ag_fn
        if node is None:
            if self._ag_hooks is None:
                self._ag_hooks = []
                _C._set_leaf_py_hooks(self, True)  # the engine runs them through Python
            return _RemovableHandle(self._ag_hooks, hook)._add()
        if node._pre_hooks is None:
            node._pre_hooks = {}
        hooks = node._pre_hooks.setdefault(self._ag_nr, [])
        return _RemovableHandle(hooks, hook)._add()

    def register_post_accumulate_grad_hook(self: Any, hook: Any) -> Any:
        """hook(tensor) runs after backward accumulated a gradient into this leaf's ``.grad``; it returns
        None (an optimizer step per parameter, as PyTorch's)."""
        if not _C._requires_grad_flag(self):
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._ag_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        from .graph import _RemovableHandle

        hooks = self.__dict__.get("_ag_post_acc_hooks")
        if hooks is None:
            hooks = self.__dict__["_ag_post_acc_hooks"] = []
            _C._set_leaf_py_hooks(self, True)  # the engine accumulates this leaf through Python
        return _RemovableHandle(hooks, hook)._add()

    def tensor_backward(self: Any, gradient: Any = None, retain_graph: bool | None = None,
                        create_graph: bool = False, inputs: Any = None) -> None:
        """Computes the gradient of this tensor with respect to the graph leaves (see autograd.backward)."""
        backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self: Any) -> Any:
        """A tensor sharing this one's data, detached from the graph (requires_grad=False)."""
        return _detach_tensor(self)

    def detach_(self: Any) -> Any:
        """Detaches this tensor from the graph in place; returns self."""
        if self._ag_base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        _C._set_history(self, None, 0)
        _C._set_requires_grad_flag(self, False)
        return self

    def _get_data(self: Any) -> Any:
        return _detach_tensor(self)

    def _set_data(self: Any, new: Any) -> None:
        from .._tensor import Tensor as _Tensor

        if not isinstance(new, _Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(new).__name__}")
        if new.device != self.device or new.dtype != self.dtype:
            # PyTorch allows another dtype here (shallow_copy_from); our TensorImpl keeps its dtype.
            raise RuntimeError(
                f"Attempted to call `variable.set_data(tensor)`, but `variable` ({self.dtype}, {self.device}) and "
                f"`tensor` ({new.dtype}, {new.device}) have incompatible tensor type.")
        _C._sync_metadata(self, new)  # self takes new's storage, sizes, strides and offset; keeps its autograd state

    def _refuse_deletion(message: str) -> Any:
        def deleter(self: Any) -> None:
            raise RuntimeError(message)

        return deleter

    def _set_backward_hooks(self: Any, hooks: Any) -> None:
        # PyTorch's hook dict; the engine runs the hooks it holds at assignment (a snapshot).
        self.__dict__["_ag_hooks_dict"] = hooks
        if not _C._requires_grad_flag(self):
            return
        fns = list(hooks.values()) if hooks else []
        node = self._ag_fn
        if node is None:
            self._ag_hooks = fns
            _C._set_leaf_py_hooks(self, True)
        else:
            if node._pre_hooks is None:
                node._pre_hooks = {}
            node._pre_hooks[self._ag_nr] = fns

    def _get_backward_hooks(self: Any) -> Any:
        if "_ag_hooks_dict" in self.__dict__:
            return self.__dict__["_ag_hooks_dict"]
        node = self._ag_fn
        hooks = self._ag_hooks if node is None else (node._pre_hooks or {}).get(self._ag_nr)
        if not hooks:
            return None
        import collections

        return collections.OrderedDict(enumerate(hooks))

    def _get_base(self: Any) -> Any:
        base = self._ag_base
        return base if base is not None else _C._view_base(self)

    def _is_view(self: Any) -> bool:
        """True if this tensor is a view of another (``_base``), as autograd tracks views."""
        return _get_base(self) is not None

    Tensor._base = property(_get_base, doc="The tensor this one is a view of (its root base), or None.")
    Tensor._is_view = _is_view
    Tensor.requires_grad_ = requires_grad_
    Tensor.requires_grad = property(_get_requires_grad, _set_requires_grad,
                                    _refuse_deletion("requires_grad must be a bool"),
                                    doc="True if gradients are computed for this tensor.")
    Tensor.grad = property(_get_grad, _set_grad, _del_grad, doc="The gradient accumulated by backward(), or None.")
    Tensor.grad_fn = property(_get_grad_fn, doc="The node that created this tensor (None for leaves).")
    Tensor.is_leaf = property(_get_is_leaf, doc="True if this tensor was not created by a recorded operation.")
    Tensor.output_nr = property(_get_output_nr, doc="Which output of grad_fn this tensor is.")
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(_get_retains_grad, doc="True if backward() populates .grad of this non-leaf.")
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.backward = tensor_backward
    Tensor.detach = detach
    Tensor.detach_ = detach_
    Tensor.data = property(_get_data, _set_data, _refuse_deletion("Deleting tensor data is not allowed. Delete tensor "
                                                                  "instead!"),
                           doc="This tensor detached from the graph; assigning a tensor makes this one share its "
                               "memory and shape.")
    Tensor._grad_fn = property(_get_grad_fn, None,
                               _refuse_deletion("Deletion of _grad_fn not allowed. Detach tensor instead!"))
    Tensor._backward_hooks = property(_get_backward_hooks, _set_backward_hooks,
                                      _refuse_deletion("Deletion of _backwards_hooks not allowed!"),
                                      doc="The tensor hooks registered with register_hook, by order, or None.")


def _install() -> None:
    _install_tensor_api()
    _record.install()


_install()
from . import profiler  # noqa: E402,F401  (backend_sdk.autograd.profiler, as torch.autograd.profiler)
