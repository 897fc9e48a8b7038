"""Python-computed metadata of wrapper subclasses (issue 19, Note [Python metadata policies]):
dispatch_sizes_strides_policy "sizes"/"strides", dispatch_device, dispatch_layout; and Tensor.new_* reaching
a handler as aten::new_* (not empty + fill_)."""
from __future__ import annotations

import pickle

import pytest

import backend_sdk as bs
from backend_sdk.utils._pytree import tree_map
from backend_sdk.utils._python_dispatch import TorchDispatchMode

ops = bs.ops


class Lying(bs.Tensor):
    """Made with a fixed [1] geometry on cpu; its handler answers the metadata queries with its own values."""

    log: list[str] = []
    answers: dict = {}

    @staticmethod
    def __new__(cls, elem, policy="sizes", dispatch_device=True, dispatch_layout=True):
        r = bs.Tensor._make_wrapper_subclass(cls, [1], dtype=elem.dtype, device="cpu",
                                              dispatch_sizes_strides_policy=policy, dispatch_device=dispatch_device,
                                              dispatch_layout=dispatch_layout)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.log.append(func.name())
        if func.name() in cls.answers:  # by name: the handler's func is not the `ops.aten.X.default` object
            return cls.answers[func.name()]
        unwrap = lambda t: t.elem if isinstance(t, Lying) else t  # noqa: E731
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))


@pytest.fixture(autouse=True)
def _reset():
    Lying.log.clear()
    Lying.answers = {}
    yield


def test_sizes_policy_asks_the_handler_for_every_metadata_query():
    Lying.answers = {"aten::sym_size": [7, 3], "aten::sym_stride": [3, 1],
                     "aten::dim": 2, "aten::sym_numel": 21,
                     "aten::sym_storage_offset": 4, "aten::is_contiguous": False}
    t = Lying(bs.ones(7, 3))
    assert t.shape == (7, 3) and isinstance(t.shape, bs.Size) and t.size() == (7, 3)
    assert t.size(0) == 7 and t.size(-1) == 3
    assert t.stride() == (3, 1) and t.stride(-2) == 3
    assert t.dim() == 2 and t.ndim == 2 and t.numel() == 21 and t.nelement() == 21
    assert t.storage_offset() == 4 and t.is_contiguous() is False
    assert set(Lying.log) == {"aten::sym_size", "aten::sym_stride", "aten::dim", "aten::sym_numel",
                              "aten::sym_storage_offset", "aten::is_contiguous"}
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(2)


def test_strides_policy_leaves_sizes_fixed():
    Lying.answers = {"aten::sym_stride": [5], "aten::sym_size": [99]}
    t = Lying(bs.ones(3), policy="strides", dispatch_device=False, dispatch_layout=False)
    assert t.shape == (1,) and t.dim() == 1 and t.numel() == 1  # fixed at creation
    assert t.stride() == (5,)
    assert "aten::sym_size" not in Lying.log and "aten::sym_stride" in Lying.log


def test_none_answer_falls_back_to_the_creation_metadata():
    Lying.answers = {"aten::sym_size": None, "aten::sym_stride": None,
                     "prim::device": None, "prim::layout": None}
    t = Lying(bs.ones(4))
    assert t.shape == (1,) and t.stride() == (1,) and t.device == bs.device("cpu") and t.layout is bs.strided


def test_handler_forwarding_to_the_inner_tensor_gets_its_metadata():
    # the default kernels of aten::sym_size & co read a plain tensor's own metadata
    t = Lying(bs.ones(2, 5).t())
    assert t.shape == (5, 2) and t.stride() == (1, 5) and t.numel() == 10 and t.dim() == 2
    assert t.is_contiguous() is False and t.is_contiguous(memory_format=bs.channels_last) is False
    assert "aten::is_contiguous.memory_format" in Lying.log


def test_dispatch_device_and_layout():
    if bs._C._get_privateuse_backend_name(1) != "accel":
        pytest.skip("accel is not registered")
    t = Lying(bs.ones(2).to("accel"), policy=None)
    assert t.device == bs.device("accel:0")  # prim::device answered by the inner tensor
    assert t.layout is bs.strided
    assert Lying.log == ["prim::device", "prim::layout"]
    assert t.shape == (1,)  # no sizes policy


def test_no_policy_instances_never_call_the_handler_for_metadata():
    Lying(bs.ones(2), policy="sizes")  # installs the accessors on the class
    plain = Lying(bs.ones(3), policy=None, dispatch_device=False, dispatch_layout=False)
    Lying.log.clear()
    assert plain.shape == (1,) and plain.stride() == (1,) and plain.device == bs.device("cpu")
    assert plain.dim() == 1 and plain.numel() == 1 and plain.layout is bs.strided
    assert Lying.log == []
    assert bs.ones(2, 3).shape == (2, 3)  # other classes untouched


def test_class_own_accessor_wins():
    class OwnSize(Lying):
        def size(self, dim=None):
            return "mine"

    t = OwnSize(bs.ones(2))
    assert t.size() == "mine"


def test_policy_survives_pickle_in_process():
    Lying.answers = {"aten::sym_size": [6]}
    t = Lying(bs.ones(6))
    assert pickle.loads(pickle.dumps(t)).shape == (6,)  # the policy is part of the instance's state


def test_bad_policy_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="Unknown sizes_strides_policy: size; expected 'strides' or 'sizes'"):
        Lying(bs.ones(1), policy="size")


def test_metadata_operators_on_plain_tensors():
    x = bs.ones(2, 3)
    assert ops.aten.sym_size.default(x) == [2, 3] and ops.aten.sym_stride.default(x) == [3, 1]
    assert ops.aten.sym_numel.default(x) == 6 and ops.aten.dim.default(x) == 2
    assert ops.aten.sym_storage_offset.default(x[1]) == 3
    assert ops.aten.is_contiguous.default(x.t()) is False
    assert ops.prim.device.default(x) == bs.device("cpu")


# ---- Tensor.new_* as aten::new_* ------------------------------------------------------------------------
class _Log(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))


def test_new_factories_reach_a_mode_as_new_ops():
    x = bs.ones(2, dtype=bs.float16)
    with _Log() as log:
        a = x.new_zeros(2, 3)
        b = x.new_ones((4,), dtype=bs.int64)
        c = x.new_empty([1])
        d = x.new_full((2,), 7)
    assert log.names == ["aten::new_zeros", "aten::new_ones", "aten::new_empty", "aten::new_full"]
    assert a.dtype == bs.float16 and a.tolist() == [[0.0] * 3] * 2
    assert b.dtype == bs.int64 and b.tolist() == [1] * 4
    assert tuple(c.shape) == (1,) and d.tolist() == [7.0, 7.0] and d.dtype == bs.float16


def test_new_factories_keep_factory_semantics():
    x = bs.ones(1)
    z = x.new_zeros(3, requires_grad=True)
    assert z.requires_grad and z.is_leaf and z._version == 0
    assert x.new_zeros(bs.Size([2, 2])).shape == (2, 2) and x.new_zeros([]).shape == ()
    with pytest.raises(TypeError, match="new_zeros"):
        x.new_zeros("a")
    with pytest.raises(RuntimeError, match="negative dimension"):
        x.new_ones(-1)


def test_subclass_answers_new_zeros_with_its_class():
    t = Lying(bs.ones(2), policy=None, dispatch_device=False, dispatch_layout=False)
    out = t.new_zeros(3)
    assert "aten::new_zeros" in Lying.log and "aten::empty.memory_format" not in Lying.log
    assert out.tolist() == [0.0, 0.0, 0.0]


def test_new_zeros_in_the_profiler():
    from backend_sdk.profiler import profile

    x = bs.ones(2)
    with profile() as prof:
        x.new_zeros(4)
    assert "aten::new_zeros" in [e.key for e in prof.key_averages()]


@pytest.mark.parametrize("number, expected", [(0, True), (1, True), (2, False), (3, False), (7, True), (-1, True)])
def test_is_contiguous_memory_format_operator_takes_enum_numbers(number, expected):
    # PyTorch: a MemoryFormat argument of an operator call may be the enum number; a number naming no format
    # answers as contiguous (TensorImpl tests channels_last / channels_last_3d, else the default layout).
    # Found by the binding fuzzer (a number out of range raised AttributeError).
    t = bs.ones(2, 3)
    assert ops.aten.is_contiguous.memory_format(t, number) is expected
    cl = bs.empty(1, 2, 3, 4, memory_format=bs.channels_last)
    assert ops.aten.is_contiguous.memory_format(cl, 2) is True
    assert ops.aten.is_contiguous.memory_format(cl, number) is (number == 2)
