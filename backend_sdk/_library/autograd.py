"""The Autograd kernel that ``register_autograd`` installs (as torch._library.autograd).

It is written against PyTorch's API: ``backend_sdk.autograd.Function`` with a
``forward`` that takes no ctx, a static ``setup_context(ctx, inputs, output)``
and ``backward(ctx, *grads)``. When no input needs a gradient (or the autograd
layer is absent) the kernel runs the operator below the Autograd key directly.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import _C

_AUTOGRAD_KEYS = _C.DispatchKeySet(["AutogradFunctionality"])


_autograd_module: list[Any] = []


def _autograd() -> Any:
    """backend_sdk.autograd, or None while the autograd layer is absent (looked up once)."""
    if not _autograd_module:
        try:
            from .. import autograd
        except ImportError:
            autograd = None
        _autograd_module.append(autograd)
    return _autograd_module[0]


def _grad_needed(args: tuple) -> bool:
    autograd = _autograd()
    if autograd is None:
        return False
    enabled = getattr(autograd, "is_grad_enabled", None)
    if enabled is not None and not enabled():
        return False

    def any_requires(obj: Any) -> bool:
        if isinstance(obj, (list, tuple)):
            return any(any_requires(o) for o in obj)
        return bool(getattr(obj, "requires_grad", False))

    return any_requires(args)


def make_autograd_kernel(qualname: str, schema: Any, backward: Callable, setup_context: Callable | None,
                         dirty_first: bool = False) -> Callable:
    """A boxed kernel (with keyset) for the Autograd key of ``qualname``.

    ``dirty_first``: the operator is tagged Tag.inplace; its first argument is written and returned, so it is
    marked dirty (Note [Tagged in-place and out= custom operators]).
    """
    names = [a.name for a in schema.arguments]
    kwarg_only = [a.kwarg_only for a in schema.arguments]
    npos = sum(1 for k in kwarg_only if not k)
    function_class: list[Any] = []

    def call_below(flat: tuple) -> Any:
        op = _C._get_op_overload(qualname)
        pos = flat[:npos]
        kw = {names[i]: flat[i] for i in range(npos, len(flat))}
        with _C._DispatchKeyGuard(_AUTOGRAD_KEYS, False):
            return op(*pos, **kw)

    def get_function() -> Any:
        if function_class:
            return function_class[0]
        autograd = _autograd()
        if autograd is None:
            raise RuntimeError(f"{qualname}: computing gradients needs backend_sdk.autograd, which is not available")

        def forward(*flat: Any) -> Any:
            return call_below(flat)

        def setup(ctx: Any, inputs: tuple, output: Any) -> None:
            if dirty_first:
                ctx.mark_dirty(inputs[0])
            if setup_context is not None:
                setup_context(ctx, inputs, output)

        def backward_fn(ctx: Any, *grads: Any) -> Any:
            result = backward(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) != len(names):
                raise ValueError(
                    f"{qualname}: the backward registered with register_autograd returned {len(result)} "
                    f"gradients, but the operator has {len(names)} inputs ({', '.join(names)}); return one "
                    f"per input (None for inputs that are not Tensors or need no gradient)"
                )
            return result

        # Built through the Function's metaclass so the backward node is named after the operator
        # ("sin_reluBackward" for samples::sin_relu).
        CustomOpFunction = type(autograd.Function)(
            qualname.split("::", 1)[1].replace(".", "_"),
            (autograd.Function,),
            {"forward": staticmethod(forward), "setup_context": staticmethod(setup),
             "backward": staticmethod(backward_fn), "__module__": __name__},
        )
        function_class.append(CustomOpFunction)
        return CustomOpFunction

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        flat = tuple(args) + tuple(kwargs[n] for n in names[npos:] if n in kwargs)
        if not _grad_needed(flat):
            return _C._redispatch(qualname, keyset.keys_after("AutogradCPU"), *args, **kwargs)
        return get_function().apply(*flat)

    kernel.__name__ = f"{qualname}_autograd_kernel"
    return kernel
