"""``DataLoader`` (``torch.utils.data.dataloader``): batches of a dataset, in the main process or in
worker processes.

Note [DataLoader workers]
With ``num_workers > 0`` each worker is a ``multiprocessing`` process (the platform's default
start method unless ``multiprocessing_context`` says otherwise, as PyTorch) that receives
(task index, batch indices) on its own index queue, fetches and collates the batch and puts
(task index, batch) on one shared result queue. Tensors cross the process boundary as numpy
arrays (``_to_transport``; they are rebuilt as CPU tensors in the main process), so a
worker never touches a device: a forked child may not (Note [Fork safety]). The main
process keeps ``prefetch_factor * num_workers`` tasks in flight, hands tasks out round
robin, and returns batches in task order (``in_order=True``). Worker exceptions come back
wrapped and are re-raised in the main process with the worker's traceback; a worker that
dies is reported by pid instead of waiting forever. Worker i seeds ``backend_sdk``,
``random`` and numpy with ``base_seed + i``, base_seed drawn from ``generator`` (or the
default generator) per epoch, so a seeded run is reproducible.
"""
from __future__ import annotations

import itertools
import multiprocessing
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from ... import _C
from ._collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() returns inside a worker process."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: Optional[WorkerInfo] = None


def get_worker_info() -> Optional[WorkerInfo]:
    """The WorkerInfo of the current DataLoader worker process; None in the main process."""
    return _worker_info


class _TensorPayload:
    """A CPU tensor in transit between processes (Note [DataLoader workers])."""

    __slots__ = ("array", "dtype_name", "requires_grad")

    def __init__(self, array: np.ndarray, dtype_name: str, requires_grad: bool) -> None:
        self.array, self.dtype_name, self.requires_grad = array, dtype_name, requires_grad


def _to_transport(data: Any) -> Any:
    if isinstance(data, _C.TensorBase):
        t = data.detach()
        if not t.is_cpu:
            t = t.cpu()
        array = np.ascontiguousarray(t.numpy()).copy()
        return _TensorPayload(array, str(data.dtype).rsplit(".", 1)[-1], data.requires_grad)
    if isinstance(data, dict):
        return type(data)((k, _to_transport(v)) for k, v in data.items()) if type(data) is not dict else \
            {k: _to_transport(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_to_transport(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_to_transport(v) for v in data)
    return data


def _from_transport(data: Any) -> Any:
    if isinstance(data, _TensorPayload):
        from ... import _factories

        import backend_sdk

        t = _factories.from_numpy(data.array)
        dtype = getattr(backend_sdk, data.dtype_name)
        if t.dtype != dtype:
            t = t.to(dtype)
        return t.requires_grad_(data.requires_grad) if data.requires_grad else t
    if isinstance(data, dict):
        return {k: _from_transport(v) for k, v in data.items()} if type(data) is dict else \
            type(data)((k, _from_transport(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_from_transport(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_from_transport(v) for v in data)
    return data


class _ExceptionWrapper:
    """An exception raised in a worker, with its traceback as text, re-raised in the main process."""

    def __init__(self, exc_info: Any, where: str) -> None:
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class KeyErrorMessage(str):
    """str subclass that keeps KeyError's repr from quoting a multi-line message."""

    def __repr__(self) -> str:
        return self


class _IterableDatasetStopIteration:
    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


def _fetch(dataset: Any, dataset_iter: Any, indices: Any, auto_collation: bool, collate_fn: Callable,
           drop_last: bool, batch_size: Optional[int]) -> Any:
    """One batch: from a map-style dataset by indices, or the next batch_size items of an iterator."""
    if dataset_iter is not None:
        if auto_collation:
            data = []
            for _ in range(batch_size or 1):
                try:
                    data.append(next(dataset_iter))
                except StopIteration:
                    break
            if len(data) == 0 or (drop_last and len(data) < (batch_size or 1)):
                raise StopIteration
        else:
            data = next(dataset_iter)
        return collate_fn(data)
    if auto_collation:
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(indices) if callable(getitems) else [dataset[idx] for idx in indices]
    else:
        data = dataset[indices]
    return collate_fn(data)


def _worker_loop(dataset: Any, index_queue: Any, data_queue: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool, batch_size: Optional[int], seed: int, init_fn: Optional[Callable],
                 worker_id: int, num_workers: int, is_iterable: bool) -> None:
    global _worker_info
    try:
        import backend_sdk

        backend_sdk.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % (2**32))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            dataset_iter = iter(dataset) if is_iterable else None
        except Exception:
            init_exception = _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            dataset_iter = None
        exhausted = False
        while True:
            task = index_queue.get()
            if task is None:
                break
            idx, indices = task
            if init_exception is not None:
                data_queue.put((idx, init_exception))
                init_exception = None
                continue
            if exhausted:
                data_queue.put((idx, _IterableDatasetStopIteration(worker_id)))
                continue
            try:
                batch = _fetch(dataset, dataset_iter, indices, auto_collation, collate_fn, drop_last, batch_size)
                data_queue.put((idx, _to_transport(batch)))
            except StopIteration:
                exhausted = True
                data_queue.put((idx, _IterableDatasetStopIteration(worker_id)))
            except Exception:
                data_queue.put((idx, _ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")))
    except KeyboardInterrupt:
        pass


class _SingleProcessIter:
    def __init__(self, loader: "DataLoader") -> None:
        from ..._factories import empty

        self._loader = loader
        # Drawn (and unused) as in the multi-process iterator, so that both consume the generator alike
        # and a shuffled order does not depend on num_workers.
        self._base_seed = int(empty((), dtype=_C.int64).random_(generator=loader.generator).item())
        self._sampler_iter = iter(loader._index_sampler) if not loader._is_iterable else None
        self._dataset_iter = iter(loader.dataset) if loader._is_iterable else None

    def __iter__(self) -> "_SingleProcessIter":
        return self

    def __next__(self) -> Any:
        loader = self._loader
        indices = None if self._sampler_iter is None else next(self._sampler_iter)
        data = _fetch(loader.dataset, self._dataset_iter, indices, loader._auto_collation, loader.collate_fn,
                      loader.drop_last, loader.batch_size)
        return _maybe_pin(data, loader.pin_memory)

    def __len__(self) -> int:
        return len(self._loader)


def _maybe_pin(data: Any, pin: bool) -> Any:
    # pin_memory=True: tensors get pinned when the Tensor API offers it (Tensor.pin_memory); else as is.
    if not pin:
        return data
    if isinstance(data, _C.TensorBase):
        pin_fn = getattr(data, "pin_memory", None)
        return pin_fn() if callable(pin_fn) else data
    if isinstance(data, dict):
        return {k: _maybe_pin(v, pin) for k, v in data.items()}
    if isinstance(data, list):
        return [_maybe_pin(v, pin) for v in data]
    if isinstance(data, tuple) and not hasattr(data, "_fields"):
        return tuple(_maybe_pin(v, pin) for v in data)
    return data


class _MultiProcessIter:
    """See Note [DataLoader workers]."""

    _POLL_S = 1.0

    def __init__(self, loader: "DataLoader") -> None:
        from ..._factories import empty

        self._loader = loader
        self._num_workers = loader.num_workers
        self._prefetch = (loader.prefetch_factor or 2) * self._num_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._timeout = loader.timeout
        base_seed = int(empty((), dtype=_C.int64).random_(generator=loader.generator).item())
        self._sampler_iter = iter(loader._index_sampler) if not loader._is_iterable else itertools.repeat(None)
        self._data_queue = ctx.Queue()
        self._index_queues = []
        self._workers = []
        for i in range(self._num_workers):
            iq = ctx.Queue()
            w = ctx.Process(target=_worker_loop, args=(
                loader.dataset, iq, self._data_queue, loader._auto_collation, loader.collate_fn, loader.drop_last,
                loader.batch_size, base_seed + i, loader.worker_init_fn, i, self._num_workers, loader._is_iterable),
                daemon=True)
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, Any] = {}  # task -> worker id, or (worker id, data) once it arrived
        self._shutdown = False
        self._sampler_done = False
        for _ in range(self._prefetch):
            self._try_put_index()

    def __iter__(self) -> "_MultiProcessIter":
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def _try_put_index(self) -> None:
        if self._sampler_done or not any(self._active):
            return
        try:
            indices = next(self._sampler_iter)
        except StopIteration:
            self._sampler_done = True
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_cycle)
            if self._active[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, indices))
        self._task_info[self._send_idx] = (worker,)
        self._send_idx += 1

    def _get_data(self) -> Any:
        waited = 0.0
        while True:
            try:
                return self._data_queue.get(timeout=self._POLL_S)
            except queue.Empty:
                waited += self._POLL_S
                dead = [w.pid for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(str(p) for p in dead)}) exited "
                                       "unexpectedly") from None
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def __next__(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)  # a task of an exhausted worker: skip it
                self._rcvd_idx += 1
            else:
                if not self._shutdown:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            idx, data = self._get_data()
            if idx not in self._task_info:  # a late answer for a task skipped after its worker was exhausted
                continue
            if isinstance(data, _IterableDatasetStopIteration):
                self._active[data.worker_id] = False
                self._task_info.pop(idx, None)
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data: Any) -> Any:
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return _maybe_pin(_from_transport(data), self._loader.pin_memory)

    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        for iq in self._index_queues:
            try:
                iq.put(None)
            except Exception:
                pass
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
                w.join(timeout=5)
        for q in self._index_queues + [self._data_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:
            pass


class DataLoader:
    """Iterates over a dataset in batches, with PyTorch's arguments and defaults.

    ``DataLoader(dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
    collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
    multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
    pin_memory_device='', in_order=True)``. shuffle=True draws the order from ``generator``
    (Note [Random permutations]); workers: Note [DataLoader workers].
    ``persistent_workers=True`` is accepted; workers are started again for each epoch.
    """

    def __init__(self, dataset: Dataset, batch_size: Optional[int] = 1, shuffle: Optional[bool] = None,
                 sampler: Optional[Any] = None, batch_sampler: Optional[Any] = None, num_workers: int = 0,
                 collate_fn: Optional[Callable] = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Optional[Callable] = None, multiprocessing_context: Any = None,
                 generator: Optional[_C.Generator] = None, *, prefetch_factor: Optional[int] = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._is_iterable:
            length = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                from math import ceil

                length = length // self.batch_size if self.drop_last else ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the dataset decides when to stop)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None
