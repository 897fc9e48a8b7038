"""Issue 20: derivative formulas of the nn operators (derivatives.def since issue 14), so models train.

gradcheck (float64) of each operator through its public function on cpu and on accel, the
non-differentiable outputs and output_mask handling, and two end-to-end training runs (a small CNN
and a tiny GPT block) whose loss decreases and whose gradient matches a finite difference.
"""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.autograd import gradcheck, gradgradcheck

F = B.nn.functional
f64 = B.float64


def _randn(*shape: int, device: str, seed: int, scale: float = 1.0, shift: float = 0.0) -> B.Tensor:
    a = np.random.default_rng(seed).standard_normal(shape) * scale + shift
    return B.from_numpy(a).to(device=device).requires_grad_()


def _uniform(*shape: int, device: str, seed: int, low: float, high: float) -> B.Tensor:
    a = np.random.default_rng(seed).uniform(low, high, shape)
    return B.from_numpy(a).to(device=device).requires_grad_()


# ---- gradcheck per operator ------------------------------------------------------------------
@pytest.mark.parametrize("stride,padding,groups", [(1, 0, 1), (2, 1, 1), (1, 1, 3)])
def test_conv2d_gradcheck(device, stride, padding, groups):
    x = _randn(2, 3, 5, 5, device=device, seed=1)
    w = _randn(6, 3 // groups, 3, 3, device=device, seed=2)
    b = _randn(6, device=device, seed=3)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, groups=groups), (x, w, b))


def test_conv2d_gradcheck_without_bias_and_partial_mask(device):
    x = _randn(1, 2, 4, 4, device=device, seed=4)
    w = _randn(3, 2, 2, 2, device=device, seed=5)
    assert gradcheck(lambda x, w: F.conv2d(x, w), (x, w))
    # Only the weight requires grad: output_mask is (False, True, False), the input gets no grad.
    xd = x.detach()
    out = F.conv2d(xd, w)
    out.sum().backward()
    assert xd.grad is None and w.grad is not None
    assert w.grad.shape == w.shape


def test_conv1d_gradcheck(device):
    x = _randn(2, 2, 7, device=device, seed=6)
    w = _randn(3, 2, 3, device=device, seed=7)
    b = _randn(3, device=device, seed=8)
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), (x, w, b))


def test_layer_norm_gradcheck(device):
    x = _randn(3, 4, 5, device=device, seed=9)
    w = _randn(4, 5, device=device, seed=10)
    b = _randn(4, 5, device=device, seed=11)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, [4, 5], w, b), (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x, [5]), (x,))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(device, training):
    x = _randn(3, 2, 4, 4, device=device, seed=12)
    w = _randn(2, device=device, seed=13)
    b = _randn(2, device=device, seed=14)
    rm = B.from_numpy(np.array([0.3, -0.2])).to(device=device)
    rv = B.from_numpy(np.array([0.7, 1.9])).to(device=device)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=training), (x, w, b))
    assert gradcheck(lambda x: F.batch_norm(x, None if training else rm, None if training else rv,
                                            training=training), (x,))


def test_batch_norm_training_backward_after_running_stats_update(device):
    # The running buffers are updated in place by every forward; a training-mode backward does not
    # read them, so backward through an earlier forward still works after a later one.
    bn = B.nn.BatchNorm2d(2).to(device=device)
    x = _randn(2, 2, 3, 3, device=device, seed=15)
    y1 = bn(x).pow(2).sum()
    bn(x.detach() * 2)
    y1.backward()
    assert x.grad is not None and bn.weight.grad is not None


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(2, None, 0, False), (3, 2, 1, False), (3, 2, 0, True)])
def test_max_pool2d_gradcheck(device, kernel, stride, padding, ceil_mode):
    x = _randn(2, 2, 6, 6, device=device, seed=16)
    assert gradcheck(lambda x: F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode), (x,))


def test_max_pool2d_indices_output_not_differentiable(device):
    x = _randn(1, 1, 4, 4, device=device, seed=17)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert out.requires_grad and not idx.requires_grad


@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (True, 5)])
def test_avg_pool2d_gradcheck(device, count_include_pad, divisor):
    x = _randn(2, 2, 5, 5, device=device, seed=18)
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=count_include_pad,
                                            divisor_override=divisor), (x,))


@pytest.mark.parametrize("size", [[3, 2], [1, 1], [5, 5]])
def test_adaptive_avg_pool2d_gradcheck(device, size):
    x = _randn(2, 2, 5, 5, device=device, seed=19)
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, size), (x,))


def test_sort_and_topk_gradcheck(device):
    x = _randn(3, 5, device=device, seed=20)
    assert gradcheck(lambda x: B.sort(x, dim=1, descending=True)[0], (x,))
    assert gradcheck(lambda x: B.sort(x, dim=0, stable=True)[0], (x,))
    assert gradcheck(lambda x: B.topk(x, 2, dim=1)[0], (x,))
    assert gradcheck(lambda x: B.topk(x, 2, dim=0, largest=False)[0], (x,))


def test_topk_gradient_scattered_to_indices(device):
    x = B.from_numpy(np.array([[1.0, 5.0, 3.0, 4.0]])).to(device=device).requires_grad_()
    vals, idx = B.topk(x, 2)
    assert not idx.requires_grad
    (vals * B.from_numpy(np.array([[10.0, 20.0]])).to(device=device)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[0.0, 10.0, 0.0, 20.0]])


def test_dropout_gradcheck_fixed_seed(device):
    x = _randn(4, 6, device=device, seed=21)

    def dropout(x):
        B.manual_seed(0)
        return F.dropout(x, 0.4, training=True)

    def native(x):
        B.manual_seed(0)
        return B.ops.aten.native_dropout(x, 0.4, True)[0]

    assert gradcheck(dropout, (x,))
    assert gradcheck(native, (x,))


def test_native_dropout_gradient_is_mask_times_scale(device):
    x = _randn(50, device=device, seed=22)
    out, mask = B.ops.aten.native_dropout(x, 0.5, True)
    out.sum().backward()
    expected = mask.cpu().numpy().astype(np.float64) * 2.0
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected)
    x.grad = None
    out, _ = B.ops.aten.native_dropout(x, 0.5, False)  # eval: identity, gradient 1
    out.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.ones(50))


def test_log2_log10_erfinv_gradcheck(device):
    p = _uniform(3, 4, device=device, seed=23, low=0.1, high=3.0)
    assert gradcheck(B.log2, (p,))
    assert gradcheck(B.log10, (p,))
    q = _uniform(3, 4, device=device, seed=24, low=-0.9, high=0.9)
    assert gradcheck(B.erfinv, (q,))


@pytest.mark.parametrize("case", ["layer_norm", "batch_norm", "conv2d"])
def test_create_graph_first_order_correct_and_second_order_checked(device, case):
    # With create_graph the first-order gradient equals the plain one (only the input requires grad: a
    # partial output_mask), and the backward operators have formulas of their own (issue 14: double
    # backward, Note [Normalization double backward], Note [Convolution double backward]).
    x = _randn(2, 3, 4, 4, device=device, seed=25)
    w = _randn(3, 3, 3, 3, device=device, seed=26).detach()
    fn = {"layer_norm": lambda x: F.layer_norm(x, [4]),
          "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
          "conv2d": lambda x: F.conv2d(x, w)}[case]
    node = {"layer_norm": "NativeLayerNormBackwardBackward0", "batch_norm": "NativeBatchNormBackwardBackward0",
            "conv2d": "ConvolutionBackwardBackward0"}[case]
    (plain,) = B.autograd.grad(fn(x).pow(3).sum(), x)
    (g,) = B.autograd.grad(fn(x).pow(3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().cpu().numpy(), plain.cpu().numpy(), rtol=1e-12, atol=1e-12)
    assert g.requires_grad
    names = set()
    todo = [g.grad_fn]
    while todo:  # the double-backward node is in g's graph
        n = todo.pop()
        if n is not None and n.name() not in names:
            names.add(n.name())
            todo.extend(f for f, _ in n.next_functions)
    assert node in names
    assert gradgradcheck(lambda x: fn(x).pow(3), (x,))


# ---- end to end ------------------------------------------------------------------
def _fd_check(loss_fn, param: B.Tensor, index: tuple, eps: float = 1e-6) -> None:
    """The analytic gradient of one parameter element equals a central finite difference."""
    param.grad = None
    loss_fn().backward()
    analytic = float(param.grad.cpu().numpy()[index])
    with B.no_grad():
        base = param.detach().cpu().numpy()
        plus, minus = base.copy(), base.copy()
        plus[index] += eps
        minus[index] -= eps
        param.copy_(B.from_numpy(plus))
        lp = float(loss_fn().item())
        param.copy_(B.from_numpy(minus))
        lm = float(loss_fn().item())
        param.copy_(B.from_numpy(base))
    numeric = (lp - lm) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-5 * max(1.0, abs(numeric)), (analytic, numeric)


def test_small_cnn_trains():
    B.manual_seed(0)
    model = B.nn.Sequential(
        B.nn.Conv2d(1, 4, 3, padding=1), B.nn.BatchNorm2d(4), B.nn.ReLU(), B.nn.MaxPool2d(2),
        B.nn.Flatten(), B.nn.Linear(4 * 4 * 4, 3),
    ).to(dtype=f64)
    rng = np.random.default_rng(0)
    x = B.from_numpy(rng.standard_normal((8, 1, 8, 8)))
    y = B.from_numpy(rng.integers(0, 3, 8).astype(np.int64))
    opt = B.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses
    for p in model.parameters():
        assert p.grad is not None
    model.eval()  # BatchNorm on its running statistics: the finite difference sees the same function
    conv = model[0]
    _fd_check(lambda: F.cross_entropy(model(x), y), conv.weight, (1, 0, 1, 2))
    model.train()
    _fd_check(lambda: F.cross_entropy(model(x), y), model[1].weight, (2,))


class _GPTBlock(B.nn.Module):
    """Embedding -> pre-LayerNorm causal self-attention -> pre-LayerNorm GELU MLP -> vocabulary head."""

    def __init__(self, vocab: int, dim: int, heads: int, use_mha: bool) -> None:
        super().__init__()
        self.emb = B.nn.Embedding(vocab, dim)
        self.ln1 = B.nn.LayerNorm(dim)
        self.use_mha = use_mha
        self.heads = heads
        if use_mha:
            self.attn = B.nn.MultiheadAttention(dim, heads, batch_first=True)
        else:
            self.qkv = B.nn.Linear(dim, 3 * dim)
            self.proj = B.nn.Linear(dim, dim)
        self.ln2 = B.nn.LayerNorm(dim)
        self.mlp = B.nn.Sequential(B.nn.Linear(dim, 4 * dim), B.nn.GELU(), B.nn.Linear(4 * dim, dim))
        self.head = B.nn.Linear(dim, vocab)

    def forward(self, tokens: B.Tensor) -> B.Tensor:
        h = self.emb(tokens)
        n, t, d = h.shape
        a = self.ln1(h)
        if self.use_mha:
            mask = B.from_numpy(np.triu(np.ones((t, t), dtype=bool), 1))
            a, _ = self.attn(a, a, a, attn_mask=mask, need_weights=False)
        else:
            q, k, v = self.qkv(a).chunk(3, dim=-1)
            split = lambda z: z.reshape([n, t, self.heads, d // self.heads]).transpose(1, 2)  # noqa: E731
            a = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
            a = self.proj(a.transpose(1, 2).reshape([n, t, d]))
        h = h + a
        h = h + self.mlp(self.ln2(h))
        return self.head(h)


@pytest.mark.parametrize("use_mha", [False, True])
def test_tiny_gpt_block_trains(use_mha):
    B.manual_seed(1)
    vocab, t = 11, 6
    model = _GPTBlock(vocab, 8, 2, use_mha).to(dtype=f64)
    rng = np.random.default_rng(1)
    seq = rng.integers(0, vocab, (4, t + 1)).astype(np.int64)
    inp, tgt = B.from_numpy(seq[:, :-1].copy()), B.from_numpy(seq[:, 1:].copy())

    def loss_fn():
        return F.cross_entropy(model(inp).reshape([-1, vocab]), tgt.reshape([-1]))

    opt = B.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    assert model.ln1.weight.grad is not None and model.emb.weight.grad is not None
    _fd_check(loss_fn, model.ln1.weight, (3,))
    _fd_check(loss_fn, model.ln2.bias, (5,))
