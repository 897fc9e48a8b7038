"""pickle and copy.deepcopy of tensors (issue 19, Note [Tensor pickling]): plain tensors, views sharing a
storage, requires_grad and grad, Parameters, subclasses with state, meta and accel tensors, and wrapper
subclasses."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import backend_sdk as bs
from backend_sdk.utils._pytree import tree_map


def _accel() -> str:
    if bs._C._get_privateuse_backend_name(1) != "accel":
        pytest.skip("accel is not registered")
    return "accel"


class Tagged(bs.Tensor):
    """A plain (non-wrapper) subclass with a __dict__ attribute."""




class Wrapper(bs.Tensor):
    """A wrapper subclass holding its data in ``elem``; clone() stays a Wrapper."""

    @staticmethod
    def __new__(cls, elem):
        r = bs.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(), dtype=elem.dtype,
                                              device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.elem if isinstance(t, Wrapper) else t  # noqa: E731
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: cls(t) if isinstance(t, bs.Tensor) else t, out)


class Detaching(Wrapper):
    """clone() of this wrapper returns a plain tensor: deepcopy must refuse it, as PyTorch does."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.elem if isinstance(t, Wrapper) else t  # noqa: E731
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))


class Slotted(Wrapper):
    __slots__ = ("note",)


def _roundtrip(obj, proto=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, protocol=proto))


@pytest.mark.parametrize("proto", [2, 4, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("dtype", [bs.float32, bs.int64, bs.bfloat16, bs.bool, bs.float16])
def test_plain_tensor_roundtrip(proto, dtype):
    t = bs.arange(12).reshape(3, 4).to(dtype)
    r = _roundtrip(t, proto)
    assert type(r) is bs.Tensor and r.dtype == dtype and tuple(r.shape) == (3, 4)
    np.testing.assert_array_equal(r.float().numpy(), t.float().numpy())
    assert r.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


def test_views_share_storage_after_pickle_and_geometry_is_kept():
    base = bs.arange(12.0).reshape(3, 4)
    col, tr = base[:, 1], base.t()
    b2, c2, t2 = _roundtrip((base, col, tr))
    assert c2.storage_offset() == 1 and tuple(c2.stride()) == (4,) and tuple(t2.stride()) == (1, 4)
    assert b2.untyped_storage().data_ptr() == c2.untyped_storage().data_ptr() == t2.untyped_storage().data_ptr()
    b2[2, 1] = -5.0
    assert c2.tolist() == [1.0, 5.0, -5.0] and t2[1, 2].item() == -5.0
    # a view alone brings its whole storage (PyTorch's behaviour), at its offset
    only = _roundtrip(col)
    assert only.untyped_storage().nbytes() == 48 and only.tolist() == [1.0, 5.0, 9.0]


def test_separate_pickles_do_not_share():
    t = bs.ones(3)
    a, b = _roundtrip(t), _roundtrip(t)
    a[0] = 7.0
    assert b[0].item() == 1.0 and t[0].item() == 1.0


def test_requires_grad_kept_by_pickle_grad_not():
    x = bs.ones(2, requires_grad=True)
    x.grad = bs.full([2], 3.0)
    r = _roundtrip(x)
    assert r.requires_grad and r.is_leaf and r.grad is None  # PyTorch's pickle drops .grad


def test_parameter_pickle_and_state():
    p = bs.nn.Parameter(bs.tensor([1.0, 2.0]), requires_grad=False)
    r = _roundtrip(p)
    assert isinstance(r, bs.nn.Parameter) and not r.requires_grad and r.tolist() == [1.0, 2.0]
    p2 = bs.nn.Parameter(bs.zeros(2))
    p2.note = "kept"
    r2 = _roundtrip(p2)
    assert isinstance(r2, bs.nn.Parameter) and r2.requires_grad and r2.note == "kept"


def test_module_pickles_and_deepcopies():
    m = bs.nn.Linear(3, 2)
    for clone in (_roundtrip(m), copy.deepcopy(m)):
        assert isinstance(clone.weight, bs.nn.Parameter)
        np.testing.assert_array_equal(clone.weight.detach().numpy(), m.weight.detach().numpy())
        x = bs.ones(1, 3)
        np.testing.assert_allclose(clone(x).detach().numpy(), m(x).detach().numpy())
        assert clone.weight.untyped_storage().data_ptr() != m.weight.untyped_storage().data_ptr()


def test_subclass_with_dict_and_slots():
    t = bs.arange(3.0)
    t.__class__ = Tagged
    t.tag = {"a": [1, 2]}
    for r in (_roundtrip(t), copy.deepcopy(t)):
        assert type(r) is Tagged and r.tag == {"a": [1, 2]} and r.tolist() == [0.0, 1.0, 2.0]
    d = copy.deepcopy(t)
    assert d.tag is not t.tag
    s = Slotted(bs.ones(2))
    s.note = ["slot"]
    for r in (_roundtrip(s), copy.deepcopy(s)):
        assert type(r) is Slotted and r.note == ["slot"] and r.elem.tolist() == [1.0, 1.0]
    assert copy.deepcopy(s).note is not s.note


def test_plain_tensor_with_attribute_keeps_it():
    t = bs.ones(2)
    t.extra = 5
    assert _roundtrip(t).extra == 5 and copy.deepcopy(t).extra == 5


def test_deepcopy_values_independent_and_grad_copied():
    x = bs.ones(3, requires_grad=True)
    x.grad = bs.full([3], 2.0)
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and y.grad.tolist() == [2.0, 2.0, 2.0]
    assert y.grad.untyped_storage().data_ptr() != x.grad.untyped_storage().data_ptr()
    with bs.no_grad():
        y.add_(1.0)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_deepcopy_memo_keeps_views_sharing_one_new_storage():
    base = bs.arange(6.0).reshape(2, 3)
    row = base[1]
    b2, r2 = copy.deepcopy((base, row))
    assert b2.untyped_storage().data_ptr() == r2.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    b2[1, 0] = 42.0
    assert r2.tolist() == [42.0, 4.0, 5.0] and row.tolist() == [3.0, 4.0, 5.0]
    same = copy.deepcopy([base, base])
    assert same[0] is same[1]


def test_deepcopy_of_non_leaf_is_refused():
    x = bs.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Only Tensors created explicitly by the user \(graph leaves\)"):
        copy.deepcopy(x * 2)


def test_meta_tensor():
    m = bs.empty(2, 3, device="meta")
    for r in (_roundtrip(m), copy.deepcopy(m)):
        assert r.device.type == "meta" and tuple(r.shape) == (2, 3) and tuple(r.stride()) == (3, 1)


def test_device_dtype_size_pickle():
    assert _roundtrip(bs.device("cpu")) == bs.device("cpu")
    assert _roundtrip(bs.float16) == bs.float16
    assert _roundtrip(bs.ones(2, 3).shape) == (2, 3)


def test_accel_tensor_roundtrip_and_deepcopy():
    dev = _accel()
    t = bs.arange(6.0).to(dev)
    v = t[2:]
    t2, v2 = _roundtrip((t, v))
    assert t2.device == t.device and v2.device == t.device and v2.storage_offset() == 2
    assert v2.cpu().tolist() == [2.0, 3.0, 4.0, 5.0]
    assert t2.untyped_storage().data_ptr() == v2.untyped_storage().data_ptr()
    d = copy.deepcopy(t)
    assert d.device == t.device and d.cpu().tolist() == t.cpu().tolist()
    assert d.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()


@pytest.mark.parametrize("on_accel", [False, True])
def test_wrapper_subclass_pickle_and_deepcopy(on_accel):
    elem = bs.arange(4.0)
    if on_accel:
        elem = elem.to(_accel())
    w = Wrapper(elem)
    r = _roundtrip(w)
    assert type(r) is Wrapper and r.device == w.device and tuple(r.shape) == (4,)
    assert r.elem.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert bs._C._has_python_key(r)
    (r + 1)  # its handler runs on the rebuilt wrapper
    d = copy.deepcopy(w)
    assert type(d) is Wrapper and d.elem is not w.elem and d.elem.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_wrapper_subclass_whose_clone_changes_type_cannot_deepcopy():
    w = Detaching(bs.ones(2))
    with pytest.raises(RuntimeError, match=r"only works for subclass types that implement clone\(\)"):
        copy.deepcopy(w)
    assert type(_roundtrip(w)) is Detaching  # pickle goes through the state, not clone()


def test_save_load_unaffected(tmp_path):
    base = bs.arange(4.0)
    path = tmp_path / "x.pt"
    bs.save({"a": base, "b": base[1:]}, path)
    out = bs.load(path)
    assert out["b"].tolist() == [1.0, 2.0, 3.0]
    assert out["a"].untyped_storage().data_ptr() == out["b"].untyped_storage().data_ptr()
