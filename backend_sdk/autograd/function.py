"""``autograd.Function``: user-defined operations with their own backward, as ``torch.autograd.Function``.

Both styles work: ``forward(ctx, *args)``, and PyTorch 2's ``forward(*args)``
with a ``setup_context(ctx, inputs, output)`` staticmethod.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .. import _C
from ._record import SavedTensor, TensorMeta, _floating, make_node
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
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Saves tensors (or None) for backward; read them back with ``saved_tensors``."""
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The tensors given to save_for_backward (RuntimeError if one was modified in place since)."""
        if self._released:
            raise RuntimeError(_SECOND_BACKWARD)
        if self._saved is None:
            return tuple(getattr(self, "_to_save", ()))
        return tuple(s.unpack() if s is not None else None for s in self._saved)

    def mark_dirty(self, *tensors: Any) -> None:
        """Declares inputs that forward modified in place (they must be returned as outputs)."""
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


class Function(metaclass=_FunctionMeta):
    """Base of custom autograd functions. Subclass it with staticmethods forward and backward and
    call ``MyFn.apply(*args)``."""

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

    @classmethod
    def _uses_setup_context(cls) -> bool:
        return cls.setup_context is not Function.setup_context  # type: ignore[comparison-overlap]

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs forward (with grad mode off) and, if an input requires grad, records a backward node."""
        ctx = FunctionCtx()
        needs = tuple(_is_tensor(a) and _C._requires_grad_flag(a) for a in args)
        ctx.needs_input_grad = needs
        record = _C._is_grad_enabled() and any(needs)
        prev = _C._is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            if cls._uses_setup_context():
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_grad_enabled(prev)
        if not record:
            return output
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        dirty_ids = {id(t) for t in ctx._dirty}
        for t in ctx._dirty:
            if _C._requires_grad_flag(t) and t._ag_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        edges = [edge_of(a) if needs[i] else (None, 0) for i, a in enumerate(args)]
        input_ids = {id(a) for a in args if _is_tensor(a)}
        nondiff = {id(t) for t in ctx._non_differentiable}
        out_meta = [TensorMeta(o) if _is_tensor(o) else None for o in outs]
        backward_fn = cls.backward if cls.backward is not Function.backward else cls.vjp
        in_meta = [TensorMeta(a) if _is_tensor(a) else None for a in args]

        def run(grads: list[Any]) -> list[Any]:
            if ctx._released:
                raise RuntimeError(_SECOND_BACKWARD)
            if ctx.materialize_grads:
                from .. import zeros

                grads = [g if g is not None or m is None else zeros(list(m.shape), dtype=m.dtype, device=m.device)
                         for g, m in zip(grads, out_meta)]
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

        node = make_node(cls._backward_name, edges, run, len(outs), release)
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


def once_differentiable(fn: Callable) -> Callable:
    """Marks a backward as not differentiable twice: it runs with grad mode off."""

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        prev = _C._is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return fn(ctx, *args)
        finally:
            _C._set_grad_enabled(prev)

    return wrapper
