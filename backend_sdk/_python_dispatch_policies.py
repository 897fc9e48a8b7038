"""Python-computed metadata of wrapper subclasses: ``_make_wrapper_subclass(...,
dispatch_sizes_strides_policy="sizes"|"strides", dispatch_device=True, dispatch_layout=True)``.

Note [Python metadata policies]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
As in PyTorch, a wrapper subclass instance made with one of these arguments asks its
``__torch_dispatch__`` for its metadata instead of reading the TensorImpl's:
  * ``"strides"``: ``stride()`` -> ``aten::sym_stride.default``, ``storage_offset()`` ->
    ``aten::sym_storage_offset.default``, ``is_contiguous()`` -> ``aten::is_contiguous`` (``.default``,
    or ``.memory_format`` when a format is given);
  * ``"sizes"``: all of those, and ``size()`` / ``shape`` -> ``aten::sym_size.default``, ``dim()`` /
    ``ndim`` -> ``aten::dim.default``, ``numel()`` / ``nelement()`` -> ``aten::sym_numel.default``
    (c10's CustomSizes includes CustomStrides);
  * ``dispatch_device=True``: ``device`` -> ``prim::device.default``;
  * ``dispatch_layout=True``: ``layout`` -> ``prim::layout.default``.
A handler that returns ``None`` for one of them gets the value the tensor was made with, as PyTorch's
Python interpreter falls back to ``sym_sizes_default()`` and the like. The operators are defined here
(PyTorch's schemas) with CompositeExplicitAutograd kernels that read a tensor's own metadata, so a
handler can answer with ``func(inner)``; a tensor without a policy never calls them.

The SDK's TensorImpl has no virtual size/stride accessors (PyTorch's ``sizes_custom``), so the policy
applies to what Python reads from the tensor object: the accessors above are Python methods installed
on the subclass the first time an instance with a policy is made (only where the class does not define
them itself; instances without a policy take the inherited accessor). C++ kernels, autograd and
``repr`` see the metadata given at creation, which is what a handler should keep consistent. The
policy is kept in the instance's ``__dict__`` (``_sdk_python_metadata``), the part of a wrapper's
state that survives while only C++ holds it (Note [Python key tensors]).
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from . import _C, _formats
from ._ops import ops
from ._size import Size

__all__: list[str] = []  # internal: reached through Tensor._make_wrapper_subclass

_POLICY_ATTR = "_sdk_python_metadata"
_LEVELS = {None: 0, "strides": 1, "sizes": 2}


def _define_ops() -> list[Any]:
    from ._tensor import Tensor
    from .library import Library

    aten, prim = Library("aten", "FRAGMENT"), Library("prim", "FRAGMENT")
    base = _C.TensorBase
    kernels: list[tuple[Any, str, str, Callable]] = [
        (aten, "sym_size", "sym_size(Tensor self) -> SymInt[]", lambda s: list(base.size(s))),
        (aten, "sym_stride", "sym_stride(Tensor self) -> SymInt[]", lambda s: list(base.stride(s))),
        (aten, "sym_numel", "sym_numel(Tensor self) -> SymInt", lambda s: base.numel(s)),
        (aten, "sym_storage_offset", "sym_storage_offset(Tensor self) -> SymInt", lambda s: base.storage_offset(s)),
        (aten, "dim", "dim(Tensor self) -> int", lambda s: base.dim(s)),
        (aten, "is_contiguous", "is_contiguous(Tensor self) -> bool", lambda s: Tensor.is_contiguous(s)),
        (aten, "is_contiguous.memory_format", "is_contiguous.memory_format(Tensor self, MemoryFormat memory_format) "
         "-> bool", lambda s, f: Tensor.is_contiguous(s, memory_format=_format(f))),
        (prim, "device", "device(Tensor a) -> Device", lambda s: base.device.__get__(s)),
        (prim, "layout", "layout(Tensor a) -> Layout", lambda s: _formats.strided),
    ]
    for lib, name, schema, fn in kernels:
        if _defined(lib.ns, name):
            continue  # defined elsewhere already (C++): its kernel serves
        lib.define(schema)
        lib.impl(name, fn, "CompositeExplicitAutograd")
        # ops.aten caches packets: one made before this overload existed (aten::sym_size has a C++ .int
        # overload) would not list it, so it is dropped and rebuilt on next access.
        getattr(ops, lib.ns).__dict__.pop(name.partition(".")[0], None)
    return [aten, prim]


def _defined(ns: str, name: str) -> bool:
    packet_name, _, overload = name.partition(".")
    packet = _C._get_op_packet(f"{ns}::{packet_name}")  # not ops.<ns>: aten's packets are cached there
    return packet is not None and (overload or "default") in packet._overload_names


def _format(f: Any) -> Any:
    """The memory_format object for a MemoryFormat argument: the object itself, or PyTorch's enum number
    (ops.aten.is_contiguous.memory_format(t, 2)). A number naming no format answers as contiguous_format, as
    PyTorch's TensorImpl::is_contiguous does (it tests the channels-last formats and otherwise the default)."""
    if isinstance(f, _formats.memory_format):
        return f
    return next((m for m in _formats._FORMATS if m.__index__() == int(f)), _formats.contiguous_format)


_libs = _define_ops()  # held for the process: the definitions go when their Library does


def _policy(t: Any) -> tuple[int, bool, bool] | None:
    d = getattr(t, "__dict__", None)
    return None if d is None else d.get(_POLICY_ATTR)


def _ask(op: Any, t: Any, *args: Any) -> Any:
    """The handlers' answer for ``op(t, *args)``, raw: called as the Python key's fallback would (modes
    first, then the class), but not through the dispatcher, so ``None`` ("use the default") is not
    checked against the schema's return type, as PyTorch's Python interpreter calls torch_dispatch."""
    from ._python_dispatch_impl import _python_key_fallback

    return _python_key_fallback(op, (type(t),), (t, *args), {})


def _make_overrides(cls: type) -> dict[str, Any]:
    """The accessors installed on ``cls``; each falls back to the one ``cls`` inherited."""
    inherited = {name: getattr(cls, name) for name in
                 ("size", "stride", "storage_offset", "is_contiguous", "dim", "ndimension", "numel", "nelement")}
    inherited_props = {name: cls.__dict__.get(name) or getattr(cls, name) for name in ("shape", "ndim", "device",
                                                                                        "layout")}

    def sizes(self: Any) -> Any:
        p = _policy(self)
        if p is not None and p[0] >= 2:
            out = _ask(ops.aten.sym_size.default, self)
            if out is not None:
                return Size(out)
        return inherited["size"](self)

    def size(self: Any, dim: Any = None) -> Any:
        if dim is None:
            return sizes(self)
        p = _policy(self)
        if p is None or p[0] < 2:
            return inherited["size"](self, dim)
        s = sizes(self)
        return s[_wrap_dim(dim, len(s), "size")]

    def stride(self: Any, dim: Any = None) -> Any:
        p = _policy(self)
        if p is None or p[0] < 1:
            return inherited["stride"](self) if dim is None else inherited["stride"](self, dim)
        out = _ask(ops.aten.sym_stride.default, self)
        out = tuple(inherited["stride"](self)) if out is None else tuple(out)
        return out if dim is None else out[_wrap_dim(dim, len(out), "stride")]

    def _scalar(op_name: str, level: int, fallback: Callable) -> Callable:
        def accessor(self: Any) -> Any:
            p = _policy(self)
            if p is not None and p[0] >= level:
                out = _ask(getattr(ops.aten, op_name).default, self)
                if out is not None:
                    return out
            return fallback(self)
        return accessor

    def is_contiguous(self: Any, memory_format: Any = _formats.contiguous_format) -> bool:
        p = _policy(self)
        if p is not None and p[0] >= 1:
            if memory_format is _formats.contiguous_format:
                out = _ask(ops.aten.is_contiguous.default, self)
            else:
                out = _ask(ops.aten.is_contiguous.memory_format, self, memory_format)
            if out is not None:
                return bool(out)
        return inherited["is_contiguous"](self, memory_format=memory_format)

    def device(self: Any) -> Any:
        p = _policy(self)
        if p is not None and p[1]:
            out = _ask(ops.prim.device.default, self)
            if out is not None:
                return out if isinstance(out, _C.device) else _C.device(out)
        return inherited_props["device"].__get__(self)

    def layout(self: Any) -> Any:
        p = _policy(self)
        if p is not None and p[2]:
            out = _ask(ops.prim.layout.default, self)
            if out is not None:
                return _formats.strided if out == 0 else out
        return inherited_props["layout"].__get__(self)

    dim = _scalar("dim", 2, inherited["dim"])
    numel = _scalar("sym_numel", 2, inherited["numel"])
    return {
        "size": size, "stride": stride, "is_contiguous": is_contiguous, "dim": dim, "ndimension": dim,
        "numel": numel, "nelement": numel,
        "storage_offset": _scalar("sym_storage_offset", 1, inherited["storage_offset"]),
        "shape": property(sizes), "ndim": property(dim), "device": property(device), "layout": property(layout),
    }


def _wrap_dim(dim: Any, ndim: int, what: str) -> int:
    d = int(dim)
    if not -max(ndim, 1) <= d < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                         f"{max(ndim, 1) - 1}], but got {d})")
    return d % max(ndim, 1)


_installed: set[type] = set()
_install_lock = threading.Lock()


def apply_policy(t: Any, sizes_strides_policy: str | None, dispatch_device: bool, dispatch_layout: bool) -> None:
    """Marks ``t`` (a new wrapper subclass instance) with its policy and installs the accessors on its
    class once (Note [Python metadata policies])."""
    if sizes_strides_policy not in _LEVELS:
        raise RuntimeError(f"Unknown sizes_strides_policy: {sizes_strides_policy}; expected 'strides' or 'sizes'")
    level = _LEVELS[sizes_strides_policy]
    if not (level or dispatch_device or dispatch_layout):
        return
    cls = type(t)
    with _install_lock:
        if cls not in _installed:
            for name, fn in _make_overrides(cls).items():
                if name not in cls.__dict__:  # the class's own accessor wins, as a Python override would
                    setattr(cls, name, fn)
            _installed.add(cls)
    t.__dict__[_POLICY_ATTR] = (level, bool(dispatch_device), bool(dispatch_layout))
