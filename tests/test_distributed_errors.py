"""backend_sdk.distributed's errors: PyTorch's types and texts, before init (in process) and across 2 ranks."""
from __future__ import annotations

import sys
import warnings

import pytest

import backend_sdk as sdk
import backend_sdk.distributed as dist
from distributed_launch import launch

NOT_INIT = "Default process group has not been initialized, please make sure to call init_process_group."


@pytest.mark.parametrize("call", [
    lambda: dist.get_rank(), lambda: dist.get_world_size(), lambda: dist.get_backend(),
    lambda: dist.all_reduce(sdk.ones(2)), lambda: dist.broadcast(sdk.ones(2), src=0), lambda: dist.barrier(),
    lambda: dist.new_group([0]), lambda: dist.destroy_process_group(), lambda: dist.all_gather_object([None], 1),
    lambda: dist.send(sdk.ones(1), dst=1),
])
def test_calls_before_init_process_group_raise_pytorchs_value_error(call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == NOT_INIT


def test_argument_types_are_checked_before_anything_else():
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type backend_sdk.Tensor"):
        dist.all_reduce([1, 2])
    with pytest.raises(TypeError, match="Expected timeout argument to be of type datetime.timedelta"):
        dist.init_process_group("mpi", timeout=5)
    assert not dist.is_initialized()


def test_backend_names_and_registration():
    assert dist.Backend("MPI") == "mpi" and dist.Backend.MPI == "mpi"
    with pytest.raises(ValueError, match="Backend constructor parameter must be string-ish"):
        dist.Backend(3)
    with pytest.warns(UserWarning, match="Device capability of noisy unspecified"):
        dist.Backend.register_backend("noisy", lambda *a: None)
    dist.Backend.register_backend("vendorccl", lambda *a: None, devices=["vendordev"])
    assert dist.Backend.VENDORCCL == "vendorccl"
    assert dist.get_default_backend_for_device("vendordev") == "vendorccl"
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    with pytest.raises(ValueError, match="Default backend not registered for device : nodev"):
        dist.get_default_backend_for_device("nodev")
    from backend_sdk.distributed.distributed_c10d import _parse_backend

    assert _parse_backend("cpu:mpi,accel:vendorccl") == {"cpu": "mpi", "accel": "vendorccl"}
    with pytest.raises(ValueError, match="Invalid device:backend pairing: cpu"):
        _parse_backend("cpu,accel:mpi")
    with pytest.raises(ValueError, match="Duplicate device type cpu"):
        _parse_backend("cpu:mpi,cpu:mpi")
    with pytest.raises(ValueError, match="Invalid backend: 'nonesuch'"):
        _parse_backend("nonesuch")


def test_backends_that_are_not_built_in_are_refused_at_init():
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group("nccl")
    with pytest.raises(RuntimeError, match="Distributed package doesn't have GLOO built in"):
        dist.init_process_group("cpu:gloo")
    with pytest.raises(ValueError, match="Invalid backend: 'nosuch' for device type accel"):
        dist.init_process_group("cpu:mpi,accel:nosuch")
    assert not dist.is_initialized()


def test_reduce_op_values():
    assert dist.ReduceOp.SUM != dist.ReduceOp.MAX and dist.ReduceOp(dist.ReduceOp.AVG) is dist.ReduceOp.AVG
    assert dist.ReduceOp.RedOpType.PRODUCT is dist.ReduceOp.PRODUCT
    assert repr(dist.ReduceOp.MIN) == "<RedOpType.MIN: 3>"


def test_launcher_refuses_what_it_cannot_do(capsys):
    from backend_sdk.distributed.run import parse_args

    ns = parse_args(["--nproc_per_node", "3", "--standalone", "train.py", "--lr", "0.1"])
    assert ns.nproc_per_node == 3 and ns.training_script == "train.py" and ns.training_script_args == ["--lr", "0.1"]
    for bad, text in ((["--nnodes", "2", "x.py"], "only one node"), (["--max-restarts", "1", "x.py"], "max-restarts"),
                      (["--nproc-per-node", "gpu", "x.py"], "must be an integer")):
        with pytest.raises(SystemExit):
            parse_args(bad)
        assert text in capsys.readouterr().err


def test_launcher_command_line():
    from distributed_launch import require_mpi

    require_mpi()
    from backend_sdk.distributed.run import mpiexec_command

    cmd = mpiexec_command(3, ["pkg.train", "--x"], module=True)
    assert cmd[1:3] == ["-n", "3"] and "-disable-auto-cleanup" in cmd  # the mpich wheel's mpiexec is Hydra
    assert cmd[-5:] == ["-m", "backend_sdk.distributed._worker", "--module", "pkg.train", "--x"]
    assert mpiexec_command(1, ["./a.out"], no_python=True)[-2:] == ["--no-python", "./a.out"]


def test_bad_input_across_two_ranks():
    launch(__file__, 2, "bad_input")


# ---- rank side ------------------------------------------------------------------------------------------
def _expect(exc_type, text, fn):
    try:
        fn()
    except exc_type as e:
        assert text in str(e), f"expected {text!r} in {e!r}"
        return e
    raise AssertionError(f"expected {exc_type.__name__} containing {text!r}")


def _bad_input() -> None:
    import datetime

    import accel  # noqa: F401

    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
    r = dist.get_rank()
    _expect(ValueError, "trying to initialize the default process group twice!", lambda: dist.init_process_group("mpi"))
    # shapes and dtypes that differ across ranks: both ranks get the same error naming both sides
    e = _expect(dist.DistBackendError, "Mismatched collective across the ranks of the group in all_reduce",
                lambda: dist.all_reduce(sdk.ones(4 if r == 0 else 6)))
    assert "rank 0: all_reduce of 4 elements of float32; rank 1: all_reduce of 6 elements of float32" in str(e), e
    assert isinstance(e, RuntimeError)
    e = _expect(dist.DistBackendError, "Mismatched collective",
                lambda: dist.broadcast(sdk.ones(3, dtype=sdk.float32 if r == 0 else sdk.int64), src=0))
    assert "3 elements of float32" in str(e) and "3 elements of int64" in str(e), e
    e = _expect(dist.DistBackendError, "Mismatched collective",
                lambda: dist.all_reduce(sdk.ones(2)) if r == 0 else dist.broadcast(sdk.ones(2), src=0))
    assert "rank 0: all_reduce" in str(e) and "rank 1: broadcast" in str(e), e
    # the group still works after a mismatch was reported
    x = sdk.ones(2)
    dist.all_reduce(x)
    assert x.tolist() == [2.0, 2.0]
    # a tensor on a device the group's backend does not serve
    cpu_only = dist.new_group(backend="cpu:mpi")
    _expect(RuntimeError, "No backend type associated with device type accel",
            lambda: dist.all_reduce(sdk.ones(2, device="accel"), group=cpu_only))
    # local argument errors (PyTorch's types)
    _expect(TypeError, "Cannot use ReduceOp.AVG with boolean inputs",
            lambda: dist.all_reduce(sdk.ones(2, dtype=sdk.bool), op=dist.ReduceOp.AVG))
    _expect(TypeError, "ReduceOp.BAND is only defined for integer and bool tensors",
            lambda: dist.all_reduce(sdk.ones(2), op=dist.ReduceOp.BAND))
    _expect(TypeError, "Invalid reduce op", lambda: dist.all_reduce(sdk.ones(2), op="sum"))
    _expect(ValueError, "tensor_list has 3 tensors, expected 2",
            lambda: dist.all_gather([sdk.ones(1)] * 3, sdk.ones(1)))
    _expect(ValueError, "output tensor size must be equal to world_size times input tensor size",
            lambda: dist.all_gather_into_tensor(sdk.ones(3), sdk.ones(2)))
    _expect(ValueError, "input tensor must be the same size as output size times world size",
            lambda: dist.reduce_scatter_tensor(sdk.ones(2), sdk.ones(3)))
    _expect(ValueError, "Global rank 5 is not part of group", lambda: dist.broadcast(sdk.ones(1), src=5))
    _expect(ValueError, "Can't specify both group_rank and global_rank",
            lambda: dist.broadcast(sdk.ones(1), src=0, group_src=0))
    _expect(ValueError, "Invalid destination rank: should not be the same as the rank of the current process.",
            lambda: dist.send(sdk.ones(1), dst=r))
    _expect(ValueError, "Argument ``gather_list`` must be specified on destination rank.",
            lambda: dist.gather(sdk.ones(1), None, dst=r))
    _expect(ValueError, "Invalid rank 7", lambda: dist.new_group([0, 7]))
    # a receive into a buffer of another size or dtype: the receiver gets the error, the channel stays usable
    if r == 0:
        dist.send(sdk.ones(5), dst=1)
        dist.send(sdk.ones(2, dtype=sdk.int32), dst=1)
        dist.send(sdk.full((3,), 4.0), dst=1)
    else:
        _expect(dist.DistBackendError, "recv: rank 0 sent 5 elements of float32 but this rank (rank 1) receives into "
                "3 elements of float32", lambda: dist.recv(sdk.zeros(3), src=0))
        _expect(dist.DistBackendError, "sent 2 elements of int32", lambda: dist.recv(sdk.zeros(2), src=0))
        z = sdk.zeros(3)
        dist.recv(z, src=0)
        assert z.tolist() == [4.0] * 3
    dist.barrier()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist.destroy_process_group(cpu_only)
    _expect(ValueError, "Invalid process group specified or has been destroyed.",
            lambda: dist.all_reduce(sdk.ones(1), group=cpu_only))
    print(f"RANK {r} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    {"bad_input": _bad_input}[sys.argv[1]]()
