"""The MPI engine under the "mpi" backend: one communication thread, the failure monitor, Work.

Note [Distributed engine]
=========================
Every collective and point-to-point operation of every process group is a *job* queued to one
communication thread per process (``_Engine.worker``), which runs the MPI calls in the order they
were issued, as a device stream runs kernels. ``async_op=False`` queues and waits; ``async_op=True``
returns the job's ``Work``. One in-order thread makes overlapping work (DDP's buckets while backward
runs) possible without MPI's own asynchronous progress, and keeps the MPI calls of one process group in
issue order on every rank, which is what makes the program deadlock-free when all ranks issue the same
sequence (PyTorch's rule too).

Waiting is never a blind block: ``Work.wait`` waits in short slices and, between them, asks the
monitor whether a peer failed. The monitor thread (``_Monitor``) owns a private duplicate of
COMM_WORLD ("control") on which

- every rank sends a heartbeat to every peer every ``_HEARTBEAT_PERIOD`` seconds;
- a rank whose Python process raises an uncaught exception sends ``FAIL`` with the exception's text
  to every peer (``sys.excepthook``) before exiting; a rank that calls ``destroy_process_group`` sends
  ``BYE``.

A waiter therefore raises ``DistBackendError`` naming the failed rank as soon as a FAIL arrives, or
when a peer's heartbeats stop for ``heartbeat timeout`` seconds (a killed process: it can tell
nothing), or when the process group's ``timeout`` passes. After such an error the communication
thread may be stuck inside an MPI call that will never finish: the process group is marked broken,
later calls raise at once, and at interpreter exit the process tells its peers it is gone and skips
``MPI_Finalize`` (which would wait on the stuck call, or on a dead peer): ``_at_exit``. Plain ``mpiexec`` kills every rank as
soon as one exits; the launcher (``backend_sdk.distributed.run``) passes ``-disable-auto-cleanup`` so
that the surviving ranks can say what happened, and every rank ends on its own.

MPI is initialised with ``MPI_THREAD_MULTIPLE`` (mpi4py's default): the worker and the monitor call
MPI concurrently, each on its own communicator.
"""
from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "Work"]


class DistError(RuntimeError):
    """Errors of the distributed package (PyTorch's ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective failed in the backend: a peer failed, a timeout, mismatched inputs across ranks."""


class DistNetworkError(DistError):
    """A network error (PyTorch's ``DistNetworkError``)."""


class DistStoreError(DistError):
    """A store error (PyTorch's ``DistStoreError``)."""


for _cls in (DistError, DistBackendError, DistNetworkError, DistStoreError):
    _cls.__module__ = "backend_sdk.distributed"

_HEARTBEAT_PERIOD = 0.25
#: A peer's failure notice or BYE can overtake the completion of an operation it took part in (a
#: descheduled worker thread): the waiter gives the operation this long to finish before raising.
_FAILURE_GRACE = 2.0
_TAG_HEARTBEAT, _TAG_FAIL, _TAG_BYE = 1, 2, 3


def heartbeat_timeout() -> float:
    """Seconds without a heartbeat after which a peer counts as dead (env BACKEND_SDK_DIST_HEARTBEAT_TIMEOUT)."""
    return float(os.environ.get("BACKEND_SDK_DIST_HEARTBEAT_TIMEOUT", "30"))


class Work:
    """A queued operation (PyTorch's ``torch.distributed.Work``): ``wait()``, ``is_completed()``."""

    def __init__(self, name: str, fn: Callable[[], Any], engine: "_Engine", timeout: float,
                 then: Callable[[], None] | None = None) -> None:
        self._name = name
        self._fn = fn
        self._then = then  # runs on the waiting thread after completion (copy-backs into the caller's tensors)
        self._engine = engine
        self._timeout = timeout
        self._done = threading.Event()
        self._exception: BaseException | None = None
        self._result: Any = None
        self._finished = False

    def _run(self) -> Any:
        try:
            self._result = self._fn()
        except BaseException as e:  # delivered to the waiter
            self._exception = e
        if isinstance(self._result, _Pending) and self._exception is None:
            return self._result  # the worker completes it when its requests have (Note [Distributed engine])
        return None  # the worker sets _done after counting it finished

    def is_completed(self) -> bool:
        """True once the operation has finished (successfully or not); never blocks."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """True if the operation finished without an error."""
        return self._done.is_set() and self._exception is None

    def exception(self) -> BaseException | None:
        """The error the operation raised, if it finished with one."""
        return self._exception

    def result(self) -> list:
        """The output tensors (PyTorch's ``Work.result()``); valid after ``wait()``."""
        self.wait()
        return self._result if isinstance(self._result, list) else []

    def wait(self, timeout: Any = None) -> bool:
        """Blocks until the operation finished; raises its error, a peer's failure or a timeout (DistBackendError)."""
        if timeout is not None and hasattr(timeout, "total_seconds"):
            timeout = timeout.total_seconds()
        limit = self._timeout if timeout is None or timeout <= 0 else float(timeout)
        deadline = time.monotonic() + limit
        engine = self._engine
        while not self._done.wait(0.05):
            engine.check_progress(self._name, deadline, limit, lambda: self._done.wait(_FAILURE_GRACE))
        if self._exception is not None:
            raise self._exception
        if not self._finished:
            self._finished = True
            if self._then is not None:
                self._then()
        return True

    def get_future(self) -> "Work":
        """This Work (it has ``wait()`` and ``value()`` as a completed Future would)."""
        return self

    def value(self) -> list:
        """The output tensors, as ``Future.value()``."""
        return self.result()

    def __repr__(self) -> str:
        return f"Work({self._name}, completed={self.is_completed()})"


class _Pending:
    """MPI requests still in flight; ``step`` posts the next phase (a receive's payload after its header)."""

    def __init__(self, requests: list, step: Callable[[], "list | None"] | None = None, result: Any = None) -> None:
        self.requests = requests
        self.step = step
        self.result = result
        self.statuses: list = []

    def poll(self) -> bool:
        from mpi4py import MPI

        statuses = [MPI.Status() for _ in self.requests]
        if not MPI.Request.Testall(self.requests, statuses):
            return False
        self.statuses = statuses
        if self.step is None:
            return True
        step, self.step = self.step, None
        more = step()
        if more:
            self.requests = more
            return self.poll()
        return True


class _Monitor:
    """Heartbeats and failure notices on the control communicator (Note [Distributed engine])."""

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        now = time.monotonic()
        self._last_seen = {r: now for r in range(self.size) if r != self.rank}
        self._left: set[int] = set()
        self._failures: dict[int, str] = {}
        self._pending: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._hb = bytearray(1)
        self._thread = threading.Thread(target=self._loop, name="backend_sdk.distributed.monitor", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        MPI = self._MPI
        status = MPI.Status()
        while not self._stop.is_set():
            try:
                for peer in self._last_seen:
                    req = self._pending.get(peer)
                    if req is None or req.Test():
                        self._pending[peer] = self.comm.Isend([self._hb, MPI.BYTE], dest=peer, tag=_TAG_HEARTBEAT)
                while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
                    src, tag = status.Get_source(), status.Get_tag()
                    data = bytearray(status.Get_count(MPI.BYTE))
                    self.comm.Recv([data, MPI.BYTE], source=src, tag=tag)
                    with self._lock:
                        self._last_seen[src] = time.monotonic()
                        if tag == _TAG_FAIL:
                            self._failures.setdefault(src, data.decode("utf-8", "replace"))
                        elif tag == _TAG_BYE:
                            self._left.add(src)
            except Exception:  # the control channel itself broke: the waiters' timeouts still apply
                return
            self._stop.wait(_HEARTBEAT_PERIOD)

    def failure(self, include_left: bool = True) -> str | None:
        """The first known failure of a peer, as text naming the rank, or None."""
        with self._lock:
            if self._failures:
                rank = min(self._failures)
                return f"rank {rank} {self._failures[rank]}"
            limit = heartbeat_timeout()
            now = time.monotonic()
            for rank, seen in sorted(self._last_seen.items()):
                if rank in self._left:
                    if not include_left:
                        continue
                    return f"rank {rank} has left the process group (destroy_process_group) and cannot take part"
                if now - seen > limit:
                    return (f"rank {rank} stopped responding (no heartbeat for {now - seen:.1f} s): "
                            "its process died or hangs")
        return None

    def describe_peers(self) -> str:
        """Which peers were heard from recently (for a timeout message)."""
        now = time.monotonic()
        with self._lock:
            seen = ", ".join(f"rank {r}: {now - t:.1f} s ago" for r, t in sorted(self._last_seen.items()))
        return f"Last heartbeat from {seen}." if seen else ""

    def notify(self, tag: int, text: str, grace: float) -> None:
        """Sends ``text`` with ``tag`` to every peer and waits up to ``grace`` seconds for delivery."""
        MPI = self._MPI
        payload = bytearray(text.encode("utf-8")[:4000])
        try:
            reqs = [self.comm.Isend([payload, MPI.BYTE], dest=p, tag=tag) for p in self._last_seen]
            deadline = time.monotonic() + grace
            while not MPI.Request.Testall(reqs) and time.monotonic() < deadline:
                time.sleep(0.01)
        except Exception:
            pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for req in self._pending.values():
            try:
                if not req.Test():
                    req.Cancel()
                    req.Wait()
            except Exception:
                pass
        self._pending.clear()


class _Engine:
    """The process's MPI state: world communicator, communication thread, monitor."""

    def __init__(self) -> None:
        import mpi4py

        global _mpi4py_finalizes
        mpi4py.rc.thread_level = "multiple"
        if "mpi4py.MPI" in sys.modules:  # imported by the user first: mpi4py's atexit finalizes
            _mpi4py_finalizes = mpi4py.rc.finalize is not False
        else:
            mpi4py.rc.finalize = False  # _at_exit finalizes, only when every peer can
        from mpi4py import MPI

        self.MPI = MPI
        if not MPI.Is_initialized():
            MPI.Init_thread(MPI.THREAD_MULTIPLE)
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise DistBackendError("the MPI library does not provide MPI_THREAD_MULTIPLE, which the mpi backend needs")
        self.world = MPI.COMM_WORLD.Dup()
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.monitor = _Monitor(MPI.COMM_WORLD.Dup())
        self.broken = False
        self.broken_reason = ""
        self._queue: "queue.SimpleQueue[Work | None]" = queue.SimpleQueue()
        self._count_lock = threading.Lock()
        self._outstanding = 0  # jobs submitted and not finished (Note [Inline small collectives])
        self._exec = threading.Lock()  # held while a job's MPI calls are issued (worker or inline)
        self.worker = threading.Thread(target=self._loop, name="backend_sdk.distributed.worker", daemon=True)
        self.worker.start()

    def _loop(self) -> None:
        # Point-to-point jobs return a _Pending (MPI requests still in flight): they are polled between jobs,
        # so that a rank's isend and irecv to and from one peer never wait on each other.
        pending: list[tuple[Work, _Pending]] = []
        while True:
            if pending:
                try:
                    work = self._queue.get(timeout=0.0002)
                except queue.Empty:
                    work = False
            else:
                work = self._queue.get()
            if work is None:
                return
            if work is not False:
                with self._exec:
                    result = work._run()
                if isinstance(result, _Pending):
                    pending.append((work, result))
                else:
                    self._finished_one()
                    work._done.set()
            still = []
            for w, p in pending:
                try:
                    if not p.poll():
                        still.append((w, p))
                        continue
                    w._result = p.result
                except BaseException as e:
                    w._exception = e
                self._finished_one()
                w._done.set()
            pending = still

    def submit(self, name: str, fn: Callable[[], Any], timeout: float,
               then: Callable[[], None] | None = None) -> Work:
        if self.broken:
            raise DistBackendError(f"[Rank {self.rank}] {name}: the process group is broken by an earlier failure: "
                                   f"{self.broken_reason}")
        work = Work(name, fn, self, timeout, then)
        with self._count_lock:
            self._outstanding += 1
        self._queue.put(work)
        return work

    def _finished_one(self) -> None:
        with self._count_lock:
            self._outstanding -= 1

    def check_progress(self, name: str, deadline: float, limit: float, completes: Callable[[], bool]) -> None:
        """Raises DistBackendError if a peer failed (unless ``completes()`` within the grace) or past ``deadline``."""
        failure = self.monitor.failure()
        if failure is not None and completes():
            return  # the operation completed anyway (the peer failed or left after taking part)
        if failure is not None:
            error = DistBackendError(f"[Rank {self.rank}] {name} failed: {failure}")
            self.mark_broken(str(error))
            raise error
        if time.monotonic() > deadline:
            error = DistBackendError(
                f"[Rank {self.rank}] Watchdog caught collective operation timeout: {name} ran for "
                f"more than {limit:g} seconds. {self.monitor.describe_peers()}")
            self.mark_broken(str(error))
            raise error

    def run_inline(self, name: str, steps: Iterator[Any], timeout: float) -> bool:
        """Runs ``steps`` (nonblocking MPI requests) on the calling thread when nothing is queued.

        Note [Inline small collectives]
        ===============================
        A synchronous collective of at most ``INLINE_MAX_BYTES`` pays, on the communication thread,
        two thread wake-ups, which on a loaded machine cost milliseconds: more than the collective.
        When no job is queued or running (so issue order is kept), it runs here instead, as
        nonblocking MPI calls (Iallgather for the signature, then Iallreduce / Ibcast) polled with
        ``Test``; every 1024 polls the monitor and the deadline are consulted exactly as ``Work.wait``
        does, so failures and timeouts are reported the same way. Large collectives stay on the
        thread, whose blocking calls use MPI's best algorithms for big messages. Returns False, having
        run nothing, when the thread has work.
        """
        if self.broken:
            raise DistBackendError(f"[Rank {self.rank}] {name}: the process group is broken by an earlier failure: "
                                   f"{self.broken_reason}")
        with self._count_lock:
            if self._outstanding:
                return False
            self._outstanding += 1
        try:
            with self._exec:
                deadline = time.monotonic() + timeout
                for req in steps:
                    polls = 0
                    while not req.Test():
                        polls += 1
                        if polls & 1023 == 0:
                            grace = time.monotonic() + _FAILURE_GRACE

                            def completes() -> bool:
                                while time.monotonic() < grace:
                                    if req.Test():
                                        return True
                                return False

                            self.check_progress(name, deadline, timeout, completes)
        finally:
            with self._count_lock:
                self._outstanding -= 1
        return True

    def mark_broken(self, reason: str) -> None:
        """After a failure or timeout (Note [Distributed engine]): later calls raise, exit skips MPI_Finalize."""
        if not self.broken:
            self.broken = True
            self.broken_reason = reason

    def shutdown(self) -> None:
        """Stops the threads (destroy_process_group); after a failure only marks the process for a hard exit."""
        if self.broken:
            return
        self.monitor.notify(_TAG_BYE, "", grace=0.5)
        self._queue.put(None)
        self.worker.join(timeout=5)
        self.monitor.stop()
        for comm in (self.world, self.monitor.comm):
            try:
                comm.Free()
            except Exception:
                pass


_engine: _Engine | None = None
_hooks_installed = False


def engine() -> _Engine:
    """The process's engine, created on first use (init_process_group)."""
    global _engine
    if _engine is None:
        _engine = _Engine()
        _install_process_hooks()
    return _engine


def release_engine() -> None:
    """destroy_process_group of the default group: the next init starts a new engine."""
    global _engine
    if _engine is not None:
        _engine.shutdown()
        if not _engine.broken:
            _engine = None


def _install_process_hooks() -> None:
    """sys.excepthook tells the peers about an uncaught exception; atexit ends MPI (Note [Distributed engine])."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous = sys.excepthook

    def excepthook(tp: type, value: BaseException, tb: Any) -> None:
        eng = _engine
        if eng is not None and not isinstance(value, DistBackendError):
            text = "".join(traceback.format_exception_only(tp, value)).strip()
            eng.monitor.notify(_TAG_FAIL, f"raised an exception: {text}", grace=2.0)
            eng.mark_broken(f"this rank raised {text}")
        previous(tp, value, tb)
        if eng is not None:
            sys.stderr.flush()
            time.sleep(0.5)  # let the peers report before a plain mpiexec ends them

    sys.excepthook = excepthook
    atexit.register(_at_exit)


def _at_exit() -> None:
    """Stops the threads and finalizes MPI only when every peer can finalize too.

    MPI_Finalize waits for the peers: after a failure here (the worker may be stuck in a call that never
    ends) or a peer's failure it is skipped, and the peers are told this rank is gone. A finalize that
    still does not return within 10 s (a peer killed before anyone noticed) ends the process with status 1.
    """
    eng = _engine
    if eng is None:
        return
    from mpi4py import MPI

    if eng.broken:
        eng.monitor.notify(_TAG_FAIL, f"exited after an error: {eng.broken_reason}", grace=1.0)
    else:
        eng.shutdown()
    lost = eng.broken or eng.monitor.failure(include_left=False) is not None
    sys.stdout.flush()
    sys.stderr.flush()
    if _mpi4py_finalizes:
        if lost:
            os._exit(1)
        return  # mpi4py's own atexit (registered before ours, so it runs after) finalizes
    if lost or MPI.Is_finalized():
        return
    timer = threading.Timer(10.0, lambda: os._exit(1))
    timer.daemon = True
    timer.start()
    MPI.Finalize()
    timer.cancel()


_mpi4py_finalizes = False
