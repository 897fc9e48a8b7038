"""Profiler events, their averages, the table and the Chrome trace (torch.autograd.profiler_util's names).

Note [Profiler events]
~~~~~~~~~~~~~~~~~~~~~~
A session yields three streams, all on the host's monotonic clock (steady_clock = ``time.monotonic_ns``):
the dispatcher's events (Note [Record function], csrc/backend_sdk/dispatch/RecordFunction.h: one per
operator call or record_function scope, with its id, parent id and thread), the devices' trace records
("sdk.trace": kernels, copies, memsets per device and stream, each with the correlation id of the
operator that launched it) and the allocators' memory events (each with the id of the innermost open
event of the allocating thread). :func:`build_events` joins them: host events get their CPU children
(by parent id), their kernels (by correlation id) and their memory (by event id); a device record whose
id names no host event stays in the trace only. Times are in microseconds as PyTorch's (``time_range``,
``cpu_time_total`` ...). Self CPU time is the event's time minus its children's on the same thread; self
device time is the duration of the kernels the event itself launched; the device total adds its
descendants'. The Chrome trace puts the host on pid = the process id, tid = the OS thread, and each
device on its own pid with one tid per stream, plus "ac2g" flow events (ph "s" on the operator, ph "f"
with ``bp: "e"`` on the kernel) for each correlated record.

Autograd: a forward operator's event and the engine's "autograd::engine::evaluate_function: XBackward0"
event of the node it recorded carry the same ``sequence_nr`` (trace arg "Sequence number"); the backward
event's ``fwd_thread`` is the forward event's thread ("Fwd thread id"). ``with_stack`` adds each event's
Python stack (``stack``, trace arg "Call stack"), ``with_flops`` PyTorch's FLOP estimates (``flops``,
trace arg "flops") for mm, addmm, bmm, baddbmm, conv2d, mul and add (:func:`_estimate_flops`). Those come
from Note [Record function extras] (csrc/backend_sdk/dispatch/RecordFunctionExtras.h).
"""
from __future__ import annotations

import ast
import json
import os
from collections import defaultdict
from typing import Any, Iterable, Optional

__all__ = ["DeviceRecord", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "Kernel", "MemoryRecord",
           "build_events"]

# Our dtype names -> the C++ type names PyTorch's profiler prints ("Input type" of the trace).
_DTYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
    "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
}

_TRACE_CATEGORIES = {1: "kernel", 2: "gpu_memcpy", 3: "gpu_memset", 4: "host_func", 5: "event_record"}


class Interval:
    """A ``[start, end]`` time range in microseconds (``FunctionEvent.time_range``)."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """``end - start``."""
        return self.end - self.start


class Kernel:
    """A device record launched by an event: ``name``, ``device`` (index), ``duration`` (µs)."""

    def __init__(self, name: str, device: int, duration: float) -> None:
        self.name = name
        self.device = device
        self.duration = duration


class DeviceRecord:
    """One record of a device's trace (a kernel, copy, memset, host function, event record)."""

    def __init__(self, backend: str, raw: dict[str, Any]) -> None:
        self.backend = backend
        self.kind: str = _TRACE_CATEGORIES.get(int(raw["kind"]), "kernel")
        self.name: str = raw["name"]
        self.device: int = int(raw["device"])
        self.stream: int = int(raw["stream"])
        self.start_us: float = raw["start_ns"] / 1000.0
        self.end_us: float = raw["end_ns"] / 1000.0
        self.bytes: int = int(raw["bytes"])
        self.correlation_id: int = int(raw.get("correlation_id", 0))

    @property
    def duration_us(self) -> float:
        """``end_us - start_us``."""
        return self.end_us - self.start_us


class MemoryRecord:
    """An allocator event: ``bytes`` > 0 allocated, < 0 freed, on ``device_type:device``."""

    def __init__(self, raw: tuple) -> None:
        (time_ns, self.device_type, self.device, self.bytes, self.addr, self.event_id, self.thread,
         self.total_allocated) = raw
        self.time_us: float = time_ns / 1000.0


class FunctionEvent:
    """One operator call or record_function scope (torch.autograd.profiler_util.FunctionEvent).

    build_events computes the derived totals (self CPU time, device time, memory) once, children first, into
    ``_totals``; an event made by hand computes them when read."""

    def __init__(self, *, id: int, name: str, thread: int, start_us: float, end_us: float, overload_name: str = "",
                 input_shapes: Optional[list] = None, input_dtypes: Optional[list] = None,
                 is_user_annotation: bool = False, use_device: Optional[str] = None, dispatch_key: str = "",
                 fallback_key: str = "", is_python_kernel: bool = False, parent_id: int = 0) -> None:
        self.id = id
        self.name = name
        self.key = name
        self.overload_name = overload_name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.is_user_annotation = is_user_annotation
        self.use_device = use_device
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: Optional[FunctionEvent] = None
        self.kernels: list[Kernel] = []
        self.device_records: list[DeviceRecord] = []
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.stack: list[str] = []
        self.sequence_nr = -1
        #: For a backward (evaluate_function) event: the thread of the forward operator of its node (0: none).
        self.fwd_thread = 0
        #: With record_shapes: per argument the value of an int, float, bool or int list ("" otherwise).
        self.concrete_inputs: list = []
        self.device_type = "cpu"
        self.device_index = 0
        self.is_async = False
        self.is_legacy = False
        self.is_remote = False
        self.node_id = -1
        self.flops = 0
        #: The dispatch key of the kernel the call landed on ("CPU", "AutogradPrivateUse1", ...); "" for scopes.
        self.dispatch_key = dispatch_key
        #: The key of the backend fallback that ran for the call ("" if none).
        self.fallback_key = fallback_key
        #: True if a Python kernel ran for the call.
        self.is_python_kernel = is_python_kernel
        self._parent_id = parent_id
        self._totals: Optional[tuple[float, float, float, int, int]] = None

    def _compute_totals(self) -> tuple[float, float, float, int, int]:
        # (self CPU, self device, device total, self CPU memory, self device memory); children's first.
        kids = self.cpu_children
        self_dev = sum(k.duration for k in self.kernels)
        return (self.cpu_time_total - sum(c.cpu_time_total for c in kids), self_dev,
                self_dev + sum(c.device_time_total for c in kids),
                self.cpu_memory_usage - sum(c.cpu_memory_usage for c in kids),
                self.device_memory_usage - sum(c.device_memory_usage for c in kids))

    def _t(self, i: int) -> Any:
        return (self._totals if self._totals is not None else self._compute_totals())[i]

    @property
    def is_fallback(self) -> bool:
        """True if a backend fallback ran for the call (``fallback_key`` names it)."""
        return bool(self.fallback_key)

    @property
    def cpu_time_total(self) -> float:
        """Wall time of the event in µs."""
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        """``cpu_time_total`` minus the CPU children's."""
        return self._t(0)

    @property
    def cpu_time(self) -> float:
        """``cpu_time_total / count``."""
        return self.cpu_time_total / self.count

    @property
    def self_device_time_total(self) -> float:
        """Duration of the device work this event launched itself (µs)."""
        return self._t(1)

    @property
    def device_time_total(self) -> float:
        """Self device time plus that of the CPU children (µs)."""
        return self._t(2)

    @property
    def device_time(self) -> float:
        """``device_time_total / count``."""
        return self.device_time_total / self.count

    @property
    def self_cpu_memory_usage(self) -> int:
        """CPU bytes allocated minus freed by the event, children excluded."""
        return self._t(3)

    @property
    def self_device_memory_usage(self) -> int:
        """Device bytes allocated minus freed by the event, children excluded."""
        return self._t(4)

    # PyTorch's cuda_* spellings.
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"cpu_time={self.cpu_time_total:.3f}us device_time={self.device_time_total:.3f}us "
                f"thread={self.thread} input_shapes={self.input_shapes} dispatch_key={self.dispatch_key}>")


class FunctionEventAvg:
    """Events of one key added up (torch.autograd.profiler_util.FunctionEventAvg)."""

    def __init__(self) -> None:
        self.key: Optional[str] = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device: Optional[str] = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: Optional[list] = None
        self.overload_name: Optional[str] = None
        self.stack: Optional[list] = None
        self.scope: Optional[int] = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: Optional[list] = None
        self.cpu_parent: Optional[FunctionEvent] = None
        self.device_type = "cpu"
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        """Adds an event (or average) of the same key."""
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.input_shapes = other.input_shapes
            self.overload_name = other.overload_name
            self.stack = other.stack
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise TypeError(f"FunctionEventAvg.add: expected a FunctionEvent or FunctionEventAvg, got "
                            f"{type(other).__name__}")
        if other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: key {other.key!r} differs from {self.key!r}")
        self._accumulate(other)
        return self

    def _accumulate(self, other: "FunctionEvent | FunctionEventAvg") -> None:
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.flops += other.flops or 0
        self.count += other.count

    def __iadd__(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        """Average CPU time per call (µs)."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        """Average device time per call (µs)."""
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us device_time={self.device_time_total:.3f}us "
                f"count={self.count} input_shapes={self.input_shapes}>")


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_share(time_us: float, total_us: float) -> str:
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _sort_value(evt: Any, key: str) -> Any:
    # PyTorch sorts with getattr: an unknown key is an AttributeError naming the class and the attribute.
    return getattr(evt, key)


class EventList(list):
    """A list of :class:`FunctionEvent` (or averages) with PyTorch's table, averages and trace export."""

    def __init__(self, *args: Any, use_device: Optional[str] = None, profile_memory: bool = False,
                 with_flops: bool = False, device_records: Optional[list[DeviceRecord]] = None,
                 memory_records: Optional[list[MemoryRecord]] = None) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._device_records = device_records or []
        self._memory_records = memory_records or []

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the events' self CPU time (µs)."""
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: Optional[str] = None,
              top_level_events_only: bool = False, time_unit: Optional[str] = None) -> str:
        """PyTorch's table: one row per event, sorted by the attribute ``sort_by`` (descending; "cuda",
        "xpu", "privateuse1" in the name mean the device), at most ``row_limit`` rows (-1: all)."""
        events = list(self)
        if sort_by is not None:
            key = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
            events = sorted(events, key=lambda evt: _sort_value(evt, key), reverse=True)
        if not events:
            return ""
        if top_level_events_only:
            events = [e for e in events if e.cpu_parent is None]
        if row_limit is not None and row_limit >= 0:
            shown = events[:row_limit]
        else:
            shown = events
        has_device_time = any(e.self_device_time_total > 0 for e in self)
        has_device_mem = any(e.self_device_memory_usage != 0 for e in self)
        has_shapes = any(e.input_shapes for e in self)
        device = (self._use_device or "None").upper()
        name_width = max(len(e.key) for e in self) + 4
        if max_name_column_width is not None:
            name_width = min(name_width, max_name_column_width)
        shapes_width = min(max(len(str(e.input_shapes)) for e in self) + 4, max_shapes_column_width or 10**9)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if has_device_time:
            headers += [f"Self {device}", f"Self {device} %", f"{device} total", f"{device} time avg"]
        if self._profile_memory:
            headers += ["CPU Mem", "Self CPU Mem"]
            if self._use_device and has_device_mem:
                headers += [f"{device} Mem", f"Self {device} Mem"]
        headers.append("# of Calls")
        widths = [name_width] + [12] * (len(headers) - 1)
        if has_shapes:
            headers.append("Input Shapes")
            widths.append(shapes_width)
        # PyTorch's FLOPs column (auto-scaled by the smallest positive count) and Source Location column.
        raw_flops = [e.flops for e in self if (e.flops or 0) > 0] if self._with_flops else []
        if raw_flops:
            flops_scale, flops_header = _auto_scale_flops(min(raw_flops))
            headers.append(f"Total {flops_header}")
            widths.append(12)
        stacks = [e.stack for e in self if e.stack]
        src_width = 0
        if stacks:
            src_width = max(len(entry) for st in stacks for entry in st) + 4
            if max_src_column_width is not None:
                src_width = min(src_width, max_src_column_width)
            headers.append("Source Location")
            widths.append(src_width)
        fmt = "".join("{:>" + str(w) + "}  " for w in widths)
        if stacks:  # the source column is left-aligned, as PyTorch's
            fmt = "".join("{:>" + str(w) + "}  " for w in widths[:-1]) + "{:<" + str(src_width) + "}  "
        sep = "".join("-" * w + "  " for w in widths)
        total_self_cpu = sum(e.self_cpu_time_total for e in self)
        total_self_device = sum(e.self_device_time_total for e in self)
        lines = []
        if header is not None:
            lines += ["=" * len(sep), header]
        lines += [sep, fmt.format(*headers), sep]
        for e in shown:
            name = e.key
            if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
                name = name[: max_name_column_width - 3] + "..."
            row = [name, _format_share(e.self_cpu_time_total, total_self_cpu), _format_time(e.self_cpu_time_total),
                   _format_share(e.cpu_time_total, total_self_cpu), _format_time(e.cpu_time_total),
                   _format_time(e.cpu_time)]
            if has_device_time:
                row += [_format_time(e.self_device_time_total),
                        _format_share(e.self_device_time_total, total_self_device),
                        _format_time(e.device_time_total), _format_time(e.device_time)]
            if self._profile_memory:
                row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
                if self._use_device and has_device_mem:
                    row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
            row.append(str(e.count))
            if has_shapes:
                row.append(str(e.input_shapes)[:shapes_width])
            if raw_flops:
                row.append("--" if (e.flops or 0) <= 0 else f"{e.flops * flops_scale:8.3f}")
            if stacks:
                row.append(_trim_path(e.stack[0], src_width) if e.stack else "")
            lines.append(fmt.format(*row))
            if stacks:
                blank = [""] * (len(headers) - 1)
                for entry in (e.stack or [])[1:]:
                    lines.append(fmt.format(*(blank + [_trim_path(entry, src_width)])))
                lines.append(fmt.format(*(blank + [""])))
        lines.append(sep)
        lines.append(f"Self CPU time total: {_format_time(total_self_cpu)}")
        if has_device_time:
            lines.append(f"Self {device} time total: {_format_time(total_self_device)}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.table()

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """Averages the events by name (and input shapes / overload name when asked)."""
        stats: dict[tuple, FunctionEventAvg] = defaultdict(FunctionEventAvg)
        for evt in self:
            key: tuple = (evt.key, evt.node_id)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_overload_name:
                key += (evt.overload_name,)
            if group_by_stack_n > 0:  # PyTorch's: the innermost n frames are part of the key
                key += tuple(evt.stack[:group_by_stack_n])
            stats[key].add(evt)
        out = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                        with_flops=self._with_flops)
        for evt in out:
            evt.stack = list(evt.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return out

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one average (key "Total")."""
        total = FunctionEventAvg()
        total.key = "Total"
        for evt in self:
            total._accumulate(evt)
        return total

    def export_chrome_trace(self, path: str) -> None:
        """Writes the Chrome trace event JSON (chrome://tracing, Perfetto): Note [Profiler events]."""
        text = json.dumps(self._chrome_trace())  # dumps: the C encoder (json.dump to a file is pure Python)
        with open(path, "w") as f:
            f.write(text)

    def _chrome_trace(self) -> dict[str, Any]:
        pid = os.getpid()
        out: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python (host)"}},
            {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
        ]
        threads = sorted({e.thread for e in self if isinstance(e, FunctionEvent)})
        for t in threads:
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": f"thread {t}"}})
        by_id: dict[int, FunctionEvent] = {}
        for e in self:
            if not isinstance(e, FunctionEvent):
                continue
            by_id[e.id] = e
            args: dict[str, Any] = {"External id": e.id}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
                args["Input type"] = e.input_dtypes
            if e.overload_name:
                args["Overload name"] = e.overload_name
            if e.dispatch_key:
                args["Dispatch key"] = e.dispatch_key
            if e.fallback_key:
                args["Fallback"] = e.fallback_key
            if e.is_python_kernel:
                args["Python kernel"] = 1
            if e.sequence_nr >= 0:
                args["Sequence number"] = e.sequence_nr
                args["Fwd thread id"] = e.fwd_thread if e.fwd_thread else e.thread
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            if e.flops:
                args["flops"] = e.flops
            out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.name,
                        "pid": pid, "tid": e.thread, "ts": e.time_range.start, "dur": e.time_range.elapsed_us(),
                        "args": args})
        # Devices: one pid per (backend, device), one tid per stream (0: synchronous copies).
        dev_pids: dict[tuple[str, int], int] = {}
        stream_tids: dict[tuple[str, int, int], int] = {}
        for r in sorted(self._device_records, key=lambda r: r.start_us):
            dk = (r.backend, r.device)
            if dk not in dev_pids:
                dev_pids[dk] = 1_000_000_000 + len(dev_pids)  # above every Linux pid
                dpid = dev_pids[dk]
                out.append({"ph": "M", "name": "process_name", "pid": dpid, "tid": 0,
                            "args": {"name": f"{r.backend}:{r.device}"}})
                out.append({"ph": "M", "name": "process_sort_index", "pid": dpid, "tid": 0,
                            "args": {"sort_index": len(dev_pids)}})
            dpid = dev_pids[dk]
            sk = (r.backend, r.device, r.stream)
            if sk not in stream_tids:
                stream_tids[sk] = 0 if r.stream == 0 else 1 + sum(1 for k in stream_tids if k[:2] == dk and k[2])
                out.append({"ph": "M", "name": "thread_name", "pid": dpid, "tid": stream_tids[sk],
                            "args": {"name": "synchronous copies" if r.stream == 0 else f"stream {r.stream:#x}"}})
            tid = stream_tids[sk]
            args = {"device": r.device, "stream": r.stream, "correlation": r.correlation_id}
            if r.bytes:
                args["bytes"] = r.bytes
            out.append({"ph": "X", "cat": r.kind, "name": r.name, "pid": dpid, "tid": tid, "ts": r.start_us,
                        "dur": r.duration_us, "args": args})
            launcher = by_id.get(r.correlation_id)
            if launcher is not None:
                # The flow starts inside the launching operator's slice and ends on the device record.
                out.append({"ph": "s", "id": r.correlation_id, "pid": pid, "tid": launcher.thread,
                            "ts": launcher.time_range.start, "cat": "ac2g", "name": "ac2g"})
                out.append({"ph": "f", "id": r.correlation_id, "pid": dpid, "tid": tid, "ts": r.start_us,
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
        for m in self._memory_records:
            out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                        "tid": m.thread, "ts": m.time_us,
                        "args": {"Total Allocated": m.total_allocated, "Bytes": m.bytes,
                                 "Device Type": 0 if m.device_type == "cpu" else 20, "Device Name": m.device_type,
                                 "Device Id": m.device if m.device_type != "cpu" else -1, "Addr": m.addr}})
        return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceName": "backend_sdk.profiler",
                "traceEvents": out}


# PyTorch's _filter_stack_entry, for our paths: frames of backward()'s own machinery are left out.
_FILTERED_STACK_ENTRIES = (("autograd/__init__", "_make_grads"), ("autograd/__init__", "backward"),
                           ("backend_sdk/_tensor", "backward"), ("backend_sdk/profiler", ""))

_EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "


def _filter_stack_entry(entry: str) -> bool:
    return all(not (f in entry and fn in entry) for f, fn in _FILTERED_STACK_ENTRIES)


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _auto_scale_flops(flops: int) -> tuple[float, str]:
    import math

    headers = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    log_flops = max(0.0, min(math.log10(flops) / 3, float(len(headers) - 1)))
    return pow(10, math.floor(log_flops) * -3.0), headers[int(log_flops)]


def _concrete(v: str) -> Any:
    try:
        return ast.literal_eval(v) if v else None
    except (ValueError, SyntaxError):
        return None


def _estimate_flops(name: str, shapes: list, concrete: list) -> int:
    """PyTorch's profiler FLOP formulas (torch/csrc/profiler/util.cpp computeFlops): 2*m*k*n for mm and addmm,
    2*b*m*n*k for bmm and baddbmm, 2*N*Ho*Wo*kh*kw*Cin*Cout/groups for a 4-d conv2d, the first input's numel
    for mul and add of two tensors; 0 for every other operator. ``shapes`` has None for non-tensors."""
    def shape(i: int) -> list:
        return list(shapes[i]) if i < len(shapes) and shapes[i] is not None else []

    if name in ("aten::mm", "aten::addmm"):
        a, b = (shape(0), shape(1)) if name == "aten::mm" else (shape(1), shape(2))
        return 2 * a[0] * a[1] * b[1] if len(a) == 2 and len(b) == 2 else 0
    if name in ("aten::bmm", "aten::baddbmm"):
        a, b = (shape(0), shape(1)) if name == "aten::bmm" else (shape(1), shape(2))
        return 2 * a[0] * a[1] * b[2] * a[2] if len(a) == 3 and len(b) == 3 else 0
    if name == "aten::conv2d":
        x, w = shape(0), shape(1)
        if len(x) != 4 or len(w) != 4:
            return 0
        stride, padding, dilation, groups = (_concrete(concrete[i]) if i < len(concrete) else None
                                             for i in range(3, 7))

        def pair(v: Any, default: int) -> list[int]:
            if v is None:
                return [default, default]
            v = list(v) if isinstance(v, (list, tuple)) else [v]
            return (v * 2)[:2] if len(v) == 1 else v[:2]

        st, pad, dil = pair(stride, 1), pair(padding, 0), pair(dilation, 1)
        groups = groups if isinstance(groups, int) and groups > 0 else 1
        n, cin, h, wd = x
        cout, _, kh, kw = w
        out_h = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // st[0] + 1
        out_w = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // st[1] + 1
        return 2 * n * out_h * out_w * kh * kw * cin * cout // groups
    if name in ("aten::mul", "aten::add"):
        if len(shapes) >= 2 and shapes[0] is not None and shapes[1] is not None:
            out = 1
            for d in shapes[0]:
                out *= int(d)
            return out
    return 0


def build_events(raw_events: Iterable[tuple], device_records: list[DeviceRecord], memory: list[MemoryRecord],
                 use_device: Optional[str], profile_memory: bool, record_shapes: bool,
                 extras: Optional[dict] = None, with_stack: bool = False, with_flops: bool = False) -> EventList:
    """Joins the session's three streams into an :class:`EventList` (Note [Profiler events]); ``extras`` are
    the events' sequence numbers, stacks and concrete inputs (``_C._profiler.collect_extras()``)."""

    from backend_sdk import _C

    py_flag = _C._profiler.EVENT_PYTHON_KERNEL
    scope_flag = _C._profiler.EVENT_USER_SCOPE
    events: list[FunctionEvent] = []
    by_id: dict[int, FunctionEvent] = {}
    for (name, overload, eid, parent_id, thread, _depth, flags, start_ns, end_ns, dispatch_key, fallback_key,
         shapes, dtypes) in raw_events:
        e = FunctionEvent(id=eid, name=name, overload_name=overload, thread=thread, start_us=start_ns / 1000.0,
                          end_us=end_ns / 1000.0,
                          input_shapes=[list(s) for s in shapes] if record_shapes else [],
                          input_dtypes=[_DTYPE_NAMES.get(d, d) for d in dtypes] if record_shapes else [],
                          is_user_annotation=bool(flags & scope_flag), use_device=use_device,
                          dispatch_key=dispatch_key, fallback_key=fallback_key,
                          is_python_kernel=bool(flags & py_flag), parent_id=parent_id)
        x = extras.get(eid) if extras else None
        if x is not None:
            seq, stack, concrete = x
            e.sequence_nr = seq
            if with_stack:
                e.stack = [entry for entry in stack if _filter_stack_entry(entry)]
            if record_shapes:
                e.concrete_inputs = [_concrete(v) if v else "" for v in concrete]
        if with_flops:
            e.flops = _estimate_flops(name, [list(sh) if d and not d.startswith("TensorList") and d != "Scalar"
                                             else None for sh, d in zip(shapes, dtypes)],
                                      list(x[2]) if x is not None else [])
        events.append(e)
        by_id[eid] = e
    # A backward event's forward thread: the thread of the forward operator that has its sequence number.
    fwd_threads: dict[int, int] = {}
    for e in events:
        if e.sequence_nr >= 0 and not e.name.startswith(_EVALUATE_FUNCTION):
            fwd_threads.setdefault(e.sequence_nr, e.thread)
    for e in events:
        if e.sequence_nr >= 0 and e.name.startswith(_EVALUATE_FUNCTION):
            e.fwd_thread = fwd_threads.get(e.sequence_nr, 0)
    for e in events:
        parent = by_id.get(e._parent_id)
        if parent is not None:
            e.cpu_parent = parent
            parent.cpu_children.append(e)
    for r in device_records:
        owner = by_id.get(r.correlation_id)
        if owner is not None:
            owner.device_records.append(r)
            if r.kind in ("kernel", "gpu_memcpy", "gpu_memset"):
                owner.kernels.append(Kernel(r.name, r.device, r.duration_us))
    if profile_memory:
        # Memory counts for the event that allocated and for each of its ancestors (PyTorch's cpu_memory_usage
        # includes the children's; self_* subtracts them).
        for m in memory:
            e = by_id.get(m.event_id)
            while e is not None:
                if m.device_type == "cpu":
                    e.cpu_memory_usage += m.bytes
                else:
                    e.device_memory_usage += m.bytes
                e = e.cpu_parent
    for e in reversed(events):  # by start time: children after their parents, so reversed is children first
        e._totals = e._compute_totals()
    return EventList(events, use_device=use_device, profile_memory=profile_memory, device_records=device_records,
                     memory_records=memory if profile_memory else [], with_flops=with_flops)
