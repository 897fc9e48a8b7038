"""Wrapper subclasses (Tensor._make_wrapper_subclass, issue 19): a quantised-storage tensor that trains through
autograd, subclasses on accel, __tensor_flatten__ / __tensor_unflatten__, the Python object's state surviving
while only C++ holds the tensor, and argument errors."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import backend_sdk as bs
from backend_sdk import _C
from backend_sdk.utils import _pytree as pytree
from backend_sdk.utils._python_dispatch import (
    TorchDispatchMode,
    is_traceable_wrapper_subclass,
    transform_subclass,
)


class QuantizedTensor(bs.Tensor):
    """Data held as int8 ``qdata`` plus a float ``scale``; every operator computes on the dequantised values.

    Out-of-place results are plain float tensors; an in-place operator on a QuantizedTensor (the optimizer's
    update) computes in float and stores the result quantised again, with a new scale.
    """

    ops_seen: list[str] = []

    @staticmethod
    def __new__(cls, qdata: bs.Tensor, scale: bs.Tensor, requires_grad: bool = False) -> "QuantizedTensor":
        r = bs.Tensor._make_wrapper_subclass(cls, qdata.shape, strides=qdata.stride(), dtype=scale.dtype,
                                              device=qdata.device, requires_grad=requires_grad)
        r.qdata = qdata
        r.scale = scale
        return r

    @classmethod
    def quantize(cls, t: bs.Tensor, requires_grad: bool = False) -> "QuantizedTensor":
        qdata, scale = _quantize(t.detach())
        return cls(qdata, scale, requires_grad=requires_grad)

    def dequantize(self) -> bs.Tensor:
        return self.qdata.to(self.scale.dtype) * self.scale

    def __tensor_flatten__(self):
        return ["qdata", "scale"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return QuantizedTensor(inner["qdata"], inner["scale"])

    def __repr__(self) -> str:
        return f"QuantizedTensor(shape={tuple(self.shape)}, scale={self.scale.item():.4g}, device={self.device})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        cls.ops_seen.append(func.name())
        if _is_alias(func, args, kwargs):
            # detach() (Parameter(q) detaches) is aten::detach, as PyTorch's: an alias keeps the quantised
            # storage
            return QuantizedTensor(args[0].qdata, args[0].scale)
        deq = lambda t: t.dequantize() if isinstance(t, QuantizedTensor) else t  # noqa: E731
        out = func(*pytree.tree_map(deq, args), **pytree.tree_map(deq, kwargs))
        if func._schema.is_inplace and isinstance(args[0], QuantizedTensor):
            target = args[0]
            qdata, scale = _quantize(out)
            target.qdata.copy_(qdata)
            target.scale.copy_(scale)
            return target
        return out


def _is_alias(func, args, kwargs) -> bool:
    return func.name() in ("aten::detach", "aten::alias") and isinstance(args[0], QuantizedTensor)


def _quantize(t: bs.Tensor) -> tuple[bs.Tensor, bs.Tensor]:
    scale = t.abs().max().clamp(min=1e-8) / 127
    qdata = (t / scale).round().clamp(-127, 127).to(bs.int8)
    return qdata, scale.reshape([])


def test_quantized_tensor_holds_int8_and_computes_through_dequantise(device):
    w = bs.tensor([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5]]).to(device)
    q = QuantizedTensor.quantize(w)
    assert q.qdata.dtype == bs.int8 and q.dtype == bs.float32 and tuple(q.shape) == (2, 3)
    assert q.device == w.device and _C._has_python_key(q)
    # the wrapper holds no data: its storage is a meta storage of the right extent
    assert q.untyped_storage().nbytes() == 6 * 4
    x = bs.ones(3).to(device)
    y = q @ x
    assert type(y) is bs.Tensor and y.device == w.device
    np.testing.assert_allclose(y.cpu().numpy(), (w @ x).cpu().numpy(), atol=1e-2)
    np.testing.assert_allclose((q * 2).cpu().numpy(), (w * 2).cpu().numpy(), atol=1e-2)


def test_quantized_weights_train_through_autograd(device):
    bs.manual_seed(0)
    true_w = bs.randn(2, 4)
    xs = bs.randn(64, 4)
    ys = xs @ true_w.t()
    xs, ys = xs.to(device), ys.to(device)
    model = bs.nn.Linear(4, 2, bias=False).to(device)
    model.weight = bs.nn.Parameter(QuantizedTensor.quantize(model.weight.detach()))
    assert isinstance(model.weight, QuantizedTensor) and model.weight.requires_grad
    opt = bs.optim.SGD(model.parameters(), lr=0.2)
    QuantizedTensor.ops_seen = []
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = bs.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        assert type(model.weight.grad) is bs.Tensor and model.weight.grad.device == model.weight.device
        opt.step()
        losses.append(loss.item())
    assert isinstance(model.weight, QuantizedTensor)  # the optimizer wrote in place, through the subclass
    assert model.weight.qdata.dtype == bs.int8
    assert losses[-1] < 0.05 * losses[0], losses
    np.testing.assert_allclose(model.weight.dequantize().cpu().numpy(), true_w.numpy(), atol=0.1)
    # what reaches the subclass: linear's transpose of the weight (aten::t, as PyTorch's: its result is a
    # plain float tensor, so addmm and backward run on plain tensors) and the optimizer's in-place update
    assert set(QuantizedTensor.ops_seen) == {"aten::t", "aten::add_.Tensor"}
    assert QuantizedTensor.ops_seen.count("aten::add_.Tensor") == 40


def test_gradient_of_a_quantized_input_matches_float(device):
    w = bs.tensor([[0.5, -1.0], [0.25, 2.0]]).to(device)
    q = QuantizedTensor.quantize(w, requires_grad=True)
    x = bs.tensor([1.0, 3.0]).to(device)
    (q @ x).sum().backward()
    ref = w.clone().requires_grad_()
    (ref @ x).sum().backward()
    np.testing.assert_allclose(q.grad.cpu().numpy(), ref.grad.cpu().numpy(), rtol=1e-6)


def test_flatten_unflatten_and_transform_subclass(device):
    q = QuantizedTensor.quantize(bs.tensor([1.0, -2.0, 0.5]))
    assert is_traceable_wrapper_subclass(q) and not is_traceable_wrapper_subclass(bs.ones(1))
    attrs, ctx = q.__tensor_flatten__()
    assert attrs == ["qdata", "scale"] and ctx is None
    moved = transform_subclass(q, lambda name, t: t.to(device))
    assert isinstance(moved, QuantizedTensor) and moved.device.type == device
    assert moved.qdata.device.type == device and moved.qdata.dtype == bs.int8
    np.testing.assert_allclose(moved.dequantize().cpu().numpy(), q.dequantize().numpy())
    with pytest.raises(TypeError, match="traceable wrapper subclass"):
        transform_subclass(bs.ones(1), lambda name, t: t)


class Tagged(bs.Tensor):
    """A subclass whose results carry the tag of their inputs: checks that its state survives."""

    @staticmethod
    def __new__(cls, elem: bs.Tensor, tag: str) -> "Tagged":
        r = bs.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)
        r.elem, r.tag = elem, tag
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        tags = [a.tag for a in pytree.tree_leaves(args) if isinstance(a, Tagged)]
        unwrap = lambda t: t.elem if isinstance(t, Tagged) else t  # noqa: E731
        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map_only(bs.Tensor, lambda t: Tagged(t, "+".join(tags)), out)


def test_subclass_state_survives_while_only_cpp_holds_it(device):
    # b * a saves a for backward; the Python object of a dies, the TensorImpl lives on in the graph
    a = Tagged(bs.tensor([1.0, 2.0, 3.0]).to(device), "a")
    b = bs.tensor([4.0, 5.0, 6.0], device=device, requires_grad=True)
    c = b * a
    assert isinstance(c, Tagged) and c.tag == "a"
    del a
    gc.collect()
    c.elem.sum()  # unrelated work
    c.sum().backward()
    # backward's mul(grad, a) reached Tagged's handler with a's class and attributes back
    assert isinstance(b.grad, Tagged) and "a" in b.grad.tag.split("+")
    np.testing.assert_allclose(b.grad.elem.cpu().numpy(), [1.0, 2.0, 3.0])


def test_results_returned_through_cpp_keep_their_class(device):
    t = Tagged(bs.arange(6.0).to(device), "x")
    parts = bs.split(t, 2)  # a list of tensors built in Python, unwrapped to C++ and wrapped again
    assert [type(p) for p in parts] == [Tagged] * 3 and all(p.tag == "x" for p in parts)
    np.testing.assert_allclose(parts[1].elem.cpu().numpy(), [2.0, 3.0])


def test_logging_mode_over_a_subclass_on_accel():
    if "accel" not in [bs._C._get_privateuse_backend_name(1)]:
        pytest.skip("accel is not registered")
    seen: list = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func.name(), types))
            return func(*args, **(kwargs or {}))

    q = QuantizedTensor.quantize(bs.tensor([1.0, 2.0]).to("accel"))
    assert q.device.type == "accel" and q.qdata.device.type == "accel"
    with Log():
        y = q + 1
    assert seen[0] == ("aten::add.Tensor", (QuantizedTensor,))
    assert y.device.type == "accel"
    np.testing.assert_allclose(y.cpu().numpy(), [2.0, 3.0], atol=2e-2)


def test_wrapper_metadata_and_device_index(device):
    t = Tagged(bs.ones(2, 3).to(device), "m")
    assert tuple(t.shape) == (2, 3) and t.stride() == (3, 1) and t.storage_offset() == 0
    assert t.dtype == bs.float32 and not t.requires_grad
    if device != "cpu":
        assert t.device.index is not None  # 'accel' resolves to the current device, as a factory's result
    s = bs.Tensor._make_wrapper_subclass(Tagged, [4, 5], strides=[1, 4], storage_offset=2, dtype=bs.float64,
                                         device=device, requires_grad=True)
    assert s.stride() == (1, 4) and s.storage_offset() == 2 and s.dtype == bs.float64 and s.requires_grad
    assert s.is_leaf
    e = bs.Tensor._make_wrapper_subclass(Tagged, [0, 3])
    assert tuple(e.shape) == (0, 3) and e.device.type == "cpu"


def test_make_wrapper_subclass_errors():
    with pytest.raises(TypeError, match="subclass of backend_sdk.Tensor"):
        bs.Tensor._make_wrapper_subclass(int, [2])
    with pytest.raises(TypeError, match="must define __torch_dispatch__"):
        bs.Tensor._make_wrapper_subclass(bs.nn.Parameter, [2])
    with pytest.raises(ValueError, match="negative dimension -1"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2, -1])
    with pytest.raises(ValueError, match="strides has 1 entries but size has 2"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2, 2], strides=[1])
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2], dtype=bs.int64, requires_grad=True)
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2], dtype="float")
    with pytest.raises(ValueError, match="overflow"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2**62, 4], strides=[4, 1])
    with pytest.raises(TypeError):
        bs.Tensor._make_wrapper_subclass(Tagged, [2], [1])  # strides is keyword-only, as PyTorch's
    with pytest.raises(RuntimeError, match="Unknown sizes_strides_policy: shape; expected 'strides' or 'sizes'"):
        bs.Tensor._make_wrapper_subclass(Tagged, [2], dispatch_sizes_strides_policy="shape")


def test_plain_tensor_with_lost_class_is_refused_not_crashed():
    # a C++-made alias of a wrapper (here: changing its class away) must not reach a backend kernel
    t = Tagged(bs.ones(2), "z")
    t.__class__ = bs.Tensor
    with pytest.raises(RuntimeError, match="carries the Python dispatch key"):
        t + 1


def test_subclass_and_mode_on_the_python_backend():
    # pyaccel (samples/python_backend) renames a PrivateUse backend once per process: a subprocess
    from test_python_backend import run_python

    result = run_python("""
        import numpy as np
        import backend_sdk as bs
        import pyaccel
        from tests.test_wrapper_subclass import QuantizedTensor
        from tests.test_python_dispatch import LoggingMode
        w = bs.tensor([[0.5, -1.0], [0.25, 2.0]]).to("pyaccel:0")
        q = QuantizedTensor.quantize(w, requires_grad=True)
        assert q.device == bs.device("pyaccel:0") and q.qdata.device == q.device
        x = bs.tensor([1.0, 3.0]).to("pyaccel:0")
        with LoggingMode() as mode:
            y = (q @ x).sum()
            y.backward()
        assert "aten::mv" in mode.log or "aten::mm" in mode.log, mode.log
        np.testing.assert_allclose(q.grad.cpu().numpy(), [[1.0, 3.0], [1.0, 3.0]])
        import warnings
        warnings.simplefilter("ignore")  # pyaccel runs some operators through its CPU fallback
        with bs.no_grad():
            q.add_(q.grad, alpha=-0.1)  # in place through the subclass, stored quantised on pyaccel
        assert isinstance(q, QuantizedTensor) and q.qdata.device == q.device
        np.testing.assert_allclose(q.dequantize().cpu().numpy(), [[0.4, -1.3], [0.15, 1.7]], atol=2e-2)
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stdout + result.stderr


def test_no_reference_cycles_or_leaks():
    import weakref

    # a wrapper and its inner tensor die with the last Python reference (no cycle through the TensorImpl)
    inner = bs.ones(3)
    t = Tagged(inner, "w")
    refs = [weakref.ref(t), weakref.ref(inner)]
    del t, inner
    assert [r() for r in refs] == [None, None]
    # parked state (Note [Python key tensors]) goes with the TensorImpl that held it
    inner = bs.ones(3)
    a = Tagged(inner, "p")
    b = bs.ones(3, requires_grad=True)
    c = b * a  # the graph saves a
    inner_ref = weakref.ref(inner)
    del a, inner
    assert inner_ref() is not None  # parked with a's class in a's TensorImpl, which the graph holds
    c.sum().backward()
    del c, b
    gc.collect()
    assert inner_ref() is None


def test_reading_a_wrappers_own_data_is_an_error_not_a_crash():
    class Bare(bs.Tensor):
        @staticmethod
        def __new__(cls, elem):
            r = bs.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device,
                                                  requires_grad=True)
            r.elem = elem
            return r

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return func(*[a.elem if isinstance(a, Bare) else a for a in args], **(kwargs or {}))

    b = Bare(bs.ones(2))
    assert repr(b) == "Bare(size=(2,), dtype=backend_sdk.float32, device='cpu', requires_grad=True)"
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        b.numpy()
    with pytest.raises(RuntimeError, match="Cannot access data pointer"):
        np.asarray(b)
    with pytest.raises(RuntimeError, match="Cannot access data pointer.*Bare is a wrapper subclass"):
        b.data_ptr()
    with pytest.raises(RuntimeError, match="Cannot access data pointer"):
        bs.utils.dlpack.to_dlpack(b)
    # what dispatches works: sum() goes through __torch_dispatch__ to the inner tensor
    assert b.sum().item() == 2.0
