"""Graph capture and replay (``torch.accelerator.Graph``) on the "sdk.graph" device extension.

Note [Graph capture] (csrc/backend_sdk/runtime/Graph.h) has the semantics:
work launched on the capturing stream is recorded, not run; ``replay()``
runs it again on the same memory as one submission to the device;
allocations made for the capturing stream belong to the graph's pool and
stay valid until ``reset()`` (Note [Graph memory pools]); a synchronising
call during capture is refused per ``capture_error_mode`` (Note
[Synchronising during capture]); the default stream cannot be captured. A
device without the extension raises NotImplementedError naming the backend.
"""
from __future__ import annotations

from typing import Any, Literal, Optional

from .. import _C

__all__ = ["Graph", "graph_pool_handle", "is_current_stream_capturing"]

_rt = _C._runtime

_CAPTURE_ERROR_MODES = {"default": 0, "global": 0, "thread_local": 1, "relaxed": 2}


def _capture_mode(mode: str) -> int:
    if mode not in _CAPTURE_ERROR_MODES:
        raise ValueError(f"capture_error_mode must be one of {sorted(_CAPTURE_ERROR_MODES)}, got {mode!r}")
    return _CAPTURE_ERROR_MODES[mode]


def _pool_id(pool: Any) -> int:
    if pool is None:
        return 0
    if isinstance(pool, tuple) and len(pool) == 2 and all(isinstance(p, int) for p in pool):
        return pool[1]
    raise TypeError(f"pool must be a handle from graph_pool_handle() or Graph.pool(), got {pool!r}")


def _is_capturing(stream: Any) -> bool:
    """True while a capture records ``stream``'s work."""
    return _rt._is_stream_capturing(stream)


def graph_pool_handle() -> tuple[int, int]:
    """A fresh memory pool id for graphs to share (``torch.cuda.graph_pool_handle``)."""
    return (0, _rt._new_graph_pool_id())


def is_current_stream_capturing() -> bool:
    """True if the current stream of the current accelerator's current device is capturing a graph."""
    from ._utils import _accelerator_type

    acc = _accelerator_type()
    if acc is None:
        return False
    return _is_capturing(_rt.current_stream(acc))


class Graph:
    """A captured sequence of device work that can be replayed (``torch.accelerator.Graph``)::

        s = backend_sdk.Stream()
        g = backend_sdk.accelerator.Graph()
        with s, g:
            y = x * 2 + 1          # recorded, not run
        g.replay()                  # runs both kernels again, on the same memory (y is updated)

    ``keep_graph`` is accepted for PyTorch compatibility (a device graph is always kept until
    :meth:`reset`); ``pool`` shares another graph's memory pool; ``capture_error_mode`` is
    "default"/"global", "thread_local" or "relaxed" (Note [Synchronising during capture]).
    """

    def __init__(self, keep_graph: bool = False, *, pool: Optional[tuple[int, int]] = None,
                 capture_error_mode: Literal["default", "global", "thread_local", "relaxed"] = "default") -> None:
        self.keep_graph = keep_graph
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode
        self._mode = _capture_mode(capture_error_mode)
        self._graph = _rt._Graph()

    def capture_begin(self, pool: Optional[tuple[int, int]] = None, capture_error_mode: Optional[str] = None) -> None:
        """Begins capturing the current stream of the current accelerator device (not its default stream)."""
        from ._utils import _require_accelerator

        acc = _require_accelerator()
        mode = self._mode if capture_error_mode is None else _capture_mode(capture_error_mode)
        self._graph.capture_begin(_rt.current_stream(acc), _pool_id(pool if pool is not None else self.graph_pool),
                                  mode)

    def capture_end(self) -> None:
        """Ends the capture; the graph can then be replayed."""
        self._graph.capture_end()

    def instantiate(self) -> None:
        """Prepares the captured graph for replay (replay() does it on first use)."""
        self._graph.instantiate()

    def replay(self) -> None:
        """Runs the captured work again on the current stream of the graph's device (one submission).
        RuntimeError before a capture."""
        self._graph.replay()

    def reset(self) -> None:
        """Drops the captured graph and returns its memory pool to the allocator (after queued replays)."""
        self._graph.reset()

    def pool(self) -> tuple[int, int]:
        """The id of this graph's memory pool, to share it with another capture."""
        return (0, self._graph.pool)

    def __enter__(self) -> "Graph":
        from . import synchronize

        synchronize()
        self.capture_begin()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is not None and self._graph.capturing:
            self._graph.reset()  # an error inside the block: drop the partial capture
            return
        self.capture_end()
