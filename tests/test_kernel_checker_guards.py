"""Writes past an allocation, caught by the kernel checker (Note [Kernel checker],
csrc/backend_sdk/dispatch/detail/KernelChecker.h) through the caching allocator's guard regions
(Note [Allocator guard regions], csrc/backend_sdk/runtime/CachingAllocator.cpp).

The overrunning kernels launch device_sim's built-in ``axpb_f32`` kernel on the current stream with a
larger ``n`` than their output holds, as a vendor kernel with a wrong size computation would; each
overrun stays inside the 512-byte block (it overwrites only the guard), so no other tensor is hurt."""
from __future__ import annotations

import pytest

import accel
import backend_sdk as sdk
import device_sim
from backend_sdk.library import Library
from backend_sdk.testing import check_kernels, kernel_checks_enabled

from _helpers import kernel_checker_ops

_sim = device_sim.lib()
GUARD = 64  # kGuardBytes


def _axpb(y: sdk.Tensor, x: sdk.Tensor, n: int) -> None:
    """y[i] = 2 * x[i] for i < n, on the current stream of y's device."""
    stream = accel.current_stream(y.device).native_handle
    assert _sim.device_sim_kernel_axpb_f32(stream, y.data_ptr(), x.data_ptr(), n, 2.0, 0.0) == 0


@pytest.fixture
def guarded():
    """kgrd::scale (functional) and kgrd::scale_ (in-place) with Meta kernels, the checker on, and a Library
    for accel kernels registered while it is on."""
    with kernel_checker_ops("kgrd") as impls:
        yield impls


def _source(n: int = 64) -> sdk.Tensor:
    return sdk.arange(n, dtype=sdk.float32).to("accel")


def test_a_kernel_writing_past_its_result_is_caught(guarded):
    source = _source()  # long enough that the kernel reads only values (8, 10, 12: no 0xA5 byte) it owns

    def overrun_result(x):
        y = sdk.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
        _axpb(y, source, x.numel() + 3)  # a size computation off by three elements
        return y

    guarded.impl("scale", overrun_result)
    with pytest.raises(RuntimeError, match=(
            r"kernel check \(BACKEND_SDK_CHECK_KERNELS\): accel's kernel for kgrd::scale wrote past the end of "
            r"result 0: 12 of the 64 guard bytes after the end of its allocation of 16 bytes at 0x[0-9a-f]+ on "
            r"accel:0 were overwritten \(bytes \+0 to \+11 past the end\)")):
        sdk.ops.kgrd.scale(_source()[:4].clone())


def test_a_kernel_writing_past_its_argument_is_caught(guarded):
    source = _source()
    guarded.impl("scale_", lambda x: (_axpb(x, source, x.numel() + 1), x)[1])
    x = _source(8)
    with pytest.raises(RuntimeError, match=r"accel's kernel for kgrd::scale_ wrote past the end of argument 'x': "
                                           r"4 of the 64 guard bytes after the end of its allocation of 32 bytes"):
        sdk.ops.kgrd.scale_(x)


def test_a_correct_call_after_an_overrun_passes(guarded):
    calls = []
    source = _source()

    def scale(x):
        y = sdk.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
        _axpb(y, source, x.numel() + (1 if not calls else 0))
        calls.append(1)
        return y

    guarded.impl("scale", scale)
    x = _source(8)
    with pytest.raises(RuntimeError, match="wrote past the end of result 0"):
        sdk.ops.kgrd.scale(x)
    # The guard is restored after the report (and set again at each allocation): the next, correct call passes.
    assert sdk.ops.kgrd.scale(x).cpu().tolist() == [2.0 * i for i in range(8)]


def test_no_guards_while_the_checker_is_off():
    before = kernel_checks_enabled()
    defs = Library("kgrd_off", "DEF")
    defs.define("scale(Tensor x) -> Tensor")
    defs.impl("scale", lambda x: sdk.empty(tuple(x.shape), dtype=x.dtype, device="meta"), "Meta")
    check_kernels(True)
    impls = Library("kgrd_off", "IMPL", "accel")
    source = _source()

    def overrun(x):
        y = sdk.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
        _axpb(y, source, x.numel() + 2)  # inside the 512-byte block: harmless without a guard
        return y

    impls.impl("scale", overrun)
    try:
        check_kernels(False)
        assert sdk.ops.kgrd_off.scale(_source(4)).shape == (4,)  # unchecked, unguarded: goes through
    finally:
        impls._destroy()
        defs._destroy()
        check_kernels(before)


def test_guards_keep_memory_allocated_as_rounded_and_add_a_block_only_at_512_multiples():
    before_switch = kernel_checks_enabled()
    check_kernels(True)
    try:
        accel.synchronize()
        start = accel.memory_allocated()
        x = sdk.empty(128 - 32, dtype=sdk.float32, device="accel")  # 384 bytes + the guard: one 512-byte block
        assert accel.memory_allocated() - start == 512
        y = sdk.empty(128, dtype=sdk.float32, device="accel")  # 512 bytes + the guard: two blocks' worth
        assert accel.memory_allocated() - start == 512 + 1024
        del x, y
        assert accel.memory_allocated() == start
    finally:
        check_kernels(before_switch)
    start = accel.memory_allocated()
    y = sdk.empty(128, dtype=sdk.float32, device="accel")  # unguarded again: 512 bytes
    assert accel.memory_allocated() - start == 512
    del y


def test_checked_kernels_during_graph_capture(guarded):
    # Note [Allocator guard regions]: a block allocated during a capture gets no guard (its memset would only be
    # recorded) and no guard is read back while capturing (a synchronous copy is not allowed then).
    guarded.impl("scale", lambda x: x * 2)
    x = _source(8)
    s = sdk.Stream()
    g = sdk.accelerator.Graph()
    with s, g:
        y = sdk.ops.kgrd.scale(x)  # its result comes from the graph's pool
    g.replay()
    assert y.cpu().tolist() == [2.0 * i for i in range(8)]
    assert sdk.ops.kgrd.scale(x).cpu().tolist() == y.cpu().tolist()  # checked again once the capture is over


def test_the_environment_variable_turns_the_guards_on():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("import backend_sdk, accel\n"
            "start = accel.memory_allocated()\n"
            "y = backend_sdk.empty(128, device='accel')\n"  # 512 bytes + the guard
            "print(accel.memory_allocated() - start)\n")
    env = dict(os.environ, BACKEND_SDK_CHECK_KERNELS="1",
               PYTHONPATH=os.pathsep.join([str(root), str(root / "samples" / "accel_sim")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1024"], r.stdout + r.stderr
