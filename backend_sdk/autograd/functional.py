"""``autograd.functional``: Jacobians, Hessians and their products with vectors, as ``torch.autograd.functional``.

Everything here is built on ``autograd.grad`` (reverse mode). PyTorch's forward-mode products (``jvp``,
``hvp``) are computed with the double-backward trick, as PyTorch itself does for them: the vjp ``u -> J^T u``
is linear in ``u``, so differentiating it with respect to ``u`` in the direction ``v`` gives ``J v``.
Errors and their texts are PyTorch's (strict mode, ``v`` checks, the functions that must return one
element). ``vectorize=True`` computes all the rows of a Jacobian with one batched ``autograd.grad``
(``is_grads_batched``); ``strategy="forward-mode"`` needs forward-mode AD, which backend_sdk does not have.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import _C

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _torch() -> Any:
    import backend_sdk

    return backend_sdk


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


def _as_tuple(value: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was it a tuple, the value as a tuple of tensors); TypeError naming the argument otherwise."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not _is_tensor(el):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the {where} has type {type(el)}.")
    return is_tuple, items


def _unpack(res: Any, is_tuple: bool | tuple[bool, bool]) -> Any:
    """Undoes _as_tuple on a result: one level (a flag) or two levels (outputs x inputs)."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if is_tuple else res[0]


def _prepare(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors to differentiate with respect to: detached copies that require grad (views that keep
    the caller's graph with create_graph, so higher derivatives reach the caller's inputs)."""
    result = []
    for t in inputs:
        if create_graph and t.requires_grad:
            result.append(t.view_as(t))  # a differentiable alias: the caller's graph stays connected
        else:
            result.append(t.detach().requires_grad_(need_graph))
    return tuple(result)


def _finish(values: Any, create_graph: bool) -> Any:
    """Results: detached unless create_graph (nested tuples allowed)."""
    if _is_tensor(values):
        return values if create_graph else values.detach()
    if values is None:
        return None
    return tuple(_finish(v, create_graph) for v in values)


def _validate_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(other) != len(v):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prepend = f"Entry {idx} in " if other_is_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


_STRICT_NOT_REQUIRING = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with "
                 "respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                 "should ensure that your function is twice differentiable and that the jacobian depends on the "
                 "inputs (this would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the "
                "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the hessian depends on the inputs."),
}


def _check_requires_grad(values: tuple, kind: str, strict: bool) -> None:
    """In strict mode, every value must exist and require grad (PyTorch's messages per kind)."""
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if not v.requires_grad:
            raise RuntimeError(_STRICT_NOT_REQUIRING[kind].format(i=i))


def _grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
          retain_graph: bool | None = None, is_grads_batched: bool = False) -> tuple:
    """autograd.grad over the outputs that require grad (None for every input when none does)."""
    from . import grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph, is_grads_batched=is_grads_batched)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _zeros_for_none(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Gradients with None replaced by zeros like the reference (an error in strict mode)."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _torch().zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _check_v_none(v: Any, values: tuple, what: str) -> None:
    if v is None and (len(values) != 1 or values[0].numel() != 1):
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")


def _linear_vjp(outputs: tuple, inputs: tuple, like: tuple) -> tuple[tuple, tuple]:
    """(u, J^T u) with u fresh zeros shaped like ``like`` that require grad: the double-backward trick's first
    step. u -> J^T u is linear in u, so the gradient of J^T u with respect to u along v is J v."""
    torch = _torch()
    u = tuple(torch.zeros_like(r).requires_grad_() for r in like)
    return u, _grad(outputs, inputs, u, create_graph=True)


def _inputs_and_v(inputs: Any, v: Any, create_graph: bool, name: str) -> tuple[bool, tuple, Any]:
    """(inputs was a tuple, the inputs to differentiate at, v checked against them) for jvp, vhp and hvp."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _prepare(v, create_graph, need_graph=False)
        _validate_v(v, inputs, inputs_tuple)
    else:
        _check_v_none(v, inputs, "the input to the user-provided function is")
    return inputs_tuple, inputs, v


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product of func at inputs."""
    torch = _torch()
    with torch.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, need_graph=False)
            _validate_v(v, outputs, outputs_tuple)
        else:
            _check_v_none(v, outputs, "the user-provided function returns")
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        grads = _zeros_for_none(grads, inputs, strict, create_graph, "back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(grads, create_graph), inputs_tuple)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), J v)``: the Jacobian-vector product, by the double-backward trick."""
    torch = _torch()
    with torch.enable_grad():
        inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        u, grad_inputs = _linear_vjp(outputs, inputs, outputs)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        products = _grad(grad_inputs, u, v, create_graph=create_graph)
        products = _zeros_for_none(products, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(products, create_graph), outputs_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of func at inputs: a Tensor for one input and one output, else tuples
    (``[i][j]`` is output i with respect to input j, of shape ``out_i.shape + in_j.shape``)."""
    torch = _torch()
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more '
            'outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use '
            '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and `strategy=\"forward-mode\"` are not "
                "supported together (yet). Please either set `create_graph=False` or `strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
        raise NotImplementedError("jacobian(strategy=\"forward-mode\"): backend_sdk has no forward-mode AD; "
                                  "use strategy=\"reverse-mode\"")
    with torch.enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            if strict:
                raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                                   "not supported together. Please either set `strict=False` or "
                                   "`vectorize=False`.")
            rows = _jacobian_batched(outputs, inputs, create_graph)
        else:
            rows = _jacobian_rows(outputs, inputs, create_graph, strict)
    return _unpack(_finish(rows, create_graph), (outputs_tuple, inputs_tuple))


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """One autograd.grad per output element (PyTorch's vectorize=False algorithm)."""
    torch = _torch()
    result = []
    for i, out in enumerate(outputs):
        per_input: list[list[Any]] = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.numel()):
            row = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(row, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = torch.zeros_like(inp)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                per_input[k].append(g)
        result.append(tuple(_stack_rows(per_input[k], out, inp) for k, inp in enumerate(inputs)))
    return tuple(result)


def _stack_rows(rows: list, out: Any, inp: Any) -> Any:
    torch = _torch()
    shape = list(out.shape) + list(inp.shape)
    if not rows:  # an output with no elements
        return torch.zeros(shape, dtype=inp.dtype, device=inp.device)
    return torch.stack(rows, 0).reshape(shape)


def _jacobian_batched(outputs: tuple, inputs: tuple, create_graph: bool) -> tuple:
    """All rows at once: grad_outputs are the rows of the identity over the concatenated outputs."""
    torch = _torch()
    sizes = [o.numel() for o in outputs]
    total = sum(sizes)
    eye = torch.eye(total, dtype=outputs[0].dtype, device=outputs[0].device)
    grad_outputs = []
    start = 0
    for o, n in zip(outputs, sizes):
        grad_outputs.append(eye[:, start:start + n].reshape([total] + list(o.shape)))
        start += n
    batched = _grad(outputs, inputs, tuple(grad_outputs), create_graph=create_graph, is_grads_batched=True)
    result = []
    start = 0
    for o, n in zip(outputs, sizes):
        row = []
        for g, inp in zip(batched, inputs):
            if g is None:
                row.append(torch.zeros(list(o.shape) + list(inp.shape), dtype=inp.dtype, device=inp.device))
            else:
                row.append(g[start:start + n].reshape(list(o.shape) + list(inp.shape)))
        result.append(tuple(row))
        start += n
    return tuple(result)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a function returning one element: a Tensor for one input, else a tuple of tuples."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def single_output(*inp: Any) -> Any:
        out = func(*inp)
        out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if out_tuple or not _is_tensor(out):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac(*inp: Any) -> tuple:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)  # as PyTorch: forward over reverse
        j = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(j, "jacobian", strict)
        return j

    res = jacobian(jac, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (inputs_tuple, inputs_tuple))


def _single_scalar_output(func: Callable, inputs: tuple, strict: bool, name: str) -> tuple:
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple or not _is_tensor(outputs[0]):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    return outputs


def _hessian_product(func: Callable, inputs: Any, v: Any, create_graph: bool, strict: bool, name: str) -> tuple:
    """vhp (v^T H, grad of the jacobian along v) or hvp (H v, by the double-backward trick)."""
    torch = _torch()
    with torch.enable_grad():
        inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, name)
        outputs = _single_scalar_output(func, inputs, strict, name)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        if name == "vhp":
            products = _grad(jac, inputs, v, create_graph=create_graph)
            stage = "double_back"
        else:
            u, double_back = _linear_vjp(jac, inputs, inputs)
            _check_requires_grad(jac, "hessian", strict)
            products = _grad(double_back, u, v, create_graph=create_graph)
            stage = "double_back_trick"
        products = _zeros_for_none(products, inputs, strict, create_graph, stage)
    return _finish(outputs[0], create_graph), _unpack(_finish(products, create_graph), inputs_tuple)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), v^T H)``: the vector-Hessian product of a function returning one element."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(*inputs), H v)``: the Hessian-vector product (double-backward trick; equal to vhp for
    a symmetric Hessian, which a twice continuously differentiable function has)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")
