"""nll_loss (nll_loss_forward, nll_loss_nd) and cross_entropy against numpy references, on every test device
(cpu, accel, pyaccel: instantiate_device_type_tests)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk.testing import instantiate_device_type_tests
import backend_sdk.nn.functional as F

rng = np.random.default_rng(9)


def t(a, device="cpu"):
    return backend_sdk.tensor(a, device=device)


def np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_nll(logp, target, weight=None, reduction="mean", ignore_index=-100):
    """logp (N, C, d...) or (C,); target (N, d...) or ()."""
    if logp.ndim == 1:
        logp, target = logp[None], np.asarray(target)[None]
    c = logp.shape[1]
    moved = np.moveaxis(logp, 1, -1).reshape(-1, c)
    tg = target.reshape(-1)
    w = np.ones(c) if weight is None else weight
    keep = tg != ignore_index
    safe = np.where(keep, tg, 0)
    per = np.where(keep, -w[safe] * moved[np.arange(len(tg)), safe], 0.0)
    ws = np.where(keep, w[safe], 0.0)
    if reduction == "none":
        return per.reshape(target.shape)
    if reduction == "sum":
        return per.sum()
    return per.sum() / ws.sum()


def np_cross_entropy(x, target, weight=None, reduction="mean", ignore_index=-100, ls=0.0):
    axis = 0 if x.ndim == 1 else 1
    logp = np_log_softmax(x, axis)
    c = x.shape[axis]
    w = np.ones(c) if weight is None else weight
    wshape = [c] + [1] * (x.ndim - axis - 1)
    if np.issubdtype(target.dtype, np.floating):
        tg = target * (1 - ls) + ls / c
        loss = -(logp * tg * w.reshape(wshape)).sum(axis=axis)
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.sum() / (x.size / c)
    nll = np_nll(logp, target, weight, reduction, ignore_index)
    if ls == 0:
        return nll
    smooth = -(logp * w.reshape(wshape)).sum(axis=axis)
    smooth = np.where(target == ignore_index, 0.0, smooth)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        tgf = np.asarray(target).reshape(-1)
        keep = tgf != ignore_index
        ret = smooth.sum() / np.where(keep, w[np.where(keep, tgf, 0)], 0).sum()
    return (1 - ls) * nll + ret * (ls / c)


CASES = [((6, 4), (6,)), ((4,), ()), ((3, 5, 2), (3, 2)), ((2, 3, 2, 4), (2, 2, 4))]


class TestLossDeviceType:
    @pytest.mark.parametrize("shape,tshape", CASES)
    @pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
    @pytest.mark.parametrize("weighted", [False, True])
    def test_nll_loss_and_cross_entropy_match_numpy(self, device, shape, tshape, reduction, weighted):
        x = rng.standard_normal(shape)
        c = shape[0] if len(shape) == 1 else shape[1]
        target = rng.integers(0, c, size=tshape)
        if target.size > 1:
            target.reshape(-1)[0] = -100  # ignored
        weight = rng.uniform(0.5, 2.0, size=c) if weighted else None
        w = t(weight, device=device) if weighted else None
        logp = np_log_softmax(x, 0 if x.ndim == 1 else 1)
        np.testing.assert_allclose(F.nll_loss(t(logp, device=device), t(target, device=device), w, reduction=reduction).cpu().numpy(),
                                   np_nll(logp, target, weight, reduction), rtol=1e-10, atol=1e-12)
        for ls in (0.0, 0.2):
            got = F.cross_entropy(t(x, device=device), t(target, device=device), w, reduction=reduction, label_smoothing=ls)
            np.testing.assert_allclose(got.cpu().numpy(), np_cross_entropy(x, target, weight, reduction, -100, ls),
                                       rtol=1e-10, atol=1e-12)

    @pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
    def test_cross_entropy_class_probabilities(self, device, reduction):
        x = rng.standard_normal((5, 3, 2))
        p = rng.uniform(size=(5, 3, 2))
        p /= p.sum(axis=1, keepdims=True)
        weight = np.array([1.0, 2.0, 0.5])
        for ls in (0.0, 0.1):
            got = F.cross_entropy(t(x, device=device), t(p, device=device), t(weight, device=device), reduction=reduction, label_smoothing=ls)
            np.testing.assert_allclose(got.cpu().numpy(), np_cross_entropy(x, p, weight, reduction, -100, ls), rtol=1e-10)

    def test_target_out_of_bounds(self, device):
        # The bound is checked where the values are: on cpu an IndexError at the call; a device kernel may
        # report it as PyTorch's CUDA kernels do (a device-side check surfacing as an AcceleratorError at
        # the next synchronize), a backend running the CPU kernel raises the IndexError.
        x = backend_sdk.zeros(3, 4, device=device)
        errors = IndexError if device == "cpu" else (IndexError, backend_sdk.AcceleratorError)
        for call, message in [(lambda: backend_sdk.nll_loss(x, t([0, 4, 1], device=device)), "Target 4 is out of"),
                              (lambda: F.cross_entropy(x, t([0, -1, 1], device=device)), "Target -1 is out of")]:
            with pytest.raises(errors, match=message + " bounds for 4 classes"):
                call()
                if device != "cpu":
                    getattr(backend_sdk, self.device_type).synchronize()
        assert backend_sdk.ones(2, device=device).sum().item() == 2.0  # the device is usable afterwards

    def test_loss_errors(self, device):
        x = backend_sdk.zeros(3, 4, device=device)
        with pytest.raises(TypeError, match="expected target of dtype int64"):
            backend_sdk.nll_loss(x, t([0.0, 1.0, 1.0], device=device))
        with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
            backend_sdk.nll_loss(x, t([0, 1], device=device))
        with pytest.raises(ValueError, match="weight tensor should be defined either for all 4 classes"):
            backend_sdk.nll_loss(x, t([0, 1, 2], device=device), t([1.0, 2.0], device=device))
        with pytest.raises(ValueError, match="input tensor should be 1D or 2D"):
            backend_sdk.nll_loss(backend_sdk.zeros(2, 3, 4, device=device), backend_sdk.zeros(2, 4, dtype=backend_sdk.int64, device=device))
        with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
            F.cross_entropy(x, t([0, 1, 2], device=device), label_smoothing=1.5)
        with pytest.raises(ValueError, match="expected target size"):
            F.nll_loss(backend_sdk.zeros(2, 3, 4, device=device), backend_sdk.zeros(2, 5, dtype=backend_sdk.int64, device=device))
        with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
            F.nll_loss(x, t([0, 1, 2], device=device), reduction="bogus")
        with pytest.raises(ValueError, match="reduction must be 0 \\(none\\), 1 \\(mean\\) or 2 \\(sum\\), got 5"):
            backend_sdk.nll_loss(x, t([0, 1, 2], device=device), reduction=5)

    def test_functional_mse_and_legacy_arguments(self, device):
        a, b = t([1.0, 2.0, 4.0], device=device), t([1.0, 0.0, 0.0], device=device)
        assert F.mse_loss(a, b).item() == pytest.approx(20 / 3)
        assert F.mse_loss(a, b, reduction="sum").item() == 20.0
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            assert F.mse_loss(a, b, size_average=False).item() == 20.0
        assert F.cross_entropy.__doc__ and F.nll_loss.__doc__


instantiate_device_type_tests(TestLossDeviceType, globals())


def test_nll_loss_forward_outputs_and_meta():
    x = t(np.log(np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]], dtype=np.float32)))
    out, total = backend_sdk.ops.aten.nll_loss_forward(x, t([1, 0, -100]), t([1.0, 3.0]), 1, -100)
    assert out.dtype == backend_sdk.float32 and out.shape == () and total.shape == ()
    assert total.item() == 4.0
    np.testing.assert_allclose(out.item(), -(3 * np.log(0.8) + np.log(0.5)) / 4, rtol=1e-6)
    o, tw = backend_sdk.empty(0), backend_sdk.empty(0)
    r = backend_sdk.ops.aten.nll_loss_forward(x, t([1, 0, -100]), t([1.0, 3.0]), 1, -100, output=o, total_weight=tw)
    assert r[0] is o and r[1] is tw and tw.item() == 4.0 and o.item() == out.item()
    none = backend_sdk.nll_loss(x, t([1, 0, 0]), reduction=0)
    assert none.shape == (3,)
    all_ignored = backend_sdk.nll_loss(x, t([-100, -100, -100]))
    assert np.isnan(all_ignored.item())
    meta_out, meta_total = backend_sdk.ops.aten.nll_loss_forward(backend_sdk.empty(4, 3, device="meta"),
                                                                 backend_sdk.empty(4, dtype=backend_sdk.int64,
                                                                                   device="meta"), None, 0, -100)
    assert meta_out.is_meta and meta_out.shape == (4,) and meta_total.shape == ()
    ce = backend_sdk.cross_entropy_loss(backend_sdk.empty(4, 3, 2, device="meta"),
                                        backend_sdk.empty(4, 2, dtype=backend_sdk.int64, device="meta"))
    assert ce.is_meta and ce.shape == ()
