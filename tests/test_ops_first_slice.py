"""The first slice of aten operators against numpy on every test device (cpu, accel, pyaccel:
instantiate_device_type_tests), and Meta against each device."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import backend_sdk
from backend_sdk import _C
from backend_sdk.testing import instantiate_device_type_tests

aten = backend_sdk.ops.aten

NUMERIC = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def np_dtype(name: str):
    return np.dtype(name)


def t(array, device: str = "cpu") -> backend_sdk.Tensor:
    return backend_sdk.from_numpy(np.asarray(array)).to(device)


def host(x: backend_sdk.Tensor) -> np.ndarray:
    return x.cpu().numpy()


# ---- schemas --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, schema",
    [
        ("aten::add.Tensor", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
        ("aten::add_.Tensor", "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"),
        ("aten::add.out", "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"),
        ("aten::mul.Tensor", "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor"),
        ("aten::view", "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)"),
        ("aten::fill_.Scalar", "aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)"),
        ("aten::copy_", "aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)"),
    ],
)
def test_schemas_are_pytorchs(name, schema):
    assert str(_C._get_op_overload(name)._schema) == schema


def test_computed_table_of_add_has_cpu_and_meta_kernels():
    table = _C._dispatch_dump_table("aten::add.Tensor")
    assert "CPU: registered at" in table and "Meta: registered at" in table
    assert re.search(r"^AutogradCPU: registered at .*autograd/Fallback\.cpp:\d+ \[backend fallback\]$", table, re.M)


    # ---- add / mul against numpy, on every test device -----------------------------------------------------
shapes = st.sampled_from([(), (1,), (3,), (2, 3), (3, 1), (1, 3), (2, 1, 3), (0,), (0, 3)])


class TestFirstSliceDeviceType:
    @settings(max_examples=60, deadline=None)
    @given(
        a_shape=shapes, b_shape=shapes, a_dtype=st.sampled_from(NUMERIC), b_dtype=st.sampled_from(NUMERIC),
        op=st.sampled_from(["add", "mul"]), data=st.data(),
    )
    def test_binary_ops_match_numpy_with_broadcasting_and_promotion(self, device, a_shape, b_shape, a_dtype, b_dtype,
                                                                     op, data):
        try:
            expected_shape = np.broadcast_shapes(a_shape, b_shape)
        except ValueError:
            with pytest.raises(ValueError, match="must match the size of tensor"):
                getattr(backend_sdk, op)(t(np.zeros(a_shape, a_dtype), device), t(np.zeros(b_shape, b_dtype), device))
            return
        elements = st.integers(0, 9)
        a = data.draw(hnp.arrays(np_dtype(a_dtype), a_shape, elements=elements))
        b = data.draw(hnp.arrays(np_dtype(b_dtype), b_shape, elements=elements))
        result = getattr(backend_sdk, op)(t(a, device), t(b, device))
        expected_dtype = backend_sdk.promote_types(getattr(backend_sdk, a_dtype), getattr(backend_sdk, b_dtype))
        # 0-dim operands do not promote a dimensioned operand of the same kind (PyTorch's rule)
        if (a.ndim == 0) != (b.ndim == 0) and (np.dtype(a_dtype).kind == "f") == (np.dtype(b_dtype).kind == "f"):
            expected_dtype = getattr(backend_sdk, a_dtype if a.ndim else b_dtype)
        assert result.dtype == expected_dtype and result.device.type == self.device_type
        assert result.shape == expected_shape
        ufunc = np.add if op == "add" else np.multiply
        expected = ufunc(a.astype(np.float64), b.astype(np.float64))
        got = host(result)
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(got.dtype).astype(np.float64), rtol=1e-3)

    def test_python_scalars_are_wrapped_numbers(self, device):
        x = t(np.array([1, 2], dtype=np.int32), device)
        assert (x + 1).dtype == backend_sdk.int32
        assert (x + 1.5).dtype == backend_sdk.float32
        assert (x * True).dtype == backend_sdk.int32
        f16 = t(np.array([1.0], dtype=np.float16), device)
        assert (f16 * 2.0).dtype == backend_sdk.float16
        assert (2 + x).tolist() == [3, 4] and (3 * x).tolist() == [3, 6]
        assert backend_sdk.add(x, 2).tolist() == [3, 4]

    def test_alpha_and_its_errors(self, device):
        x = t(np.array([1.0, 2.0], dtype=np.float32), device)
        assert backend_sdk.add(x, x, alpha=3).tolist() == [4.0, 8.0]
        i = t(np.array([1, 2]), device)
        with pytest.raises(TypeError, match="alpha must not be a floating point number"):
            backend_sdk.add(i, i, alpha=0.5)

    def test_non_contiguous_and_expanded_operands(self, device):
        base = np.arange(24, dtype=np.float32).reshape(4, 6)
        a = t(base, device)[:, ::2]  # stepped
        b = t(base, device).t()[:3, :4].t()  # transposed
        c = t(np.arange(3, dtype=np.float32), device).expand(4, 3)  # stride 0
        np.testing.assert_array_equal(host(a + b), base[:, ::2] + base.T[:3, :4].T)
        np.testing.assert_array_equal(host(a * c), base[:, ::2] * np.arange(3, dtype=np.float32))

    def test_in_place_and_out_variants(self, device):
        x = t(np.array([1.0, 2.0], dtype=np.float32), device)
        y = t(np.array([10.0, 20.0], dtype=np.float32), device)
        assert x.add_(y) is x and x.tolist() == [11.0, 22.0]
        x.mul_(2)
        assert x.tolist() == [22.0, 44.0]
        out = backend_sdk.empty(2, device=device)
        assert backend_sdk.add(x, y, out=out) is out and out.tolist() == [32.0, 64.0]
        with pytest.raises(TypeError, match="can't be cast to the desired output type"):
            t(np.array([1, 2]), device).add_(1.5)
        with pytest.raises(ValueError, match="doesn't match the broadcast shape"):
            t(np.array([1.0]), device).add_(t(np.ones(3, np.float32), device))
        wrong_shape = backend_sdk.empty(3, device=device)
        # As PyTorch: a non-empty out= of another shape is resized, with its deprecation warning.
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            r = backend_sdk.add(x, y, out=wrong_shape)
        assert r is wrong_shape and tuple(wrong_shape.shape) == tuple(backend_sdk.add(x, y).shape)

    def test_copy_and_fill_convert_dtypes(self, device):
        dst = backend_sdk.empty(3, dtype=backend_sdk.int16, device=device)
        dst.copy_(t(np.array([1.7, -2.2, 3.0]), device))
        assert dst.tolist() == [1, -2, 3]
        dst.fill_(7)
        assert dst.tolist() == [7, 7, 7]
        dst.copy_(t(np.array([4.9, 5.0, -6.5])))  # from the CPU: a cross-device copy converts too
        assert dst.tolist() == [4, 5, -6]
        b = backend_sdk.empty(2, dtype=backend_sdk.bfloat16, device=device).fill_(1.5)
        assert b.tolist() == [1.5, 1.5]
        with pytest.raises(ValueError):
            backend_sdk.empty(2, device=device).copy_(backend_sdk.empty(3, device=device))

    # ---- Meta against the device ----------------------------------------------------------------------------
    def test_meta_kernels_agree_with_the_device_metadata(self, device):
        cases = [
            lambda d: backend_sdk.add(backend_sdk.empty(2, 1, 3, device=d), backend_sdk.empty(4, 1, device=d)),
            lambda d: backend_sdk.mul(backend_sdk.empty(3, dtype=backend_sdk.int8, device=d), 2.5),
            lambda d: backend_sdk.empty(2, 3, device=d).view(3, 2),
            lambda d: backend_sdk.empty(2, 3, device=d).as_strided((2, 2), (1, 2), 1),
            lambda d: backend_sdk.empty_strided((2, 3), (1, 2), device=d),
        ]
        for make in cases:
            real, meta = make(device), make("meta")
            assert meta.is_meta and real.device.type == self.device_type
            assert (meta.shape, meta.dtype, meta.stride(), meta.storage_offset()) == (
                real.shape, real.dtype, real.stride(), real.storage_offset())

    def test_mixing_devices_is_an_error(self, device):
        with pytest.raises(ValueError, match=r"Expected all tensors to be on the same device, but found at least two "
                                             r"devices, (meta and \w+(:\d+)?|\w+(:\d+)? and meta)!"):
            backend_sdk.add(backend_sdk.ones(2, device=device), backend_sdk.empty(2, device="meta"))

    def test_unsupported_memory_format_is_rejected(self, device):
        # channels_last (2) is supported since issue 15 (Note [Memory formats]); a rank it does not fit and an
        # unknown format number are refused.
        assert aten.empty.memory_format([2, 2, 2, 2], memory_format=2, device=device).stride() == (8, 1, 4, 2)
        with pytest.raises(RuntimeError, match="required rank 4"):
            aten.empty.memory_format([2, 2], memory_format=2, device=device)
        with pytest.raises(ValueError, match="unknown memory format 7"):
            aten.empty.memory_format([2, 2], memory_format=7, device=device)


instantiate_device_type_tests(TestFirstSliceDeviceType, globals())
