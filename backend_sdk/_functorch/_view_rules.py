"""Batching rules of the view operators (Note [View operators], csrc/backend_sdk/ops/Views.cpp).

Each view operator is one dispatcher operator (``aten::transpose.int``, ``aten::select.int``, ...), so
under vmap it reaches the FuncTorchBatched fallback by its own name; the slow per-element loop refuses
view operators, so every one of them has a rule here. A rule moves the batch dim of ``self`` to the
front, calls the operator on the value with its dim arguments shifted past the batch dim, and wraps the
result batched at dim 0. ``t``, ``view``, ``as_strided`` and the dim-only ones (``split``, ``unbind``,
``diagonal``) have their rules in ``_rules``.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import _C

__all__ = ["VIEW_RULES"]

_make_batched = _C._make_batched


def _rules() -> Any:
    from . import _rules

    return _rules


def _shifted(d: int, rank: int, name: str) -> int:
    """Logical dim d of a rank-`rank` tensor as a dim of the batch-first value."""
    return _rules().wrap_dim(d, rank, name) + 1


def _op(name: str) -> Any:
    return _rules()._aten(name)


def _rule(body: Callable[[Any, Any, int, tuple, dict], Any]) -> Callable:
    """A batching rule for a view of a batched ``self`` (other tensor arguments unbatched):
    body(op, value with the batch dim first, logical rank, args, kwargs) -> the batch-first result."""

    def rule(op: Any, level: int, args: tuple, kwargs: dict) -> Any:
        r = _rules()
        if any(r.unwrap(t, level)[1] is not None for t in r._tensors((args[1:], kwargs))):
            return NotImplemented
        v, batched = r.front(args[0], level)
        if not batched:
            return NotImplemented
        return _make_batched(body(op, v, v.dim() - 1, args, kwargs), 0, level)

    return rule


def _needs_dims(name: str, rank: int) -> None:
    if rank == 0:
        exc = IndexError if name == "select" else RuntimeError
        raise exc(f"{name}() cannot be applied to a 0-dim tensor.")


def _identity(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    return op(v)


def _transpose(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    if rank == 0:  # a 0-dim transpose is the identity (its dims wrap as for a 0-dim tensor)
        _rules().wrap_dim(args[1], 0, "transpose")
        _rules().wrap_dim(args[2], 0, "transpose")
        return _op("aten::alias")(v)
    return op(v, _shifted(args[1], rank, "transpose"), _shifted(args[2], rank, "transpose"))


def _permute(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    dims = list(args[1])
    if len(dims) != rank:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {rank} is not equal to len(dims) = {len(dims)}")
    return op(v, [0] + [_shifted(d, rank, "permute") for d in dims])


def _dim_first(name: str) -> Callable:
    """select / slice / narrow / unfold: the first argument after self is a dim, the rest pass through."""

    def body(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
        if name == "unfold" and rank == 0:  # a 0-dim self unfolds to shape [size]: through a size-1 dim
            _rules().wrap_dim(args[1], 0, name)
            return op(v.unsqueeze(1), 1, *args[2:]).squeeze(1)
        _needs_dims(name, rank)
        return op(v, _shifted(args[1], rank, name), *args[2:], **kwargs)

    return body


def _unsqueeze(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    return op(v, _shifted(args[1], rank + 1, "unsqueeze"))


def _squeeze(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    """squeeze / squeeze.dim / squeeze.dims: only logical dims go (the batch dim stays even at size 1)."""
    if op.__name__ == "aten::squeeze":
        dims = [i for i in range(1, v.dim()) if v.shape[i] == 1]
    else:
        given = [args[1]] if op.__name__ == "aten::squeeze.dim" else list(args[1])
        dims = [_rules().wrap_dim(d, rank, "squeeze") + 1 for d in given]  # wrapped as for a 0-dim tensor
        if rank == 0:
            dims = []  # the batch dim is the value's only one
    return _op("aten::squeeze.dims")(v, dims)


def _expand(op: Any, v: Any, rank: int, args: tuple, kwargs: dict) -> Any:
    """expand(size): the value gets size-1 dims after the batch dim up to len(size), then expands behind it."""
    size = list(args[1])
    if len(size) < rank:
        raise RuntimeError(f"expand: the number of sizes provided ({len(size)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({rank})")
    v = _rules().pad_to(v, len(size))
    return op(v, [v.shape[0]] + size, **kwargs)


VIEW_RULES: dict[str, Callable] = {
    "aten::alias": _rule(_identity),
    "aten::detach": _rule(_identity),
    "aten::transpose.int": _rule(_transpose),
    "aten::permute": _rule(_permute),
    "aten::select.int": _rule(_dim_first("select")),
    "aten::slice.Tensor": _rule(_dim_first("slice")),
    "aten::narrow": _rule(_dim_first("narrow")),
    "aten::unfold": _rule(_dim_first("unfold")),
    "aten::unsqueeze": _rule(_unsqueeze),
    "aten::squeeze": _rule(_squeeze),
    "aten::squeeze.dim": _rule(_squeeze),
    "aten::squeeze.dims": _rule(_squeeze),
    "aten::expand": _rule(_expand),
}
