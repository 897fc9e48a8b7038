"""``autograd.Function``: user-defined operations with their own backward, as ``torch.autograd.Function``.

Both styles work: ``forward(ctx, *args)``, and PyTorch 2's ``forward(*args)``
with a ``setup_context(ctx, inputs, output)`` staticmethod.
"""
from __future__ import annotations

import functools
import inspect
import warnings
import weakref
from typing import Any, Callable

from .. import _C
from ._record import SavedTensor, TensorMeta, _floating, make_node
from ._graph_api import _INFERENCE_SAVE
from .graph import _SECOND_BACKWARD, edge_of, validate_output

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


class FunctionCtx:
    """The ``ctx`` of a Function: saves tensors and flags between forward and backward."""

    def __init__(self) -> None:
        self._saved: list[Any] | None = None
        self._released = False
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self.materialize_grads = True
        # With False, backward receives None rather than zeros for outputs marked non-differentiable
        # (PyTorch's private flag, which torch.library's register_autograd sets).
        self._materialize_non_diff_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        self.saved_for_forward: tuple = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Saves tensors (or None) for backward; read them back with ``saved_tensors``."""
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
            if t is not None and _C._is_inference(t):
                raise RuntimeError(_INFERENCE_SAVE)
        self._to_save = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Saves tensors for ``jvp`` (forward-mode AD, which backend_sdk does not run: kept for the API)."""
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should save "
                                     "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    @property
    def saved_variables(self) -> tuple[Any, ...]:
        """Deprecated name of ``saved_tensors``."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The tensors given to save_for_backward (RuntimeError if one was modified in place since)."""
        if self._released:
            raise RuntimeError(_SECOND_BACKWARD)
        if self._saved is None:
            return tuple(getattr(self, "_to_save", ()))
        return tuple(s.unpack() if s is not None else None for s in self._saved)

    def mark_dirty(self, *tensors: Any) -> None:
        """Declares inputs that forward modified in place (they must be returned as outputs); each gets the
        Function's node as its history, and its version counts the write, as in PyTorch."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Declares outputs that have no gradient."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs whose gradient did not flow."""
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    """Gives each Function subclass its backward node class name (``MyFnBackward``)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        super().__init__(name, bases, attrs)
        cls._backward_name = f"{name}Backward"


_LEAF_DIRTY = "a leaf Variable that requires grad has been used in an in-place operation."


_signatures: "weakref.WeakKeyDictionary[Callable, inspect.Signature]" = weakref.WeakKeyDictionary()


def _bind(fn: Callable, skip_ctx: bool, args: tuple, kwargs: dict, defaults: bool) -> tuple:
    """args and kwargs as forward's positional inputs (keyword tensors are inputs like positional ones)."""
    sig = _signatures.get(fn)
    if sig is None:
        sig = _signatures[fn] = inspect.signature(fn)
    if not kwargs and len(args) + skip_ctx == len(sig.parameters) and all(
            p.kind is p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values()):
        return args  # every parameter given by position: nothing to bind (the common call)
    try:
        bound = sig.bind(None, *args, **kwargs) if skip_ctx else sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{getattr(fn, '__qualname__', fn)}(): {e}") from None
    if defaults:
        bound.apply_defaults()
    if bound.kwargs:  # keyword-only parameters have no input position
        raise TypeError(f"{getattr(fn, '__qualname__', fn)}(): autograd.Function.apply cannot pass keyword-only "
                        f"arguments {sorted(bound.kwargs)}")
    return tuple(bound.args[1:] if skip_ctx else bound.args)


class Function(metaclass=_FunctionMeta):
    """Base of custom autograd functions. Subclass it with staticmethods forward and backward and
    call ``MyFn.apply(*args)``."""

    #: As PyTorch's: whether func.vmap may derive a batching rule from forward (it may not by default).
    generate_vmap_rule = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
            "autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it "
            "with backward mode AD."
        )

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap "
                                  "staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def _uses_setup_context(cls) -> bool:
        return cls.setup_context is not Function.setup_context  # type: ignore[comparison-overlap]

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs forward (with grad mode off) and, if an input requires grad, records a backward node.

        Inputs passed by keyword are inputs like positional ones (bound to forward's signature): they are
        tracked, counted in ``needs_input_grad`` and get a gradient; with ``setup_context``, its ``inputs``
        are all of forward's parameters, defaults included, as in PyTorch."""
        ctx = FunctionCtx()
        uses_setup = cls._uses_setup_context()
        call_args, call_kwargs = args, kwargs
        if uses_setup:
            args = call_args = _bind(cls.forward, False, args, kwargs, defaults=True)
            call_kwargs = {}
        elif kwargs:
            args = _bind(cls.forward, True, args, kwargs, defaults=False)
        needs = tuple(_is_tensor(a) and _C._requires_grad_flag(a) for a in args)
        ctx.needs_input_grad = needs
        record = _C._is_grad_enabled() and any(needs)
        prev = _C._is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            if uses_setup:
                output = cls.forward(*call_args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *call_args, **call_kwargs)
        finally:
            _C._set_grad_enabled(prev)
        if not record:
            return output
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        dirty_ids = {id(t) for t in ctx._dirty}
        for t in ctx._dirty:
            if _C._requires_grad_flag(t) and t._ag_fn is None:
                raise RuntimeError(_LEAF_DIRTY)
            _C._bump_version(t)  # mark_dirty counts the write, as PyTorch's
        edges = [edge_of(a) if needs[i] else (None, 0) for i, a in enumerate(args)]
        input_ids = {id(a) for a in args if _is_tensor(a)}
        nondiff = {id(t) for t in ctx._non_differentiable}
        out_meta = [TensorMeta(o) if _is_tensor(o) else None for o in outs]
        backward_fn = cls.backward if cls.backward is not Function.backward else cls.vjp
        in_meta = [TensorMeta(a) if _is_tensor(a) else None for a in args]

        def run(grads: list[Any]) -> list[Any]:
            # A released node runs again (PyTorch's PyNode too): only reading ctx.saved_tensors is refused.
            if ctx.materialize_grads:
                from .. import zeros

                grads = [g if g is not None or m is None or (i in nondiff_nrs and not ctx._materialize_non_diff_grads)
                         else zeros(list(m.shape), dtype=m.dtype, device=m.device)
                         for i, (g, m) in enumerate(zip(grads, out_meta))]
            res = backward_fn(ctx, *grads)
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) < len(args) or any(r is not None for r in res[len(args):]):
                raise RuntimeError(
                    f"function {cls._backward_name} returned an incorrect number of gradients (expected "
                    f"{len(args)}, got {len(res)})"
                )
            res = list(res[: len(args)])
            # Note [Function gradient checks]: as PyTorch's PyNode::apply, then its engine's
            # validate_outputs: a gradient for a non-Tensor input must be None, a gradient must be a
            # Tensor or None, and it must fit its input (shape up to broadcasting, device; dtype is cast).
            # Lists of tensors (Tensor[] arguments of custom operators) are not checked here.
            for i, (g, m) in enumerate(zip(res, in_meta)):
                if m is None:
                    if g is not None and not isinstance(args[i], (list, tuple)):
                        raise RuntimeError(
                            f"function {cls._backward_name} returned a gradient different than None at "
                            f"position {i + 1}, but the corresponding forward input was not a Variable")
                    res[i] = None
                    continue
                if g is None:
                    continue
                if not _is_tensor(g):
                    raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
                if not needs[i]:
                    res[i] = None
                    continue
                res[i] = validate_output(cls._backward_name, i, g, m)
            return res

        def release() -> None:
            ctx._released = True
            ctx._saved = None

        nondiff_nrs = {i for i, o in enumerate(outs) if id(o) in nondiff}
        node = make_node(cls._backward_name, edges, run, len(outs), release)
        node._out_meta = out_meta  # the gradients it receives (GradientEdge checks, _graph_api._edge_meta)
        result = []
        for i, o in enumerate(outs):
            if not _is_tensor(o):
                result.append(o)
                continue
            if id(o) in input_ids and id(o) not in dirty_ids:
                from . import _detach_tensor

                o = _detach_tensor(o)  # an input returned as is: a new alias gets the node
            if id(o) in nondiff or o.dtype not in _floating():
                result.append(o)
                continue
            _C._set_requires_grad_flag(o, True)
            _C._set_history(o, node, i)
            result.append(o)
        to_save = getattr(ctx, "_to_save", None)
        if to_save is not None:
            ctx._saved = [SavedTensor(t) if t is not None else None for t in to_save]
            del ctx._to_save
        return tuple(result) if is_tuple else result[0]


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


def once_differentiable(fn: Callable) -> Callable:
    """Marks a backward as not differentiable twice: it runs with grad mode off, and under create_graph its
    gradients (when an input of backward requires grad) hang from an ``Error`` node whose backward raises
    "trying to differentiate twice a function that was marked with @once_differentiable", as PyTorch's
    (so ``x.grad.grad_fn`` exists and double backward fails clearly rather than silently giving zero)."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        prev = _C._is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            outputs = fn(ctx, *args)
        finally:
            _C._set_grad_enabled(prev)
        if not prev or not any(_is_tensor(a) and _C._requires_grad_flag(a) for a in args):
            return outputs
        return _delayed_error(outputs)

    return wrapper


def _delayed_error(outputs: Any) -> Any:
    """Each tensor of outputs, detached and given an ``Error`` node whose edges are fresh leaves (PyTorch's
    DelayedError over "fake requires-grad" aliases): the node exists only to refuse being differentiated."""
    from . import _detach_tensor

    is_tuple = isinstance(outputs, tuple)
    outs = list(outputs) if is_tuple else [outputs]
    aliases = []
    for o in outs:
        if _is_tensor(o) and o.dtype in _floating():
            a = _detach_tensor(o)
            _C._set_requires_grad_flag(a, True)
            aliases.append(a)
        else:
            aliases.append(None)
    edges = [edge_of(a) if a is not None else (None, 0) for a in aliases]

    def refuse(grads: list[Any]) -> list[Any]:
        raise RuntimeError(_TWICE)

    node = make_node("Error", edges, refuse, len(outs))
    result = []
    for i, (o, a) in enumerate(zip(outs, aliases)):
        if a is None:
            result.append(o)
            continue
        r = _detach_tensor(a)
        _C._set_requires_grad_flag(r, True)
        _C._set_history(r, node, i)
        result.append(r)
    return tuple(result) if is_tuple else result[0]
