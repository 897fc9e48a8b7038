"""backend_sdk.distributed on 2 and 4 MPI ranks: every collective and dtype against numpy, on cpu and accel.

The test functions launch this file with ``backend_sdk.distributed.run``; the ranks run ``_main``:
inputs are functions of the rank, so each rank computes the expected result with numpy itself.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from distributed_launch import launch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_every_dtype_and_device(nproc):
    launch(__file__, nproc, "collectives")


def test_groups_async_p2p_objects_on_4_ranks():
    _, out, _ = launch(__file__, 4, "api")
    assert out.count("UserWarning: backend_sdk.distributed: accel tensors are exchanged through host memory") == 4


# ---- rank side ------------------------------------------------------------------------------------------
def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def _input(name: str, rank: int, shape=(3, 4)) -> np.ndarray:
    """Values 1..3 (True/False for bool): sums and products of 4 ranks are exact in every dtype."""
    base = np.arange(int(np.prod(shape))).reshape(shape) + rank
    if name == "bool":
        return (base % 2 == 0)
    return (base % 3 + 1).astype(_np_dtype(name))


def _expected_reduce(name: str, op: str, arrays: list) -> np.ndarray:
    if name == "bool":
        stack = np.stack(arrays)
        return stack.any(0) if op in ("SUM", "MAX") else stack.all(0)
    wide = np.stack([a.astype(np.float64) for a in arrays])
    value = {"SUM": wide.sum(0), "PRODUCT": wide.prod(0), "MIN": wide.min(0), "MAX": wide.max(0),
             "AVG": wide.sum(0) / len(arrays)}[op]
    if op == "AVG" and np.dtype(_np_dtype(name)).kind in "iu":
        value = np.trunc(value)
    return value.astype(_np_dtype(name))


def _check(got, expected, what: str) -> None:
    got = got.cpu().numpy() if hasattr(got, "cpu") else got
    if got.dtype != expected.dtype or got.shape != expected.shape or \
            not np.array_equal(got.astype(np.float64), expected.astype(np.float64)):
        raise AssertionError(f"{what}: got {got!r}, expected {expected!r}")


def _collectives() -> None:
    import backend_sdk as sdk
    import backend_sdk.distributed as dist

    r, n = dist.get_rank(), dist.get_world_size()
    T = lambda a, dev: sdk.from_numpy(np.array(a, copy=True)).to(dev)  # noqa: E731  (a copy: results land in place)
    for dev in ("cpu", "accel"):  # the ranks are fresh processes that import the accel sample only
        for name in DTYPES:
            what = f"{name} on {dev}"
            inputs = [_input(name, k) for k in range(n)]
            ops = ["SUM", "PRODUCT", "MIN", "MAX"] + ([] if name == "bool" else ["AVG"])
            for op in ops:
                x = T(inputs[r], dev)
                storage = x.data_ptr()
                dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
                _check(x, _expected_reduce(name, op, inputs), f"all_reduce {op} {what}")
                assert x.data_ptr() == storage  # in place, in the caller's tensor
            # a non-contiguous tensor (a transposed view): the result lands in the view's elements
            base = T(np.zeros((4, 3), dtype=_np_dtype(name)), dev)
            view = base.t()
            view.copy_(T(inputs[r], dev))
            dist.all_reduce(view, op=dist.ReduceOp.MAX)
            _check(view, _expected_reduce(name, "MAX", inputs), f"all_reduce of a transposed view, {what}")
            _check(base, _expected_reduce(name, "MAX", inputs).T.copy(), f"the view's base, {what}")
            # broadcast from the last rank, reduce into rank 1
            x = T(inputs[r], dev)
            dist.broadcast(x, src=n - 1)
            _check(x, inputs[n - 1], f"broadcast {what}")
            x = T(inputs[r], dev)
            dist.reduce(x, dst=1, op=dist.ReduceOp.SUM)
            _check(x, _expected_reduce(name, "SUM", inputs) if r == 1 else inputs[r], f"reduce {what}")
            # gathers
            outs = [T(np.zeros((3, 4), dtype=_np_dtype(name)), dev) for _ in range(n)]
            dist.all_gather(outs, T(inputs[r], dev))
            for k in range(n):
                _check(outs[k], inputs[k], f"all_gather[{k}] {what}")
            out = T(np.zeros((3 * n, 4), dtype=_np_dtype(name)), dev)
            dist.all_gather_into_tensor(out, T(inputs[r], dev))
            _check(out, np.concatenate(inputs), f"all_gather_into_tensor {what}")
            gl = [T(np.zeros((3, 4), dtype=_np_dtype(name)), dev) for _ in range(n)] if r == 0 else None
            dist.gather(T(inputs[r], dev), gl, dst=0)
            if r == 0:
                for k in range(n):
                    _check(gl[k], inputs[k], f"gather[{k}] {what}")
            # scatter from rank n-1 of per-destination chunks
            chunks = [_input(name, 10 + k) for k in range(n)]
            y = T(np.zeros((3, 4), dtype=_np_dtype(name)), dev)
            dist.scatter(y, [T(c, dev) for c in chunks] if r == n - 1 else None, src=n - 1)
            _check(y, chunks[r], f"scatter {what}")
            # reduce_scatter: rank r gets the sum over ranks of their chunk r
            lists = [[_input(name, 3 * k + j) for j in range(n)] for k in range(n)]
            y = T(np.zeros((3, 4), dtype=_np_dtype(name)), dev)
            dist.reduce_scatter(y, [T(a, dev) for a in lists[r]])
            _check(y, _expected_reduce(name, "SUM", [lists[k][r] for k in range(n)]), f"reduce_scatter {what}")
            y = T(np.zeros((3, 4), dtype=_np_dtype(name)), dev)
            dist.reduce_scatter_tensor(y, T(np.concatenate(lists[r]), dev), op=dist.ReduceOp.MAX)
            _check(y, _expected_reduce(name, "MAX", [lists[k][r] for k in range(n)]),
                   f"reduce_scatter_tensor {what}")
            # all_to_all_single with uneven splits: rank k sends k + j + 1 rows to rank j
            rows = lambda k, j: k + j + 1  # noqa: E731
            send = [np.full((rows(r, j), 2), (10 * r + j) % 7, dtype=_np_dtype(name)) for j in range(n)]
            expect = np.concatenate([np.full((rows(k, r), 2), (10 * k + r) % 7, dtype=_np_dtype(name))
                                     for k in range(n)])
            out = T(np.zeros(expect.shape, dtype=_np_dtype(name)), dev)
            dist.all_to_all_single(out, T(np.concatenate(send), dev), [rows(k, r) for k in range(n)],
                                   [rows(r, j) for j in range(n)])
            _check(out, expect, f"all_to_all_single {what}")
    # bfloat16 / float16 are reduced as numbers, rounded once (raw-byte sums would be garbage)
    for name in ("float16", "bfloat16"):
        x = sdk.full((5,), 0.1 * (r + 1), dtype=getattr(sdk, name))
        dist.all_reduce(x)
        want = np.full(5, sum(np.float32(np.asarray(0.1 * (k + 1), dtype=_np_dtype(name))) for k in range(n)),
                       dtype=np.float32).astype(_np_dtype(name))
        _check(x, want, f"all_reduce of {name} fractions")


def _api() -> None:
    import datetime
    import os
    import warnings

    import backend_sdk as sdk
    import backend_sdk.distributed as dist

    r, n = dist.get_rank(), dist.get_world_size()
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == (str(r), str(n), str(r))
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    # groups: even ranks and odd ranks; a rank outside a group gets NON_GROUP_MEMBER and no-ops
    even = dist.new_group([0, 2])
    odd = dist.new_group([1, 3])
    mine = even if r % 2 == 0 else odd
    assert dist.get_rank(mine) == r // 2 and dist.get_world_size(mine) == 2
    assert dist.get_process_group_ranks(mine) == ([0, 2] if r % 2 == 0 else [1, 3])
    other = odd if r % 2 == 0 else even
    assert other is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(other) == -1
    x = sdk.tensor([float(r)])
    dist.all_reduce(x, group=mine)
    assert x.item() == (2.0 if r % 2 == 0 else 4.0), x
    x = sdk.tensor([float(r)])
    dist.broadcast(x, src=2 if r % 2 == 0 else 3, group=mine)  # src is a global rank
    assert x.item() == (2.0 if r % 2 == 0 else 3.0)
    x = sdk.tensor([float(r)])
    dist.broadcast(x, group_src=0, group=mine)
    assert x.item() == (0.0 if r % 2 == 0 else 1.0)
    assert dist.all_reduce(sdk.ones(1), group=other) is None
    try:
        dist.broadcast(sdk.ones(1), src=1, group=even) if r % 2 == 0 else None
        assert r % 2 == 1, "a src outside the group must be refused"
    except ValueError as e:
        assert "Global rank 1 is not part of group" in str(e), e
    # async work: several in flight, waited in any order
    tensors = [sdk.full((1000,), float(r + k)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    assert all(isinstance(w, dist.Work) for w in works)
    for w in reversed(works):
        assert w.wait() is True and w.is_completed() and w.is_success()
    for k, t in enumerate(tensors):
        assert float(t[0]) == sum(q + k for q in range(n)), t
    # 0-d and empty tensors; an async collective on a non-contiguous view lands at wait()
    x = sdk.tensor(float(r + 1))
    dist.all_reduce(x)
    assert x.item() == n * (n + 1) / 2
    e = sdk.zeros(0)
    dist.all_reduce(e)
    outs = [sdk.zeros(()) for _ in range(n)]
    dist.all_gather(outs, sdk.tensor(float(r)))
    assert [o.item() for o in outs] == [float(k) for k in range(n)]
    view = sdk.arange(8, dtype=sdk.float32).reshape(2, 4).t()
    w = dist.all_reduce(view, async_op=True)
    w.wait()
    assert view.tolist()[1] == [1.0 * n, 5.0 * n], view
    w = dist.barrier(async_op=True)
    w.wait(timeout=datetime.timedelta(seconds=30))
    # point to point: a ring in both directions at once (isend + irecv do not wait on each other)
    big = sdk.full((300_000,), float(r))  # above MPI's eager limit: rendezvous sends
    got = sdk.zeros(300_000)
    s = dist.isend(big, dst=(r + 1) % n)
    q = dist.irecv(got, src=(r - 1) % n)
    q.wait()
    s.wait()
    assert float(got[0]) == (r - 1) % n and float(got[-1]) == (r - 1) % n
    if r == 0:
        dist.send(sdk.tensor([7, 8], dtype=sdk.int32), dst=3, tag=5)
    elif r == 3:
        z = sdk.zeros(2, dtype=sdk.int32)
        assert dist.recv(z, tag=5) == 0 and z.tolist() == [7, 8]
    # objects
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "name": f"r{r}"})
    assert objs == [{"rank": k, "name": f"r{k}"} for k in range(n)], objs
    lst = [r, "x", None]
    dist.broadcast_object_list(lst, src=2)
    assert lst == [2, "x", None]
    gathered = [None] * n if r == 1 else None
    dist.gather_object(("g", r), gathered, dst=1)
    assert r != 1 or gathered == [("g", k) for k in range(n)]
    out = [None]
    dist.scatter_object_list(out, [f"s{k}" for k in range(n)] if r == 0 else None, src=0)
    assert out == [f"s{r}"]
    # accel through host staging: one UserWarning per process, results in the accel tensor
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = sdk.ones(4, device="accel") * (r + 1)
        dist.all_reduce(a)
        dist.all_reduce(a)
    assert a.device.type == "accel" and a.cpu().tolist() == [float(n * (n + 1) // 2 * n)] * 4, a
    staged = [w for w in caught if "through host memory" in str(w.message)]
    assert len(staged) == 1, [str(w.message) for w in caught]
    print(f"{staged[0].category.__name__}: {staged[0].message}", flush=True)
    # a backend registered for the accel device type (here: a Python one counting its calls over MPI)
    from backend_sdk.distributed._mpi_backend import MPIBackend

    calls = []

    class Counting(MPIBackend):
        def all_reduce(self, array, op):
            calls.append(op)
            super().all_reduce(array, op)

    def factory(store, rank, size, timeout):
        assert store is None and rank == dist.get_rank(grp) and size == n
        return Counting(grp._comm)

    dist.Backend.register_backend("counting", factory, devices=["accel"])
    assert dist.Backend.COUNTING == "counting" and "counting" in dist.Backend.backend_list
    grp = dist.new_group(backend="cpu:mpi,accel:counting")
    a = sdk.ones(3, device="accel")
    dist.all_reduce(a, group=grp, op=dist.ReduceOp.MAX)
    c = sdk.ones(3)
    dist.all_reduce(c, group=grp)
    assert calls == ["MAX"] and a.cpu().tolist() == [1.0] * 3 and c.tolist() == [float(n)] * 3
    assert dist.get_backend(grp) == "cpu:mpi,accel:counting"
    dist.destroy_process_group(grp)
    dist.destroy_process_group()
    assert not dist.is_initialized()
    # init again after destroy
    dist.init_process_group("mpi")
    x = sdk.ones(1)
    dist.all_reduce(x)
    assert x.item() == n


def _main(case: str) -> None:
    import backend_sdk.distributed as dist
    import accel  # noqa: F401  (the sample backend on device_sim)

    dist.init_process_group("mpi")
    {"collectives": _collectives, "api": _api}[case]()
    print(f"RANK {dist.get_rank()} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    _main(sys.argv[1])
