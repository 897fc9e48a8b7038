"""The "mpi" backend: collectives of host numpy arrays on one MPI communicator.

Note [MPI backend data path]
============================
The frontend (distributed_c10d.py) hands this backend C-contiguous numpy arrays that *are* the
caller's tensors' memory whenever it can (a contiguous CPU tensor: ``Tensor.numpy()``, zero-copy via
the buffer protocol); a non-contiguous tensor or one on a device is staged into a contiguous host array
and copied back after the operation (``_HostView``). Reductions run in MPI's own reduction operators
for every dtype MPI has (integers, float32/64; bool as uint8 with MAX for SUM and MIN for PRODUCT, as
NCCL does); float16 and bfloat16, which MPI cannot reduce, are widened to float32 for the reduction and
rounded once on the way back, so the result is the correctly rounded sum, never a reduction of raw bytes.
Non-reducing collectives move bytes (MPI.BYTE) for every dtype.

Every collective first exchanges a small signature (operation, root, dtype, element count) with an
Allgather: ranks that disagree (different shapes, dtypes or operations) get a DistBackendError naming
every rank's side instead of corrupted data or a hang. That costs one latency-bound Allgather of 48
bytes per collective.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from ._engine import DistBackendError, _Pending

__all__ = ["MPIBackend"]

_OPS = ["all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all", "gather", "scatter",
        "barrier", "object"]


def _dtype_code(array: np.ndarray) -> int:
    return _DTYPES.index(array.dtype.name) if array.dtype.name in _DTYPES else 99


_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _dtype_name(code: int) -> str:
    return _DTYPES[code] if 0 <= code < len(_DTYPES) else "unknown"


class MPIBackend:
    """Collectives of one process group over an MPI communicator (the group's ranks, in group order)."""

    name = "mpi"

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._sig = np.zeros(6, dtype=np.int64)
        self._sigs = np.zeros((self.size, 6), dtype=np.int64)

    # ---- the signature check (Note [MPI backend data path]) ---------------------------------------
    def _signature(self, op: str, root: int, array: np.ndarray | None, extra: int) -> np.ndarray:
        sig = self._sig
        sig[:] = (_OPS.index(op), root, -1 if array is None else _dtype_code(array),
                  -1 if array is None else array.size, extra, 0)
        return sig

    def check(self, op: str, root: int, array: np.ndarray | None, extra: int = 0) -> None:
        sig = self._signature(op, root, array, extra)
        self.comm.Allgather(sig, self._sigs)
        self._compare(op, sig)

    def check_steps(self, op: str, root: int, array: np.ndarray | None, extra: int = 0) -> Iterator[Any]:
        """``check`` as nonblocking steps (Note [Inline small collectives] in _engine.py)."""
        sig = self._signature(op, root, array, extra)
        yield self.comm.Iallgather(sig, self._sigs)
        self._compare(op, sig)

    def _compare(self, op: str, sig: np.ndarray) -> None:
        if (self._sigs == sig).all():
            return
        sides = []
        for r, (o, rt, dt, n, ex, _) in enumerate(self._sigs.tolist()):
            what = _OPS[o] if 0 <= o < len(_OPS) else "?"
            part = f"rank {r}: {what}"
            if dt >= 0:
                part += f" of {n} elements of {_dtype_name(dt)}"
            if what in ("broadcast", "reduce", "gather", "scatter"):
                part += f" (root {rt})"
            sides.append(part)
        raise DistBackendError(f"Mismatched collective across the ranks of the group in {op}: " + "; ".join(sides)
                               + ". Every rank must call the same collective with tensors of the same shape and dtype.")

    # ---- reductions ----------------------------------------------------------------------------------
    def _mpi_op(self, op: str, array: np.ndarray) -> Any:
        MPI = self.MPI
        if array.dtype == np.bool_:
            return {"SUM": MPI.MAX, "MAX": MPI.MAX, "BOR": MPI.MAX, "PRODUCT": MPI.MIN, "MIN": MPI.MIN,
                    "BAND": MPI.MIN, "BXOR": MPI.BXOR}[op]
        return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
                "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[op]

    @staticmethod
    def _reducible(array: np.ndarray) -> np.ndarray:
        """The array MPI reduces: float16/bfloat16 widened to float32, bool as uint8, else itself."""
        if array.dtype.name in ("float16", "bfloat16"):
            return array.astype(np.float32)
        if array.dtype == np.bool_:
            return array.view(np.uint8)
        return array

    def _finish(self, op: str, array: np.ndarray, work: np.ndarray, divide_by: int) -> None:
        if op == "AVG":
            if work.dtype.kind == "f":
                work /= divide_by
            else:  # integer average truncates toward zero (NCCL's)
                np.copyto(work, np.sign(work) * (np.abs(work) // divide_by))
        if work is not array and work.base is not array:
            np.copyto(array, work, casting="unsafe")

    def all_reduce(self, array: np.ndarray, op: str) -> None:
        self.check("all_reduce", 0, array)
        work = self._reducible(array)
        self.comm.Allreduce(self.MPI.IN_PLACE, work, op=self._mpi_op(op, array))
        self._finish(op, array, work, self.size)

    def all_reduce_steps(self, array: np.ndarray, op: str) -> Iterator[Any]:
        """``all_reduce`` as nonblocking steps, for the inline path of small collectives."""
        yield from self.check_steps("all_reduce", 0, array)
        work = self._reducible(array)
        yield self.comm.Iallreduce(self.MPI.IN_PLACE, work, op=self._mpi_op(op, array))
        self._finish(op, array, work, self.size)

    def reduce(self, array: np.ndarray, root: int, op: str) -> None:
        self.check("reduce", root, array)
        work = self._reducible(array)
        if self.rank == root:
            self.comm.Reduce(self.MPI.IN_PLACE, work, op=self._mpi_op(op, array), root=root)
            self._finish(op, array, work, self.size)
        else:
            self.comm.Reduce(work, None, op=self._mpi_op(op, array), root=root)

    def reduce_scatter(self, output: np.ndarray, inputs: np.ndarray, op: str) -> None:
        """``inputs`` is (size, *output.shape) contiguous; rank r gets the reduction of inputs[r]."""
        self.check("reduce_scatter", 0, inputs)
        work_in = self._reducible(inputs)
        work_out = self._reducible(output) if output.dtype.name not in ("float16", "bfloat16") else \
            np.empty(output.shape, dtype=np.float32)
        self.comm.Reduce_scatter_block(work_in, work_out, op=self._mpi_op(op, inputs))
        self._finish(op, output, work_out, self.size)

    # ---- data movement (bytes) -----------------------------------------------------------------------
    @staticmethod
    def _bytes(array: np.ndarray) -> np.ndarray:
        return array.reshape(-1).view(np.uint8)

    def broadcast(self, array: np.ndarray, root: int) -> None:
        self.check("broadcast", root, array)
        self.comm.Bcast([self._bytes(array), self.MPI.BYTE], root=root)

    def broadcast_steps(self, array: np.ndarray, root: int) -> Iterator[Any]:
        """``broadcast`` as nonblocking steps, for the inline path of small collectives."""
        yield from self.check_steps("broadcast", root, array)
        yield self.comm.Ibcast([self._bytes(array), self.MPI.BYTE], root=root)

    def all_gather(self, output: np.ndarray, array: np.ndarray) -> None:
        """``output`` is (size * array.size) elements, contiguous."""
        self.check("all_gather", 0, array)
        self.comm.Allgather([self._bytes(array), self.MPI.BYTE], [self._bytes(output), self.MPI.BYTE])

    def gather(self, output: np.ndarray | None, array: np.ndarray, root: int) -> None:
        self.check("gather", root, array)
        recv = [self._bytes(output), self.MPI.BYTE] if self.rank == root else None
        self.comm.Gather([self._bytes(array), self.MPI.BYTE], recv, root=root)

    def scatter(self, array: np.ndarray, inputs: np.ndarray | None, root: int) -> None:
        self.check("scatter", root, array)
        send = [self._bytes(inputs), self.MPI.BYTE] if self.rank == root else None
        self.comm.Scatter(send, [self._bytes(array), self.MPI.BYTE], root=root)

    def all_to_all(self, output: np.ndarray, array: np.ndarray, send_counts: Sequence[int],
                   recv_counts: Sequence[int]) -> None:
        """Counts are elements per peer; the check compares what each rank sends to what its peer expects."""
        self.check("all_to_all", 0, None)
        counts = np.zeros((self.size, self.size), dtype=np.int64)
        self.comm.Allgather(np.asarray(send_counts, dtype=np.int64), counts)
        expected = counts[:, self.rank]
        if list(expected) != list(recv_counts):
            raise DistBackendError(f"all_to_all_single: rank {self.rank} expects {list(recv_counts)} elements from "
                                   f"ranks 0..{self.size - 1} but they send {expected.tolist()}")
        item = array.dtype.itemsize
        s_counts = [int(c) * item for c in send_counts]
        r_counts = [int(c) * item for c in recv_counts]
        s_displ = np.concatenate([[0], np.cumsum(s_counts)[:-1]]).astype(int).tolist()
        r_displ = np.concatenate([[0], np.cumsum(r_counts)[:-1]]).astype(int).tolist()
        self.comm.Alltoallv([self._bytes(array), (s_counts, s_displ), self.MPI.BYTE],
                            [self._bytes(output), (r_counts, r_displ), self.MPI.BYTE])

    def barrier(self) -> None:
        self.check("barrier", 0, None)

    def barrier_steps(self) -> Iterator[Any]:
        """``barrier`` as nonblocking steps (the signature exchange is the barrier)."""
        yield from self.check_steps("barrier", 0, None)

    # ---- objects (pickled by mpi4py) ---------------------------------------------------------------
    def bcast_object(self, obj: Any, root: int) -> Any:
        self.check("object", root, None, 1)
        return self.comm.bcast(obj, root=root)

    def allgather_object(self, obj: Any) -> list:
        self.check("object", 0, None, 2)
        return self.comm.allgather(obj)

    def gather_object(self, obj: Any, root: int) -> list | None:
        self.check("object", root, None, 3)
        return self.comm.gather(obj, root=root)

    def scatter_object(self, objs: list | None, root: int) -> Any:
        self.check("object", root, None, 4)
        return self.comm.scatter(objs, root=root)

    # ---- point to point (nonblocking: Note [Distributed engine]) ---------------------------------------
    def send(self, array: np.ndarray, dst: int, tag: int) -> _Pending:
        header = np.array([_dtype_code(array), array.size], dtype=np.int64)
        reqs = [self.comm.Isend(header, dest=dst, tag=tag),
                self.comm.Isend([self._bytes(array), self.MPI.BYTE], dest=dst, tag=tag)]
        return _Pending(reqs, result=[header])  # keeps the header alive until sent

    def recv(self, array: np.ndarray, src: int | None, tag: int) -> _Pending:
        MPI = self.MPI
        header = np.zeros(2, dtype=np.int64)
        req = self.comm.Irecv(header, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        pending = _Pending([req])

        def payload() -> list:
            source = pending.statuses[0].Get_source()
            code, count = int(header[0]), int(header[1])
            if code != _dtype_code(array) or count != array.size:
                # the payload is still sent: receive and drop it so the channel stays usable
                self.comm.Recv([bytearray(count * 8 + 8), MPI.BYTE], source=source, tag=tag)
                raise DistBackendError(
                    f"recv: rank {source} sent {count} elements of {_dtype_name(code)} but this rank "
                    f"(rank {self.rank}) receives into {array.size} elements of {array.dtype.name}")
            pending.result = source
            return [self.comm.Irecv([self._bytes(array), MPI.BYTE], source=source, tag=tag)]

        pending.step = payload
        return pending
