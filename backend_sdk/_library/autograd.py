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


_NO_DEFAULT = object()


def _default_value(text: str | None) -> Any:
    """The Python value of a schema default ("None", "2.0", "False", "[0, 1]"), or _NO_DEFAULT when there is
    none or it is not a plain literal (a dtype, a layout: such arguments are always passed on)."""
    if text is None:
        return _NO_DEFAULT
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _NO_DEFAULT


def _is_default(value: Any, default: Any) -> bool:
    if default is _NO_DEFAULT:
        return False
    if default is None or isinstance(default, bool):
        return value is default
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    return type(value) in (int, float) and value == default


class _KeywordOnly:
    """The keyword-only arguments of a call, passed to the Function as one non-Tensor input (PyTorch's Metadata)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values


# Note [Custom op autograd inputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# As in PyTorch 2.13, the autograd.Function behind register_autograd takes the positional arguments as the caller
# passed them: trailing positional arguments equal to their schema default are dropped (PyTorch's Python kernels
# receive the stack that way), so ``ctx.needs_input_grad`` has one entry per argument given, and backward may
# return one gradient per given argument or per positional argument of the schema (the extra ones must be None).
# ``setup_context`` still sees every positional input, defaults filled, and, when the operator has keyword-only
# arguments, is called as ``setup_context(ctx=, inputs=, keyword_only_inputs=, output=)`` with all of them.
# Keyword-only arguments travel to the Function as one trailing non-Tensor input, as PyTorch's Metadata does.


def make_autograd_kernel(qualname: str, schema: Any, backward: Callable, setup_context: Callable | None,
                         dirty_first: bool = False) -> Callable:
    """A boxed kernel (with keyset) for the Autograd key of ``qualname`` (Note [Custom op autograd inputs]).

    ``dirty_first``: the operator is tagged Tag.inplace; its first argument is written and returned, so it is
    marked dirty (Note [Tagged in-place and out= custom operators]).
    """
    positional = [a for a in schema.arguments if not a.kwarg_only]
    pos_names = [a.name for a in positional]
    kw_names = [a.name for a in schema.arguments if a.kwarg_only]
    npos = len(positional)
    pos_defaults = [_default_value(a.default) for a in positional]
    kw_defaults = {a.name: _default_value(a.default) for a in schema.arguments if a.kwarg_only}
    function_class: list[Any] = []

    def call_below(pos: tuple, kw: dict) -> Any:
        op = _C._get_op_overload(qualname)
        with _C._DispatchKeyGuard(_AUTOGRAD_KEYS, False):
            return op(*pos, **kw)

    def get_function() -> Any:
        if function_class:
            return function_class[0]
        autograd = _autograd()
        if autograd is None:
            raise RuntimeError(f"{qualname}: computing gradients needs backend_sdk.autograd, which is not available")

        def split(flat: tuple) -> tuple[tuple, dict]:
            if kw_names:
                return flat[:-1], flat[-1].values
            return flat, {}

        def forward(*flat: Any) -> Any:
            pos, kw = split(flat)
            return call_below(pos, kw)

        def setup(ctx: Any, inputs: tuple, output: Any) -> None:
            pos, kw = split(inputs)
            ctx._sdk_num_given = len(pos)
            if dirty_first:
                ctx.mark_dirty(pos[0])
            if setup_context is None:
                return
            full = tuple(pos) + tuple(pos_defaults[len(pos):])
            if kw_names:
                keyword_only = {n: kw.get(n, kw_defaults[n]) for n in kw_names if n in kw or
                                kw_defaults[n] is not _NO_DEFAULT}
                setup_context(ctx=ctx, inputs=full, keyword_only_inputs=keyword_only, output=output)
            else:
                setup_context(ctx=ctx, inputs=full, output=output)

        def backward_fn(ctx: Any, *grads: Any) -> Any:
            result = backward(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            given = ctx._sdk_num_given
            if len(result) == npos and npos > given:
                extra = [i for i in range(given, npos) if result[i] is not None]
                if extra:
                    raise RuntimeError(
                        f"{qualname}: the backward registered with register_autograd returned a gradient for "
                        f"{pos_names[extra[0]]}, which the call did not pass (it took its default); return None there"
                    )
                result = result[:given]
            if len(result) != given:
                raise RuntimeError(
                    f"function {qualname.split('::', 1)[1]}Backward returned an incorrect number of gradients "
                    f"(expected {given if npos == given else f'{given} or {npos}'}, got {len(result)}): the backward registered with register_autograd returns "
                    f"one gradient per positional input ({', '.join(pos_names)}; None for inputs that are not "
                    f"Tensors or need no gradient)"
                )
            return result + ((None,) if kw_names else ())

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
        if not _grad_needed(tuple(args) + tuple(kwargs.values())):
            return _C._redispatch(qualname, keyset.keys_after("AutogradCPU"), *args, **kwargs)
        pos = list(args[:npos])
        pos += [kwargs.pop(n) for n in pos_names[len(pos):] if n in kwargs]  # positional args passed by name
        while pos and _is_default(pos[-1], pos_defaults[len(pos) - 1]):
            pos.pop()  # Note [Custom op autograd inputs]: trailing defaults are not inputs of the Function
        if kw_names:
            kw = {n: kwargs[n] for n in kw_names if n in kwargs}
            return get_function().apply(*pos, _KeywordOnly(kw))
        return get_function().apply(*pos)

    kernel.__name__ = f"{qualname}_autograd_kernel"
    return kernel
