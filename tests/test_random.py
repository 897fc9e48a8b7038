"""Generators and random operators: Philox numbers bit-exact against a numpy
reference of Note [Philox random numbers], determinism, state round trips,
independence of threads and strides, statistics, and bad arguments."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C

from _helpers import run_threads

MASK32 = np.uint64(0xFFFFFFFF)


def philox_blocks(seed: int, counters: np.ndarray) -> np.ndarray:
    """Philox4x32-10 of counters (c, 0) under key = seed: shape (len, 4) uint32 words (a reference in numpy)."""
    c = counters.astype(np.uint64)
    c0, c1 = c & MASK32, c >> np.uint64(32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for r in range(10):
        p0, p1 = m0 * c0, m1 * c2
        hi0, lo0, hi1, lo1 = p0 >> np.uint64(32), p0 & MASK32, p1 >> np.uint64(32), p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + np.uint64(0x9E3779B9)) & MASK32
        k1 = (k1 + np.uint64(0xBB67AE85)) & MASK32
    return np.stack([c0, c1, c2, c3], axis=1).astype(np.uint32)


def philox_kat(c, k):
    """One Philox call with a full 128-bit counter (for the Random123 known-answer vectors)."""
    c0, c1, c2, c3 = (np.array([v], dtype=np.uint64) for v in c)
    k0, k1 = np.uint64(k[0]), np.uint64(k[1])
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        p0, p1 = m0 * c0, m1 * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK32
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & MASK32, (k1 + np.uint64(0xBB67AE85)) & MASK32
    return [int(v[0]) for v in (c0, c1, c2, c3)]


def words32(seed: int, offset: int, n: int) -> np.ndarray:
    blocks = philox_blocks(seed, np.arange(offset, offset + (n + 3) // 4, dtype=np.uint64))
    return blocks.reshape(-1)[:n]


def words64(seed: int, offset: int, n: int) -> np.ndarray:
    blocks = philox_blocks(seed, np.arange(offset, offset + (n + 1) // 2, dtype=np.uint64)).astype(np.uint64)
    joined = np.stack([(blocks[:, 0] << np.uint64(32)) | blocks[:, 1], (blocks[:, 2] << np.uint64(32)) | blocks[:, 3]],
                      axis=1)
    return joined.reshape(-1)[:n]


def ref_normal(seed: int, offset: int, n: int) -> np.ndarray:
    blocks = philox_blocks(seed, np.arange(offset, offset + (n + 1) // 2, dtype=np.uint64)).astype(np.uint64)
    u1 = ((blocks[:, 0] << np.uint64(32) | blocks[:, 1]) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    u2 = ((blocks[:, 2] << np.uint64(32) | blocks[:, 3]) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    r = np.sqrt(-2.0 * np.log(1.0 - u1))
    theta = 2.0 * np.pi * u2
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1).reshape(-1)[:n]


def state_of(g) -> tuple[int, int]:
    raw = bytes(g.get_state().numpy().tolist())
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


@pytest.fixture(autouse=True)
def restore_default_state():
    state = backend_sdk.get_rng_state()
    yield
    backend_sdk.set_rng_state(state)


# ---------------------------------------------------------------------------
# The numbers themselves
# ---------------------------------------------------------------------------
def test_reference_philox_matches_random123_known_answers():
    assert philox_kat([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox_kat([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox_kat([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0]) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.mark.parametrize("seed", [0, 1234, 2**40 + 7, 2**64 - 1])
def test_rand_float32_and_float64_are_the_documented_philox_values(seed):
    g = backend_sdk.Generator().manual_seed(seed)
    a = backend_sdk.rand(1001, generator=g)
    expected = ((words32(seed, 0, 1001) >> 8).astype(np.float64) * 2.0 ** -24).astype(np.float32)
    np.testing.assert_array_equal(a.numpy(), expected)
    assert state_of(g) == (seed, (1001 + 3) // 4)
    b = backend_sdk.rand(7, generator=g, dtype=backend_sdk.float64)
    expected64 = (words64(seed, 251, 7) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    np.testing.assert_array_equal(b.numpy(), expected64)
    assert state_of(g) == (seed, 251 + 4)


def test_randn_randint_bernoulli_are_the_documented_philox_values():
    g = backend_sdk.Generator().manual_seed(99)
    z = backend_sdk.randn(513, generator=g, dtype=backend_sdk.float64)
    np.testing.assert_allclose(z.numpy(), ref_normal(99, 0, 513), rtol=1e-12, atol=1e-12)
    off = (513 + 1) // 2
    r = backend_sdk.randint(3, 17, (100,), generator=g)
    np.testing.assert_array_equal(r.numpy(), 3 + (words32(99, off, 100) % 14).astype(np.int64))
    off += 25
    big = backend_sdk.randint(-(2**40), 2**40, (9,), generator=g)
    span = np.uint64(2**41)
    np.testing.assert_array_equal(big.numpy(), (words64(99, off, 9) % span).astype(np.int64) - 2**40)
    off += 5
    p = 0.3
    bern = backend_sdk.empty(50, dtype=backend_sdk.float64).bernoulli_(p, generator=g)
    u = (words64(99, off, 50) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    np.testing.assert_array_equal(bern.numpy(), (u < p).astype(np.float64))


def test_cpu_fill_with_explicit_seed_and_offset_matches_the_generator_path():
    """What a (simulated) device kernel runs later with the reserved (seed, offset)."""
    g = backend_sdk.Generator().manual_seed(5)
    g.set_offset(1000)
    via_op = backend_sdk.empty(3, 50).uniform_(-2.0, 3.0, generator=g)
    direct = backend_sdk.empty(3, 50)
    _C._philox_uniform_fill(direct, -2.0, 3.0, 5, 1000)
    np.testing.assert_array_equal(via_op.numpy(), direct.numpy())
    n1 = backend_sdk.empty(11, dtype=backend_sdk.float64)
    _C._philox_normal_fill(n1, 1.0, 2.0, 5, 77)
    np.testing.assert_allclose(n1.numpy(), 1.0 + 2.0 * ref_normal(5, 77, 11), rtol=1e-12)


# ---------------------------------------------------------------------------
# Determinism, generators and state
# ---------------------------------------------------------------------------
def test_manual_seed_makes_results_repeat(device):
    backend_sdk.manual_seed(5)
    a, n = backend_sdk.rand(100, device=device), backend_sdk.randn(3, 4, device=device)
    backend_sdk.manual_seed(5)
    b, m = backend_sdk.rand(100, device=device), backend_sdk.randn(3, 4, device=device)
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    np.testing.assert_array_equal(n.cpu().numpy(), m.cpu().numpy())
    assert not np.array_equal(backend_sdk.rand(100, device=device).cpu().numpy(), a.cpu().numpy())


def test_generator_objects_are_independent_of_the_default():
    backend_sdk.manual_seed(1)
    before = backend_sdk.get_rng_state().numpy()
    g1, g2 = backend_sdk.Generator(), backend_sdk.Generator(device="cpu")
    assert g1.initial_seed() == 67280421310721 and g1.device == backend_sdk.device("cpu")
    g1.manual_seed(3)
    g2.manual_seed(3)
    np.testing.assert_array_equal(backend_sdk.rand(10, generator=g1).numpy(), backend_sdk.rand(10, generator=g2).numpy())
    np.testing.assert_array_equal(backend_sdk.get_rng_state().numpy(), before)
    assert g1.manual_seed(4) is g1


def test_state_round_trip_and_format():
    g = backend_sdk.Generator().manual_seed(11)
    backend_sdk.rand(10, generator=g)
    state = g.get_state()
    assert state.dtype == backend_sdk.uint8 and state.shape == (16,)
    assert state_of(g) == (11, 3)
    a = backend_sdk.randn(20, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(backend_sdk.randn(20, generator=g).numpy(), a.numpy())
    s = backend_sdk.get_rng_state()
    x = backend_sdk.rand(5)
    backend_sdk.set_rng_state(s)
    np.testing.assert_array_equal(backend_sdk.rand(5).numpy(), x.numpy())
    assert backend_sdk.random.get_rng_state is backend_sdk.get_rng_state


def test_set_state_rejects_bad_states():
    g = backend_sdk.Generator()
    with pytest.raises(TypeError, match="uint8"):
        g.set_state(backend_sdk.zeros(16))
    with pytest.raises(ValueError, match="16 bytes"):
        g.set_state(backend_sdk.zeros(15, dtype=backend_sdk.uint8))


def test_module_level_seeding():
    g = backend_sdk.manual_seed(42)
    assert g == backend_sdk.default_generator and backend_sdk.initial_seed() == 42
    assert backend_sdk.manual_seed(-1).initial_seed() == 2**64 - 1
    with pytest.raises(ValueError, match="Overflow"):
        backend_sdk.manual_seed(2**64)
    with pytest.raises(TypeError, match="int seed"):
        backend_sdk.manual_seed("3")
    s = backend_sdk.seed()
    assert isinstance(s, int) and backend_sdk.initial_seed() == s
    assert backend_sdk.random.manual_seed(7).initial_seed() == 7


def test_default_generators_per_device_and_manual_seed_reaches_them():
    backend_sdk.manual_seed(1234)
    g = _C._default_generator("privateusetwo:3")
    assert g.device == backend_sdk.device("privateusetwo:3") and g.initial_seed() == 1234
    assert _C._default_generator("privateusetwo:3") == g
    assert _C._default_generator("cpu") == backend_sdk.default_generator
    backend_sdk.manual_seed(77)
    assert g.initial_seed() == 77 and _C._default_generator("privateusetwo:5").initial_seed() == 77
    assert any(x == g for x in _C._default_generators())
    with pytest.raises(ValueError, match="not supported for Generator"):
        backend_sdk.Generator("meta")


def test_generator_of_another_device_type_is_rejected():
    g = backend_sdk.Generator("privateusethree:0")
    with pytest.raises(ValueError, match="Expected a 'cpu' device type for generator but found 'privateusethree'"):
        backend_sdk.rand(3, generator=g)


# ---------------------------------------------------------------------------
# Independence of threads and strides
# ---------------------------------------------------------------------------
def test_results_do_not_depend_on_size_of_the_call_or_thread_split():
    n = 300_000  # several parallel grains
    g = backend_sdk.Generator().manual_seed(8)
    big = backend_sdk.rand(n, generator=g).numpy()
    small = backend_sdk.rand(1000, generator=backend_sdk.Generator().manual_seed(8)).numpy()
    np.testing.assert_array_equal(big[:1000], small)
    tail = ((words32(8, 0, n)[-5000:] >> 8).astype(np.float64) * 2.0 ** -24).astype(np.float32)
    np.testing.assert_array_equal(big[-5000:], tail)


def test_results_do_not_depend_on_the_number_of_threads():
    code = ("import backend_sdk, hashlib;g=backend_sdk.Generator().manual_seed(3);"
            "a=backend_sdk.randn(200000,generator=g).numpy().tobytes()+backend_sdk.randint(0,1000,(100000,),"
            "generator=g).numpy().tobytes();print(hashlib.sha256(a).hexdigest())")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    outs = set()
    for threads in ("1", "2", "4"):
        env["SDK_NUM_THREADS"] = threads
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1


def test_results_do_not_depend_on_output_strides():
    backend_sdk.manual_seed(21)
    transposed = backend_sdk.empty(50, 40).t().uniform_()
    backend_sdk.manual_seed(21)
    plain = backend_sdk.empty(40, 50).uniform_()
    np.testing.assert_array_equal(transposed.numpy(), plain.numpy())
    backend_sdk.manual_seed(21)
    base = backend_sdk.zeros(40, 100)
    view = base[:, ::2]
    view.normal_()
    backend_sdk.manual_seed(21)
    np.testing.assert_array_equal(view.numpy(), backend_sdk.randn(40, 50).numpy())
    assert (base.numpy()[:, 1::2] == 0).all()


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------
N = 1_000_000


def test_uniform_and_normal_statistics(device):
    backend_sdk.manual_seed(0)
    u = backend_sdk.rand(N, device=device).cpu().numpy().astype(np.float64)
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 3e-3 and abs(u.std() - np.sqrt(1 / 12)) < 3e-3
    z = backend_sdk.randn(N, dtype=backend_sdk.float64, device=device).cpu().numpy()
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 3e-3  # the shape, not only the moments
    w = backend_sdk.empty(N, device=device).uniform_(-2, 5).cpu().numpy()
    assert -2 <= w.min() and w.max() < 5 and abs(w.mean() - 1.5) < 0.03
    x = backend_sdk.empty(N, dtype=backend_sdk.float64, device=device).normal_(2, 3).cpu().numpy()
    assert abs(x.mean() - 2) < 0.02 and abs(x.std() - 3) < 0.02
    h = backend_sdk.rand(N, dtype=backend_sdk.float16, device=device).cpu().numpy().astype(np.float64)
    assert h.max() < 1.0 and abs(h.mean() - 0.5) < 3e-3


def test_randint_chi_square_and_bounds(device):
    backend_sdk.manual_seed(1)
    r = backend_sdk.randint(-3, 7, (N,), device=device).cpu().numpy()
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 6
    counts = np.bincount(r + 3, minlength=10)
    expected = N / 10
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 33.7  # 9 degrees of freedom: p = 1e-4
    b = backend_sdk.randint(2, (1000,), dtype=backend_sdk.bool, device=device).cpu().numpy()
    assert b.dtype == np.bool_ and 400 < b.sum() < 600
    f = backend_sdk.randint(0, 5, (1000,), dtype=backend_sdk.float32, device=device).cpu().numpy()
    assert set(np.unique(f)) == {0.0, 1.0, 2.0, 3.0, 4.0}


def test_bernoulli_exponential_random_statistics(device):
    backend_sdk.manual_seed(2)
    b = backend_sdk.empty(N, device=device).bernoulli_(0.3).cpu().numpy()
    assert set(np.unique(b)) == {0.0, 1.0} and abs(b.mean() - 0.3) < 3e-3
    p = backend_sdk.tensor([[0.0], [1.0], [0.5]], device=device)
    out = backend_sdk.empty(3, 10000, device=device).bernoulli_(p).cpu().numpy()
    assert (out[0] == 0).all() and (out[1] == 1).all() and abs(out[2].mean() - 0.5) < 0.03
    probs = backend_sdk.rand(1000, device=device)
    drawn = backend_sdk.bernoulli(probs)
    assert drawn.dtype == backend_sdk.float32 and drawn.shape == (1000,)
    assert abs(backend_sdk.bernoulli(backend_sdk.full([N], 0.25, device=device)).cpu().numpy().mean() - 0.25) < 3e-3
    e = backend_sdk.empty(N, dtype=backend_sdk.float64, device=device).exponential_(2.0).cpu().numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 5e-3
    u8 = backend_sdk.empty(N, dtype=backend_sdk.uint8, device=device).random_().cpu().numpy()
    assert u8.min() == 0 and u8.max() == 255
    i8 = backend_sdk.empty(1000, dtype=backend_sdk.int8, device=device).random_(-5, 5).cpu().numpy()
    assert i8.min() == -5 and i8.max() == 4
    t = backend_sdk.empty(1000, dtype=backend_sdk.int64, device=device).random_(10).cpu().numpy()
    assert t.min() == 0 and t.max() == 9
    top = backend_sdk.empty(2000, dtype=backend_sdk.int8, device=device).random_(120, None).cpu().numpy()
    assert top.min() == 120 and top.max() == 127  # to=None: up to the dtype's largest value
    f = backend_sdk.empty(N, device=device).random_().cpu().numpy()
    assert f.min() >= 0 and f.max() <= 2**24 and (f == np.round(f)).all() and f.max() > 2**23
    full = backend_sdk.empty(1000, dtype=backend_sdk.int64, device=device).random_(-(2**63), None).cpu().numpy()
    assert (full < 0).any() and (full > 0).any()  # the whole int64 range


# ---------------------------------------------------------------------------
# Overloads, factories, out=, like, meta
# ---------------------------------------------------------------------------
def test_factory_overloads_and_options(device):
    r = backend_sdk.rand(2, 3, device=device)
    assert r.shape == (2, 3) and r.dtype == backend_sdk.float32 and r.device.type == device
    assert backend_sdk.rand([4], device=device).shape == (4,)
    assert backend_sdk.randn((2, 2), dtype=backend_sdk.float64, device=device).dtype == backend_sdk.float64
    assert backend_sdk.randint(5, (3,), device=device).dtype == backend_sdk.int64
    assert backend_sdk.randint(1, 5, (2, 2), dtype=backend_sdk.int32, device=device).dtype == backend_sdk.int32
    assert backend_sdk.normal(2.0, 0.5, (3,), device=device).shape == (3,)
    like = backend_sdk.rand_like(backend_sdk.zeros(2, 5, dtype=backend_sdk.float64, device=device))
    assert like.shape == (2, 5) and like.dtype == backend_sdk.float64
    assert backend_sdk.randn_like(backend_sdk.zeros(3, device=device), dtype=backend_sdk.float16).dtype == \
        backend_sdk.float16
    ri = backend_sdk.randint_like(backend_sdk.zeros(100, dtype=backend_sdk.int32, device=device), 3).cpu().numpy()
    assert ri.dtype == np.int32 and ri.min() >= 0 and ri.max() <= 2
    ri = backend_sdk.randint_like(backend_sdk.zeros(100, device=device), 10, 12).cpu().numpy()
    assert set(np.unique(ri)) <= {10.0, 11.0}


def test_out_variants_resize_and_fill(device):
    out = backend_sdk.empty(0, device=device)
    r = backend_sdk.rand(3, 4, out=out)
    assert r is out and out.shape == (3, 4)
    g = backend_sdk.Generator(device).manual_seed(1)
    backend_sdk.randn(5, generator=g, out=out)
    again = backend_sdk.randn(5, generator=backend_sdk.Generator(device).manual_seed(1), device=device)
    np.testing.assert_array_equal(out.cpu().numpy(), again.cpu().numpy())
    iout = backend_sdk.empty(0, dtype=backend_sdk.int64, device=device)
    backend_sdk.randint(2, 4, (6,), out=iout)
    assert iout.shape == (6,) and set(iout.cpu().numpy()) <= {2, 3}
    bout = backend_sdk.empty(0, device=device)
    backend_sdk.bernoulli(backend_sdk.ones(4, device=device), out=bout)
    assert bout.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_normal_tensor_overloads(device):
    backend_sdk.manual_seed(3)
    mean = backend_sdk.tensor([0.0, 100.0, -100.0], device=device)
    x = backend_sdk.normal(mean, 0.001).cpu().numpy()
    np.testing.assert_allclose(x, [0, 100, -100], atol=0.01)
    y = backend_sdk.normal(5.0, backend_sdk.tensor([0.0, 0.0], device=device)).cpu().numpy()
    assert y.tolist() == [5.0, 5.0]
    z = backend_sdk.normal(backend_sdk.zeros(2, 1, device=device), backend_sdk.zeros(3, device=device))
    assert z.shape == (2, 3) and (z.cpu().numpy() == 0).all()
    with pytest.raises(ValueError, match="normal expects all elements of std >= 0.0"):
        backend_sdk.normal(backend_sdk.zeros(2, device=device), backend_sdk.tensor([1.0, -1.0], device=device))
    with pytest.raises(ValueError, match="normal expects std >= 0.0, but found std -1"):
        backend_sdk.normal(backend_sdk.zeros(2, device=device), -1.0)


def test_meta_tensors_check_but_consume_nothing():
    backend_sdk.manual_seed(4)
    before = backend_sdk.get_rng_state().numpy()
    m = backend_sdk.rand(2, 3, device="meta")
    assert m.is_meta and m.shape == (2, 3) and m.dtype == backend_sdk.float32
    assert backend_sdk.randint(0, 4, (5,), device="meta").dtype == backend_sdk.int64
    assert backend_sdk.empty(3, device="meta").normal_().is_meta
    np.testing.assert_array_equal(backend_sdk.get_rng_state().numpy(), before)
    with pytest.raises(ValueError, match="normal expects std >= 0.0"):
        backend_sdk.empty(3, device="meta").normal_(0, -1)


def test_in_place_ops_return_self_and_bump_version(device):
    x = backend_sdk.empty(4, device=device)
    v = x._version
    assert x.uniform_() is x and x._version > v
    assert x.normal_() is x and x.bernoulli_(0.5) is x and x.exponential_() is x and x.random_(3) is x


# ---------------------------------------------------------------------------
# Bad arguments
# ---------------------------------------------------------------------------
def test_bad_arguments(device):
    with pytest.raises(ValueError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        backend_sdk.randint(5, 3, (2,), device=device)
    with pytest.raises(ValueError, match="random_ expects 'to' - 1 to be in the range of uint8"):
        backend_sdk.randint(0, 300, (2,), dtype=backend_sdk.uint8, device=device)
    with pytest.raises(ValueError, match="random_ expects 'from' to be in the range of int8"):
        backend_sdk.empty(2, dtype=backend_sdk.int8, device=device).random_(-200, 0)
    with pytest.raises(ValueError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        backend_sdk.empty(3, device=device).bernoulli_(1.5)
    with pytest.raises(ValueError, match=r"bernoulli_ expects all elements of p to be in \[0, 1\]"):
        backend_sdk.bernoulli(backend_sdk.tensor([0.5, 2.0], device=device))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        backend_sdk.empty(3, 4, device=device).bernoulli_(backend_sdk.rand(3, device=device))
    with pytest.raises(ValueError, match="normal expects std >= 0.0, but found std -1"):
        backend_sdk.empty(3, device=device).normal_(0, -1)
    with pytest.raises(ValueError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        backend_sdk.empty(3, device=device).uniform_(2, 1)
    with pytest.raises(ValueError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        backend_sdk.empty(3, device=device).exponential_(0)
    with pytest.raises(TypeError, match="rand: expected a floating point dtype, got int64"):
        backend_sdk.rand(3, dtype=backend_sdk.int64, device=device)
    with pytest.raises(TypeError, match="uniform_: expected a floating point tensor for 'self', got dtype int64"):
        backend_sdk.zeros(3, dtype=backend_sdk.int64, device=device).uniform_()
    with pytest.raises(TypeError, match="normal_: expected a floating point tensor"):
        backend_sdk.zeros(3, dtype=backend_sdk.int32, device=device).normal_()
    with pytest.raises(TypeError, match="generator"):
        backend_sdk.rand(3, generator="not a generator", device=device)


def test_factories_reach_a_privateuse_backend_through_backend_select():
    """rand(device='privateusetwo') runs the backend's kernel, with its generator (a Python kernel here)."""
    seen = []

    def backend_rand(size, *, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
        seen.append((list(size), generator, dtype, device))
        return backend_sdk.zeros(size)

    def backend_uniform(self, from_=0.0, to=1.0, *, generator=None):
        seen.append(("uniform_", generator))
        return self

    with backend_sdk.library.Library("aten", "IMPL", "PrivateUse2") as lib:
        lib.impl("rand.generator", backend_rand)
        lib.impl("linspace", lambda start, end, steps, **kw: seen.append(("linspace", steps, kw["device"]))
                 or backend_sdk.zeros(steps))
        g = backend_sdk.Generator("privateusetwo:1")
        backend_sdk.rand(2, 3, generator=g, dtype=backend_sdk.float64, device="privateusetwo:1")
        assert seen[0][0] == [2, 3] and seen[0][1] == g  # (dtype arrives boxed as an int, as in c10)
        assert seen[0][3] == backend_sdk.device("privateusetwo:1")
        backend_sdk.linspace(0, 1, 4, device="privateusetwo")
        assert seen[1] == ("linspace", 4, backend_sdk.device("privateusetwo"))
    # the CPU path is untouched once the library is closed
    assert backend_sdk.rand(2).shape == (2,)


def test_python_kernel_reserving_counters_reproduces_the_cpu_numbers():
    """What a Python or device backend does: reserve (seed, offset), fill later with the same mapping."""
    g = backend_sdk.Generator().manual_seed(17)
    seed, offset = g.philox_engine_inputs(_counters := (37 + 3) // 4)
    assert (seed, offset) == (17, 0) and state_of(g) == (17, _counters)
    later = backend_sdk.empty(37)
    _C._philox_uniform_fill(later, 0.0, 1.0, seed, offset)
    np.testing.assert_array_equal(later.numpy(), backend_sdk.rand(37, generator=backend_sdk.Generator().manual_seed(17)).numpy())


def test_one_generator_shared_by_threads_hands_out_disjoint_counters():
    import threading

    g = backend_sdk.Generator().manual_seed(12)
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def worker():
        local = [backend_sdk.rand(400, generator=g).numpy() for _ in range(50)]
        with lock:
            results.extend(local)

    run_threads([worker] * 6)
    assert g.get_offset() == 6 * 50 * 100  # every call reserved its own 100 counters
    # Together the calls produced exactly the first 30000 counters' values, each once.
    everything = np.sort(np.concatenate(results))
    reference = np.sort(((words32(12, 0, 6 * 50 * 400) >> 8).astype(np.float64) * 2.0 ** -24).astype(np.float32))
    np.testing.assert_array_equal(everything, reference)


def test_like_factories_with_a_generator():
    base = backend_sdk.zeros(3, 5, dtype=backend_sdk.float64)

    def gen():
        return backend_sdk.Generator().manual_seed(6)

    np.testing.assert_array_equal(backend_sdk.rand_like(base, generator=gen()).numpy(),
                                  backend_sdk.rand(3, 5, generator=gen(), dtype=backend_sdk.float64).numpy())
    np.testing.assert_array_equal(backend_sdk.randn_like(base, generator=gen()).numpy(),
                                  backend_sdk.randn(3, 5, generator=gen(), dtype=backend_sdk.float64).numpy())
    np.testing.assert_array_equal(backend_sdk.randint_like(base, 9, generator=gen()).numpy(),
                                  backend_sdk.randint(9, (3, 5), generator=gen(), dtype=backend_sdk.float64).numpy())
    np.testing.assert_array_equal(backend_sdk.randint_like(base, 2, 9, generator=gen()).numpy(),
                                  backend_sdk.randint(2, 9, (3, 5), generator=gen(), dtype=backend_sdk.float64).numpy())
