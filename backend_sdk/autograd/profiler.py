"""``backend_sdk.autograd.profiler``: the autograd profiler's names (torch.autograd.profiler) over the same
session as :mod:`backend_sdk.profiler` (Note [Profiler sessions])."""
from __future__ import annotations

from typing import Any, Optional

from backend_sdk.profiler import _Session, record_function
from backend_sdk.profiler._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile:
    """torch.autograd.profiler.profile: records while entered; ``use_device`` names the device backend whose
    work is traced (``"accel"``; None: host only)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: Optional[str] = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        if use_device is not None and not isinstance(use_device, str):
            raise TypeError(f"profile(): use_device must be a backend name (str) or None, got "
                            f"{type(use_device).__name__}")
        if use_cuda:
            raise RuntimeError("profile(): use_cuda=True but there is no CUDA device here; pass use_device=<the "
                               "backend's name> to profile a device backend")
        if use_device is not None:
            from backend_sdk.utils import get_privateuse1_backend_name

            if use_device not in ("privateuseone", get_privateuse1_backend_name()):
                from backend_sdk import _runtime

                if not _runtime.has_device(use_device):
                    raise AssertionError(f"{use_device} is not a supported device (no device is attached to the "
                                         f"backend)")
        self.enabled = enabled
        self.use_device = use_device
        self.use_cpu = use_cpu
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.function_events: Optional[EventList] = None
        self._session: Optional[_Session] = None
        self.entered = False

    def __enter__(self) -> "profile":
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._session = _Session(use_cpu=self.use_cpu, device_backends=[self.use_device] if self.use_device else [],
                                 record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                                 with_stack=self.with_stack, with_flops=self.with_flops)
        self._session.start()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        if not self.enabled or self._session is None:
            return
        self._session.stop()
        self.function_events = self._session.function_events
        self.entered = False

    def _check_finish(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: Optional[str] = None,
              top_level_events_only: bool = False) -> str:
        """The events' table (EventList.table)."""
        return self._check_finish().table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the Chrome trace JSON."""
        self._check_finish().export_chrome_trace(path)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Averages by operator name (EventList.key_averages)."""
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        """All events added up."""
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """Sum of the events' self CPU time (µs)."""
        return self._check_finish().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()
