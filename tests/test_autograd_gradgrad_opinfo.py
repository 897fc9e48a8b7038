"""gradcheck and gradgradcheck on the OpInfo samples of every operator with a derivative formula
(the C++ table, csrc/backend_sdk/autograd/derivatives.def, or a Python formula), float64 on the
CPU, plus a small selection on accel. Bounded: the first samples of each operator whose
differentiable inputs are small (finite differences cost one forward per element, twice over for
gradgradcheck; the nn operators' samples are larger, and their formulas call the backward operators,
whose own formulas double backward checks). Only outputs that require grad are checked (PyTorch's
non-differentiable outputs: indices, masks, normalization statistics). SKIPS lists, with the reason,
the operators PyTorch itself does not gradcheck this way."""
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
MAX_NUMEL_NN = 600  # the nn operators' smallest samples (convolution_backward: 528 elements)
# Operators with a formula that gradcheck cannot check on their OpInfo samples, as in PyTorch.
SKIPS = {
    "copy_": "writes its input: checked through test_autograd_formulas' and test_autograd_last_formulas' copy cases",
    "native_layer_norm_backward": "mean and rstd are free inputs here, not_implemented in PyTorch (derivatives.yaml); "
                                  "its formula is checked through native_layer_norm and test_autograd_double_backward",
    "native_batch_norm_backward": "save_mean and save_invstd are free inputs here, not_implemented in PyTorch; its "
                                  "formula is checked through native_batch_norm and test_autograd_double_backward",
}
# Buffers an operator writes take no gradient (PyTorch refuses requires_grad on them): positions in args.
BUFFERS = {"native_batch_norm": (2, 3), "_native_batch_norm_legit": (2, 3),
           "_native_batch_norm_legit_no_training": (2, 3)}
# Samples whose gradient is PyTorch's convention rather than the derivative: (op, sample name).
SAMPLE_SKIPS = {("embedding", "padding_idx"): "the padding row gets no gradient by definition (PyTorch's), though "
                                               "the output reads it: finite differences disagree there"}
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


# Every OpInfo with a formula: the nn ones too, whose OpInfos do not set supports_autograd (their
# gradients are checked elsewhere against numerical ones; double backward is checked here).
OPS = [op for op in op_db if (op.supports_autograd or op.category == "nn") and B.float64 in op.dtypes
       and has_formula(op)]


def _overlapping(t) -> bool:
    return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride()))


def _outputs(out):
    return [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, B.Tensor)]


def _without_grad_buffers(op, sample):
    for pos in BUFFERS.get(op.name, ()):
        if pos < len(sample.args) and isinstance(sample.args[pos], B.Tensor):
            sample.args[pos].requires_grad_(False)
    return sample


def _as_function(op, sample):
    """(f, inputs): f(*inputs) calls op on the sample with its differentiable tensors replaced, and
    returns the outputs that require grad (the differentiable ones)."""
    diff = [t for t in sample.tensors() if t.requires_grad]

    def call(*xs):
        by_id = {id(t): x for t, x in zip(diff, xs)}
        s = sample.transform(lambda t: by_id.get(id(t), t))
        return op.op(s.input, *s.args, **s.kwargs)

    keep = [i for i, o in enumerate(_outputs(call(*diff))) if o.requires_grad]

    def f(*xs):
        outs = _outputs(call(*xs))
        picked = [outs[i] for i in keep]
        return picked[0] if len(picked) == 1 else tuple(picked)

    return f, tuple(diff)


# The composite OpInfos (CompositeImplicitAutograd: their gradient is their callees' formulas).
COMPOSITES = [op for op in op_db if (op.supports_autograd or op.category == "nn") and B.float64 in op.dtypes
              and not has_formula(op)]


def cases(device, ops=None):
    for op in OPS if ops is None else ops:
        n = 0
        limit = MAX_NUMEL_NN if op.category == "nn" else MAX_NUMEL
        for s in op.sample_inputs(device, B.float64, requires_grad=True):
            s = _without_grad_buffers(op, s)
            diff = [t for t in s.tensors() if t.requires_grad]
            if not diff or sum(t.numel() for t in diff) > limit or any(_overlapping(t) for t in diff):
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
    assert len(OPS) >= 95  # every OpInfo with a formula (composites such as matmul excluded)
    labels = {_label(op) for op, _ in CPU_CASES}
    assert len(labels) >= 90
    for name in ("convolution", "native_layer_norm", "native_batch_norm", "max_pool2d_with_indices", "avg_pool2d",
                 "adaptive_avg_pool2d", "native_dropout", "convolution_backward", "max_pool2d_with_indices_backward",
                 "avg_pool2d_backward", "_adaptive_avg_pool2d_backward", "embedding_dense_backward",
                 "native_dropout_backward", "_softmax_backward_data", "_log_softmax_backward_data"):
        assert name in labels, name
    assert set(SKIPS) <= {op.name for op in OPS}  # no stale skip


@pytest.mark.parametrize("op, sample", CPU_CASES, ids=[f"{_label(op)}-{s.name}" for op, s in CPU_CASES])
def test_gradgradcheck_cpu(op, sample):
    if op.name in SKIPS:
        pytest.skip(SKIPS[op.name])
    _check(op, sample)


COMPOSITE_CASES = list(cases("cpu", COMPOSITES))


@pytest.mark.parametrize("op, sample", COMPOSITE_CASES, ids=[f"{_label(op)}-{s.name}" for op, s in COMPOSITE_CASES])
def test_gradgradcheck_composites_cpu(op, sample):
    if (op.name, sample.name) in SAMPLE_SKIPS:
        pytest.skip(SAMPLE_SKIPS[op.name, sample.name])
    _check(op, sample)


def test_the_composite_selection():
    labels = {_label(op) for op, _ in COMPOSITE_CASES}
    assert len(labels) >= 60
    assert {"cross_entropy", "embedding", "conv2d", "conv_transpose2d", "group_norm", "native_group_norm_backward",
            "scaled_dot_product_attention", "matmul", "linear", "softmax", "elu", "leaky_relu", "hardtanh"} <= labels


ACCEL_OPS = ("mul", "div.no_rounding_mode", "exp", "tanh", "sum", "amax", "mm", "_softmax", "gather", "where",
             "convolution", "native_layer_norm", "native_batch_norm", "avg_pool2d", "max_pool2d_with_indices")


@pytest.mark.parametrize("name", ACCEL_OPS)
def test_gradgradcheck_accel(name):
    op = next(o for o in OPS if _label(o) == name)
    try:
        sample = next(s for o, s in cases("accel") if o is op)
    except StopIteration:
        pytest.skip(f"{name}: no small float64 sample on accel")
    _check(op, sample)
