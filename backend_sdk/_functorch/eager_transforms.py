"""``grad`` and ``grad_and_value`` (``torch.func.grad``), small and composable with vmap.

Note [grad under vmap]
~~~~~~~~~~~~~~~~~~~~~~
PyTorch's grad transform is a dispatcher level of its own; here it is autograd on the values under
the batched tensors. ``grad(f)(x, ...)`` unwraps each differentiated argument down to its plain
value, makes it a fresh leaf, and rebuilds the batched wrappers around the leaf, so ``f`` sees a tensor
of the same logical shape and batch levels. Autograd records ``f``'s operators on the values (the
FuncTorchBatched key is above Autograd). Because a vmapped function computes each batch element from
its own slices, the value's output element ``b`` depends only on slice ``b`` of every batched leaf;
the gradient of the sum of the value's outputs with respect to the leaf is therefore every element's
own gradient, in the leaf's layout, and is wrapped back into the argument's batch levels.

For that to hold every running vmap level must batch the leaf: a differentiated argument that is not
batched at some running level (per-sample gradients of shared weights: ``vmap(grad(loss), in_dims=(None,
0))(w, x)``) is first expanded along that level into a copy of its own, so each element differentiates
its own copy. ``f`` must return a tensor with one element per batch element.

Note [Nested grad]
~~~~~~~~~~~~~~~~~~
PyTorch's grad levels let an outer transform (another ``grad``, or plain autograd on tensors that
require grad outside) differentiate an inner ``grad``'s result: ``grad(grad(f))(x)`` is the second
derivative, and ``grad(f)(x)`` of an ``x`` that requires grad is differentiable w.r.t. ``x``. Here the
levels are one autograd graph, so an inner call whose argument is *connected* (its value requires
grad: it is, or depends on, an outer leaf) does not detach it: its leaf is a ``clone`` of the value
(a node of its own in the outer graph, so ``autograd.grad`` w.r.t. it is the inner derivative only,
which is what keeps ``grad(lambda x: grad(lambda y: x * y)(x))(x) == 1``: the inner ``x`` is a
different node from the inner ``y``), and the gradient is taken with ``create_graph=True`` when grad
mode was on at the call, so the outer level records the backward computation and differentiates
through it. An unconnected argument gets a detached leaf of its own, as before, and the results are
detached from it (no graph is kept that nobody can reach).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .. import _C
from .._tensor import Tensor
from . import _rules
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value"]


def _chain(x: Tensor) -> tuple[Tensor, list[tuple[int, int]]]:
    """(plain value, [(bdim, level) from the outermost wrapper inwards])."""
    chain = []
    info = _C._unwrap_batched(x)
    while info is not None:
        chain.append((info[1], info[2]))
        x = info[0]
        info = _C._unwrap_batched(x)
    return x, chain


def _rewrap(value: Tensor, chain: list[tuple[int, int]]) -> Tensor:
    for bdim, level in reversed(chain):
        value = _C._make_batched(value, bdim, level)
    return value


def _materialize(x: Tensor) -> Tensor:
    """x batched at every running vmap level (expanded along the levels that do not batch it)."""
    from .vmap import _stack

    for entry in _stack():
        if _rules.unwrap(x, entry.level)[1] is None:
            x = _C._make_batched(_rules.expand_front(x, entry.batch_size), 0, entry.level)
    return x


def _make_leaf(x: Tensor, connect: bool) -> tuple[Tensor, Tensor, list]:
    """(x as f sees it, the tensor to differentiate w.r.t., the batch chain). With ``connect`` and an ``x``
    that requires grad, the differentiated tensor is a clone in x's graph (Note [Nested grad])."""
    from ..autograd import enable_grad, no_grad

    connected = connect and _chain(x)[0].requires_grad
    with enable_grad() if connected else no_grad():
        full = _materialize(x)
        value, chain = _chain(full)
        if connected:
            leaf = value.clone()
        else:
            leaf = value.detach()
            if full is not x:  # expanded: each element needs memory (and a gradient) of its own
                leaf = leaf.clone()
            leaf.requires_grad_(True)
    return _rewrap(leaf, chain), leaf, chain


def _reaches_outside(out: Tensor, leaves: list[Tensor]) -> bool:
    """Whether ``out``'s graph reaches a leaf that requires grad other than ``leaves`` (a closed-over weight)."""
    # Node wrappers may be made per access: keep each alive while walking so that ids are not reused.
    seen: dict[int, Any] = {}
    todo = [out.grad_fn] if out.grad_fn is not None else []
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        variable = getattr(node, "variable", None)  # AccumulateGrad: the leaf it accumulates into
        if variable is not None and not any(variable._is_same(leaf) for leaf in leaves):
            return True
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return False


def _check_argnums(argnums: Any, n: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(nums, tuple) or not nums or not all(isinstance(a, int) and not isinstance(a, bool)
                                                           for a in nums):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
        out.append(a % n)
    return tuple(out)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """``(gradient, value)`` of ``func`` w.r.t. the arguments ``argnums`` (Note [grad under vmap])."""
    from .. import autograd

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _check_argnums(argnums, len(args))
        args = list(args)
        leaves: dict[int, tuple[list, Any, list]] = {}
        create_graph = autograd.is_grad_enabled()  # an outer level may differentiate the result
        connected = False
        with autograd.enable_grad():
            for i in nums:
                flat, spec = tree_flatten(args[i])
                made = []
                for j, t in enumerate(flat):
                    if not isinstance(t, Tensor):
                        raise RuntimeError(f"grad_and_value(f)(*args): Expected argument {i} to be a Tensor or a "
                                           f"pytree of Tensors, got {type(t)}")
                    wrapped, leaf, chain = _make_leaf(t, create_graph)
                    connected = connected or leaf.grad_fn is not None
                    flat[j] = wrapped
                    made.append((leaf, chain))
                args[i] = tree_unflatten(flat, spec)
                leaves[i] = (made, spec, flat)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            out_value, out_chain = _chain(out)
            all_leaves = [leaf for i in nums for leaf, _ in leaves[i][0]]
            # Keep the graph for an outer level when one can reach it: a connected argument, or a closed-over
            # tensor that requires grad (the output's graph then reaches past our leaves).
            create_graph = create_graph and (connected or _reaches_outside(out_value, all_leaves))
            if out_value.requires_grad:
                grads = autograd.grad(out_value.sum(), all_leaves, allow_unused=True, create_graph=create_graph)
            else:
                grads = [None] * len(all_leaves)
        results = []
        k = 0
        for i in nums:
            made, spec, _ = leaves[i]
            flat_grads = []
            for leaf, chain in made:
                g = grads[k]
                k += 1
                if g is None:
                    from .._factories import zeros_like

                    g = zeros_like(leaf)
                flat_grads.append(_rewrap(g, chain))
            results.append(tree_unflatten(flat_grads, spec))
        gradient = results[0] if isinstance(argnums, int) else tuple(results)
        value = _rewrap(out_value if create_graph else out_value.detach(), out_chain)
        if has_aux:
            return gradient, (value, aux)
        return gradient, value

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """The gradient of ``func`` (which returns a scalar) w.r.t. the arguments ``argnums``, as ``torch.func.grad``;
    composes with vmap for per-sample gradients (Note [grad under vmap])."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper
