"""The Python dispatch key: ``__torch_dispatch__`` subclasses and TorchDispatchModes.

Note [Python dispatch]
~~~~~~~~~~~~~~~~~~~~~~
Two things put the ``Python`` dispatch key into a call's key set, as in PyTorch:
  * a tensor argument that carries it: an instance of a subclass made by
    ``Tensor._make_wrapper_subclass`` (see Note [Python key tensors],
    csrc/python/PyPythonDispatch.h);
  * an active ``TorchDispatchMode``: while this thread's mode stack is not empty,
    ``Python`` is in the thread's included keys (set when the stack becomes
    non-empty, cleared when it becomes empty again: the stack owns that bit).
``Python`` sits below ``Autograd`` and ``ADInplaceOrView`` in c10's order (Note
[DispatchKey layout]), so autograd records a call before the Python key sees it,
the Python key sees the aten operators that CompositeImplicitAutograd kernels
decompose into (``linear`` arrives as ``t`` + ``addmm``), and backward's operators
reach it too. ``Fake`` (ours; c10 has no such key) is directly below ``Python``:
FakeTensorMode is a mode on this stack (Note [Infra modes]), and a fake tensor
outside any FakeTensorMode reaches the Fake-key fallback only after the modes and
subclasses above it had their turn, as PyTorch's FakeTensor (a Python-key
subclass) does.

Note [Infra modes]
~~~~~~~~~~~~~~~~~~
As in PyTorch, FakeTensorMode is an *infra* mode (``is_infra_mode()`` True): it
does not go on the user stack but into one per-thread slot below every user mode,
whatever order they were entered in, so a user mode always sees a call first and
its ``func(...)`` then reaches the fake mode. Entering a second FakeTensorMode
replaces the slot until it exits (the previous one comes back).
``_get_current_dispatch_mode()`` is the innermost user mode, else the infra mode;
``_get_current_dispatch_mode_stack()`` lists the infra mode first. The Python key
is in the thread's included set while the stack is non-empty or the slot is set.

Every call that reaches the ``Python`` slot runs ``_python_key_fallback``, a boxed
fallback, which does what PyTorch's ``handle_torch_function_no_python_arg_parser``
does for ``__torch_dispatch__``:
  1. ``types``: the distinct classes of the tensor arguments that carry the Python
     key and define ``__torch_dispatch__``, a subclass before its bases, otherwise
     left to right (the *overloaded* types);
  2. if a mode is active, the innermost user mode (else the infra mode) is popped
     for the duration of its handler (``_pop_mode_temporarily``: the operators the
     handler calls go to the next mode, or to the subclasses and backends when none
     is left) and its rule from ``library.register_torch_dispatch`` runs, else its
     ``__torch_dispatch__``;
  3. if that returned ``NotImplemented`` (or no mode is active), each overloaded
     class in order: its registered rule for the operator, else its
     ``__torch_dispatch__(func, types, args, kwargs)``;
  4. if every handler returned ``NotImplemented``: PyTorch's TypeError,
     "Multiple dispatch failed for 'backend_sdk.ops.aten.add.Tensor'; all
     __torch_dispatch__ handlers returned NotImplemented: ...".
Handlers run with autograd as the dispatcher left it: a call recorded by
autograd reaches them with the Autograd keys excluded (below autograd), so what
a handler computes on the unwrapped tensors is not recorded a second time, while
grad mode is as the caller set it (``is_grad_enabled()`` is True in a training
step, False under ``no_grad``), as in PyTorch (Note [Grad mode and the Autograd
keys], csrc/backend_sdk/autograd/Fallback.cpp).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from . import _C, _formats
from ._tensor import Tensor

__all__: list[str] = []  # internal: the public names are in backend_sdk.utils._python_dispatch

_tls = threading.local()


def _mode_stack() -> list[Any]:
    try:
        return _tls.stack
    except AttributeError:
        stack = _tls.stack = []
        return stack


def _infra_mode() -> Any:
    """This thread's infra mode (the active FakeTensorMode), or None: Note [Infra modes]."""
    return getattr(_tls, "infra", None)


def _update_included() -> None:
    _C._set_python_dispatch_included(bool(_mode_stack()) or _infra_mode() is not None)


def _push_mode(mode: Any) -> None:
    stack = _mode_stack()
    if not stack and getattr(_tls, "infra", None) is None:
        _C._set_python_dispatch_included(True)
    stack.append(mode)


def _pop_mode() -> Any:
    """Pops the innermost user mode; with none left, the infra mode (PyTorch's order)."""
    stack = _mode_stack()
    if stack:
        mode = stack.pop()
    else:
        mode = getattr(_tls, "infra", None)
        if mode is None:
            raise AssertionError("Trying to pop from an empty mode stack")
        _tls.infra = None
    _update_included()
    return mode


def _set_infra_mode(mode: Any) -> Any:
    """Makes mode this thread's infra mode (None: no infra mode); returns the previous one."""
    previous = getattr(_tls, "infra", None)
    _tls.infra = mode
    _update_included()
    return previous


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[Any]:
    """Pops the innermost mode for the block (its own calls go to the modes below) and pushes it back."""
    from_stack = bool(_mode_stack())
    mode = _pop_mode()
    try:
        yield mode
    finally:
        if from_stack:
            _push_mode(mode)
        else:
            _set_infra_mode(mode)


# (qualified operator name, class) -> its rules from library.register_torch_dispatch, newest last: the newest
# one applies, and removing it (its Library destroyed) brings the previous one back.
_rules: dict[tuple[str, type], list[Callable]] = {}
_rules_lock = threading.Lock()


def _register_rule(qualname: str, cls: type, fn: Callable) -> Callable[[], None]:
    """Makes fn the rule of (operator, cls); returns the function that removes it again."""
    key = (qualname, cls)
    with _rules_lock:
        _rules.setdefault(key, []).append(fn)

    def remove() -> None:
        with _rules_lock:
            stack = _rules.get(key)
            if stack is not None and fn in stack:
                stack.remove(fn)
                if not stack:
                    del _rules[key]

    return remove


def _drop_rules(qualnames: list[str]) -> None:
    """Forgets the rules of operators whose definition went away (their Library was destroyed)."""
    names = set(qualnames)
    with _rules_lock:
        for key in [k for k in _rules if k[0] in names]:
            del _rules[key]


def _rule_for(op: Any, cls: type) -> Callable | None:
    # op.__name__ is the name library._qualname gives ('ns::name' for a default overload)
    if not _rules:
        return None
    stack = _rules.get((op.__name__, cls))
    return stack[-1] if stack else None


def _has_torch_dispatch(cls: type) -> bool:
    return getattr(cls, "__torch_dispatch__", None) is not None


def _python_name(op: Any) -> str:
    """'backend_sdk.ops.aten.add.Tensor': the name PyTorch's error gives (torch.ops.aten.add.Tensor)."""
    ns, rest = op.__name__.split("::", 1)
    if "." not in rest:
        rest += ".default"
    return f"backend_sdk.ops.{ns}.{rest}"


def _python_key_fallback(op: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
    """The Python key's handler (Note [Python dispatch] steps 2-4); ``types`` are the overloaded classes of
    step 1, found by the C++ fallback (Note [Python key fallback], csrc/python/PyPythonDispatch.cpp). Kept
    flat (no helper calls): it runs once per operator call under a mode or on a subclass."""
    mode_obj = None
    try:
        stack = _tls.stack
    except AttributeError:
        stack = _mode_stack()
    infra = getattr(_tls, "infra", None)
    if stack or infra is not None:
        # as _pop_mode_temporarily: the handler's own calls go to the modes below (or the subclasses); the
        # infra mode (FakeTensorMode) comes after every user mode (Note [Infra modes])
        from_stack = bool(stack)
        if from_stack:
            mode_obj = stack.pop()
        else:
            mode_obj = infra
            _tls.infra = None
        none_left = not stack and (infra is None or not from_stack)
        if none_left:
            _C._set_python_dispatch_included(False)
        try:
            rule = _rule_for(op, type(mode_obj)) if _rules else None
            if rule is not None:
                result = rule(mode_obj, op, types, args, kwargs)
            else:
                result = mode_obj.__torch_dispatch__(op, types, args, kwargs)
        finally:
            if none_left:
                _C._set_python_dispatch_included(True)
            if from_stack:
                stack.append(mode_obj)
            else:
                _tls.infra = mode_obj
        if result is not NotImplemented:
            return result
    overloaded = types
    for cls in overloaded:
        rule = _rule_for(op, cls) if _rules else None
        result = rule(cls, op, types, args, kwargs) if rule is not None else cls.__torch_dispatch__(
            op, types, args, kwargs)
        if result is not NotImplemented:
            return result
    if mode_obj is None and not overloaded:
        # A tensor carries the Python key but its Python class was lost (a copy made in C++):
        # its data-less storage must never reach a backend kernel.
        raise RuntimeError(
            f"{op.__name__}: a tensor argument carries the Python dispatch key but is not an instance of a class "
            f"with __torch_dispatch__ and no TorchDispatchMode is active; wrapper subclass tensors have no data "
            f"of their own (Note [Python key tensors])"
        )
    lines = [f"Multiple dispatch failed for '{_python_name(op)}'; all __torch_dispatch__ handlers returned "
             f"NotImplemented:\n\n"]
    if mode_obj is not None:
        lines.append(f"  - mode object {mode_obj!r}\n")
    for cls in overloaded:
        lines.append(f"  - tensor subclass {cls!r}\n")
    lines.append("\nFor more information, try re-running with TORCH_LOGS=not_implemented")
    raise TypeError("".join(lines))


def _make_wrapper_subclass(cls: type, size: Any, *, strides: Any = None, storage_offset: int | None = None,
                           memory_format: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
                           pin_memory: bool = False, requires_grad: bool = False,
                           dispatch_sizes_strides_policy: str | None = None, dispatch_device: bool = False,
                           dispatch_layout: bool = False, _extra_dispatch_keys: Any = None,
                           storage_size: int | None = None) -> Any:
    """An instance of ``cls`` (a Tensor subclass) with the given metadata, no data, and the Python key
    (``Tensor._make_wrapper_subclass``, Note [Python key tensors])."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"_make_wrapper_subclass(): cls must be a subclass of backend_sdk.Tensor, got {cls!r}")
    if not _has_torch_dispatch(cls):
        raise TypeError(f"_make_wrapper_subclass(): {cls.__qualname__} must define __torch_dispatch__, "
                        f"which runs every operator on its instances")
    if layout is not None and layout is not _formats.strided:
        raise RuntimeError(f"_make_wrapper_subclass(): only the strided layout is supported, got layout {layout!r}")
    if memory_format is not None and memory_format is not _formats.contiguous_format:
        raise NotImplementedError(f"_make_wrapper_subclass(): memory_format {memory_format!r} is not supported; "
                                  f"pass strides instead")
    if dispatch_sizes_strides_policy not in (None, "sizes", "strides"):
        raise RuntimeError(f"Unknown sizes_strides_policy: {dispatch_sizes_strides_policy}; expected 'strides' "
                           f"or 'sizes'")
    size = [int(s) for s in size]
    strides = None if strides is None else [int(s) for s in strides]
    r = _C._make_python_key_tensor(cls, size, strides, storage_offset, dtype, device, bool(requires_grad))
    if dispatch_sizes_strides_policy is not None or dispatch_device or dispatch_layout:
        from ._python_dispatch_policies import apply_policy  # Note [Python metadata policies]

        apply_policy(r, dispatch_sizes_strides_policy, dispatch_device, dispatch_layout)
    return r


# Tensor._make_wrapper_subclass (backend_sdk/_tensor.py) imports this module on its first call; from then
# on the class calls this function directly, without an import per call.
Tensor._make_wrapper_subclass = staticmethod(_make_wrapper_subclass)  # type: ignore[method-assign]

# The fallback holds for the process; importing this module installs it (Note [Python key fallback]).
_C._set_python_key_fallback(_python_key_fallback)
