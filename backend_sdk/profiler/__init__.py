"""``backend_sdk.profiler``: PyTorch's ``torch.profiler`` over the dispatcher's record-function hook and the
devices' "sdk.trace" extension (docs/profiler.md).

.. code-block:: python

    from backend_sdk.profiler import profile, record_function, ProfilerActivity

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], record_shapes=True) as prof:
        with record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

Note [Profiler sessions]
~~~~~~~~~~~~~~~~~~~~~~~~
One session records at a time in a process (the dispatcher's flag is process-wide: Note [Record
function]); starting a second raises RuntimeError. ``start_trace`` turns the dispatcher's hook on (with
the shapes / memory / device-correlation bits asked for) and starts the trace of each profiled backend
whose device implements "sdk.trace"; ``stop_trace`` synchronizes those devices (so the work the
operators queued is in their traces), stops everything and builds the events (Note [Profiler events]).
With a ``schedule``, ``step()`` walks PyTorch's action table: WARMUP steps record nothing (the session is
prepared but off), RECORD steps record, and the step that returns RECORD_AND_SAVE ends a trace and calls
``on_trace_ready(prof)``; each active step is wrapped in a ``ProfilerStep#N`` scope.
"""
from __future__ import annotations

import enum
import functools
import os
import socket
import time
import warnings
from typing import Any, Callable, Iterable, Optional

from backend_sdk import _C
from backend_sdk.profiler._events import (DeviceRecord, EventList, FunctionEvent, FunctionEventAvg,
                                          MemoryRecord, build_events)

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule", "supported_activities",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]

PROFILER_STEP_NAME = "ProfilerStep"


class ProfilerActivity(enum.Enum):
    """What a profile records: host operators (CPU) and the work of a device backend."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self) -> str:
        return f"ProfilerActivity.{self.name}"


class ProfilerAction(enum.Enum):
    """Profiler actions a :func:`schedule` returns for each step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """CPU, and PrivateUse1 when the renamed PrivateUse1 backend has a device."""
    out = {ProfilerActivity.CPU}
    if _device_backend() is not None:
        out.add(ProfilerActivity.PrivateUse1)
    return out


def _device_backend() -> Optional[str]:
    from backend_sdk import _runtime
    from backend_sdk.utils import get_privateuse1_backend_name

    name = get_privateuse1_backend_name()
    try:
        return name if _runtime.device_count(name) > 0 else None
    except Exception:  # no device registered for the backend
        return None


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """PyTorch's schedule: skip ``skip_first`` steps, then cycles of ``wait`` (NONE), ``warmup`` (WARMUP) and
    ``active`` steps (RECORD, the last RECORD_AND_SAVE), ``repeat`` times (0: until the profile ends); with
    ``skip_first_wait`` non-zero the first cycle starts without its ``wait`` steps."""
    for name, value in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                        ("skip_first", skip_first), ("skip_first_wait", skip_first_wait)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"schedule(): {name} must be an int, got {type(value).__name__}")

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle's wait is skipped: shift every step by it
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False) -> Callable[["profile"], None]:
    """An ``on_trace_ready`` that writes ``{worker}.{time_ns}.pt.trace.json[.gz]`` into ``dir_name``."""

    def handler_fn(prof: "profile") -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


class record_function:
    """A named scope in the profile (a context manager and a decorator); free when no profiler records."""

    def __init__(self, name: str, args: Optional[str] = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, got {type(name).__name__}")
        self.name = name
        self.args = args
        self._scope: Any = None

    def __enter__(self) -> "record_function":
        if _C._profiler.is_enabled():
            self._scope = _C._profiler._RecordScope(self.name)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._scope is not None:
            self._scope.exit()
            self._scope = None

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper


class _Session:
    """One recording: the dispatcher's hook and the devices' traces (Note [Profiler sessions])."""

    def __init__(self, *, use_cpu: bool, device_backends: list[str], record_shapes: bool, profile_memory: bool,
                 with_stack: bool, with_flops: bool = False) -> None:
        self.use_cpu = use_cpu
        self.device_backends = device_backends
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.traced: list[str] = []
        self.function_events: Optional[EventList] = None
        self.running = False

    def start(self) -> None:
        from backend_sdk import _runtime

        flags = 0
        if self.record_shapes or self.with_flops:  # the FLOP formulas need the shapes (shown only if asked)
            flags |= _C._profiler.RECORD_SHAPES
        if self.with_stack:
            flags |= _C._profiler.RECORD_STACK
        if self.profile_memory:
            flags |= _C._profiler.RECORD_MEMORY
        self.traced = [b for b in self.device_backends
                       if _runtime.has_device(b) and _runtime.has_device_extension(b, "sdk.trace")]
        if self.traced:
            flags |= _C._profiler.RECORD_DEVICE
        _C._profiler.start(flags, self.traced)
        self.running = True
        try:
            for b in self.traced:
                _runtime.trace_collect(b)  # drop what an earlier trace left
                _runtime.trace_start(b)
        except BaseException:
            self.running = False
            _C._profiler.stop()
            raise

    def stop(self) -> None:
        from backend_sdk import _runtime

        if not self.running:
            return
        records: list[DeviceRecord] = []
        try:
            for b in self.traced:
                for i in range(_runtime.device_count(b)):
                    _runtime.synchronize(f"{b}:{i}")  # the queued work is in the trace
        finally:
            _C._profiler.stop()
            self.running = False
            for b in self.traced:
                _runtime.trace_stop(b)
                raw, dropped = _runtime.trace_collect(b)
                if dropped:
                    warnings.warn(f"profiler: the device of backend '{b}' dropped {dropped} trace records (its "
                                  f"buffer was full); the oldest device work is missing from the profile")
                records += [DeviceRecord(b, r) for r in raw]
        memory = [MemoryRecord(m) for m in _C._profiler.collect_memory()] if self.profile_memory else []
        use_device = self.device_backends[0] if self.device_backends else None
        events = build_events(_C._profiler.collect(), records, memory, use_device, self.profile_memory,
                              self.record_shapes, _C._profiler.collect_extras(), self.with_stack, self.with_flops)
        if not self.use_cpu:  # device activity only: keep the operators that launched device work
            events = EventList([e for e in events if e.kernels], use_device=use_device,
                               profile_memory=self.profile_memory, device_records=records)
        self.function_events = events


class _KinetoProfile:
    """The profile's session handling without the schedule (torch.profiler._KinetoProfile)."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None) -> None:
        acts = set(activities) if activities else supported_activities()
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity values, got {a!r}")
        if not acts:
            raise AssertionError("No valid profiler activities found")
        self.activities = acts
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.with_modules = bool(with_modules)
        self.use_device: Optional[str] = None
        if acts & {ProfilerActivity.PrivateUse1, ProfilerActivity.CUDA, ProfilerActivity.XPU}:
            from backend_sdk.utils import get_privateuse1_backend_name

            if acts & {ProfilerActivity.CUDA, ProfilerActivity.XPU}:
                warnings.warn("profile(): CUDA and XPU activities have no device here; the PrivateUse1 backend's "
                              "device is profiled instead")
            self.use_device = get_privateuse1_backend_name()
        self.profiler: Optional[_Session] = None
        self._last_events: Optional[EventList] = None

    def start(self) -> None:
        """Prepares and starts a trace."""
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        """Stops the trace."""
        self.stop_trace()

    def prepare_trace(self) -> None:
        self.profiler = _Session(use_cpu=ProfilerActivity.CPU in self.activities,
                                 device_backends=[self.use_device] if self.use_device else [],
                                 record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                                 with_stack=self.with_stack, with_flops=self.with_flops)

    def start_trace(self) -> None:
        if self.profiler is None:
            self.prepare_trace()
        assert self.profiler is not None
        self.profiler.start()

    def stop_trace(self) -> None:
        if self.profiler is not None and self.profiler.running:
            self.profiler.stop()
            self._last_events = self.profiler.function_events

    def _events_or_raise(self) -> EventList:
        if self._last_events is None:
            raise RuntimeError("Profiler didn't finish running: no trace has been recorded yet (leave the "
                               "profile's with block, or reach a step whose schedule action saves a trace)")
        return self._last_events

    def events(self) -> EventList:
        """The unaggregated events of the last trace."""
        return self._events_or_raise()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Averages events by operator name (and input shapes when ``group_by_input_shape``)."""
        return self._events_or_raise().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the last trace as Chrome trace JSON (gzip when ``path`` ends with .gz)."""
        events = self._events_or_raise()
        if path.endswith(".gz"):
            import gzip
            import json

            with gzip.open(path, "wt") as f:
                json.dump(events._chrome_trace(), f)
        else:
            events.export_chrome_trace(path)


class profile(_KinetoProfile):
    """PyTorch's profiler context manager (torch.profiler.profile): see Note [Profiler sessions]."""

    def __init__(self, *, activities: Optional[Iterable[ProfilerActivity]] = None,
                 schedule: Optional[Callable[[int], ProfilerAction]] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, use_cuda: Optional[bool] = None) -> None:
        if use_cuda is not None:
            warnings.warn("use_cuda is deprecated, use activities argument instead")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile(): schedule must be callable, got {type(schedule).__name__}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"profile(): on_trace_ready must be callable, got {type(on_trace_ready).__name__}")
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules)
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: Optional[record_function] = None
        A = ProfilerAction
        self.action_map: dict[tuple[ProfilerAction, Optional[ProfilerAction]], list[Callable[[], Any]]] = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [functools.partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [functools.partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                            self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready, self.prepare_trace,
                                                     self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.stop()

    def start(self) -> None:
        """Starts profiling at step 0's action."""
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self._enter_step()

    def stop(self) -> None:
        """Ends profiling (saving the trace the current action records)."""
        self._exit_step()
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signals the profiler that the next step has started."""
        self._exit_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if not isinstance(self.current_action, ProfilerAction):
            raise TypeError(f"profile.step(): the schedule must return a ProfilerAction, got "
                            f"{self.current_action!r}")
        self._transit_action(prev, self.current_action)
        if self.record_steps:
            self._enter_step()

    def _enter_step(self) -> None:
        self.step_rec_fn = record_function(f"{PROFILER_STEP_NAME}#{self.step_num}")
        self.step_rec_fn.__enter__()

    def _exit_step(self) -> None:
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev: ProfilerAction, current: Optional[ProfilerAction]) -> None:
        for action in self.action_map.get((prev, current), []):
            action()
