"""Issue 12, finding 8: size arithmetic never wraps (Note [Size arithmetic overflow], csrc/backend_sdk/core/detail/SafeSize.h),
and the copy_ part of finding 12: copy_ into an expanded tensor is refused at the call on every backend
(Note [copy_ into overlapping memory], csrc/backend_sdk/ops/Copy.cpp).

Every factory and shape function with huge sizes either returns the exact shape or raises PyTorch's
RuntimeError ("numel: integer multiplication overflow", "Storage size calculation overflowed with
sizes=...", "Stride calculation overflowed", "invalid size, possible overflow?"), on meta and every test device
(cpu, accel, and pyaccel in a BACKEND_SDK_TEST_BACKENDS=pyaccel process).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import backend_sdk as sdk
from backend_sdk.testing import available_device_types

INT64_MAX = 2**63 - 1
NUMEL_OVERFLOW = "numel: integer multiplication overflow"
STORAGE_OVERFLOW = "Storage size calculation overflowed with sizes="


_DEVICES = available_device_types()


@pytest.fixture(params=_DEVICES + ["meta"])
def dev(request) -> str:
    """Meta (huge sizes with no memory) and every test device."""
    return request.param


def _synchronize(device: str) -> None:
    """Wait for the device's queued work, so that an asynchronous fault shows in the test that caused it."""
    module = getattr(sdk, device, None) if device not in ("cpu", "meta") else None
    if module is not None and hasattr(module, "synchronize"):
        module.synchronize()


def raises_runtime(match: str):
    """PyTorch raises these with TORCH_CHECK: a RuntimeError (and not our ValueError)."""
    return pytest.raises(RuntimeError, match=match)


def big(*sizes: int, device: str) -> sdk.Tensor:
    """A tensor of the given (huge) sizes without memory behind it: one element, expanded."""
    return sdk.zeros(*([1] * len(sizes)), device=device).expand(*sizes)


# ---- factories ---------------------------------------------------------------------------
def test_empty_numel_overflow(dev):
    with raises_runtime(r"^empty: " + NUMEL_OVERFLOW + r" with sizes=\[4294967296, 4294967296\]"):
        sdk.empty(2**32, 2**32, device=dev)
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.zeros(2**62, 2, device=dev)


def test_empty_overflow_only_in_bytes(dev):
    # 2**61 elements fit in int64, 2**61 * 8 bytes do not: PyTorch's computeStorageNbytesContiguous wording.
    with raises_runtime(r"empty: Storage size calculation overflowed with sizes=\[2305843009213693952\]"):
        sdk.empty(2**61, dtype=sdk.float64, device=dev)
    with raises_runtime(STORAGE_OVERFLOW + r"\[9223372036854775807\]"):
        sdk.empty(INT64_MAX, device=dev)
    with raises_runtime(STORAGE_OVERFLOW):
        sdk.ones(2**62, dtype=sdk.int16, device=dev)


def test_huge_meta_tensors_that_fit_are_exact():
    t = sdk.empty(INT64_MAX, dtype=sdk.bool, device="meta")  # INT64_MAX bytes: fits
    assert t.shape == (INT64_MAX,) and t.numel() == INT64_MAX
    assert t.unsqueeze(0).shape == (1, INT64_MAX)
    u = sdk.empty(2**31, 2**31, dtype=sdk.uint8, device="meta")
    assert u.flatten().shape == (2**62,) and u.view(-1).shape == (2**62,) and u.reshape(2**62).shape == (2**62,)
    assert u.stride() == (2**31, 1)


def test_zero_sized_tensors_with_huge_dims(dev):
    t = sdk.empty(2**62, 0, device=dev)  # no element, strides fit
    assert t.shape == (2**62, 0) and t.numel() == 0 and t.stride() == (1, 1)
    # Contiguous strides of [0, 2**62, 4] would need 2**64 (c10 refuses it too).
    with raises_runtime(r"empty: Stride calculation overflowed with sizes=\[0, 4611686018427387904, 4\]"):
        sdk.empty(0, 2**62, 4, device=dev)


def test_empty_strided_overflow(dev):
    with raises_runtime(r"empty_strided: Storage size calculation overflowed with sizes=\[2, 2\] and "
                        r"strides=\[9223372036854775807, 1\]"):
        sdk.empty_strided([2, 2], [INT64_MAX, 1], device=dev)
    with raises_runtime(r"empty_strided: Storage size calculation overflowed"):
        sdk.empty_strided([2**61], [1], dtype=sdk.float64, device=dev)


def test_eye_and_linspace_overflow(dev):
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.eye(INT64_MAX, 2, device=dev)
    with raises_runtime(STORAGE_OVERFLOW):
        sdk.eye(INT64_MAX, 1, device=dev)
    with raises_runtime(STORAGE_OVERFLOW):
        sdk.linspace(0, 1, 2**62, device=dev)


@pytest.mark.parametrize("args", [(-(2**63), INT64_MAX), (0, 2**63), (0.0, 1e30, 1e-30), (0, math.inf),
                                  (0, 2**70, 2**5)])
def test_arange_length_overflow(dev, args):
    with raises_runtime(r"arange\(\): invalid size, possible overflow\?"):
        sdk.arange(*args, device=dev)


def test_arange_still_works(dev):
    assert sdk.arange(10, 0, -3, device=dev).shape == (4,)
    assert sdk.arange(0, 1, 0.25, device=dev).shape == (4,)
    if dev != "meta":
        assert sdk.arange(10, 0, -3, device=dev).tolist() == [10, 7, 4, 1]


# ---- shape functions ---------------------------------------------------------------------
def test_repeat_overflow(dev):
    # Was shape (0,): 4 * 2**62 wrapped to 0.
    with raises_runtime(r"repeat: integer multiplication overflow: repeating dimension 0 of size 4 "
                        r"4611686018427387904 times"):
        sdk.ones(4, device=dev).repeat(2**62)
    with raises_runtime(r"repeat: integer multiplication overflow"):
        sdk.ones(2, 4, device=dev).repeat(1, 2**62)
    with raises_runtime(NUMEL_OVERFLOW):  # each dim fits, the element count does not
        sdk.ones(4, device=dev).repeat(2**61, 4)
    assert sdk.ones(4, dtype=sdk.bool, device="meta").repeat(2**60).shape == (2**62,)


def test_cat_and_stack_overflow(dev):
    # Was "negative dimension -2": the sizes summed past int64.
    with raises_runtime(r"cat\(\): integer addition overflow: the sizes of the tensors in dimension 0"):
        sdk.cat([big(INT64_MAX, device=dev), big(INT64_MAX, device=dev)])
    with raises_runtime(r"cat\(\): integer addition overflow"):
        sdk.cat([big(1, 2**62, device=dev), big(1, 2**62, device=dev)], dim=1)
    with raises_runtime(NUMEL_OVERFLOW):  # the sum fits, the element count does not
        sdk.cat([big(2**62, 2, device=dev), big(2**62, 2, device=dev)])
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.stack([big(INT64_MAX, device=dev), big(INT64_MAX, device=dev)])


def test_nbytes_of_huge_views_is_exact(dev):
    x = big(INT64_MAX, device=dev)  # float32: INT64_MAX * 4 bytes would wrap in 64 bits
    assert x.nbytes == INT64_MAX * 4 and x.itemsize == 4


def test_expand_overflow(dev):
    with raises_runtime(r"^expand: " + NUMEL_OVERFLOW + r" with sizes=\[4294967296, 4294967296\]"):
        sdk.zeros(1, 1, device=dev).expand(2**32, 2**32)
    with raises_runtime(r"^expand: " + NUMEL_OVERFLOW):
        big(INT64_MAX, device=dev).unsqueeze(0).expand(4, INT64_MAX)
    assert big(INT64_MAX, device=dev).shape == (INT64_MAX,)


def test_broadcast_overflow(dev):
    a, b = big(2**32, 1, device=dev), big(1, 2**32, device=dev)
    with raises_runtime(r"add\.Tensor: " + NUMEL_OVERFLOW):
        a + b
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.mul(a, b)


def test_view_and_reshape_inference_overflow(dev):
    with raises_runtime(r"view: " + NUMEL_OVERFLOW + r" with sizes=\[4611686018427387904, 4\]"):
        sdk.empty(0, device=dev).view(-1, 2**62, 4)
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.empty(0, device=dev).reshape(2**62, -1, 4)
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.empty(8, device=dev).view(2**62, 4, 2**62)
    with raises_runtime("Stride calculation overflowed"):
        sdk.empty(0, device=dev).view(0, 2**62, 4)


def test_as_strided_overflow(dev):
    x = sdk.empty(4, device=dev)
    with raises_runtime(r"as_strided: " + NUMEL_OVERFLOW):
        x.as_strided([2**62, 4], [1, 1])
    with raises_runtime(r"as_strided: Storage size calculation overflowed with sizes=\[2, 2\] and "
                        r"strides=\[9223372036854775807, 1\]"):
        x.as_strided([2, 2], [INT64_MAX, 1])
    with raises_runtime(r"as_strided: Storage size calculation overflowed"):
        x.as_strided([2], [1], INT64_MAX)


def test_matmul_output_overflow(dev):
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.matmul(big(2**32, 1, device=dev), big(1, 2**32, device=dev))
    # 3-D @ 2-D folds the batch into one mm (as PyTorch's matmul): the (2**62, 4) result's bytes overflow
    with raises_runtime(STORAGE_OVERFLOW + r"\[4611686018427387904, 1, 1\]"):
        sdk.matmul(big(2**62, 1, 1, device=dev), sdk.zeros(1, 4, device=dev))
    with raises_runtime(NUMEL_OVERFLOW):
        sdk.bmm(big(2**31, 2**31, 1, device=dev), big(2**31, 1, 2, device=dev))


def test_index_output_overflow(dev):
    x = big(2**61, 2, device=dev)
    with raises_runtime(r"index\.Tensor: " + NUMEL_OVERFLOW + r" with sizes=\[2305843009213693952, 4\]"):
        x[:, sdk.zeros(4, dtype=sdk.int64, device=dev)]


def test_index_without_elements_builds_no_tables(dev):
    # Was std::bad_alloc (MemoryError) on cpu: one offset per position of the 2**40 leading dim.
    x = big(2**40, 1, device=dev)
    empty_index = sdk.zeros(0, dtype=sdk.int64, device=dev)
    assert x[:, empty_index].shape == (2**40, 0)
    y = sdk.zeros(2**20, 1, device=dev)
    assert sdk.ops.aten.index_select.default(y, 1, empty_index).shape == (2**20, 0)
    y[:, empty_index] = 1.0  # nothing to write
    if dev != "meta":
        assert y.sum().item() == 0


def test_resize_overflow(dev):
    with raises_runtime(r"resize_: " + NUMEL_OVERFLOW):
        sdk.empty(1, device=dev).resize_(2**32, 2**32)
    with raises_runtime(r"resize_: Storage size calculation overflowed with sizes=\[2305843009213693952\]"):
        sdk.empty(1, device=dev).resize_(2**61)


# ---- fuzz: random huge shapes work exactly or raise -----------------------------------------
HUGE = st.sampled_from([0, 1, 2, 3, 7, 2**20, 2**31, 2**32, 2**33, 2**61, 2**62, INT64_MAX])
SHAPES = st.lists(HUGE, min_size=0, max_size=4)
ALLOWED = (RuntimeError, ValueError, IndexError)


def exact_numel(sizes) -> int:
    return math.prod(sizes)


def contiguous_strides_fit(sizes) -> bool:
    acc = 1
    for s in reversed(list(sizes)[1:]):
        acc *= max(s, 1)
    return acc <= INT64_MAX


def check(fn, expected_shape):
    """fn() returns a tensor of exactly expected_shape, or raises one of ALLOWED (never a wrong shape)."""
    try:
        out = fn()
    except ALLOWED:
        return None
    assert tuple(out.shape) == tuple(expected_shape)
    assert out.numel() == exact_numel(expected_shape)
    assert all(s >= 0 for s in out.shape) and all(s >= 0 for s in out.stride())
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=SHAPES, itemsize_dtype=st.sampled_from(["bool", "float32", "float64"]))
def test_fuzz_empty_meta(sizes, itemsize_dtype):
    dtype = getattr(sdk, itemsize_dtype)
    itemsize = {"bool": 1, "float32": 4, "float64": 8}[itemsize_dtype]
    out = check(lambda: sdk.empty(*sizes, dtype=dtype, device="meta"), sizes)
    fits = exact_numel(sizes) * itemsize <= INT64_MAX and contiguous_strides_fit(sizes)
    assert (out is not None) == fits, (sizes, itemsize_dtype)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=SHAPES, repeats_extra=SHAPES)
def test_fuzz_repeat_meta(sizes, repeats_extra):
    x = sdk.empty(*[min(s, 3) for s in sizes], dtype=sdk.bool, device="meta")
    repeats = [1] * max(0, x.dim() - len(repeats_extra)) + list(repeats_extra)  # at least x.dim() of them
    lead = len(repeats) - x.dim()
    expected = [r * (1 if i < lead else x.shape[i - lead]) for i, r in enumerate(repeats)]
    out = check(lambda: x.repeat(repeats), expected)
    fits = all(e <= INT64_MAX for e in expected) and exact_numel(expected) <= INT64_MAX and \
        contiguous_strides_fit(expected)
    assert (out is not None) == fits, (sizes, repeats)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=SHAPES, b=SHAPES)
def test_fuzz_broadcast_and_expand(a, b):
    x = big(*a, device="meta") if exact_numel(a) <= INT64_MAX and a else None
    if x is None:
        return
    # expand to b (where it broadcasts): exact or an error.
    n = max(len(a), len(b))
    pa, pb = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    broadcastable = all(p == q or p == 1 or q == 1 for p, q in zip(pa, pb))
    expected = [max(p, q) if p != 0 and q != 0 else 0 for p, q in zip(pa, pb)]
    y = sdk.zeros(*([1] * len(b)), device="meta").expand(*b) if b and exact_numel(b) <= INT64_MAX else None
    if y is not None and broadcastable:
        check(lambda: x + y, expected)
    for device in _DEVICES:
        check(lambda: sdk.zeros(*([1] * len(a)), device=device).expand(*a), a)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=SHAPES, b=SHAPES, dim=st.integers(0, 3))
def test_fuzz_cat_view_as_strided(a, b, dim):
    if not a or exact_numel(a) > INT64_MAX or exact_numel(b) > INT64_MAX:
        return
    x = big(*a, device="meta")
    if len(b) == len(a) and dim < len(a):
        other = list(a)
        other[dim] = b[dim]
        if exact_numel(other) <= INT64_MAX:
            expected = list(a)
            expected[dim] = a[dim] + b[dim]
            check(lambda: sdk.cat([x, big(*other, device="meta")], dim), expected)
    # view with -1 at `dim` of an empty tensor / a contiguous meta tensor.
    if exact_numel(a) * 1 <= INT64_MAX and contiguous_strides_fit(a):
        c = sdk.empty(*a, dtype=sdk.bool, device="meta")
        shape = list(b)
        if shape:
            shape[min(dim, len(shape) - 1)] = -1
            known = exact_numel([s for s in shape if s != -1])
            if known and c.numel() % known == 0 and known <= INT64_MAX:
                expected = [c.numel() // known if s == -1 else s for s in shape]
                check(lambda: c.view(*shape), expected)
            else:
                check(lambda: c.view(*shape), [0] * len(shape))  # must raise: no shape fits
    # as_strided over a tiny storage: only in-bounds geometries are accepted.
    base = sdk.empty(16, device="cpu")
    strides = [min(s, INT64_MAX) for s in (b + [1] * len(a))[: len(a)]]
    out = check(lambda: base.as_strided(list(a), strides), a)
    if out is not None and out.numel() > 0:
        last = sum((s - 1) * st_ for s, st_ in zip(a, strides))
        assert last < 16


# ---- copy_ into an expanded tensor: refused at the call on every backend ----------------------
OVERLAP = ("copy_: unsupported operation: more than one element of the written-to tensor refers to a single "
           "memory location. Please clone() the tensor before performing the operation.")


@pytest.mark.parametrize("source_device", ["same", "cpu"])
def test_copy_into_expanded_tensor_raises_at_the_call(dev, source_device):
    target = sdk.zeros(1, device=dev).expand(4)
    src = sdk.ones(4, device=dev if source_device == "same" else "cpu")
    with pytest.raises(ValueError) as info:
        target.copy_(src)
    assert str(info.value).startswith(OVERLAP)
    _synchronize(dev)  # nothing was queued: no asynchronous fault follows
    if dev != "meta":
        assert sdk.zeros(2, device=dev).add(1).cpu().tolist() == [1.0, 1.0]


def test_copy_from_device_into_expanded_host_tensor(backend_device):
    with pytest.raises(ValueError, match="more than one element of the written-to tensor"):
        sdk.zeros(1).expand(4).copy_(sdk.ones(4, device=backend_device))
    _synchronize(backend_device)


def test_copy_overlap_edge_cases(dev):
    x = sdk.zeros(1, device=dev).expand(4)
    assert x.copy_(x) is x  # copying a tensor onto itself does nothing, on every backend
    sdk.zeros(1, device=dev).expand(0).copy_(sdk.ones(0, device=dev))  # no element: nothing overlaps
    sdk.zeros(1, device=dev).expand(1, 1).copy_(sdk.ones(1, 1, device=dev))  # size-1 stride-0 dims are fine
    with pytest.raises(ValueError, match="more than one element of the written-to tensor"):
        sdk.zeros(3, 1, device=dev).expand(3, 2).copy_(sdk.ones(3, 2, device=dev))


ROOT = Path(__file__).resolve().parent.parent


def test_copy_into_expanded_tensor_on_the_python_backend():
    """pyaccel (samples/python_backend) registers its own copy_ in Python: the SDK's check runs first."""
    code = textwrap.dedent(f"""
        import pytest
        import backend_sdk as sdk
        import pyaccel
        for src in (sdk.ones(4, device="pyaccel"), sdk.ones(4)):
            with pytest.raises(ValueError) as info:
                sdk.zeros(1, device="pyaccel").expand(4).copy_(src)
            assert str(info.value).startswith({OVERLAP!r}), str(info.value)
        with pytest.raises(ValueError, match="more than one element"):
            sdk.zeros(1).expand(4).copy_(sdk.ones(4, device="pyaccel"))
        x = sdk.zeros(1, device="pyaccel").expand(4)
        assert x.copy_(x) is x
        print("ok")
    """)
    paths = [str(ROOT), str(ROOT / "samples" / "python_backend"), str(ROOT / "samples" / "accel_sim")] + sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    r = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
