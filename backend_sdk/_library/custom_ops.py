"""``custom_op`` and ``CustomOpDef``, as ``torch._library.custom_ops``.

Note [Custom op call path]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A CustomOpDef *is* an OpOverload (a Python subclass of the C type bound to
``ns::name`` with ``_C._bind_overload``), so ``op(x)`` goes straight from the
vectorcall slot to the dispatcher, which calls the user's function as a boxed
Python kernel with one vectorcall (csrc/python/PyOps.cpp). No Python wrapper
runs per call; the check that outputs are fresh tensors runs in C++
(Note [Custom operator outputs are fresh]). Kernels are registered per key:
the function given to custom_op under CompositeExplicitAutograd (or under the
keys of ``device_types``), register_kernel under its device's key,
register_fake under the Fake fallback's registry (and Meta), register_autograd
under the Autograd alias key. set_kernel_enabled(False) closes the kernel's
registration so dispatch falls back to the default kernel, and re-registers
it when enabled again.
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterable, Iterator, Sequence

from .. import _C
from .infer_schema import infer_schema

__all__ = ["CustomOpDef", "custom_op"]

# "ns::name" (default overload) of every op made by custom_op, and the ops that have a Meta kernel/fake impl
_custom_ops: dict[str, "CustomOpDef"] = {}


def _custom_op_without_meta(qualname: str) -> bool:
    """True for a custom_op with neither a fake impl nor a Meta kernel (its CompositeExplicitAutograd
    kernel is the user's real implementation and must not run on fake tensors)."""
    base = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    op = _custom_ops.get(base)
    return op is not None and "Meta" not in op._kernel_keys


def _device_key(device_type: str) -> str:
    """The dispatch key name of a device type ("cpu" -> "CPU", "accel" -> "PrivateUse1", "Meta" -> "Meta")."""
    if not isinstance(device_type, str):
        raise TypeError(f"device_types must be strings, got {type(device_type).__name__}")
    try:
        return _C._dispatch_key_name(device_type)
    except ValueError:
        raise ValueError(
            f"Unknown device type {device_type!r}: expected one of {_C._valid_device_types()} "
            f"(or a renamed PrivateUse backend such as 'accel')"
        ) from None


def _norm_device_types(device_types: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if device_types is None:
        return None
    if isinstance(device_types, str):
        return (device_types,)
    return tuple(device_types)


def _caller() -> str:
    for frame in inspect.stack()[2:]:
        if "backend_sdk/_library" not in frame.filename and "backend_sdk/library.py" not in frame.filename:
            return f"{frame.filename}:{frame.lineno}"
    return "<unknown>"


class CustomOpDef(_C.OpOverload):
    """A custom operator made by ``custom_op``; call it like a function.

    It is also ``backend_sdk.ops.<ns>.<name>.default``'s operator. Use
    ``register_kernel``, ``register_fake``, ``register_autograd`` and
    ``set_kernel_enabled`` on it, as on PyTorch's CustomOpDef.
    """

    _namespace: str
    _name: str
    _qualname: str
    _init_fn: Callable

    @classmethod
    def _create(cls, namespace: str, name: str, schema: str, fn: Callable, device_types: tuple[str, ...] | None) -> "CustomOpDef":
        from ..library import Library

        lib = Library(namespace, "FRAGMENT")
        try:
            lib.define(name + schema)
        except Exception:
            lib._destroy()
            raise
        self = cls.__new__(cls)
        self._namespace = namespace
        self._name = name
        self._qualname = f"{namespace}::{name}"
        self._init_fn = fn
        self._lib = lib
        self._schema_obj = _C._parse_schema(f"{self._qualname}{schema}")
        self._kernel_libs: dict[str, Any] = {}  # dispatch key -> Library holding the kernel
        self._kernel_fns: dict[str, Callable] = {}  # dispatch key -> fn
        self._kernel_keys: set[str] = set()
        self._disabled: set[str] = set()
        self._autograd: tuple[Callable, Callable | None] | None = None
        _C._bind_overload(self, self._qualname)
        # The default kernel: every device, or only the given device types.
        if device_types is None:
            self._register("CompositeExplicitAutograd", fn)
        else:
            for d in device_types:
                self._register(_device_key(d), fn)
        if not any(a.type.startswith("Tensor") for a in self._schema_obj.arguments):
            self._register_backend_select()
        _custom_ops[self._qualname] = self
        if not self._schema_obj.returns:
            # An operator that returns nothing changes no metadata: its fake kernel does nothing.
            self._kernel_keys.add("Meta")
            from .._subclasses import fake_tensor

            fake_tensor._fake_impls.setdefault(self._qualname, (_return_none, "<custom_op: no returns>"))
        return self

    # ---- kernels -------------------------------------------------------------
    def _register(self, key: str, fn: Callable) -> None:
        from ..library import Library

        old = self._kernel_libs.pop(key, None)
        if old is not None:
            old._destroy()
        lib = Library(self._namespace, "FRAGMENT")
        lib._impl_library(key).impl(self._name, key, fn, False, self._qualname)
        self._kernel_libs[key] = lib
        self._kernel_fns[key] = fn
        self._kernel_keys.add(key)

    def _register_fake_meta(self, meta_kernel: Callable) -> None:
        """The fake kernel serves as the Meta kernel unless register_kernel("Meta") gave one (which wins)."""
        self._kernel_keys.add("Meta")
        if "Meta" not in self._kernel_fns or getattr(self, "_meta_from_fake", False):
            self._register("Meta", meta_kernel)
            self._meta_from_fake = True

    def _register_backend_select(self) -> None:
        """Ops without tensor arguments dispatch on their ``device`` argument (as factories do)."""
        info = self._schema_obj
        device_idx = next((i for i, a in enumerate(info.arguments) if a.type in ("Device", "Device?")), None)
        qualname = f"{self._qualname}"
        if device_idx is None:
            return  # checked in custom_op: such ops must take a device
        arg = info.arguments[device_idx]
        npos = info.num_positional

        def backend_select(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            device = kwargs.get(arg.name) if arg.kwarg_only or device_idx >= len(args) else args[device_idx]
            device = _C.device("cpu") if device is None else _C.device(device)
            key = _C._dispatch_key_name(device.type)
            ks = keyset.keys_after("BackendSelect") | _C.DispatchKeySet([key])
            return _C._redispatch(qualname, ks, *args, **kwargs)

        del npos
        from ..library import Library

        lib = Library(self._namespace, "FRAGMENT")
        lib._impl_library("BackendSelect").impl(self._name, "BackendSelect", backend_select, True)
        self._bs_lib = lib

    def register_kernel(self, device_types: str | Sequence[str], fn: Callable | None = None, /) -> Callable:
        """Registers fn as this operator's kernel for the device types ("cpu", "accel", "Meta", ...).

        Usable directly or as a decorator.
        """
        types = _norm_device_types(device_types)
        if not types:
            raise ValueError(f"{self._qualname}: register_kernel needs at least one device type")
        keys = [_device_key(d) for d in types]

        def inner(fn: Callable) -> Callable:
            for key in keys:
                self._register(key, fn)
                self._disabled.discard(key)
                if key == "Meta":
                    self._meta_from_fake = False
            return fn

        return inner(fn) if fn is not None else inner

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True) -> Iterator[None]:
        """Disables (or re-enables) the kernel registered for device_type, within a ``with`` block.

        A disabled kernel falls back to the function given to custom_op. Usable as a
        context manager; the previous state is restored on exit.
        """
        key = _device_key(device_type)
        if key not in self._kernel_fns or key == "CompositeExplicitAutograd":
            raise ValueError(
                f"{self._qualname}: set_kernel_enabled({device_type!r}): no kernel was registered for this "
                f"device type with register_kernel"
            )
        was_enabled = key not in self._disabled
        self._set_enabled(key, enabled)
        try:
            yield
        finally:
            self._set_enabled(key, was_enabled)

    def _set_enabled(self, key: str, enabled: bool) -> None:
        if enabled and key in self._disabled:
            self._disabled.discard(key)
            self._register(key, self._kernel_fns[key])
        elif not enabled and key not in self._disabled:
            self._disabled.add(key)
            lib = self._kernel_libs.pop(key, None)
            if lib is not None:
                lib._destroy()
            self._kernel_keys.discard(key)

    def register_fake(self, fn: Callable | None = None, /) -> Callable:
        """Registers the fake kernel (shape/dtype/device propagation without data); decorator or direct."""
        from .. import library

        def inner(fn: Callable) -> Callable:
            library.register_fake(self._qualname, fn)
            self._kernel_keys.add("Meta")
            return fn

        return inner(fn) if fn is not None else inner

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """Registers the backward formula: ``backward(ctx, *grads)`` after ``setup_context(ctx, inputs, output)``."""
        from .. import library

        library.register_autograd(self._qualname, backward, setup_context=setup_context)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    @property
    def _opoverload(self) -> Any:
        """The operator as ``backend_sdk.ops.<ns>.<name>.default``."""
        return _C._get_op_overload(self._qualname)


def _return_none(*args: Any, **kwargs: Any) -> None:
    return None


def _mutated_in_schema(schema: Any) -> set[str]:
    return {a.name for a in schema.arguments if a.is_write}


def custom_op(
    name: str,
    fn: Callable | None = None,
    /,
    *,
    mutates_args: str | Iterable[str],
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
) -> Any:
    """Wraps a function into a custom operator ``ns::name`` (decorator or direct), as ``torch.library.custom_op``.

    The schema is inferred from type hints unless ``schema`` is given;
    ``mutates_args`` (required) names the parameters the function writes to,
    or is ``"unknown"``. ``device_types`` limits the function to those devices.
    """
    if not isinstance(name, str) or "::" not in name:
        raise ValueError(f"custom_op: expected a qualified name 'namespace::name', got {name!r}")
    namespace, opname = name.split("::", 1)
    if not namespace.isidentifier() or not opname.isidentifier():
        raise ValueError(f"custom_op: {name!r} is not a valid operator name (namespace::name, both identifiers)")
    if isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ValueError(
            f"custom_op({name!r}): mutates_args must be 'unknown' or an iterable of argument names, got the "
            f"string {mutates_args!r}"
        )
    types = _norm_device_types(device_types)
    if types is not None:
        for d in types:
            _device_key(d)

    def inner(fn: Callable) -> CustomOpDef:
        if not callable(fn):
            raise TypeError(f"custom_op({name!r}): expected a function, got {type(fn).__name__}")
        if schema is None:
            schema_str = infer_schema(fn, mutates_args=mutates_args)
        else:
            schema_str = schema
            try:
                parsed = _C._parse_schema(f"{name}{schema_str}")
            except ValueError as e:
                raise ValueError(f"custom_op({name!r}): the schema {schema_str!r} does not parse: {e}") from None
            if mutates_args != "unknown":
                declared = set(mutates_args)
                mutated = _mutated_in_schema(parsed)
                if mutated != declared:
                    raise ValueError(
                        f"Attempted to create a custom op with `mutates_args={sorted(declared)}` and "
                        f"`schema={schema_str}`. The schema suggests that the op mutates {sorted(mutated)} which "
                        f"is different from what was provided to us in `mutates_args`. Please make these consistent."
                    )
        parsed = _C._parse_schema(f"{name}{schema_str}")
        _check_schema_conventions(name, parsed)
        return CustomOpDef._create(namespace, opname, schema_str, fn, types)

    return inner(fn) if fn is not None else inner


def _check_schema_conventions(name: str, schema: Any) -> None:
    """What PyTorch's custom_op refuses: maybe-out ops, and tensor-less ops without a device argument."""
    has_tensor = any(a.type.startswith("Tensor") for a in schema.arguments)
    if not has_tensor and not any(a.type in ("Device", "Device?") for a in schema.arguments):
        raise ValueError(
            f"custom_op({name!r}): an operator with no Tensor arguments must take a `device: backend_sdk.device` "
            f"argument, which decides which device's kernel runs (schema: {schema})"
        )
    _check_no_maybe_out(name, schema)


def _check_no_maybe_out(name: str, schema: Any) -> None:
    for a in schema.arguments:
        if a.is_write and a.type in ("Tensor?", "Tensor?[]"):
            raise ValueError(
                f"{name}: the argument '{a.name}' is an optional mutable tensor ({a}): a 'maybe-out' operator, "
                f"which either writes into '{a.name}' or allocates its result, is not supported (PyTorch refuses it "
                f"too). Split it in two operators: a functional one that returns a new tensor, and an out= (or "
                f"in-place) one with a non-optional 'Tensor(a!) {a.name}'."
            )
