"""Issue 12 regressions in the device runtime: waits that hold the GIL, fork during device work,
faults that must travel with cross-device copies.

Note [Blocking waits release the GIL] (csrc/backend_sdk/runtime/detail/BlockingWait.h), Note [Simulated faults]
(device_sim/csrc/SimDevice.h), Note [Fork safety] (csrc/backend_sdk/runtime/DeviceRegistry.cpp).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import accel
import backend_sdk
import device_sim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("wait", ["x.cpu()", "x.item()", "x.tolist()", "x.to('cpu')",
                                  "x.to('accel:1').cpu()"])
def test_host_waits_release_the_gil_for_queued_python_work(wait):
    # Finding 3: a Python host function queued before the copy needs the GIL to run; the waiting
    # thread must not hold it. Run in a child so that a regression is a timeout, not a hung suite.
    r = _run(f"""
        import time, accel, backend_sdk
        x = backend_sdk.ones(1, device="accel:0")
        ran = []
        def host_fn():
            time.sleep(0.05)
            ran.append(1)
        for _ in range(3):
            accel.current_stream(0).launch_host_func(host_fn)
            {wait}
        assert ran == [1, 1, 1], ran
        print("ok")
    """, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_synchronize_from_a_python_kernel_thread_with_the_gil():
    # The same wait reached from inside a Python kernel (which runs holding the GIL).
    r = _run("""
        import accel, backend_sdk
        from backend_sdk import library
        lib = library.Library("gilwait", "DEF")
        lib.define("peek(Tensor x) -> Tensor")
        ran = []
        def peek(x):
            accel.current_stream(0).launch_host_func(lambda: ran.append(1))
            return backend_sdk.tensor([x.cpu().tolist()[0] + 1.0])
        lib.impl("peek", peek, "CompositeExplicitAutograd")
        out = backend_sdk.ops.gilwait.peek(backend_sdk.full((1,), 4.0, device="accel:0"))
        assert out.tolist() == [5.0] and ran == [1]
        print("ok")
    """, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_fault_on_source_device_surfaces_on_the_copy_destination():
    # Finding 9: a kernel fault on accel:0, then a copy to accel:1 and back to the host: the host
    # copy must raise instead of returning the stale destination bytes.
    x = backend_sdk.ones(1000, device="accel:0")
    accel.synchronize()
    device_sim.inject("kernel_fault", 0, count=1)
    try:
        y = x * 2
        with pytest.raises(backend_sdk.AcceleratorError, match="device 0"):
            y.to("accel:1").cpu()
        with pytest.raises(backend_sdk.AcceleratorError):
            accel.synchronize(0)  # the source device still reports its own fault
    finally:
        for d in range(accel.device_count()):
            device_sim.reset_device(d)
    # Both devices are usable again and copies carry data.
    z = (x * 3).to("accel:1").cpu()
    np.testing.assert_array_equal(z.numpy(), np.full(1000, 3.0, np.float32))


def test_copy_between_healthy_devices_is_unaffected_by_an_earlier_recovered_fault():
    device_sim.inject("kernel_fault", 0, count=1)
    _ = backend_sdk.ones(4, device="accel:0") * 2
    with pytest.raises(backend_sdk.AcceleratorError):
        accel.synchronize(0)
    w = (backend_sdk.ones(4, device="accel:0") + 1).to("accel:1").cpu()
    assert w.tolist() == [2.0] * 4


def test_fork_while_a_device_worker_runs_blas_does_not_hang_the_parent():
    # Finding 4: os.fork() while a device_sim worker is inside an OpenBLAS matmul hung the parent in
    # OpenBLAS's fork handler (Note [BLAS and fork], csrc/backend_sdk/ops/Blas.cpp). The child gets the documented
    # "Cannot re-initialize" error when it touches the device.
    r = _run("""
        import os, threading, time, accel, backend_sdk
        a = backend_sdk.ones(384, 384, device="accel:0")
        stop = threading.Event()
        def work():
            while not stop.is_set():
                assert (a @ a).sum().item() == 384.0 ** 3
        t = threading.Thread(target=work, daemon=True)
        t.start()
        for _ in range(20):
            time.sleep(0.03)
            pid = os.fork()
            if pid == 0:
                try:
                    backend_sdk.ones(1, device="accel:0")
                    os._exit(3)
                except RuntimeError as e:
                    os._exit(0 if "Cannot re-initialize" in str(e) else 4)
            _, status = os.waitpid(pid, 0)
            assert os.WEXITSTATUS(status) == 0, os.WEXITSTATUS(status)
        stop.set()
        t.join()
        print("ok")
    """, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
