"""vmap, as ``torch.func.vmap``: batching at the dispatcher with batched tensors.

Note [Batched tensors]
~~~~~~~~~~~~~~~~~~~~~~
``vmap(f)(x)`` runs ``f`` once on *batched tensors*. A batched tensor (``_C._make_batched(value, bdim,
level)``, csrc/python/PyFunctorch.cpp) is a TensorImpl over its ``value``: it reports the value's
sizes and strides without the batch dimension ``bdim`` (the *logical* shape a per-example function
sees), shares its storage and version counter, and carries the ``FuncTorchBatched`` key on top of the
value's keys. FuncTorchBatched sits where c10 puts it, above Autograd and Autocast (Note [DispatchKey
layout]), so every operator with a batched argument reaches ``batched_fallback``
(backend_sdk/_functorch/_rules.py), a Python boxed fallback at that key, which runs a batching rule on
the unwrapped values. The values carry the keys below (Autograd, the backend), so autograd records the
batched computation on the values and every backend (cpu, accel, pyaccel, scaffolded ones) runs it
with its own kernels.

Levels: each running vmap has a level, its depth (1 for the outermost) on a per-thread stack. A
nested vmap wraps the outer level's batched tensors again, so a tensor batched at levels 1 and 2 is a
level-2 wrapper of a level-1 wrapper of a plain tensor. The fallback handles the highest level among
an operator's arguments; a tensor of a lower level is an unbatched tensor at that level, and the
operators the rule calls on the values come back to the fallback for the next level down.

Randomness: while a vmap runs, its thread includes the ``FuncTorchVmapMode`` key (above
FuncTorchBatched, as in c10), a fallthrough for every operator except the random ones, whose kernels
(backend_sdk/_functorch/_random.py) apply the innermost level's ``randomness``: "error" raises
PyTorch's error, "different" draws one sample per batch element, "same" one sample for the whole batch.
Each level's kernel handles its level and calls the operator again for the levels below.

Outputs: each output is unwrapped at the vmap's level with its batch dim moved to ``out_dims``; an
output that is not batched at that level (it did not depend on the batched inputs) is expanded along
``out_dims`` to the batch size, as PyTorch does.

Writes: an in-place operator whose ``self`` is not batched at a level where another argument is
raises PyTorch's "vmap: <op>(self, *extra_args) is not possible ..." error (the rules and the slow
fallback check it). Reading data (``item()``, ``bool()``) of a batched tensor raises PyTorch's error;
``numpy()`` of a batched tensor would see only the first element's memory and is refused too.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, NamedTuple

from .. import _C
from .._tensor import Tensor
from . import _rules
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten

__all__ = ["VmapInfo", "vmap", "register_vmap", "is_batchedtensor", "current_level"]

_make_batched = _C._make_batched
_unwrap_batched = _C._unwrap_batched
_VMAP_MODE = _C.DispatchKey.FuncTorchVmapMode
_RANDOMNESS = ("error", "different", "same")


class VmapInfo(NamedTuple):
    """What a ``register_vmap`` rule learns about the vmap it runs in (PyTorch's ``torch.library.VmapInfo``)."""

    batch_size: int
    randomness: str


class _Level:
    __slots__ = ("level", "batch_size", "randomness")

    def __init__(self, level: int, batch_size: int, randomness: str) -> None:
        self.level, self.batch_size, self.randomness = level, batch_size, randomness


_tls = threading.local()


def _stack() -> list[_Level]:
    s = getattr(_tls, "levels", None)
    if s is None:
        s = _tls.levels = []
    return s


def current_level() -> _Level | None:
    """The innermost running vmap level of this thread (None outside vmap)."""
    s = _stack()
    return s[-1] if s else None


def level_info(level: int) -> _Level | None:
    for entry in reversed(_stack()):
        if entry.level == level:
            return entry
    return None


def is_batchedtensor(x: Any) -> bool:
    """True if x is a batched tensor (inside vmap), as ``torch._C._functorch.is_batchedtensor``."""
    return _unwrap_batched(x) is not None


def _get_name(func: Callable) -> str:
    return getattr(func, "__name__", repr(func))


# ---------------------------------------------------------------------------------------------
# vmap
# ---------------------------------------------------------------------------------------------
def _check_randomness(randomness: Any) -> None:
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _process_inputs(func: Callable, in_dims: Any, args: tuple) -> tuple[int, list, list, Any]:
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) "
            f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying to vmap over "
            f"a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
            f"`inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    for i, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if in_dim is not None and (not isinstance(in_dim, int) or isinstance(in_dim, bool)):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but in_dim must "
                f"be either an integer dimension or None.")
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but the input "
                f"is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please use None as the "
                f"respective in_dim")
        if in_dim is not None and (in_dim < -arg.dim() or in_dim >= arg.dim()):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, but that "
                f"input is a Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if in_dim is not None and in_dim < 0:
            flat_in_dims[i] = in_dim % arg.dim()
    sizes = [arg.size(d) for d, arg in zip(flat_in_dims, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} for the "
            f"mapped dimension")
    return sizes[0], flat_in_dims, flat_args, spec


def _remove_batch_dim(name: str, out: Any, level: int, batch_size: int, out_dim: Any) -> Any:
    if out_dim is None:
        if isinstance(out, Tensor) and _rules.unwrap(out, level)[1] is not None:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(out)}. Did you mean to set "
            f"out_dims= to None for output?")
    value, bdim = _rules.unwrap(out, level)
    rank = value.dim() if bdim is not None else out.dim() + 1
    if not -rank <= out_dim < rank:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {out_dim})")
    out_dim %= rank
    if bdim is None:  # did not depend on the batched inputs: the same for every element
        shape = list(out.shape)
        shape.insert(out_dim, batch_size)
        return out.unsqueeze(out_dim).expand(shape)
    return _rules.movedim(value, bdim, out_dim)


def _unwrap_outputs(func: Callable, outputs: Any, out_dims: Any, level: int, batch_size: int) -> Any:
    name = _get_name(func)
    flat, spec = tree_flatten(outputs)

    def incompatible() -> ValueError:
        return ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of "
            f"`outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has structure {spec}.")

    if isinstance(outputs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            flat_out_dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            flat_out_dims = list(out_dims)
        else:
            raise incompatible()
    else:
        flat_out_dims = broadcast_to_and_flatten(out_dims, spec)
        if flat_out_dims is None:
            raise incompatible()
    return tree_unflatten(
        [_remove_batch_dim(name, o, level, batch_size, d) for o, d in zip(flat, flat_out_dims)], spec)


def _check_out_dims(func: Callable, out_dims: Any) -> None:
    leaves, _ = tree_flatten(out_dims)
    for d in leaves:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ValueError(
                f"vmap({_get_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                f"collection of ints representing where in the outputs the vmapped dimension should appear.")


def _flat_vmap(func: Callable, batch_size: int, flat_in_dims: list, flat_args: list, spec: Any, out_dims: Any,
               randomness: str, kwargs: dict) -> Any:
    stack = _stack()
    level = len(stack) + 1
    stack.append(_Level(level, batch_size, randomness))
    guard = _C._IncludeDispatchKeyGuard(_VMAP_MODE)
    guard.__enter__()
    try:
        batched = [a if d is None or a is None else _make_batched(a, d, level) for d, a in zip(flat_in_dims, flat_args)]
        outputs = func(*tree_unflatten(batched, spec), **kwargs)
        return _unwrap_outputs(func, outputs, out_dims, level, batch_size)
    finally:
        guard.__exit__(None, None, None)
        stack.pop()


def _generator_states() -> list[tuple[Any, Any]]:
    """(generator, state) of the default generator of cpu and of every device of every attached backend.

    PyTorch's chunked vmap restores only the CPU generator (``torch.get_rng_state``) between chunks, so
    "same" randomness drawn on a device differs from chunk to chunk there; here each chunk starts from
    the same state of every default generator, so "same" means the same for any chunk_size on any device.
    """
    from .. import _runtime

    generators = [_C._default_generator("cpu")]
    for which in (1, 2, 3):
        name = _C._get_privateuse_backend_name(which)
        if _runtime.has_device(name):
            generators += [_C._default_generator(f"{name}:{i}") for i in range(_runtime.device_count(name))]
    return [(g, g.get_state()) for g in generators]


def _chunked_vmap(func: Callable, chunk_size: int, batch_size: int, flat_in_dims: list, flat_args: list, spec: Any,
                  out_dims: Any, randomness: str, kwargs: dict) -> Any:
    starts = list(range(0, batch_size, chunk_size))
    states = _generator_states() if randomness == "same" else None
    results = []
    for start in starts:
        n = min(chunk_size, batch_size - start)
        chunk_args = [a if d is None else a.narrow(d, start, n) for d, a in zip(flat_in_dims, flat_args)]
        if states is not None:  # "same": every chunk draws the same numbers, on every device
            for generator, state in states:
                generator.set_state(state)
        results.append(_flat_vmap(func, n, flat_in_dims, chunk_args, spec, out_dims, randomness, kwargs))
    if len(results) == 1:
        return results[0]
    flat0, out_spec = tree_flatten(results[0])
    flat_out_dims = [out_dims] if isinstance(results[0], Tensor) and not isinstance(out_dims, tuple) else (
        list(out_dims) if isinstance(results[0], Tensor) else broadcast_to_and_flatten(out_dims, out_spec))
    cat = _C._get_op_overload("aten::cat")
    merged = []
    for i, d in enumerate(flat_out_dims):
        parts = [tree_flatten(r)[0][i] for r in results]
        merged.append(parts[0] if d is None else cat(parts, d))
    return tree_unflatten(merged, out_spec)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """The vectorizing map: ``vmap(func)`` runs ``func`` on each slice of its inputs along ``in_dims`` at once.

    ``in_dims`` (an int, None, or a pytree of them matching the positional inputs) says which dimension of
    each input is mapped (None: not mapped); ``out_dims`` where the mapped dimension goes in each output.
    ``randomness``: "error" (random operators raise), "different" (each element draws its own numbers) or
    "same" (one draw shared by the batch). ``chunk_size``: map that many elements at a time. Nested vmaps map
    several dimensions. Keyword arguments of the returned function are passed through unmapped. See Note
    [Batched tensors].
    """
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or isinstance(chunk_size, bool)
                                   or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not callable(func):
        raise TypeError(f"vmap(func): func must be callable, got {type(func).__name__}")
    _check_out_dims(func, out_dims)

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        batch_size, flat_in_dims, flat_args, spec = _process_inputs(func, in_dims, args)
        if chunk_size is not None and chunk_size < batch_size:
            return _chunked_vmap(func, chunk_size, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness,
                                 kwargs)
        return _flat_vmap(func, batch_size, flat_in_dims, flat_args, spec, out_dims, randomness, kwargs)

    return wrapped


# ---------------------------------------------------------------------------------------------
# register_vmap rules of custom operators
# ---------------------------------------------------------------------------------------------
# Note [register_vmap lifetime]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# As a kernel PyTorch's register_vmap puts at FuncTorchBatched, a rule lives as long as the Library
# it was registered through (``lib=``; without one, a library kept for the process), and the newest
# registration of an operator wins while it lives: destroying its library brings back the one before
# it (the dispatcher's kernel stack). Each operator keeps a stack of (token, rule); ``vmap_rules``
# holds the top one, the only thing the fallback reads. Destroying the library that *defines* the
# operator drops all of its rules (drop_rules), as the operator is gone.
_rule_stacks: dict[str, list[tuple[object, Callable]]] = {}


def register_vmap(qualname: str, func: Callable) -> Callable[[], None]:
    """Pushes ``func(info, in_dims, *args, **kwargs) -> (output, out_dims)`` as the batching rule of ``qualname``;
    returns the function that removes this registration (Note [register_vmap lifetime])."""
    token = object()
    with _rules._rules_lock:
        _rule_stacks.setdefault(qualname, []).append((token, func))
        _rules.vmap_rules[qualname] = func

    def remove() -> None:
        with _rules._rules_lock:
            stack = [e for e in _rule_stacks.get(qualname, []) if e[0] is not token]
            if stack:
                _rule_stacks[qualname] = stack
                _rules.vmap_rules[qualname] = stack[-1][1]
            else:
                _rule_stacks.pop(qualname, None)
                _rules.vmap_rules.pop(qualname, None)

    return remove


def drop_rules(qualnames: list[str]) -> None:
    """Removes every rule of these operators (their defining library was destroyed)."""
    with _rules._rules_lock:
        for q in qualnames:
            _rule_stacks.pop(q, None)
            _rules.vmap_rules.pop(q, None)


def call_custom_rule(func: Callable, op: Any, level: int, args: tuple, kwargs: dict) -> Any:
    """Runs a register_vmap rule: values and in_dims at ``level``, outputs wrapped back at their out_dims."""
    entry = level_info(level)
    batch_size = entry.batch_size if entry is not None else _rules.batch_size_of((args, kwargs), level)
    info = VmapInfo(batch_size, entry.randomness if entry is not None else "error")
    values, in_dims = [], []
    for a in args:
        if isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
            pairs = [_rules.unwrap(e, level) for e in a]
            values.append(type(a)(p[0] for p in pairs))
            in_dims.append(type(a)(p[1] for p in pairs))
        else:
            v, d = _rules.unwrap(a, level)
            values.append(v)
            in_dims.append(d)
    for k, v in kwargs.items():
        if isinstance(v, Tensor) and _rules.unwrap(v, level)[1] is not None:
            raise ValueError(f"vmap: the register_vmap rule of {op.__name__} got a batched keyword argument "
                             f"{k!r}; only positional arguments may be batched")
    result = func(info, tuple(in_dims), *values, **kwargs)
    name = op.__name__
    if not isinstance(result, tuple) or len(result) != 2:
        raise RuntimeError(
            f"vmap: the register_vmap rule of {name} must return a tuple (output, out_dims), got "
            f"{type(result).__name__}")
    output, out_dims = result
    flat, spec = tree_flatten(output)
    flat_dims = [out_dims] if isinstance(output, Tensor) and not isinstance(out_dims, tuple) else (
        list(out_dims) if isinstance(output, Tensor) else broadcast_to_and_flatten(out_dims, spec))
    if flat_dims is None or len(flat_dims) != len(flat):
        raise RuntimeError(
            f"vmap: the register_vmap rule of {name} returned out_dims={out_dims}, which does not match the "
            f"structure of its output {spec}")
    wrapped = []
    for o, d in zip(flat, flat_dims):
        if d is None or not isinstance(o, Tensor):
            wrapped.append(o)
        else:
            if not isinstance(d, int) or not -o.dim() <= d < o.dim():
                raise RuntimeError(f"vmap: the register_vmap rule of {name} returned out_dim={d} for an output of "
                                   f"{o.dim()} dimensions")
            wrapped.append(_make_batched(o, d % o.dim(), level))
    return tree_unflatten(wrapped, spec)
