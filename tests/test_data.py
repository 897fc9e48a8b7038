"""utils.data: datasets, samplers, default_collate, DataLoader (shuffle from a generator, drop_last,
collate_fn, samplers, worker processes and their errors), random_split."""
from __future__ import annotations

import os
from collections import namedtuple

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.utils.data import (BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler,
                                    SequentialSampler, SubsetRandomSampler, TensorDataset, default_collate,
                                    get_worker_info, random_split)


def _ds(n=10):
    return TensorDataset(torch.arange(n * 2, dtype=torch.float32).view(n, 2), torch.arange(n))


def test_tensor_dataset_and_size_check():
    ds = _ds()
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and int(y.item()) == 3 and len(ds) == 10
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(torch.ones(3), torch.ones(4))


def test_default_collate_rules():
    b = default_collate([torch.ones(2), torch.zeros(2)])
    assert list(b.shape) == [2, 2]
    f = default_collate([1.5, 2.5])
    assert f.dtype == torch.float64 and f.tolist() == [1.5, 2.5]
    assert default_collate([1, 2]).dtype == torch.int64
    assert default_collate(["a", "b"]) == ["a", "b"]
    d = default_collate([{"x": 1, "y": np.ones(2)}, {"x": 2, "y": np.zeros(2)}])
    assert d["x"].tolist() == [1, 2] and list(d["y"].shape) == [2, 2]
    P = namedtuple("P", "a b")
    p = default_collate([P(1, 2.0), P(3, 4.0)])
    assert isinstance(p, P) and p.a.tolist() == [1, 3]
    assert isinstance(default_collate([(1, 2), (3, 4)]), list)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                        "lists; found <class 'object'>"):
        default_collate([object()])


def test_dataloader_batches_drop_last_and_len():
    dl = DataLoader(_ds(), batch_size=4)
    batches = [y.tolist() for _, y in dl]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(dl) == 3
    dl = DataLoader(_ds(), batch_size=4, drop_last=True)
    assert [y.tolist() for _, y in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(dl) == 2
    single = list(DataLoader(_ds(3), batch_size=None))
    assert int(single[0][1].item()) == 0 and len(single) == 3
    custom = list(DataLoader(_ds(4), batch_size=2, collate_fn=lambda batch: len(batch)))
    assert custom == [2, 2]


def test_shuffle_is_a_permutation_reproducible_from_the_generator():
    def order(seed):
        g = torch.Generator()
        g.manual_seed(seed)
        return [i for _, y in DataLoader(_ds(20), batch_size=5, shuffle=True, generator=g) for i in y.tolist()]

    a, b, c = order(1), order(1), order(2)
    assert sorted(a) == list(range(20)) and a == b and a != c and a != list(range(20))
    torch.manual_seed(4)
    d = [i for _, y in DataLoader(_ds(20), batch_size=5, shuffle=True) for i in y.tolist()]
    torch.manual_seed(4)
    e = [i for _, y in DataLoader(_ds(20), batch_size=5, shuffle=True) for i in y.tolist()]
    assert d == e  # without a generator the order comes from the default generator


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = torch.Generator()
    g.manual_seed(0)
    r = list(RandomSampler(range(6), generator=g))
    assert sorted(r) == list(range(6))
    rep = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(rep) == 50 and set(rep) <= {0, 1, 2}
    sub = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    assert list(BatchSampler(range(5), 2, drop_last=False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, drop_last=True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(5), 0, False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    dl = DataLoader(_ds(), batch_sampler=BatchSampler(SequentialSampler(range(10)), 3, False))
    assert [y.tolist() for _, y in dl][-1] == [9]


def test_dataloader_argument_checks():
    ds = _ds()
    for kwargs, msg in [
        ({"num_workers": -1}, "num_workers option should be non-negative"),
        ({"sampler": SequentialSampler(ds), "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
        ({"batch_sampler": BatchSampler(range(10), 2, False), "batch_size": 3},
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
        ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching"),
        ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
        ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in multiprocessing"),
        ({"timeout": -1}, "timeout option should be non-negative"),
    ]:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kwargs)


class _Squares(Dataset):
    def __len__(self):
        return 13

    def __getitem__(self, i):
        info = get_worker_info()
        return {"x": np.float32(i * i), "worker": -1 if info is None else info.id, "pid": os.getpid()}


def test_worker_processes_keep_order_and_run_elsewhere():
    dl = DataLoader(_Squares(), batch_size=3, num_workers=2)
    batches = list(dl)
    assert [b["x"].tolist() for b in batches][0] == [0.0, 1.0, 4.0]
    assert [v for b in batches for v in b["x"].tolist()] == [float(i * i) for i in range(13)]
    workers = {w for b in batches for w in b["worker"].tolist()}
    pids = {p for b in batches for p in b["pid"].tolist()}
    assert workers == {0, 1} and os.getpid() not in pids
    same = [b["x"].tolist() for b in DataLoader(_Squares(), batch_size=3, num_workers=0)]
    assert same == [b["x"].tolist() for b in batches]


def test_worker_tensors_come_back_as_tensors_and_shuffle_matches_single_process():
    def run(workers):
        g = torch.Generator()
        g.manual_seed(3)
        return [y.tolist() for _, y in DataLoader(_ds(12), batch_size=4, shuffle=True, generator=g,
                                                  num_workers=workers)]

    assert run(2) == run(0)


class _Broken(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("no such sample")
        return i


def test_worker_exception_is_reraised_with_its_traceback():
    with pytest.raises(KeyError) as e:
        list(DataLoader(_Broken(), batch_size=1, num_workers=2))
    assert "Caught KeyError in DataLoader worker process" in str(e.value)
    assert "no such sample" in str(e.value)


class _Killer(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 1:
            os._exit(3)
        return i


def test_dead_worker_is_reported_instead_of_hanging():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) .*\) exited unexpectedly"):
        list(DataLoader(_Killer(), batch_size=1, num_workers=1))


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_single_and_multi_worker():
    assert [b.tolist() for b in DataLoader(_Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    got = sorted(v for b in DataLoader(_Stream(7), batch_size=2, num_workers=2) for v in b.tolist())
    assert got == list(range(7))
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option"):
        DataLoader(_Stream(3), shuffle=True)


def test_random_split_lengths_fractions_and_reproducibility():
    g = torch.Generator()
    g.manual_seed(0)
    a, b = random_split(range(10), [7, 3], generator=g)
    assert len(a) == 7 and len(b) == 3 and sorted(list(a) + list(b)) == list(range(10))
    g.manual_seed(0)
    a2, _ = random_split(range(10), [7, 3], generator=g)
    assert list(a) == list(a2)
    parts = random_split(range(11), [0.5, 0.5], generator=g)
    assert [len(p) for p in parts] == [6, 5]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])
