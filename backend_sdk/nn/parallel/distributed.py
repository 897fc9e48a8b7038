"""DistributedDataParallel: data-parallel training over a process group (PyTorch's torch.nn.parallel).

Note [DDP gradient buckets]
===========================
At construction the module's parameters and buffers are broadcast from rank 0, so that every rank
starts from the same model, and the parameters that require grad are split into buckets of at most
``bucket_cap_mb`` MiB, in reverse registration order (backward produces the last layers' gradients
first), one dtype and device per bucket. Each bucket owns a flat buffer.

Only public autograd API is used: a ``Tensor.register_hook`` per parameter. The hook receives the
gradient about to be accumulated into ``param.grad``; it writes the value ``.grad`` will have after
accumulation (``old .grad + incoming``, so gradients accumulated under ``no_sync()`` are reduced
too) into the parameter's slice of its bucket. When a bucket's last parameter arrives its buffer is
all-reduced asynchronously (``ReduceOp.AVG``) on the communication thread while backward continues
with earlier layers (Note [Distributed engine]): communication overlaps computation.

The hook of the last parameter of the iteration waits for every bucket and writes the averaged
gradients back: into ``.grad`` of the parameters already accumulated, and, for the parameter whose hook
is running (not yet accumulated), by clearing its ``.grad`` and returning the averaged gradient as the
hook's replacement, which the engine then stores. After ``backward()`` returns every ``.grad`` equals
the average over ranks.

With ``find_unused_parameters=True`` the forward pass walks the autograd graph from the outputs
(``grad_fn.next_functions``); parameters it cannot reach are marked ready at once with their current
``.grad`` (zero if none). Without it, a parameter that receives no gradient leaves its bucket
incomplete and the next forward raises PyTorch's "Expected to have finished reduction in the prior
iteration" error, as PyTorch's reducer does.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ... import distributed as dist
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("indices", "offsets", "buffer", "pending", "work")

    def __init__(self, indices: list[int], offsets: list[int], buffer: Any) -> None:
        self.indices = indices
        self.offsets = offsets
        self.buffer = buffer
        self.pending = len(indices)
        self.work: Any = None


class DistributedDataParallel(Module):
    """Replicates ``module`` on every rank of ``process_group`` and averages gradients during backward."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, delay_all_reduce_named_params: Any = None,
                 param_to_hook_all_reduce: Any = None, mixed_precision: Any = None, device_mesh: Any = None,
                 skip_all_reduce_unused_params: bool = False) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.process_group = process_group
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._world = dist.get_world_size(process_group)
        # the global rank of the group's rank 0: the source of the initial state and of buffers
        self._src = dist.get_global_rank(process_group, 0) if process_group is not None else 0
        if init_sync:
            self._sync_module_states()
        self._buckets, self._bucket_of = self._make_buckets()
        self._expect_reduction = False
        self._ready: list[bool] = [False] * len(self._params)
        self._handles = [p.register_hook(self._make_hook(i)) for i, p in enumerate(self._params)]

    # ---- construction -------------------------------------------------------------------------------------
    def _sync_module_states(self) -> None:
        """Broadcasts parameters and buffers from rank 0 of the group (same starting model everywhere)."""
        src = self._src
        from ... import no_grad

        with no_grad():
            for t in [*self.module.parameters(), *self.module.buffers()]:
                dist.broadcast(t.data if hasattr(t, "data") else t, src=src, group=self.process_group)

    def _make_buckets(self) -> tuple[list[_Bucket], list[tuple[int, int]]]:
        from ... import zeros

        order = list(reversed(range(len(self._params))))
        groups: list[list[int]] = []
        size = 0
        for i in order:
            p = self._params[i]
            nbytes = p.numel() * p.element_size()
            last = groups[-1] if groups else None
            same = last is not None and self._params[last[0]].dtype == p.dtype and \
                self._params[last[0]].device == p.device
            if last is None or not same or size + nbytes > self.bucket_bytes_cap:
                groups.append([i])
                size = nbytes
            else:
                last.append(i)
                size += nbytes
        buckets, where = [], [(0, 0)] * len(self._params)
        for b, indices in enumerate(groups):
            offsets, total = [], 0
            for j, i in enumerate(indices):
                offsets.append(total)
                where[i] = (b, j)
                total += self._params[i].numel()
            first = self._params[indices[0]]
            buckets.append(_Bucket(indices, offsets, zeros(total, dtype=first.dtype, device=first.device)))
        return buckets, where

    # ---- forward / backward -------------------------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        from ... import is_grad_enabled

        if self._expect_reduction and any(b.pending for b in self._buckets):
            missing = [n for n, p in self.module.named_parameters()
                       if p.requires_grad and not self._ready[self._index(p)]]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`backend_sdk.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function "
                "outputs participate in calculating loss. Parameters which did not receive grad for rank "
                f"{dist.get_rank(self.process_group)}: {', '.join(missing)}")
        if self.broadcast_buffers and is_grad_enabled():
            from ... import no_grad

            with no_grad():
                for buf in self.module.buffers():
                    dist.broadcast(buf, src=self._src, group=self.process_group)
        output = self.module(*inputs, **kwargs)
        sync = is_grad_enabled() and self.require_backward_grad_sync
        self._reset(sync)
        if sync and self.find_unused_parameters:
            self._mark_unused(output)
        return output

    def _index(self, p: Any) -> int:
        for i, q in enumerate(self._params):
            if q is p:
                return i
        return -1

    def _reset(self, sync: bool) -> None:
        self._expect_reduction = sync
        self._ready = [False] * len(self._params)
        for b in self._buckets:
            b.pending = len(b.indices)
            b.work = None

    def _mark_unused(self, output: Any) -> None:
        reachable: set[int] = set()
        # Nodes themselves, not id(node): a C++ node's Python wrapper may be made afresh on each access and
        # a freed wrapper's id reused by the next (C++ nodes hash and compare by the node they wrap).
        seen: set[Any] = set()
        stack = [t.grad_fn for t in _tensors(output) if getattr(t, "grad_fn", None) is not None]
        for t in _tensors(output):
            if t.grad_fn is None and t.requires_grad:
                reachable.add(id(t))
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            variable = getattr(node, "variable", None)
            if variable is not None:
                reachable.add(id(variable))
            for nxt, _ in getattr(node, "next_functions", ()):
                if nxt is not None:
                    stack.append(nxt)
        for i, p in enumerate(self._params):
            if id(p) not in reachable:
                self._ready_param(i, p.grad, None)

    def _make_hook(self, i: int) -> Any:
        def hook(grad: Any) -> Any:
            if not self._expect_reduction or self._ready[i]:
                return None
            p = self._params[i]
            return self._ready_param(i, grad if p.grad is None else p.grad + grad, grad)

        return hook

    def _ready_param(self, i: int, total: Any, incoming: Any) -> Any:
        """Puts parameter i's gradient in its bucket; launches full buckets; finishes after the last one."""
        from ... import no_grad

        b, j = self._bucket_of[i]
        bucket = self._buckets[b]
        p = self._params[i]
        with no_grad():
            piece = bucket.buffer[bucket.offsets[j]:bucket.offsets[j] + p.numel()]
            if total is None:
                piece.fill_(0)
            else:
                piece.copy_(total.reshape(-1))
        self._ready[i] = True
        bucket.pending -= 1
        if bucket.pending == 0:
            bucket.work = dist.all_reduce(bucket.buffer, op=dist.ReduceOp.AVG, group=self.process_group,
                                          async_op=True)
        if incoming is None or any(bk.work is None for bk in self._buckets):
            return None
        return self._finish(i)

    def _finish(self, current: int) -> Any:
        """Waits for every bucket and writes the averages into .grad (Note [DDP gradient buckets])."""
        from ... import no_grad

        self._expect_reduction = False
        replacement = None
        with no_grad():
            for bucket in self._buckets:
                bucket.work.wait()
                for j, i in enumerate(bucket.indices):
                    p = self._params[i]
                    value = bucket.buffer[bucket.offsets[j]:bucket.offsets[j] + p.numel()].reshape(list(p.shape))
                    if i == current:
                        replacement = value.clone()
                    elif p.grad is None:
                        if bool((value != 0).any()):
                            p.grad = value.clone()
                    else:
                        p.grad.copy_(value)
        self._params[current].grad = None  # the engine stores the replacement as the new .grad
        return replacement

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communication; the next synced backward
        reduces the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous


def _tensors(value: Any) -> list:
    from ..._tensor import Tensor

    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []
