"""Random operators under vmap: kernels at the FuncTorchVmapMode key (Note [Batched tensors] in vmap.py).

While a vmap runs its thread includes FuncTorchVmapMode, which is above FuncTorchBatched; every
operator but the random ones falls through it. A random operator's kernel here applies the randomness
of the innermost running level:

* "error": PyTorch's "vmap: called random operation while in randomness error mode ..." RuntimeError;
* "different": one draw per batch element: a factory draws ``[batch_size, *size]``, an operator with
  tensor inputs runs on the batch-first values (unbatched inputs expanded); an in-place one needs a
  ``self`` batched at that level (PyTorch's error otherwise);
* "same": one draw for the whole batch: the operator runs on the logical shapes and its result is not
  batched at that level (an in-place write into a batched self copies the one draw into every element).

The operator is then called again for the levels below: the level is taken off the thread's stack
for the call, so the next kernel sees the next level's randomness, and below the outermost level the
call excludes FuncTorchVmapMode and reaches the operator's own kernels.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from .. import _C
from .._tensor import Tensor
from . import _rules, vmap as _vmap

_aten = _C._get_op_overload
_MODE_SET = _C.DispatchKeySet(["FuncTorchVmapMode"])

_FACTORIES = ["rand", "rand.generator", "randn", "randn.generator", "randint", "randint.generator", "randint.low",
              "randint.low_generator", "normal.float_float", "randperm", "randperm.generator"]
_LIKE = ["rand_like", "rand_like.generator", "randn_like", "randn_like.generator", "randint_like",
         "randint_like.generator", "randint_like.low_dtype", "randint_like.low_generator_dtype"]
_INPLACE = ["uniform_", "normal_", "random_", "random_.from", "random_.to", "exponential_", "bernoulli_.float",
            "bernoulli_.Tensor"]
_FUNCTIONAL = ["bernoulli", "bernoulli.p", "normal.Tensor_Tensor", "normal.Tensor_float", "normal.float_Tensor",
               "multinomial", "native_dropout"]


def _error() -> RuntimeError:
    return RuntimeError(
        "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' "
        "randomness flags on vmap or perform the randomness operation out of vmap")


def _same_with_batched() -> RuntimeError:
    return RuntimeError("Vmap does not currently support same randomness with a batched tensor input. Please file "
                        "an issue with functorch")


@contextlib.contextmanager
def _below(entry: Any) -> Iterator[None]:
    """The block runs as if ``entry`` (the innermost level) were not running."""
    stack = _vmap._stack()
    stack.pop()
    guard = _C._ExcludeDispatchKeyGuard(_MODE_SET) if not stack else None
    if guard is not None:
        guard.__enter__()
    try:
        yield
    finally:
        if guard is not None:
            guard.__exit__(None, None, None)
        stack.append(entry)


def _batched_at(x: Any, level: int) -> bool:
    return isinstance(x, Tensor) and _rules.unwrap(x, level)[1] is not None


def _physical(args: tuple, kwargs: dict, level: int, size: int) -> tuple[list, dict]:
    """Every tensor argument batch-first at ``level`` (unbatched ones expanded), padded to a common rank."""
    tensors = list(_rules._tensors((args, kwargs)))
    rank = max((_rules.logical_rank(t, level) for t in tensors), default=0)

    def conv(x: Any) -> Any:
        if not isinstance(x, Tensor):
            return x
        v, batched = _rules.front(x, level)
        if not batched:
            v = _rules.expand_front(x, size)
        return _rules.pad_to(v, rank)

    return [conv(a) for a in args], {k: conv(v) for k, v in kwargs.items()}


def _call(op: Any, kind: str, args: tuple, kwargs: dict) -> Any:
    entry = _vmap.current_level()
    if entry is None:
        with _C._ExcludeDispatchKeyGuard(_MODE_SET):
            return op(*args, **kwargs)
    name = op.__name__
    info = _rules.schema_of(op)
    if name == "aten::native_dropout":
        train = _rules.get_arg(info, args, kwargs, "train")
        if train is False:  # not random: the batching rules handle it
            with _below(entry):
                return op(*args, **kwargs)
    level, size, randomness = entry.level, entry.batch_size, entry.randomness
    if randomness == "error":
        raise _error()
    any_batched = any(_batched_at(t, level) for t in _rules._tensors((args, kwargs)))
    if kind == "factory":
        if randomness == "same" or name.startswith("aten::randperm"):
            if randomness == "same":
                with _below(entry):
                    return op(*args, **kwargs)
            with _below(entry):
                draws = [op(*args, **kwargs) for _ in range(size)]
            return _C._make_batched(_aten("aten::stack")(draws, 0), 0, level)
        new_args, new_kwargs = list(args), dict(kwargs)
        _rules.set_arg(info, new_args, new_kwargs, "size", [size] + list(_rules.get_arg(info, args, kwargs, "size")))
        with _below(entry):
            result = op(*new_args, **new_kwargs)
        return _C._make_batched(result, 0, level)
    if kind == "like":
        self_ = args[0]
        value, bdim = _rules.unwrap(self_, level)
        if randomness == "same":
            src = value.select(bdim, 0) if bdim is not None else self_
            with _below(entry):
                return op(src, *args[1:], **kwargs)
        src = value if bdim is not None else _rules.expand_front(self_, size).contiguous()
        with _below(entry):
            result = op(src, *args[1:], **kwargs)
        return _C._make_batched(result, bdim if bdim is not None else 0, level)
    if kind == "inplace":
        self_ = args[0]
        others_batched = any(_batched_at(t, level) for t in _rules._tensors((args[1:], kwargs)))
        if randomness == "different":
            if not _batched_at(self_, level):
                raise RuntimeError(
                    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear like "
                    "same randomness. If this is necessary for your usage, please file an issue with functorch.")
            new_args, new_kwargs = _physical(args, kwargs, level, size)
            new_args[0], _ = _rules.front(self_, level)
            with _below(entry):
                op(*new_args, **new_kwargs)
            return self_
        if others_batched:
            raise _same_with_batched()
        if _batched_at(self_, level):
            value, bdim = _rules.unwrap(self_, level)
            draw = value.select(bdim, 0).clone()
            with _below(entry):
                op(draw, *args[1:], **kwargs)
            self_.copy_(draw)
            return self_
        with _below(entry):
            return op(*args, **kwargs)
    # functional with tensor inputs
    if randomness == "same":
        if name == "aten::native_dropout" and any_batched:
            x = args[0]
            value, bdim = _rules.unwrap(x, level)
            ones = value.select(bdim, 0).new_ones(list(x.shape))
            with _below(entry):
                scaled, mask = op(ones, *args[1:], **kwargs)
            return x * scaled, mask
        if name == "aten::bernoulli.p" and any_batched:  # self gives only the shape: one draw of it
            value, bdim = _rules.unwrap(args[0], level)
            with _below(entry):
                return op(value.select(bdim, 0), *args[1:], **kwargs)
        if any_batched:
            raise _same_with_batched()
        with _below(entry):
            return op(*args, **kwargs)
    new_args, new_kwargs = _physical(args, kwargs, level, size)
    if name == "aten::multinomial" and new_args[0].dim() > 2:
        v = new_args[0]
        flat = v.reshape([-1, v.shape[-1]])
        new_args[0] = flat
        with _below(entry):
            out = op(*new_args, **new_kwargs)
        return _C._make_batched(out.reshape(list(v.shape[:-1]) + [out.shape[-1]]), 0, level)
    with _below(entry):
        result = op(*new_args, **new_kwargs)
    return _rules.wrap_all(result, 0, level)


def _kernel(qualname: str, kind: str) -> Callable:
    op = _aten(qualname)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _call(op, kind, args, kwargs)

    kernel.__name__ = f"vmap_random_{qualname.split('::')[1].replace('.', '_')}"
    return kernel


_lib = None


def install() -> None:
    global _lib
    if _lib is not None:
        return
    from ..library import Library

    _lib = Library("aten", "IMPL", "FuncTorchVmapMode")
    for names, kind in ((_FACTORIES, "factory"), (_LIKE, "like"), (_INPLACE, "inplace"), (_FUNCTIONAL, "functional")):
        for short in names:
            qualname = f"aten::{short}"
            if _aten(qualname) is not None:
                _lib.impl(short, _kernel(qualname, kind))
