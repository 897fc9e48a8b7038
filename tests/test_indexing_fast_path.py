"""x[i] and x[a:b:c] through TensorBase's C slot (Note [Indexing fast path], csrc/python/PyIndexing.cpp):
the same views, errors, autograd nodes and dispatcher calls as the general Python path, which every
other index and every subclass-like tensor (wrapper subclasses, fake tensors, vmap's batched tensors)
still takes."""
from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Iterator

import numpy as np
import pytest

import backend_sdk as bs
from backend_sdk import _C, _tensor
from backend_sdk._subclasses.fake_tensor import FakeTensorMode
from backend_sdk.func import vmap
from backend_sdk.utils import _pytree as pytree
from backend_sdk.utils._python_dispatch import TorchDispatchMode

FAST_INDICES = [0, 3, -1, -4, slice(1, 3), slice(None), slice(None, None, 2), slice(-3, None), slice(5, 1),
                slice(1, 100), slice(-100, 2), slice(None, -1, 3), slice(4, None)]


@contextlib.contextmanager
def _counting_general_path() -> Iterator[list]:
    """Registers a general path that records the indices it is asked for (then the real one again)."""
    seen: list = []

    def general(t: bs.Tensor, index: Any) -> bs.Tensor:
        seen.append(index)
        return _tensor._getitem(t, index)

    _C._set_getitem_fallback(general)
    try:
        yield seen
    finally:
        _C._set_getitem_fallback(_tensor._getitem)


class _Log(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.log: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append((func.name(), tuple(args[1:])))
        return func(*args, **(kwargs or {}))


class _Wrapper(bs.Tensor):
    """A wrapper subclass that logs the operators it reaches."""

    log: list = []

    @staticmethod
    def __new__(cls, elem: bs.Tensor) -> "_Wrapper":
        r = bs.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(),
                                             storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                             device=elem.device)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.log.append(func.name())
        unwrap = lambda t: t.elem if isinstance(t, _Wrapper) else t  # noqa: E731
        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map_only(bs.Tensor, lambda t: t if isinstance(t, _Wrapper) else _Wrapper(t), out)


def test_tensor_has_the_c_slot() -> None:
    assert "__getitem__" not in bs.Tensor.__dict__
    assert bs.Tensor.__getitem__ is _C.TensorBase.__getitem__


@pytest.mark.parametrize("index", FAST_INDICES, ids=repr)
@pytest.mark.parametrize("make", ["contiguous", "offset_view", "transposed", "int64"])
def test_fast_path_views_match_general_path_and_numpy(device: str, index: Any, make: str) -> None:
    base = bs.arange(60.0, device=device).reshape(6, 10)
    x = {"contiguous": lambda: base[:5, :6].contiguous(), "offset_view": lambda: base[1:, 2:8],
         "transposed": lambda: base.t()[2:7], "int64": lambda: bs.arange(30, device=device).reshape(5, 6)}[make]()
    with _counting_general_path() as seen:
        got = x[index]
    assert seen == []  # the C slot answered
    want = _tensor._getitem(x, index)
    assert (tuple(got.shape), got.stride(), got.storage_offset()) == \
           (tuple(want.shape), want.stride(), want.storage_offset())
    assert got.dtype == x.dtype and got.device == x.device and got._base is want._base
    np.testing.assert_array_equal(got.cpu().numpy(), x.cpu().numpy()[index])
    if got.numel():  # a view of x's storage: writes reach x
        got.fill_(-7)
        assert (x.cpu().numpy()[index] == -7).all()


@pytest.mark.parametrize("index", [True, False, None, Ellipsis, (0, 1), (slice(1, 3), 0), np.int64(1),
                                   slice(np.int64(1), 3), [0, 2], slice(None, None, 0), slice(None, None, -1),
                                   1 << 70, slice(1 << 70, None)], ids=repr)
def test_other_indices_take_the_general_path(device: str, index: Any) -> None:
    x = bs.arange(24.0, device=device).reshape(4, 6)
    with _counting_general_path() as seen:
        try:
            x[index]
        except (IndexError, ValueError, TypeError, RuntimeError, OverflowError):
            pass
    assert len(seen) == 1 and seen[0] is index


def test_zero_dim_tensor_takes_the_general_path_and_its_errors(device: str) -> None:
    s = bs.tensor(2.0, device=device)
    with _counting_general_path() as seen:
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
            s[0]
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
            s[0:1]
    assert seen == [0, slice(0, 1)]


def test_errors_are_pytorchs(device: str) -> None:
    x = bs.ones(4, 3, device=device)
    for i in (4, -5, 100):
        with pytest.raises(IndexError, match=rf"^index {i} is out of bounds for dimension 0 with size 4$"):
            x[i]
    with pytest.raises(IndexError, match="index 0 is out of bounds for dimension 0 with size 0"):
        bs.ones(0, 2, device=device)[0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    assert x[4:].shape == (0, 3) and x[1 << 62:].shape == (0, 3)  # slices clamp, as Python's


def test_autograd_records_select_and_slice(device: str) -> None:
    x = bs.arange(12.0, device=device).reshape(4, 3).requires_grad_()
    a, b, c = x[1], x[1:4:2], x[-1]
    assert (a.grad_fn.name(), b.grad_fn.name(), c.grad_fn.name()) == \
           ("SelectBackward0", "SliceBackward0", "SelectBackward0")
    (a.sum() * 2 + b.sum() + c.sum() * 10).backward()
    want = np.zeros((4, 3), dtype=np.float32)
    want[1] += 2 + 1
    want[3] += 1 + 10
    np.testing.assert_array_equal(x.grad.cpu().numpy(), want)
    with bs.no_grad():
        assert x[0].grad_fn is None and not x[0].requires_grad


def test_a_dispatch_mode_sees_select_and_slice(device: str) -> None:
    x = bs.arange(12.0, device=device).reshape(4, 3)
    with _Log() as mode:
        x[2]
        x[-1]
        x[1:3]
        x[::2]
    assert mode.log == [("aten::select.int", (0, 2)), ("aten::select.int", (0, -1)),  # defaults left out:
                        ("aten::slice.Tensor", (0, 1, 3)), ("aten::slice.Tensor", (0, None, None, 2))]
    with _Log() as mode:  # the bounds check comes first, as PyTorch's applySelect
        with pytest.raises(IndexError, match="index 7 is out of bounds"):
            x[7]
    assert mode.log == []


def test_wrapper_subclass_takes_the_general_path_and_sees_the_views() -> None:
    w = _Wrapper(bs.arange(12.0).reshape(4, 3))
    _Wrapper.log = []
    with _counting_general_path() as seen:
        a, b = w[1], w[1:3]
    assert seen == [1, slice(1, 3)]
    assert _Wrapper.log == ["aten::select.int", "aten::slice.Tensor"]
    assert isinstance(a, _Wrapper) and isinstance(b, _Wrapper)
    np.testing.assert_array_equal(a.elem.numpy(), [3.0, 4.0, 5.0])
    np.testing.assert_array_equal(b.elem.numpy(), [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])


def test_fake_tensors_take_the_general_path() -> None:
    with FakeTensorMode() as mode:
        x = mode.from_tensor(bs.ones(4, 5)) if hasattr(mode, "from_tensor") else bs.ones(4, 5)
        with _counting_general_path() as seen:
            a, b = x[2], x[1:3]
        assert tuple(a.shape) == (5,) and tuple(b.shape) == (2, 5)
    assert seen == [2, slice(1, 3)]


def test_vmap_batched_tensors_take_the_general_path(device: str) -> None:
    x = bs.arange(24.0, device=device).reshape(2, 4, 3)
    with _counting_general_path() as seen:
        out = vmap(lambda t: t[1] + t[1:3].sum(0))(x)
    assert seen == [1, slice(1, 3)]
    a = x.cpu().numpy()
    np.testing.assert_array_equal(out.cpu().numpy(), a[:, 1] + a[:, 1:3].sum(1))


def test_sequence_protocol_and_iteration(device: str) -> None:
    x = bs.arange(6.0, device=device).reshape(3, 2)
    get = ctypes.pythonapi.PySequence_GetItem
    get.restype, get.argtypes = ctypes.py_object, [ctypes.py_object, ctypes.c_ssize_t]
    np.testing.assert_array_equal(get(x, 1).cpu().numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(get(x, -1).cpu().numpy(), [4.0, 5.0])  # len() added first
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        get(x, 3)
    assert [r.tolist() for r in x] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_subclass_overriding_getitem_and_calling_super() -> None:
    class Sub(_Wrapper):
        def __getitem__(self, index):
            return ("sub", super().__getitem__(index))

    s = Sub(bs.arange(6.0).reshape(3, 2))
    _Wrapper.log = []
    tag, row = s[1]
    assert tag == "sub" and isinstance(row, _Wrapper) and row.elem.tolist() == [2.0, 3.0]
    assert _Wrapper.log == ["aten::select.int"]
