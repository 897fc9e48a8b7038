"""The AdamW step's fused in-place kernels (addcmul_, addcdiv_, lerp_ with a Scalar weight; Note [Fused
pointwise fast paths], ops/TensorOps.cpp) and embedding's backward (index_put_ accumulate, Note
[Deterministic accumulation], ops/Indexing.cpp; embedding_dense_backward, Note [Deterministic embedding
backward], ops/NNOps.cpp): values against numpy bit for bit, the composite's rounding, aliasing,
strided and broadcast operands, autograd through the composite, and results independent of the thread
count."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.nn import functional as F

# Large enough that the iterator splits the loop over threads (2 * kParallelGrain elements).
N = 200_003


def _t(a):
    return torch.from_numpy(np.array(a, copy=True, order="C"))  # a copy: in-place ops must not touch `a`


def _bits_equal(got, want):
    got = np.asarray(got)
    want = np.asarray(want, dtype=got.dtype)
    assert got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.max(np.abs(got.astype(np.float64) - want))


def _inputs(dtype=np.float32, n=N, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    c = (np.abs(rng.standard_normal(n)) + 0.5).astype(dtype)
    return a, b, c


# numpy with one rounding per operator, in the composite's order (numpy does not contract to FMA).
def _np_addcmul(a, b, c, v):
    return a + a.dtype.type(v) * (b * c)


def _np_addcdiv(a, b, c, v):
    return a + a.dtype.type(v) * (b / c)


def _np_lerp(a, b, w):
    return a + a.dtype.type(w) * (b - a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("grad_mode", [True, False])
def test_fused_inplace_matches_numpy_bit_for_bit(dtype, grad_mode):
    a, b, c = _inputs(dtype)
    with torch.set_grad_enabled(grad_mode):
        x = _t(a)
        x.addcmul_(_t(b), _t(c), value=0.001)
        _bits_equal(x.numpy(), _np_addcmul(a, b, c, 0.001))
        x = _t(a)
        x.addcdiv_(_t(b), _t(c), value=-1e-3)
        _bits_equal(x.numpy(), _np_addcdiv(a, b, c, -1e-3))
        x = _t(a)
        x.lerp_(_t(b), 0.1)
        _bits_equal(x.numpy(), _np_lerp(a, b, 0.1))
        x = _t(a)
        x.lerp_(_t(b), 0.9)  # weight >= 0.5: still the composite's formula
        _bits_equal(x.numpy(), _np_lerp(a, b, 0.9))


def test_fused_equals_the_composite_operators():
    """The fused loop and the operators the composite calls give the same bits."""
    a, b, c = _inputs(seed=3)
    with torch.no_grad():
        fused = _t(a).addcmul_(_t(b), _t(c), value=0.37)
        ops = _t(a).add_(_t(b).mul(_t(c)), alpha=0.37)
        _bits_equal(fused.numpy(), ops.numpy())
        fused = _t(a).addcdiv_(_t(b), _t(c), value=-2.5)
        ops = _t(a).add_(_t(b).div(_t(c)), alpha=-2.5)
        _bits_equal(fused.numpy(), ops.numpy())
        fused = _t(a).lerp_(_t(b), 0.3)
        ops = _t(a).add_(_t(b).sub(_t(a)).mul(0.3))
        _bits_equal(fused.numpy(), ops.numpy())


def test_fused_aliasing_self_as_input():
    a, b, c = _inputs(seed=1)
    with torch.no_grad():
        x = _t(a)
        x.addcmul_(x, x, value=0.5)
        _bits_equal(x.numpy(), _np_addcmul(a, a, a, 0.5))
        x = _t(c)
        x.addcdiv_(x, x, value=2.0)
        _bits_equal(x.numpy(), _np_addcdiv(c, c, c, 2.0))
        x = _t(a)
        x.lerp_(x, 0.25)
        _bits_equal(x.numpy(), a)
        # A view of self as an input (the same elements, the same strides).
        x = _t(a)
        x.addcmul_(x.view(-1), _t(b), value=1.5)
        _bits_equal(x.numpy(), _np_addcmul(a, a, b, 1.5))


def test_fused_strided_and_expanded_operands():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    b = rng.standard_normal((400, 300)).astype(np.float32)  # transposed below
    c = (np.abs(rng.standard_normal((300, 800))) + 0.5).astype(np.float32)  # every other column
    s = np.float32(1.75)
    with torch.no_grad():
        x = _t(a)
        bt, cs = _t(b).t(), _t(c)[:, ::2]
        x.addcmul_(bt, cs, value=0.01)
        _bits_equal(x.numpy(), _np_addcmul(a, b.T, c[:, ::2], 0.01))
        # self transposed (written through its strides), t2 one value expanded to self's shape.
        base = _t(a.T.copy())
        xt = base.t()
        xt.addcdiv_(bt, torch.tensor(s).expand(300, 400), value=-0.5)
        _bits_equal(base.numpy().T, _np_addcdiv(a, b.T, np.full((300, 400), s), -0.5))
        x = _t(a)
        x.lerp_(bt, 0.2)
        _bits_equal(x.numpy(), _np_lerp(a, b.T, 0.2))


def test_broadcast_and_other_dtypes_take_the_composite():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    col = rng.standard_normal((64, 1)).astype(np.float32)
    row = (np.abs(rng.standard_normal(32)) + 0.5).astype(np.float32)
    with torch.no_grad():
        x = _t(a)
        x.addcmul_(_t(col), _t(row), value=0.5)
        _bits_equal(x.numpy(), _np_addcmul(a, col, row, 0.5))
        x = _t(a)
        x.addcdiv_(_t(col), _t(row), value=3.0)
        _bits_equal(x.numpy(), _np_addcdiv(a, col, row, 3.0))
        x = _t(a)
        x.lerp_(_t(row), 0.4)
        _bits_equal(x.numpy(), _np_lerp(a, np.broadcast_to(row, a.shape), 0.4))
        # Mixed dtypes, float16 and integers: the composite's promotion and rounding.
        x = _t(a.astype(np.float64))
        x.addcmul_(_t(a), _t(a), value=0.5)
        np.testing.assert_allclose(x.numpy(), a.astype(np.float64) + 0.5 * (a * a).astype(np.float64), rtol=1e-12)
        h = _t(a.astype(np.float16))
        h.addcmul_(h, h, value=0.5)
        want = (a.astype(np.float16) + np.float16(0.5) * (a.astype(np.float16) * a.astype(np.float16)))
        np.testing.assert_allclose(h.numpy().astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
        i = torch.tensor([1, 2, 3])
        i.addcmul_(torch.tensor([2, 2, 2]), torch.tensor([3, 4, 5]), value=2)
        assert i.tolist() == [13, 18, 23]


def test_fused_errors_are_the_composites():
    x = torch.zeros(4)
    with pytest.raises(ValueError):
        with torch.no_grad():
            x.addcmul_(torch.ones(5), torch.ones(5))
    with pytest.raises(TypeError):
        x.lerp_(torch.ones(4, dtype=torch.float64), 0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.zeros(3, dtype=torch.int64).addcdiv_(torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64))
    with pytest.raises(TypeError, match="Boolean alpha"):
        with torch.no_grad():
            x.addcmul_(torch.ones(4), torch.ones(4), value=True)


def test_fused_bumps_the_version_counter():
    x = torch.zeros(8)
    v = x._version
    with torch.no_grad():
        x.addcmul_(torch.ones(8), torch.ones(8))
        x.addcdiv_(torch.ones(8), torch.ones(8))
        x.lerp_(torch.ones(8), 0.5)
    assert x._version == v + 3


def test_autograd_still_records_the_composite():
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(6).astype(np.float32) for _ in range(3))
    t1 = _t(b).requires_grad_()
    t2 = _t(np.abs(c) + 0.5).requires_grad_()
    x = _t(a).clone()
    y = x.addcdiv_(t1, t2, value=2.0)
    assert y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_allclose(t1.grad.numpy(), 2.0 / (np.abs(c) + 0.5), rtol=1e-6)
    np.testing.assert_allclose(t2.grad.numpy(), -2.0 * b / (np.abs(c) + 0.5) ** 2, rtol=1e-5)
    e = _t(b).requires_grad_()
    z = _t(a).lerp_(e, 0.25)
    z.sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), np.full(6, 0.25, np.float32))
    # A leaf that requires grad is still refused in grad mode, and updated under no_grad.
    p = _t(a).requires_grad_()
    with pytest.raises(RuntimeError):
        p.addcmul_(_t(b), _t(c))
    with torch.no_grad():
        p.addcmul_(_t(b), _t(c), value=0.5)
    _bits_equal(p.detach().numpy(), _np_addcmul(a, b, c, 0.5))


def test_adamw_step_matches_numpy_bit_for_bit():
    """The per-parameter AdamW (foreach=False): PyTorch's operators, each rounded once in float32."""
    rng = np.random.default_rng(6)
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [rng.standard_normal(N).astype(np.float32) * np.float32(1e-3) for _ in range(3)]
    p = torch.nn.Parameter(_t(p0))
    opt = torch.optim.AdamW([p], lr=1e-3, foreach=False)
    f = np.float32
    w, m, v = p0.copy(), np.zeros(N, f), np.zeros(N, f)
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 1e-2
    for step, g in enumerate(grads, 1):
        p.grad = _t(g)
        opt.step()
        w = w * f(1 - lr * wd)
        m = m + f(1 - b1) * (g - m)
        v = v * f(b2)
        v = v + f(1 - b2) * (g * g)
        denom = (np.sqrt(v) / f(np.sqrt(1 - b2 ** step))) + f(eps)
        w = w + f(-(lr / (1 - b1 ** step))) * (m / denom)
    _bits_equal(p.detach().numpy(), w)
    _bits_equal(opt.state[p]["exp_avg"].numpy(), m)
    _bits_equal(opt.state[p]["exp_avg_sq"].numpy(), v)


# ---- embedding backward ----

def _np_scatter_add(num, idx, g, padding_idx=None):
    want = np.zeros((num, g.shape[-1]), g.dtype)
    rows = g.reshape(-1, g.shape[-1])
    flat = idx.reshape(-1)
    keep = flat != padding_idx if padding_idx is not None else np.ones(flat.shape, bool)
    np.add.at(want, flat[keep], rows[keep])  # in index order, one float32 rounding per add
    return want


def test_embedding_backward_values():
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((1000, 64)).astype(np.float32)
    idx = rng.integers(0, 50, (64, 80))  # many repeats: the accumulation order matters
    g = rng.standard_normal((64, 80, 64)).astype(np.float32)
    w = _t(weight).requires_grad_()
    F.embedding(_t(idx), w).backward(_t(g))
    _bits_equal(w.grad.numpy(), _np_scatter_add(1000, idx, g))
    w.grad = None
    F.embedding(_t(idx), w, padding_idx=3).backward(_t(g))
    _bits_equal(w.grad.numpy(), _np_scatter_add(1000, idx, g, padding_idx=3))
    w.grad = None
    F.embedding(_t(idx), w).sum().backward()  # the gradient one value broadcast (expanded)
    _bits_equal(w.grad.numpy(), _np_scatter_add(1000, idx, np.ones_like(g)))


def test_embedding_dense_backward_values_and_errors():
    rng = np.random.default_rng(8)
    idx = rng.integers(0, 40, (3000,))
    g = rng.standard_normal((3000, 48)).astype(np.float32)
    aten = torch.ops.aten
    out = aten.embedding_dense_backward(_t(g), _t(idx), 1000, -1, False)
    _bits_equal(out.numpy(), _np_scatter_add(1000, idx, g))
    out = aten.embedding_dense_backward(_t(g), _t(idx), 1000, 5, False)
    _bits_equal(out.numpy(), _np_scatter_add(1000, idx, g, padding_idx=5))
    counts = np.bincount(idx, minlength=1000).astype(np.float32)
    scaled = g * (np.float32(1) / counts[idx])[:, None]
    out = aten.embedding_dense_backward(_t(g), _t(idx), 1000, -1, True)
    _bits_equal(out.numpy(), _np_scatter_add(1000, idx, scaled))
    with pytest.raises(IndexError, match="index out of range"):
        aten.embedding_dense_backward(_t(g), _t(np.where(idx == 7, 1000, idx)), 1000, -1, False)


def test_index_put_accumulate_strided_self_and_values():
    rng = np.random.default_rng(9)
    base = np.zeros((128, 500), np.float32)
    idx = rng.integers(0, 500, (4000,))
    vals = rng.standard_normal((128, 4000)).astype(np.float32)
    z = _t(base.copy()).t()  # not contiguous: the serial loop
    z.index_put_((_t(idx),), _t(vals).t(), accumulate=True)
    _bits_equal(z.t().numpy(), _np_scatter_add(500, idx, vals.T).T)
    z = torch.zeros(500, 128)
    z.index_put_((_t(idx),), _t(vals).t(), accumulate=True)  # strided values
    _bits_equal(z.numpy(), _np_scatter_add(500, idx, vals.T))


_THREAD_CODE = """
import hashlib, numpy as np, backend_sdk as torch
rng = np.random.default_rng(10)
idx = torch.from_numpy(rng.integers(0, 30, (64, 128)))
g = torch.from_numpy(rng.standard_normal((64, 128, 96)).astype(np.float32))
w = torch.from_numpy(rng.standard_normal((5000, 96)).astype(np.float32)).requires_grad_()
torch.nn.functional.embedding(idx, w).backward(g)
d = torch.ops.aten.embedding_dense_backward(g, idx, 5000, -1, False)
a, b, c = (torch.from_numpy(rng.standard_normal(300000).astype(np.float32)) for _ in range(3))
a.addcmul_(b, c, value=0.5).addcdiv_(b, c.abs() + 0.5, value=0.1).lerp_(b, 0.1)
h = hashlib.sha256(w.grad.numpy().tobytes() + d.numpy().tobytes() + a.numpy().tobytes())
print(h.hexdigest(), torch.equal(w.grad, d))
"""


def test_results_do_not_depend_on_the_thread_count():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    outs = set()
    for threads in ("1", "2", "3", "8"):
        env["SDK_NUM_THREADS"] = threads
        outs.add(subprocess.run([sys.executable, "-c", _THREAD_CODE], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1, outs
    assert outs.pop().split()[1] == "True"
