"""scaled_dot_product_attention's math path (ops/NNOps.cpp, Note [Attention as bmm], Note [Attention masks in
place]): the folded bmm path and the broadcasting matmul path against numpy, masks of every rank, and the
gradients (first and second order) through the masks written in place, on every test device."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import ops
from backend_sdk.autograd import gradcheck, gradgradcheck

F = torch.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


def ref_attention(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    L, S = s.shape[-2:]
    if causal:
        mask = np.tril(np.ones((L, S), bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("mask_shape", [(5, 6), (2, 1, 5, 6), (2, 3, 5, 6), (1, 5, 6)])
def test_bool_masks_of_every_rank_fold(device, mask_shape) -> None:
    q, k, v = _rnd(2, 3, 5, 8), _rnd(2, 3, 6, 8, seed=1), _rnd(2, 3, 6, 4, seed=2)
    mask = np.random.default_rng(3).random(mask_shape) > 0.4
    mask[..., 0] = True  # no row fully masked
    got = F.scaled_dot_product_attention(torch.tensor(q, device=device), torch.tensor(k, device=device),
                                         torch.tensor(v, device=device), attn_mask=torch.tensor(mask, device=device))
    assert tuple(got.shape) == (2, 3, 5, 4)
    np.testing.assert_allclose(_np(got), ref_attention(q, k, v, mask), rtol=1e-4, atol=1e-5)


def test_additive_mask_three_d_and_broadcast_batch(device) -> None:
    q, k, v = _rnd(4, 5, 8), _rnd(4, 7, 8, seed=1), _rnd(4, 7, 3, seed=2)
    amask = _rnd(4, 5, 7, seed=3)
    T = lambda a: torch.tensor(a, device=device)  # noqa: E731
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(amask), scale=0.3)),
                               ref_attention(q, k, v, amask, scale=0.3), rtol=1e-4, atol=1e-5)
    # key/value broadcast over query's batch dim: the matmul path
    q4, k4, v4 = _rnd(2, 3, 5, 8), _rnd(1, 3, 6, 8, seed=1), _rnd(1, 3, 6, 4, seed=2)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(T(q4), T(k4), T(v4), is_causal=True)),
                               ref_attention(q4, k4, v4, causal=True), rtol=1e-4, atol=1e-5)
    # a non-contiguous query (heads split from the embedding, as a transformer block makes them)
    x = _rnd(2, 5, 3 * 8, seed=4)
    qt = T(x).view(2, 5, 3, 8).transpose(1, 2)
    kf, vf = _rnd(2, 3, 6, 8, seed=5), _rnd(2, 3, 6, 4, seed=6)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(qt, T(kf), T(vf), is_causal=True)),
                               ref_attention(_np(qt), kf, vf, causal=True), rtol=1e-4, atol=1e-5)


def test_math_entry_point_returns_the_attention_weights(device) -> None:
    q, k, v = _rnd(2, 3, 4, 8), _rnd(2, 3, 4, 8, seed=1), _rnd(2, 3, 4, 2, seed=2)
    T = lambda a: torch.tensor(a, device=device)  # noqa: E731
    out, attn = ops.aten._scaled_dot_product_attention_math(T(q), T(k), T(v), None, 0.0, True)
    assert tuple(attn.shape) == (2, 3, 4, 4)
    w = _np(attn)
    assert np.all(np.triu(w[0, 0], 1) == 0)  # exactly zero above the diagonal
    np.testing.assert_allclose(w.sum(-1), np.ones((2, 3, 4)), rtol=1e-6)
    np.testing.assert_allclose(_np(out), ref_attention(q, k, v, causal=True), rtol=1e-4, atol=1e-5)
    # an explicit dropout mask: the weights come back masked, the output is scaled by 1 / (1 - p) (PyTorch's)
    keep = np.random.default_rng(5).random((2, 3, 4, 4)) > 0.5
    out_d, attn_d = ops.aten._scaled_dot_product_attention_math(T(q), T(k), T(v), None, 0.5, True,
                                                                dropout_mask=T(keep))
    np.testing.assert_allclose(_np(attn_d), w * keep, rtol=1e-6)
    np.testing.assert_allclose(_np(out_d), (w * keep * 2.0) @ v.astype(np.float64), rtol=1e-4, atol=1e-5)


def test_gradients_through_masks_written_in_place(device) -> None:
    T = lambda a: torch.tensor(a, device=device, requires_grad=True)  # noqa: E731
    q, k, v = T(_rnd(1, 2, 3, 4, dtype=np.float64)), T(_rnd(1, 2, 3, 4, seed=1, dtype=np.float64)), \
        T(_rnd(1, 2, 3, 4, seed=2, dtype=np.float64))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))
    assert gradgradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))
    mask = torch.tensor(np.array([[True, False, True], [True, True, False], [False, True, True]]), device=device)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v))
    assert gradgradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v))
    # the scores' gradient is zero where the mask removed them: q's gradient equals the one of a reference
    # that masks with where (out of place)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    g = torch.tensor(_rnd(1, 2, 3, 4, seed=6, dtype=np.float64), device=device)
    (gq,) = torch.autograd.grad(out, q, g)
    s = (q @ k.transpose(-2, -1)) / 2.0
    keep = torch.tensor(np.tril(np.ones((3, 3), bool)), device=device)
    ref = torch.softmax(torch.where(keep, s, float("-inf")), -1) @ v
    (gq_ref,) = torch.autograd.grad(ref, q, g)
    np.testing.assert_allclose(_np(gq), _np(gq_ref), rtol=1e-10, atol=1e-12)
    # grad mode is restored after the masked write
    assert torch.is_grad_enabled()
    with torch.no_grad():
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert not torch.is_grad_enabled()
