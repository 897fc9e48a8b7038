"""``gradcheck`` / ``gradgradcheck``: autograd's gradients against central finite differences."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .. import _C

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


def _as_tuple(x: Any) -> tuple:
    if _is_tensor(x):
        return (x,)
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return (x,)


def _to_numpy(t: Any) -> np.ndarray:
    t = t.detach()
    if not t.is_cpu:
        t = t.cpu()
    return np.array(t.numpy(), dtype=np.float64, copy=True)


def _outputs(func: Callable, inputs: tuple) -> list:
    return [o for o in _as_tuple(func(*inputs)) if _is_tensor(o)]


def _numerical_jacobians(func: Callable, inputs: tuple, diff_idx: list[int], eps: float) -> list[list[np.ndarray]]:
    """J[out][inp] of shape (out.numel(), inp.numel()), by central differences on the inputs' data."""
    import backend_sdk

    with backend_sdk.no_grad():
        outs0 = _outputs(func, inputs)
        jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outs0]
        for col, i in enumerate(diff_idx):
            x = inputs[i]
            data = x.detach()
            orig = _to_numpy(x)
            flat = orig.reshape(-1)
            for k in range(flat.size):
                vals = []
                for delta in (eps, -eps):
                    pert = flat.copy()
                    pert[k] += delta
                    data.copy_(backend_sdk.tensor(pert.reshape(orig.shape), dtype=x.dtype).to(x.device))
                    vals.append([_to_numpy(o).reshape(-1) for o in _outputs(func, inputs)])
                for j in range(len(outs0)):
                    jac[j][col][:, k] = (vals[0][j] - vals[1][j]) / (2 * eps)
            data.copy_(backend_sdk.tensor(orig, dtype=x.dtype).to(x.device))
    return jac


def _analytical_jacobians(func: Callable, inputs: tuple, diff_idx: list[int]) -> list[list[np.ndarray]]:
    import backend_sdk

    outs = _outputs(func, inputs)
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in diff_idx] for o in outs]
    for j, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for r in range(o.numel()):
            onehot = np.zeros(o.numel())
            onehot[r] = 1.0
            go = backend_sdk.tensor(onehot.reshape(tuple(o.shape)), dtype=o.dtype).to(o.device)
            grads = backend_sdk.autograd.grad(o, [inputs[i] for i in diff_idx], go, retain_graph=True,
                                              allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[j][col][r, :] = _to_numpy(g).reshape(-1)
    return jac


def gradcheck(
    func: Callable[..., Any],
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
) -> bool:
    """Checks the gradients autograd computes for func at inputs against finite differences.

    Inputs that require grad should be float64 (finite differences in lower precision are too
    coarse; a warning says so). Returns True, or raises GradcheckError (returns False with
    raise_exception=False) naming the output and input whose Jacobians differ.
    """
    import warnings

    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if str(inputs[i].dtype) != "backend_sdk.float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. This check will "
                "likely fail if all the inputs are not of double precision floating point. ",
                UserWarning,
                stacklevel=2,
            )
    analytical = _analytical_jacobians(func, inputs, diff_idx)
    numerical = _numerical_jacobians(func, inputs, diff_idx, eps)
    for j, (arow, nrow) in enumerate(zip(analytical, numerical)):
        for col, (a, n) in enumerate(zip(arow, nrow)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                i = diff_idx[col]
                message = (
                    f"Jacobian mismatch for output {j} with respect to input {i},\n"
                    f"numerical:{n!r}\nanalytical:{a!r}\n"
                )
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Any,
    grad_outputs: Sequence[Any] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
) -> bool:
    """Checks second derivatives: gradcheck of the vector-Jacobian product of func (create_graph=True)."""
    import backend_sdk

    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]
    if grad_outputs is None:
        outs = _outputs(func, inputs)
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            backend_sdk.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype).to(o.device).requires_grad_()
            for o in outs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def vjp(*args: Any) -> Any:
        # Grad mode on inside, also when gradcheck evaluates vjp under no_grad for its numerical Jacobian:
        # the first-order gradients are what is differentiated, so they must be computed, not skipped.
        with backend_sdk.enable_grad():
            ins, gos = args[:n_in], args[n_in:]
            outs = [o for o in _outputs(func, ins) if o.requires_grad]
            diff_in = [ins[i] for i in diff_idx]
            grads = backend_sdk.autograd.grad(outs, diff_in, list(gos[: len(outs)]), create_graph=True,
                                              allow_unused=True)
            return tuple(g for g in grads if g is not None)

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
