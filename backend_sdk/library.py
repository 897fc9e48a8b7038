"""``backend_sdk.library``: defining operators and registering kernels from Python, as ``torch.library``."""
from __future__ import annotations

from typing import Any, Callable

from . import _C

__all__ = ["Library", "define", "impl", "fallthrough_kernel"]

_KINDS = ("DEF", "FRAGMENT", "IMPL")


def fallthrough_kernel() -> None:
    """Pass as the kernel of ``Library.impl`` to register a fallthrough (the key is skipped)."""
    raise NotImplementedError("fallthrough_kernel is a marker and is never called")


class Library:
    """A set of operator definitions and kernels that is removed when closed.

    ``Library(ns, "DEF")`` claims namespace ``ns`` (one per process),
    ``"FRAGMENT"`` adds definitions to it, and ``"IMPL"`` registers kernels
    (``dispatch_key`` picks the key of kernels registered without one).
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind!r}; expected one of {', '.join(_KINDS)}")
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f"Library: namespace must be an identifier, got {ns!r}")
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        if kind != "IMPL" and dispatch_key:
            raise ValueError(f"Library({ns!r}, {kind!r}): dispatch_key is only allowed for IMPL libraries")
        # An IMPL library without a key registers each kernel under the key given to impl().
        self._lib = None if kind == "IMPL" and not dispatch_key else _C._Library(kind, ns, dispatch_key or None)
        self._impl_libs: dict[str, Any] = {}
        self._defined: list[str] = []

    def _impl_library(self, key: str) -> Any:
        """The C++ library that holds kernels for `key` (IMPL blocks are per key in C++)."""
        if self.kind == "IMPL" and self.dispatch_key and key == _C._dispatch_key_name(self.dispatch_key):
            return self._lib
        lib = self._impl_libs.get(key)
        if lib is None:
            lib = self._impl_libs[key] = _C._Library("IMPL", self.ns, key)
        return lib

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Defines an operator in this namespace from a schema; returns its name."""
        self._check_open()
        if self.kind == "IMPL":
            raise RuntimeError(f"Library({self.ns!r}, 'IMPL') cannot define operators; use a DEF or FRAGMENT library")
        name = self._lib.define(schema)
        self._defined.append(name)
        return name

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Registers fn as the kernel of op_name ("name.overload" or an OpOverload) for dispatch_key."""
        self._check_open()
        name = op_name.__name__ if isinstance(op_name, (_C.OpOverload, _C.OpOverloadPacket)) else str(op_name)
        if "::" in name:
            ns, name = name.split("::", 1)
            if ns != self.ns:
                raise ValueError(
                    f"Explicitly provided namespace ({ns}) in operator name does not match namespace of "
                    f"enclosing Library ({self.ns})"
                )
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        key = _C._dispatch_key_name(key)
        if self.kind == "IMPL" and self.dispatch_key and key != _C._dispatch_key_name(self.dispatch_key):
            raise ValueError(
                f"Explicitly provided dispatch key ({key}) is inconsistent with the dispatch key of the "
                f"enclosing Library ({_C._dispatch_key_name(self.dispatch_key)})"
            )
        lib = self._impl_library(key)
        if fn is fallthrough_kernel:
            lib.impl_fallthrough(name, key)
        else:
            lib.impl(name, key, fn, with_keyset)

    def fallback(self, fn: Callable, dispatch_key: str = "") -> None:
        """A backend fallback for every operator at dispatch_key: fn(op, keyset, args, kwargs).

        Only in ``Library("_", "IMPL", key)``.
        """
        self._check_open()
        if self.ns != "_" or self.kind != "IMPL":
            raise ValueError("fallback(): backend fallbacks are registered in Library('_', 'IMPL', dispatch_key)")
        key = _C._dispatch_key_name(dispatch_key or self.dispatch_key)
        lib = self._impl_library(key)
        if fn is fallthrough_kernel:
            lib.fallback_fallthrough()
        else:
            lib.fallback(fn)

    def _check_open(self) -> None:
        if getattr(self, "_closed", False):
            raise RuntimeError(f"Library({self.ns!r}, {self.kind!r}) is closed")

    def _destroy(self) -> None:
        """Removes everything this library registered."""
        self._closed = True
        for lib in self._impl_libs.values():
            lib.reset()
        self._impl_libs.clear()
        if self._lib is not None:
            self._lib.reset()

    close = _destroy

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._destroy()

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"


# Libraries created by the module-level functions live for the process.
_keep_alive: list[Library] = []


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Defines ``ns::name`` with ``schema`` (the part from '(' on), as ``torch.library.define``."""
    if "::" not in qualname:
        raise ValueError(f"define(): expected a qualified name 'namespace::name', got {qualname!r}")
    ns, name = qualname.split("::", 1)
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _keep_alive.append(lib)
    lib.define(name + schema)


def impl(qualname: Any, types: str | tuple[str, ...], func: Callable | None = None, *, lib: Library | None = None):
    """Registers a kernel for ``ns::name[.overload]`` for the given device types or dispatch keys.

    Usable directly (``impl("ns::op", "cpu", fn)``) or as a decorator.
    """
    keys = (types,) if isinstance(types, str) else tuple(types)
    name = qualname.__name__ if isinstance(qualname, (_C.OpOverload, _C.OpOverloadPacket)) else str(qualname)
    if "::" not in name:
        raise ValueError(f"impl(): expected a qualified name 'namespace::name', got {name!r}")
    ns, op = name.split("::", 1)

    def register(fn: Callable) -> Callable:
        for key in keys:
            target = lib
            if target is None:
                target = Library(ns, "FRAGMENT")
                _keep_alive.append(target)
            target.impl(op, fn, key)
        return fn

    return register(func) if func is not None else register
