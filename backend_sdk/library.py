"""``backend_sdk.library``: defining operators and registering kernels from Python, as ``torch.library``."""
from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from typing import Any, Callable, Iterator, Sequence

from . import _C
from ._tags import Tag, drop_tags, normalize_tags, set_tags
from ._library.keys import resolve_device_type, resolve_key

__all__ = [
    "CustomOpDef",
    "Library",
    "Tag",
    "custom_op",
    "define",
    "fallthrough_kernel",
    "get_ctx",
    "get_kernel",
    "impl",
    "infer_schema",
    "opcheck",
    "register_autocast",
    "register_autograd",
    "register_fake",
    "register_kernel",
    "register_vmap",
    "register_torch_dispatch",
]

_KINDS = ("DEF", "FRAGMENT", "IMPL")

# Note [Python kernel overrides]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# As in PyTorch 2.13, one (namespace, operator, dispatch key) takes one kernel from
# Python at a time: a second Library.impl for it replaces the first (the newest
# registration wins; closing it brings the previous one back), unless the caller
# passes allow_override=False, which raises RuntimeError instead. allow_override
# defaults to True in Library.impl and register_fake, as in PyTorch 2.13. The entry goes away when the registering Library is
# destroyed. Kernels custom_op registers for itself are not counted.
_impls_lock = threading.Lock()
_impls: dict[tuple[str, str], list["Library"]] = {}  # (ns::op.overload, key) -> libraries holding a kernel


# "ns::name[.overload]" of every operator a Library defined from Python (OpOverload._defined_in_python).
_python_defined: set[str] = set()


def _defined_in_python(qualname: str) -> bool:
    name = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    return name in _python_defined


_C._set_defined_in_python_provider(_defined_in_python)

_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")


def _enum_argument(kind: str, value: int) -> Any:
    """The object a Python kernel receives for a Layout / MemoryFormat argument (PyTorch's enum numbers):
    backend_sdk.strided, backend_sdk.channels_last... where the package defines them, else the number."""
    import backend_sdk

    if kind == "Layout":
        name = "strided" if value == 0 else None
    else:
        name = _MEMORY_FORMATS[value] if 0 <= value < len(_MEMORY_FORMATS) else None
    return getattr(backend_sdk, name, value) if name else value


_C._set_enum_argument_provider(_enum_argument)


def fallthrough_kernel() -> None:
    """Pass as the kernel of ``Library.impl`` to register a fallthrough (the key is skipped)."""
    raise NotImplementedError("fallthrough_kernel is a marker and is never called")


def _op_name_of(op_name: Any) -> str:
    if isinstance(op_name, (_C.OpOverload, _C.OpOverloadPacket)):
        return op_name.__name__
    if not isinstance(op_name, str):
        raise TypeError(f"expected an operator name (str) or an OpOverload, got {type(op_name).__name__}")
    return op_name


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
        self._lib_key = resolve_key(dispatch_key, f"Library({ns!r}, {kind!r})") if dispatch_key else None
        # An IMPL library without a key registers each kernel under the key given to impl().
        self._lib = None
        if kind != "IMPL" or self._lib_key:
            self._lib = _C._Library(kind, ns, self._lib_key)
        self._impl_libs: dict[str, Any] = {}
        self._defined: list[str] = []
        self._fake_impls: list[str] = []  # qualnames whose fake impl this library registered
        self._overrides: list[tuple[str, str]] = []  # Note [Python kernel overrides]
        self._absent_kernels: dict[tuple[str, str], Callable] = {}  # Note [Registrations for absent backends]
        self._torch_dispatch_removers: list[Callable[[], None]] = []  # register_torch_dispatch(..., lib=self)
        self._vmap_removers: list[Callable[[], None]] = []  # register_vmap(..., lib=self)

    def _impl_library(self, key: str) -> Any:
        """The C++ library that holds kernels for `key` (IMPL blocks are per key in C++)."""
        if self.kind == "IMPL" and self._lib_key and key == self._lib_key:
            return self._lib
        lib = self._impl_libs.get(key)
        if lib is None:
            lib = self._impl_libs[key] = _C._Library("IMPL", self.ns, key)
        return lib

    def define(self, schema: str, alias_analysis: str = "", *, tags: Tag | Sequence[Tag] = ()) -> str:
        """Defines an operator in this namespace from a schema; returns its name.

        ``tags``: one ``Tag`` or a sequence of them, returned by the operator's ``OpOverload.tags``.
        """
        self._check_open()
        if not isinstance(schema, str):
            raise TypeError(f"Library.define: schema must be a string, got {type(schema).__name__}")
        tag_list = normalize_tags(tags, f"Library({self.ns!r}).define({schema!r})")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self.kind == "IMPL":
            raise RuntimeError(f"Library({self.ns!r}, 'IMPL') cannot define operators; use a DEF or FRAGMENT library")
        name = self._lib.define(schema)
        self._defined.append(name)
        with _impls_lock:
            _python_defined.add(f"{self.ns}::{name}")
        set_tags(f"{self.ns}::{name}", tag_list)
        return name

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False,
             allow_override: bool = True) -> None:
        """Registers fn as the kernel of op_name ("name.overload" or an OpOverload) for dispatch_key.

        A second Python kernel for the same operator and key replaces the first; with ``allow_override=False`` it raises
        (Note [Python kernel overrides]). Keys of backends this process lacks ("CUDA", "XPU", ...)
        are recorded and never dispatched (Note [Registrations for absent backends]).
        """
        self._check_open()
        name = _op_name_of(op_name)
        if not callable(fn):
            raise TypeError(f"Library.impl({name!r}): the kernel must be callable, got {type(fn).__name__}")
        if "::" in name:
            ns, name = name.split("::", 1)
            if ns != self.ns:
                raise ValueError(
                    f"Explicitly provided namespace ({ns}) in operator name does not match namespace of "
                    f"enclosing Library ({self.ns})"
                )
        if name.endswith(".default"):
            name = name[: -len(".default")]
        requested = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        key = resolve_key(requested, f"Library({self.ns!r}).impl({name!r})")
        if self.kind == "IMPL" and self.dispatch_key and key != self._lib_key:
            raise ValueError(
                f"Explicitly provided dispatch key ({key or requested}) is inconsistent with the dispatch key of the "
                f"enclosing Library ({self._lib_key or self.dispatch_key})"
            )
        if key is None:
            self._absent_kernels[(name, requested)] = fn
            return
        qualname = f"{self.ns}::{name}"
        entry = (qualname, key)
        with _impls_lock:
            holders = _impls.setdefault(entry, [])
            if holders and not allow_override and fn is not fallthrough_kernel:
                raise RuntimeError(
                    f"This is not allowed since there's already a kernel registered from python overriding "
                    f"{name}'s behavior for {key} dispatch key and {self.ns} namespace. Pass allow_override=True "
                    f"to replace it."
                )
            holders.append(self)
        self._overrides.append(entry)
        lib = self._impl_library(key)
        try:
            if fn is fallthrough_kernel:
                lib.impl_fallthrough(name, key)
            else:
                lib.impl(name, key, fn, with_keyset)
        except Exception:
            self._release_override(entry)
            raise

    def _release_override(self, entry: tuple[str, str]) -> None:
        with _impls_lock:
            holders = _impls.get(entry, [])
            if self in holders:
                holders.remove(self)
            if not holders:
                _impls.pop(entry, None)
        if entry in self._overrides:
            self._overrides.remove(entry)

    def _register_fake(self, op_name: Any, fn: Callable, _stacklevel: int = 1, *, allow_override: bool = True) -> None:
        """Registers a fake impl tied to this library (it goes away when the library is destroyed)."""
        name = _op_name_of(op_name)
        qualname = name if "::" in name else f"{self.ns}::{name}"
        register_fake(qualname, fn, lib=self, allow_override=allow_override)

    def fallback(self, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """A backend fallback for every operator at dispatch_key: fn(op, keyset, args, kwargs).

        Only in ``Library("_", "IMPL", key)``.
        """
        self._check_open()
        if self.ns != "_" or self.kind != "IMPL":
            raise ValueError("fallback(): backend fallbacks are registered in Library('_', 'IMPL', dispatch_key)")
        key = resolve_key(dispatch_key or self.dispatch_key, "Library.fallback")
        if key is None:
            self._absent_kernels[("_fallback", dispatch_key or self.dispatch_key)] = fn
            return
        lib = self._impl_library(key)
        if fn is fallthrough_kernel:
            lib.fallback_fallthrough()
        else:
            lib.fallback(fn)

    def _check_open(self) -> None:
        if getattr(self, "_closed", False):
            raise RuntimeError(f"Library({self.ns!r}, {self.kind!r}) is closed")

    def _destroy(self) -> None:
        """Removes everything this library registered: kernels, definitions, their tags and fake impls."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        from ._subclasses import fake_tensor

        for entry in list(self._overrides):
            self._release_override(entry)
        for lib in self._impl_libs.values():
            lib.reset()
        self._impl_libs.clear()
        self._absent_kernels.clear()
        for remove in self._torch_dispatch_removers:
            remove()
        self._torch_dispatch_removers.clear()
        defined = [f"{self.ns}::{n}" for n in self._defined]
        # A fake impl registered through this library, or for an operator it defined, goes with it
        # (Note [Fake impl stack]).
        for qualname in dict.fromkeys(self._fake_impls):
            _drop_fakes(qualname, self)
        self._fake_impls.clear()
        with _impls_lock:
            _python_defined.difference_update(defined)
        for qualname in defined:
            _drop_fakes(qualname, None, everything=True)
            fake_tensor._fake_impls.pop(qualname, None)
            drop_tags(qualname)
        if defined and "backend_sdk._python_dispatch_impl" in sys.modules:
            sys.modules["backend_sdk._python_dispatch_impl"]._drop_rules(defined)
        for remove in getattr(self, "_vmap_removers", ()):
            remove()
        self._vmap_removers = []
        if defined and "backend_sdk._functorch.vmap" in sys.modules:
            sys.modules["backend_sdk._functorch.vmap"].drop_rules(defined)
        if self._lib is not None:
            self._lib.reset()

    close = _destroy

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._destroy()

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"


def _register_fallback(dispatch_key: str, fn: Callable) -> Library:
    """A Library holding fn(op, keyset, args, kwargs) as the boxed fallback of dispatch_key, for every
    operator (the Fake and Python keys' fallbacks); the caller keeps it alive."""
    lib = Library("_", "IMPL", dispatch_key)
    lib.fallback(fn)
    return lib


@contextlib.contextmanager
def _scoped_library(*args: Any, **kwargs: Any) -> Iterator[Library]:
    """``with _scoped_library(ns, kind) as lib:`` a Library destroyed when the block ends, as PyTorch's."""
    lib = Library(*args, **kwargs)
    try:
        yield lib
    finally:
        lib._destroy()


# Libraries created by the module-level functions live for the process.
_keep_alive: list[Library] = []


def define(qualname: str | Library, schema: str, *, lib: Library | None = None,
           tags: Tag | Sequence[Tag] = ()) -> Any:
    """Defines ``ns::name`` with ``schema`` (the part from '(' on), as ``torch.library.define``.

    The legacy form ``define(lib, "name(...) -> ...")`` returns a decorator that defines the operator in
    ``lib`` and registers the decorated function as its CompositeImplicitAutograd kernel, as PyTorch's does.
    """
    if isinstance(qualname, Library):  # the legacy form define(lib, schema) -> decorator registering the impl
        target, legacy_schema = qualname, schema

        def register_legacy(fn: Callable) -> Callable:
            name = target.define(legacy_schema)
            target.impl(name, fn)
            return fn

        return register_legacy
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"define(): expected a qualified name 'namespace::name', got {qualname!r}")
    if not isinstance(schema, str):
        raise TypeError(f"define({qualname!r}): schema must be a string, got {type(schema).__name__}")
    if not schema.lstrip().startswith("("):
        raise ValueError(
            f"define(qualname, schema, ...): expected schema to look like e.g. \"(Tensor x) -> Tensor\" but got "
            f"\"{schema}\""
        )
    ns, name = qualname.split("::", 1)
    tag_list = normalize_tags(tags, f"define({qualname!r})")
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _keep_alive.append(lib)
    lib.define(name + schema, tags=tag_list)


def _device_type_to_key(device_type: str, what: str) -> str | None:
    """"default" -> CompositeExplicitAutograd, "cpu" -> CPU, a dispatch key name stays (as PyTorch's impl)."""
    if device_type == "default":
        return "CompositeExplicitAutograd"
    try:
        resolve_key(device_type, what)
        return device_type
    except (ValueError, TypeError):
        pass
    from ._library.keys import ABSENT_DEVICE_TYPES

    key = resolve_device_type(device_type, what)
    return key if key is not None else ABSENT_DEVICE_TYPES[device_type.split(":", 1)[0].lower()]


def impl(qualname: Any, types: Any, func: Callable | None = None, *, lib: Library | None = None) -> Any:
    """Registers a kernel for ``ns::name[.overload]`` for device types or dispatch keys, as ``torch.library.impl``.

    ``types``: "default" (every device: CompositeExplicitAutograd), a device type ("cpu", "accel", "Meta",
    "cuda"...), a dispatch key ("CompositeImplicitAutograd", "Autograd", ...) or a sequence of these.
    Usable directly (``impl("ns::op", "cpu", fn)``) or as a decorator; the older
    ``impl(lib, "name", "CPU")`` decorator form (a Library first) is accepted too.
    """
    if isinstance(qualname, Library):  # impl(lib, name, dispatch_key="") -> decorator
        target, name, key = qualname, types, func if isinstance(func, str) else ""
        if func is not None and not isinstance(func, str):
            raise TypeError("impl(lib, name, dispatch_key): dispatch_key must be a string")

        def register_on(fn: Callable) -> Callable:
            target.impl(name, fn, key)
            return fn

        return register_on
    keys_in = (types,) if isinstance(types, str) else tuple(types) if isinstance(types, (tuple, list)) else None
    if not keys_in:
        raise TypeError(f"impl(): types must be a device type, a dispatch key or a sequence of them, got {types!r}")
    name = _op_name_of(qualname)
    if "::" not in name:
        raise ValueError(f"impl(): expected a qualified name 'namespace::name', got {name!r}")
    ns, op = name.split("::", 1)
    keys = [(t, _device_type_to_key(t, f"impl({name!r})")) for t in keys_in]

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"impl({name!r}): expected a function, got {type(fn).__name__}")
        for requested, key in keys:
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
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if "backend_sdk/_library" not in filename and "backend_sdk/library.py" not in filename:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Library | None = None, _stacklevel: int = 1,
                  allow_override: bool = True) -> Any:
    """Registers the fake kernel of an operator (defined in Python or C++), as ``torch.library.register_fake``.

    The fake kernel receives fake tensors and returns fake outputs with the right
    shape, dtype, device and strides without reading data; ``get_ctx()`` inside it
    gives ``new_dynamic_size()``. It is also registered as the operator's Meta kernel.
    Decorator or direct. The newest registration wins (``allow_override=False`` raises
    instead, as in PyTorch 2.13); one made through ``lib`` goes away when ``lib`` is destroyed,
    bringing the previous one back, and every fake impl of an operator goes when the library
    that defined it is (Note [Fake impl stack]).
    """
    from ._subclasses import fake_tensor

    qualname = _qualname(op, "register_fake")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_fake({qualname}): expected a function, got {type(fn).__name__}")
        existing = fake_tensor._fake_impls.get(qualname)
        from ._library.custom_ops import AUTOGENERATED_FAKE, NO_RETURNS_FAKE, _custom_ops

        if existing is not None and not allow_override and existing[1] not in (NO_RETURNS_FAKE, AUTOGENERATED_FAKE):
            raise _C.ValueRuntimeError(
                f"register_fake(...): the operator {qualname} already has a fake impl registered at {existing[1]}."
            )
        custom = _custom_ops.get(qualname)
        ours = _fake_stack.get(qualname)
        if custom is None:
            # PyTorch 2.13's checks against kernels registered some other way (Note [Fake impl stack]).
            if _C._dispatch_has_kernel_for_key(qualname, "CompositeImplicitAutograd"):
                raise RuntimeError(
                    f"register_fake(...): the operator {qualname} already has an implementation for this device type "
                    f"via a pre-existing registration to DispatchKey::CompositeImplicitAutograd. "
                    f"CompositeImplicitAutograd operators do not need a fake impl; instead, the operator will "
                    f"decompose into its constituents and those can have fake impls defined on them."
                )
            if not allow_override and not ours and _C._dispatch_has_kernel_for_key(qualname, "Meta"):
                raise RuntimeError(
                    f"register_fake(...): the operator {qualname} already has an DispatchKey::Meta implementation "
                    f"via a pre-existing backend_sdk.library or SDK_LIBRARY registration. Please either remove that "
                    f"registration or don't call register_fake."
                )
        entry = (fn, _caller_location())

        def meta_kernel(*args: Any, **kwargs: Any) -> Any:
            prev = getattr(fake_tensor._tls, "ctx", None)
            fake_tensor._tls.ctx = fake_tensor.FakeImplCtx(qualname)
            try:
                return fn(*args, **kwargs)
            finally:
                fake_tensor._tls.ctx = prev

        meta_lib = None
        if custom is not None:
            custom._register_fake_meta(meta_kernel)
        else:
            ns, name = qualname.split("::", 1)
            meta_lib = Library(ns, "FRAGMENT")
            meta_lib.impl(name, meta_kernel, "Meta")
        stack = _fake_stack.setdefault(qualname, [])
        if lib is None:  # a process-lived registration replaces the previous process-lived one
            for old in [e for e in stack if e[1] is None]:
                stack.remove(old)
                if old[2] is not None:
                    old[2]._destroy()
        else:
            lib._fake_impls.append(qualname)
        stack.append((entry, lib, meta_lib))
        fake_tensor._fake_impls[qualname] = entry
        return fn

    return register(func) if func is not None else register


# Note [Fake impl stack]
# ~~~~~~~~~~~~~~~~~~~~~~
# As in PyTorch 2.13, the newest register_fake of an operator wins, and destroying the Library it was made
# through brings the previous one back. Each registration is (entry, lib, meta_lib): the fake impl, the
# Library it is tied to (None: the process), and the Library holding the Meta kernel made from it (the
# dispatcher's own stack of Meta kernels then restores the previous Meta kernel too). A process-lived
# registration replaces the previous process-lived one. For operators that custom_op made, the Meta kernel is
# the CustomOpDef's own (it has no meta_lib). register_fake refuses an operator with a
# CompositeImplicitAutograd kernel, and (allow_override=False) one with a Meta kernel registered otherwise.
_fake_stack: dict[str, list[tuple[tuple[Callable, str], Library | None, Library | None]]] = {}


def _automatic_fakes() -> tuple[str, ...]:
    from ._library.custom_ops import AUTOGENERATED_FAKE, NO_RETURNS_FAKE

    return (AUTOGENERATED_FAKE, NO_RETURNS_FAKE)


def _drop_fakes(qualname: str, lib: Library | None, everything: bool = False) -> None:
    """Removes the fake impls of ``qualname`` registered through ``lib`` (all of them with ``everything``)."""
    from ._subclasses import fake_tensor

    stack = _fake_stack.get(qualname, [])
    for e in [e for e in stack if everything or e[1] is lib]:
        stack.remove(e)
        if e[2] is not None:
            e[2]._destroy()
    if stack:
        fake_tensor._fake_impls[qualname] = stack[-1][0]
    else:
        _fake_stack.pop(qualname, None)
        current = fake_tensor._fake_impls.get(qualname)
        if current is not None and (everything or current[1] not in _automatic_fakes()):
            fake_tensor._fake_impls.pop(qualname, None)



def get_ctx() -> Any:
    """The ctx of the running fake kernel (``ctx.new_dynamic_size()``), as ``torch.library.get_ctx``."""
    from ._subclasses.fake_tensor import get_ctx as _get_ctx

    return _get_ctx()


def register_kernel(op: Any, device_types: str | Sequence[str] | None, func: Callable | None = None, /, *,
                    lib: Library | None = None) -> Any:
    """Registers ``func`` as the kernel of an operator for device types ("cpu", "accel", "Meta"), as
    ``torch.library.register_kernel``; works on custom_op operators and on operators defined any other way.
    ``device_types=None`` registers the kernel for every device (CompositeExplicitAutograd)."""
    if isinstance(op, CustomOpDef):
        return op.register_kernel(device_types, func) if func is not None else op.register_kernel(device_types)
    qualname = _qualname(op, "register_kernel")
    base = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    from ._library.custom_ops import _custom_ops, _device_key

    if base in _custom_ops:
        target = _custom_ops[base]
        return target.register_kernel(device_types, func) if func is not None else target.register_kernel(device_types)
    if device_types is None:  # every device: the default kernel, as PyTorch's
        return impl(qualname, "default", func, lib=lib)
    types = (device_types,) if isinstance(device_types, str) else tuple(device_types)
    if not types:
        raise ValueError(f"register_kernel({qualname}): needs at least one device type")
    for d in types:
        _device_key(d, f"register_kernel({qualname})")  # an unknown device type is an error naming it
    return impl(qualname, types, func, lib=lib)


class _KernelHandle:
    """The kernel an operator ran for one dispatch key when ``get_kernel`` was called (Note [Kernel snapshots]);
    ``call_boxed(keyset, *args, **kwargs)`` runs it with that key set."""

    def __init__(self, qualname: str, key: str, snapshot: Any, owner: "Library | None") -> None:
        self._qualname, self._key, self._snapshot = qualname, key, snapshot
        self._owner = weakref.ref(owner) if owner is not None else None

    def call_boxed(self, keyset: Any, *args: Any, **kwargs: Any) -> Any:
        """Runs the kernel with ``keyset`` (a DispatchKeySet), as c10's KernelFunction::callBoxed."""
        if self._owner is not None:
            owner = self._owner()
            if owner is None or getattr(owner, "_closed", False):
                raise RuntimeError(
                    f"The kernel of {self._qualname} for {self._key} that get_kernel() returned has been "
                    f"invalidated: the Library that registered it was destroyed"
                )
        if not isinstance(keyset, _C.DispatchKeySet):
            raise TypeError(f"call_boxed(keyset, ...): keyset must be a DispatchKeySet, got {type(keyset).__name__}")
        return self._snapshot.call_boxed(keyset, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<kernel of {self._qualname} for {self._key}>"


def _python_owner(qualname: str, key: str, table_line: str) -> "Library | None":
    """The open Library whose Python kernel fills the table slot of ``key`` (None for a C++ kernel)."""
    source = table_line.split(": ", 1)[1] if ": " in table_line else ""
    if ".cpp:" in source or ".h:" in source:  # a C++ registration: valid for the process
        return None
    with _impls_lock:
        for k in (key, "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd"):
            holders = [h for h in _impls.get((qualname, k), []) if not getattr(h, "_closed", False)]
            if holders:
                return holders[-1]
    return None


def get_kernel(op: Any, dispatch_key: Any) -> _KernelHandle:
    """The kernel ``op`` runs for ``dispatch_key`` (a runtime key such as "CPU"), as ``torch.library.get_kernel``.

    It is the kernel at that moment (Note [Kernel snapshots]): a kernel registered later does not change it,
    and it is invalidated when the Library that registered it is destroyed. Raises RuntimeError if the
    operator has no kernel for that key.
    """
    qualname = _qualname(op, "get_kernel")
    key_name = dispatch_key if isinstance(dispatch_key, str) else getattr(dispatch_key, "name", dispatch_key)
    key = resolve_key(key_name, f"get_kernel({qualname})")
    if key is None:
        raise RuntimeError(f"get_kernel(): no kernel for {key_name} for {qualname} (this process has no backend "
                           f"for dispatch key {key_name})")
    table = _C._dispatch_dump_table(qualname)
    line = next((ln for ln in table.splitlines() if ln.split(":", 1)[0] == key), None)
    if line is None:
        raise _C.ValueRuntimeError(f"get_kernel({qualname}): {key} is not a runtime dispatch key (use e.g. CPU, Meta)")
    if line.endswith(": missing") or "fallthrough" in line:
        raise RuntimeError(f"get_kernel(): no kernel for {key} for {qualname}")
    return _KernelHandle(qualname, key, _C._dispatch_get_kernel(qualname, key), _python_owner(qualname, key, line))


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """Registers the backward formula of a functional operator, as ``torch.library.register_autograd``.

    ``setup_context(ctx, inputs, output)`` saves what backward needs (``ctx.save_for_backward``);
    ``backward(ctx, *grads)`` returns one gradient per input (None for non-Tensor inputs).
    Builds on ``backend_sdk.autograd.Function``; mutable operators are refused.
    """
    from ._library.autograd import make_autograd_kernel

    qualname = _qualname(op, "register_autograd")
    overload = _C._get_op_overload(qualname)
    schema = _C._parse_schema(overload._schema)
    # As PyTorch 2.13: out variants and every other mutable operator (Tag.inplace ones too) are refused.
    if Tag.out in overload.tags:
        raise _C.ValueRuntimeError(
            f"Cannot register autograd formula for operator tagged with backend_sdk.Tag.out: {qualname}. "
            f"Out variants do not support autograd."
        )
    if schema.is_mutable:
        raise _C.ValueRuntimeError(
            f"Cannot register autograd formula for non-functional operator {qualname} with schema {schema}. "
            f"Please create a functional operator and register an autograd formula for that."
        )
    if any(a.kwarg_only and a.type.startswith("Tensor") for a in schema.arguments):
        raise NotImplementedError(
            f"register_autograd with kwarg-only Tensor args. In the original definition of the op, please make "
            f"your tensors not kwarg-only. Got: {schema}"
        )
    inplace = False
    if not callable(backward):
        raise TypeError(f"register_autograd({qualname}): backward must be callable, got {type(backward).__name__}")
    if setup_context is not None and not callable(setup_context):
        raise TypeError(f"register_autograd({qualname}): setup_context must be callable or None")
    kernel = make_autograd_kernel(qualname, schema, backward, setup_context, dirty_first=inplace)
    ns, name = qualname.split("::", 1)
    from ._library.custom_ops import _custom_ops

    custom = _custom_ops.get(qualname)
    if custom is not None:
        custom._drop_default_autograd()  # the formula replaces the custom op's "no formula" kernel
    if lib is None:
        previous = _autograd_libs.pop(qualname, None)
        if previous is not None:  # a new formula replaces the previous one
            previous._destroy()
        target = _autograd_libs[qualname] = Library(ns, "FRAGMENT")
    else:
        target = lib
    target.impl(name, kernel, "Autograd", with_keyset=True)


_autograd_libs: dict[str, Library] = {}


def register_torch_dispatch(op: Any, torch_dispatch_class: Any, func: Callable | None = None, /, *,
                            lib: Library | None = None) -> Any:
    """Registers the behaviour of operator ``op`` for ``torch_dispatch_class`` (a Tensor subclass with
    ``__torch_dispatch__`` or a TorchDispatchMode class), as ``torch.library.register_torch_dispatch``.

    The rule is checked before the class's own ``__torch_dispatch__``: for a subclass it is called as
    ``func(cls, func, types, args, kwargs)``, for a mode as ``func(mode, func, types, args, kwargs)``, with
    args and kwargs normalised as for ``__torch_dispatch__`` (Note [Python dispatch]). Works for custom
    operators and aten operators; decorator or direct; a newer rule for the same pair replaces the older
    one. Registered through ``lib``, it goes away when ``lib`` is destroyed.
    """
    from . import _python_dispatch_impl

    qualname = _qualname(op, "register_torch_dispatch")
    if not isinstance(torch_dispatch_class, type):
        raise TypeError(f"register_torch_dispatch({qualname}): torch_dispatch_class must be a class (a Tensor "
                        f"subclass or a TorchDispatchMode), got {type(torch_dispatch_class).__name__}")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_torch_dispatch({qualname}): expected a function, got {type(fn).__name__}")
        remove = _python_dispatch_impl._register_rule(qualname, torch_dispatch_class, fn)
        if lib is not None:
            lib._check_open()
            lib._torch_dispatch_removers.append(remove)
        return fn

    return register(func) if func is not None else register


def opcheck(op: Any, args: tuple | list, kwargs: dict | None = None, *, test_utils: Any = None,
            raise_exception: bool = True, atol: float | None = None, rtol: float | None = None) -> dict[str, Any]:
    """Checks a custom operator's registrations, as ``torch.library.opcheck``; see backend_sdk.testing.opcheck."""
    from .testing._opcheck import DEFAULT_TEST_UTILS, opcheck as _opcheck

    return _opcheck(op, args, kwargs, test_utils=DEFAULT_TEST_UTILS if test_utils is None else test_utils,
                    raise_exception=raise_exception, atol=atol, rtol=rtol)


# Note [Custom op autocast]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# register_autocast(op, device_type, cast_inputs) registers, as PyTorch 2.13's, a Python kernel at the
# device type's Autocast key that casts the call's floating tensors of that device type to cast_inputs
# and calls the operator again with the Autocast functionality excluded. The Autocast functionality is
# on whenever any device type's autocast is (Note [Autocast], csrc/backend_sdk/ops/Autocast.cpp), so the
# kernel first checks its own device type and otherwise redispatches below Autocast unchanged.
# device_type: "cpu", a privateuse backend's name ("accel"), or "cuda" (recorded, never dispatched:
# Note [Registrations for absent backends]); anything else is PyTorch's ValueError.
def _autocast_key(device_type: Any) -> tuple[str, str]:
    """(the Autocast dispatch key name, the device type) for register_autocast's device_type."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type == "cuda":
        return "AutocastCUDA", device_type
    try:
        dense = _C._dispatch_key_name(device_type)
    except ValueError:
        dense = None
    if dense is None or device_type == "meta" or dense == "Meta":
        raise ValueError(f"Unknown device type: {device_type}")
    return f"Autocast{dense}", device_type


def _make_autocast_kernel(qualname: str, device_type: str, cast_inputs: Any) -> Callable:
    from .amp.autocast_mode import _cast

    op = _C._get_op_overload(qualname)
    excluded = _C.DispatchKeySet(_C.DispatchKey.AutocastFunctionality)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if not _C.is_autocast_enabled(device_type):
            return _C._redispatch(qualname, keyset.keys_after("AutocastCPU"), *args, **kwargs)
        assert len(kwargs) == 0, "Custom ops do not support kwargs yet."
        with _C._ExcludeDispatchKeyGuard(excluded):
            return op(*_cast(args, device_type, cast_inputs))

    return kernel


def register_autocast(op: Any, device_type: str, cast_inputs: Any, /, *, lib: Library | None = None) -> None:
    """Registers autocast for a custom operator, as ``torch.library.register_autocast``: inside an autocast
    region of ``device_type`` its floating inputs of that device type are cast to ``cast_inputs`` and it runs
    with autocast disabled (Note [Custom op autocast])."""
    if not isinstance(op, (str, _C.OpOverload)):
        raise ValueError(f"register_autocast({op}): got unexpected type for op: {type(op)}")
    key, device_type = _autocast_key(device_type)
    if isinstance(op, CustomOpDef):
        return op.register_autocast(device_type, cast_inputs)
    qualname = _qualname(op, "register_autocast")
    base = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    from ._library.custom_ops import _custom_ops

    if base in _custom_ops:
        return _custom_ops[base].register_autocast(device_type, cast_inputs)
    ns, name = qualname.split("::", 1)
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _keep_alive.append(lib)
    lib.impl(name, _make_autocast_kernel(qualname, device_type, cast_inputs), key, with_keyset=True)
def register_vmap(op: Any, func: Callable | None = None, /, *, lib: Library | None = None) -> Any:
    """Registers the vmap batching rule of an operator, as ``torch.library.register_vmap`` (decorator or direct).

    ``func(info, in_dims, *args, **kwargs) -> (output, out_dims)``: ``info`` has ``batch_size`` and
    ``randomness``; ``in_dims`` holds, per positional argument, the dimension vmap maps over (None when the
    argument is not batched); ``args`` are the tensors with that dimension present. It returns the output and
    where each output's batch dimension is (an int, None, or a tuple matching the outputs). Without a rule an
    operator goes through the slow per-element fallback (docs/vmap.md). Registered through ``lib``, the rule
    goes away when ``lib`` is destroyed (the previous registration, if any, applies again); without, it lives
    as long as the process, or until the operator's defining library is destroyed. A later registration
    replaces an earlier one while it lives.
    """
    qualname = _qualname(op, "register_vmap")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_vmap({qualname}): expected a function, got {type(fn).__name__}")
        from ._functorch.vmap import register_vmap as _register

        if lib is not None:
            lib._check_open()
        remove = _register(qualname, fn)
        if lib is not None:
            lib._vmap_removers.append(remove)
        return fn

    return register(func) if func is not None else register
