"""Broken backends the conformance suite must fail (Note [Runtime checks run on the device],
backend_sdk/testing/conformance/runtime_checks.py).

Each backend is the accel sample (device_sim and libaccel_sim.so's kernels) with one thing broken,
written as a vendor package in a temporary directory: its device table is device_sim's, copied, with
one slot replaced by a Python function (a no-op stream_wait_event, a stream_synchronize that returns
at once, an event_query that always reports completion), or its fault hook doing nothing, or a kernel
that returns the wrong shape, or one that writes past its result (caught by the kernel checker's guard
regions, Note [Allocator guard regions]), or a misspelled registration. The suite runs on each in a subprocess
(one PrivateUse1 backend per process); the intact copy must pass, every broken one must fail, and
the failing check must be the one that names the breakage.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACCEL_KERNELS = ROOT / "samples" / "accel_sim" / "accel" / "libaccel_sim.so"

pytestmark = pytest.mark.skipif(not ACCEL_KERNELS.exists(), reason="needs the accel sample's kernels (build it)")

PACKAGE = textwrap.dedent(
    '''
    """A copy of the accel sample with one thing broken: {breakage}."""
    import ctypes
    import numpy as np

    import backend_sdk as sdk
    import device_sim
    from backend_sdk import _C, utils

    NAME = "{name}"
    BREAK = "{breakage}"
    utils.rename_privateuse1_backend(NAME)


    class Instance(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_size_t), ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                    ("api", ctypes.c_void_p), ("context", ctypes.c_void_p)]


    _lib = ctypes.CDLL(device_sim.library_path())
    _instance = Instance(ctypes.sizeof(Instance), 2, 1, None, None)
    assert _lib.sdk_device_entry(ctypes.byref(_instance)) == 0
    _size = ctypes.c_size_t.from_address(_instance.api).value
    _table = ctypes.create_string_buffer(_size)
    ctypes.memmove(_table, _instance.api, _size)
    _offsets = {{slot["name"]: slot["offset"] for slot in _C._runtime._device_api_slots()}}
    _keep = [_table, _lib]


    def _replace(slot, fn, *argtypes):
        callback = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(fn)
        _keep.append(callback)
        ctypes.c_void_p.from_buffer(_table, _offsets[slot]).value = ctypes.cast(callback, ctypes.c_void_p).value


    if BREAK == "stream_wait_event":
        _replace("stream_wait_event", lambda ctx, stream, event: 0, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    elif BREAK == "stream_synchronize":
        _replace("stream_synchronize", lambda ctx, stream: 0, ctypes.c_void_p, ctypes.c_void_p)
    elif BREAK == "event_query":
        _replace("event_query", lambda ctx, event: 0, ctypes.c_void_p, ctypes.c_void_p)

    _C._runtime._attach_device_api(NAME, ctypes.addressof(_table), NAME, _keep, _instance.context)
    sdk.ops.load_library({kernels!r})
    utils.generate_methods_for_privateuse1_backend()
    _module = utils.generate_device_module(NAME)
    globals().update({{n: getattr(_module, n) for n in _module.__all__}})


    def conformance_inject_fault(device_index=0):
        if BREAK != "fault_hook":
            device_sim.inject("kernel_fault", device_index)


    if BREAK == "wrong_shape":
        def _mm_transposed(a, b):
            out = sdk.empty(b.shape[1], a.shape[0], dtype=a.dtype, device=a.device)
            return out.copy_(sdk.mm(a.cpu(), b.cpu()).t().contiguous())

        _wrong = sdk.library.Library("aten", "IMPL", NAME)
        _wrong.impl("mm", _mm_transposed)
    elif BREAK == "writes_past":
        # exp computes the right values but launches one element too many into its result, as a kernel with
        # an off-by-one size would (device_sim's axpb kernel on the current stream, from a longer source).
        _sim = device_sim.lib()

        def _exp_overrun(x):
            r = sdk.exp(x.cpu())
            out = sdk.empty(tuple(r.shape), dtype=r.dtype, device=x.device)
            if r.dtype != sdk.float32 or r.numel() == 0:
                return out.copy_(r)
            longer = sdk.from_numpy(np.append(r.contiguous().numpy().ravel(), np.float32(1.0))).to(x.device)
            stream = _module.current_stream(x.device).native_handle
            assert _sim.device_sim_kernel_axpb_f32(stream, out.data_ptr(), longer.data_ptr(), r.numel() + 1,
                                                   1.0, 0.0) == 0
            return out

        _over = sdk.library.Library("aten", "IMPL", NAME)
        _over.impl("exp", _exp_overrun)
    elif BREAK == "misspelled":
        _misspelled = sdk.library.Library("aten", "IMPL", NAME)
        _misspelled.impl("gelu_fast", lambda x: x)
    '''
)


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _start(tmp_path: Path, breakage: str, area: str, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    name = "broken_" + breakage
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PACKAGE.format(name=name, breakage=breakage, kernels=str(ACCEL_KERNELS)))
    cmd = [sys.executable, "-m", "backend_sdk", "conformance", name, "--area", area, *extra]
    return subprocess.Popen(cmd, cwd=str(tmp_path), env=_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


# breakage -> (area, extra arguments, text the output must contain: the check that names it). -x: a
# backend whose synchronize lies corrupts host memory once the checks go on (a copy engine writing
# into a freed staging buffer), so each run stops at its first failure and prints it.
CASES = {
    "stream_wait_event": ("runtime", ("--", "-x"), "did not make the waiting stream wait"),
    "stream_synchronize": ("runtime", ("--", "-x"), "after Stream.synchronize()"),
    "event_query": ("runtime", ("--", "-x"), "Event.query() reports completion while the work recorded before it "
                                              "is pending"),
    "fault_hook": ("runtime", ("--", "-x"), "an injected fault did not surface"),
    "wrong_shape": ("operators", ("--", "--conformance-op", "mm", "-x"), "shape"),
    "writes_past": ("operators", ("--", "--conformance-op", "exp", "-x"), "wrote past the end of result 0"),
    "misspelled": ("runtime", (), "aten::gelu_fast does not exist"),
}


def test_broken_backends_fail_and_the_intact_copy_passes(tmp_path):
    # All at once (each waits mostly on its device's worker threads): the intact copy, then the broken ones.
    runs = {"none": _start(tmp_path, "none", "runtime")}
    for breakage, (area, extra, _) in CASES.items():
        runs[breakage] = _start(tmp_path, breakage, area, extra)
    outputs = {}
    for breakage, proc in runs.items():
        out, _ = proc.communicate(timeout=600)
        outputs[breakage] = (proc.returncode, out)
    code, out = outputs.pop("none")
    assert code == 0 and "0 failed" in out, out
    for breakage, (code, out) in outputs.items():
        expected = CASES[breakage][2]
        assert code != 0, f"the conformance suite passed a backend with a broken {breakage}:\n{out}"
        assert expected in out, f"broken {breakage}: the failure does not name it ({expected!r}):\n{out}"


# ---- what a correct backend must not fail on, and messages that name the backend under test ----

def test_float_results_of_integer_inputs_use_float_tolerances():
    import numpy as np

    import backend_sdk as sdk
    from backend_sdk.testing.conformance.operator_checks import compare_results
    from backend_sdk.testing._opinfo import _DEFAULT_TOL

    x = np.arange(1, 50, dtype=np.int64)
    expected = sdk.from_numpy(np.exp(x.astype(np.float32)))           # the CPU's exp of an int64 input
    actual = sdk.from_numpy(np.nextafter(np.exp(x.astype(np.float32)), np.float32(np.inf)))  # 1 ulp off
    exact = (0.0, 0.0)  # the tolerance of the int64 *input* dtype
    assert "first mismatching element" in compare_results(expected, actual, "cpu", *exact)
    by_result = lambda dtype: _DEFAULT_TOL["float32"] if dtype == sdk.float32 else exact  # noqa: E731
    assert compare_results(expected, actual, "cpu", *exact, tolerance=by_result) is None
    off = sdk.from_numpy(np.exp(x.astype(np.float32)) * np.float32(1.001))
    assert "first mismatching element" in compare_results(expected, off, "cpu", *exact, tolerance=by_result)


def test_opcheck_autograd_message_names_the_backend_under_test():
    import backend_sdk as sdk
    from backend_sdk.library import Library
    from backend_sdk.testing import _opcheck

    lib = Library("opmsg", "DEF")
    try:
        lib.define("leaky(Tensor x) -> Tensor")
        lib.impl("leaky", lambda x: sdk.ones(tuple(x.shape), device=x.device, requires_grad=True), "accel")
        x = sdk.ones(2, device="accel", requires_grad=True)
        with pytest.raises(AssertionError, match=r"non-Autograd dispatch key \(CPU, Accel, \.\.\.\)"):
            _opcheck.test_autograd_registration(sdk.ops.opmsg.leaky.default, (x,), {})
    finally:
        lib._destroy()
