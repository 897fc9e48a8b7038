"""``opcheck``: checks an operator's registrations against its behaviour, as ``torch.library.opcheck``.

Sub-tests (``test_utils``):
  * ``test_schema``: the operator mutates only arguments its schema marks
    ``Tensor(a!)``, its outputs alias only inputs its schema says they alias,
    and fresh outputs do not alias each other;
  * ``test_autograd_registration``: when inputs require grad, the operator has
    an autograd kernel (register_autograd / an Autograd or
    CompositeImplicitAutograd registration) rather than autograd done inside a
    backend kernel; skipped when no input requires grad;
  * ``test_faketensor``: the fake/Meta kernel agrees with the real kernel on the
    number of outputs and on each output's shape, dtype, device, strides,
    storage offset and aliasing with the inputs;
  * ``test_trace``: the operator traced with ``backend_sdk.trace`` and re-run on
    new inputs gives the values (and the mutated inputs, and the gradients when
    inputs require grad) of an eager call.
Each sub-test runs on its own copies of the arguments (same sizes, strides,
dtype, device and requires_grad).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import _C
from .._subclasses.fake_tensor import _map  # applies a function to every tensor in nested args
from .._tensor import Tensor

__all__ = ["DEFAULT_TEST_UTILS", "OpCheckError", "opcheck"]

# PyTorch's sub-test names; its AOTDispatcher checks are our trace check (test_trace is accepted too).
DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
_ALIASES = {"test_aot_dispatch_dynamic": "test_trace", "test_aot_dispatch_static": "test_trace"}


class OpCheckError(Exception):
    """An opcheck sub-test failed."""


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _leaves(obj: Any) -> list[Tensor]:
    out: list[Tensor] = []
    _map(obj, out.append)
    return out


def _copy(t: Tensor) -> Tensor:
    """A copy with the same sizes, strides, dtype, device and requires_grad (a leaf)."""
    if _C._is_fake(t):
        return t
    src = t.detach() if hasattr(t, "detach") and getattr(t, "requires_grad", False) else t
    c = _C._get_op_overload("aten::empty_strided")(list(t.shape), list(t.stride()), dtype=t.dtype, device=t.device)
    if t.numel() > 0:
        try:
            c.copy_(src)
        except ValueError:  # overlapping strides (expanded tensors): a dense copy instead
            c = src.clone()
    if getattr(t, "requires_grad", False):
        c.requires_grad_(True)
    return c


def _copy_args(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return _map(args, _copy), _map(kwargs, _copy)


def _values(t: Tensor) -> np.ndarray:
    """The tensor's values as a float64/complex/bool numpy array (copied)."""
    if hasattr(t, "detach") and getattr(t, "requires_grad", False):
        t = t.detach()
    a = np.array(t.cpu().numpy() if t.device.type != "cpu" else t.numpy(), copy=True)
    if a.dtype.kind == "V" or str(a.dtype) in ("bfloat16", "float16"):
        a = a.astype(np.float64)
    return a


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.array_equal(a.astype(np.float64), b.astype(np.float64), equal_nan=True))
    return bool(np.array_equal(a, b))


def _schema_of(op: Any) -> Any:
    return _C._parse_schema(op._schema)


def _bind_names(schema: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any, Any]]:
    """(argument name, schema argument, value) for every argument passed."""
    out = []
    pos = [a for a in schema.arguments if not a.kwarg_only]
    for a, v in zip(pos, args):
        out.append((a.name, a, v))
    for a in schema.arguments:
        if a.name in kwargs:
            out.append((a.name, a, kwargs[a.name]))
    return out


def _alias_sets(info: Any) -> set[str]:
    if not info:
        return set()
    before = str(info).rstrip("!").split("->")[0].strip()
    return {s.strip() for s in before.split("|") if s.strip()}


def _flat_outputs(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def _op_name(op: Any) -> str:
    return getattr(op, "_qualname", None) or op.__name__


# ---------------------------------------------------------------------------
# sub-tests
# ---------------------------------------------------------------------------
def test_schema(op: Any, args: tuple, kwargs: dict) -> None:
    """Undeclared mutations, undeclared aliases and outputs aliasing each other."""
    schema = _schema_of(op)
    args, kwargs = _copy_args(args, kwargs)
    bound = _bind_names(schema, args, kwargs)
    before = []
    for name, arg, value in bound:
        for t in _leaves(value):
            before.append((name, arg, t, _values(t), _C._storage_id(t)))
    result = op(*args, **kwargs)
    for name, arg, t, old, _ in before:
        if not arg.is_write and not _same_values(old, _values(t)):
            raise AssertionError(f"Argument {name} is not defined as mutable but was mutated")
    outputs = _flat_outputs(result)
    returns = list(schema.returns)
    for i, out in enumerate(outputs):
        ret = returns[i] if i < len(returns) else None
        ret_sets = _alias_sets(ret.alias_info if ret is not None else None)
        for o in _leaves(out):
            sid = _C._storage_id(o)
            for name, arg, t, _, tsid in before:
                if tsid == sid and not (ret_sets & _alias_sets(arg.alias_info)):
                    raise AssertionError(
                        f"Argument {name} is not defined to alias output but was aliasing (output {i} shares "
                        f"storage with argument '{name}'; the schema {schema} declares no common alias set)"
                    )
    fresh = [(i, o) for i, out in enumerate(outputs) for o in _leaves(out)
             if not _alias_sets(returns[i].alias_info if i < len(returns) else None)]
    seen: dict[int, int] = {}
    for i, o in fresh:
        sid = _C._storage_id(o)
        if sid in seen and seen[sid] != i:
            raise AssertionError(f"Outputs {seen[sid]} and {i} alias unexpectedly (they share storage)")
        seen.setdefault(sid, i)


def test_autograd_registration(op: Any, args: tuple, kwargs: dict) -> None:
    """An operator whose inputs require grad needs an autograd kernel at an Autograd key."""
    flat = _leaves(args) + _leaves(kwargs)
    if not any(getattr(t, "requires_grad", False) for t in flat):
        return
    name = _op_name(op)
    backends = {t.device.type for t in flat}
    keys = ["Autograd", "CompositeImplicitAutograd"] + [f"Autograd{_C._dispatch_key_name(b)}" for b in backends]
    for key in keys:
        try:
            if _C._dispatch_has_kernel_for_key(name, key):
                return
        except ValueError:
            continue
    if _has_builtin_formula(op):
        return
    args, kwargs = _copy_args(args, kwargs)
    inputs = {id(t) for t in _leaves(args) + _leaves(kwargs)}
    result = op(*args, **kwargs)
    outs = [o for o in _leaves(result) if id(o) not in inputs]
    if any(getattr(o, "requires_grad", False) for o in outs):
        raise AssertionError(
            f"{name}: at least one output of this operator has requires_grad=True but the operator does not have "
            f"an autograd kernel defined at an autograd key (e.g. the Autograd key). This could mean that you have "
            f"incorrectly registered an autograd kernel to a non-Autograd dispatch key (CPU, accel, ...), which "
            f"may lead to silently incorrect results. Use register_autograd."
        )
    if any(o.dtype.is_floating_point for o in outs):
        raise AssertionError(
            f"{name}: inputs require grad but the operator has no autograd registration (register_autograd, or "
            f"a kernel at the Autograd or CompositeImplicitAutograd key), so gradients cannot flow through it"
        )


def _has_builtin_formula(op: Any) -> bool:
    """True if the autograd layer records this operator with a derivative formula of its own
    (the built-in aten formulas run from the autograd fallback, not from kernels at Autograd keys)."""
    try:
        from ..autograd import _record
    except ImportError:
        return False
    try:
        return _record.op_info(op).formula is not None
    except Exception:  # noqa: BLE001 (a layout this check does not know: no formula)
        return False


def _dynamic_dims(fake: Any, real: Any, dynamic_sizes: list) -> set[int]:
    """The dims of a fake output whose size came from ``ctx.new_dynamic_size()`` (data-dependent): the real size
    may be any value in the stand-in's [min, max], as PyTorch accepts an unbacked size on the fake side.

    Sizes are plain ints here (SymIntStandIn), so a dim counts as dynamic when its fake size is the hint of a
    stand-in made during this fake call and the real size lies in that stand-in's range."""
    out: set[int] = set()
    if len(fake.shape) != len(real.shape):
        return out
    for k, (f, r) in enumerate(zip(fake.shape, real.shape)):
        for d in dynamic_sizes:
            if f == int(d) and r >= d.min and (d.max is None or r <= d.max):
                out.add(k)
    return out


def _describe(t: Any) -> str:
    return f"size={tuple(t.shape)}, dtype={t.dtype}, device={t.device}, stride={t.stride()}, offset={t.storage_offset()}"


def test_faketensor(op: Any, args: tuple, kwargs: dict) -> None:
    """The fake kernel against the real one: outputs' number, shape, dtype, device, strides, offset, aliasing."""
    from .._subclasses import fake_tensor
    from .._subclasses.fake_tensor import FakeTensorMode

    real_args, real_kwargs = _copy_args(args, kwargs)
    real_inputs = _leaves(real_args) + _leaves(real_kwargs)
    real_out = op(*real_args, **real_kwargs)
    mode = FakeTensorMode()
    fake_args, fake_kwargs = _copy_args(args, kwargs)
    fake_args = _map(fake_args, mode.from_tensor)
    fake_kwargs = _map(fake_kwargs, mode.from_tensor)
    fake_inputs = _leaves(fake_args) + _leaves(fake_kwargs)
    with mode, fake_tensor.recording_dynamic_sizes() as dynamic_sizes:
        fake_out = op(*fake_args, **fake_kwargs)
    real_flat, fake_flat = _flat_outputs(real_out), _flat_outputs(fake_out)
    if real_out is None or fake_out is None:
        if (real_out is None) != (fake_out is None):
            raise AssertionError(f"number of outputs: fake returned {fake_out!r}, real returned {real_out!r}")
    elif len(real_flat) != len(fake_flat):
        raise AssertionError(f"number of outputs: fake {len(fake_flat)} vs real {len(real_flat)}")
    pairs = [(f"output {i}", r, f) for i, (r, f) in enumerate(zip(real_flat, fake_flat))]
    # mutated inputs' metadata too (resize_ & co.)
    pairs += [(f"input {i} after the call", r, f) for i, (r, f) in enumerate(zip(real_inputs, fake_inputs))]
    for what, r, f in pairs:
        if isinstance(r, (list, tuple)):
            if not isinstance(f, (list, tuple)) or len(r) != len(f):
                raise AssertionError(f"{what}: fake returned {type(f).__name__}, real a list of {len(r)}")
            sub = list(zip(r, f))
        else:
            sub = [(r, f)]
        for j, (rt, ft) in enumerate(sub):
            where = what if len(sub) == 1 and not isinstance(r, (list, tuple)) else f"{what}[{j}]"
            if not isinstance(rt, Tensor):
                if isinstance(ft, Tensor) or (rt != ft and not isinstance(rt, float)):
                    raise AssertionError(f"{where}: fake {ft!r} vs real {rt!r}")
                continue
            if not isinstance(ft, Tensor):
                raise AssertionError(f"{where}: fake returned {type(ft).__name__}, real a Tensor")
            # PyTorch's wording (compare_tensor_meta, fake first), then our description of both tensors.
            detail = f" ({where}; fake: {_describe(ft)}; real: {_describe(rt)})"
            dynamic = _dynamic_dims(ft, rt, dynamic_sizes)
            if len(rt.shape) != len(ft.shape) or any(
                    f != r and k not in dynamic for k, (f, r) in enumerate(zip(ft.shape, rt.shape))):
                raise AssertionError(f"Shapes {ft.shape} and {rt.shape} are not equal!{detail}")
            if rt.dtype != ft.dtype:
                raise AssertionError(f"Dtypes {ft.dtype} and {rt.dtype} are not equal!{detail}")
            if rt.device != ft.device:
                raise AssertionError(f"Devices {ft.device} and {rt.device} are not equal!{detail}")
            if dynamic:
                continue  # strides follow the data-dependent sizes (PyTorch's allow_rhs_unbacked)
            mismatch = next((k for k, (f, r, n) in enumerate(zip(ft.stride(), rt.stride(), rt.shape))
                             if n > 1 and f != r), None)
            if rt.numel() > 0 and mismatch is not None:
                raise AssertionError(
                    f"Stride mismatch! Strides are {ft.stride()} and {rt.stride()} (mismatched at {mismatch})!{detail}")
            if rt.storage_offset() != ft.storage_offset():
                raise AssertionError(
                    f"Storage offset mismatch! Storage offsets are {ft.storage_offset()} and "
                    f"{rt.storage_offset()}!{detail}")
            if what.startswith("output"):
                ra = [k for k, t in enumerate(real_inputs) if _C._storage_id(t) == _C._storage_id(rt)]
                fa = [k for k, t in enumerate(fake_inputs) if _C._storage_id(t) == _C._storage_id(ft)]
                if ra != fa:
                    raise AssertionError(
                        f"{where}: aliasing mismatch: the real output aliases inputs {ra}, the fake output inputs {fa}"
                    )


def _check_functionalizable(op: Any) -> None:
    """PyTorch's AOT dispatcher functionalizes the graph: a non-aten operator whose returns carry alias
    annotations is refused, unless custom_op tagged it Tag.inplace / Tag.out (which PyTorch 2.13
    functionalizes itself). Our trace does not functionalize, so the refusal is checked here, in its words."""
    from .._tags import Tag

    schema = _schema_of(op)
    if schema.ns == "aten" or not any(r.alias_info for r in schema.returns):
        return
    if Tag.inplace in op.tags or Tag.out in op.tags:
        return
    raise RuntimeError(
        f"Found a custom (non-ATen) operator whose output has alias annotations: {schema}. We only support "
        f"functionalizing operators whose outputs do not have alias annotations (e.g. 'Tensor(a)' is a Tensor "
        f"with an alias annotation whereas 'Tensor' is a Tensor without. The '(a)' is the alias annotation). The "
        f"alias annotation specifies that the output Tensor shares storage with an input that has the same "
        f"annotation. Please check if (1) the output needs to be an output (if not, don't return it), (2) if the "
        f"output doesn't share storage with any inputs, then delete the alias annotation. (3) if the output indeed "
        f"shares storage with an input, then add a .clone() before returning it to prevent storage sharing and then "
        f"delete the alias annotation. Otherwise, please file an issue on GitHub."
    )


_OUTPUTS_MSG = (
    "Outputs of the operator are different in eager-mode PyTorch vs AOTDispatcher tracing. This means the operator "
    "will have incorrect output underneath torch.compile. This could be because the operator's implementation not "
    "traceable."
)
_GRADS_MSG = (
    "Gradients of the operator are different in eager-mode PyTorch vs AOTDispatcher. This means the operator will "
    "have incorrect gradients underneath torch.compile. This could be because the operator's backward is "
    "incorrectly registered or not traceable."
)


def _assert_same(actual: Any, expected: Any, atol: float | None, rtol: float | None, what: str, gm: Any) -> None:
    """assert_close of traced vs eager; a failure raises PyTorch's message (``what``) from assert_close's error."""
    from ._comparison import assert_close

    try:
        assert_close(actual, expected, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError as e:
        raise AssertionError(f"{what}\n{gm}") from e


def test_trace(op: Any, args: tuple, kwargs: dict, *, atol: float | None = None, rtol: float | None = None) -> None:
    """Traced (on fake tensors) then re-run on new inputs, against eager: values, mutated inputs, gradients."""
    from .._library.tracing import trace

    _check_functionalizable(op)
    trace_args, trace_kwargs = _copy_args(args, kwargs)
    leaves = _leaves(trace_args) + _leaves(trace_kwargs)

    def rebuild(tensors: Sequence[Tensor], a: Any, k: Any) -> tuple[Any, Any]:
        it = iter(tensors)
        return _map(a, lambda _: next(it)), _map(k, lambda _: next(it))

    def fn(*tensors: Tensor) -> Any:
        a, k = rebuild(tensors, trace_args, trace_kwargs)
        return op(*a, **k)

    gm = trace(fn, *leaves)
    eager_args, eager_kwargs = _copy_args(args, kwargs)
    eager_leaves = _leaves(eager_args) + _leaves(eager_kwargs)
    rerun_leaves = [_copy(t) for t in leaves]
    eager_out = op(*eager_args, **eager_kwargs)
    traced_out = gm(*rerun_leaves)
    e_flat, t_flat = _leaves(eager_out), _leaves(traced_out)
    if len(e_flat) != len(t_flat):
        raise AssertionError(f"the traced graph returned {len(t_flat)} tensors, eager {len(e_flat)}\n{gm}")
    _assert_same([t.detach() for t in t_flat], [e.detach() for e in e_flat], atol, rtol, _OUTPUTS_MSG, gm)
    _assert_same([t.detach() for t in rerun_leaves], [e.detach() for e in eager_leaves], atol, rtol,
                 "Mutated inputs " + _OUTPUTS_MSG[len("Outputs "):], gm)
    _check_grads(e_flat, t_flat, eager_leaves, rerun_leaves, gm, atol, rtol)


def _check_grads(e_out: list, t_out: list, e_in: list, t_in: list, gm: Any, atol: float | None,
                 rtol: float | None) -> None:
    wants = [i for i, t in enumerate(e_in) if getattr(t, "requires_grad", False)]
    if not wants:
        return
    try:
        from .. import autograd
    except ImportError:
        return
    diff = [i for i, o in enumerate(e_out) if getattr(o, "requires_grad", False)]
    if not diff:
        return
    def grads(outs: list, ins: list) -> list:
        total = None
        for i in diff:
            s = outs[i].sum()
            total = s if total is None else total + s
        return list(autograd.grad(total, [ins[i] for i in wants], allow_unused=True))
    ge, gt = grads(e_out, e_in), grads(t_out, t_in)
    for k, (a, b) in enumerate(zip(ge, gt)):
        if (a is None) != (b is None):
            raise AssertionError(f"{_GRADS_MSG} (gradient of input {wants[k]}: eager {a!r} vs traced {b!r})")
    _assert_same([b for b in gt if b is not None], [a for a in ge if a is not None], atol, rtol, _GRADS_MSG, gm)


_TESTS = {
    "test_schema": test_schema,
    "test_autograd_registration": test_autograd_registration,
    "test_faketensor": test_faketensor,
    "test_trace": test_trace,
}


def opcheck(
    op: Any,
    args: tuple | list,
    kwargs: dict | None = None,
    *,
    test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS,
    raise_exception: bool = True,
    atol: float | None = None,
    rtol: float | None = None,
) -> dict[str, Any]:
    """Runs the sub-tests on ``op(*args, **kwargs)``; see the module docstring.

    ``args`` is a tuple or a list. ``test_utils`` takes PyTorch's names (``test_schema``,
    ``test_autograd_registration``, ``test_faketensor``, ``test_aot_dispatch_dynamic`` /
    ``test_aot_dispatch_static``, which run our trace check) or ``test_trace``. With
    ``raise_exception=True`` the first failure raises OpCheckError naming the sub-test;
    otherwise returns PyTorch's result dict {sub-test: "SUCCESS" or the exception}.
    ``atol`` / ``rtol`` are the trace check's tolerances (assert_close's defaults when
    omitted), as PyTorch's.
    """
    if (atol is None) != (rtol is None):
        raise ValueError("opcheck: atol and rtol must both be given, or neither")
    if isinstance(op, _C.OpOverloadPacket):
        raise ValueError(
            f"opcheck(op, ...): op must be an OpOverload (e.g. {op.__name__.replace('::', '.')}.default) or a "
            f"CustomOpDef, got the packet {op.__name__}"
        )
    if not isinstance(op, _C.OpOverload):
        raise TypeError(f"opcheck(op, ...): op must be an OpOverload or a CustomOpDef, got {type(op).__name__}")
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise TypeError(f"opcheck(op, args, ...): args must be a tuple or a list, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"opcheck(op, args, kwargs): kwargs must be a dict, got {type(kwargs).__name__}")
    kwargs = {} if kwargs is None else dict(kwargs)
    names = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    for n in names:
        if _ALIASES.get(n, n) not in _TESTS:
            raise ValueError(
                f"opcheck: unknown test_utils entry {n!r}; expected some of {list(DEFAULT_TEST_UTILS)} "
                f"(or test_aot_dispatch_static, test_trace)"
            )
    results: dict[str, Any] = {}
    for n in names:
        try:
            test = _ALIASES.get(n, n)
            if test == "test_trace":
                test_trace(op, args, kwargs, atol=atol, rtol=rtol)
            else:
                _TESTS[test](op, args, kwargs)
        except Exception as e:  # noqa: BLE001 (every failure is reported)
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {n} failed with {type(e).__name__}: {e}") from e
            results[n] = e
        else:
            results[n] = "SUCCESS"
    return results
