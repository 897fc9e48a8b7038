"""Batching rules and the FuncTorchBatched fallback (Note [Batched tensors] in vmap.py).

Every operator call with a batched tensor argument reaches ``batched_fallback``. It picks the highest
vmap level among the arguments (inner vmaps have higher levels) and handles that level only: tensors
batched at lower levels are plain tensors here, and the operators a rule calls on the unwrapped values
dispatch again and reach this fallback for the next level down. In order it tries

  1. a ``register_vmap`` rule of a custom operator (``func(info, in_dims, *args, **kwargs)``);
  2. a rule of this file (``_RULES``, by overload name, then by operator name);
  3. the operator's CompositeImplicitAutograd kernel (a "[math kernel]"), called with the batched
     tensors themselves, so its decomposition reaches the rules of the operators it is made of;
  4. the slow fallback: the operator once per batch element, results stacked, with PyTorch's
     performance warning (once per operator and process).

A rule receives the operator, the level and the arguments as the dispatcher passed them (every
positional argument present, keyword-only ones in kwargs) and returns the result with batched tensors
at that level; it calls operators only on unwrapped values or through other operators.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any, Callable

from .. import _C
from .._subclasses.fake_tensor import _tensors  # every tensor in nested tuples/lists/dicts
from .._tensor import Tensor

_make_batched = _C._make_batched
_unwrap_batched = _C._unwrap_batched
_batched_level = _C._batched_level
_op_cache: dict[str, Any] = {}


def _aten(name: str) -> Any:
    """The OpOverload 'aten::op.overload' (memoised: rules look operators up on every call)."""
    op = _op_cache.get(name)
    if op is None:
        op = _op_cache[name] = _C._get_op_overload(name)
    return op


# custom-op rules: qualname -> func(info, in_dims, *args, **kwargs) (library.register_vmap)
vmap_rules: dict[str, Callable] = {}
_rules_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def unwrap(x: Any, level: int) -> tuple[Any, int | None]:
    """(value, bdim) of x if it is batched at ``level``, else (x, None)."""
    info = _unwrap_batched(x)
    if info is not None and info[2] == level:
        return info[0], info[1]
    return x, None


def movedim(t: Tensor, src: int, dst: int) -> Tensor:
    """t with dimension src moved to dst (a view)."""
    n = t.dim()
    src, dst = src % n, dst % n
    if src == dst:
        return t
    order = [d for d in range(n) if d != src]
    order.insert(dst, src)
    return t.permute(*order)


def front(x: Any, level: int) -> tuple[Any, bool]:
    """x's value with the batch dim first if x is batched at level, else (x, False)."""
    value, bdim = unwrap(x, level)
    if bdim is None:
        return x, False
    return (movedim(value, bdim, 0) if bdim else value), True


def logical_rank(x: Tensor, level: int) -> int:
    value, bdim = unwrap(x, level)
    return value.dim() - 1 if bdim is not None else x.dim()


def pad_to(v: Tensor, rank: int) -> Tensor:
    """A batch-first value of logical rank < rank with size-1 dims inserted after the batch dim."""
    missing = rank - (v.dim() - 1)
    if missing <= 0:
        return v
    shape = list(v.shape)
    return v.view([shape[0]] + [1] * missing + shape[1:]) if v.is_contiguous() else \
        v.reshape([shape[0]] + [1] * missing + shape[1:])


def expand_front(x: Tensor, batch_size: int) -> Tensor:
    """An unbatched x broadcast to a batch-first value (a stride-0 view)."""
    return x.unsqueeze(0).expand([batch_size] + list(x.shape))


def wrap_dim(d: int, rank: int, op_name: str) -> int:
    n = max(rank, 1)
    if not -n <= d < n:
        raise IndexError(
            f"{op_name}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def batch_size_of(args: Any, level: int) -> int:
    for t in _tensors(args):
        value, bdim = unwrap(t, level)
        if bdim is not None:
            return value.shape[bdim]
    raise RuntimeError("vmap: internal error: no argument is batched at the current level")


def wrap_all(result: Any, bdim: int, level: int) -> Any:
    if isinstance(result, Tensor):
        return _make_batched(result, bdim, level)
    if isinstance(result, (tuple, list)):
        return type(result)(wrap_all(r, bdim, level) for r in result)
    return result


class _Schema:
    __slots__ = ("schema", "names", "positional", "index", "tensor_args", "inplace", "out", "returns_tensors",
                 "has_tensor_list", "view_or_alias")

    def __init__(self, op: Any) -> None:
        self.schema = s = _C._parse_schema(op._schema)
        self.names = [a.name for a in s.arguments]
        self.positional = [a.name for a in s.arguments if not a.kwarg_only]
        self.index = {a.name: i for i, a in enumerate(s.arguments) if not a.kwarg_only}
        self.tensor_args = [a.name for a in s.arguments if a.type.startswith("Tensor")]
        # in-place: writes its first (Tensor) argument (aten's `self`, a custom op's `x`) and returns it
        self.inplace = bool(s.is_inplace) or bool(
            s.arguments and s.arguments[0].is_write and s.arguments[0].type == "Tensor" and not s.is_out_fn)
        self.out = bool(s.is_out_fn)
        self.returns_tensors = all(r.type == "Tensor" for r in s.returns)
        self.has_tensor_list = any(a.type in ("Tensor[]", "Tensor?[]") for a in s.arguments)
        self.view_or_alias = bool(s.is_mutable)


_schemas: dict[str, _Schema] = {}


def schema_of(op: Any) -> _Schema:
    info = _schemas.get(op.__name__)
    if info is None:
        info = _schemas[op.__name__] = _Schema(op)
    return info


def get_arg(info: _Schema, args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
    i = info.index.get(name)
    if i is not None:
        return args[i] if i < len(args) else default
    return kwargs.get(name, default)


def set_arg(info: _Schema, args: list, kwargs: dict, name: str, value: Any) -> None:
    i = info.index.get(name)
    if i is not None and i < len(args):
        args[i] = value
    else:
        kwargs[name] = value


def inplace_error(what: str) -> RuntimeError:
    """PyTorch's vmapIncompatibleInplaceError (the batching rules' error); ``what`` is e.g. "inplace arithmetic"."""
    return RuntimeError(
        f"vmap: {what}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args that "
        f"has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
        f"vmapped over in a vmap. Please try to use out-of-place operators instead of {what}. If said operator is "
        f"being called inside the PyTorch framework, please file a bug report instead.")


def fallback_inplace_error(schema_name: str, level: int) -> RuntimeError:
    """The slow fallback's version of the error (it names the operator and the level)."""
    return RuntimeError(
        f"vmap: {schema_name}(self, *extra_args) is not possible because there exists a Tensor `other` in "
        f"extra_args that has more elements than `self`. This happened due to `other` being vmapped over but "
        f"`self` not being vmapped over at level {level}. Please try to use out-of-place operators instead of "
        f"{schema_name}. If said operator is being called inside the PyTorch framework, please file a bug report "
        f"instead.")


def check_inplace(what: str | None, op: Any, args: tuple, kwargs: dict, level: int) -> None:
    """PyTorch's error when an in-place operator writes a batched value into an unbatched self (``what`` names it
    as the rules do; None: the fallback's wording with the schema name and level)."""
    self_ = args[0] if args else None
    if not isinstance(self_, Tensor) or unwrap(self_, level)[1] is not None:
        return
    for t in _tensors((args[1:], kwargs)):
        if unwrap(t, level)[1] is not None:
            if what is None:
                raise fallback_inplace_error(op.__name__.split(".")[0], level)
            raise inplace_error(what)


# ---------------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------------
def pointwise(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Elementwise operators with broadcasting: every batched tensor batch-first, padded to the common
    logical rank (size-1 dims after the batch dim), unbatched tensors broadcast from the right."""
    info = schema_of(op)
    if info.inplace:
        check_inplace("inplace arithmetic", op, args, kwargs, level)
    tensors = [t for t in _tensors((args, kwargs))]
    rank = max(logical_rank(t, level) for t in tensors)

    def conv(x: Any) -> Any:
        if isinstance(x, Tensor):
            v, batched = front(x, level)
            return pad_to(v, rank) if batched else x
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            return type(x)(conv(e) for e in x)
        return x

    new_args = [conv(a) for a in args]
    new_kwargs = {k: conv(v) for k, v in kwargs.items()}
    result = op(*new_args, **new_kwargs)
    if info.inplace:
        return args[0]
    if isinstance(result, Tensor) and len({t.dtype for t in tensors}) > 1 and rank > 0 and any(
            logical_rank(t, level) == 0 and unwrap(t, level)[1] is not None for t in tensors):
        result = result.to(_logical_result_dtype(op, level, args, kwargs))
    return wrap_all(result, 0, level)


def _logical_result_dtype(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """The dtype the operator gives on one element (a batched 0-dim tensor is a 0-dim tensor there, which
    type promotion ranks below dimensioned ones: Note [Result type computation]), probed on size-1 slices."""

    def probe(x: Any) -> Any:
        if not isinstance(x, Tensor):
            return x
        value, bdim = unwrap(x, level)
        t = value.select(bdim, 0) if bdim is not None else x
        return t[(slice(0, 1),) * t.dim()] if t.dim() else t

    return op(*[probe(a) for a in args], **{k: probe(v) for k, v in kwargs.items()}).dtype


_DIM_NAMES = ("dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim")


def _shift_dims(info: _Schema, op_name: str, args: list, kwargs: dict, rank: int, reduce_all: bool,
                empty_means_all: bool = True) -> bool:
    """Dim arguments of a batch-first call shifted by one; False if a None/empty dim can't be expressed."""
    for name in _DIM_NAMES:
        if name not in info.names:
            continue
        d = get_arg(info, args, kwargs, name)
        if isinstance(d, (list, tuple)) and len(d) == 0 and not empty_means_all:
            continue
        if d is None or (isinstance(d, (list, tuple)) and len(d) == 0):
            if not reduce_all:  # e.g. roll(dims=[]) flattens: not expressible batch-first
                return False
            d = list(range(rank)) if rank else None
            if d is None:
                return False
            set_arg(info, args, kwargs, name, [x + 1 for x in d])
        elif isinstance(d, (list, tuple)):
            set_arg(info, args, kwargs, name, [wrap_dim(x, rank, op_name) + 1 for x in d])
        else:
            set_arg(info, args, kwargs, name, wrap_dim(d, rank, op_name) + 1)
    return True


_EMPTY_DIMS_NOOP = {"aten::flip"}  # flip(dims=[]) changes nothing (roll(dims=[]) flattens: not here)


def dim_rule(reduce_all: bool = False) -> Callable:
    """Operators with a single batched ``self`` and dim arguments (reductions, softmax, cumsum, sort, flip,
    diagonal, flatten, split...): self batch-first, dims shifted by one. ``reduce_all``: a None (or empty)
    dim means every logical dim. A 0-dim logical self becomes a size-1 dim after the batch dim (dims wrap
    as for a 0-dim tensor, and that dim is squeezed from the results that keep it)."""

    def rule(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
        info = schema_of(op)
        others = [t for t in _tensors((args[1:], kwargs)) if unwrap(t, level)[1] is not None]
        if others or not args or unwrap(args[0], level)[1] is None:
            return NotImplemented
        if info.inplace:
            check_inplace(op.__name__.split("::")[1].split(".")[0], op, args, kwargs, level)
        v, _ = front(args[0], level)
        rank = v.dim() - 1
        new_args, new_kwargs = list(args), dict(kwargs)
        new_args[0] = v
        if rank == 0:
            new_args[0] = v.unsqueeze(1)
            for name in _DIM_NAMES:
                if name not in info.names:
                    continue
                d = get_arg(info, args, kwargs, name)
                if isinstance(d, (list, tuple)):
                    for x in d:
                        wrap_dim(x, 0, op.__name__)
                    set_arg(info, new_args, new_kwargs, name, [1] if (d or reduce_all) else [])
                elif d is None:
                    if not reduce_all:
                        return NotImplemented
                    set_arg(info, new_args, new_kwargs, name, [1])
                else:
                    wrap_dim(d, 0, op.__name__)
                    set_arg(info, new_args, new_kwargs, name, 1)
            result = _squeeze_kept(op(*new_args, **new_kwargs))
        else:
            noop_empty = op.__name__ in _EMPTY_DIMS_NOOP
            if not _shift_dims(info, op.__name__, new_args, new_kwargs, rank, reduce_all or noop_empty,
                               empty_means_all=not noop_empty):
                return NotImplemented
            result = op(*new_args, **new_kwargs)
        if info.inplace:
            return args[0]
        return wrap_all(result, 0, level)

    return rule


def _squeeze_kept(result: Any) -> Any:
    """Drops the size-1 dim a 0-dim logical tensor was given from the results that kept it ([B, 1])."""
    if isinstance(result, Tensor):
        return result.squeeze(-1) if result.dim() == 2 else result
    if isinstance(result, (tuple, list)):
        return type(result)(_squeeze_kept(r) for r in result)
    return result


# full reductions (no dim argument) as their dim overloads over every logical dim
_FULL_REDUCTIONS = {
    "aten::sum": ("aten::sum.dim_IntList", {}),
    "aten::mean": ("aten::mean.dim", {}),
    "aten::prod": (None, {}),
    "aten::all": (None, {}),
    "aten::any": (None, {}),
    "aten::max": ("aten::amax", {}),
    "aten::min": ("aten::amin", {}),
}


def full_reduction(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    v, batched = front(args[0], level)
    name = op.__name__
    flat = v.reshape([v.shape[0], -1])
    target, _ = _FULL_REDUCTIONS[name]
    if target is None:  # prod/all/any: dim overload reduces one dim
        result = _aten({"aten::prod": "aten::prod.dim_int", "aten::all": "aten::all.dim",
                        "aten::any": "aten::any.dim"}[name])(flat, 1, False, **kwargs)
    else:
        if flat.shape[1] == 0 and name in ("aten::max", "aten::min"):
            raise RuntimeError(
                f"{name.split('::')[1]}(): Expected reduction dim to be specified for input.numel() == 0. "
                f"Specify the reduction dim with the 'dim' argument.")
        result = _aten(target)(flat, [1], False, **kwargs)
    return _make_batched(result, 0, level)


def argminmax(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    dim = args[1] if len(args) > 1 else None
    if dim is not None:
        return dim_rule()(op, level, args, kwargs)
    v, _ = front(args[0], level)
    return _make_batched(op(v.reshape([v.shape[0], -1]), 1, False), 0, level)


def matmul(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """matmul of logical operands a (rank ra) and b (rank rb), either or both batched: 1-D operands become a
    row / a column, the batched operands are padded to the common logical rank (size-1 dims after the batch
    dim, so unbatched leading dims broadcast against the logical ones), and the added dims are squeezed."""
    a, b = args[0], args[1]
    av, ab = front(a, level)
    bv, bb = front(b, level)
    ra = av.dim() - 1 if ab else a.dim()
    rb = bv.dim() - 1 if bb else b.dim()
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    mm_ = _aten("aten::matmul")
    if ra == 1 and rb == 1:
        if ab and bb:
            return _make_batched((av * bv).sum(-1), 0, level)
        return _make_batched(mm_(av, b) if ab else mm_(bv, a), 0, level)
    if ab and not bb and rb == 2:
        # [B, ..., n, k] @ [k, m]: one 2-D product over every row of the batch (the batch folds into the rows)
        lead = list(av.shape[:-1])
        rows = 1
        for d in lead:
            rows *= d
        out = _aten("aten::mm")(av.reshape([rows, av.shape[-1]]), b)
        return _make_batched(out.view(lead + [b.shape[1]]), 0, level)
    row, col = ra == 1, rb == 1
    if row:
        av, ra = av.unsqueeze(-2), 2
    if col:
        bv, rb = bv.unsqueeze(-1), 2
    rank = max(ra, rb)
    out = mm_(pad_to(av, rank) if ab else av, pad_to(bv, rank) if bb else bv)
    if row:
        out = out.squeeze(-2)
    if col:
        out = out.squeeze(-1)
    return _make_batched(out, 0, level)


def _require_rank(name: str, x: Tensor, level: int, rank: int, what: str) -> None:
    r = logical_rank(x, level)
    if r != rank:
        raise RuntimeError(f"{name}: {what} must be a {'matrix' if rank == 2 else f'{rank}D tensor'}")


def mm(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    _require_rank("mm", args[0], level, 2, "self")
    _require_rank("mm", args[1], level, 2, "mat2")
    return matmul(op, level, args, kwargs)


def bmm(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    _require_rank("bmm", args[0], level, 3, "batch1")
    _require_rank("bmm", args[1], level, 3, "batch2")
    return matmul(op, level, args, kwargs)


def dot(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    ra, rb = logical_rank(args[0], level), logical_rank(args[1], level)
    if ra != 1 or rb != 1:
        raise RuntimeError(f"1D tensors expected, but got {ra}D and {rb}D tensors")
    return matmul(op, level, args, kwargs)


def addmm(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """beta * self + alpha * (mat1 @ mat2), on the batched tensors (each step reaches its own rule)."""
    info = schema_of(op)
    self_, m1, m2 = args[0], args[1], args[2]
    beta = get_arg(info, args, kwargs, "beta", 1)
    alpha = get_arg(info, args, kwargs, "alpha", 1)
    _require_rank("addmm", m1, level, 2, "mat1")
    _require_rank("addmm", m2, level, 2, "mat2")
    prod = _aten("aten::matmul")(m1, m2)
    if alpha != 1:
        prod = prod * alpha
    if info.inplace:
        check_inplace("addmm_", op, args, kwargs, level)
        if beta == 0:
            return self_.copy_(prod)
        return self_.mul_(beta).add_(prod) if beta != 1 else self_.add_(prod)
    if beta == 0:
        return prod + self_.mul(0).zero_()  # self's shape and broadcasting, not its values (NaN ignored)
    return prod + (self_ * beta if beta != 1 else self_)


def view(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    v, _ = front(args[0], level)
    return _make_batched(op(v, [v.shape[0]] + list(args[1])), 0, level)


def as_strided(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """The Python views (permute, select, slicing, unsqueeze, expand...) all reach as_strided with the logical
    sizes and strides of the batched tensor, which are its value's without the batch dim; slice b of the
    value starts b * stride(bdim) elements later, so one as_strided with the batch dim first is every slice's."""
    self_ = args[0]
    value, bdim = unwrap(self_, level)
    info = schema_of(op)
    size = list(get_arg(info, args, kwargs, "size"))
    stride = list(get_arg(info, args, kwargs, "stride"))
    offset = get_arg(info, args, kwargs, "storage_offset")
    if offset is None:
        offset = value.storage_offset()
    result = op(value, [value.shape[bdim]] + size, [value.stride(bdim)] + stride, offset)
    return _make_batched(result, 0, level)


def t_rule(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    v, _ = front(args[0], level)
    if v.dim() - 1 > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {v.dim() - 1}D")
    return _make_batched(v.transpose(1, 2) if v.dim() == 3 else v, 0, level)


def repeat(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    v, _ = front(args[0], level)
    repeats = list(args[1])
    rank = v.dim() - 1
    if len(repeats) < rank:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    v = pad_to(v, len(repeats))
    return _make_batched(op(v, [1] + repeats), 0, level)


def cat_stack(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    tensors, dim = list(args[0]), args[1] if len(args) > 1 else 0
    size = batch_size_of(tensors, level)
    ranks = [logical_rank(t, level) for t in tensors]
    name = op.__name__
    phys = []
    for t in tensors:
        v, batched = front(t, level)
        phys.append(v if batched else expand_front(t, size))
    if name == "aten::stack":
        d = wrap_dim(dim, (ranks[0] if ranks else 0) + 1, "stack") + 1
    else:
        ref = next((r for r in ranks if r > 0), 1)
        # legacy: 1-D empty tensors are skipped by cat, their (batched) value is [B, 0]
        phys = [p for p, r, t in zip(phys, ranks, tensors) if not (r == 1 and p.shape[1] == 0 and ref != 1)] or phys
        d = wrap_dim(dim, ref, "cat") + 1
    return _make_batched(op(phys, d), 0, level)


def _arange_like(n: int, like: Tensor) -> Tensor:
    from .._factories import arange

    return arange(n, device=like.device)


# Note [Batched indices]
# ~~~~~~~~~~~~~~~~~~~~~~
# An index tensor batched at the running level selects, for element b, from element b of self only.
# The rules of the dim-indexed operators (index_select, index_add/index_copy/index_fill and their
# in-place forms) fold the batch into the indexed dim instead of looping: self's value, batch first,
# with the indexed dim moved next to the batch dim, is reshaped to [B * D, rest...]; the index of
# element b is offset by b * D and flattened; the source (if any) is folded the same way along the
# index's length. One call of the operator on dim 0 then computes every element, and the result is
# reshaped back to [B, D, rest...] with the dim moved home. An unbatched self or index is expanded
# to the batch first (the reshape copies it where the layout needs); in-place forms compute the
# functional result and copy_ it into self (after the usual in-place check). aten::index (``x[idx]``)
# needs no folding: an arange over the batch, shaped to broadcast, joins the (batched, padded)
# advanced indices as the first one, and the result's dims are put back in the order the logical
# indexing would give (the advanced dims first only when they are not adjacent); boolean masks
# under vmap go to the loop (their result shape differs per element). Out-of-range indices
# still fail: an offset index stays in its own element's range only if the original was in [0, D)
# (a negative or too large one would reach a neighbour), so an index outside [0, D) is replaced by
# B * D, which is out of range of the folded dim: the kernel raises its own IndexError, and no host
# read of the index is needed (on a device that would be a synchronisation).
def _fold_indexed_dim(v: Tensor, d: int) -> tuple[Tensor, list[int]]:
    """Batch-first ``v`` with its physical dim ``d`` moved next to the batch dim and folded into it:
    ([B * D, rest...], [B, D, rest...]). Note [Batched indices]."""
    moved = movedim(v, d, 1)
    shape = list(moved.shape)
    return moved.reshape([shape[0] * shape[1]] + shape[2:]), shape


def _offset_index(index: Tensor, level: int, batch_size: int, dim_size: int) -> Tensor:
    """A (batched or not) index of logical rank <= 1 as one flat index into the folded [B * D] dim."""
    idx, batched = front(index, level)
    if not batched:
        idx = expand_front(index, batch_size)
    if idx.dim() == 1:  # a 0-dim logical index: one element
        idx = idx.unsqueeze(1)
    offsets = _arange_like(batch_size, idx).mul(dim_size).unsqueeze(1)
    invalid = idx.lt(0).logical_or(idx.ge(dim_size))  # Note [Batched indices]: stays out of range
    return idx.add(offsets).masked_fill(invalid, batch_size * dim_size).reshape(-1)


def index_select(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    self_, dim, index = args[0], args[1], args[2]
    v, batched = front(self_, level)
    rank = v.dim() - 1 if batched else self_.dim()
    d = wrap_dim(dim, rank, "index_select") + 1
    if unwrap(index, level)[1] is None:
        return _make_batched(op(v if batched else expand_front(self_, batch_size_of(args, level)), d, index), 0,
                             level)
    # Note [Batched indices]: a batched index selects from its own element: fold the batch into the dim
    size = batch_size_of(args, level)
    if not batched:
        v = expand_front(self_, size)
    if rank == 0:  # a 0-dim self is a 1-element dim here
        v = v.unsqueeze(1)
    flat, shape = _fold_indexed_dim(v, d)
    flat_index = _offset_index(index, level, size, shape[1])
    out = op(flat, 0, flat_index)
    out = movedim(out.reshape([size, flat_index.shape[0] // size] + shape[2:]), 1, d)
    return _make_batched(out.reshape([size]) if rank == 0 else out, 0, level)


def gather_scatter(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """gather/scatter(self, dim, index, src/value...): every tensor batch-first (unbatched ones expanded)."""
    info = schema_of(op)
    short = op.__name__.split("::")[1].split(".")[0]
    if info.inplace:
        check_inplace(short, op, args, kwargs, level)
    size = batch_size_of((args, kwargs), level)
    rank = logical_rank(args[0], level)
    new_args = list(args)
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            v, batched = front(a, level)
            if not batched:
                if i == 0 and info.inplace:
                    raise inplace_error(short)
                if a.dim() == 0 and i > 0:  # a 0-dim value/src stays a scalar
                    continue
                v = expand_front(a, size)
            new_args[i] = v
    new_args[1] = wrap_dim(args[1], rank, op.__name__) + 1
    if rank == 0:  # 0-dim self and index: a size-1 dim after the batch dim, squeezed afterwards
        new_args = [a.unsqueeze(1) if isinstance(a, Tensor) and a.dim() == 1 else a for a in new_args]
        new_args[1] = 1
        result = op(*new_args, **kwargs)
        return args[0] if info.inplace else _make_batched(result.squeeze(1), 0, level)
    result = op(*new_args, **kwargs)
    return args[0] if info.inplace else _make_batched(result, 0, level)


def index_dim_op(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """index_add/index_copy/index_fill(self, dim, index, source/value): the 1-D index is not batched; self and
    the source batch-first (unbatched ones expanded), dim shifted by one."""
    info = schema_of(op)
    short = op.__name__.split("::")[1].split(".")[0]
    if unwrap(args[2], level)[1] is not None:
        return _index_dim_op_batched_index(op, info, short, level, args, kwargs)
    if info.inplace:
        check_inplace(short, op, args, kwargs, level)
    size = batch_size_of((args, kwargs), level)
    rank = logical_rank(args[0], level)
    new_args = list(args)
    for i in (0, 3):
        if i < len(args) and isinstance(args[i], Tensor):
            v, batched = front(args[i], level)
            if not batched:
                if i == 3 and args[i].dim() == 0:
                    continue
                v = expand_front(args[i], size) if i else expand_front(args[i], size).clone()
            elif i == 3 and v.dim() == 1:  # a batched 0-dim fill value
                return _index_dim_op_batched_index(op, info, short, level, args, kwargs)
            new_args[i] = v
    new_args[1] = wrap_dim(args[1], rank, short) + 1
    result = op(*new_args, **kwargs)
    return args[0] if info.inplace else _make_batched(result, 0, level)


def _index_dim_op_batched_index(op: Any, info: _Schema, short: str, level: int, args: tuple, kwargs: dict) -> Any:
    """index_add/index_copy/index_fill with a batched index (Note [Batched indices]): self (and the source) folded
    along ``dim`` into one [B * D] dim, the index offset by b * D; in-place forms write the result back."""
    if info.inplace:
        check_inplace(short, op, args, kwargs, level)
    size = batch_size_of((args, kwargs), level)
    rank = logical_rank(args[0], level)
    d = wrap_dim(args[1], rank, short) + 1
    v, batched = front(args[0], level)
    if not batched:
        v = expand_front(args[0], size)
    if rank == 0:  # a 0-dim self (and source) is a 1-element dim here
        v = v.unsqueeze(1)
    flat, shape = _fold_indexed_dim(v, d)
    flat_index = _offset_index(args[2], level, size, shape[1])
    new_args = [flat, 0, flat_index] + list(args[3:])
    if len(args) > 3 and isinstance(args[3], Tensor):
        src, sb = front(args[3], level)
        if short == "index_fill":
            if sb:  # a batched 0-dim fill value: index_copy of that value broadcast over the indexed slots
                k = flat_index.shape[0] // size
                src = src.to(flat.dtype).reshape([size, 1] + [1] * (len(shape) - 2)).expand([size, k] + shape[2:])
                new_args = [flat, 0, flat_index, src.reshape([size * k] + shape[2:])]
                op = _aten("aten::index_copy_" if info.inplace else "aten::index_copy")
        else:  # index_add / index_copy: the source has self's rank, with the index's length along dim
            if not sb:
                src = expand_front(args[3], size)
            if src.dim() - 1 != rank:
                return NotImplemented
            new_args[3] = _fold_indexed_dim(src.unsqueeze(1) if rank == 0 else src, d)[0]
    result = (_aten(_functional_name(op.__name__)) if info.inplace else op)(*new_args, **kwargs)
    out = movedim(result.reshape(shape), 1, d)
    if rank == 0:
        out = out.reshape([size])
    if info.inplace:
        args[0].copy_(_make_batched(out, 0, level))
        return args[0]
    return _make_batched(out, 0, level)


def _functional_name(name: str) -> str:
    """'aten::index_add_' -> 'aten::index_add', 'aten::index_fill_.int_Scalar' -> 'aten::index_fill.int_Scalar'."""
    base, dot, overload = name.partition(".")
    return base[:-1] + dot + overload


def masked_fill(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """masked_fill with a batched 0-dim value tensor is where(mask, value, self); otherwise elementwise."""
    value = args[2]
    if not (isinstance(value, Tensor) and unwrap(value, level)[1] is not None):
        return pointwise(op, level, args, kwargs)
    info = schema_of(op)
    self_ = args[0]
    filled = _aten("aten::where.self")(args[1], value.to(self_.dtype), self_)
    if info.inplace:
        check_inplace("masked_fill_", op, args, kwargs, level)
        return self_.copy_(filled)
    return filled


def _advanced_index_layout(indices: list) -> tuple[bool, int]:
    """(adjacent, result ndim of the broadcast advanced indices) of an aten::index index list."""
    positions = [i for i, x in enumerate(indices) if x is not None]
    adjacent = positions == list(range(positions[0], positions[-1] + 1)) if positions else True
    ndim = 0
    for x in indices:
        if x is not None:
            ndim = max(ndim, 1 if x.dtype == _C.bool else x.dim())
    return adjacent, ndim


def _index_batched_indices(op: Any, level: int, self_: Tensor, indices: list) -> Any:
    """aten::index with batched integer indices (Note [Batched indices]): an arange over the batch joins them as
    the first advanced index, so element b reads its own slice with its own indices, in one call."""
    if any(x is not None and x.dtype == _C.bool for x in indices):
        return NotImplemented  # batched masks: a shape per element, the loop
    size = batch_size_of((self_, indices), level)
    v, batched = front(self_, level)
    if not batched:
        v = expand_front(self_, size)
    rank = max(logical_rank(x, level) for x in indices if x is not None)
    new = []
    for x in indices:
        if x is None:
            new.append(None)
            continue
        xv, xb = front(x, level)
        new.append(pad_to(xv, rank) if xb else x)  # unbatched ones broadcast from the right
    positions = [i for i, x in enumerate(indices) if x is not None]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    arange = _arange_like(size, v).reshape([size] + [1] * rank)
    result = op(v, [arange] + new)
    p = positions[0]
    if adjacent and p > 0:  # the advanced dims came first; logically they sit after the p dims before them
        nd = result.dim() - 1 - ((v.dim() - 1) - len(positions))  # the broadcast index rank
        order = [0] + list(range(1 + nd, 1 + nd + p)) + list(range(1, 1 + nd)) + list(range(1 + nd + p, result.dim()))
        result = result.permute(*order)
    return _make_batched(result, 0, level)


def index(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    self_, indices = args[0], list(args[1])
    if any(x is not None and unwrap(x, level)[1] is not None for x in indices):
        return _index_batched_indices(op, level, self_, indices)
    v, batched = front(self_, level)
    adjacent, ndim = _advanced_index_layout(indices)
    result = op(v, [None] + indices)
    return _make_batched(result, 0 if adjacent else ndim, level)


def index_put(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    info = schema_of(op)
    self_, indices, values = args[0], list(args[1]), args[2]
    if any(x is not None and unwrap(x, level)[1] is not None for x in indices):
        return NotImplemented
    adjacent, _ = _advanced_index_layout(indices)
    if not adjacent:
        return NotImplemented
    if info.inplace:
        check_inplace("index_put_", op, args, kwargs, level)
    v, batched = front(self_, level)
    if not batched:
        v = expand_front(self_, batch_size_of((args, kwargs), level)).clone()
    vals, vb = front(values, level)
    if vb:  # values broadcast to the indexed shape, which has the batch dim first
        idx_nd = max(1 if x.dtype == _C.bool else x.dim() for x in indices if x is not None)
        consumed = sum(x.dim() if x.dtype == _C.bool else 1 for x in indices if x is not None)
        indexed_rank = (v.dim() - 1) - consumed + idx_nd
        vals = pad_to(vals, indexed_rank)
    new_args = list(args)
    new_args[0], new_args[1], new_args[2] = v, [None] + indices, vals
    result = op(*new_args, **kwargs)
    return args[0] if info.inplace else _make_batched(result, 0, level)


def split_like(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    return dim_rule()(op, level, args, kwargs)


def resize_(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Resizing one element of a batch would change the batch's layout: only a same-size resize_ is allowed."""
    self_, size = args[0], list(args[1])
    if size != list(self_.shape):
        raise RuntimeError(f"vmap: resize_ of a batched tensor (size {list(self_.shape)}) to {size} is not "
                           f"supported; only a resize_ to the same size is")
    return self_


def local_scalar(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    raise RuntimeError(
        "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
        "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
        "inside PyTorch internals, please file a bug report.")


def is_floating_point(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    return op(unwrap(args[0], level)[0])


def mse_loss(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    info = schema_of(op)
    reduction = get_arg(info, args, kwargs, "reduction", 1)
    diff = args[0] - args[1]
    sq = diff * diff
    if reduction == 0:
        return sq
    return sq.sum() if reduction == 2 else sq.mean()


# Note [Batched nll_loss]
# ~~~~~~~~~~~~~~~~~~~~~~~
# nll_loss_forward / nll_loss_nd / nll_loss2d fold the batch into the loss's own batch dim N and run
# once with reduction="none" and no class weight (per-position losses, 0 at ignore_index); the
# weights are applied per position (an element's own weight vector when the weight is batched), and
# the reduction is done per element: "sum" sums its losses, "mean" divides that by its total weight
# (the weights of its non-ignored targets: 0/0 is nan, as the kernel's). A weight of the wrong size
# goes to the loop, whose kernel raises its error.
# cross_entropy_loss with class-index targets and no label smoothing is log_softmax + nll_loss_nd
# through the dispatcher (so both land on rules); its other forms decompose as usual.
def _nll_args(op: Any, args: tuple, kwargs: dict) -> tuple[Any, Any, Any, int, int]:
    info = schema_of(op)
    return (get_arg(info, args, kwargs, "self"), get_arg(info, args, kwargs, "target"),
            get_arg(info, args, kwargs, "weight"), get_arg(info, args, kwargs, "reduction", 1),
            get_arg(info, args, kwargs, "ignore_index", -100))


def _nll_batch_first(self_: Tensor, target: Tensor, level: int, size: int) -> tuple[Tensor, Tensor]:
    v, vb = front(self_, level)
    t, tb = front(target, level)
    return (v if vb else expand_front(self_, size)), (t if tb else expand_front(target, size))


def _nll_weights(target: Tensor, weight: Any, level: int, ignore_index: int, dtype: Any) -> Tensor:
    """Batch-first per-position weights: the class weight of each target (1 without weights), 0 where ignored."""
    valid = target.ne(ignore_index)
    if weight is None:
        return valid.to(dtype)
    safe = target.masked_fill(valid.logical_not(), 0).to(_C.int64)
    w, wb = front(weight, level)
    if wb:  # each element's own class weights [B, C]
        picked = w.gather(1, safe.reshape([safe.shape[0], -1])).reshape(list(target.shape))
    else:
        picked = weight.index_select(0, safe.reshape(-1)).reshape(list(target.shape))
    return picked.to(dtype) * valid


def _nll_batched(op: Any, level: int, args: tuple, kwargs: dict, fold: Callable) -> Any:
    """(output, total_weight) batch-first; ``fold(v, t)`` -> the folded (input, target) or None (not handled)."""
    self_, target, weight, reduction, ignore_index = _nll_args(op, args, kwargs)
    if reduction not in (0, 1, 2):
        return NotImplemented
    size = batch_size_of((args, kwargs), level)
    v, t = _nll_batch_first(self_, target, level, size)
    folded = fold(v, t)
    if folded is None or (isinstance(weight, Tensor) and weight.numel() != folded[0].shape[1]):
        return NotImplemented  # the loop gives the operator's own shape errors
    out = op(*folded, None, 0, ignore_index)
    losses = (out[0] if isinstance(out, tuple) else out).reshape(list(t.shape))
    wt = _nll_weights(t, weight, level, ignore_index, losses.dtype)
    losses = losses * wt
    if reduction == 0:
        return losses, None
    dims = list(range(1, t.dim()))
    total = wt.sum(dims) if dims else wt
    summed = losses.sum(dims) if dims else losses
    return (summed if reduction == 2 else summed / total), total


def nll_loss_forward(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Note [Batched nll_loss]: logical (C,) / () or (N, C) / (N,) inputs, the batch folded into N."""
    def fold(v: Tensor, t: Tensor) -> Any:
        if (v.dim(), t.dim()) not in ((2, 1), (3, 2)):
            return None
        return v.reshape([-1, v.shape[-1]]), t.reshape(-1)

    result = _nll_batched(op, level, args, kwargs, fold)
    if result is NotImplemented:
        return result
    out, total = result
    if total is None:  # reduction="none": total_weight is the kernel's 0
        from .._factories import zeros

        return _make_batched(out, 0, level), zeros((), dtype=out.dtype, device=out.device)
    return _make_batched(out, 0, level), _make_batched(total, 0, level)


def nll_loss_nd(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Note [Batched nll_loss]: logical (N, C, d...) / (N, d...) inputs (rank 3 and more; nll_loss_nd of lower
    ranks decomposes into nll_loss_forward), the batch folded into N."""
    def fold(v: Tensor, t: Tensor) -> Any:
        if v.dim() < 4 or t.dim() != v.dim() - 1:
            return None
        return v.reshape([-1] + list(v.shape[2:])), t.reshape([-1] + list(t.shape[2:]))

    result = _nll_batched(op, level, args, kwargs, fold)
    return result if result is NotImplemented else _make_batched(result[0], 0, level)


def cross_entropy_loss(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Class-index targets without label smoothing: log_softmax + nll_loss_nd (Note [Batched nll_loss])."""
    info = schema_of(op)
    self_, target, weight, reduction, ignore_index = _nll_args(op, args, kwargs)
    if get_arg(info, args, kwargs, "label_smoothing", 0.0) != 0.0 or target.is_floating_point():
        return NotImplemented
    logp = _aten("aten::log_softmax.int")(self_, 0 if self_.dim() == 1 else 1, None)
    return _aten("aten::nll_loss_nd")(logp, target, weight, reduction, ignore_index)


def native_layer_norm(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    x, shape, weight, bias, eps = args[0], args[1], args[2], args[3], args[4]
    if any(t is not None and unwrap(t, level)[1] is not None for t in (weight, bias)):
        # normalise without the affine part, then apply the batched weight/bias elementwise
        out, mean, rstd = op(x, shape, None, None, eps)
        if weight is not None:
            out = out * weight
        if bias is not None:
            out = out + bias
        return out, mean, rstd
    v, batched = front(x, level)
    if not batched:
        return NotImplemented
    return wrap_all(op(v, *args[1:], **kwargs), 0, level)


def native_group_norm(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """A batched input folds the vmap dim into N (N * B samples, statistics per sample and group); a batched
    weight or bias is applied elementwise after the unaffine normalisation, over the channel dim."""
    x, weight, bias, n, c, hxw, group, eps = args[:8]
    if any(t is not None and unwrap(t, level)[1] is not None for t in (weight, bias)):
        out, mean, rstd = op(x, None, None, n, c, hxw, group, eps)
        per_channel = [c] + [1] * (x.dim() - 2)
        if weight is not None:
            out = out * weight.reshape(per_channel)
        if bias is not None:
            out = out + bias.reshape(per_channel)
        return out, mean, rstd
    v, batched = front(x, level)
    if not batched:
        return NotImplemented
    b = v.shape[0]
    out, mean, rstd = op(v.reshape([b * n] + list(v.shape[2:])), weight, bias, b * n, c, hxw, group, eps)
    return (_make_batched(out.reshape(list(v.shape)), 0, level), _make_batched(mean.reshape([b, n, group]), 0, level),
            _make_batched(rstd.reshape([b, n, group]), 0, level))


def conv(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """conv1d/conv2d with a batched input and unbatched weight/bias: the vmap dim folds into the conv batch."""
    x = args[0]
    if any(isinstance(t, Tensor) and unwrap(t, level)[1] is not None for t in list(args[1:]) + list(kwargs.values())):
        return _conv_batched_weight(op, level, args, kwargs)
    v, batched = front(x, level)
    if not batched:
        return NotImplemented
    unbatched_input = v.dim() - 1 == (3 if op.__name__ == "aten::conv2d" else 2)
    if unbatched_input:  # the logical input has no conv batch dim: the vmap dim is it
        return _make_batched(op(v, *args[1:], **kwargs), 0, level)
    b, n = v.shape[0], v.shape[1]
    out = op(v.reshape([b * n] + list(v.shape[2:])), *args[1:], **kwargs)
    return _make_batched(out.reshape([b, n] + list(out.shape[1:])), 0, level)


def _conv_batched_weight(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """conv1d/conv2d with a batched weight (or bias): the vmap dim folds into the channels, one grouped conv.

    Element b's input channels become channels [b * Cin, (b + 1) * Cin) of one input, its weight rows
    [b * Cout, (b + 1) * Cout) of one weight, and groups becomes B * groups: grouped convolution then
    pairs each element's channels with its own weight only (group b * groups + g is element b's group g).
    """
    info = schema_of(op)
    x, weight = get_arg(info, args, kwargs, "input"), get_arg(info, args, kwargs, "weight")
    bias, groups = get_arg(info, args, kwargs, "bias"), get_arg(info, args, kwargs, "groups", 1)
    stride, padding = get_arg(info, args, kwargs, "stride", 1), get_arg(info, args, kwargs, "padding", 0)
    dilation = get_arg(info, args, kwargs, "dilation", 1)
    if not isinstance(padding, (int, list, tuple)):
        return NotImplemented  # padding="same"/"valid" overloads: the loop
    size = batch_size_of((args, kwargs), level)
    spatial = 2 if op.__name__ == "aten::conv2d" else 1
    w, wb = front(weight, level)
    if not wb:
        w = expand_front(weight, size)
    if w.dim() != spatial + 3:
        return NotImplemented  # the loop gives the kernel's shape error
    cout = w.shape[1]
    v, xb = front(x, level)
    unbatched_input = (v.dim() - 1 if xb else x.dim()) == spatial + 1  # the logical input has no conv batch dim
    if not xb:
        v = expand_front(x, size)
    if unbatched_input:  # [B, Cin, sp...] -> [1, B * Cin, sp...]
        folded = v.reshape([1, size * v.shape[1]] + list(v.shape[2:]))
    else:  # [B, N, Cin, sp...] -> [N, B * Cin, sp...]
        n = v.shape[1]
        folded = movedim(v, 0, 1).reshape([n, size * v.shape[2]] + list(v.shape[3:]))
    b = None
    if bias is not None:
        bv, bb = front(bias, level)
        b = (bv if bb else expand_front(bias, size)).reshape([size * cout])
    out = op(folded, w.reshape([size * cout] + list(w.shape[2:])), b, stride, padding, dilation, groups * size)
    if unbatched_input:
        return _make_batched(out.reshape([size, cout] + list(out.shape[2:])), 0, level)
    return _make_batched(out.reshape([out.shape[0], size, cout] + list(out.shape[2:])), 1, level)


_POINTWISE = """abs ceil cos erf erfinv exp expm1 floor log log10 log1p log2 neg reciprocal relu round rsqrt sigmoid
sign silu sin sqrt square tan tanh trunc gelu bitwise_not logical_not isfinite isinf isnan nan_to_num clamp clip
add sub mul div pow remainder floor_divide maximum minimum eq ne lt le gt ge bitwise_and bitwise_or bitwise_xor
logical_and logical_or logical_xor rsub lerp addcdiv addcmul where masked_fill clone _to_copy copy_ fill_ zero_
isclose tril triu native_dropout_backward""".split()
_POINTWISE_OPS = set(_POINTWISE) | {n + "_" for n in _POINTWISE}
_NO_SCALAR_BROADCAST = {"tril", "triu", "tril_", "triu_"}  # act on the last two dims: batch-first is enough

_DIM_OPS = {
    # reductions: None / [] dim = every logical dim
    "sum.dim_IntList": True, "mean.dim": True, "amax": True, "amin": True, "prod.dim_int": False,
    "all.dim": False, "any.dim": False, "max.dim": False, "min.dim": False, "logsumexp": False,
    "std.correction": True, "var.correction": True, "linalg_vector_norm": True, "norm.ScalarOpt_dim": True,
    "norm.ScalarOpt_dim_dtype": True,
    # dim-wise operators
    "softmax.int": False, "log_softmax.int": False, "_softmax": False, "_log_softmax": False, "cumsum": False, "cumprod": False, "cumsum_": False,
    "cumprod_": False, "sort": False, "sort.stable": False, "argsort": False, "argsort.stable": False,
    "topk": False, "flip": False, "diagonal": False, "split.Tensor": False, "split_with_sizes": False,
    "chunk": False, "unbind.int": False, "roll": False, "repeat_interleave.self_int": False,
}


def _rule_for(name: str) -> Callable | None:
    """The rule of 'aten::op.overload' (None if it has none)."""
    rule = _RULES.get(name)
    if rule is not None:
        return rule
    short = name.split("::", 1)[1] if "::" in name else name
    base = short.split(".", 1)[0]
    if not name.startswith("aten::"):
        return None
    if short in _DIM_OPS:
        return dim_rule(reduce_all=_DIM_OPS[short])
    if base in _POINTWISE_OPS and not short.endswith("out") and "_out" not in short:
        op = _aten(name)
        if op is None or not (schema_of(op).returns_tensors or schema_of(op).inplace):
            return None  # where(condition) -> Tensor[] is not elementwise
        if base in _NO_SCALAR_BROADCAST:
            return dim_rule()
        return pointwise
    return None


_RULES: dict[str, Callable] = {
    "aten::matmul": matmul, "aten::mm": mm, "aten::bmm": bmm, "aten::dot": dot,
    "aten::addmm": addmm, "aten::addmm_": addmm,
    "aten::view": view, "aten::as_strided": as_strided, "aten::t": t_rule, "aten::repeat": repeat,
    "aten::cat": cat_stack, "aten::stack": cat_stack,
    "aten::index_select": index_select, "aten::gather": gather_scatter,
    "aten::scatter.src": gather_scatter, "aten::scatter.value": gather_scatter, "aten::scatter_add": gather_scatter,
    "aten::scatter_.src": gather_scatter, "aten::scatter_.value": gather_scatter, "aten::scatter_add_": gather_scatter,
    "aten::index.Tensor": index, "aten::index_put": index_put, "aten::index_put_": index_put,
    "aten::_local_scalar_dense": local_scalar, "aten::resize_": resize_, "aten::is_floating_point": is_floating_point,
    "aten::mse_loss": mse_loss, "aten::native_layer_norm": native_layer_norm, "aten::native_group_norm": native_group_norm, "aten::masked_fill.Tensor": masked_fill, "aten::masked_fill_.Tensor": masked_fill,
    **{f"aten::{n}": index_dim_op for n in ("index_add", "index_add_", "index_copy", "index_copy_",
                                            "index_fill.int_Scalar", "index_fill.int_Tensor",
                                            "index_fill_.int_Scalar", "index_fill_.int_Tensor")},
    "aten::conv1d": conv, "aten::conv2d": conv,
    "aten::nll_loss_forward": nll_loss_forward, "aten::nll_loss_nd": nll_loss_nd, "aten::nll_loss2d": nll_loss_nd,
    "aten::cross_entropy_loss": cross_entropy_loss,
    "aten::argmax": argminmax, "aten::argmin": argminmax,
    **{k: full_reduction for k in _FULL_REDUCTIONS},
}
from ._view_rules import VIEW_RULES  # noqa: E402  (the view operators' rules: Note [View operators])

_RULES.update(VIEW_RULES)
_resolved: dict[str, Callable | None] = {}


def rule_for(name: str) -> Callable | None:
    try:
        return _resolved[name]
    except KeyError:
        rule = _resolved[name] = _rule_for(name)
        return rule


def has_rule(name: str) -> bool:
    """True if the aten overload 'aten::op.overload' has a batching rule (tests use this)."""
    return rule_for(name) is not None


# ---------------------------------------------------------------------------------------------
# decomposition and the slow fallback
# ---------------------------------------------------------------------------------------------
_math_kernels: dict[str, str | None] = {}


def _math_kernel_key(name: str) -> str | None:
    """A dense key whose kernel is the operator's CompositeImplicitAutograd one, or None."""
    try:
        return _math_kernels[name]
    except KeyError:
        pass
    key = None
    for line in _C._dispatch_dump_table(name).splitlines():
        if line.startswith("CPU:") and line.endswith("[math kernel]"):
            key = "CPU"
            break
    _math_kernels[name] = key
    return key


_warned: set[str] = set()
_warn_lock = threading.Lock()
fallback_warning_enabled = True


def _warn_fallback(name: str) -> None:
    if not fallback_warning_enabled:
        return
    with _warn_lock:
        if name in _warned:
            return
        _warned.add(name)
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule for {name}. "
        f"Please file us an issue on GitHub so that we can prioritize its implementation.", UserWarning,
        stacklevel=4)


def slow_fallback(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """The operator once per batch element (slices of the batched arguments), results stacked at dim 0."""
    info = schema_of(op)
    name = op.__name__
    if not info.returns_tensors and not info.inplace:
        raise RuntimeError(f"Batching rule not implemented for {name}. We could not generate a fallback.")
    if info.out or (info.view_or_alias and not info.inplace):
        raise RuntimeError(
            f"Batching rule not implemented for {name}; the fallback path doesn't work on out= or view ops.")
    if info.inplace:
        check_inplace(None, op, args, kwargs, level)
    elif not info.schema.returns:
        raise RuntimeError(f"Batching rule not implemented for {name}. The fallback path does not support "
                           f"operations with no returns.")
    size = batch_size_of((args, kwargs), level)
    if size == 0:
        raise RuntimeError(f"Batching rule not implemented for {name}. The fallback path does not support vmap "
                           f"over dims of size 0.")
    _warn_fallback(name)

    def slice_of(x: Any, b: int) -> Any:
        if isinstance(x, Tensor):
            value, bdim = unwrap(x, level)
            return value.select(bdim, b) if bdim is not None else x
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            return type(x)(slice_of(e, b) for e in x)
        return x

    results = []
    for b in range(size):
        results.append(op(*[slice_of(a, b) for a in args], **{k: slice_of(v, b) for k, v in kwargs.items()}))
    if info.inplace:
        return args[0]
    stack = _aten("aten::stack")
    if isinstance(results[0], Tensor):
        return _make_batched(stack(results, 0), 0, level)
    return type(results[0])(_make_batched(stack([r[i] for r in results], 0), 0, level)
                            for i in range(len(results[0])))


def batched_fallback(op: Any, keyset: Any, args: tuple, kwargs: dict) -> Any:
    """The boxed fallback at the FuncTorchBatched key (see the module docstring)."""
    level = 0
    for a in args:
        lv = _batched_level(a)
        if lv == 0 and isinstance(a, (list, tuple)):
            for e in a:
                lv = max(lv, _batched_level(e))
        if lv > level:
            level = lv
    for a in kwargs.values():
        level = max(level, _batched_level(a))
    name = op.__name__
    custom = vmap_rules.get(name) or (vmap_rules.get(name[: -len(".default")]) if name.endswith(".default") else None)
    if custom is not None:
        from .vmap import call_custom_rule

        return call_custom_rule(custom, op, level, args, kwargs)
    rule = rule_for(name)
    if rule is not None:
        result = rule(op, level, args, kwargs)
        if result is not NotImplemented:
            return result
    key = _math_kernel_key(name)
    if key is not None:
        if schema_of(op).view_or_alias:  # a mutating decomposition: its errors are the user's
            return _C._dispatch_get_kernel(name, key).call_boxed(keyset, *args, **kwargs)
        try:
            return _C._dispatch_get_kernel(name, key).call_boxed(keyset, *args, **kwargs)
        except RuntimeError as e:
            # A functional decomposition that writes batched values into a temporary it made unbatched
            # (zeros(...) then add_): its inputs are untouched, so the per-element loop gives the result.
            if "(self, *extra_args) is not possible" not in str(e):
                raise
    return slow_fallback(op, level, args, kwargs)
