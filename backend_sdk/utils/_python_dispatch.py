"""``__torch_dispatch__`` modes and wrapper-subclass helpers, as ``torch.utils._python_dispatch``.

A ``TorchDispatchMode`` sees every operator call below autograd while it is active
(``with mode:``); a Tensor subclass with ``__torch_dispatch__`` made by
``Tensor._make_wrapper_subclass`` sees every call that has one of its instances as an
argument. How calls reach them, their order, and the error when all of them decline:
Note [Python dispatch] (backend_sdk/_python_dispatch_impl.py); docs/python_dispatch.md.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .. import _C
from .. import _python_dispatch_impl as _impl
from .._tensor import Tensor

__all__ = [
    "TorchDispatchMode",
    "return_and_correct_aliasing",
    "is_traceable_wrapper_subclass",
    "is_traceable_wrapper_subclass_type",
    "transform_subclass",
]


class TorchDispatchMode:
    """A context manager whose ``__torch_dispatch__(func, types, args=(), kwargs=None)`` runs every operator
    called while it is active, as PyTorch's.

    ``func`` is the ``OpOverload`` (``func.overloadpacket``, ``func._schema``, ``func.name()``), ``types``
    the tensor subclasses with ``__torch_dispatch__`` among the arguments. The handler runs with this mode
    popped, so ``func(*args, **(kwargs or {}))`` inside it goes to the next mode (or the tensors' own
    handlers, or the backend). Modes nest: the innermost sees a call first. Subclasses override
    ``__torch_dispatch__``; returning ``NotImplemented`` passes the call on to the subclasses' handlers.
    """

    def __init__(self, _dispatch_key: Any = None) -> None:
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): per-key (pre-dispatch) modes are not "
                                      "supported; the mode runs at the Python key")

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        """Runs ``func`` (an operator overload) on ``args``/``kwargs``; subclasses must override it."""
        raise NotImplementedError()

    def __enter__(self) -> "TorchDispatchMode":
        _impl._push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _impl._pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> "TorchDispatchMode":
        """Deprecated in PyTorch: returns a new mode (enter it with ``with``)."""
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        """False: user modes (PyTorch's infra modes, proxy/fake, return True)."""
        return False


def _get_current_dispatch_mode() -> TorchDispatchMode | None:
    """This thread's innermost active user TorchDispatchMode, else its infra mode (an active FakeTensorMode),
    else None (Note [Infra modes], backend_sdk/_python_dispatch_impl.py)."""
    stack = _impl._mode_stack()
    return stack[-1] if stack else _impl._infra_mode()


def _get_current_dispatch_mode_stack() -> list[TorchDispatchMode]:
    """This thread's active modes in the order they run last to first: the infra mode (if any), then the
    user modes outermost first (a copy)."""
    infra = _impl._infra_mode()
    return ([infra] if infra is not None else []) + list(_impl._mode_stack())


def _push_mode(mode: TorchDispatchMode) -> None:
    """Makes mode the innermost active mode (what ``__enter__`` does); an infra mode (FakeTensorMode) goes into
    the infra slot below the user modes instead (Note [Infra modes])."""
    if mode.is_infra_mode():
        _impl._set_infra_mode(mode)
    else:
        _impl._push_mode(mode)


def _pop_mode() -> TorchDispatchMode:
    """Removes and returns the innermost active user mode, or the infra mode when no user mode is left."""
    return _impl._pop_mode()


_pop_mode_temporarily = _impl._pop_mode_temporarily


def _len_torch_dispatch_stack() -> int:
    """How many modes are active on this thread (the infra mode included)."""
    return len(_impl._mode_stack()) + (_impl._infra_mode() is not None)


def is_traceable_wrapper_subclass(t: object) -> bool:
    """True if t is an instance of a Tensor subclass with ``__tensor_flatten__`` and ``__tensor_unflatten__``."""
    return isinstance(t, Tensor) and is_traceable_wrapper_subclass_type(type(t))


def is_traceable_wrapper_subclass_type(t: type) -> bool:
    """True if t is a Tensor subclass (not Tensor) with ``__tensor_flatten__`` and ``__tensor_unflatten__``."""
    return (isinstance(t, type) and issubclass(t, Tensor) and t is not Tensor
            and hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__"))


def transform_subclass(t: Tensor, callback: Callable[[str, Tensor], Tensor], outer_size: Any = None,
                       outer_stride: Any = None) -> Tensor:
    """A new instance of t's class whose inner tensors are ``callback(name, inner)``: flattens t with
    ``__tensor_flatten__`` and rebuilds it with ``__tensor_unflatten__`` (moving a subclass to another
    device, detaching its parts...)."""
    if not is_traceable_wrapper_subclass(t):
        raise TypeError(f"transform_subclass(): expected a traceable wrapper subclass (a Tensor subclass with "
                        f"__tensor_flatten__ and __tensor_unflatten__), got {type(t).__qualname__}")
    outer_size = tuple(t.shape) if outer_size is None else outer_size
    outer_stride = tuple(t.stride()) if outer_stride is None else outer_stride
    attrs, ctx = t.__tensor_flatten__()  # type: ignore[attr-defined]
    transformed = {attr: callback(attr, getattr(t, attr)) for attr in attrs}
    sub = type(t).__tensor_unflatten__(transformed, ctx, outer_size, outer_stride)  # type: ignore[attr-defined]
    if tuple(sub.shape) != tuple(outer_size):
        raise AssertionError(f"Expected return value from {type(t).__qualname__}__tensor_unflatten__() to have "
                             f"shape equal to {tuple(outer_size)}, but got: {tuple(sub.shape)}")
    return sub


# The in-place view operators (PyTorch's `inplace_view` tag): they change self's geometry, not its data.
_INPLACE_VIEW_OPS = frozenset({
    "aten::as_strided_", "aten::t_", "aten::transpose_", "aten::squeeze_", "aten::unsqueeze_", "aten::swapdims_",
    "aten::swapaxes_", "aten::detach_",
})


def _alias_arg(func: Any, alias: Any, args: tuple, kwargs: dict) -> Any:
    """The argument (by position or keyword) whose schema alias set holds ``alias``."""
    schema = func._schema
    found = [i for i, a in enumerate(schema.arguments)
             if a.alias_info is not None and alias in a.alias_info.before_set]
    if len(found) != 1:
        raise AssertionError("Expected exactly one argument index for the given output alias")
    i = found[0]
    arg = schema.arguments[i]
    if arg.name in kwargs:
        return kwargs[arg.name]
    if i < len(args):
        return args[i]
    return arg.default_value


def return_and_correct_aliasing(func: Any, args: tuple, kwargs: dict | None, out: Any) -> Any:
    """What a wrapper subclass's ``__torch_dispatch__`` returns so that its outputs alias as ``func``'s schema
    says, as PyTorch's: an in-place or out= operator returns the argument it wrote into (the same object), a
    view operator's wrapper output shares its input's storage (``untyped_storage()`` aliasing, not data: the
    wrappers have none), and an in-place view operator (``transpose_``, ``as_strided_``...) leaves the input
    wrapper with the geometry of ``out``."""
    kwargs = kwargs or {}
    schema = func._schema
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rets = schema.returns
    # Views: every immutable alias of an input shares that input's storage.
    for r, o in zip(rets, outs):
        if r.alias_info is None or r.alias_info.is_write:
            continue
        for alias in r.alias_info.before_set:
            src = _alias_arg(func, alias, args, kwargs)
            for item in (o if isinstance(o, (list, tuple)) else (o,)):
                if isinstance(item, Tensor) and isinstance(src, Tensor):
                    if type(item) is not type(src) and (is_traceable_wrapper_subclass(item)
                                                        or is_traceable_wrapper_subclass(src)):
                        raise AssertionError(f"Called {func.name()} with input of type {type(src)}\nand output of "
                                             f"type {type(item)}. But expected types to match.")
                    if _C._has_python_key(item) and _C._has_python_key(src) and item is not src:
                        _C._python_key_alias_storage(item, src)
    if func.name() in _INPLACE_VIEW_OPS and outs and isinstance(outs[0], Tensor):
        target = args[0] if args else kwargs.get("self")
        if isinstance(target, Tensor) and target is not outs[0] and _C._has_python_key(target):
            _C._python_key_set_geometry(target, list(outs[0].shape), list(outs[0].stride()),
                                              outs[0].storage_offset())
    # Mutable aliases: return the inputs themselves.
    if not any(r.alias_info is not None and r.alias_info.is_write for r in rets):
        return out
    fixed = []
    for r, o in zip(rets, outs):
        if r.alias_info is not None and r.alias_info.is_write:
            fixed.append(_alias_arg(func, next(iter(r.alias_info.before_set)), args, kwargs))
        else:
            fixed.append(o)
    if isinstance(out, (tuple, list)):
        return type(out)(fixed) if isinstance(out, tuple) else fixed
    return fixed[0]
