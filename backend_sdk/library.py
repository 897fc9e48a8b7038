"""``backend_sdk.library``: defining operators and registering kernels from Python, as ``torch.library``."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from . import _C

__all__ = [
    "CustomOpDef",
    "Library",
    "custom_op",
    "define",
    "fallthrough_kernel",
    "get_ctx",
    "impl",
    "infer_schema",
    "opcheck",
    "register_autograd",
    "register_fake",
    "register_kernel",
]

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


def impl(qualname: Any, types: str | tuple[str, ...], func: Callable | None = None, *, lib: Library | None = None) -> Any:
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


# ---------------------------------------------------------------------------
# Custom operators (torch.library.custom_op & co.)
# ---------------------------------------------------------------------------
from ._library.custom_ops import CustomOpDef, custom_op  # noqa: E402
from ._library.infer_schema import infer_schema  # noqa: E402


def _qualname(op: Any, what: str) -> str:
    """'ns::name' or 'ns::name.overload' (the dispatcher's name) of an operator given any way."""
    if isinstance(op, CustomOpDef):
        return op._qualname
    if isinstance(op, _C.OpOverload):
        return op.__name__
    if isinstance(op, _C.OpOverloadPacket):
        names = op._overload_names
        if names != ["default"]:
            raise ValueError(
                f"{what}: {op.__name__} has several overloads ({', '.join(names)}); pass one of them, "
                f"e.g. ops.{op.__name__.replace('::', '.')}.{names[0]}"
            )
        return op.__name__
    if not isinstance(op, str) or "::" not in op:
        raise ValueError(f"{what}: expected an operator or a qualified name 'namespace::name[.overload]', got {op!r}")
    name = op[: -len(".default")] if op.endswith(".default") else op
    if _C._get_op_overload(name) is None:
        raise ValueError(f"{what}: the operator {name} does not exist; define it first (library.define / custom_op)")
    return name


def _caller_location() -> str:
    import inspect

    for frame in inspect.stack()[1:]:
        if "backend_sdk/_library" not in frame.filename and "backend_sdk/library.py" not in frame.filename:
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Library | None = None, _stacklevel: int = 1) -> Any:
    """Registers the fake kernel of an operator (defined in Python or C++), as ``torch.library.register_fake``.

    The fake kernel receives fake tensors and returns fake outputs with the right
    shape, dtype, device and strides without reading data; ``get_ctx()`` inside it
    gives ``new_dynamic_size()``. It also serves as the operator's Meta kernel unless
    one is registered. Decorator or direct.
    """
    from ._subclasses import fake_tensor

    qualname = _qualname(op, "register_fake")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_fake({qualname}): expected a function, got {type(fn).__name__}")
        existing = fake_tensor._fake_impls.get(qualname)
        if existing is not None:
            raise ValueError(
                f"register_fake(...): the operator {qualname} already has a fake impl registered at {existing[1]}."
            )
        fake_tensor._fake_impls[qualname] = (fn, _caller_location())
        def meta_kernel(*args: Any, **kwargs: Any) -> Any:
            prev = getattr(fake_tensor._tls, "ctx", None)
            fake_tensor._tls.ctx = fake_tensor.FakeImplCtx(qualname)
            try:
                return fn(*args, **kwargs)
            finally:
                fake_tensor._tls.ctx = prev

        from ._library.custom_ops import _custom_ops

        custom = _custom_ops.get(qualname)
        if custom is not None:
            custom._register_fake_meta(meta_kernel)
        elif not _C._dispatch_has_kernel_for_key(qualname, "Meta"):
            ns, name = qualname.split("::", 1)
            target = lib or Library(ns, "FRAGMENT")
            if lib is None:
                _keep_alive.append(target)
            target.impl(name, meta_kernel, "Meta")
        return fn

    return register(func) if func is not None else register


def get_ctx() -> Any:
    """The ctx of the running fake kernel (``ctx.new_dynamic_size()``), as ``torch.library.get_ctx``."""
    from ._subclasses.fake_tensor import get_ctx as _get_ctx

    return _get_ctx()


def register_kernel(op: Any, device_types: str | Sequence[str], func: Callable | None = None, /, *,
                    lib: Library | None = None) -> Any:
    """Registers ``func`` as the kernel of an operator for device types ("cpu", "accel", "Meta"), as
    ``torch.library.register_kernel``; works on custom_op operators and on operators defined any other way."""
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func) if func is not None else op.register_kernel(device_types)
    qualname = _qualname(op, "register_kernel")
    base = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    from ._library.custom_ops import _custom_ops, _device_key

    if base in _custom_ops:
        target = _custom_ops[base]
        return target.register_kernel(device_types, func) if func is not None else target.register_kernel(device_types)
    types = (device_types,) if isinstance(device_types, str) else tuple(device_types)
    keys = [_device_key(d) for d in types]
    return impl(qualname, tuple(keys), func, lib=lib)


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """Registers the backward formula of a functional operator, as ``torch.library.register_autograd``.

    ``setup_context(ctx, inputs, output)`` saves what backward needs (``ctx.save_for_backward``);
    ``backward(ctx, *grads)`` returns one gradient per input (None for non-Tensor inputs).
    Builds on ``backend_sdk.autograd.Function``; mutable operators are refused.
    """
    from ._library.autograd import make_autograd_kernel

    qualname = _qualname(op, "register_autograd")
    schema = _C._parse_schema(_C._get_op_overload(qualname)._schema)
    if schema.is_mutable:
        raise ValueError(
            f"Cannot register autograd formula for non-functional operator {qualname} with schema {schema}. "
            f"Please create a functional operator and register an autograd formula for that."
        )
    if not callable(backward):
        raise TypeError(f"register_autograd({qualname}): backward must be callable, got {type(backward).__name__}")
    if setup_context is not None and not callable(setup_context):
        raise TypeError(f"register_autograd({qualname}): setup_context must be callable or None")
    kernel = make_autograd_kernel(qualname, schema, backward, setup_context)
    ns, name = qualname.split("::", 1)
    if lib is None:
        previous = _autograd_libs.pop(qualname, None)
        if previous is not None:  # a new formula replaces the previous one
            previous._destroy()
        target = _autograd_libs[qualname] = Library(ns, "FRAGMENT")
    else:
        target = lib
    target.impl(name, kernel, "Autograd", with_keyset=True)


_autograd_libs: dict[str, Library] = {}


def opcheck(op: Any, args: tuple, kwargs: dict | None = None, *, test_utils: Any = None,
            raise_exception: bool = True) -> dict[str, str]:
    """Checks a custom operator's registrations, as ``torch.library.opcheck``; see backend_sdk.testing.opcheck."""
    from .testing._opcheck import DEFAULT_TEST_UTILS, opcheck as _opcheck

    return _opcheck(op, args, kwargs, test_utils=DEFAULT_TEST_UTILS if test_utils is None else test_utils,
                    raise_exception=raise_exception)
