"""The operator database itself: its API (used by the conformance suite), deterministic samples,
and samples built for another device keeping the CPU samples' sizes, strides and values."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.testing._opinfo import (
    ALL_DTYPES, FLOATING, VARIANTS, OpInfo, SampleInput, call_variant, op_db, op_db_by_name, result_type,
)
from backend_sdk.testing._sample_inputs import dtype_name, to_numpy


def test_op_db_shape() -> None:
    assert len(op_db) >= 100
    names = [op.full_name for op in op_db]
    assert len(names) == len(set(names)), "full names must be unique (they are test ids)"
    for op in op_db:
        assert isinstance(op, OpInfo)
        assert set(op.variants) <= set(VARIANTS) and op.variants
        assert op.dtypes and set(op.dtypes) <= set(ALL_DTYPES)
        assert callable(op.op), op
        assert op_db_by_name[op.name].name == op.name
        for q in op.aten_overloads:
            assert q.startswith("aten::")


def test_samples_are_deterministic() -> None:
    op = op_db_by_name["add"]
    a = [s.numpy() for s in op.sample_inputs("cpu", backend_sdk.float32)]
    b = [s.numpy() for s in op.sample_inputs("cpu", backend_sdk.float32)]
    assert len(a) == len(b)
    for (x, xa, _), (y, ya, _) in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_sample_transform_and_call_variant() -> None:
    op = op_db_by_name["mul"]
    s = next(iter(op.sample_inputs("cpu", backend_sdk.float32)))
    moved = s.transform(lambda t: t.to(backend_sdk.float64))
    assert moved.input.dtype == backend_sdk.float64 and moved.name == s.name
    r = call_variant(op, "out", s)
    np.testing.assert_array_equal(r.numpy(), call_variant(op, "functional", s).numpy())
    with pytest.raises(ValueError, match="unknown variant"):
        call_variant(op, "sideways", s)


def test_result_type_follows_pytorch() -> None:
    t = lambda *shape, dtype: backend_sdk.zeros(*shape, dtype=dtype)  # noqa: E731
    assert result_type(t(2, dtype=_C.int32), 1.5) == backend_sdk.get_default_dtype()
    assert result_type(t(2, dtype=_C.int8), 1000) == _C.int8  # a Python int does not widen an int tensor
    assert result_type(t(2, dtype=_C.bool), 3) == _C.int64
    assert result_type(t(2, dtype=_C.float16), t(dtype=_C.float64)) == _C.float16  # 0-d of same category
    assert result_type(t(2, dtype=_C.int32), t(dtype=_C.float64)) == _C.float64  # 0-d of higher category
    assert result_type(t(2, dtype=_C.uint8), t(2, dtype=_C.int8)) == _C.int16


@pytest.mark.parametrize("device", ["meta", "accel"])
def test_samples_on_another_device_keep_layout(device: str) -> None:
    for op in op_db:
        dtype = op.dtypes[-1]
        for c, d in zip(op.sample_inputs("cpu", dtype), op.sample_inputs(device, dtype)):
            ct, dt = c.tensors(), d.tensors()
            assert len(ct) == len(dt), (op, c)
            for x, y in zip(ct, dt):
                assert y.device.type == device, (op, d)
                assert tuple(x.shape) == tuple(y.shape) and x.dtype == y.dtype, (op, d)
                assert tuple(x.stride()) == tuple(y.stride()) or x.numel() == 0, (op, c, d)
                if device != "meta":
                    np.testing.assert_array_equal(to_numpy(x), to_numpy(y))
            if op.category in ("factory", "random") and not isinstance(d.input, backend_sdk.Tensor):
                assert d.kwargs["device"] == device


def test_requires_grad_samples() -> None:
    op = op_db_by_name["mul"]
    for s in op.sample_inputs("cpu", backend_sdk.float32, requires_grad=True):
        assert all(t.requires_grad == (t.dtype in FLOATING) for t in s.tensors())
