"""backend_sdk.testing.instantiate_device_type_tests and its decorators (PyTorch's common_device_type), and
the device-generic operator tests run on pyaccel (PrivateUse2) in a process that loads it."""
from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import testing
from backend_sdk.testing import (available_device_types, deviceCountAtLeast, dtypes, dtypesIfCPU, expectedFailure,
                                 instantiate_device_type_tests, onlyCPU, onlyOn, skipCPUIf, skipIf)

ROOT = Path(__file__).resolve().parents[1]

# The operator test files written with instantiate_device_type_tests (their classes are checked below).
DEVICE_GENERIC_FILES = ["tests/test_ops_nn_kernels.py", "tests/test_ops_reduce.py", "tests/test_ops_linalg.py",
                        "tests/test_ops_loss.py", "tests/test_ops_composite.py", "tests/test_ops_elementwise.py",
                        "tests/test_ops_indexing.py"]


def _instantiate(cls: type, **kw) -> dict:
    scope = {cls.__name__: cls}
    instantiate_device_type_tests(cls, scope, **kw)
    return scope


def _run(cls: type, name: str, *args, **kwargs):
    """Call an instantiated test as a runner would; return "skipped: reason" on SkipTest."""
    try:
        return getattr(cls(), name)(*args, **kwargs)
    except unittest.SkipTest as e:
        return f"skipped: {e}"


def test_the_process_has_cpu_and_accel():
    types = available_device_types()
    assert types[0] == "cpu" and "accel" in types
    assert not any(t.startswith("privateuse") for t in types)  # unrenamed slots belong to the tests using them


def test_classes_and_tests_are_named_as_pytorch_names_them():
    class TestFooDeviceType:
        def test_bar(self, device):
            return device

        def helper(self):
            return 1

    scope = _instantiate(TestFooDeviceType)
    assert "TestFooDeviceType" not in scope  # the generic class is not collected
    assert {"TestFooCPU", "TestFooACCEL"} <= set(scope)
    cpu, acc = scope["TestFooCPU"], scope["TestFooACCEL"]
    assert cpu.device_type == "cpu" and acc.device_type == "accel"
    assert _run(cpu, "test_bar_cpu") == "cpu"
    assert _run(acc, "test_bar_accel") == f"accel:{backend_sdk.accel.current_device()}"
    assert getattr(acc, "test_bar") is None  # the generic test is hidden, not run without a device
    assert acc().helper() == 1  # non-test members are inherited
    assert acc.test_bar_accel.__name__ == "test_bar_accel"


def test_dtypes_make_one_test_per_dtype_and_device_type_overrides():
    class TestDtDeviceType:
        @dtypes(backend_sdk.float32, backend_sdk.int64)
        @dtypesIfCPU(backend_sdk.float64)
        def test_d(self, device, dtype):
            return backend_sdk.ones(2, dtype=dtype, device=device).dtype

        @dtypes((backend_sdk.float32, backend_sdk.int8))
        def test_pair(self, device, dtype):
            return dtype

    scope = _instantiate(TestDtDeviceType)
    cpu, acc = scope["TestDtCPU"], scope["TestDtACCEL"]
    assert _run(cpu, "test_d_cpu_float64") == backend_sdk.float64
    assert not hasattr(cpu, "test_d_cpu_float32")  # the cpu list replaces the "all" list
    assert _run(acc, "test_d_accel_float32") == backend_sdk.float32
    assert _run(acc, "test_d_accel_int64") == backend_sdk.int64
    assert _run(acc, "test_pair_accel_float32_int8") == (backend_sdk.float32, backend_sdk.int8)
    with pytest.raises(ValueError, match="dtypes redefinition for all"):
        dtypes(backend_sdk.float32)(dtypes(backend_sdk.int8)(lambda self, device, dtype: None))


def test_dtypes_without_a_dtype_argument_is_an_error():
    class TestBadDeviceType:
        @dtypes(backend_sdk.float32)
        def test_x(self, device):
            pass

    with pytest.raises(TypeError, match="decorated with @dtypes but takes no 'dtype' argument"):
        _instantiate(TestBadDeviceType)


def test_only_on_and_skips():
    class TestSkDeviceType:
        @onlyOn("accel")
        def test_a(self, device):
            return "ran"

        @onlyCPU
        def test_c(self, device):
            return "ran"

        @skipCPUIf(True, "no cpu today")
        def test_s(self, device):
            return "ran"

        @skipIf(lambda test: test.device_type == "accel", "accel skipped")
        def test_callable(self, device):
            return "ran"

        @onlyOn(["cpu", "accel"])
        def test_list(self, device):
            return "ran"

    scope = _instantiate(TestSkDeviceType)
    cpu, acc = scope["TestSkCPU"], scope["TestSkACCEL"]
    assert _run(cpu, "test_a_cpu") == "skipped: Only runs on accel" and _run(acc, "test_a_accel") == "ran"
    assert _run(cpu, "test_c_cpu") == "ran" and _run(acc, "test_c_accel") == "skipped: Only runs on cpu"
    assert _run(cpu, "test_s_cpu") == "skipped: no cpu today" and _run(acc, "test_s_accel") == "ran"
    assert _run(cpu, "test_callable_cpu") == "ran" and _run(acc, "test_callable_accel") == "skipped: accel skipped"
    assert _run(cpu, "test_list_cpu") == _run(acc, "test_list_accel") == "ran"


def test_device_count_at_least_passes_every_device():
    n = backend_sdk.accel.device_count()

    class TestMultiDeviceType:
        @deviceCountAtLeast(2)
        def test_two(self, devices):
            return devices

        @deviceCountAtLeast(n + 1)
        def test_too_many(self, devices):
            return devices

    scope = _instantiate(TestMultiDeviceType)
    acc = scope["TestMultiACCEL"]
    if n >= 2:
        got = _run(acc, "test_two_accel")
        assert got[0] == f"accel:{backend_sdk.accel.current_device()}" and len(got) == n and len(set(got)) == n
    assert _run(scope["TestMultiCPU"], "test_two_cpu") == "skipped: fewer than 2 devices detected"
    assert _run(acc, "test_too_many_accel") == f"skipped: fewer than {n + 1} devices detected"


def test_expected_failure_fails_on_an_unexpected_pass():
    class TestXfDeviceType:
        @expectedFailure("accel")
        def test_broken_on_accel(self, device):
            assert device == "cpu"

        @expectedFailure("cpu")
        def test_fine(self, device):
            pass

    scope = _instantiate(TestXfDeviceType)
    assert _run(scope["TestXfACCEL"], "test_broken_on_accel_accel").startswith("skipped: expected failure")
    assert _run(scope["TestXfCPU"], "test_broken_on_accel_cpu") is None
    with pytest.raises(AssertionError, match="unexpected success: test_fine passed on cpu"):
        _run(scope["TestXfCPU"], "test_fine_cpu")


def test_only_for_except_for_and_environment(monkeypatch):
    class TestSelDeviceType:
        def test_x(self, device):
            pass

    assert set(_instantiate(TestSelDeviceType, only_for=["accel"])) == {"TestSelACCEL"}
    assert "TestSelCPU" not in _instantiate(TestSelDeviceType, except_for=["cpu"])
    monkeypatch.setenv("PYTORCH_TESTING_DEVICE_ONLY_FOR", "cpu")
    assert set(_instantiate(TestSelDeviceType)) == {"TestSelCPU"}
    monkeypatch.delenv("PYTORCH_TESTING_DEVICE_ONLY_FOR")
    monkeypatch.setenv("PYTORCH_TESTING_DEVICE_EXCEPT_FOR", "accel")
    assert "TestSelACCEL" not in _instantiate(TestSelDeviceType)
    with pytest.raises(TypeError, match="expected a class"):
        instantiate_device_type_tests(lambda: None, {})


def test_the_names_are_public():
    for name in ["instantiate_device_type_tests", "dtypes", "onlyOn", "skipIf", "deviceCountAtLeast"]:
        assert name in testing.__all__ and getattr(testing, name).__doc__


class TestFixturesDeviceType:
    """pytest fixtures and parametrize marks reach instantiated tests (the signature pytest sees has no
    device/dtype parameter)."""

    @pytest.mark.parametrize("k", [1, 2])
    @dtypes(backend_sdk.float32)
    def test_fixture_and_mark(self, device, dtype, ns, k):
        assert ns.startswith("test_ns_") and k in (1, 2)
        x = backend_sdk.ones(k, dtype=dtype, device=device)
        assert x.device.type == self.device_type and x.sum().item() == k


instantiate_device_type_tests(TestFixturesDeviceType, globals())


def test_instantiated_classes_exist_in_the_converted_files():
    assert "TestFixturesACCEL" in globals() and "TestFixturesDeviceType" not in globals()
    for rel in DEVICE_GENERIC_FILES:
        text = (ROOT / rel).read_text()
        assert "instantiate_device_type_tests(" in text, rel


def test_operator_tests_run_on_pyaccel():
    """The same definitions run on the Python-only backend: a process importing pyaccel (Note [Extra test
    backends] in tests/conftest.py), only the PYACCEL classes selected."""
    env = dict(os.environ, BACKEND_SDK_TEST_BACKENDS="pyaccel",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "samples" / "accel_sim"),
                                           os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "PYACCEL",
                        *DEVICE_GENERIC_FILES, "tests/test_device_generic.py::TestFixturesPYACCEL"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    tail = r.stdout[-3000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    passed = int(tail.split(" passed")[0].split()[-1])
    assert passed >= 40 and "failed" not in tail, tail
