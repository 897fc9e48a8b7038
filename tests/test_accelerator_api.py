"""backend_sdk.accelerator (torch.accelerator's API) on accel, and on a process with no backend."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import typing
import warnings

import pytest

import accel
import backend_sdk as sdk
from backend_sdk import accelerator as acc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _restore_device():
    before = acc.current_device_index()
    yield
    acc.set_device_index(before)
    sdk._runtime.set_stream(sdk._runtime.default_stream("accel:0"))
    sdk._runtime.set_stream(sdk._runtime.default_stream("accel:1"))


def test_current_accelerator_is_accel():
    d = acc.current_accelerator()
    assert d == sdk.device("accel") and d.index is None
    assert acc.current_accelerator(check_available=True) == d
    assert acc.is_available() and acc.device_count() == accel.device_count() == 2


def test_set_and_get_device_index():
    acc.set_device_index(1)
    assert acc.current_device_index() == 1 and accel.current_device() == 1
    assert sdk.randn(2, 3, device="accel").device == sdk.device("accel:1")
    acc.set_device_index("accel:0")
    assert acc.current_device_index() == 0
    acc.set_device_index(-1)  # negative: a no-op, as PyTorch
    assert acc.current_device_index() == 0


def test_set_device_index_bad_input():
    with pytest.raises(RuntimeError, match=r"The device index is out of range. It must be in \[0, 2\), but got 2"):
        acc.set_device_index(2)
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator accel"):
        acc.set_device_index("cpu")
    with pytest.raises(ValueError, match="with a specified index"):
        acc.set_device_index("accel")
    assert acc.current_device_index() == 0


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match="current_device_index"):
        assert acc.current_device_idx() == acc.current_device_index()
    with pytest.warns(FutureWarning, match="set_device_index"):
        acc.set_device_idx(1)
    assert acc.current_device_index() == 1


def test_device_index_context_restores_also_on_error():
    with acc.device_index(None):
        assert acc.current_device_index() == 0
    with pytest.raises(KeyError):
        with acc.device_index(1):
            assert acc.current_device_index() == 1
            with acc.device_index(0):
                assert acc.current_device_index() == 0
                raise KeyError("x")
    assert acc.current_device_index() == 0


def test_current_stream_set_stream_and_synchronize():
    s1 = sdk.Stream("accel:1")
    acc.set_stream(s1)  # also makes its device current
    assert acc.current_device_index() == 1
    cur = acc.current_stream()
    assert cur == s1 and type(cur) is sdk.Stream and hasattr(cur, "wait_stream")
    assert acc.current_stream(0) == sdk._runtime.default_stream("accel:0")
    x = sdk.ones(1000, device="accel")
    (x + x)
    acc.synchronize()
    acc.synchronize("accel:0")
    with pytest.raises(RuntimeError, match="out of range"):
        acc.synchronize(5)


def test_get_device_capability_names_dtypes():
    cap = acc.get_device_capability("accel:0")
    assert isinstance(cap, dict) and isinstance(cap["supported_dtypes"], set)
    assert {sdk.float32, sdk.int64, sdk.bool, sdk.bfloat16} <= cap["supported_dtypes"]
    assert cap == acc.get_device_capability(1)


def test_memory_functions_follow_allocations():
    import gc

    gc.collect()
    acc.reset_peak_memory_stats()
    base = acc.memory_allocated()
    x = sdk.empty(1 << 20, dtype=sdk.uint8, device="accel:0")
    assert acc.memory_allocated(0) >= base + (1 << 20)
    assert acc.memory.memory_allocated("accel:0") == acc.memory_allocated(0)
    assert acc.max_memory_allocated() >= acc.memory_allocated()
    assert acc.memory_reserved() >= acc.memory_allocated() and acc.max_memory_reserved() >= acc.memory_reserved()
    stats = acc.memory_stats()
    assert list(stats) == sorted(stats) and stats["allocated_bytes.all.current"] == acc.memory_allocated()
    del x
    gc.collect()
    acc.reset_peak_memory_stats(0)
    assert acc.max_memory_allocated() == acc.memory_allocated() <= base + 4096
    acc.reset_accumulated_memory_stats()
    acc.empty_cache()
    acc.empty_host_cache()
    free, total = acc.get_memory_info(0)
    assert 0 < free <= total == accel.get_device_properties(0).total_memory


def test_generic_stream_follows_current_device():
    with acc.device_index(1):
        assert sdk.Stream().device == sdk.device("accel:1")
    assert sdk.Stream(1).device_index == 1 and sdk.Stream().device_index == 0


def test_public_names_and_type_hints():
    for mod in (sdk, acc, acc.memory, sdk.utils):
        assert all(hasattr(mod, n) for n in mod.__all__), mod
    assert "Any" not in dir(sdk) and "annotations" not in dir(sdk)
    assert {"Stream", "Event", "accelerator"} <= set(sdk.__all__)
    hints = typing.get_type_hints(sdk.nonzero)
    assert hints["as_tuple"] is bool  # the builtin, not backend_sdk.bool


def test_no_backend_behaves_as_cpu_only_pytorch():
    code = textwrap.dedent("""
        import backend_sdk as sdk
        from backend_sdk import accelerator as acc
        assert acc.current_accelerator() is None and acc.current_accelerator(True) is None
        assert acc.device_count() == 0 and not acc.is_available()
        assert acc.memory_allocated() == 0 and acc.memory_stats() == {}
        acc.synchronize(); acc.empty_cache(); acc.reset_peak_memory_stats()
        for f in (acc.current_device_index, acc.current_stream, lambda: acc.set_device_index(0),
                  lambda: sdk.Stream(), lambda: sdk.Event()):
            try:
                f()
            except RuntimeError as e:
                assert "available" in str(e), e
            else:
                raise AssertionError(f)
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_init_in_forked_child_raises():
    import multiprocessing

    accel.init()
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()

    def child(q):
        try:
            accel.init()
            q.put("no error")
        except RuntimeError as e:
            q.put(str(e))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        p = ctx.Process(target=child, args=(q,))
        p.start()
        p.join(60)
    msg = q.get(timeout=10)
    assert "Cannot re-initialize accel in forked subprocess" in msg and "'spawn' start method" in msg


# ---- registration helpers under PyTorch's paths ----

def test_privateuse1_name_and_renaming_rules():
    assert sdk._C._get_privateuse1_backend_name() == "accel"
    sdk.utils.backend_registration.rename_privateuse1_backend("accel")  # same name again: fine
    with pytest.raises(RuntimeError, match="has already been set"):
        sdk.utils.backend_registration.rename_privateuse1_backend("dev")
    assert sdk.utils.backend_registration.generate_methods_for_privateuse1_backend is \
        sdk.utils.generate_methods_for_privateuse1_backend
    with pytest.raises(RuntimeError, match="has already been registered with 'is_accel'|The custom device module of"):
        sdk.utils.backend_registration.generate_methods_for_privateuse1_backend()


def test_register_device_module_and_custom_mod_func():
    import types

    with pytest.raises(RuntimeError, match="Expected one of cpu"):
        sdk._register_device_module("dev", types.ModuleType("fake"))
    with pytest.raises(RuntimeError, match="The runtime module of 'accel' has already been registered"):
        sdk._register_device_module("accel", types.ModuleType("fake"))
    get = sdk.utils.backend_registration._get_custom_mod_func
    assert get("device_count")() == 2
    with pytest.raises(RuntimeError, match=r"Try to call backend_sdk\.accel\.no_such_func"):
        get("no_such_func")


def test_ops_load_library_reports_registration_errors(tmp_path):
    import shutil

    lib = os.path.join(os.path.dirname(accel.__file__), "libaccel_sim.so")
    assert os.path.realpath(lib) in sdk.ops.loaded_libraries  # accel loads its kernels through it
    sdk.ops.load_library(lib)  # again: nothing happens
    copy = tmp_path / "libaccel_copy.so"
    shutil.copy(lib, copy)
    # A second copy registers every accel kernel again: its fallback is a duplicate (an error), and
    # the failed library's registrations are undone, leaving accel's own kernels in place.
    code = textwrap.dedent(f"""
        import warnings
        warnings.simplefilter("ignore")
        import accel, backend_sdk as sdk
        try:
            sdk.ops.load_library({str(copy)!r})
        except RuntimeError as e:
            assert "registering the operators of" in str(e) and "multiple backend fallbacks" in str(e), e
        else:
            raise AssertionError("no error")
        assert {str(copy)!r} not in sdk.ops.loaded_libraries
        assert (sdk.ones(3, device="accel") * 2).cpu().tolist() == [2.0, 2.0, 2.0]
        try:
            sdk.ops.load_library({str(tmp_path / "missing.so")!r})
        except OSError:
            print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "samples", "accel_sim")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
