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

Note [Tagged in-place and out= custom operators]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
As in PyTorch 2.13, ``tags=Tag.inplace`` makes an operator that mutates its
first (Tensor) argument and returns it: ``(Tensor(a!) x, ...) -> Tensor(a!)``;
``tags=Tag.out`` one that writes keyword-only tensors listed in mutates_args
and returns them in order: ``(Tensor x, *, Tensor(a!) out) -> Tensor(a!)``.
Every kernel of such an operator (the function, register_kernel's) is wrapped
to check that it returned those very tensors (PyTorch's errors). Keyword-only
Tensor arguments are refused (NotImplementedError) on any other operator. An
out= operator has an Autograd kernel that refuses inputs requiring grad (as
aten's out= overloads do); an in-place one goes through the autograd fallback
(leaf check, not-implemented node) unless register_autograd gives a formula,
which then runs with the first argument marked dirty.

Note [Mutated arguments' versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Every mutable custom operator has a Python ADInplaceOrView kernel that bumps
the version of each argument its schema marks written, once per call, after
the kernels below ran (as PyTorch's ADInplaceOrView kernel does): a kernel
that writes through ``x.numpy()`` is seen by saved-tensor checks.
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterable, Iterator, Sequence

from .. import _C
from .._tags import Tag, drop_tags, normalize_tags, set_tags
from .infer_schema import infer_schema
from .keys import resolve_device_type

__all__ = ["CustomOpDef", "custom_op"]

# "ns::name" (default overload) of every op made by custom_op, and the ops that have a Meta kernel/fake impl
_custom_ops: dict[str, "CustomOpDef"] = {}


def _custom_op_without_meta(qualname: str) -> bool:
    """True for a custom_op with neither a fake impl nor a Meta kernel (its CompositeExplicitAutograd
    kernel is the user's real implementation and must not run on fake tensors)."""
    base = qualname[: -len(".default")] if qualname.endswith(".default") else qualname
    op = _custom_ops.get(base)
    return op is not None and "Meta" not in op._kernel_keys


def _device_key(device_type: str, what: str = "register_kernel") -> str | None:
    """The dispatch key name of a device type ("cpu" -> "CPU", "accel" -> "PrivateUse1", "Meta" -> "Meta");
    None for a PyTorch device type this process has no backend for (Note [Registrations for absent backends])."""
    return resolve_device_type(device_type, what)


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
    def _create(cls, namespace: str, name: str, schema: str, fn: Callable, device_types: tuple[str, ...] | None,
                tags: tuple[Tag, ...] = ()) -> "CustomOpDef":
        from ..library import Library

        qualname = f"{namespace}::{name}"
        previous = _custom_ops.get(qualname)
        if previous is not None:
            # Redefinition replaces the operator, as in PyTorch (reloaded modules, notebooks). Handles
            # to the old definition raise instead of binding against the new schema (Note [Schema lifetime]).
            previous._destroy()
        lib = Library(namespace, "FRAGMENT")
        try:
            lib.define(name + schema, tags=(Tag.pt2_compliant_tag, *tags))
        except Exception:
            lib._destroy()
            raise
        self = cls.__new__(cls)
        self._tags = tuple(tags)
        self._absent_kernels: dict[str, Callable] = {}
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
        try:
            # The default kernel: every device, or only the given device types.
            if device_types is None:
                self._register("CompositeExplicitAutograd", fn)
            else:
                for d in device_types:
                    key = _device_key(d, f"custom_op({self._qualname!r})")
                    if key is None:
                        self._absent_kernels[d] = fn
                    else:
                        self._register(key, fn)
            if not any(a.type.startswith("Tensor") for a in self._schema_obj.arguments):
                self._register_backend_select()
            if self._schema_obj.is_mutable:
                self._register_version_bump()
            if Tag.out in self._tags:
                self._register_out_autograd()
        except Exception:
            self._destroy()
            raise
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
        lib._impl_library(key).impl(self._name, key, self._checked(fn), False, self._qualname)
        self._kernel_libs[key] = lib
        self._kernel_fns[key] = fn
        self._kernel_keys.add(key)

    def _checked(self, fn: Callable) -> Callable:
        """fn, wrapped for a tagged operator to check it returns the tensors it must
        (Note [Tagged in-place and out= custom operators])."""
        if Tag.inplace in self._tags:
            qualname = self._qualname

            def inplace_kernel(*args: Any, **kwargs: Any) -> Any:
                result = fn(*args, **kwargs)
                if result is not args[0]:
                    raise RuntimeError(
                        f"{qualname}: An operator tagged with backend_sdk.Tag.inplace must return its first argument."
                    )
                return result

            return inplace_kernel
        if Tag.out in self._tags:
            qualname = self._qualname
            outs = [a.name for a in self._schema_obj.arguments if a.kwarg_only and a.is_write]

            def out_kernel(*args: Any, **kwargs: Any) -> Any:
                result = fn(*args, **kwargs)
                got = result if len(outs) > 1 else (result,)
                if not isinstance(got, (tuple, list)) or len(got) != len(outs) or any(
                        r is not kwargs.get(n) for r, n in zip(got, outs)):
                    raise RuntimeError(
                        f"{qualname}: An operator tagged with backend_sdk.Tag.out must return its mutable "
                        f"keyword-only arguments ({', '.join(outs)}), in order."
                    )
                return result

            return out_kernel
        return fn

    def _register_version_bump(self) -> None:
        """Note [Mutated arguments' versions]: an ADInplaceOrView kernel bumps every written argument."""
        from ..library import Library

        qualname = self._qualname
        schema = self._schema_obj
        positions = [(i, a.name, a.kwarg_only) for i, a in enumerate(schema.arguments) if a.is_write]
        npos = schema.num_positional

        from .._tensor import Tensor

        def bump(value: Any) -> None:
            if isinstance(value, (list, tuple)):
                for v in value:
                    bump(v)
            elif isinstance(value, Tensor):
                _C._bump_version(value)

        def ad_inplace_or_view(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            result = _C._redispatch(qualname, keyset.keys_after("ADInplaceOrView"), *args, **kwargs)
            for i, name, kwarg_only in positions:
                if not kwarg_only and i < len(args) and i < npos:
                    bump(args[i])
                elif name in kwargs:
                    bump(kwargs[name])
            return result

        lib = Library(self._namespace, "FRAGMENT")
        lib._impl_library("ADInplaceOrView").impl(self._name, "ADInplaceOrView", ad_inplace_or_view, True)
        self._version_lib = lib

    def _register_out_autograd(self) -> None:
        """An out= operator refuses inputs that require grad, as aten's out= overloads do."""
        from ..library import Library
        from .autograd import _grad_needed

        qualname = self._qualname

        def out_autograd(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            if _grad_needed(tuple(args) + tuple(kwargs.values())):
                raise RuntimeError(
                    f"{qualname}(): functions with out=... arguments don't support automatic differentiation, but "
                    f"one of the arguments requires grad."
                )
            return _C._redispatch(qualname, keyset.keys_after("AutogradCPU"), *args, **kwargs)

        lib = Library(self._namespace, "FRAGMENT")
        lib._impl_library("Autograd").impl(self._name, "Autograd", out_autograd, True)
        self._out_autograd_lib = lib

    def _destroy(self) -> None:
        """Removes the operator and everything registered for it (a redefinition calls this first)."""
        from .. import library
        from .._subclasses import fake_tensor

        for attr in ("_bs_lib", "_version_lib", "_out_autograd_lib"):
            lib = self.__dict__.pop(attr, None)
            if lib is not None:
                lib._destroy()
        for lib in list(getattr(self, "_kernel_libs", {}).values()):
            lib._destroy()
        self.__dict__.get("_kernel_libs", {}).clear()
        autograd_lib = library._autograd_libs.pop(self._qualname, None)
        if autograd_lib is not None:
            autograd_lib._destroy()
        lib = self.__dict__.get("_lib")
        if lib is not None:
            lib._destroy()  # drops the definition, its tags and its fake impl
        fake_tensor._fake_impls.pop(self._qualname, None)
        if _custom_ops.get(self._qualname) is self:
            del _custom_ops[self._qualname]

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
        keys = [_device_key(d, f"{self._qualname}: register_kernel") for d in types]

        def inner(fn: Callable) -> Callable:
            if not callable(fn):
                raise TypeError(f"{self._qualname}: register_kernel expected a function, got {type(fn).__name__}")
            for d, key in zip(types, keys):
                if key is None:  # Note [Registrations for absent backends]
                    self._absent_kernels[d] = fn
                    continue
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
        key = _device_key(device_type, f"{self._qualname}: set_kernel_enabled")
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

    def register_fake(self, fn: Callable | None = None, /, *, allow_override: bool = True) -> Callable:
        """Registers the fake kernel (shape/dtype/device propagation without data); decorator or direct."""
        from .. import library

        if Tag.inplace in self._tags or Tag.out in self._tags:
            import warnings

            tag = "backend_sdk.Tag.inplace" if Tag.inplace in self._tags else "backend_sdk.Tag.out"
            warnings.warn(
                f"The fake registration for {self} is unnecessary. Custom ops tagged with {tag} already get an "
                f"autogenerated fake kernel. The provided fake impl will be used instead.",
                stacklevel=2,
            )

        def inner(fn: Callable) -> Callable:
            library.register_fake(self._qualname, fn, allow_override=allow_override)
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
    def tags(self) -> list[Tag]:
        """The operator's tags: pt2_compliant_tag and those given to custom_op."""
        return [Tag.pt2_compliant_tag, *self._tags]

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
    tags: Tag | Sequence[Tag] | None = None,
) -> Any:
    """Wraps a function into a custom operator ``ns::name`` (decorator or direct), as ``torch.library.custom_op``.

    The schema is inferred from type hints unless ``schema`` is given;
    ``mutates_args`` (required) names the parameters the function writes to,
    or is ``"unknown"``. ``device_types`` limits the function to those devices.
    ``tags``: one ``Tag`` or a sequence; ``Tag.inplace`` and ``Tag.out`` make tagged
    in-place / out= operators (Note [Tagged in-place and out= custom operators]).
    Defining a name again replaces the earlier operator, as in PyTorch.
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
    tag_set = normalize_tags(tags, f"custom_op({name!r})")
    if Tag.inplace in tag_set and Tag.out in tag_set:
        raise AssertionError("backend_sdk.Tag.inplace and backend_sdk.Tag.out are mutually exclusive")
    types = _norm_device_types(device_types)
    if types is not None:
        for d in types:
            _device_key(d, f"custom_op({name!r})")

    def inner(fn: Callable) -> CustomOpDef:
        if not callable(fn):
            raise TypeError(f"custom_op({name!r}): expected a function, got {type(fn).__name__}")
        if schema is None:
            schema_str = infer_schema(fn, mutates_args=mutates_args, tags=tag_set)
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
                        f"Attempted to create a custom op with `mutates_args={declared or '()'}` and "
                        f"`schema={schema_str}`. The schema suggests that the op mutates {mutated} which "
                        f"is different from what was provided to us in `mutates_args`. Please make these consistent."
                    )
        parsed = _C._parse_schema(f"{name}{schema_str}")
        _check_schema_conventions(name, parsed, tag_set)
        return CustomOpDef._create(namespace, opname, schema_str, fn, types, tag_set)

    return inner(fn) if fn is not None else inner


def _check_schema_conventions(name: str, schema: Any, tags: tuple[Tag, ...] = ()) -> None:
    """What PyTorch's custom_op refuses: maybe-out ops, kwarg-only tensors (unless Tag.out), tensor-less ops
    without a device argument, and tagged ops whose schema does not have the tag's shape."""
    has_tensor = any(a.type.startswith("Tensor") for a in schema.arguments)
    if not has_tensor and not any(a.type in ("Device", "Device?") for a in schema.arguments):
        raise ValueError(
            f"custom_op({name!r}): an operator with no Tensor arguments must take a `device: backend_sdk.device` "
            f"argument, which decides which device's kernel runs (schema: {schema})"
        )
    kwarg_tensors = [a for a in schema.arguments if a.kwarg_only and a.type.startswith("Tensor")]
    if Tag.out in tags:
        # PyTorch 2.13's checks of a manual schema tagged Tag.out, in its words.
        mutable = [a for a in schema.arguments if a.is_write]
        positional = [a.name for a in mutable if not a.kwarg_only]
        if positional:
            raise ValueError(
                f"Schema tagged with backend_sdk.Tag.out requires all mutable arguments to be keyword-only "
                f"(after the *). Found mutable positional args: {positional}. Got: {schema}"
            )
        non_tensor = [a.name for a in mutable if a.type != "Tensor"]
        if non_tensor:
            raise ValueError(
                f"Schema tagged with backend_sdk.Tag.out only supports Tensor mutable arguments. "
                f"Found unsupported mutable args: {non_tensor}. Got: {schema}"
            )
        outs = [a for a in kwarg_tensors if a.is_write]
        if not outs:
            raise ValueError(
                f"Schema tagged with backend_sdk.Tag.out requires at least one mutable keyword-only Tensor "
                f"argument. Got: {schema}"
            )
        kwarg_tensors = [a for a in kwarg_tensors if a not in outs]
        _check_returns_alias(name, schema, outs, "Tag.out", "its mutable keyword-only arguments")
    if kwarg_tensors:
        raise NotImplementedError(
            f"custom_op with kwarg-only Tensor args. Please make your tensors not kwarg-only. Got: {schema} "
            f"(only an operator tagged with backend_sdk.Tag.out may take keyword-only tensors, its mutated out "
            f"arguments)"
        )
    if Tag.inplace in tags:
        first = schema.arguments[0] if schema.arguments else None
        if first is None or first.kwarg_only or first.type != "Tensor" or not first.is_write:
            raise ValueError(
                f"Schema tagged with backend_sdk.Tag.inplace requires the first argument to be a mutable Tensor "
                f"(Tensor(a!)). Got: {schema}"
            )
        _check_returns_alias(name, schema, [first], "Tag.inplace", "the first mutable argument")
    # Note: a mutable optional tensor (the 'maybe-out' pattern) is accepted, as PyTorch 2.13 accepts it
    # (test_mutated_optional_arg_default_none); the samples still show the advised split into two operators.


def _check_returns_alias(name: str, schema: Any, args: list, tag: str, what: str) -> None:
    returns = list(schema.returns)
    ok = len(returns) == len(args) and all(
        r.type == "Tensor" and r.alias_info and a.alias_info and str(r.alias_info).split("!")[0] == str(a.alias_info).split("!")[0]
        for r, a in zip(returns, args))
    if not ok:
        if tag == "Tag.inplace":
            raise ValueError(
                f"Schema tagged with backend_sdk.Tag.inplace must return the first mutable argument "
                f"(return must alias the first argument). Got: {schema}"
            )
        raise ValueError(
            f"Schema tagged with backend_sdk.{tag} must return {what} in order "
            f"(return must alias {', '.join(a.name for a in args)}). Got: {schema}"
        )
