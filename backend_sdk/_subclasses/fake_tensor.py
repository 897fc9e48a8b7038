"""Fake tensors: tensors with metadata and a device but no data, as ``torch._subclasses.fake_tensor``.

Note [Fake tensors]
~~~~~~~~~~~~~~~~~~~
A fake tensor is a TensorImpl that reports its *fake device* (cpu, accel, ...)
and carries the ``Fake`` dispatch key; its storage is a meta storage (no
memory). For every fake TensorImpl the fallback below makes a *meta twin*: a
meta TensorImpl over the same storage with the same sizes, strides and
offset (``_C._meta_from_fake``). Because the twins share the storage object,
views and in-place results keep their aliasing, and ``_C._storage_id`` tells
which fake tensors share memory.

``FakeTensorMode`` is a TorchDispatchMode, an infra mode below every user mode
(Note [Infra modes], backend_sdk/_python_dispatch_impl.py): its ``__torch_dispatch__``
runs ``_fake_fallback`` for each call that reaches it, inside ``_Computing`` (the
``Fake`` key included and the ``Python`` key excluded, so the operators a fake kernel
calls are fake too and no mode sees them). A call on fake tensors outside any
FakeTensorMode carries ``Fake`` in its key set and reaches ``_fake_fallback`` as the
boxed fallback registered at the ``Fake`` key, which sits just below ``Python``, so
user modes and subclasses see it first. ``_fake_fallback``
  1. converts real tensor arguments to fake ones (FakeTensorMode's memo keeps
     one fake tensor per real tensor and one meta storage per real storage);
  2. runs the operator's fake kernel (``register_fake``) on the fake tensors if
     it has one; otherwise calls the operator on the meta twins with ``Fake``
     excluded, so its Meta kernel computes shape, dtype, strides and offset,
     with ``Device`` arguments replaced by ``meta``;
  3. wraps meta results as fake tensors: a result that is a twin of an input
     becomes that input (in-place and out= operators return their argument),
     a result sharing a twin's storage is a view on that input's device, and
     a fresh result gets the device of the ``device`` argument if there is one,
     else the common device of the fake inputs (0-dim cpu tensors do not count),
     else cpu;
  4. records the call in the active tracer (see backend_sdk/_library/tracing.py).
Reading data (``item``, ``bool``, ``numpy``, ``tolist``) raises
DataDependentOutputException. In-place operators that change metadata
(``resize_``, ``as_strided_``, ``t_``) are copied back from the twin.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from .. import _C
from .. import _python_dispatch_impl as _pd
from .._tensor import Tensor
from ..utils._python_dispatch import TorchDispatchMode

__all__ = [
    "DataDependentOutputException",
    "FakeTensor",
    "FakeTensorMode",
    "UnsupportedFakeTensorException",
    "get_fake_impl",
]

_FAKE_KEYS = _C.DispatchKeySet(["Fake"])
# What fake computations run without: the Fake key (their meta twins and allocations are real meta tensors)
# and the Python key (PyTorch runs them under _DisableTorchDispatch: no mode sees a fake kernel's insides).
_NO_FAKE_NO_PYTHON = _C.DispatchKeySet(["Fake", "Python"])
_PYTHON_KEYS = _C.DispatchKeySet(["Python"])
_META = _C.device("meta")
_CPU = _C.device("cpu")


class DataDependentOutputException(RuntimeError):
    """An operation needed the values of a fake tensor (which has none)."""


class UnsupportedFakeTensorException(RuntimeError):
    """A fake tensor cannot run this operator (no fake kernel and no Meta kernel)."""


class FakeTensor(Tensor):
    """A tensor with shape, dtype, strides, storage offset and device, but no data.

    Made by ``FakeTensorMode`` (``mode.from_tensor(t)``, or any operator run under the
    mode). Operators on fake tensors run fake/Meta kernels; reading values raises
    DataDependentOutputException.
    """

    __module__ = "backend_sdk._subclasses.fake_tensor"

    @property
    def fake_device(self) -> _C.device:
        """The device this fake tensor stands for (the same as ``device``)."""
        return self.device

    @property
    def fake_mode(self) -> "FakeTensorMode | None":
        """The FakeTensorMode now computing, else the active one (fake tensors are not tied to one mode here)."""
        return _current_mode() or _active_infra_mode()

    def _data_error(self, what: str) -> DataDependentOutputException:
        return DataDependentOutputException(
            f"{what}: cannot read the data of a FakeTensor (size={tuple(self.shape)}, dtype={self.dtype}, "
            f"device={self.device}); fake tensors have metadata only. Move the data-dependent computation "
            f"out of the traced/fake region or write the fake kernel without reading values "
            f"(ctx.new_dynamic_size() stands in for sizes that depend on data)"
        )

    def numpy(self) -> Any:
        raise self._data_error("numpy()")

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        raise self._data_error("__array__()")

    def tolist(self) -> Any:
        raise self._data_error("tolist()")

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._data_error("__dlpack__()")

    def __repr__(self) -> str:
        return f"FakeTensor(..., size={tuple(self.shape)}, dtype={self.dtype}, device='{self.device}')"

    __str__ = __repr__


_C._set_fake_tensor_class(FakeTensor)


def is_fake(t: Any) -> bool:
    """True if t is a fake tensor."""
    return _C._is_fake(t)


# ---------------------------------------------------------------------------
# Fake kernels (register_fake) and their ctx
# ---------------------------------------------------------------------------
_fake_impls: dict[str, tuple[Callable, str]] = {}  # "ns::name.overload" -> (fn, where registered)


def get_fake_impl(qualname: str) -> Callable | None:
    """The fake kernel registered for 'ns::name.overload' (or 'ns::name' for the default overload)."""
    entry = _fake_impls.get(qualname)
    return entry[0] if entry else None


class SymIntStandIn(int):
    """What ``ctx.new_dynamic_size()`` returns: an int standing in for an unbacked size.

    Limitation: tensor sizes here are plain integers, so this is not a symbolic
    size as in PyTorch. It behaves as its *hint* (a representative value within
    [min, max]) when used as a size; its name (``u0``, ``u1``...) identifies it.
    Shapes computed from it are examples, not guarantees; a traced graph re-run on
    real inputs recomputes the real sizes because it re-runs the operators.
    """

    name: str
    min: int
    max: int | None

    def __new__(cls, hint: int, name: str, min: int, max: int | None) -> "SymIntStandIn":
        obj = super().__new__(cls, hint)
        obj.name, obj.min, obj.max = name, min, max
        return obj

    def __repr__(self) -> str:
        return f"{self.name}(hint={int(self)}, min={self.min}, max={self.max})"

    __str__ = __repr__


class FakeImplCtx:
    """The ctx of a fake kernel (``backend_sdk.library.get_ctx()`` inside a register_fake kernel)."""

    _counter = 0
    _lock = threading.Lock()

    def __init__(self, op_name: str) -> None:
        self._op_name = op_name

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None) -> SymIntStandIn:  # noqa: A002
        """A size that depends on the input's data (e.g. the number of nonzeros).

        See SymIntStandIn for how far this goes: a representative int, not a symbol.
        """
        if not isinstance(min, int) or (max is not None and not isinstance(max, int)):
            raise ValueError(f"ctx.new_dynamic_size(min={min}, max={max}): min and max must be ints")
        if min < 0:
            raise ValueError(
                f"ctx.new_dynamic_size(min={min}, ...): expected min to be greater than or equal to 0: "
                f"this API can only create non-negative sizes."
            )
        if max is not None and max < min:
            raise ValueError(f"ctx.new_dynamic_size(min={min}, max={max}): expected max >= min")
        hint = builtins_max(min, 2) if max is None else builtins_min(builtins_max(min, 2), max)
        with FakeImplCtx._lock:
            name = f"u{FakeImplCtx._counter}"
            FakeImplCtx._counter += 1
        size = SymIntStandIn(hint, name, min, max)
        recording = getattr(_tls, "dynamic_sizes", None)
        if recording is not None:
            recording.append(size)
        return size

    # PyTorch's older name
    create_unbacked_symint = new_dynamic_size


builtins_max, builtins_min = max, min
_tls = threading.local()


@contextlib.contextmanager
def recording_dynamic_sizes() -> Iterator[list[SymIntStandIn]]:
    """Collects the sizes ``ctx.new_dynamic_size()`` makes on this thread inside the block (opcheck compares
    them as data-dependent sizes)."""
    previous = getattr(_tls, "dynamic_sizes", None)
    sizes: list[SymIntStandIn] = []
    _tls.dynamic_sizes = sizes
    try:
        yield sizes
    finally:
        _tls.dynamic_sizes = previous


def get_ctx() -> FakeImplCtx:
    """The ctx of the fake kernel now running (``backend_sdk.library.get_ctx``)."""
    ctx = getattr(_tls, "ctx", None)
    if ctx is None:
        raise RuntimeError("get_ctx() may only be called inside a fake kernel (one registered with register_fake)")
    return ctx


# ---------------------------------------------------------------------------
# The mode
# ---------------------------------------------------------------------------
def _mode_stack() -> list["FakeTensorMode"]:
    """The modes now computing on this thread (inside _Computing), innermost last."""
    stack = getattr(_tls, "modes", None)
    if stack is None:
        stack = _tls.modes = []
    return stack


def _current_mode() -> "FakeTensorMode | None":
    """The FakeTensorMode whose fake computation is running on this thread (see _Computing), or None."""
    stack = _mode_stack()
    return stack[-1] if stack else None


def _active_infra_mode() -> "FakeTensorMode | None":
    """The FakeTensorMode entered on this thread (the Python mode stack's infra slot), or None."""
    infra = _pd._infra_mode()
    return infra if isinstance(infra, FakeTensorMode) else None


class _Computing:
    """The scope of one fake computation of ``mode``: the Fake key included, so every operator called
    inside (a fake kernel's factories too) reaches the Fake-key fallback with ``mode``'s memo; the Python
    key excluded, so no TorchDispatchMode sees the fake kernel's own calls (PyTorch runs them under
    _DisableTorchDispatch)."""

    __slots__ = ("mode", "include", "exclude")

    def __init__(self, mode: "FakeTensorMode") -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.include = _C._DispatchKeyGuard(_FAKE_KEYS, True)
        self.exclude = _C._DispatchKeyGuard(_PYTHON_KEYS, False)
        self.include.__enter__()
        self.exclude.__enter__()
        _mode_stack().append(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _mode_stack().pop()
        self.exclude.__exit__(None, None, None)
        self.include.__exit__(None, None, None)


class FakeTensorMode(TorchDispatchMode):
    """A TorchDispatchMode under which operators produce fake tensors and real inputs become fake.

    Factories (``backend_sdk.empty(3, device="accel")``) return fake tensors on the
    requested device; every operator runs its fake kernel or Meta kernel. With
    ``allow_non_fake_inputs=False`` a real tensor reaching an operator is an error
    instead (PyTorch's default); here the default converts it (``from_tensor``).

    As PyTorch's, it is an infra mode (Note [Infra modes], backend_sdk/_python_dispatch_impl.py):
    user TorchDispatchModes see each call before it, whichever was entered first, and
    ``_get_current_dispatch_mode()`` returns it when no user mode is active.
    """

    def __init__(self, *, allow_non_fake_inputs: bool = True) -> None:
        super().__init__()
        self.allow_non_fake_inputs = allow_non_fake_inputs
        # id(real tensor) -> (real tensor, fake); storage id -> (real tensor kept alive, meta base)
        self._tensor_memo: dict[int, tuple[Tensor, FakeTensor]] = {}
        self._storage_memo: dict[int, tuple[Tensor, Tensor]] = {}
        self._previous_infra: list[Any] = []  # what each __enter__ replaced in the infra slot
        self.tracer: Any = None  # set by tracing; records operator calls

    @classmethod
    def is_infra_mode(cls) -> bool:
        """True, as PyTorch's: it runs below every user mode (Note [Infra modes])."""
        return True

    def __enter__(self) -> "FakeTensorMode":
        self._previous_infra.append(_pd._set_infra_mode(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._previous_infra:
            raise RuntimeError("FakeTensorMode.__exit__ without a matching __enter__")
        _pd._set_infra_mode(self._previous_infra.pop())

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        """Runs ``func`` on fake tensors: real tensor arguments become fake (``from_tensor``), then the
        operator's fake kernel or Meta kernel computes the results' metadata (Note [Fake tensors]).
        Returns NotImplemented when a tensor subclass with its own ``__torch_dispatch__`` is among the
        arguments, so that subclass runs first (its calls on its inner tensors then come back here)."""
        for cls in types:
            if not issubclass(cls, FakeTensor):
                return NotImplemented
        with _Computing(self):
            return _fake_fallback(func, None, args, kwargs or {})

    def from_tensor(self, t: Tensor) -> FakeTensor:
        """The fake tensor standing for real tensor t (the same object for the same t)."""
        if is_fake(t):
            return t  # type: ignore[return-value]
        if not isinstance(t, Tensor):
            raise TypeError(f"from_tensor: expected a Tensor, got {type(t).__name__}")
        hit = self._tensor_memo.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        with _C._DispatchKeyGuard(_NO_FAKE_NO_PYTHON, False):
            sid = _C._storage_id(t)
            base_entry = self._storage_memo.get(sid)
            if base_entry is None:
                itemsize = t.element_size()
                nbytes = _C._storage_nbytes(t)
                base = _C._get_op_overload("aten::empty.memory_format")(
                    [(nbytes + itemsize - 1) // itemsize], dtype=t.dtype, device=_META
                )
                base_entry = self._storage_memo[sid] = (t, base)
            base = base_entry[1]
            if base.dtype != t.dtype:
                # another dtype over the same real storage: a separate meta storage (aliasing not tracked)
                itemsize = t.element_size()
                base = _C._get_op_overload("aten::empty.memory_format")(
                    [(_C._storage_nbytes(t) + itemsize - 1) // itemsize], dtype=t.dtype, device=_META
                )
            meta = _C._get_op_overload("aten::as_strided")(base, list(t.shape), list(t.stride()), t.storage_offset())
        fake = _C._fake_from_meta(meta, t.device)
        self._tensor_memo[id(t)] = (t, fake)
        return fake

    from_real_tensor = from_tensor


# ---------------------------------------------------------------------------
# The Fake-key fallback
# ---------------------------------------------------------------------------
class _SchemaInfo:
    __slots__ = ("device_args", "mutable_args", "name", "schema", "has_device_arg")

    def __init__(self, op: Any) -> None:
        self.schema = _C._parse_schema(op._schema)
        self.name = op.__name__
        self.device_args = [a.name for a in self.schema.arguments if a.type in ("Device", "Device?")]
        self.mutable_args = [a.name for a in self.schema.arguments if a.is_write]


_schema_cache: dict[str, _SchemaInfo] = {}
_COPY_LIKE = {"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "copy", "_to_cpu"}
_fallback_depth = threading.local()


def _schema_info(op: Any) -> _SchemaInfo:
    info = _schema_cache.get(op.__name__)
    if info is None:
        info = _schema_cache[op.__name__] = _SchemaInfo(op)
    return info


def _map(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """Applies fn to every tensor in obj (tuples, lists and dicts of tensors included)."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _tensors(obj: Any) -> Iterator[Tensor]:
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _common_device(op_name: str, fakes: list[Tensor], check: bool) -> _C.device | None:
    device = None
    cpu_scalar = None
    for t in fakes:
        d = t.device
        if d.type == "cpu" and t.dim() == 0:
            cpu_scalar = cpu_scalar or d
            continue
        if device is None:
            device = d
        elif d != device and check:
            raise _C.ValueRuntimeError(
                f"Unhandled FakeTensor Device Propagation for {op_name}, found two different devices {device}, {d}"
            )
    return device or cpu_scalar


def _canonical_device(device: _C.device) -> _C.device:
    """'accel' -> 'accel:<current index>', as a real factory would place the tensor."""
    with _C._DispatchKeyGuard(_NO_FAKE_NO_PYTHON, False):
        return _C._get_op_overload("aten::empty.memory_format")([0], device=device).device


def _fake_fallback(op: Any, keyset: Any, args: tuple, kwargs: dict) -> Any:
    name = op.__name__
    if name == "aten::_local_scalar_dense":
        t = args[0]
        raise DataDependentOutputException(
            f"{name}: cannot read the value of a FakeTensor (item(), bool(), int(), float() need data; "
            f"size={tuple(t.shape)}, dtype={t.dtype}, device={t.device}); fake tensors have metadata only"
        )
    mode = _current_mode()
    entered = None
    if mode is None:
        # reached on fake tensors, not through a mode's handler: the entered FakeTensorMode if there is one
        # (the Python key was excluded on the way), else a fresh one
        mode = _active_infra_mode() or FakeTensorMode()
        entered = _Computing(mode)
        entered.__enter__()
    depth = getattr(_fallback_depth, "value", 0)
    _fallback_depth.value = depth + 1
    try:
        info = _schema_info(op)

        def to_fake(t: Tensor) -> Tensor:
            if is_fake(t):
                return t
            if not mode.allow_non_fake_inputs:
                raise UnsupportedFakeTensorException(
                    f"Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with "
                    f"'allow_non_fake_inputs'. Found in {name}"
                )
            fake = mode.from_tensor(t)
            if mode.tracer is not None and depth == 0:
                mode.tracer.constant(t, fake)
            return fake

        args = _map(args, to_fake)
        kwargs = _map(kwargs, to_fake)
        fakes = list(_tensors(args)) + list(_tensors(kwargs))
        explicit_device = None
        for arg_name in info.device_args:
            value = kwargs.get(arg_name)
            if value is None:
                idx = info.schema.argument_index(arg_name)
                if idx is not None and idx < len(args):
                    value = args[idx]
            if value is not None:
                explicit_device = _C.device(value) if not isinstance(value, _C.device) else value
                if explicit_device.index is None and explicit_device.type not in ("cpu", "meta"):
                    explicit_device = _canonical_device(explicit_device)
        short = name.split("::", 1)[1].split(".", 1)[0]
        device = _common_device(name, fakes, check=explicit_device is None and short not in _COPY_LIKE)
        out_device = explicit_device or device or _CPU
        if out_device.type == "meta":
            out_device = _META

        impl_entry = _fake_impls.get(name) or (_fake_impls.get(name[: -len(".default")]) if name.endswith(".default") else None)
        if impl_entry is not None:
            prev_ctx = getattr(_tls, "ctx", None)
            _tls.ctx = FakeImplCtx(name)
            try:
                result = impl_entry[0](*args, **kwargs)
            finally:
                _tls.ctx = prev_ctx
            for t in _tensors(result):
                if not is_fake(t) and not t.is_meta:
                    raise _C.ValueRuntimeError(
                        f"The fake kernel of {name} (registered at {impl_entry[1]}) returned a real tensor on "
                        f"{t.device}; fake kernels must create their outputs from the inputs (new_empty, "
                        f"empty_like, ...) or with factories, not return real data"
                    )
            result = _map(result, lambda t: t if is_fake(t) else _C._fake_from_meta(t, out_device))
        else:
            result = _run_meta(op, name, info, args, kwargs, out_device)
        if mode.tracer is not None and depth == 0:
            mode.tracer.record(op, args, kwargs, result)
        return result
    finally:
        _fallback_depth.value = depth
        if entered is not None:
            entered.__exit__()


def _run_meta(op: Any, name: str, info: _SchemaInfo, args: tuple, kwargs: dict, out_device: _C.device) -> Any:
    from .._library.custom_ops import _custom_op_without_meta

    if _custom_op_without_meta(name):
        raise UnsupportedFakeTensorException(
            f"There was no fake impl registered for {name}. This is necessary for FakeTensorMode and tracing "
            f"(backend_sdk.trace, opcheck's test_faketensor) to work. Please use "
            f"`backend_sdk.library.register_fake` (or the custom op's register_fake) to add a fake impl."
        )
    twins: dict[int, tuple[Tensor, Tensor]] = {}  # id(meta twin) -> (fake, twin)
    by_storage: dict[int, Tensor] = {}

    def to_meta(t: Tensor) -> Tensor:
        twin = _C._meta_from_fake(t)
        twins[id(twin)] = (t, twin)
        by_storage.setdefault(_C._storage_id(t), t)
        return twin

    meta_args = _map(args, to_meta)
    meta_kwargs = _map(kwargs, to_meta)
    # Every Device argument becomes meta (an absent one too: factories default to cpu).
    for arg_name in info.device_args:
        idx = info.schema.argument_index(arg_name)
        if idx is not None and idx < len(meta_args) and not info.schema.arguments[idx].kwarg_only:
            meta_args = tuple(meta_args)
            meta_args = meta_args[:idx] + (_META,) + meta_args[idx + 1 :]
        else:
            meta_kwargs[arg_name] = _META
    try:
        with _C._DispatchKeyGuard(_NO_FAKE_NO_PYTHON, False):
            meta_result = op(*meta_args, **meta_kwargs)
    except NotImplementedError as e:
        if "'Meta' backend" in str(e) or "meta" in str(e).lower():
            raise UnsupportedFakeTensorException(
                f"{name} has no Meta kernel and no fake impl, so it cannot run on fake tensors. Register one with "
                f"backend_sdk.library.register_fake('{name}') or a kernel for the 'Meta' key. ({e})"
            ) from e
        raise
    # In-place metadata changes (resize_, as_strided_, t_) go back to the fake tensors.
    for fake, twin in twins.values():
        if (
            twin.shape != fake.shape
            or twin.stride() != fake.stride()
            or twin.storage_offset() != fake.storage_offset()
            or _C._storage_id(twin) != _C._storage_id(fake)
        ):
            _C._sync_metadata(fake, twin)

    def wrap(t: Tensor) -> Tensor:
        hit = twins.get(id(t))
        if hit is not None and hit[1] is t:
            return hit[0]
        if not t.is_meta:
            return t  # an operator returned a real tensor (e.g. a cpu scalar): kept
        base = by_storage.get(_C._storage_id(t))
        return _C._fake_from_meta(t, base.device if base is not None else out_device)

    return _map(meta_result, wrap)


def _install() -> Any:
    from ..library import _register_fallback

    return _register_fallback("Fake", _fake_fallback)


_fallback_lib = _install()
