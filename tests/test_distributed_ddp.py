"""DistributedDataParallel and DistributedSampler on 2 MPI ranks (tests launch this file's ``_main``)."""
from __future__ import annotations

import sys

import numpy as np

from distributed_launch import launch


def test_ddp_training_no_sync_unused_parameters_and_sampler_on_2_ranks():
    launch(__file__, 2, "ddp")


def test_sampler_shares_are_disjoint_and_cover_the_dataset():
    from backend_sdk.utils.data import DistributedSampler

    for n, replicas, drop in ((10, 3, False), (10, 3, True), (7, 2, False), (8, 4, True)):
        shares = [list(DistributedSampler(range(n), replicas, r, shuffle=True, seed=3, drop_last=drop))
                  for r in range(replicas)]
        assert len({len(s) for s in shares}) == 1
        flat = [i for s in shares for i in s]
        if drop:
            assert len(set(flat)) == len(flat) == (n // replicas) * replicas
        else:
            assert set(flat) == set(range(n)) and len(flat) == -(-n // replicas) * replicas
    a = DistributedSampler(range(20), 2, 0)
    first = list(a)
    assert list(a) == first
    a.set_epoch(1)
    assert list(a) != first  # a new epoch, a new order
    assert list(DistributedSampler(range(6), 2, 1, shuffle=False)) == [1, 3, 5]
    import pytest

    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), 2, 2)


# ---- rank side ------------------------------------------------------------------------------------------
def _main() -> None:
    import backend_sdk as sdk
    import backend_sdk.distributed as dist
    from backend_sdk import nn
    from backend_sdk.nn.parallel import DistributedDataParallel as DDP
    from backend_sdk.nn.parallel import distributed as ddp_module
    from backend_sdk.utils.data import DistributedSampler

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()

    def net() -> nn.Module:
        return nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))

    rng = np.random.default_rng(0)
    X = sdk.from_numpy(rng.standard_normal((8 * n, 6)).astype(np.float32))
    Y = sdk.from_numpy(rng.standard_normal((8 * n, 3)).astype(np.float32))
    sdk.manual_seed(1234 + r)  # different initial weights per rank: DDP must broadcast rank 0's
    model = DDP(net(), bucket_cap_mb=0.004)  # ~4 KiB buckets: several buckets
    assert len(model._buckets) >= 3, len(model._buckets)
    reference = net()
    with sdk.no_grad():
        for mine, ref in zip(model.module.parameters(), reference.parameters()):
            ref.copy_(mine)
    gathered = [None] * n
    dist.all_gather_object(gathered, [p.detach().numpy().copy() for p in model.module.parameters()])
    for a, b in zip(*gathered):
        assert np.array_equal(a, b), "parameters differ across ranks after construction"

    # overlap: the first bucket is launched while most parameters still wait for their gradient
    launched_at = []
    original = ddp_module.dist.all_reduce

    def recording(tensor, *args, **kwargs):
        launched_at.append(sum(model._ready))
        return original(tensor, *args, **kwargs)

    ddp_module.dist.all_reduce = recording
    opt = sdk.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt_ref = sdk.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    sampler = DistributedSampler(range(8 * n), shuffle=False)
    mine = list(sampler)
    for step in range(4):
        opt.zero_grad()
        opt_ref.zero_grad()
        xs, ys = X[mine[0]:mine[-1] + 1:n], Y[mine[0]:mine[-1] + 1:n]  # rank r's rows r, r + n, ...
        ((model(xs) - ys) ** 2).mean().backward()
        opt.step()
        ((reference(X) - Y) ** 2).mean().backward()  # one process, the concatenated batch
        opt_ref.step()
    ddp_module.dist.all_reduce = original
    assert launched_at[0] <= len(model._params) // 2, launched_at  # half the gradients still to come
    for (name, p), q in zip(model.module.named_parameters(), reference.parameters()):
        diff = float((p - q).abs().max())
        assert diff < 1e-5, f"{name} differs from the single-process run by {diff}"

    # no_sync: gradients of two micro-batches accumulate locally; the synced backward averages their sum
    model.zero_grad()
    reference.zero_grad()
    with model.no_sync():
        ((model(X[r * 8:r * 8 + 4]) - Y[r * 8:r * 8 + 4]) ** 2).sum().backward()
    local_first = [p.grad.clone() for p in model.module.parameters()]
    ((model(X[r * 8 + 4:r * 8 + 8]) - Y[r * 8 + 4:r * 8 + 8]) ** 2).sum().backward()
    ((reference(X) - Y) ** 2).sum().backward()
    for p, q, first in zip(model.module.parameters(), reference.parameters(), local_first):
        assert float((p.grad - q.grad / n).abs().max()) < 1e-4
    gathered = [None] * n
    dist.all_gather_object(gathered, [g.numpy().copy() for g in local_first])
    assert any(not np.array_equal(a, b) for a, b in zip(*gathered)), "no_sync must not communicate"

    # find_unused_parameters: rank 0 uses the second head, rank 1 does not
    class TwoHeads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 2)
            self.b = nn.Linear(4, 2)

        def forward(self, x, use_b):
            return self.a(x) + self.b(x) if use_b else self.a(x)

    sdk.manual_seed(7)
    heads = DDP(TwoHeads(), find_unused_parameters=True)
    plain = TwoHeads()
    plain.load_state_dict(heads.module.state_dict())
    x = sdk.from_numpy(rng.standard_normal((3, 4)).astype(np.float32) + r)
    for _ in range(2):  # twice: the state resets between iterations
        heads.zero_grad()
        plain.zero_grad()
        heads(x, r == 0).sum().backward()
        plain(x, r == 0).sum().backward()
        local = [p.grad.numpy().copy() if p.grad is not None else np.zeros(tuple(p.shape), np.float32)
                 for p in plain.parameters()]
        every = [None] * n
        dist.all_gather_object(every, local)
        for p, *grads in zip(heads.module.parameters(), *every):
            assert p.grad is not None and np.allclose(p.grad.numpy(), sum(grads) / n, atol=1e-6)

    # without find_unused_parameters a parameter without gradient is PyTorch's error at the next forward
    strict = DDP(TwoHeads())
    strict(x, False).sum().backward()
    try:
        strict(x, False)
        raise AssertionError("expected the unfinished-reduction error")
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
        assert "b.weight, b.bias" in str(e), e

    # the sampler's shares are disjoint across ranks and cover the dataset
    shares = [None] * n
    dist.all_gather_object(shares, list(DistributedSampler(range(11), seed=5)))
    assert set().union(*map(set, shares)) == set(range(11)) and all(len(s) == 6 for s in shares)
    print(f"RANK {r} OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    {"ddp": _main}[sys.argv[1]]()
