"""backend_sdk.profiler (issue 19): autograd's evaluate_function events and sequence numbers, with_stack,
with_flops and the schedule's skip_first_wait, against PyTorch's field names, trace args and formulas."""
from __future__ import annotations

import json

import pytest

import backend_sdk as sdk
from backend_sdk import _C
from backend_sdk.profiler import ProfilerAction, ProfilerActivity, profile, schedule

CPU = [ProfilerActivity.CPU]
EVAL = "autograd::engine::evaluate_function: "


def _by_name(prof, name: str) -> list:
    return [e for e in prof.events() if e.name == name]


def test_backward_nodes_are_evaluate_function_events_linked_by_sequence_nr(tmp_path) -> None:
    w = sdk.randn(3, 2, requires_grad=True)
    x, y = sdk.randn(4, 3), sdk.randn(4, 2)
    with profile(activities=CPU) as prof:
        loss = sdk.mm(x, w).mul(y).sum()
        loss.backward()
    names = [e.name for e in prof.events() if e.name.startswith(EVAL)]
    # one event per node the engine ran, PyTorch's names; AccumulateGrad for the leaf w
    assert sorted(n[len(EVAL):] for n in names if "AccumulateGrad" not in n) == \
        ["MmBackward0", "MulBackward0", "SumBackward0"]
    assert sum("AccumulateGrad" in n for n in names) == 1
    for fwd_name, node in (("aten::mm", "MmBackward0"), ("aten::mul", "MulBackward0"), ("aten::sum", "SumBackward0")):
        (fwd,) = [e for e in _by_name(prof, fwd_name) if e.sequence_nr >= 0]
        (bwd,) = _by_name(prof, EVAL + node)
        assert fwd.sequence_nr == bwd.sequence_nr, (fwd_name, fwd.sequence_nr, bwd.sequence_nr)
        assert bwd.fwd_thread == fwd.thread
        assert bwd.time_range.start > fwd.time_range.end  # backward after forward
    # the backward's own operators are children of their node's event
    (mm_bwd,) = _by_name(prof, EVAL + "MmBackward0")
    assert "aten::mm" in [c.name for c in mm_bwd.cpu_children]
    # forward numbers grow with recording order; backward runs them highest first
    seqs = [e.sequence_nr for e in prof.events() if e.name.startswith(EVAL) and e.sequence_nr >= 0]
    assert seqs == sorted(seqs, reverse=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    fwd_ev = next(t for t in trace if t.get("name") == "aten::mm" and "Sequence number" in t.get("args", {}))
    bwd_ev = next(t for t in trace if t.get("name") == EVAL + "MmBackward0")
    assert fwd_ev["args"]["Sequence number"] == bwd_ev["args"]["Sequence number"]
    assert bwd_ev["args"]["Fwd thread id"] == fwd_ev["tid"]
    # ops outside autograd carry none
    with profile(activities=CPU) as prof2:
        sdk.mm(x, x.t())
    assert all(e.sequence_nr == -1 for e in prof2.events())


def test_no_backward_events_when_not_profiling() -> None:
    w = sdk.randn(2, requires_grad=True)
    (w * 3).sum().backward()  # the engine's scope costs one flag check and records nothing
    with profile(activities=CPU) as prof:
        pass
    assert not [e for e in prof.events() if e.name.startswith(EVAL)]


def _call_site_a(x):
    return sdk.mm(x, x)


def _call_site_b(x):
    return sdk.mm(x, x)


def test_with_stack_records_the_python_stack_and_groups_by_it(tmp_path) -> None:
    x = sdk.randn(3, 3)
    with profile(activities=CPU, with_stack=True) as prof:
        _call_site_a(x)
        _call_site_b(x)
        _call_site_b(x)
    mms = _by_name(prof, "aten::mm")
    assert len(mms) == 3
    for e in mms:
        assert e.stack, e
        assert e.stack[0].startswith(__file__) and "): _call_site_" in e.stack[0]  # innermost frame first
        assert any("test_with_stack_records_the_python_stack" in entry for entry in e.stack)
        assert not any("backend_sdk/profiler" in entry for entry in e.stack)
    assert [e.stack[0].rsplit(": ", 1)[1] for e in mms] == ["_call_site_a", "_call_site_b", "_call_site_b"]
    rows = {tuple(r.stack): r.count for r in prof.key_averages(group_by_stack_n=1) if r.key == "aten::mm"}
    assert sorted(rows.values()) == [1, 2] and all(len(k) == 1 for k in rows)
    assert [r.count for r in prof.key_averages() if r.key == "aten::mm"] == [3]
    assert all(r.stack == [] for r in prof.key_averages())
    table = prof.key_averages(group_by_stack_n=2).table(sort_by="count", row_limit=5)
    assert "Source Location" in table and "_call_site_b" in table
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    ev = next(t for t in json.loads(path.read_text())["traceEvents"] if t.get("name") == "aten::mm")
    assert "_call_site_a" in ev["args"]["Call stack"].split(";")[0]
    with profile(activities=CPU) as plain:
        _call_site_a(x)
    assert all(e.stack == [] for e in plain.events())
    assert "Source Location" not in plain.key_averages().table()


def test_with_flops_uses_pytorchs_formulas() -> None:
    a, b = sdk.randn(4, 5), sdk.randn(5, 6)
    bias = sdk.randn(6)
    b1, b2 = sdk.randn(2, 3, 4), sdk.randn(2, 4, 5)
    img, weight = sdk.randn(1, 3, 8, 8), sdk.randn(4, 3, 3, 3)
    with profile(activities=CPU, with_flops=True) as prof:
        sdk.mm(a, b)
        sdk.addmm(bias, a, b)
        sdk.bmm(b1, b2)
        sdk.nn.functional.conv2d(img, weight, stride=2, padding=1)
        sdk.mul(a, a)
        sdk.mul(a, 2.0)
    flops = {e.name: e.flops for e in prof.events() if e.flops}
    assert flops["aten::mm"] == 2 * 4 * 5 * 6
    assert flops["aten::addmm"] == 2 * 4 * 5 * 6
    assert flops["aten::bmm"] == 2 * 2 * 3 * 5 * 4
    out_hw = (8 + 2 * 1 - 1 * (3 - 1) - 1) // 2 + 1  # 4
    assert flops["aten::conv2d"] == 2 * 1 * out_hw * out_hw * 3 * 3 * 3 * 4
    muls = _by_name(prof, "aten::mul")
    assert muls[0].flops == 20  # the first input's numel
    assert [e.flops for e in muls if e.overload_name == "Scalar"] == [0]  # a tensor times a number: none
    assert all(e.input_shapes == [] for e in prof.events())  # shapes were recorded for the formulas only
    avg = {r.key: r.flops for r in prof.key_averages()}
    assert avg["aten::mm"] == 240
    table = prof.key_averages().table(sort_by="cpu_time_total")
    assert "Total FLOPs" in table or "Total KFLOPs" in table
    with profile(activities=CPU) as plain:
        sdk.mm(a, b)
    assert all(e.flops == 0 for e in plain.events()) and "FLOPs" not in plain.key_averages().table()


def test_schedule_skip_first_wait_and_errors() -> None:
    s = schedule(wait=2, warmup=1, active=1, skip_first=1, skip_first_wait=1)
    A = ProfilerAction
    # PyTorch: skip_first steps of NONE, then the first cycle starts without its wait
    assert [s(i) for i in range(6)] == [A.NONE, A.WARMUP, A.RECORD_AND_SAVE, A.NONE, A.NONE, A.WARMUP]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments. Got wait=-1"):
        schedule(wait=-1, warmup=1, active=1)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        s(-1)


def test_warmup_steps_record_nothing_and_the_active_steps_are_saved() -> None:
    saved: list = []
    x = sdk.randn(2, 2)
    with profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=lambda p: saved.append([e.name for e in p.events()])) as prof:
        for _ in range(5):
            sdk.mm(x, x)
            prof.step()
    assert len(saved) == 1
    steps = [n for n in saved[0] if n.startswith("ProfilerStep#")]
    assert steps == ["ProfilerStep#2", "ProfilerStep#3"]
    assert saved[0].count("aten::mm") == 2  # neither the wait nor the warmup step's
    assert not _C._profiler.is_enabled()


def test_profile_memory_counts_cpu_allocations() -> None:
    keep = []
    with profile(activities=CPU, profile_memory=True) as prof:
        a = sdk.ones(256, 256)  # 256 KiB
        keep.append(a + 1)
        del a  # freed inside the session: a negative event
    nbytes = 256 * 256 * 4
    empties = _by_name(prof, "aten::empty")  # ones() is empty + fill_
    assert empties and empties[0].cpu_memory_usage == nbytes
    adds = _by_name(prof, "aten::add")
    assert adds[0].cpu_memory_usage == nbytes and adds[0].self_cpu_memory_usage == nbytes
    frees = [m for m in prof.events()._memory_records if m.device_type == "cpu" and m.bytes < 0]
    assert any(m.bytes == -nbytes for m in frees)
    assert "CPU Mem" in prof.key_averages().table(sort_by="cpu_memory_usage")
    # no observer once the session is over: a new buffer is a plain one
    b = sdk.ones(4)
    with profile(activities=CPU) as plain:
        del b
    assert plain.events()._memory_records == []
