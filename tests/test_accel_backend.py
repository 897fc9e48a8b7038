"""The accel sample backend (samples/accel_sim): tensors on the simulated device, copies,
operators against the CPU, the CPU fallback, and the bad inputs of the accel issue.

Copies, item/resize/numpy and the operators against the CPU hold for every backend: they take the
``backend_device`` fixture (accel, and pyaccel in a BACKEND_SDK_TEST_BACKENDS=pyaccel process). The rest
checks accel_sim's own machinery (its launch-geometry cache and kernel jobs, streams, two devices, its
generator, asynchronous faults) and stays on accel."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import accel
import backend_sdk as sdk

from _helpers import run_threads


def host(t: sdk.Tensor) -> np.ndarray:
    return t.cpu().numpy()


# ---- registration layer ------------------------------------------------------------------------

def test_renamed_backend_everywhere():
    x = sdk.ones(2, 3, device="accel:1")
    assert x.device == sdk.device("accel:1") and x.device.type == "accel" and x.is_accel
    assert not sdk.ones(1).is_accel
    assert x.untyped_storage().is_accel
    assert "device='accel:1'" in repr(x)
    assert sdk.accel is accel._module and sdk.accel.device_count() == accel.device_count() == 2
    with pytest.raises(RuntimeError, match="already been registered with 'is_accel'"):
        sdk.utils.generate_methods_for_privateuse1_backend()


def test_device_module_needs_a_renamed_backend():
    with pytest.raises(ValueError, match="'npu' is not the name of a renamed backend"):
        sdk.utils.generate_device_module("npu")
    with pytest.raises(ValueError, match="'npu' is not the name of a renamed backend"):
        sdk._register_device_module("npu", object())


def test_tensor_accel_method_and_to():
    x = sdk.arange(6, dtype=sdk.float32)
    y = x.accel()
    assert y.device == sdk.device("accel:0") and y.accel() is y
    assert x.accel(1).device == sdk.device("accel:1")
    assert x.to("accel:1", non_blocking=True).device.index == 1
    np.testing.assert_array_equal(host(x.accel("accel:1")), x.numpy())


# ---- copies ------------------------------------------------------------------------------------

@pytest.mark.parametrize("non_blocking", [False, True])
def test_round_trip_with_conversion_and_layouts(backend_device, non_blocking):
    dev = backend_device
    a = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    x = sdk.from_numpy(a)
    d = x.to(dev, non_blocking=non_blocking)
    getattr(sdk, dev).synchronize()
    np.testing.assert_array_equal(host(d), a)
    np.testing.assert_array_equal(host(d.t()), a.T)                      # non-contiguous source on the device
    np.testing.assert_array_equal(host(x.t().to(dev)), a.T)              # non-contiguous source on the host
    np.testing.assert_array_equal(host(d.to(sdk.float64)), a.astype(np.float64))
    target = sdk.zeros(7, 5, device=dev)
    target.copy_(x.t())                                                 # into a device tensor, from the host
    np.testing.assert_array_equal(host(target), a.T)
    strided = sdk.zeros(5, 14, device=dev)[:, ::2]
    strided.copy_(x)                                                    # into a non-contiguous device view
    np.testing.assert_array_equal(host(strided), a)
    out = sdk.zeros(5, 7, dtype=sdk.float64)
    out.copy_(d)                                                        # device to host with conversion
    np.testing.assert_array_equal(out.numpy(), a.astype(np.float64))
    row = sdk.zeros(3, 7, device=dev)
    row.copy_(sdk.from_numpy(a[0]))                                     # broadcast
    np.testing.assert_array_equal(host(row), np.broadcast_to(a[0], (3, 7)))


def test_copy_between_devices_is_ordered():
    x = sdk.arange(1 << 16, dtype=sdk.float32, device="accel:0") * 3
    y = x.to("accel:1")
    z = (y + 1).to("accel:0")
    np.testing.assert_array_equal(host(z), np.arange(1 << 16, dtype=np.float32) * 3 + 1)
    w = sdk.empty(1 << 16, dtype=sdk.float64, device="accel:1")
    w.copy_(x)                                                          # across devices with conversion
    np.testing.assert_array_equal(host(w), np.arange(1 << 16) * 3.0)


def test_item_and_shape_errors(backend_device):
    assert sdk.full((), 7.5, device=backend_device).item() == 7.5
    with pytest.raises(ValueError, match="a Tensor with 3 elements cannot be converted to Scalar"):
        sdk.ones(3, device=backend_device).item()
    with pytest.raises(ValueError, match="must match the existing size"):
        sdk.zeros(3, device=backend_device).copy_(sdk.ones(4))


def test_resize_keeps_data(backend_device):
    x = sdk.arange(4, dtype=sdk.float32, device=backend_device)
    x.resize_(100)
    np.testing.assert_array_equal(host(x[:4]), [0, 1, 2, 3])


def test_device_to_numpy_is_refused(backend_device):
    with pytest.raises((TypeError, ValueError), match=backend_device):
        sdk.ones(2, device=backend_device).numpy()


# ---- operators against the CPU --------------------------------------------------------------------

def _pair(*shape, dtype=np.float32, seed=0, device="accel"):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return sdk.from_numpy(a), sdk.from_numpy(a).to(device)


OPS = {
    "add": lambda x, y: x + y * 2, "sub_alpha": lambda x, y: sdk.sub(x, y, alpha=3), "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y.abs() + 1), "maximum": sdk.maximum, "where": lambda x, y: sdk.where(x > y, x, y),
    "clamp": lambda x, y: x.clamp(-0.5, 0.5), "exp": lambda x, y: x.exp(), "tanh": lambda x, y: x.tanh(),
    "relu": lambda x, y: x.relu(), "sigmoid": lambda x, y: x.sigmoid(), "sum": lambda x, y: x.sum(),
    "sum_dim": lambda x, y: x.sum(1, keepdim=True), "mean": lambda x, y: x.mean(0), "amax": lambda x, y: x.amax(1),
    "max_dim": lambda x, y: x.max(1)[0], "argmax": lambda x, y: x.argmax(1), "var": lambda x, y: x.var(1),
    "mm": lambda x, y: x @ y.t(), "matmul_batched": lambda x, y: x.reshape(2, 3, 4) @ y.reshape(2, 4, 3),
    "softmax": lambda x, y: sdk.softmax(x, 1), "log_softmax": lambda x, y: sdk.log_softmax(x, 0),
    "cat": lambda x, y: sdk.cat([x, y], 1), "stack": lambda x, y: sdk.stack([x, y]),
    "cumsum": lambda x, y: x.cumsum(1), "flip": lambda x, y: x.flip(0), "transpose_add": lambda x, y: x.t() + 1,
    "mse_loss": lambda x, y: sdk.mse_loss(x, y), "index_select": lambda x, y: x.index_select(1, sdk.tensor([2, 0]).to(x.device)),
    "gather": lambda x, y: x.gather(1, sdk.tensor([[0, 1]] * 6).to(x.device)),
    "masked_fill": lambda x, y: x.masked_fill(x > 0, 0.0), "fancy_index": lambda x, y: x[sdk.tensor([0, 5]).to(x.device)],
    "cross_entropy": lambda x, y: sdk.nn.functional.cross_entropy(x, sdk.tensor([0, 1, 2, 3, 0, 1]).to(x.device)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_operator_matches_cpu(backend_device, name):
    (x, dx), (y, dy) = _pair(6, 4, device=backend_device), _pair(6, 4, seed=1, device=backend_device)
    expected, got = OPS[name](x, y), OPS[name](dx, dy)
    assert got.device.type == backend_device and got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(host(got), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_in_place_and_out_variants_on_device(backend_device):
    x, dx = _pair(3, 5, device=backend_device)
    dx.add_(1).mul_(2)
    np.testing.assert_allclose(host(dx), (x.numpy() + 1) * 2, rtol=1e-6)
    out = sdk.empty(0, device=backend_device)
    sdk.mul(dx, dx, out=out)                                           # out= resized on the device
    np.testing.assert_allclose(host(out), host(dx) ** 2, rtol=1e-6)
    view = dx[1]
    view.zero_() if hasattr(view, "zero_") else view.fill_(0)
    assert host(dx)[1].sum() == 0 and host(dx)[0].sum() != 0


# ---- the launch path: geometry cache and kernel jobs (Note [Launch geometry cache], Note [Kernel jobs]) ----

def test_repeated_launches_with_other_argument_values_are_not_served_stale_geometry():
    """The cache key covers every argument: same tensors, other dims / scalars / strings / dtypes."""
    x, dx = _pair(4, 6)
    for dim in (0, 1, 0, 1):                                            # sum over one dim, then the other
        np.testing.assert_allclose(host(dx.sum(dim)), x.numpy().sum(dim), rtol=1e-5)
    for alpha in (1, 2, 3):                                             # a Scalar argument changes the values
        np.testing.assert_allclose(host(sdk.add(dx, dx, alpha=alpha)), x.numpy() * (1 + alpha), rtol=1e-5)
    for mode in ("trunc", "floor", None):                               # a str? argument
        np.testing.assert_allclose(host(sdk.div(dx, 0.3, rounding_mode=mode)),
                                   sdk.div(x, 0.3, rounding_mode=mode).numpy(), rtol=1e-5)
    assert (dx + 1).dtype == sdk.float32 and (dx.to(sdk.float64) + 1).dtype == sdk.float64
    assert (dx + 1).shape == (4, 6) and (dx[:, :3] + 1).shape == (4, 3) and (dx.t() + 1).stride() == (x.t() + 1).stride() == (1, 6)
    i = sdk.ones(3, dtype=sdk.int64, device="accel")                     # a wrapped number promotes differently
    assert (i + 1).dtype == sdk.int64 and (i + 1.5).dtype == sdk.float32
    assert (i + sdk.tensor(1.5)).dtype == sdk.float32                   # a CPU scalar tensor
    np.testing.assert_allclose(host(i * sdk.tensor(2)), [2, 2, 2])
    np.testing.assert_allclose(host(i * sdk.tensor(3)), [3, 3, 3])       # same geometry, other value


def test_a_launch_error_is_raised_every_time_not_cached():
    a, b = sdk.ones(2, 3, device="accel"), sdk.ones(4, device="accel")
    for _ in range(2):
        with pytest.raises(ValueError, match="size of tensor a"):
            a + b
    bits = sdk.ones(2, device="accel")
    for _ in range(2):
        with pytest.raises((TypeError, ValueError), match="bitwise_and"):
            sdk.bitwise_and(bits, bits)


def test_out_argument_resized_on_every_call(backend_device):
    dx = sdk.ones(2, 3, device=backend_device)
    for _ in range(3):
        out = sdk.empty(0, device=backend_device)
        sdk.mul(dx, dx, out=out)
        assert out.shape == (2, 3) and host(out).sum() == 6


def test_freeing_a_tensor_with_queued_kernels_returns_its_memory_at_once():
    import device_sim
    s = accel.Stream()
    with accel.stream(s):
        x = sdk.ones(1 << 18, device="accel")
        before = accel.memory_allocated()
        device_sim.lib().device_sim_kernel_sleep(s.native_handle, 50_000)
        y = x * 2                                                       # queued behind the sleep
        assert accel.memory_allocated() == before + (1 << 20)
        del y
        assert accel.memory_allocated() == before                       # no reference kept by the queued kernel
        assert not s.query()                                            # the kernel is still queued
    s.synchronize()


def test_launches_from_several_threads_match_the_cpu():

    def work(seed):
        x, dx = _pair(8, 8, seed=seed)
        s = accel.Stream()
        with accel.stream(s):
            for _ in range(50):
                dx = dx * 1.5 - 0.25
                x = x * 1.5 - 0.25
            s.synchronize()
        np.testing.assert_allclose(host(dx), x.numpy(), rtol=1e-5)

    run_threads([lambda k=k: work(k) for k in range(4)])


def test_cpu_fallback_runs_unsupported_operators_and_warns_once():
    x, dx = _pair(4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = dx.take(sdk.tensor([0, 5, 15]).to("accel"))
        got2 = dx.take(sdk.tensor([1]).to("accel"))
    np.testing.assert_array_equal(host(got), x.numpy().reshape(-1)[[0, 5, 15]])
    assert got.device.type == "accel" and host(got2)[0] == x.numpy().reshape(-1)[1]
    messages = [str(w.message) for w in caught if "fall back to run on the CPU" in str(w.message)]
    assert len(messages) <= 1  # once per operator per process (an earlier test may have warned already)


def test_fallback_refuses_tensors_on_two_devices():
    """Note [CPU fallback: devices, overlap and generators]: the host copies must not hide a device mix-up."""
    x, dx = _pair(4, 4)
    with pytest.raises(ValueError, match="Expected all tensors to be on the same device, but found at least two "
                                         "devices, accel:0 and cpu"):
        dx.take(sdk.tensor([0, 5]))                                      # take runs through the fallback
    with pytest.raises(ValueError, match="Expected all tensors to be on the same device"):
        dx.take(sdk.tensor([0, 5]).to("accel:1"))
    assert host(dx.take(sdk.tensor([0, 5]).to("accel"))).tolist() == x.numpy().reshape(-1)[[0, 5]].tolist()


def test_cpu_index_tensors_move_to_the_device():
    """Note [CPU index tensors]: advanced indexing takes CPU indices (lists, numpy arrays, CPU tensors) and
    moves them to self's device, as PyTorch's; index_select keeps the same-device check, as PyTorch's."""
    x, dx = _pair(4, 4)
    rows, cols = sdk.tensor([0, 2, 2]), sdk.tensor([1, 3, 0])
    for got, want in [(dx[rows], x[rows]), (dx[[0, 3]], x[[0, 3]]), (dx[:, cols], x[:, cols]),
                      (dx[rows, cols], x[rows, cols]), (dx[np.array([1, 0])], x[np.array([1, 0])])]:
        assert got.device == sdk.device("accel:0")
        np.testing.assert_array_equal(host(got), want.numpy())
    dx[rows, cols] = 7.0
    x[rows, cols] = 7.0
    dx.index_put_((rows,), sdk.tensor(1.5).to("accel"), accumulate=True)
    x.index_put_((rows,), sdk.tensor(1.5), accumulate=True)
    np.testing.assert_array_equal(host(dx), x.numpy())
    with pytest.raises(IndexError, match=r"indices should be either on cpu or on the same device as the indexed "
                                         r"tensor \(accel:0\)"):
        dx[rows.to("accel:1")]
    with pytest.raises(ValueError, match="Expected all tensors to be on the same device, but found at least two "
                                         "devices, accel:0 and cpu"):
        dx.index_select(0, rows)


def test_fallback_random_operators_use_the_device_generator():
    cpu_state = sdk.get_rng_state()
    accel.manual_seed(5)
    first = host(sdk.randint(0, 1000, (16,), device="accel"))           # random_ runs through the fallback
    second = host(sdk.randint(0, 1000, (16,), device="accel"))
    accel.manual_seed(5)
    again = host(sdk.randint(0, 1000, (16,), device="accel"))
    assert (first == again).all() and not (first == second).all()      # accel's seed decides, and it advances
    g = sdk.Generator("cpu")
    g.manual_seed(5)
    assert (first == sdk.randint(0, 1000, (16,), generator=g).numpy()).all()  # Philox: the CPU's numbers
    assert (sdk.get_rng_state().numpy() == cpu_state.numpy()).all()  # the CPU generator was not used


def test_fallback_writes_mutated_arguments_back():
    x, dx = _pair(4, 3)
    dx.cumprod_(0) if hasattr(dx, "cumprod_") else None
    if hasattr(x, "cumprod_"):
        x.cumprod_(0)
        np.testing.assert_allclose(host(dx), x.numpy(), rtol=1e-5)


def test_random_numbers_match_the_cpu_for_the_same_seed():
    sdk.manual_seed(11)
    cpu = sdk.rand(1000)
    sdk.manual_seed(11)
    dev = sdk.rand(1000, device="accel")
    np.testing.assert_array_equal(host(dev), cpu.numpy())
    accel.manual_seed(5)
    state = accel.get_rng_state()
    a = sdk.randn(64, device="accel")
    accel.set_rng_state(state)
    b = sdk.randn(64, device="accel")
    np.testing.assert_array_equal(host(a), host(b))
    assert accel.initial_seed() == 5


def test_integer_division_by_zero_surfaces_at_the_next_sync():
    a = sdk.tensor([4, 5]).to("accel")
    b = sdk.tensor([1, 0]).to("accel")
    a // b  # queued: the error happens on the device
    with pytest.raises(sdk.AcceleratorError, match="kernel fault in .aten::floor_divide. .*ZeroDivisionError"):
        accel.synchronize()
    np.testing.assert_array_equal(host(a + 1), [5, 6])  # the device works again


# ---- bad inputs -------------------------------------------------------------------------------

def test_tensors_on_two_devices_are_refused():
    with pytest.raises(ValueError, match="Expected all tensors to be on the same device.*accel:0.*accel:1"):
        sdk.ones(2, device="accel:0") + sdk.ones(2, device="accel:1")
    with pytest.raises(ValueError, match="Expected all tensors to be on the same device"):
        sdk.ones(2, device="accel:0") + sdk.ones(2)
    assert host(sdk.ones(2, device="accel") + sdk.tensor(2.0)).tolist() == [3.0, 3.0]  # a CPU scalar is fine


def test_invalid_device_ordinal():
    with pytest.raises(IndexError, match="Invalid device ordinal: device index 5 is out of range for backend "
                                         "'accel', which has 2 devices"):
        accel.set_device(5)
    with pytest.raises(IndexError, match="Invalid device ordinal: device index 7"):
        sdk.ones(2, device="accel:7")
    with pytest.raises(ValueError, match="expected a accel device, got 'cpu'"):
        accel.memory_allocated("cpu")


def test_stream_of_another_device_made_current():
    s1 = accel.Stream(1)
    with accel.device(0):
        with accel.stream(s1):
            assert accel.current_device() == 1 and accel.current_stream() == s1
        assert accel.current_device() == 0 and accel.current_stream(1) == accel.default_stream(1)


def test_two_renamed_backends_in_one_process():
    code = textwrap.dedent("""
        import accel, device_sim, backend_sdk as sdk
        from backend_sdk import utils, _runtime
        utils.rename_privateuse2_backend("npu")
        _runtime.attach_device_library("npu", device_sim.library_path())
        npu = utils.generate_device_module("npu")
        utils.generate_methods_for_privateuse2_backend()
        assert sdk.npu is npu and npu.device_count() == 2 and accel.device_count() == 2
        s = npu.Stream(1)
        assert s.device == sdk.device("npu:1") and str(s.device) == "npu:1"
        x = sdk.ones(3, device="accel")
        assert not x.is_npu and x.is_accel
        assert npu.memory_allocated(0) == 0 and accel.memory_allocated(0) > 0
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
