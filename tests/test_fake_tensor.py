"""FakeTensorMode and FakeTensor: metadata without data, at the Fake dispatch key."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tensor
from backend_sdk._subclasses.fake_tensor import (
    DataDependentOutputException, FakeTensor, FakeTensorMode, UnsupportedFakeTensorException,
)
from backend_sdk.library import custom_op, get_ctx

_counter = itertools.count()


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))


def meta_of(t: Tensor) -> tuple:
    return (tuple(t.shape), t.dtype, t.stride(), t.storage_offset())


CASES = [
    ("add", lambda x, y: x + y),
    ("mul_scalar", lambda x, y: x * 3),
    ("transpose_view", lambda x, y: x.t()),
    ("slice_view", lambda x, y: x[1:, ::2]),
    ("sum_dim", lambda x, y: x.sum(1)),
    ("matmul", lambda x, y: backend_sdk.matmul(x, y.t())),
    ("to_float64", lambda x, y: x.to(backend_sdk.float64)),
    ("clone_noncontig", lambda x, y: x.t().clone()),
    ("contiguous", lambda x, y: x.t().contiguous()),
    ("reshape", lambda x, y: x.reshape(-1)),
    ("cat", lambda x, y: backend_sdk.cat([x, y], 0)),
    ("where", lambda x, y: backend_sdk.where(x > 2, x, y)),
    ("index_select", lambda x, y: x.index_select(1, backend_sdk.tensor([0, 2]))),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_fake_metadata_matches_real(name: str, fn) -> None:
    x, y = arr(3, 4), arr(3, 4) + 1
    real = fn(x, y)
    with FakeTensorMode() as mode:
        fake = fn(mode.from_tensor(x), mode.from_tensor(y))
    assert isinstance(fake, FakeTensor)
    assert meta_of(fake) == meta_of(real)
    assert fake.device == real.device


def test_real_tensors_become_fake_and_factories_are_fake() -> None:
    x = arr(2, 3)
    with FakeTensorMode():
        y = x * 2
        e = backend_sdk.empty(4, 5, dtype=backend_sdk.float64)
        z = backend_sdk.zeros(3)
    assert isinstance(y, FakeTensor) and not isinstance(x, FakeTensor)
    assert tuple(e.shape) == (4, 5) and e.dtype == backend_sdk.float64 and e.stride() == (5, 1)
    assert isinstance(z, FakeTensor)
    # the real input was not touched
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_views_and_in_place_keep_aliasing() -> None:
    mode = FakeTensorMode()
    x = mode.from_tensor(arr(3, 4))
    with mode:
        v = x[1:]
        r = x.add_(1)
        s = x.sum()
    assert r is x
    assert backend_sdk._C._storage_id(v) == backend_sdk._C._storage_id(x)
    assert backend_sdk._C._storage_id(s) != backend_sdk._C._storage_id(x)
    assert v.storage_offset() == 4
    # same real tensor -> same fake tensor
    real = arr(2)
    assert mode.from_tensor(real) is mode.from_tensor(real)


def test_in_place_metadata_change_is_seen() -> None:
    mode = FakeTensorMode()
    x = mode.from_tensor(arr(2, 3))
    with mode:
        r = x.resize_([7])
    assert r is x and tuple(x.shape) == (7,) and x.stride() == (1,)


def test_reading_data_raises() -> None:
    with FakeTensorMode():
        x = backend_sdk.ones(3)
        with pytest.raises(DataDependentOutputException, match="cannot read the value of a FakeTensor"):
            x.sum().item()
        with pytest.raises(DataDependentOutputException, match="cannot read the value"):
            bool(x[0] > 0)
        with pytest.raises(DataDependentOutputException, match="numpy\\(\\): cannot read the data of a FakeTensor"):
            x.numpy()
        with pytest.raises(DataDependentOutputException, match="tolist\\(\\)"):
            x.tolist()
    assert "FakeTensor(..., size=(3,), dtype=backend_sdk.float32, device='cpu')" == repr(x)


def test_fake_tensors_work_outside_the_mode() -> None:
    mode = FakeTensorMode()
    x = mode.from_tensor(arr(2, 2))
    y = x + x  # no mode active: the fake tensor's key still routes to the fallback
    assert isinstance(y, FakeTensor) and tuple(y.shape) == (2, 2)


def test_mixed_devices_are_refused() -> None:
    mode = FakeTensorMode()
    x = mode.from_tensor(arr(2, 2))
    m = backend_sdk._C._fake_from_meta(backend_sdk.empty(2, 2, device="meta"), backend_sdk.device("meta"))
    with pytest.raises(ValueError, match="Unhandled FakeTensor Device Propagation for aten::add.Tensor, found two different devices"):
        x + m


def test_allow_non_fake_inputs_false() -> None:
    with FakeTensorMode(allow_non_fake_inputs=False):
        with pytest.raises(UnsupportedFakeTensorException, match="Please convert all Tensors to FakeTensors first"):
            arr(2) + 1


def test_custom_op_needs_a_fake_impl() -> None:
    ns = f"fk_ns_{next(_counter)}"

    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x.clone()

    with FakeTensorMode():
        with pytest.raises(UnsupportedFakeTensorException, match=f"There was no fake impl registered for {ns}::f"):
            f(backend_sdk.ones(2))


def test_fake_impl_receives_fake_tensors_and_dynamic_size() -> None:
    ns = f"fk_ns_{next(_counter)}"

    @custom_op(f"{ns}::nonzero_rows", mutates_args=())
    def nonzero_rows(x: Tensor) -> Tensor:
        return backend_sdk.nonzero(x.sum(1))

    sizes = []

    @nonzero_rows.register_fake
    def _(x: Tensor) -> Tensor:
        assert isinstance(x, FakeTensor)
        n = get_ctx().new_dynamic_size(min=0, max=x.shape[0])
        sizes.append(n)
        return backend_sdk.empty(n, 1, dtype=backend_sdk.int64, device=x.device)

    with FakeTensorMode():
        out = nonzero_rows(backend_sdk.ones(5, 3))
    assert isinstance(out, FakeTensor) and out.shape[1] == 1 and out.dtype == backend_sdk.int64
    assert sizes[0].name.startswith("u") and 0 <= int(sizes[0]) <= 5
    assert "hint=" in repr(sizes[0])
    with pytest.raises(RuntimeError, match="get_ctx\\(\\) may only be called inside a fake kernel"):
        get_ctx()
    with FakeTensorMode():
        @custom_op(f"{ns}::bad_min", mutates_args=())
        def bad_min(x: Tensor) -> Tensor:
            return x.clone()

        bad_min.register_fake(lambda x: backend_sdk.empty(get_ctx().new_dynamic_size(min=-1)))
        with pytest.raises(ValueError, match="expected min to be greater than or equal to 0"):
            bad_min(backend_sdk.ones(1))


def test_fake_impl_returning_real_data_is_an_error() -> None:
    ns = f"fk_ns_{next(_counter)}"
    real = arr(2)

    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x.clone()

    f.register_fake(lambda x: real)
    with FakeTensorMode():
        with pytest.raises(ValueError, match="returned a real tensor"):
            f(backend_sdk.ones(2))


def test_meta_kernels_refusing_data_dependent_ops() -> None:
    with FakeTensorMode():
        with pytest.raises((NotImplementedError, UnsupportedFakeTensorException)):
            backend_sdk.nonzero(backend_sdk.ones(3))
