"""Samplers (``torch.utils.data.sampler``): which dataset indices a DataLoader visits, in what order.

Note [Random permutations]
Shuffling needs a random permutation drawn from a ``Generator``. PyTorch uses
``torch.randperm``; while the SDK has no ``aten::randperm``, ``_randperm`` draws one
int64 key per index with ``random_`` from the generator and orders the indices by key
(a stable sort on the host, ties broken by index). The order is reproducible from the
generator's seed, but it is not the sequence PyTorch's randperm gives for that seed.
"""
from __future__ import annotations

from typing import Any, Generic, Iterable, Iterator, List, Optional, Sequence, Sized, TypeVar, Union

import numpy as np

from ... import _C

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


def _randperm(n: int, generator: Optional[_C.Generator] = None) -> Any:
    """A permutation of range(n) as an int64 CPU tensor (Note [Random permutations])."""
    from ..._factories import empty, from_numpy

    randperm = getattr(__import__("backend_sdk"), "randperm", None)
    if randperm is not None and not isinstance(randperm, type(None)):
        try:
            return randperm(n, generator=generator)
        except TypeError:
            pass
    keys = empty(n, dtype=_C.int64).random_(generator=generator).numpy()
    return from_numpy(np.argsort(keys, kind="stable").astype(np.int64))


def _seed_generator() -> _C.Generator:
    """A fresh CPU generator seeded from the default one (as PyTorch's samplers do without a generator)."""
    from ..._factories import empty

    seed = int(empty((), dtype=_C.int64).random_().item())
    g = _C.Generator()
    g.manual_seed(seed)
    return g


class Sampler(Generic[T_co]):
    """Base class: an iterable of indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source: Optional[Sized] = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation of the indices (or num_samples draws with replacement), from generator."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: Optional[int] = None,
                 generator: Optional[_C.Generator] = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        from ..._factories import empty

        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _seed_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from empty(32, dtype=_C.int64).random_(0, n, generator=generator).tolist()
            yield from empty(self.num_samples % 32, dtype=_C.int64).random_(0, n, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, generator).tolist()
            yield from _randperm(n, generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Optional[_C.Generator] = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _randperm(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """num_samples indices drawn with probabilities proportional to weights (inverse-CDF on the host over
    uniform draws from generator)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Optional[_C.Generator] = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        from ..._factories import empty

        w = self.weights.copy()
        out: List[int] = []
        for _ in range(self.num_samples):
            total = w.sum()
            if total <= 0:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
            u = float(empty((), dtype=_C.float64).uniform_(0, 1, generator=self.generator).item()) * total
            i = int(np.searchsorted(np.cumsum(w), u, side="right"))
            i = min(i, len(w) - 1)
            out.append(i)
            if not self.replacement:
                w[i] = 0
        return iter(out)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[List[int]]):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler: Union[Sampler[int], Iterable[int]], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        batch: List[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
