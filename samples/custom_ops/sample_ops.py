"""Sample custom operators written with backend_sdk.library, as a vendor or user would with torch.library.

* ``samples::sin_relu``  functional: relu(sin(x)); fake kernel, Meta kernel, autograd formula
* ``samples::scale_add_`` in place: x += alpha * y (mutates x)
* ``samples::abs_diff``  functional: |a - b|; fake kernel, autograd formula
* ``samples::abs_diff_out`` its out= variant tagged ``Tag.out``: out = |a - b| (the maybe-out split)
* ``samples::ramp``      no Tensor arguments: dispatches on its ``device`` argument
* ``samples_cpp::muladd`` defined in C++ (csrc/muladd.cpp) with cpu, Meta and accel kernels;
  ``load_cpp_op(path)`` loads it and registers its autograd formula from Python.
"""
from __future__ import annotations

import ctypes

import backend_sdk
from backend_sdk import Tensor
from backend_sdk.library import custom_op


def like_elementwise(x: Tensor) -> Tensor:
    """An uninitialised result laid out as an elementwise operator lays out its output.

    A non-overlapping dense input's strides are kept (a transposed input gives a
    transposed result); any other input gives a contiguous result in the order of its
    strides, largest first.
    """
    sizes, strides = list(x.shape), list(x.stride())
    order = sorted(range(len(sizes)), key=lambda d: -strides[d])
    out_strides = [0] * len(sizes)
    step = 1
    for d in reversed(order):
        out_strides[d] = step
        step *= max(sizes[d], 1)
    return backend_sdk.empty_strided(sizes, out_strides, dtype=x.dtype, device=x.device)


# ---------------------------------------------------------------------------
# sin_relu: functional
# ---------------------------------------------------------------------------
@custom_op("samples::sin_relu", mutates_args=())
def sin_relu(x: Tensor) -> Tensor:
    """relu(sin(x))."""
    return backend_sdk.relu(backend_sdk.sin(x))


@sin_relu.register_fake
def _(x: Tensor) -> Tensor:
    return like_elementwise(x)


@sin_relu.register_kernel("Meta")
def _(x: Tensor) -> Tensor:
    return like_elementwise(x)


def _sin_relu_setup_context(ctx, inputs, output) -> None:  # noqa: ANN001
    (x,) = inputs
    ctx.save_for_backward(x)


def _sin_relu_backward(ctx, grad):  # noqa: ANN001, ANN202
    (x,) = ctx.saved_tensors
    return grad * backend_sdk.cos(x) * (backend_sdk.sin(x) > 0)


sin_relu.register_autograd(_sin_relu_backward, setup_context=_sin_relu_setup_context)


# ---------------------------------------------------------------------------
# scale_add_: in place
# ---------------------------------------------------------------------------
@custom_op("samples::scale_add_", mutates_args=("x",))
def scale_add_(x: Tensor, y: Tensor, alpha: float) -> None:
    """x += alpha * y, in place."""
    x.add_(y, alpha=alpha)


# ---------------------------------------------------------------------------
# abs_diff / abs_diff_out: a functional operator and its tagged out= variant.
# The seed's advice: a "maybe-out" operator (writes into `out` when given, else
# allocates) is split in two, so each has one aliasing contract.
# ---------------------------------------------------------------------------
@custom_op("samples::abs_diff", mutates_args=())
def abs_diff(a: Tensor, b: Tensor) -> Tensor:
    """|a - b| in a new tensor."""
    return backend_sdk.abs(a - b)


@abs_diff.register_fake
def _(a: Tensor, b: Tensor) -> Tensor:
    return like_elementwise(a)


def _abs_diff_setup_context(ctx, inputs, output) -> None:  # noqa: ANN001
    a, b = inputs
    ctx.save_for_backward(a, b)


def _abs_diff_backward(ctx, grad):  # noqa: ANN001, ANN202
    a, b = ctx.saved_tensors
    s = backend_sdk.sign(a - b)
    return grad * s, -(grad * s)


abs_diff.register_autograd(_abs_diff_backward, setup_context=_abs_diff_setup_context)


@custom_op("samples::abs_diff_out", mutates_args=("out",), tags=backend_sdk.Tag.out)
def abs_diff_out(a: Tensor, b: Tensor, *, out: Tensor) -> Tensor:
    """out = |a - b|; an out of another shape is first resized (contiguous) to the result's shape, as the
    fake kernel does. Schema: ``(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)``."""
    if tuple(out.shape) != tuple(a.shape):
        out.resize_(list(a.shape))
    return backend_sdk.ops.aten.abs.out(a - b, out=out)


@abs_diff_out.register_fake
def _(a: Tensor, b: Tensor, *, out: Tensor) -> Tensor:
    if tuple(out.shape) != tuple(a.shape):
        out.resize_(list(a.shape))
    return out


# ---------------------------------------------------------------------------
# ramp: no Tensor arguments, so it dispatches on its device argument
# ---------------------------------------------------------------------------
@custom_op("samples::ramp", mutates_args=())
def ramp(n: int, scale: float, device: backend_sdk.device) -> Tensor:
    """[0, scale, 2 * scale, ...] (n values) on device."""
    return backend_sdk.arange(n, dtype=backend_sdk.float32, device=device) * scale


@ramp.register_fake
def _(n: int, scale: float, device: backend_sdk.device) -> Tensor:
    return backend_sdk.empty(n, dtype=backend_sdk.float32, device=device)


# ---------------------------------------------------------------------------
# muladd: a C++ operator
# ---------------------------------------------------------------------------
_cpp_handles: list = []


def load_cpp_op(path: str) -> object:
    """Loads libmuladd.so (registers samples_cpp::muladd) and adds its autograd formula; returns the op."""
    if not _cpp_handles:
        _cpp_handles.append(ctypes.CDLL(path))
        errors = backend_sdk._C._take_static_registration_errors()
        if errors:
            raise ImportError("\n".join(errors))

        def setup_context(ctx, inputs, output) -> None:  # noqa: ANN001
            x, y, _ = inputs
            ctx.save_for_backward(x, y)

        def backward(ctx, grad):  # noqa: ANN001, ANN202
            x, y = ctx.saved_tensors
            return grad * y, grad * x, grad

        backend_sdk.library.register_autograd("samples_cpp::muladd", backward, setup_context=setup_context)
    return backend_sdk.ops.samples_cpp.muladd.default
