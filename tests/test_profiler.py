"""backend_sdk.profiler (issue 19, "Profiler"): the dispatcher's record-function hook, the devices' traces with
flow arrows, memory events, schedules, the table, the Chrome trace, and the autograd profiler's alias."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _C
from backend_sdk.library import custom_op
from backend_sdk.profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule,
                                  tensorboard_trace_handler)

ROOT = Path(__file__).resolve().parent.parent
ACTS = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def counts(prof) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages()}


def _mlp(device: str, ns: str):
    rng = np.random.default_rng(0)

    @custom_op(f"{ns}::scale2", mutates_args=())
    def scale2(x: sdk.Tensor) -> sdk.Tensor:
        return x * 2

    def backward(ctx, g):
        return g * 2

    scale2.register_autograd(backward)
    x = sdk.tensor(rng.standard_normal((8, 4)), dtype=sdk.float32, device=device)
    w = sdk.tensor(rng.standard_normal((4, 3)), dtype=sdk.float32, device=device, requires_grad=True)
    return scale2, x, w


def test_training_step_on_accel_lists_ops_custom_op_and_kernels(ns: str) -> None:
    scale2, x, w = _mlp("accel", ns)
    with profile(activities=ACTS) as prof:
        for _ in range(3):
            loss = scale2(sdk.mm(x, w)).sum()
            loss.backward()
    c = counts(prof)
    # Forward: one aten::mm and one custom op per step; backward: mm's formula needs only w's gradient (x does
    # not require grad), one more mm per step.
    assert c[f"{ns}::scale2"] == 3
    assert c["aten::mm"] == 6, c
    assert c["aten::sum"] >= 3
    mm_events = [e for e in prof.events() if e.name == "aten::mm"]
    # Forward at AutogradAccel (w requires grad), backward's below autograd at Accel (the renamed key names).
    assert sorted(e.dispatch_key for e in mm_events) == ["Accel"] * 3 + ["AutogradAccel"] * 3
    # Each aten::mm on accel launched device work, correlated to it (not to a parent or a sibling).
    assert all(e.kernels for e in mm_events), [(e.name, e.kernels) for e in mm_events]
    assert all(r.correlation_id == e.id for e in mm_events for r in e.device_records)
    assert all(r.backend == "accel" and r.device == 0 for e in mm_events for r in e.device_records)
    assert prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5).count("\n") > 5
    table = prof.key_averages().table(sort_by="self_accel_time_total".replace("accel", "device"))
    assert "Self ACCEL" in table and "ACCEL total" in table and "# of Calls" in table
    assert "Self CPU time total:" in table and "Self ACCEL time total:" in table
    # The custom op's Python kernel is marked as such; aten::mm's accel kernel is C++.
    custom = [e for e in prof.events() if e.name == f"{ns}::scale2"]
    assert all(e.is_python_kernel for e in custom) and not any(e.is_python_kernel for e in mm_events)
    assert not _C._profiler.is_enabled()


def test_call_counts_match_the_program_on_every_backend(device: str) -> None:
    a = sdk.ones(4, 4, device=device)
    b = sdk.ones(4, 4, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            a + b
        for _ in range(2):
            sdk.mm(a, b)
    c = counts(prof)
    assert c["aten::add"] == 5 and c["aten::mm"] == 2, c
    adds = [e for e in prof.events() if e.name == "aten::add"]
    assert all(e.overload_name == "Tensor" for e in adds)
    backend_key = "CPU" if device == "cpu" else device.capitalize()  # the renamed key: "Accel"
    assert all(e.dispatch_key == backend_key for e in adds), [e.dispatch_key for e in adds]
    assert all(e.thread == adds[0].thread and e.cpu_parent is None for e in adds)


def test_record_function_nesting_and_decorator() -> None:
    a = sdk.ones(3)

    @record_function("decorated")
    def f(t):
        return t * 3

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("outer"):
            with record_function("inner"):
                a + a
            f(a)
    ev = {e.name: e for e in prof.events()}
    assert ev["outer"].is_user_annotation and ev["outer"].cpu_parent is None
    assert ev["inner"].cpu_parent is ev["outer"] and ev["decorated"].cpu_parent is ev["outer"]
    assert ev["aten::add"].cpu_parent is ev["inner"] and ev["aten::mul"].cpu_parent is ev["decorated"]
    assert {c.name for c in ev["outer"].cpu_children} == {"inner", "decorated"}
    o, i = ev["outer"].time_range, ev["inner"].time_range
    assert o.start <= i.start <= i.end <= o.end
    assert ev["outer"].cpu_time_total >= ev["inner"].cpu_time_total + ev["decorated"].cpu_time_total
    assert ev["outer"].self_cpu_time_total == pytest.approx(
        ev["outer"].cpu_time_total - ev["inner"].cpu_time_total - ev["decorated"].cpu_time_total)
    with record_function("not profiled"):  # free and harmless without a profiler
        a + a


def test_a_throwing_operator_still_closes_its_event() -> None:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with pytest.raises(RuntimeError):
            sdk.mm(sdk.ones(2, 3), sdk.ones(2, 3))
        sdk.ones(2) + 1
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert mm and all(e.time_range.end >= e.time_range.start for e in mm)
    add = [e for e in prof.events() if e.name == "aten::add"]
    assert add and add[0].cpu_parent is None  # the failed mm did not stay open as its parent


def test_schedule_and_step_cycles() -> None:
    fn = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    A = ProfilerAction
    assert [fn(i) for i in range(11)] == [A.NONE, A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE,
                                          A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]
    traces = []
    a = sdk.ones(2)

    def ready(p):
        traces.append((p.step_num, counts(p), sorted(e.name for e in p.events() if e.is_user_annotation)))

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=ready) as prof:
        for step in range(10):
            for _ in range(step + 1):
                a.add(a)  # step k runs k + 1 adds
            prof.step()
    # Cycles: steps 0 wait, 1 warmup, 2-3 recorded (saved at the step to 4), 4 wait, 5 warmup, 6-7 recorded.
    assert [t[0] for t in traces] == [4, 8]
    assert traces[0][1]["aten::add"] == 3 + 4 and traces[1][1]["aten::add"] == 7 + 8
    assert traces[0][2] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert traces[1][2] == ["ProfilerStep#6", "ProfilerStep#7"]
    assert not _C._profiler.is_enabled()


def test_chrome_trace_has_host_and_device_tracks_and_flows(tmp_path, ns: str) -> None:
    scale2, x, w = _mlp("accel", ns)
    with profile(activities=ACTS) as prof:
        with record_function("step"):
            scale2(sdk.mm(x, w)).sum().backward()
        y = x.to("cpu")  # a device-to-host copy
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    host_pid = os.getpid()
    complete = [e for e in events if e["ph"] == "X"]
    host = [e for e in complete if e["pid"] == host_pid]
    device = [e for e in complete if e["pid"] != host_pid]
    assert {e["name"] for e in host} >= {"aten::mm", f"{ns}::scale2", "step"}
    assert any(e["cat"] == "kernel" for e in device) and any(e["cat"] == "gpu_memcpy" for e in device)
    names = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert any(n == "accel:0" for _, n in names)
    for e in complete:
        assert isinstance(e["ts"], (int, float)) and e["ts"] > 0 and e["dur"] >= 0 and isinstance(e["tid"], int)
    # Device records sit inside the profiled window of the host clock.
    t0 = min(e["ts"] for e in host)
    t1 = max(e["ts"] + e["dur"] for e in host)
    assert all(t0 - 1 <= e["ts"] <= t1 + 1e6 for e in device)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(finishes)
    by_id = {e["args"]["External id"]: e for e in host}
    for fid, s in starts.items():
        f = finishes[fid]
        assert s["pid"] == host_pid and f["pid"] != host_pid and f["bp"] == "e" and s["cat"] == f["cat"] == "ac2g"
        launcher = by_id[fid]
        assert launcher["ts"] <= s["ts"] <= launcher["ts"] + launcher["dur"] and f["ts"] >= s["ts"] - 1
    assert any(by_id[i]["name"] == "aten::mm" for i in starts)
    del y


def test_tensorboard_trace_handler_writes_a_trace(tmp_path) -> None:
    out = tmp_path / "tb"
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=1),
                 on_trace_ready=tensorboard_trace_handler(str(out), worker_name="w0")) as prof:
        for _ in range(3):
            sdk.ones(2) + 1
            prof.step()
    files = sorted(os.listdir(out))
    assert files and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    trace = json.loads((out / files[0]).read_text())
    assert any(e.get("name") == "aten::add" for e in trace["traceEvents"])


def test_record_shapes_and_group_by_input_shape() -> None:
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        sdk.mm(sdk.ones(2, 4), sdk.ones(4, 3))
        sdk.mm(sdk.ones(2, 4), sdk.ones(4, 3))
        sdk.mm(sdk.ones(5, 4), sdk.ones(4, 1))
        sdk.ones(3).add(sdk.ones(3), alpha=2)
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    assert [e.input_shapes for e in mm] == [[[2, 4], [4, 3]]] * 2 + [[[5, 4], [4, 1]]]
    assert mm[0].input_dtypes == ["float", "float"]
    add = next(e for e in prof.events() if e.name == "aten::add")
    assert add.input_shapes == [[3], [3], []] and add.input_dtypes[2] == "Scalar"
    grouped = {(e.key, str(e.input_shapes)): e.count for e in prof.key_averages(group_by_input_shape=True)}
    assert grouped[("aten::mm", "[[2, 4], [4, 3]]")] == 2 and grouped[("aten::mm", "[[5, 4], [4, 1]]")] == 1
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    with profile(activities=[ProfilerActivity.CPU]) as prof2:
        sdk.mm(sdk.ones(2, 4), sdk.ones(4, 3))
    assert all(e.input_shapes == [] for e in prof2.events())


def test_profile_memory_attributes_device_allocations() -> None:
    with profile(activities=ACTS, profile_memory=True) as prof:
        x = sdk.empty(256, 256, device="accel")  # 256 KiB on accel:0
        del x
    empties = [e for e in prof.events() if e.name == "aten::empty"]
    assert empties and empties[0].device_memory_usage == 256 * 256 * 4
    table = prof.key_averages().table(sort_by="self_device_memory_usage")
    assert "ACCEL Mem" in table and "Self ACCEL Mem" in table and "CPU Mem" in table
    trace = prof.events()._chrome_trace()["traceEvents"]
    mem = [e for e in trace if e["name"] == "[memory]"]
    assert [m["args"]["Bytes"] for m in mem] == [262144, -262144]
    assert mem[0]["args"]["Device Name"] == "accel" and mem[0]["args"]["Total Allocated"] >= 262144
    with profile(activities=ACTS) as prof2:  # without profile_memory: no memory events or columns
        sdk.empty(16, device="accel")
    assert "Mem" not in prof2.key_averages().table()


def test_no_profiler_leaves_no_hooks() -> None:
    with profile(activities=ACTS, profile_memory=True) as prof:
        sdk.ones(2, device="accel") + 1
    assert not _C._profiler.is_enabled()
    before = _C._profiler.collect()
    mem_before = _C._profiler.collect_memory()
    # Calls and allocations without a profiler record nothing, on this thread or others.
    sdk.ones(4, device="accel") * 3
    import threading

    t = threading.Thread(target=lambda: sdk.ones(3) + 1)
    t.start()
    t.join()
    assert _C._profiler.collect() == before and _C._profiler.collect_memory() == mem_before
    assert len(mem_before) == len(prof.events()._memory_records) > 0
    with record_function("idle"):
        pass
    assert _C._profiler.collect() == before
    # The next session starts empty.
    with profile(activities=[ProfilerActivity.CPU]) as prof2:
        pass
    assert list(prof2.events()) == []


def test_other_threads_are_recorded_on_their_own_track() -> None:
    import threading

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t = threading.Thread(target=lambda: [sdk.ones(2) + 1 for _ in range(4)])
        t.start()
        t.join()
        sdk.ones(2) + 1
    adds = [e for e in prof.events() if e.name == "aten::add"]
    assert len(adds) == 5 and len({e.thread for e in adds}) == 2


def test_fallback_and_python_kernels_are_marked() -> None:
    from backend_sdk._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    a = mode.from_tensor(sdk.ones(2, 3))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with mode:
            a + a  # FakeTensorMode is a TorchDispatchMode: the Python key's fallback runs it
        a * a  # a fake tensor outside any mode: the Fake key's fallback
    adds = [e for e in prof.events() if e.name == "aten::add"]
    muls = [e for e in prof.events() if e.name == "aten::mul"]
    assert adds and all(e.is_fallback and e.fallback_key == "Python" for e in adds), adds
    assert muls and all(e.is_fallback and e.fallback_key == "Fake" and e.is_python_kernel for e in muls), muls
    trace = prof.events()._chrome_trace()["traceEvents"]
    assert any(e.get("args", {}).get("Fallback") == "Fake" for e in trace if e.get("name") == "aten::mul")
    assert any(e.get("args", {}).get("Fallback") == "Python" for e in trace if e.get("name") == "aten::add")


def test_autograd_profiler_alias() -> None:
    from backend_sdk.autograd.profiler import profile as aprofile

    a = sdk.ones(3, device="accel")
    with aprofile(use_device="accel", record_shapes=True) as p:
        a * 2
    assert any(e.name == "aten::mul" and e.kernels for e in p.function_events)
    assert "Self ACCEL" in p.key_averages().table(sort_by="self_cpu_time_total")
    assert p.self_cpu_time_total > 0
    with aprofile(enabled=False) as p2:
        a * 2
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        p2.table()
    assert sdk.autograd.profiler.profile is aprofile


def test_bad_input_errors() -> None:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        sdk.ones(2) + 1
    with pytest.raises(AttributeError, match="'FunctionEventAvg' object has no attribute 'bogus'"):
        prof.key_averages().table(sort_by="bogus")
    with pytest.raises(AttributeError, match="'FunctionEvent' object has no attribute 'bogus'"):
        prof.events().table(sort_by="bogus")
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.raises(TypeError, match="wait must be an int"):
        schedule(wait="1", warmup=1, active=1)
    with pytest.raises(TypeError, match="activities must be ProfilerActivity"):
        profile(activities=["cpu"])
    with pytest.raises(TypeError, match="record_function\\(\\): name must be a str"):
        record_function(3)
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        profile(activities=[ProfilerActivity.CPU]).events()
    with profile(activities=[ProfilerActivity.CPU]):
        with pytest.raises(RuntimeError, match="Profiler is already enabled"):
            with profile(activities=[ProfilerActivity.CPU]):
                pass
    assert not _C._profiler.is_enabled()


def test_python_backend_profiles_python_kernels_and_its_fallback() -> None:
    """pyaccel (a pure-Python backend, renamed once per process): its kernels show as Python kernels and the
    CPU fallback that serves sin is marked."""
    paths = [str(ROOT), str(ROOT / "samples" / "python_backend"), str(ROOT / "samples" / "accel_sim")] + sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    code = textwrap.dedent("""
        import warnings
        import backend_sdk as sdk
        import pyaccel
        from backend_sdk.profiler import profile, ProfilerActivity
        a = sdk.ones(3, device="pyaccel:0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                a + a
                a.sin()
        ev = {e.name: e for e in prof.events()}
        assert ev["aten::add"].is_python_kernel, ev["aten::add"]
        assert ev["aten::sin"].is_fallback, ev["aten::sin"]
        print("ok", ev["aten::add"].dispatch_key, ev["aten::sin"].fallback_key)
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_demo_uses_the_profiler_trace() -> None:
    r = subprocess.run([sys.executable, "-m", "backend_sdk", "demo"], cwd=str(ROOT), capture_output=True,
                       text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "samples" / "accel_sim")])))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Chrome trace (host and device tracks" in r.stdout and "aten::" in r.stdout
    path = Path(r.stdout.split("written to ")[-1].split("\n")[0].strip())
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e["ph"] == "s" for e in events) and any(e.get("cat") == "kernel" for e in events)
