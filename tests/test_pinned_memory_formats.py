"""Part 4 of issue 15: pinned memory on tensors, storages, factories and the DataLoader; layouts and memory
formats (channels_last & co.); Tensor.storage()/untyped_storage() (Note [Storage objects],
Note [Factory keyword arguments], Note [Memory formats])."""
from __future__ import annotations

import pickle
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import accel
import backend_sdk as sdk
from backend_sdk.utils.data import DataLoader, TensorDataset

CL = sdk.channels_last


# ---- layouts and memory formats as objects ----

def test_format_objects_have_pytorch_reprs_and_numbers():
    assert repr(sdk.strided) == "backend_sdk.strided" and isinstance(sdk.strided, sdk.layout)
    for name, value in [("contiguous_format", 0), ("preserve_format", 1), ("channels_last", 2),
                        ("channels_last_3d", 3)]:
        fmt = getattr(sdk, name)
        assert isinstance(fmt, sdk.memory_format) and fmt.__index__() == value and repr(fmt) == f"backend_sdk.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
    assert sdk.ones(2).layout is sdk.strided


def test_empty_channels_last_has_nhwc_strides(device):
    x = sdk.empty(2, 3, 4, 5, memory_format=CL, device=device)
    assert x.shape == (2, 3, 4, 5) and x.stride() == (60, 1, 15, 3)
    assert x.is_contiguous(memory_format=CL) and not x.is_contiguous()
    y = sdk.empty(2, 3, 4, 5, 6, memory_format=sdk.channels_last_3d, device=device)
    assert y.stride() == (360, 1, 90, 18, 3) and y.is_contiguous(memory_format=sdk.channels_last_3d)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        sdk.empty(2, 3, memory_format=CL, device=device)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        sdk.empty(2, 3, memory_format=sdk.preserve_format, device=device)


def test_contiguous_and_to_memory_format_keep_values(device):
    x = sdk.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5), device=device)
    cl = x.contiguous(memory_format=CL)
    assert cl.stride() == (60, 1, 15, 3) and cl.tolist() == x.tolist()
    assert cl.contiguous(memory_format=CL) is cl and x.contiguous() is x
    back = cl.contiguous()
    assert back.is_contiguous() and back.tolist() == x.tolist()
    to = x.to(memory_format=CL)
    assert to.is_contiguous(memory_format=CL) and to.tolist() == x.tolist()
    assert to.to(memory_format=CL) is to
    # preserve_format copies keep channels_last (clone, *_like, elementwise results through empty_like)
    assert cl.clone().stride() == cl.stride()
    for like in (sdk.empty_like(cl), sdk.zeros_like(cl), sdk.ones_like(cl), sdk.full_like(cl, 2.0)):
        assert like.stride() == (60, 1, 15, 3) and like.device == cl.device
    assert sdk.empty_like(cl, memory_format=sdk.contiguous_format).is_contiguous()
    with pytest.raises(RuntimeError, match="required rank 4"):
        sdk.ones(2, 3, device=device).to(memory_format=CL)


def test_like_factories_keep_transposed_strides_and_take_kwargs():
    t = sdk.ones(3, 4).t()
    assert sdk.empty_like(t).stride() == t.stride()
    gappy = sdk.ones(4, 6)[:, ::2]  # not dense: *_like is contiguous
    assert sdk.zeros_like(gappy).is_contiguous()
    z = sdk.zeros_like(t, dtype=sdk.float64, requires_grad=True, layout=sdk.strided)
    assert z.dtype == sdk.float64 and z.requires_grad


def test_factories_accept_pytorch_keywords():
    for f in (sdk.empty, sdk.zeros, sdk.ones, sdk.rand, sdk.randn):
        t = f(2, 3, dtype=sdk.float32, layout=sdk.strided, device="cpu", requires_grad=True, pin_memory=False)
        assert t.shape == (2, 3) and t.requires_grad, f
    out = sdk.empty(0)
    assert sdk.zeros(2, 2, out=out) is out and out.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert sdk.full((3,), 7.0, out=out) is out and out.tolist() == [7.0] * 3
    r = sdk.empty(0)
    assert sdk.rand(5, out=r) is r and r.shape == (5,)
    a = sdk.empty(0, dtype=sdk.int64)
    assert sdk.arange(2, 5, out=a) is a and a.tolist() == [2, 3, 4]
    with pytest.raises(RuntimeError, match="only the strided layout"):
        sdk.empty(2, layout=object())
    with pytest.raises(RuntimeError, match="does not match the dtype of out="):
        sdk.ones(2, out=sdk.empty(0), dtype=sdk.int64)


# ---- pinned memory ----

def test_pin_memory_copies_into_pinned_memory_once():
    x = sdk.tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).t()
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.tolist() == x.tolist() and p.stride() == x.stride()
    assert p.pin_memory() is p and p.data_ptr() != x.data_ptr()
    assert sdk._runtime.is_pinned(p, "accel")


def test_pin_memory_of_a_device_tensor_is_refused():
    x = sdk.ones(2, device="accel")
    assert not x.is_pinned()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        x.pin_memory()


def test_factories_pin_memory():
    for t in (sdk.empty(4, pin_memory=True), sdk.zeros(4, pin_memory=True), sdk.ones(2, 2, pin_memory=True),
              sdk.full((3,), 2.0, pin_memory=True), sdk.rand(3, pin_memory=True),
              sdk.empty_strided((2, 3), (1, 2), pin_memory=True), sdk.empty_like(sdk.ones(3), pin_memory=True),
              sdk.tensor([1, 2], pin_memory=True), sdk.arange(4, pin_memory=True)):
        assert t.is_pinned() and t.device == sdk.device("cpu")
    cl = sdk.empty(2, 3, 4, 5, pin_memory=True, memory_format=CL)
    assert cl.is_pinned() and cl.stride() == (60, 1, 15, 3)
    assert sdk.ones(3, pin_memory=True).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        sdk.empty(2, device="accel", pin_memory=True)


def test_pin_memory_without_an_accelerator_raises_pytorchs_error():
    code = ("import backend_sdk as sdk\n"
            "assert not sdk.ones(2).is_pinned()\n"
            "for f in (lambda: sdk.ones(2).pin_memory(), lambda: sdk.empty(2, pin_memory=True)):\n"
            "    try: f()\n"
            "    except RuntimeError as e: print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "Cannot access accelerator device when none is available." in out
    assert "pin_memory=True requires a CUDA or other accelerator backend" in out


def test_record_stream_marks_the_tensor_and_checks_the_stream():
    x = sdk.ones(1024, device="accel")
    s = accel.Stream()
    x.record_stream(s)  # accepted: the allocator waits for s before reusing x's block
    with pytest.raises(TypeError, match="must be a Stream"):
        x.record_stream(3)


def test_dataloader_pin_memory_pins_batches():
    ds = TensorDataset(sdk.tensor(np.arange(8, dtype=np.float32)), sdk.tensor(np.arange(8)))
    for xb, yb in DataLoader(ds, batch_size=4, pin_memory=True):
        assert xb.is_pinned() and yb.is_pinned()
    for xb, _ in DataLoader(ds, batch_size=4):
        assert not xb.is_pinned()


def test_non_blocking_copy_from_pinned_memory_overlaps_a_kernel():
    """A timed copy on one stream runs while a kernel runs on another (the simulator's timing model)."""
    import device_sim

    n = 8 << 20
    host = sdk.ones(n // 4, pin_memory=True)
    dst = sdk.empty(n // 4, device="accel")
    work = sdk.ones(16, device="accel")
    s_copy, s_kernel = accel.Stream(), accel.Stream()
    device_sim.configure(launch_latency_us=200_000, copy_bandwidth_gbps=n / 0.2 / 1e9)  # each takes ~0.2 s
    try:
        # One trial, strict: the two launches on two streams run concurrently every time since the worker that
        # starts an op wakes a sleeper for another stream's runnable work (Note [Worker spin]); 30 runs under
        # a load of 2-3 on 2 cores all passed.
        accel.synchronize()
        t0 = time.perf_counter()
        with s_kernel:
            work.add_(1)
        with s_copy:
            dst.copy_(host, non_blocking=True)
        host_returned = time.perf_counter() - t0
        accel.synchronize()
        total = time.perf_counter() - t0
    finally:
        device_sim.configure(launch_latency_us=0, copy_bandwidth_gbps=0)
    assert host_returned < 0.1  # neither call waited
    assert total < 0.38, total  # ran concurrently (one after the other: >= 0.4 s)
    assert dst[:4].tolist() == [1.0] * 4


# ---- storages ----

def test_untyped_storage_faces(device):
    x = sdk.tensor(np.arange(6, dtype=np.float32), device=device)
    s = x.untyped_storage()
    assert s.nbytes() == 24 == s.size() == len(s) and s.device == x.device and s.data_ptr() == x.data_ptr()
    assert s.element_size() == 1
    cpu = s.cpu()
    assert cpu.device == sdk.device("cpu") and np.frombuffer(bytes(cpu.tolist()), np.float32).tolist() == \
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert (cpu is s) == (device == "cpu")
    # to another device: accel:1 from the CPU, the backend's last device from a backend (a copy between two
    # vendor backends goes through the CPU, as in PyTorch)
    target = "accel:1" if device == "cpu" else f"{device}:{getattr(sdk, device).device_count() - 1}"
    moved = s.to(device=target)
    assert moved.device == sdk.device(target) and moved.cpu().tolist() == cpu.tolist()
    fresh = sdk.UntypedStorage(24, device=device)
    fresh.copy_(s)
    assert fresh.cpu().tolist() == cpu.tolist()
    with pytest.raises(RuntimeError, match="size mismatch"):
        fresh.copy_(sdk.UntypedStorage(8))
    s.fill_(0)
    assert x.tolist() == [0.0] * 6  # the same bytes as the tensor
    s.resize_(64)
    assert x.untyped_storage().nbytes() == 64  # every view sees the grown storage
    assert s.is_accel == (device == "accel")
    home = "accel" if device == "cpu" else device  # the generated storage method of a renamed backend
    assert getattr(s, home)().device.type == home and getattr(s, f"is_{home}") == (device != "cpu")


def test_typed_storage_warns_once_and_counts_elements():
    x = sdk.tensor([1.5, 2.5, 3.5], dtype=sdk.float64)
    import backend_sdk._storage as st

    st._TYPED_STORAGE_WARNED = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        ts = x.storage()
    assert isinstance(ts, sdk.TypedStorage) and ts.dtype == sdk.float64
    assert ts.size() == 3 == len(ts) and ts.nbytes() == 24 and ts.element_size() == 8
    assert ts.tolist() == [1.5, 2.5, 3.5] and ts[1] == 2.5 and ts.data_ptr() == x.data_ptr()
    assert isinstance(ts.untyped(), sdk.UntypedStorage)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.storage()  # once per process
    assert ts.to(device="accel").tolist() == [1.5, 2.5, 3.5] and ts.is_accel is False


def test_storage_pin_memory():
    s = sdk.ones(4).untyped_storage()
    assert not s.is_pinned()
    p = s.pin_memory()
    assert p.is_pinned() and p.tolist() == s.tolist() and p.pin_memory() is p


def test_storage_slices_share_bytes_and_set_views_them():
    p = sdk.tensor(np.arange(10, dtype=np.float32)).pin_memory()
    tail = p.untyped_storage()[8:]
    assert tail.nbytes() == 32 and tail.data_ptr() == p.data_ptr() + 8 and tail.is_pinned()
    r = sdk.tensor((), dtype=sdk.float32).set_(tail, size=(5,), stride=(1,), storage_offset=0)
    assert r.is_pinned() and r.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    r.fill_(0)
    assert p.tolist()[1:4] == [1.0, 0.0, 0.0]  # the same memory
    x = sdk.arange(6.0, device="accel")
    y = sdk.empty(0, device="accel").set_(x.untyped_storage(), 2, (2, 2))
    assert y.cpu().tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert sdk.empty(0).set_(sdk.arange(4.0)).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="Expected a Storage on cpu"):
        sdk.empty(0).set_(x.untyped_storage())
    with pytest.raises(RuntimeError, match="require 16 bytes, but the storage has only 8"):
        sdk.empty(0).set_(sdk.UntypedStorage(8), 0, (4,))
    with pytest.raises(IndexError, match="out of range"):
        sdk._C._storage_slice(x, 0, 100)


def test_randint_and_normal_take_requires_grad_as_pytorch():
    """PyTorch's factory overloads of randint/normal take requires_grad= (the aten schemas do not)."""
    assert {"rand", "randn", "randint", "normal"} <= set(sdk.__all__)
    x = sdk.normal(0.0, 1.0, (3,), requires_grad=True, device="accel")
    assert x.requires_grad and x.is_leaf and x.device == sdk.device("accel:0")
    assert not sdk.normal(sdk.zeros(2), 1.0).requires_grad  # the Tensor overloads keep working
    r = sdk.randint(0, 5, (4,), requires_grad=False, device="accel")
    assert r.dtype == sdk.int64 and 0 <= int(r.min().item()) and int(r.max().item()) < 5
    with pytest.raises(RuntimeError, match="floating point and complex dtype can require gradients"):
        sdk.randint(0, 5, (2,), requires_grad=True)
