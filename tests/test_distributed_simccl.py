"""Device collectives (issue 21): the "sdk.collectives" extension, device_sim's simccl and the "accel:simccl" backend.

In-process cases drive the extension through ``backend_sdk._C._runtime`` on two simulated devices of one
process (the mailbox transport); the launched cases run 2 and 4 MPI ranks (the fabric over MPI) with the
default backend, which picks simccl for accel tensors: every collective and dtype against numpy (the
rank-side checks of test_distributed_collectives.py), ordering with the stream, a rank's link down
surfacing on every rank, mismatched inputs.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from _helpers import run_threads
from distributed_launch import launch


def _accel():
    import accel  # noqa: F401  (the sample backend on device_sim)
    import backend_sdk as sdk

    return sdk


# ---- in process ----------------------------------------------------------------------------------------
def test_device_sim_offers_the_collectives_extension():
    sdk = _accel()
    from backend_sdk import _runtime
    from backend_sdk._C import _runtime as rt

    assert _runtime.device_extensions("accel")["sdk.collectives"] == 1
    assert rt._has_device_collectives("accel") and rt._ccl_backend_name("accel") == "simccl"
    from backend_sdk.distributed._ccl_backend import register_device_backends

    # Every attached device offering the extension gets its backend: accel here, and any other device_sim
    # an earlier test of this process attached (e.g. on privateusethree).
    registered = register_device_backends()
    assert registered["accel"] == "simccl" and set(registered.values()) == {"simccl"}
    import backend_sdk.distributed as dist

    assert dist.Backend.default_device_backend_map["accel"] == "simccl"
    assert dist.get_default_backend_for_device(sdk.device("accel:0")) == "simccl"


def _in_process(fn_per_rank, nranks=2):
    """Runs fn_per_rank(rank, comm) on one thread per simulated device, all in one communicator."""
    from backend_sdk._C import _runtime as rt

    uid = rt._ccl_unique_id("accel")
    comms = [rt._ccl_comm_init("accel", r, uid, nranks, r, None) for r in range(nranks)]
    try:
        run_threads([lambda r=r: fn_per_rank(r, comms[r]) for r in range(nranks)], budget=0)
    finally:
        for c in comms:
            rt._ccl_comm_destroy("accel", c)


def test_two_devices_of_one_process_all_reduce_all_gather_reduce_scatter():
    sdk = _accel()
    from backend_sdk import _runtime
    from backend_sdk._C import _runtime as rt

    n = 2
    results: dict = {}

    def rank(r: int, comm: int) -> None:
        dev = sdk.device(f"accel:{r}")
        s = _runtime.current_stream(dev)
        x = sdk.from_numpy(np.arange(10, dtype=np.float32) + r).to(dev)
        rt._ccl_enqueue("accel", "all_reduce", comm, x.data_ptr(), x.data_ptr(), 10, 6, 3, s.native_handle)  # MAX
        g = sdk.empty([n * 3], dtype=sdk.int64, device=dev)
        y = sdk.from_numpy(np.full(3, r + 7, dtype=np.int64)).to(dev)
        rt._ccl_enqueue("accel", "all_gather", comm, y.data_ptr(), g.data_ptr(), 3, 4, 0, s.native_handle)
        z = sdk.from_numpy(np.arange(4, dtype=np.float64) * (r + 1)).to(dev)
        o = sdk.empty([2], dtype=sdk.float64, device=dev)
        rt._ccl_enqueue("accel", "reduce_scatter", comm, z.data_ptr(), o.data_ptr(), 2, 7, 0, s.native_handle)  # SUM
        s.synchronize()
        results[r] = (x.cpu().numpy(), g.cpu().numpy(), o.cpu().numpy())

    _in_process(rank, n)
    for r in range(n):
        x, g, o = results[r]
        np.testing.assert_array_equal(x, np.arange(10, dtype=np.float32) + 1)
        np.testing.assert_array_equal(g, [7, 7, 7, 8, 8, 8])
        np.testing.assert_array_equal(o, (np.arange(4) * 3.0)[2 * r:2 * r + 2])


def test_bad_calls_are_statuses_not_crashes():
    sdk = _accel()
    from backend_sdk import _runtime
    from backend_sdk._C import _runtime as rt

    s = _runtime.current_stream(sdk.device("accel:0"))
    with pytest.raises(ValueError, match="unique id has 3 bytes"):
        rt._ccl_comm_init("accel", 0, b"abc", 2, 0, None)
    uid = rt._ccl_unique_id("accel")
    with pytest.raises(RuntimeError, match=r"rank 2 is not in \[0, 2\)"):
        rt._ccl_comm_init("accel", 0, uid, 2, 2, None)
    comm = rt._ccl_comm_init("accel", 0, uid, 2, 0, None)
    x = sdk.ones(4, device="accel:0")
    with pytest.raises(RuntimeError, match="not supported"):  # dtype number 9 (complex): refused at the call
        rt._ccl_enqueue("accel", "all_reduce", comm, x.data_ptr(), x.data_ptr(), 4, 9, 0, s.native_handle)
    with pytest.raises(RuntimeError, match="not a valid peer"):
        rt._ccl_enqueue("accel", "send", comm, x.data_ptr(), 0, 4, 6, 0, s.native_handle)  # to itself
    other = _runtime.current_stream(sdk.device("accel:1"))
    with pytest.raises(RuntimeError, match="the stream is of device 1, the communicator of device 0"):
        rt._ccl_enqueue("accel", "all_reduce", comm, x.data_ptr(), x.data_ptr(), 4, 6, 0, other.native_handle)
    rt._ccl_comm_destroy("accel", comm)
    with pytest.raises(RuntimeError, match="not a live communicator"):
        rt._ccl_enqueue("accel", "all_reduce", comm, x.data_ptr(), x.data_ptr(), 4, 6, 0, s.native_handle)
    with pytest.raises(RuntimeError, match="not a live communicator"):
        rt._ccl_comm_destroy("accel", comm)


def test_link_timing_is_configurable():
    _accel()
    import device_sim

    before = device_sim.link_timing()
    try:
        device_sim.configure(link_latency_us=5, link_bandwidth_gbps=2.5)
        assert device_sim.link_timing() == {"link_latency_us": 5.0, "link_bandwidth_gbps": 2.5}
    finally:
        device_sim.configure(link_latency_us=before["link_latency_us"],
                             link_bandwidth_gbps=before["link_bandwidth_gbps"])
    with pytest.raises(ValueError, match="link_latency_us must be >= 0"):
        device_sim.configure(link_latency_us=-1)


# ---- across processes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("nproc", [2, 4])
def test_simccl_every_collective_and_dtype(nproc):
    _, out, _ = launch(__file__, nproc, "collectives", timeout=120)
    assert "through host memory" not in out.split("STAGED-CHECK")[0]


def test_simccl_stream_order_faults_mismatches_and_a_dead_rank():
    code, out, seconds = launch(__file__, 2, "faults", expect_ok=False, timeout=90,
                                env={"BACKEND_SDK_DIST_HEARTBEAT_TIMEOUT": "3"})
    assert "RANK 0 checks passed" in out and "RANK 1 checks passed" in out, out
    # then rank 1 dies without a word while rank 0's simccl all_reduce waits for it in the fabric
    assert code != 0, out
    assert "rank 0 told: [Rank 0] all_reduce failed: rank 1 stopped responding (no heartbeat for" in out, out


# ---- rank side ----------------------------------------------------------------------------------------
def _init():
    import warnings

    import accel  # noqa: F401
    import backend_sdk as sdk
    import backend_sdk.distributed as dist

    dist.init_process_group()  # default: cpu:mpi and accel:simccl
    assert "accel:simccl" in str(dist.get_backend()), dist.get_backend()
    warnings.simplefilter("always")
    return sdk, dist


def _collectives_case() -> None:
    import warnings

    sdk, dist = _init()
    from test_distributed_collectives import _collectives

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _collectives()  # every collective and dtype on cpu and accel, against numpy
    # the collectives of the extension never stage; the others of the group (reduce, gather, ...) do silently
    assert not [w for w in caught if "through host memory" in str(w.message)], [str(w.message) for w in caught]
    r, n = dist.get_rank(), dist.get_world_size()
    # async work, send/recv around a ring on the device, a non-contiguous reduce_scatter_tensor output
    x = sdk.full([5], float(r + 1), device="accel")
    work = dist.all_reduce(x, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed() and work.is_success()
    assert x.cpu().tolist() == [(n + 1) / 2] * 5
    buf = sdk.full([3], float(r), dtype=sdk.float64, device="accel")
    got = sdk.zeros([3], dtype=sdk.float64, device="accel")
    if r % 2 == 0:
        dist.send(buf, dst=(r + 1) % n)
        src = dist.recv(got, src=(r - 1) % n)
    else:
        src = dist.recv(got, src=(r - 1) % n)
        dist.send(buf, dst=(r + 1) % n)
    assert src == (r - 1) % n and got.cpu().tolist() == [float((r - 1) % n)] * 3
    print("STAGED-CHECK", flush=True)
    # DDP on accel: the bucket all-reduces (AVG, async) run on simccl; every rank ends bit-identical
    from backend_sdk import nn
    from backend_sdk.nn.parallel import DistributedDataParallel as DDP

    sdk.manual_seed(r)  # different initial weights: DDP broadcasts rank 0's
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1)).to("accel")
    ddp = DDP(model, bucket_cap_mb=0.0001)  # several buckets
    opt = sdk.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(2):
        sdk.manual_seed(100 * step + r)
        opt.zero_grad()
        (ddp(sdk.randn(4, 8).to("accel")) ** 2).mean().backward()
        opt.step()
    for p in model.parameters():
        copies = [sdk.zeros_like(p) for _ in range(n)]
        dist.all_gather(copies, p.detach())
        for k in range(n):
            assert np.array_equal(copies[k].cpu().numpy(), copies[0].cpu().numpy()), (k, copies)


def _faults_case() -> None:
    sdk, dist = _init()
    import ctypes

    import device_sim
    from backend_sdk import _runtime
    from backend_sdk.distributed import DistBackendError

    r, n = dist.get_rank(), dist.get_world_size()
    dev = sdk.device("accel:0")
    lib = device_sim.lib()
    lib.device_sim_kernel_sleep.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    # ordering with the stream: a slow kernel writes the input; the collective must read it after that kernel,
    # and a kernel queued after the collective sees its output
    x = sdk.zeros([64], device=dev)
    stream = _runtime.current_stream(dev)
    lib.device_sim_kernel_sleep(stream.native_handle, 300_000)  # 0.3 s
    lib.device_sim_kernel_axpb_f32(stream.native_handle, x.data_ptr(), x.data_ptr(), 64, 0.0, float(r + 1))
    work = dist.all_reduce(x, async_op=True)
    assert not work.is_completed()  # queued behind the sleeping kernel
    lib.device_sim_kernel_axpb_f32(stream.native_handle, x.data_ptr(), x.data_ptr(), 64, 2.0, 0.0)
    work.wait()
    assert x.cpu().tolist() == [2.0 * n * (n + 1) / 2] * 64, x
    # a rank's link down: every rank gets the error naming rank 1, then the communicator works again
    if r == 1:
        device_sim.inject("link_down", device=0, count=1)
    y = sdk.ones([8], device=dev)
    try:
        dist.all_reduce(y)
        raise AssertionError("all_reduce with rank 1's link down did not raise")
    except DistBackendError as e:
        assert "the link of rank 1 is down" in str(e) and "simccl all_reduce" in str(e), str(e)
    dist.all_reduce(y)
    assert y.cpu().tolist() == [float(n)] * 8
    # mismatched inputs across ranks: every rank gets both sides, nothing hangs
    z = sdk.ones([4 + r], device=dev)
    try:
        dist.all_reduce(z)
        raise AssertionError("mismatched all_reduce did not raise")
    except DistBackendError as e:
        assert "mismatched collective" in str(e) and "rank 0: all_reduce of 4 float32" in str(e) and \
            "rank 1: all_reduce of 5 float32" in str(e), str(e)
    w = sdk.ones([4], dtype=sdk.float64 if r else sdk.float32, device=dev)
    try:
        dist.broadcast(w, src=0)
        raise AssertionError("mismatched broadcast did not raise")
    except DistBackendError as e:
        assert "float64" in str(e) and "float32" in str(e), str(e)
    # an injected kernel fault drops the collective's kernel on rank 0: rank 1 hears of it, no hang
    v = sdk.ones([4], device=dev)
    _runtime.synchronize(dev)
    if r == 0:  # the next kernel of the device is the collective's
        device_sim.inject("kernel_fault", device=0, count=1)
    try:
        dist.all_reduce(v)
        raise AssertionError("all_reduce with a faulted kernel did not raise")
    except DistBackendError as e:
        assert ("did not run on rank 0" in str(e)) or (r == 0 and "kernel fault" in str(e)), str(e)
    dist.all_reduce(v)
    assert v.cpu().tolist() == [float(n)] * 4
    print(f"RANK {r} checks passed", flush=True)
    _die(sdk, dist)


def _die(sdk, dist) -> None:
    import os

    r = dist.get_rank()
    x = sdk.ones([1 << 16], device="accel")
    dist.all_reduce(x)
    if r == 1:
        os._exit(7)  # gone without a word: only its heartbeats stop
    try:
        dist.all_reduce(x)  # simccl's kernel waits for rank 1 in the fabric: the wait must not hang
    except dist.DistBackendError as e:
        print("rank 0 told:", e, flush=True)
        raise


if __name__ == "__main__":
    import backend_sdk.distributed as _d

    {"collectives": _collectives_case, "faults": _faults_case}[sys.argv[1]]()
    print(f"RANK {_d.get_rank()} OK", flush=True)
    _d.destroy_process_group()
