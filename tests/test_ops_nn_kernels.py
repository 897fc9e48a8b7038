"""The tensor methods and nn operators of issue 20 against numpy: values, dtypes, errors, gradients.

Device-generic: instantiate_device_type_tests makes TestNNKernelsCPU, TestNNKernelsACCEL (and
TestNNKernelsPYACCEL where pyaccel is loaded, see tests/test_device_generic.py) from one class; the
backends serve these operators natively, through the CPU fallback or the composites' primitives.
Gradients through the composites are checked with gradcheck in float64.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.autograd import gradcheck
from backend_sdk.testing import instantiate_device_type_tests


def T(a, device="cpu", **kw):
    return torch.tensor(np.asarray(a), device=device, **kw)


def N(t):
    return t.cpu().numpy()


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def dbl(*shape, seed=0, device="cpu"):
    return T(rnd(*shape, seed=seed, dtype=np.float64), device, requires_grad=True)


class TestNNKernelsDeviceType:
    # ---- group 1: tensor methods ---------------------------------------------------------------------


    def test_isnan_isinf_isfinite(self, device):
        a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], dtype=np.float32)
        x = T(a, device)
        np.testing.assert_array_equal(N(x.isnan()), np.isnan(a))
        np.testing.assert_array_equal(N(torch.isinf(x)), np.isinf(a))
        np.testing.assert_array_equal(N(x.isfinite()), np.isfinite(a))
        i = T(np.array([1, 2], dtype=np.int64), device)
        assert N(i.isnan()).tolist() == [False, False] and N(i.isfinite()).tolist() == [True, True]
        assert x.isnan().dtype == torch.bool


    @pytest.mark.parametrize("k", [-1, 0, 2])
    def test_tril_triu(self, device, k):
        a = rnd(2, 3, 4)
        x = T(a, device)
        np.testing.assert_array_equal(N(x.tril(k)), np.tril(a, k))
        np.testing.assert_array_equal(N(torch.triu(x, k)), np.triu(a, k))
        y = T(a, device)
        y.tril_(k)
        np.testing.assert_array_equal(N(y), np.tril(a, k))
        with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
            T(np.ones(3), device).tril()
        assert gradcheck(lambda t: t.triu(k), (dbl(3, 4, device=device),))


    def test_addcmul_addcdiv_lerp(self, device):
        a, b, c = rnd(3, 4, seed=1), rnd(3, 4, seed=2), rnd(4, seed=3) + 3
        x, y, z = T(a, device), T(b, device), T(c, device)
        np.testing.assert_allclose(N(x.addcmul(y, z, value=0.5)), a + 0.5 * b * c, rtol=1e-6)
        np.testing.assert_allclose(N(torch.addcdiv(x, y, z, value=-2)), a - 2 * b / c, rtol=1e-5)
        x2 = T(a, device)
        assert x2.addcmul_(y, z) is x2
        np.testing.assert_allclose(N(x2), a + b * c, rtol=1e-6)
        np.testing.assert_allclose(N(x.lerp(y, 0.3)), a + 0.3 * (b - a), rtol=1e-5, atol=1e-6)
        w = T(np.full((3, 4), 0.7, np.float32), device)
        np.testing.assert_allclose(N(torch.lerp(x, y, w)), a + 0.7 * (b - a), rtol=1e-5, atol=1e-6)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            torch.addcdiv(T(np.ones(2, np.int64)), T(np.ones(2, np.int64)), T(np.ones(2, np.int64)))
        with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
            x.lerp(T(b.astype(np.float64), device), 0.5)
        assert gradcheck(lambda p, q, r: p.addcdiv(q, r, value=0.5), (dbl(3, device=device), dbl(3, seed=1, device=device),
                                                                        (dbl(3, seed=2, device=device) * 0 + 2).detach().requires_grad_()))
        assert gradcheck(lambda p, q: p.lerp(q, 0.25), (dbl(3, device=device), dbl(3, seed=1, device=device)))


    def test_log2_log10_erfinv(self, device):
        a = np.array([0.5, 1.0, 8.0, 1000.0, 0.0], dtype=np.float32)
        np.testing.assert_allclose(N(T(a, device).log2()), np.log2(a), rtol=1e-6)
        np.testing.assert_allclose(N(torch.log10(T(a, device))), np.log10(a), rtol=1e-6)
        assert N(T(np.array([8.0]), device).log2())[0] == 3.0
        assert torch.log2(T(np.array([4]), device)).dtype == torch.float32  # integers promote
        p = np.linspace(-0.999, 0.999, 41)
        got = N(torch.erfinv(T(p, device)))
        np.testing.assert_allclose([math.erf(v) for v in got], p, rtol=1e-13, atol=1e-15)
        edge = N(T(np.array([1.0, -1.0, 1.5, np.nan], np.float32), device).erfinv())
        assert edge[0] == np.inf and edge[1] == -np.inf and np.isnan(edge[2]) and np.isnan(edge[3])
        y = T(np.array([0.25, 0.5], np.float32), device)
        y.erfinv_()
        np.testing.assert_allclose(N(y), [0.22531206, 0.47693628], rtol=1e-6)


    def test_sort_argsort(self, device):
        a = np.array([[3.0, 1.0, np.nan, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0, 2.0]], dtype=np.float32)
        x = T(a, device)
        v, i = x.sort()
        np.testing.assert_array_equal(N(v), np.sort(a, axis=-1))
        np.testing.assert_array_equal(N(i), np.argsort(a, axis=-1, kind="stable"))
        v, i = torch.sort(x, dim=1, descending=True)
        assert np.isnan(N(v)[0, 0]) and N(v)[0, 1:].tolist() == [3.0, 2.0, 1.0, 1.0]
        assert N(i)[0].tolist() == [2, 0, 3, 1, 4]  # NaN first; equal values keep index order
        np.testing.assert_array_equal(N(x.argsort(dim=0)), np.argsort(a, axis=0, kind="stable"))
        v, i = x.sort(stable=True, dim=0)
        np.testing.assert_array_equal(N(i), np.argsort(a, axis=0, kind="stable"))
        n = np.array([3, 1, 2], dtype=np.int64)
        assert N(T(n, device).argsort(descending=True)).tolist() == [0, 2, 1]
        meta = torch.empty(4, 5, device="meta").sort(0)
        assert list(meta[0].shape) == [4, 5] and meta[1].dtype == torch.int64


    def test_topk(self, device):
        a = rnd(4, 7)
        x = T(a, device)
        v, i = x.topk(3)
        order = np.argsort(-a, axis=-1, kind="stable")[:, :3]
        np.testing.assert_array_equal(N(i), order)
        np.testing.assert_array_equal(N(v), np.take_along_axis(a, order, -1))
        v, i = torch.topk(x, 2, dim=0, largest=False)
        np.testing.assert_array_equal(N(v), np.sort(a, axis=0)[:2])
        with pytest.raises(IndexError, match="selected index k out of range"):
            x.topk(8)


    def test_outer_diagonal_diag_trace(self, device):
        a = rnd(3, 4)
        x = T(a, device)
        np.testing.assert_allclose(N(torch.outer(T(a[0], device), T(a[1], device))), np.outer(a[0], a[1]), rtol=1e-6)
        for off in (-2, -1, 0, 1, 3, 5):
            np.testing.assert_array_equal(N(x.diagonal(off)), np.diagonal(a, off))
        b = rnd(2, 3, 4)
        np.testing.assert_array_equal(N(T(b, device).diagonal(0, 1, 2)), np.diagonal(b, 0, 1, 2))
        np.testing.assert_array_equal(N(T(b, device).diagonal(1, -1, 0)), np.diagonal(b, 1, -1, 0))
        for k in (-2, 0, 1):
            np.testing.assert_array_equal(N(torch.diag(T(a[0], device), k)), np.diag(a[0], k))
            np.testing.assert_array_equal(N(x.diag(k)), np.diag(a, k))
        np.testing.assert_allclose(N(x.trace()), np.trace(a), rtol=1e-6)
        assert x.trace().dim() == 0
        with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
            x.diagonal(0, 1, 1)
        with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
            torch.diag(T(b, device))
        with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
            torch.outer(x, T(a[0], device))
        assert gradcheck(lambda t: t.diagonal(1), (dbl(3, 4, device=device),))
        assert gradcheck(lambda t: torch.diag(t, -1), (dbl(3, device=device),))
        assert gradcheck(lambda t: t.trace(), (dbl(3, 3, device=device),))


    def test_roll_tile_repeat_interleave(self, device):
        a = rnd(3, 4)
        x = T(a, device)
        np.testing.assert_array_equal(N(x.roll(1, 1)), np.roll(a, 1, 1))
        np.testing.assert_array_equal(N(x.roll(-5)), np.roll(a, -5))
        np.testing.assert_array_equal(N(torch.roll(x, (1, 2), (0, 1))), np.roll(a, (1, 2), (0, 1)))
        np.testing.assert_array_equal(N(x.tile((2,))), np.tile(a, (2,)))
        np.testing.assert_array_equal(N(torch.tile(x, (2, 1, 2))), np.tile(a, (2, 1, 2)))
        np.testing.assert_array_equal(N(x.repeat_interleave(2)), np.repeat(a, 2))
        np.testing.assert_array_equal(N(x.repeat_interleave(3, dim=0)), np.repeat(a, 3, 0))
        r = T(np.array([1, 0, 2]), device)
        np.testing.assert_array_equal(N(x.repeat_interleave(r, dim=0)), np.repeat(a, [1, 0, 2], 0))
        assert N(torch.repeat_interleave(r)).tolist() == [0, 2, 2]
        with pytest.raises(RuntimeError, match="repeats can not be negative"):
            x.repeat_interleave(-1)
        with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
            x.roll((1, 2), 0)
        assert gradcheck(lambda t: t.roll(1, 0).repeat_interleave(2, dim=1), (dbl(3, 2, device=device),))


    def test_repeat_interleave_with_huge_repeats_fails_in_the_allocator(self, device):
        # The output is sized before anything is allocated: a tensor of repeats summing to 2**40 fails with
        # the allocator's error naming the bytes (found by the binding fuzzer as a 4 GiB host-vector growth),
        # and a sum that overflows int64 is refused by name.
        x = T(np.array([1.0, 2.0], dtype=np.float32), device)
        with pytest.raises(torch.OutOfMemoryError, match="8796093022208 bytes"):
            torch.ops.aten.repeat_interleave.self_Tensor(x, T(np.array([2**39, 2**39]), device))
        with pytest.raises(RuntimeError, match="repeat_interleave: the output size .* overflows int64"):
            torch.ops.aten.repeat_interleave.self_Tensor(x, T(np.array([2**62, 2**62]), device))
        with pytest.raises(RuntimeError, match="allocated size does not match required size"):
            x.repeat_interleave(T(np.array([1, 2]), device), output_size=4)
        assert N(x.repeat_interleave(T(np.array([1, 2]), device), output_size=3)).tolist() == [1.0, 2.0, 2.0]


    def test_nan_to_num_isclose_allclose_equal(self, device):
        a = np.array([np.nan, np.inf, -np.inf, 1.5], dtype=np.float32)
        x = T(a, device)
        np.testing.assert_array_equal(N(x.nan_to_num()), np.nan_to_num(a))
        np.testing.assert_array_equal(N(torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0)), [1.0, 2.0, -2.0, 1.5])
        h = T(a, device).half().nan_to_num()
        assert N(h.float()).tolist() == [0.0, 65504.0, -65504.0, 1.5]
        b = np.array([1.0, 1.0 + 1e-6, np.inf, np.nan], dtype=np.float32)
        c = np.array([1.0, 1.0, np.inf, np.nan], dtype=np.float32)
        np.testing.assert_array_equal(N(torch.isclose(T(b, device), T(c, device))), np.isclose(b, c))
        np.testing.assert_array_equal(N(T(b, device).isclose(T(c, device), equal_nan=True)), np.isclose(b, c, equal_nan=True))
        assert torch.allclose(T(b[:3], device), T(c[:3], device)) is True
        assert T(b, device).allclose(T(c, device)) is False
        assert torch.equal(T(c[:3], device), T(c[:3], device)) is True
        assert torch.equal(T(c[:3], device), T(c[:2], device)) is False
        with pytest.raises(RuntimeError, match="float32 did not match float64"):
            torch.isclose(T(b, device), T(c.astype(np.float64), device))


    def test_clip_zero_square_baddbmm(self, device):
        a = rnd(2, 3, 4)
        x = T(a, device)
        np.testing.assert_array_equal(N(x.clip(-0.5, 0.5)), np.clip(a, -0.5, 0.5))
        y = T(a, device)
        y.clip_(min=0)
        np.testing.assert_array_equal(N(y), np.clip(a, 0, None))
        assert y.zero_() is y and not N(y).any()
        np.testing.assert_allclose(N(x.square()), a * a, rtol=1e-6)
        b1, b2 = rnd(2, 3, 5, seed=1), rnd(2, 5, 4, seed=2)
        np.testing.assert_allclose(N(torch.baddbmm(x, T(b1, device), T(b2, device), beta=0.5, alpha=2)),
                                   0.5 * a + 2 * b1 @ b2, rtol=1e-5, atol=1e-5)
        nan_self = T(np.full((2, 3, 4), np.nan, np.float32), device)
        assert not np.isnan(N(nan_self.baddbmm(T(b1, device), T(b2, device), beta=0))).any()


    def test_python_shorthands(self, device):
        x = T(np.array([[1.5, -2.0]], np.float32), device)
        assert x.float() is x
        assert x.double().dtype == torch.float64 and x.half().dtype == torch.float16
        assert x.bfloat16().dtype == torch.bfloat16 and x.long().dtype == torch.int64
        assert x.int().dtype == torch.int32 and x.bool().dtype == torch.bool
        assert N(x.long()).tolist() == [[1, -2]]
        assert x.nelement() == 2 and x.ndimension() == 2 and torch.numel(x) == 2
        assert x.is_floating_point() and not x.long().is_floating_point()
        assert list(x.mT.shape) == [2, 1] and list(x.mH.shape) == [2, 1]
        with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices or batches of matrices"):
            T(np.ones(3), device).mT
        assert torch.is_tensor(x) and not torch.is_tensor([1])
        assert x.type() == ("backend_sdk.FloatTensor" if device == "cpu" else f"backend_sdk.{self.device_type}.FloatTensor")
        assert x.type(torch.float64).dtype == torch.float64
        assert x.get_device() == (-1 if device == "cpu" else 0)
        n = x.new_tensor([1, 2])
        assert n.dtype == torch.float32 and n.device == x.device


    def test_randperm(self, device):
        torch.manual_seed(3)
        p = torch.randperm(50, device=device)
        assert p.dtype == torch.int64 and p.device.type == self.device_type
        assert sorted(N(p).tolist()) == list(range(50))
        torch.manual_seed(3)
        assert N(torch.randperm(50, device=device)).tolist() == N(p).tolist()
        assert N(torch.randperm(50, device=device)).tolist() != N(p).tolist()
        g = torch.Generator()
        g.manual_seed(5)
        a = torch.randperm(20, generator=g)
        g.manual_seed(5)
        assert N(a).tolist() == N(torch.randperm(20, generator=g)).tolist()
        assert torch.randperm(4, dtype=torch.float32).dtype == torch.float32
        assert list(torch.randperm(0).shape) == [0]
        with pytest.raises(RuntimeError, match="n must be non-negative"):
            torch.randperm(-1)


    def test_multinomial(self, device):
        probs = np.array([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 0.0, 2.0]], np.float32)
        torch.manual_seed(0)
        s = N(torch.multinomial(T(probs, device), 3))
        for row, p in zip(s, probs):
            assert len(set(row.tolist())) == 3 and all(p[j] > 0 for j in row)
        torch.manual_seed(0)
        many = N(T(probs[0], device).multinomial(20000, replacement=True))
        freq = np.bincount(many, minlength=4) / many.size
        np.testing.assert_allclose(freq, probs[0], atol=0.015)
        torch.manual_seed(0)
        assert N(T(probs[0], device).multinomial(20000, True)).tolist() == many.tolist()
        with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size\\(-1\\) samples without"):
            torch.multinomial(T(probs, device), 5)
        with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or element < 0"):
            torch.multinomial(T(np.array([0.5, -1.0], np.float32), device), 1)
        with pytest.raises(RuntimeError, match="invalid multinomial distribution \\(sum of probabilities <= 0\\)"):
            torch.multinomial(T(np.zeros(3, np.float32), device), 1)
        with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
            torch.multinomial(T(np.ones((2, 2, 2), np.float32), device), 1)


instantiate_device_type_tests(TestNNKernelsDeviceType, globals())
