"""Sample-input building blocks for the operator database (``backend_sdk.testing._opinfo``).

Tensors are built on the CPU from a seeded numpy generator (so every run sees the same
values), laid out contiguous or not (transposed, sliced with steps, expanded), and then moved
to the requested device with their sizes and strides kept (see ``move``).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import ml_dtypes
import numpy as np

import backend_sdk
from backend_sdk import _C

__all__ = [
    "ALL_DTYPES", "BOOL", "INTEGRAL", "FLOATING", "HALF", "NUMERIC", "SIGNED", "INTEGRAL_AND_BOOL",
    "SampleInput", "make_tensor", "move", "numpy_dtype", "to_numpy", "rng_for", "is_floating", "is_integral",
    "LAYOUTS",
]

ALL_DTYPES: tuple = (
    _C.bool, _C.uint8, _C.int8, _C.int16, _C.int32, _C.int64, _C.float16, _C.bfloat16, _C.float32, _C.float64,
)
BOOL: tuple = (_C.bool,)
INTEGRAL: tuple = (_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64)
SIGNED: tuple = (_C.int8, _C.int16, _C.int32, _C.int64, _C.float16, _C.bfloat16, _C.float32, _C.float64)
FLOATING: tuple = (_C.float16, _C.bfloat16, _C.float32, _C.float64)
HALF: tuple = (_C.float16, _C.bfloat16)
NUMERIC: tuple = INTEGRAL + FLOATING
INTEGRAL_AND_BOOL: tuple = BOOL + INTEGRAL

_NUMPY = {
    "bool": np.dtype(np.bool_), "uint8": np.dtype(np.uint8), "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
}


_NAMES: dict = {}


def dtype_name(dtype: Any) -> str:
    """'float32' for backend_sdk.float32."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = str(dtype).split(".")[-1]
    return name


def numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a backend_sdk dtype (ml_dtypes.bfloat16 for bfloat16)."""
    return _NUMPY[dtype_name(dtype)]


def is_floating(dtype: Any) -> bool:
    return dtype in FLOATING


def is_integral(dtype: Any, include_bool: bool = False) -> bool:
    return dtype in INTEGRAL or (include_bool and dtype == _C.bool)


def rng_for(*key: Any) -> np.random.Generator:
    """A numpy generator seeded from ``key`` (op name, dtype, ...): same values on every run."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _values(shape: Sequence[int], dtype: Any, rng: np.random.Generator, low: float | None, high: float | None,
            exclude_zero: bool, integers_only: bool) -> np.ndarray:
    npd = numpy_dtype(dtype)
    shape = tuple(shape)
    if dtype == _C.bool:
        v = rng.integers(0, 2, size=shape).astype(bool)
        return np.ones(shape, bool) if exclude_zero else v
    if dtype in INTEGRAL:
        info = np.iinfo(npd)
        lo = max(int(-9 if low is None else low), int(info.min))
        hi = min(int(9 if high is None else high), int(info.max))
        v = rng.integers(lo, hi + 1, size=shape)
        if exclude_zero:
            v = np.where(v == 0, 1 if hi >= 1 else -1, v)
        return v.astype(npd)
    lo = -5.0 if low is None else float(low)
    hi = 5.0 if high is None else float(high)
    if integers_only:
        v = rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(np.float64)
    else:
        v = rng.uniform(lo, hi, size=shape)
    if exclude_zero:
        v = np.where(np.abs(v) < 0.25, np.where(v < 0, -0.5, 0.5) if lo < 0 else 0.5, v)
        if not (lo < 0.5 <= hi) and not (lo <= -0.5 < hi):
            v = np.where(v == 0, hi, v)
    return v.astype(npd)


# Layouts a sample tensor can have (see make_tensor).
LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def make_tensor(shape: Sequence[int], dtype: Any, rng: np.random.Generator, *, low: float | None = None,
                high: float | None = None, exclude_zero: bool = False, layout: str = "contiguous",
                integers_only: bool = False) -> backend_sdk.Tensor:
    """A CPU tensor of ``shape`` and ``dtype`` with values in [low, high] (defaults: ints in [-9, 9],
    uint8 in [0, 9], floats uniform in [-5, 5)), laid out as ``layout``:

    * ``contiguous``;
    * ``transposed``: the last two dims swapped in memory (for ndim < 2: contiguous);
    * ``sliced``: a view taking every other element of a buffer twice as long in the last dim
      (for 0-d: contiguous);
    * ``expanded``: a stride-0 view expanded from size 1 in the first dim of size > 1
      (none: contiguous).
    """
    shape = tuple(int(s) for s in shape)
    nd = len(shape)
    if layout == "transposed" and nd >= 2:
        swapped = shape[:-2] + (shape[-1], shape[-2])
        base = backend_sdk.from_numpy(_values(swapped, dtype, rng, low, high, exclude_zero, integers_only))
        return base.transpose(-1, -2)
    if layout == "sliced" and nd >= 1:
        wide = shape[:-1] + (shape[-1] * 2,)
        base = backend_sdk.from_numpy(_values(wide, dtype, rng, low, high, exclude_zero, integers_only))
        return base[(Ellipsis, slice(None, None, 2))]
    if layout == "expanded":
        dims = [i for i, s in enumerate(shape) if s > 1]
        if dims:
            small = list(shape)
            small[dims[0]] = 1
            base = backend_sdk.from_numpy(_values(small, dtype, rng, low, high, exclude_zero, integers_only))
            return base.expand(*shape)
    return backend_sdk.from_numpy(_values(shape, dtype, rng, low, high, exclude_zero, integers_only))


def copy_with_strides(t: backend_sdk.Tensor, device: Any = None) -> backend_sdk.Tensor:
    """A fresh copy of ``t`` (on ``device``, default t's own) with the same sizes and strides; expanded
    dims stay stride-0 views of a copied base, so overlap and layout are what the original had."""
    dev = t.device if device is None else device
    sizes, strides = list(t.shape), list(t.stride())
    zero = [i for i, (s, st) in enumerate(zip(sizes, strides)) if st == 0 and s > 1]
    if zero:
        base = t
        for i in zero:
            base = base.narrow(i, 0, 1)
        return copy_with_strides(base, dev).expand(*sizes)
    out = backend_sdk.empty_strided(sizes, strides, dtype=t.dtype, device=dev)
    if t.numel() > 0:
        out.copy_(t.detach() if getattr(t, "requires_grad", False) else t)
    return out


def move(t: backend_sdk.Tensor, device: Any) -> backend_sdk.Tensor:
    """``t`` on ``device`` with the same sizes and strides (``t`` itself if already there)."""
    dev = backend_sdk.device(device) if isinstance(device, str) else device
    if str(t.device) == str(dev):
        return t
    return copy_with_strides(t, dev)


def to_numpy(t: Any, upcast_half: bool = True) -> Any:
    """A numpy copy of a tensor (float16/bfloat16 upcast to float32 when ``upcast_half``); other
    values unchanged. Dtypes become numpy dtypes."""
    if isinstance(t, backend_sdk.Tensor):
        if getattr(t, "requires_grad", False):
            t = t.detach()
        a = np.array(t.cpu().numpy() if t.device.type != "cpu" else t.numpy(), copy=True)
        if upcast_half and a.dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)):
            a = a.astype(np.float32)
        return a
    if isinstance(t, _C.dtype):
        return numpy_dtype(t)
    if isinstance(t, list):
        return [to_numpy(x, upcast_half) for x in t]
    if isinstance(t, tuple):
        return tuple(to_numpy(x, upcast_half) for x in t)
    if isinstance(t, dict):
        return {k: to_numpy(v, upcast_half) for k, v in t.items()}
    return t


def _map_tensors(obj: Any, fn: Callable[[backend_sdk.Tensor], Any]) -> Any:
    if isinstance(obj, backend_sdk.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [_map_tensors(x, fn) for x in obj]
    if isinstance(obj, tuple):
        return tuple(_map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


@dataclass
class SampleInput:
    """One call of an operator: ``op(input, *args, **kwargs)``. ``name`` says what it exercises."""

    input: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    # the variants this sample applies to (None: all of the OpInfo's); e.g. sum() without dim
    # has no out= overload
    variants: tuple | None = None

    def transform(self, fn: Callable[[backend_sdk.Tensor], Any]) -> "SampleInput":
        """A new sample with ``fn`` applied to every tensor (nested in lists, tuples and dicts)."""
        return SampleInput(_map_tensors(self.input, fn), _map_tensors(tuple(self.args), fn),
                           _map_tensors(dict(self.kwargs), fn), self.name, self.variants)

    def numpy(self, upcast_half: bool = True) -> tuple[Any, tuple, dict]:
        """(input, args, kwargs) with tensors as numpy arrays and dtypes as numpy dtypes."""
        return to_numpy(self.input, upcast_half), to_numpy(tuple(self.args), upcast_half), \
            to_numpy(dict(self.kwargs), upcast_half)

    def tensors(self) -> list[backend_sdk.Tensor]:
        """Every tensor of the sample, input first."""
        out: list = []
        _map_tensors((self.input, self.args, self.kwargs), out.append)
        return out

    def __repr__(self) -> str:
        def show(x: Any) -> str:
            if isinstance(x, backend_sdk.Tensor):
                return f"Tensor(shape={tuple(x.shape)}, stride={tuple(x.stride())}, dtype={dtype_name(x.dtype)})"
            if isinstance(x, (list, tuple)):
                inner = ", ".join(show(v) for v in x)
                return f"[{inner}]" if isinstance(x, list) else f"({inner})"
            if isinstance(x, dict):
                return "{" + ", ".join(f"{k}={show(v)}" for k, v in x.items()) + "}"
            return repr(x)

        return f"SampleInput[{self.name}](input={show(self.input)}, args={show(self.args)}, kwargs={show(self.kwargs)})"


def shapes_unary() -> Iterable[tuple[tuple, str]]:
    """(shape, layout) pairs every elementwise op is tried on: 0-d, empty, 1-d, 2-d and 3-d in
    each layout."""
    yield (), "contiguous"
    yield (0,), "contiguous"
    yield (0, 3), "contiguous"
    yield (7,), "contiguous"
    yield (7,), "sliced"
    for shape in ((3, 4), (2, 3, 5)):
        for layout in LAYOUTS:
            yield shape, layout


def shapes_binary() -> Iterable[tuple[tuple, str, tuple, str, str]]:
    """(shape_a, layout_a, shape_b, layout_b, name) pairs for binary ops: same shape, broadcast
    both ways, 0-d with n-d, empty, non-contiguous on either side."""
    yield (), "contiguous", (), "contiguous", "0d_0d"
    yield (3, 4), "contiguous", (3, 4), "contiguous", "same"
    yield (3, 4), "contiguous", (), "contiguous", "nd_0d"
    yield (), "contiguous", (3, 4), "contiguous", "0d_nd"
    yield (3, 1), "contiguous", (1, 4), "contiguous", "broadcast_both"
    yield (2, 3, 4), "contiguous", (4,), "contiguous", "broadcast_rhs"
    yield (4,), "contiguous", (2, 3, 4), "contiguous", "broadcast_lhs"
    yield (0, 3), "contiguous", (3,), "contiguous", "empty"
    yield (3, 4), "transposed", (3, 4), "sliced", "noncontig"
    yield (2, 3, 4), "expanded", (2, 3, 4), "transposed", "expanded_transposed"
    yield (3, 4), "sliced", (1, 4), "contiguous", "sliced_broadcast"
