"""atheris fuzz targets for the Python-facing parsers and the binding layer (issue 12).

Run through the runner, ``python -m tests.fuzz.run TARGET --seconds N``, which starts
``python -m tests.fuzz.targets TARGET <libFuzzer flags>`` in a subprocess so that a crash is
reported rather than taking the runner down.

Coverage: atheris instruments the bytecode of ``backend_sdk`` and ``accel`` (the Python layer:
argument preparation, indexing, the library API) and libFuzzer steers by it. The C++ under it is
not instrumented (that needs the SDK built with clang's -fsanitize=fuzzer-no-link); the C++ parsers
have libFuzzer harnesses of their own (tests/fuzz/cpp/, targets schema_cpp and device_cpp).

Oracle (every target): no crash, no hang (libFuzzer's -timeout), and no exception other than the
SDK's documented types (Note [Error kinds]): TypeError, ValueError, RuntimeError (with
NotImplementedError, AcceleratorError), IndexError and OutOfMemoryError. Any other exception escapes
the target and libFuzzer records the input as a crash. The indexing target is also differential:
where numpy and the SDK both accept an index, the results must be equal.
"""
from __future__ import annotations

import faulthandler
import itertools
import os
import sys
import warnings
from typing import Any, Callable

import atheris

with atheris.instrument_imports(include=["backend_sdk", "accel"]):
    import backend_sdk as sdk
    import accel  # noqa: F401  (renames PrivateUse1 to "accel", attaches the simulator)
    from backend_sdk import _C, library

import numpy as np

_VERBOSE = bool(os.environ.get("SDK_FUZZ_VERBOSE"))  # print each call (to reproduce a finding)
ALLOWED: tuple[type[BaseException], ...] = (TypeError, ValueError, RuntimeError, IndexError, sdk.OutOfMemoryError)

warnings.simplefilter("ignore")  # warnings are not findings (UserWarning about non-writeable arrays, ...)
_ids = itertools.count()


# ---- schema: the parser through _C and library.define ---------------------------------------

def fuzz_schema(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        schema = _C._parse_schema(text)
    except ALLOWED:
        schema = None
    if schema is not None:
        printed = str(schema)
        again = _C._parse_schema(printed)  # the canonical text always parses ...
        if str(again) != printed:  # ... to the same text
            raise AssertionError(f"schema round trip: {text!r} -> {printed!r} -> {str(again)!r}")
    # library.define: the name must be unqualified or in the library's namespace.
    ns = f"fuzz_schema_{next(_ids)}"
    lib = library.Library(ns, "DEF")
    try:
        lib.define(text)
    except ALLOWED:
        pass
    finally:
        lib.close()


# ---- device strings ---------------------------------------------------------------------------

def fuzz_device(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    choice = fdp.ConsumeIntInRange(0, 3)
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 24))
    try:
        if choice == 0:
            d = sdk.device(text)
        elif choice == 1:
            d = sdk.device(text, fdp.ConsumeIntInRange(-(2**64), 2**64))
        elif choice == 2:
            d = sdk.device(fdp.ConsumeIntInRange(-(2**64), 2**64))
        else:
            d = sdk.empty(1, device=text).device
    except ALLOWED:
        return
    if sdk.device(str(d)) != d:
        raise AssertionError(f"device round trip: {text!r} -> {d!r} -> {str(d)!r}")


# ---- binding: random arguments against operator schemas ---------------------------------------

def _define_custom_ops() -> list[Any]:
    """Custom operators whose schemas use every argument kind, with Python kernels."""
    lib = library.Library("fuzz_bind", "DEF")
    schemas = {
        "many": "many(Tensor x, int n, float f=1.5, *, bool flag=False, str mode='a', int[] sizes=[1, 2]) -> Tensor",
        "opt": "opt(Tensor? x, Scalar s=2, ScalarType? dtype=None, Device? device=None, int[2] pair=1) -> Tensor",
        "lists": "lists(Tensor[] xs, Tensor?[] ys, float[] fs, SymInt[] si) -> Tensor[]",
        "inplace": "inplace(Tensor(a!) x, Scalar v) -> Tensor(a!)",
        "multi": "multi(Tensor x, Tensor y, *, Tensor(a!) out) -> (Tensor, Tensor)",
    }
    for s in schemas.values():
        lib.define(s)

    def many(x, n, f=1.5, *, flag=False, mode="a", sizes=(1, 2)):
        return x * f + n

    def opt(x, s=2, dtype=None, device=None, pair=(1, 1)):
        return sdk.zeros(2) if x is None else x + s

    def lists(xs, ys, fs, si):
        return [x.clone() for x in xs]

    def inplace(x, v):
        return x.fill_(v)

    def multi(x, y, *, out):
        return x + y, out

    for name, fn in {"many": many, "opt": opt, "lists": lists, "inplace": inplace, "multi": multi}.items():
        lib.impl(name, fn, "CPU")
        lib.impl(name, fn, "PrivateUse1")
    _keep.append(lib)
    return [getattr(sdk.ops.fuzz_bind, n).default for n in schemas]


_keep: list[Any] = []
_OPS: list[Any] = []


def _ops() -> list[Any]:
    if not _OPS:
        for q in sorted(_C._registered_operators()):
            ns, rest = q.split("::", 1)
            name, _, overload = rest.partition(".")
            if ns != "aten":
                continue
            _OPS.append(getattr(getattr(getattr(sdk.ops, ns), name), overload or "default"))
        _OPS.extend(_define_custom_ops())
    return _OPS


_DTYPES = [sdk.float32, sdk.float64, sdk.int64, sdk.int32, sdk.bool, sdk.float16, sdk.uint8, sdk.bfloat16, sdk.int8]
_INTS = [0, 1, 2, 3, -1, -2, 5, 7, 2**40, 2**62, 2**63 - 1, -(2**63), 2**64]
_FLOATS = [0.0, -0.0, 1.5, -2.0, float("nan"), float("inf"), float("-inf"), 1e308]
_STRS = ["", "a", "cpu", "accel:0", "mean", "sum", "none", "reflect", "contiguous_format", "\x00", "é"]
_KW = ["self", "other", "out", "dim", "keepdim", "dtype", "alpha", "input", "size", "device", "bogus", "n", "x"]


def _tensor(fdp: atheris.FuzzedDataProvider) -> Any:
    shape = [fdp.ConsumeIntInRange(0, 4) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    dtype = fdp.PickValueInList(_DTYPES)
    device = fdp.PickValueInList(["cpu", "cpu", "accel:0", "accel:1", "meta"])
    t = sdk.ones(shape, dtype=dtype, device=device)
    if fdp.ConsumeBool() and t.dim() > 1:
        t = t.transpose(0, 1)
    if fdp.ConsumeIntInRange(0, 7) == 0:
        t.requires_grad_(t.dtype.is_floating_point)
    return t


def _value(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    kind = fdp.ConsumeIntInRange(0, 11 if depth < 2 else 8)
    if kind <= 2:
        return _tensor(fdp)
    if kind == 3:
        return fdp.PickValueInList(_INTS) if fdp.ConsumeBool() else fdp.ConsumeIntInRange(-8, 8)
    if kind == 4:
        return fdp.PickValueInList(_FLOATS) if fdp.ConsumeBool() else fdp.ConsumeFloat()
    if kind == 5:
        return fdp.ConsumeBool()
    if kind == 6:
        return None
    if kind == 7:
        return fdp.PickValueInList(_STRS + _DTYPES + [sdk.device("cpu"), sdk.device("accel:1")])
    if kind == 8:
        return fdp.PickValueInList([np.float32(2), np.int64(3), np.ones(2), object(), complex(1, 2), b"x", Ellipsis])
    items = [_value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    return tuple(items) if kind == 9 else items


def fuzz_binding(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    ops = _ops()
    op = ops[fdp.ConsumeIntInRange(0, len(ops) - 1)]
    args = [_value(fdp) for _ in range(fdp.ConsumeIntInRange(0, 5))]
    kwargs = {fdp.PickValueInList(_KW): _value(fdp) for _ in range(fdp.ConsumeIntInRange(0, 2))}
    if _VERBOSE:
        print(f"call {op}(*{args!r}, **{kwargs!r})", flush=True)
    try:
        result = op(*args, **kwargs)
        if fdp.ConsumeBool():  # reach the device: a fault or a bad kernel surfaces at synchronisation
            accel.synchronize(0)
            accel.synchronize(1)
    except ALLOWED:
        return
    del result


# ---- indexing: random index tuples, differential against numpy ---------------------------------

def _index_item(fdp: atheris.FuzzedDataProvider, shape: tuple[int, ...]) -> Any:
    kind = fdp.ConsumeIntInRange(0, 10)
    n = max(max(shape, default=1), 1)
    if kind <= 2:
        return fdp.ConsumeIntInRange(-n - 1, n + 1)
    if kind <= 4:
        def bound() -> Any:
            return None if fdp.ConsumeBool() else fdp.ConsumeIntInRange(-n - 2, n + 2)
        step = None if fdp.ConsumeBool() else fdp.PickValueInList([1, 2, 3, -1, 0])
        return slice(bound(), bound(), step)
    if kind == 5:
        return fdp.PickValueInList([None, Ellipsis, True, False])
    if kind == 6:
        return [fdp.ConsumeIntInRange(-n - 1, n) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if kind == 7:
        return np.array([fdp.ConsumeIntInRange(-n, n - 1) for _ in range(fdp.ConsumeIntInRange(0, 3))], dtype=np.int64)
    if kind == 8:
        return np.array([fdp.ConsumeBool() for _ in range(fdp.ConsumeIntInRange(0, n + 1))], dtype=bool)
    if kind == 9:
        return fdp.PickValueInList([1.5, "a", object(), (1, (2,)), [[0, 1], [1, 0]], [True, False]])
    return np.int64(fdp.ConsumeIntInRange(-n, n))


def _as_sdk(item: Any, device: str) -> Any:
    """The SDK's spelling of a numpy index item: integer and bool arrays become tensors."""
    if isinstance(item, np.ndarray):
        return sdk.from_numpy(item).to(device)
    return item


def fuzz_indexing(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    shape = tuple(fdp.ConsumeIntInRange(0, 4) for _ in range(fdp.ConsumeIntInRange(0, 4)))
    device = fdp.PickValueInList(["cpu", "cpu", "accel:0"])
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = sdk.from_numpy(a.copy()).to(device)
    items = [_index_item(fdp, shape) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    index: Any = tuple(items) if fdp.ConsumeBool() or len(items) != 1 else items[0]
    sdk_index = tuple(_as_sdk(i, device) for i in index) if isinstance(index, tuple) else _as_sdk(index, device)
    write = fdp.ConsumeBool()
    try:
        if write:
            value = fdp.PickValueInList([-1.0, 7, True])
            x[sdk_index] = value
            got = x.cpu().numpy()
        else:
            got = x[sdk_index].cpu().numpy()
    except ALLOWED:
        return
    finally:
        # An asynchronous device error (an index checked by the kernel, as on CUDA) belongs to
        # this input, not the next one.
        try:
            accel.synchronize(0)
        except sdk.AcceleratorError:
            pass
    basic = all(i is None or i is Ellipsis or isinstance(i, (int, slice)) and not isinstance(i, bool)
                for i in (index if isinstance(index, tuple) else (index,)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if write:
                expected = a.copy()
                expected[index] = value
            else:
                expected = a[index]
    except Exception:  # noqa: BLE001 - numpy refuses: nothing to compare
        return
    if write and not basic:
        return  # duplicate advanced indices: which write wins is unspecified (PyTorch too)
    if isinstance(index, list) and any(isinstance(i, (list, tuple, np.ndarray, slice)) or i is None or i is Ellipsis
                                       for i in index):
        return  # PyTorch reads such a list as a tuple of indices (NumPy < 1.23 did too; NumPy now as an array)
    items = index if isinstance(index, tuple) else (index,)
    advanced = sum(isinstance(i, (list, np.ndarray, bool)) for i in items)
    ints = any(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items)
    if advanced and ints or advanced > 1 and any(isinstance(i, bool) for i in items):
        # PyTorch (the specification) applies integer scalars as basic indices before the advanced
        # ones and a bool scalar as an unsqueeze plus an index of its own; numpy treats both as
        # advanced indices broadcast together, which places dimensions differently
        # (x[-3, None, [0, 1]] of a (3, 4, 1) tensor is (1, 2, 1) in PyTorch, (2, 1, 1) in numpy).
        return
    if advanced > 1 and any(i is None or i is Ellipsis for i in items):
        # PyTorch decides whether advanced indices are adjacent by the dimensions they index (a
        # zero-width Ellipsis does not separate them); numpy by their places in the tuple.
        return
    if np.shape(got) != np.shape(expected) or not np.array_equal(got, expected):
        raise AssertionError(
            f"{'x[i] = v' if write else 'x[i]'} differs from numpy: shape {shape}, index {index!r}\n"
            f"  sdk:   {np.shape(got)} {got!r}\n  numpy: {np.shape(expected)} {expected!r}")


TARGETS: dict[str, Callable[[bytes], None]] = {
    "schema": fuzz_schema,
    "device": fuzz_device,
    "binding": fuzz_binding,
    "indexing": fuzz_indexing,
}


def _with_hang_dump(fn: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """Dumps every thread's Python stack when one input runs longer than SDK_FUZZ_HANG_DUMP seconds
    (default 10; libFuzzer's -timeout then records the input): says where a hang waits."""
    seconds = float(os.environ.get("SDK_FUZZ_HANG_DUMP", "10"))

    def run(data: bytes) -> None:
        faulthandler.dump_traceback_later(seconds, exit=False)
        try:
            fn(data)
        finally:
            faulthandler.cancel_dump_traceback_later()

    return run


def main() -> None:
    target = _with_hang_dump(TARGETS[sys.argv[1]])
    if len(sys.argv) == 4 and sys.argv[2] == "--reproduce":  # one input, in-process, with a traceback
        with open(sys.argv[3], "rb") as f:
            target(f.read())
        print("no finding")
        return
    atheris.Setup([sys.argv[0]] + sys.argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
