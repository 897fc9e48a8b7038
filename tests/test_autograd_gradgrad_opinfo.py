"""gradcheck and gradgradcheck on the OpInfo samples of every operator with a derivative formula
(the C++ table, csrc/backend_sdk/autograd/derivatives.def, or a Python formula), float64 on the
CPU, plus a small selection on accel. Bounded: the first samples of each operator whose
differentiable inputs are small (finite differences cost one forward per element, twice over for
gradgradcheck)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.autograd import _formulas
from backend_sdk.testing import gradcheck, gradgradcheck
from backend_sdk.testing._opinfo import op_db

DEF = Path(__file__).resolve().parents[1] / "csrc/backend_sdk/autograd/derivatives.def"
CPP_KEYS = frozenset(re.findall(r'SDK_DERIVATIVE\("([^"]+)"', DEF.read_text()))
MAX_SAMPLES = 2
MAX_NUMEL = 30
FLOATING = (B.float16, B.bfloat16, B.float32, B.float64)


def _functional(overload: str) -> str:
    ns, rest = overload.split("::", 1)
    name, _, ov = rest.partition(".")
    if name.endswith("_") and not name.startswith("_"):
        name = name[:-1]
    return f"{ns}::{name}" + (f".{ov}" if ov else "")


def has_formula(op) -> bool:
    keys = {_functional(o) for o in op.aten_overloads}
    return any(k in CPP_KEYS or k in _formulas.FORMULAS for k in keys)


def _label(op) -> str:
    return op.name + (f".{op.variant_name}" if op.variant_name else "")


OPS = [op for op in op_db if op.supports_autograd and B.float64 in op.dtypes and has_formula(op)]


def _overlapping(t) -> bool:
    return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride()))


def _as_function(op, sample):
    """(f, inputs): f(*inputs) calls op on the sample with its differentiable tensors replaced."""
    diff = [t for t in sample.tensors() if t.requires_grad]

    def f(*xs):
        by_id = {id(t): x for t, x in zip(diff, xs)}
        s = sample.transform(lambda t: by_id.get(id(t), t))
        return op.op(s.input, *s.args, **s.kwargs)

    return f, tuple(diff)


def _outputs(out):
    return [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, B.Tensor)]


def cases(device):
    for op in OPS:
        n = 0
        for s in op.sample_inputs(device, B.float64, requires_grad=True):
            diff = [t for t in s.tensors() if t.requires_grad]
            if not diff or sum(t.numel() for t in diff) > MAX_NUMEL or any(_overlapping(t) for t in diff):
                continue  # finite differences cannot perturb an element that several positions share
            yield op, s
            n += 1
            if n == MAX_SAMPLES:
                break


def _check(op, sample) -> None:
    f, inputs = _as_function(op, sample)
    with B.no_grad():
        outs = _outputs(f(*[t.detach() for t in inputs]))
    if not any(o.dtype in FLOATING for o in outs):
        pytest.skip("no differentiable output (PyTorch: not differentiable)")
    if any(o.numel() and not all(math.isfinite(v) for v in o.detach().cpu().reshape(-1).tolist()) for o in outs
           if o.dtype in FLOATING):
        pytest.skip("non-finite output (var of one element): finite differences are undefined")
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


CPU_CASES = list(cases("cpu"))


def test_the_selection_covers_the_formulas():
    assert len(OPS) >= 75  # every autograd OpInfo with a formula (composites such as matmul excluded)
    assert len({_label(op) for op, _ in CPU_CASES}) >= 72


@pytest.mark.parametrize("op, sample", CPU_CASES, ids=[f"{_label(op)}-{s.name}" for op, s in CPU_CASES])
def test_gradgradcheck_cpu(op, sample):
    if op.name == "copy_":
        pytest.skip("copy_ writes its input: checked through test_autograd_formulas' copy cases")
    _check(op, sample)


ACCEL_OPS = ("mul", "div.no_rounding_mode", "exp", "tanh", "sum", "amax", "mm", "_softmax", "gather", "where")


@pytest.mark.parametrize("name", ACCEL_OPS)
def test_gradgradcheck_accel(name):
    op = next(o for o in OPS if _label(o) == name)
    try:
        sample = next(s for o, s in cases("accel") if o is op)
    except StopIteration:
        pytest.skip(f"{name}: no small float64 sample on accel")
    _check(op, sample)
