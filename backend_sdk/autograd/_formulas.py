"""Derivative formulas of the operator library that are not (yet) in the C++ table, keyed by
operator overload ("aten::cat").

Most formulas live in csrc/backend_sdk/autograd/derivatives.def (Note [Derivative formula
table]); an overload is written in one place only (tests/test_autograd_cpp_formulas.py checks).
The ones here are views and shape ops (recorded in Python for view tracking), Tensor[] operators,
the nn operators of ``_formulas_nn``, and the in-place samplers.

A formula receives a FormulaCtx ``c``: ``c["name"]`` is a forward argument (a
saved tensor, checked against its version, for names in ``saves``; for other
tensors a TensorMeta with shape/dtype/device; numbers and lists as passed),
``c.result`` the forward output(s) when ``"result"`` is in ``saves``,
``c.g`` / ``c.grads`` the gradients of the outputs (zeros where none flowed),
and ``c.needs`` the names of the arguments that require grad. It returns a
dict of argument name to gradient (a list for Tensor[] arguments). Gradients
are then reduced to the input's shape (broadcasting) and cast to its dtype and
device by the node, so formulas need not do that. Formulas call operators, so
with create_graph=True their own graph is recorded (double backward).

In-place variants (``add_.Tensor``) use the functional formula; composite
operators (CompositeImplicitAutograd: matmul, linear, cross_entropy, ...) need
none, since their gradient comes from the operators they call.
"""
from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["FORMULAS", "Formula", "NOT_DIFFERENTIABLE", "sum_to"]


class Formula:
    """A derivative formula and the argument names (and ``"result"``) it saves."""

    __slots__ = ("fn", "saves", "node_name")

    def __init__(self, fn: Callable, saves: tuple[str, ...], node_name: str | None = None) -> None:
        self.fn, self.saves, self.node_name = fn, frozenset(saves), node_name

    def __call__(self, ctx: Any) -> Any:
        return self.fn(ctx)


FORMULAS: dict[str, Formula] = {}


def formula(*names: str, saves: tuple[str, ...] = ()) -> Callable:
    def register(fn: Callable) -> Callable:
        f = Formula(fn, saves)
        for n in names:
            FORMULAS[n if "::" in n else "aten::" + n] = f
        return fn

    return register


def _B() -> Any:
    import backend_sdk

    return backend_sdk


def _ops() -> Any:
    return _B().ops.aten


def sum_to(g: Any, shape: Any) -> Any:
    """Sums g over the dimensions broadcasting added or expanded to reach its shape from `shape`."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = _ops().sum.dim_IntList(g, dims, True)
    return g.reshape(list(shape))


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _B().Tensor)


def _zeros(meta: Any, g: Any = None) -> Any:
    """Zeros shaped like meta's tensor; with g, made by ``aten::new_zeros`` on g (PyTorch's formulas use
    ``grad.new_zeros``), so a __torch_dispatch__ subclass gradient gets zeros of its own class to write into
    (otherwise its gradient would be written into a plain tensor and leave the formula as one)."""
    if g is not None:
        return _ops().new_zeros.default(g, list(meta.shape), dtype=meta.dtype, device=meta.device)
    return _B().zeros(list(meta.shape), dtype=meta.dtype, device=meta.device)


def _dims(dim: Any, ndim: int) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return sorted(d % ndim if ndim else 0 for d in dim)


def _unsqueeze_dims(g: Any, dims: list[int], ndim: int, keepdim: bool) -> Any:
    """g reduced over dims without keepdim -> the keepdim shape."""
    if keepdim or ndim == 0:
        return g
    for d in dims:
        g = g.unsqueeze(d)
    return g


# ---- arithmetic -------------------------------------------------------------
@formula("_to_copy", "clone", "contiguous", "lift_fresh")
def _identity_like(c):
    return {"self": c.g}


@formula("round.decimals")
def _zero_grad(c):
    return {"self": c.g * 0}


@formula("clamp.Tensor", saves=("self", "min", "max"))
def _clamp_tensor(c):
    B = _B()
    x, lo, hi = c["self"], c["min"], c["max"]
    out = {}
    mask = None
    if _is_tensor(lo):
        mask = x >= lo
        if "min" in c.needs:
            out["min"] = B.where(x < lo, c.g, 0.0)
    if _is_tensor(hi):
        m = x <= hi
        mask = m if mask is None else mask & m
        if "max" in c.needs:
            out["max"] = B.where(x > hi, c.g, 0.0)
    out["self"] = c.g if mask is None else B.where(mask, c.g, 0.0)
    return out


# ---- reductions ---------------------------------------------------------------
@formula("linalg_vector_norm", "norm.Scalar", "norm.ScalarOpt_dim", "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim_dtype",
         saves=("self", "result"))
def _vector_norm(c):
    B = _B()
    x = c["self"]
    p = c.args["ord"] if "ord" in c.args else c.args.get("p")
    p = 2.0 if p is None else float(p)
    dims = _dims(c.args.get("dim"), x.dim())
    keepdim = bool(c.args.get("keepdim", False))
    g = _unsqueeze_dims(c.g, dims, x.dim(), keepdim)
    r = _unsqueeze_dims(c.result, dims, x.dim(), keepdim)
    if p == 0:
        return {"self": x * 0}
    if p == 1:
        return {"self": g * x.sign()}
    if math.isinf(p):
        mask = (x.abs() == r).to(dtype=g.dtype)
        count = _ops().sum.dim_IntList(mask, dims, True) if dims else mask
        return {"self": g * x.sign() * mask / count}
    if p == 2:
        return {"self": B.where(r == 0, 0.0, g * x / r)}
    return {"self": B.where(r == 0, 0.0, g * x * x.abs() ** (p - 2) / r ** (p - 1))}


# ---- linear algebra -------------------------------------------------------------
# ---- views and shape ops ------------------------------------------------------------
# view, expand, t, transpose.int, permute, select.int, slice.Tensor, unsqueeze, squeeze*, alias, diagonal
# and unfold are in derivatives.def (Note [View operators]); narrow is composite (slice.Tensor).
@formula("_unsafe_view", "reshape", "_reshape_alias", "flatten.using_ints", "view_as", "expand_as_view")
def _reshape_back(c):
    return {"self": c.g.reshape(list(c["self"].shape))}


@formula("as_strided", saves=("self",))
def _as_strided(c):
    B = _B()
    x = c["self"]
    size, stride = list(c["size"]), list(c["stride"])
    offset = c["storage_offset"]
    base_off = x.storage_offset()
    out_off = (offset if offset is not None else base_off) - base_off
    # Flat positions (relative to x's storage offset) covered by x and by the output.
    def extent(shape, strides, off):
        return off + sum((s - 1) * st for s, st in zip(shape, strides) if s > 0) + 1
    n = max(extent(x.shape, x.stride(), 0), extent(size, stride, out_off), 1)
    flat = _ops().new_zeros.default(c.g, [n], dtype=c.g.dtype, device=x.device)  # c.g's class (_zeros)
    if _no_internal_overlap(size, stride):
        # Each output element has a storage position of its own (every view op but expand): one strided
        # copy scatters the gradient, instead of an index of every position and an accumulating index_put.
        flat.as_strided(size, stride, out_off).copy_(c.g)
    else:
        pos = B.arange(n, device=x.device)
        out_pos = pos.as_strided(size, stride, out_off).reshape(-1)
        flat = flat.index_put([out_pos], c.g.reshape(-1), True)
    return {"self": flat.as_strided(list(x.shape), list(x.stride()), 0)}


def _no_internal_overlap(size: list[int], stride: list[int]) -> bool:
    """True if no two elements of the geometry share a storage position (dims by stride, each stride beyond
    the extent of the smaller ones); conservative: False can still be overlap-free."""
    reach = 0
    for st, sz in sorted((st, sz) for sz, st in zip(size, stride) if sz > 1):
        if st <= reach:
            return False
        reach += (sz - 1) * st
    return True


@formula("cat", saves=())
def _cat(c):
    metas = c["tensors"]
    d = c["dim"]
    grads = []
    start = 0
    nd = max(m.dim() for m in metas if m is not None)
    d = d % nd
    for m in metas:
        if m.dim() == 1 and m.shape[0] == 0 and nd != 1:  # legacy empty tensors are skipped
            grads.append(None)
            continue
        grads.append(c.g.narrow(d, start, m.shape[d]))
        start += m.shape[d]
    return {"tensors": grads}


@formula("stack")
def _stack(c):
    metas = c["tensors"]
    d = c["dim"] % (metas[0].dim() + 1)
    return {"tensors": [c.g.select(d, i) for i in range(len(metas))]}


@formula("repeat")
def _repeat(c):
    meta = c["self"]
    reps = list(c["repeats"])
    lead = len(reps) - meta.dim()
    shape = [1] * lead + list(meta.shape)
    split, sum_dims = [], []
    for i, (r, s) in enumerate(zip(reps, shape)):
        split += [r, s]
        sum_dims.append(2 * i)
    g = _ops().sum.dim_IntList(c.g.reshape(split), sum_dims, False)
    return {"self": g.reshape(list(meta.shape))}


@formula("flip")
def _flip(c):
    return {"self": c.g.flip(list(c["dims"]))}


@formula("unbind.int")
def _unbind(c):
    meta = c["self"]
    d = c["dim"] % meta.dim()
    return {"self": _B().stack(list(c.grads), d)}


@formula("split.Tensor", "split_with_sizes", "chunk")
def _split(c):
    meta = c["self"]
    return {"self": _B().cat(list(c.grads), c["dim"] % meta.dim())}


FORMULAS["aten::chunk"] = Formula(_split, (), "SplitBackward0")  # chunk is split in PyTorch (its node's name)


# ---- indexing -----------------------------------------------------------------------
def _on(t: Any, device: Any) -> Any:
    """Index tensors may live on the CPU for a device tensor (as in PyTorch); index_put wants them beside self."""
    return t.to(device=device) if _is_tensor(t) and t.device != device else t


def _index_put_into(z: Any, indices: list, g: Any) -> Any:
    """z (fresh zeros, seen by no one else) with g accumulated at indices: in place, as PyTorch's
    index_select_backward (zeros().index_add_()), saving the functional index_put's copy of z (the
    embedding table's size, per backward). With create_graph the functional form keeps z out of the graph."""
    from .. import _C

    if _C._is_grad_enabled() and g.requires_grad:
        return _ops().index_put.default(z, indices, g, True)
    return _ops().index_put_.default(z, indices, g, True)


@formula("index.Tensor", saves=("indices",))
def _index(c):
    meta = c["self"]
    z = _zeros(meta, c.g)
    return {"self": _index_put_into(z, [_on(i, meta.device) for i in c["indices"]], c.g)}


@formula("index_select", saves=("index",))
def _index_select(c):
    meta = c["self"]
    d = c["dim"] % max(meta.dim(), 1)
    z = _zeros(meta, c.g)
    if meta.dim() == 0:
        return {"self": c.g.reshape([])}
    return {"self": _index_put_into(z, [None] * d + [_on(c["index"], meta.device)], c.g)}


@formula("copy_", "copy")
def _copy(c):
    return {"src": c.g}


# ---- losses ---------------------------------------------------------------------------
@formula("nll_loss_forward", saves=("target", "weight", "result"))
def _nll(c):
    B = _B()
    meta = c["self"]
    target = c["target"]
    weight = c["weight"]
    red = c["reduction"]
    ignore = c["ignore_index"]
    _, total_weight = c.result
    g = c.grads[0]
    batched = meta.dim() == 2
    t = target if batched else target.reshape([1])
    keep = t != ignore
    safe_t = B.where(keep, t, 0)
    w = weight.index_select(0, safe_t) if _is_tensor(weight) else B.ones(list(t.shape), dtype=g.dtype,
                                                                         device=g.device)
    w = w * keep.to(dtype=w.dtype)
    coef = -w * g
    if red == 1:
        coef = coef / total_weight
    z = B.zeros([t.shape[0], meta.shape[-1]], dtype=g.dtype, device=g.device)
    z = z.scatter(1, safe_t.unsqueeze(1), coef.unsqueeze(1))
    return {"self": z if batched else z.reshape(list(meta.shape))}


# ---- more operators -------------------------------------------------------------------------
@formula("fill.Scalar", "fill_.Scalar", "zero")
def _fill(c):
    return {}  # self is overwritten: its previous value gets no gradient


def _exclusive_products(x: Any, d: int) -> Any:
    """prod_{j != i} x_j along d, exact with zeros (products of the elements left and right of each)."""
    B = _B()
    n = x.shape[d]
    ones_shape = list(x.shape)
    ones_shape[d] = 1
    one = B.ones(ones_shape, dtype=x.dtype, device=x.device)
    if n == 1:
        return one
    left = B.cat([one, x.cumprod(d).narrow(d, 0, n - 1)], d)
    right = B.cat([one, x.flip([d]).cumprod(d).narrow(d, 0, n - 1)], d).flip([d])
    return left * right


@formula("prod", saves=("self",))
def _prod(c):
    x = c["self"]
    if x.numel() == 0:
        return {"self": x * 0}
    flat = x.reshape([-1])
    return {"self": c.g * _exclusive_products(flat, 0).reshape(list(x.shape))}


@formula("prod.dim_int", saves=("self",))
def _prod_dim(c):
    x = c["self"]
    if x.dim() == 0:
        return {"self": c.g}
    d = c["dim"] % x.dim()
    if x.shape[d] == 0:
        return {"self": x * 0}
    g = _unsqueeze_dims(c.g, [d], x.dim(), c["keepdim"])
    return {"self": g * _exclusive_products(x, d)}


@formula("cumprod", saves=("self", "result"))
def _cumprod(c):
    # Exact for inputs without zeros (as PyTorch's fast path): reverse cumsum of g * result, over self.
    x, d = c["self"], c["dim"]
    if x.dim() == 0:
        return {"self": c.g}
    return {"self": (c.g * c.result).flip([d]).cumsum(d).flip([d]) / x}


@formula("remainder.Tensor", saves=("self", "other"))
def _remainder(c):
    out = {"self": c.g}
    if "other" in c.needs:
        out["other"] = -c.g * c["self"].div(c["other"], rounding_mode="floor")
    return out


@formula("remainder.Scalar")
def _remainder_scalar(c):
    return {"self": c.g}


@formula("remainder.Scalar_Tensor", saves=("other",))
def _remainder_st(c):
    other = c["other"]
    return {"other": -c.g * ((other * 0 + c["self"]) / other).floor()}


@formula("floor_divide", "floor_divide.Scalar")
def _floor_divide(c):
    return {"self": c.g * 0, "other": c.g * 0}


@formula("scatter.src", saves=("index",))
def _scatter_src(c):
    idx, d = c["index"], c["dim"]
    return {"self": c.g.scatter(d, idx, 0.0), "src": c.g.gather(d, idx)}


@formula("scatter.value", saves=("index",))
def _scatter_value(c):
    return {"self": c.g.scatter(c["dim"], c["index"], 0.0)}


@formula("scatter_add", saves=("index",))
def _scatter_add(c):
    return {"self": c.g, "src": c.g.gather(c["dim"], c["index"])}


@formula("index_put", saves=("indices",))
def _index_put(c):
    B = _B()
    indices = [_on(i, c.g.device) for i in c["indices"]]
    out = {}
    if "self" in c.needs:
        out["self"] = c.g if c["accumulate"] else _ops().index_put.default(
            c.g, indices, B.zeros([], dtype=c.g.dtype, device=c.g.device), False)
    if "values" in c.needs:
        out["values"] = _ops().index.Tensor(c.g, indices)
    return out


@formula("masked_select", saves=("mask",))
def _masked_select(c):
    import numpy as np

    meta = c["self"]
    mask, g = c["mask"], c.g
    # self and mask broadcast together (PyTorch's masked_select): the gradient is scattered into
    # the broadcast shape and the node sums it back to self's.
    shape = [int(d) for d in np.broadcast_shapes(tuple(meta.shape), tuple(mask.shape))]
    if meta.device.type != "cpu":
        # A boolean-mask index_put has a data-dependent shape that device kernels may refuse to
        # plan (Meta cannot); scatter on the host and move the result back.
        out = _ops().index_put.default(
            _B().zeros(shape, dtype=meta.dtype), [_on(mask, _B().device("cpu")).expand(shape)], g.cpu(), True)
        return {"self": out.to(device=meta.device)}
    if list(mask.shape) != shape:
        mask = mask.expand(shape)
    z = _B().zeros(shape, dtype=meta.dtype, device=meta.device)
    return {"self": _ops().index_put.default(z, [mask], g, True)}


@formula("take", saves=("index",))
def _take(c):
    meta = c["self"]
    z = _zeros(meta, c.g).reshape([-1])
    z = _ops().index_put.default(z, [_on(c["index"], meta.device).reshape([-1])], c.g.reshape([-1]), True)
    return {"self": z.reshape(list(meta.shape))}


# ---- random operators ------------------------------------------------------------------------
# The in-place samplers (uniform_, normal_, bernoulli_, random_, ...; their functional forms are in
# the C++ table where aten has them): a sample does not depend on the values it overwrites, so its
# gradient is zero (derivatives.yaml: zeros_like(grad)).
@formula("uniform", "normal", "bernoulli.float", "bernoulli.Tensor", "bernoulli.p", "random", "random.from",
         "random.to", "exponential", "geometric", "cauchy", "log_normal")
def _random_zero(c):
    return {"self": c.g * 0, "p": c.g * 0}


# Outputs PyTorch does not differentiate (fresh samples shaped like their input): recorded as
# constants, they do not require grad.
NOT_DIFFERENTIABLE = frozenset(
    "aten::" + n for n in ("detach", "rand_like", "randn_like", "randint_like", "randint_like.low_dtype",
                           "randint_like.Tensor", "new_empty", "new_zeros", "new_ones", "new_full")
)


# In-place overloads whose functional twin has a different overload name.
INPLACE_KEYS = {
    "aten::pow_.Scalar": "aten::pow.Tensor_Scalar",
    "aten::pow_.Tensor": "aten::pow.Tensor_Tensor",
}

from . import _formulas_nn  # noqa: E402,F401  (issue 20: the nn operators; registers into FORMULAS)
