"""backend_sdk.zeros / ones as C functions (Note [Factory fast path], csrc/python/PyFactories.cpp) and
fill_'s small contiguous path (Note [Small contiguous fill], ops/Fill.cpp): plain calls are made in C,
every other call reaches the Python functions with its arguments unchanged, and the results, errors,
versions and dispatcher calls are those of the general paths."""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _C, _factories
from backend_sdk.utils._python_dispatch import TorchDispatchMode


@contextlib.contextmanager
def _counting_python_path(name: str) -> Iterator[list]:
    """Rebinds the C `name`'s Python path to a recorder (then the real one again)."""
    real = getattr(_factories, "_" + name)
    calls: list = []

    def general(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    _C._filled_factory(name, general)
    try:
        yield calls
    finally:
        _C._filled_factory(name, real)


class _Log(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.log: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(func.name())
        return func(*args, **(kwargs or {}))


def test_zeros_and_ones_are_c_functions_named_as_pytorchs() -> None:
    for fn, name in ((sdk.zeros, "zeros"), (sdk.ones, "ones")):
        assert type(fn).__name__ == "builtin_function_or_method"
        assert fn.__name__ == name and fn.__module__ == "backend_sdk"
        assert fn.__doc__.startswith(f"{name}(*size, *, out=None, dtype=None")


@pytest.mark.parametrize("name", ["zeros", "ones"])
@pytest.mark.parametrize("args,kwargs", [((3,), {}), ((2, 3), {}), (((2, 3),), {}), (([4],), {}), ((), {}),
                                         ((2,), {"dtype": sdk.int64}), ((2,), {"device": "cpu"}),
                                         ((2,), {"requires_grad": False, "dtype": None, "device": None})])
def test_plain_calls_are_made_in_c(device: str, name: str, args: tuple, kwargs: dict) -> None:
    if kwargs.get("device", "") is not None:  # device=None stays: the default device, the CPU
        kwargs = {**kwargs, "device": device}
    with _counting_python_path(name) as calls:
        t = getattr(sdk, name)(*args, **kwargs)
    assert calls == []
    shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    value = 0 if name == "zeros" else 1
    assert tuple(t.shape) == shape and t._version == 0 and not t.requires_grad and t.is_contiguous()
    assert t.dtype == kwargs.get("dtype") or sdk.float32
    assert t.device.type == (device if kwargs["device"] is not None else "cpu")
    np.testing.assert_array_equal(t.cpu().numpy(), np.full(shape, value))


@pytest.mark.parametrize("args,kwargs", [((2,), {"requires_grad": True}), ((2,), {"out": None}),
                                         ((2,), {"pin_memory": False}), ((2,), {"layout": None}),
                                         ((np.int64(2),), {}), ((sdk.Size([2]),), {}), ((-1,), {}),
                                         ((2.5,), {}), ((True,), {}), ((2,), {"bogus": 1}),
                                         ((2,), {"dtype": "float32"})])
def test_other_calls_reach_the_python_path_unchanged(args: tuple, kwargs: dict) -> None:
    with _counting_python_path("zeros") as calls:
        try:
            sdk.zeros(*args, **kwargs)
        except (TypeError, ValueError, RuntimeError):
            pass
    if args and type(args[0]) is sdk.Size:  # a tuple subclass of ints: made in C
        assert calls == []
    else:
        assert calls == [(args, kwargs)]


def test_python_path_results_and_errors_name_the_factory() -> None:
    g = sdk.zeros(2, 3, requires_grad=True)
    assert g.requires_grad and g.is_leaf and g.grad_fn is None and g.numpy().sum() == 0
    out = sdk.empty(4)
    r = sdk.ones(4, out=out)
    assert r is out and out.numpy().tolist() == [1.0] * 4
    with pytest.raises(TypeError, match=r"^zeros\(\) got an unexpected keyword argument 'bogus'$"):
        sdk.zeros(2, bogus=1)
    with pytest.raises(TypeError, match=r"^ones\(\): expected a sequence of ints, but got float$"):
        sdk.ones(2.5)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        sdk.ones(-1)
    with pytest.raises(RuntimeError, match="device type at start of device string: nodevice"):
        sdk.zeros(2, device="nodevice")  # PyTorch's text


def test_a_mode_sees_empty_and_fill(device: str) -> None:
    with _Log() as mode:
        sdk.zeros(3, device=device)
        sdk.ones(2, 2, dtype=sdk.int32, device=device)
    assert mode.log == ["aten::empty.memory_format", "aten::fill_.Scalar"] * 2


def test_zeros_and_ones_on_meta_and_every_device(device: str) -> None:
    m = sdk.zeros(2, 3, device="meta")
    assert m.is_meta and tuple(m.shape) == (2, 3)
    a = sdk.ones(5, device=device)
    z = sdk.zeros(2, 2, dtype=sdk.int64, device=device)
    assert a.device.type == z.device.type == device and a.cpu().numpy().tolist() == [1.0] * 5
    assert z.dtype == sdk.int64 and z.cpu().numpy().tolist() == [[0, 0], [0, 0]]


# ---- fill_ (Note [Small contiguous fill]) ----------------------------------------------------------------
# The small path is the CPU kernel's; the same results must hold on every test device.
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("n", [1, 3, 17, 65535, 65536, 70000])
def test_fill_small_and_large_contiguous_match_strided(device: str, dtype: str, n: int) -> None:
    dt = getattr(sdk, dtype)
    value = True if dtype == "bool" else 3
    contiguous = sdk.empty(n, dtype=dt, device=device).fill_(value)
    strided = sdk.empty(2 * n, dtype=dt, device=device)[::2].fill_(value)  # the TensorIterator path
    assert contiguous.cpu().numpy().tolist() == strided.cpu().numpy().tolist()
    zero = sdk.full([n], 1, dtype=dt, device=device).fill_(0)
    assert not zero.cpu().numpy().astype(np.float64).any()
    if dtype not in ("bool", "uint8", "int8"):
        neg = sdk.empty(n, dtype=dt, device=device).fill_(-2.0 if dt.is_floating_point else -2)
        assert (neg.cpu().numpy().astype(np.float64) == -2).all()


def test_fill_small_contiguous_checks_the_value_and_bumps_the_version(device: str) -> None:
    t = sdk.zeros(3, dtype=sdk.int8, device=device)
    v = t._version
    t.fill_(5)
    assert t._version == v + 1 and t.cpu().numpy().tolist() == [5, 5, 5]
    with pytest.raises((RuntimeError, ValueError), match="fill_"):
        t.fill_(1000)  # does not fit in int8: the checked conversion, as before
    assert t.cpu().numpy().tolist() == [5, 5, 5]
    f = sdk.zeros(4, device=device).fill_(float("nan"))
    assert np.isnan(f.cpu().numpy()).all()
    m = sdk.empty(3, device="meta")
    mv = m._version
    m.fill_(2.0)
    assert m._version == mv + 1
    e = sdk.empty(0, device=device).fill_(1.0)
    assert e.numel() == 0


def test_fill_of_an_expanded_tensor_still_refuses(device: str) -> None:
    x = sdk.zeros(1, device=device).expand(4)
    with pytest.raises((RuntimeError, ValueError)):
        x.fill_(1.0)
