"""nn layers, containers, functional forms, losses, init and nn.utils against numpy references."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn
from backend_sdk.nn import functional as F


def _np(t):
    return t.detach().cpu().numpy()


def _t(a, device="cpu"):
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


RNG = np.random.default_rng(0)


def test_linear_matches_numpy_and_reports_shapes(device):
    torch.manual_seed(0)
    lin = nn.Linear(3, 5).to(device)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    out = lin(_t(x, device))
    assert np.allclose(_np(out), x @ _np(lin.weight).T + _np(lin.bias), atol=1e-5)
    bound = 1 / math.sqrt(3)
    assert np.all(np.abs(_np(lin.weight)) <= bound) and np.all(np.abs(_np(lin.bias)) <= bound)
    with pytest.raises(ValueError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x5 and 3x5\)"):
        lin(torch.ones(4, 5, device=device))


def test_linear_init_reproduces_with_seed_on_every_device(device):
    torch.manual_seed(7)
    a = nn.Linear(4, 4, device=device)
    torch.manual_seed(7)
    b = nn.Linear(4, 4)
    assert np.array_equal(_np(a.weight), _np(b.weight))


def test_bilinear_matches_einsum(device):
    torch.manual_seed(0)
    m = nn.Bilinear(3, 4, 2).to(device)
    x1 = RNG.standard_normal((5, 3)).astype(np.float32)
    x2 = RNG.standard_normal((5, 4)).astype(np.float32)
    ref = np.einsum("ni,kij,nj->nk", x1, _np(m.weight), x2) + _np(m.bias)
    assert np.allclose(_np(m(_t(x1, device), _t(x2, device))), ref, atol=1e-5)
    with pytest.raises(ValueError, match="input1 size does not match weight size"):
        m(torch.ones(5, 2, device=device), torch.ones(5, 4, device=device))


def test_activations_match_numpy(device):
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    tx = _t(x, device)
    assert np.allclose(_np(nn.ReLU()(tx)), np.maximum(x, 0))
    assert np.allclose(_np(nn.LeakyReLU(0.2)(tx)), np.where(x > 0, x, 0.2 * x))
    assert np.allclose(_np(nn.Sigmoid()(tx)), 1 / (1 + np.exp(-x)), atol=1e-6)
    assert np.allclose(_np(nn.Tanh()(tx)), np.tanh(x), atol=1e-6)
    assert np.allclose(_np(nn.SiLU()(tx)), x / (1 + np.exp(-x)), atol=1e-5)
    erf = np.vectorize(math.erf)
    assert np.allclose(_np(nn.GELU()(tx)), 0.5 * x * (1 + erf(x / math.sqrt(2))), atol=1e-5)
    m = RNG.standard_normal((2, 5)).astype(np.float32)
    sm = np.exp(m) / np.exp(m).sum(1, keepdims=True)
    assert np.allclose(_np(nn.Softmax(dim=1)(_t(m, device))), sm, atol=1e-6)
    assert np.allclose(_np(nn.LogSoftmax(dim=1)(_t(m, device))), np.log(sm), atol=1e-5)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        F.softmax(_t(m))
    y = _t(x.copy(), device)
    F.relu(y, inplace=True)
    assert np.allclose(_np(y), np.maximum(x, 0))
    assert repr(nn.LeakyReLU(0.2, inplace=True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"


def test_flatten_unflatten_identity(device):
    x = torch.ones(2, 3, 4, device=device)
    assert list(nn.Flatten()(x).shape) == [2, 12] and nn.Flatten()(x).device == x.device
    assert list(nn.Flatten(0, -1)(x).shape) == [24]
    assert list(nn.Unflatten(1, (3, 2, 2))(torch.ones(2, 12, device=device)).shape) == [2, 3, 2, 2]
    assert list(nn.Unflatten(-1, (-1, 4))(torch.ones(2, 12, device=device)).shape) == [2, 3, 4]
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (5, 2))(torch.ones(2, 12, device=device))
    assert nn.Identity(3, unused=True)(x) is x
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_dropout_scales_masks_and_reproduces(device):
    x = torch.ones(1000, device=device)
    torch.manual_seed(3)
    a = _np(nn.Dropout(0.25)(x))
    torch.manual_seed(3)
    b = _np(F.dropout(torch.ones(1000), 0.25))
    assert np.array_equal(a, b)  # same seed, same mask on cpu and on the device
    assert set(np.unique(a).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert 0.15 < (a == 0).mean() < 0.35
    d = nn.Dropout(0.5).eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    xg = torch.ones(10).requires_grad_()
    torch.manual_seed(1)
    out = F.dropout(xg, 0.5)
    out.sum().backward()
    assert np.array_equal(_np(xg.grad), _np(out))  # gradient is the mask times the scale


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and len(seq[1:]) == 2
    seq.append(nn.Tanh())
    assert len(seq) == 4
    del seq[1]
    assert [k for k in seq._modules] == ["0", "1", "2"]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("a", nn.ReLU()), ("b", nn.Tanh())]))
    assert named.a is named[0]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(list(ml.parameters())) == 6
    ml.insert(0, nn.ReLU())
    assert isinstance(ml[0], nn.ReLU) and len(ml) == 4
    with pytest.raises(IndexError, match="index 9 is out of range"):
        ml[9]
    md = nn.ModuleDict({"x": nn.ReLU(), "y": nn.Linear(1, 2)})
    assert list(md.keys()) == ["x", "y"] and "y" in md
    assert [n for n, _ in md.named_parameters()] == ["y.weight", "y.bias"]
    pl = nn.ParameterList([torch.ones(2), nn.Parameter(torch.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    assert "Parameter containing: [backend_sdk.float32 of size 2]" in repr(pl)


def test_losses_match_numpy(device):
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    y = RNG.standard_normal((6, 4)).astype(np.float32)
    tx, ty = _t(x, device), _t(y, device)
    assert np.isclose(_np(nn.MSELoss()(tx, ty)), ((x - y) ** 2).mean(), atol=1e-6)
    assert np.isclose(_np(nn.L1Loss(reduction="sum")(tx, ty)), np.abs(x - y).sum(), atol=1e-4)
    d = np.abs(x - y)
    ref = np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25).mean()
    assert np.isclose(_np(nn.SmoothL1Loss(beta=0.5)(tx, ty)), ref, atol=1e-6)
    t01 = (y > 0).astype(np.float32)
    sig = 1 / (1 + np.exp(-x))
    bce = -(t01 * np.log(sig) + (1 - t01) * np.log(1 - sig))
    assert np.isclose(_np(nn.BCEWithLogitsLoss()(tx, _t(t01, device))), bce.mean(), atol=1e-5)
    pw = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    bce_pw = -(pw * t01 * np.log(sig) + (1 - t01) * np.log(1 - sig))
    got = nn.BCEWithLogitsLoss(pos_weight=_t(pw, device), reduction="none")(tx, _t(t01, device))
    assert np.allclose(_np(got), bce_pw, atol=1e-5)
    assert np.isclose(_np(nn.BCELoss()(_t(sig, device), _t(t01, device))), bce.mean(), atol=1e-5)
    labels = np.array([0, 3, 1, 2, 3, 0])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    ce = -logp[np.arange(6), labels].mean()
    assert np.isclose(_np(nn.CrossEntropyLoss()(tx, _t(labels, device))), ce, atol=1e-5)
    assert np.isclose(_np(nn.NLLLoss()(_t(logp.astype(np.float32), device), _t(labels, device))), ce, atol=1e-5)
    with pytest.raises(ValueError, match=r"Target size \(.*\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(tx, torch.ones(6, device=device))
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(tx, torch.ones(4, device=device))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.l1_loss(tx, ty, reduction="bogus")


def test_loss_gradients_flow_through_composites():
    x = torch.from_numpy(RNG.standard_normal((3, 2)).astype(np.float32)).requires_grad_()
    t = torch.ones(3, 2)
    F.smooth_l1_loss(x, t).backward()
    d = _np(x) - 1
    ref = np.where(np.abs(d) < 1, d, np.sign(d)) / 6
    assert np.allclose(_np(x.grad), ref, atol=1e-6)


def test_functional_misc(device):
    idx = _t(np.array([0, 2, 1]), device)
    oh = F.one_hot(idx, 4)
    assert _np(oh).tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]] and oh.dtype == torch.int64
    assert list(F.one_hot(idx).shape) == [3, 3]
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(idx, 2)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(torch.ones(2, device=device))
    v = RNG.standard_normal((3, 4)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    assert np.allclose(_np(F.normalize(_t(v, device))), v / np.linalg.norm(v, axis=1, keepdims=True), atol=1e-6)
    cos = (v * w).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(w, axis=1))
    assert np.allclose(_np(F.cosine_similarity(_t(v, device), _t(w, device))), cos, atol=1e-6)


def test_init_functions_follow_pytorch_formulas():
    w = torch.empty(200, 100)
    nn.init.constant_(w, 0.3)
    assert np.all(_np(w) == np.float32(0.3))
    nn.init.zeros_(w)
    assert not _np(w).any()
    nn.init.eye_(w)
    assert np.array_equal(_np(w), np.eye(200, 100, dtype=np.float32))
    nn.init.xavier_uniform_(w)
    a = math.sqrt(6 / 300)
    assert np.abs(_np(w)).max() <= a and np.abs(_np(w)).max() > 0.9 * a
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(_np(w).std() - math.sqrt(2 / 200)) < 0.01
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(_np(w)).max() <= 0.5
    nn.init.orthogonal_(w)
    q = _np(w).astype(np.float64)
    assert np.allclose(q.T @ q, np.eye(100), atol=1e-4)
    s = torch.empty(10, 4)
    nn.init.sparse_(s, 0.3)
    assert all((_np(s)[:, c] == 0).sum() >= 3 for c in range(4))
    k = torch.empty(4, 4, 3, 3)
    nn.init.dirac_(k)
    assert _np(k)[1, 1, 1, 1] == 1 and _np(k).sum() == 4
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError, match="Unsupported nonlinearity bogus"):
        nn.init.calculate_gain("bogus")
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        nn.init.xavier_uniform_(torch.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        nn.init.kaiming_uniform_(w, mode="fan_avg")
    g1, g2 = torch.Generator(), torch.Generator()
    g1.manual_seed(5)
    g2.manual_seed(5)
    assert np.array_equal(_np(nn.init.normal_(torch.empty(8), generator=g1)),
                          _np(nn.init.normal_(torch.empty(8), generator=g2)))


def test_clip_grad_and_vector_conversion(device):
    a = nn.Parameter(torch.ones(3, device=device))
    b = nn.Parameter(torch.ones(4, device=device))
    a.grad = torch.full((3,), 3.0, device=device)
    b.grad = torch.full((4,), 4.0, device=device)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    ref = math.sqrt(9 * 3 + 16 * 4)
    assert abs(float(total.item()) - ref) < 1e-4
    new = math.sqrt(float((a.grad * a.grad).sum().item()) + float((b.grad * b.grad).sum().item()))
    assert abs(new - 1.0) < 1e-4
    a.grad = torch.full((3,), float("inf"), device=device)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    b.grad = torch.tensor([-5.0, 0.5, 2.0, -0.1], device=device)
    nn.utils.clip_grad_value_([b], 1.0)
    assert _np(b.grad).tolist() == pytest.approx([-1.0, 0.5, 1.0, -0.1])
    vec = nn.utils.parameters_to_vector([a, b])
    assert list(vec.shape) == [7]
    nn.utils.vector_to_parameters(torch.arange(7, dtype=torch.float32, device=device), [a, b])
    assert _np(a).tolist() == [0, 1, 2] and _np(b).tolist() == [3, 4, 5, 6]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: builtins.list"):
        nn.utils.vector_to_parameters([1], [a])
