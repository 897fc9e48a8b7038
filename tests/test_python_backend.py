"""The Python face of the device contract (backend_sdk.utils.python_device) and the pure-Python sample
backend (samples/python_backend, `pyaccel`). Renaming and attaching are once per process, so every
scenario runs in a subprocess."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

from _helpers import ROOT, run_python as _run_python, subprocess_env

SAMPLE = ROOT / "samples" / "python_backend"


def _env() -> dict:
    return subprocess_env(SAMPLE)


def run_python(code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return _run_python(code, SAMPLE, timeout=timeout)


def test_pyaccel_tensors_kernels_and_fallback():
    r = run_python("""
        import warnings
        import numpy as np
        import backend_sdk as sdk
        import pyaccel
        assert sdk.pyaccel is not None and pyaccel.device_count() == 2
        assert pyaccel.get_device_name(1) == "pyaccel_numpy"
        a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
        a = sdk.from_numpy(a_np).to("pyaccel:1")
        assert a.device == sdk.device("pyaccel:1") and a.is_pyaccel and "device='pyaccel:1'" in repr(a)
        b = a.t()                                   # a view: CompositeExplicitAutograd
        np.testing.assert_array_equal((a + 1).cpu().numpy(), a_np + 1)
        np.testing.assert_array_equal((a * a).relu().neg().cpu().numpy(), -(a_np * a_np))
        np.testing.assert_array_equal(sdk.mm(a, b).cpu().numpy(), a_np @ a_np.T)
        assert sdk.sum(a).item() == a_np.sum()
        assert (a + 1).device == sdk.device("pyaccel:1")   # results on the inputs' device
        import pytest
        with pytest.raises(ValueError, match="same device, but found at least two devices, pyaccel:1 and pyaccel:0"):
            a + sdk.ones(3, 4, device="pyaccel:0")
        v = a._version
        a.add_(2)
        assert a._version > v                       # in-place kernels bump the version (written with copy_)
        np.testing.assert_array_equal(a.cpu().numpy(), a_np + 2)
        a.fill_(5)
        np.testing.assert_array_equal(a.cpu().numpy(), np.full((3, 4), 5, np.float32))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = a.sin()                             # not implemented: the CPU fallback serves it
        assert any("fall back" in str(x.message) for x in w), [str(x.message) for x in w]
        np.testing.assert_allclose(s.cpu().numpy(), np.sin(np.full((3, 4), 5, np.float32)), rtol=1e-6)
        # kernels written against the SDK's dispatcher: the table says which are native
        from backend_sdk.testing.conformance import operator_coverage
        cov = operator_coverage("pyaccel")
        assert cov.kinds["aten::add.Tensor"] == "native" and cov.kinds["aten::sin"] == "fallback"
        assert cov.kinds["aten::empty.memory_format"] == "native" and cov.kinds["aten::view"] == "composite"
        print("OK")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_python_device_statuses_become_typed_errors():
    r = run_python("""
        import pytest
        import backend_sdk as sdk
        from backend_sdk.utils import python_device as pd

        class Flaky(pd.PythonDevice):
            name = "flaky"
            broken = False
            def stream_synchronize(self, stream):
                if self.broken:
                    raise KeyError("a bug in the vendor's Python code")
                super().stream_synchronize(stream)

        sdk.utils.rename_privateuse3_backend("flaky")
        dev = Flaky(device_count=1, total_memory=16 << 20)
        pd.attach_python_device("flaky", dev)
        pd.attach_python_device("flaky", dev)                     # the same device again: a no-op
        with pytest.raises(ValueError, match="already has a device attached"):
            pd.attach_python_device("flaky", pd.PythonDevice())
        pd.register_contract_kernels("flaky")
        with pytest.raises(ValueError, match="contract-backed kernels of 'flaky' are already registered"):
            pd.register_contract_kernels("flaky")
        pd.register_cpu_fallback("flaky")
        with pytest.raises(ValueError, match="multiple backend fallbacks for the same dispatch key"):
            pd.register_cpu_fallback("flaky")
        with pytest.raises(ValueError, match="'cpu' is not an accelerator backend"):
            pd.register_cpu_fallback("cpu")
        with pytest.raises(ValueError, match="device_count must be in 0..64, got -1"):
            pd.PythonDevice(device_count=-1)
        x = sdk.empty(16, device="flaky")
        from backend_sdk import _runtime as rt
        # a Python exception inside a device call never crosses the C boundary: it becomes a status
        dev.broken = True
        with pytest.raises(sdk.AcceleratorError, match="KeyError: .a bug in the vendor's Python code"):
            rt.current_stream("flaky:0").synchronize()
        dev.broken = False
        rt.current_stream("flaky:0").synchronize()
        # out of memory: the device refuses, the caching allocator raises OutOfMemoryError
        with pytest.raises(sdk.OutOfMemoryError, match="Tried to allocate"):
            sdk.empty(1 << 23, device="flaky")  # 32 MiB
        # an invalid device index is an IndexError naming the ordinal
        with pytest.raises(IndexError, match="Invalid device ordinal"):
            sdk.empty(1, device="flaky:3")
        # faults surface at the next synchronising call, then the device works again
        dev.inject_fault(0, "injected")
        with pytest.raises(sdk.AcceleratorError, match="kernel fault: injected on device 0 of flaky"):
            rt.synchronize("flaky:0")
        rt.synchronize("flaky:0")
        # memory is host-addressable: the tensor's bytes are the device's numpy buffer
        y = sdk.tensor([1.0, 2.0, 3.0]).to("flaky")
        view = pd.tensor_as_numpy(y)
        assert view.tolist() == [1.0, 2.0, 3.0]
        assert dev.mem_get_info(0)[0] < (16 << 20)
        with pytest.raises(TypeError, match="expected a PythonDevice"):
            pd.attach_python_device("flaky", object())
        print("OK")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_pyaccel_passes_the_conformance_suite():
    r = subprocess.run([sys.executable, "-m", "backend_sdk", "conformance", "pyaccel"], cwd=str(ROOT), env=_env(),
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "operator coverage on 'pyaccel'" in out and " 0 failed" in out, out
    if importlib.util.find_spec("backend_sdk.testing._opinfo") is None:
        return  # no operator database in this build: the operators area skips
    # the kernels pyaccel implements were checked (a "passed" row), the rest is served by the fallback
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if line[:1].isalpha() and
            len(line.split()) == 6}
    assert rows["add"][-1] == "passed" and rows["mm"][-1] == "passed", out
    assert int(rows["sin"][3]) >= 1 and rows["sin"][-1] == "-", out
