"""Meta kernels against CPU kernels for every operator (issue 3).

* Every registered aten overload with a CPU kernel has a Meta kernel (a direct one or a
  composite/default-backend one), unless it is in META_EXCLUSIONS with a reason.
* Every registered aten overload is claimed by some OpInfo's ``aten_overloads`` (so that the
  comparison below reaches it), unless it is in NOT_COVERED with a reason.
* For every OpInfo, dtype and variant: each sample runs on CPU and on Meta (same sizes, strides
  and dtypes; see _sample_inputs.move) and every output agrees in sizes, strides (of dims of size
  > 1, as PyTorch's meta tests), storage offset and dtype; in-place and out= forms return the
  mutated argument on both; an error on CPU is the same error type on Meta.
"""
from __future__ import annotations

from typing import Any

import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.testing._core_coverage import _has, _table  # the dispatch-table reading the coverage report uses
from backend_sdk.testing._opinfo import ALL_DTYPES, FLOATING, OpInfo, SampleInput, call_variant, op_db
from backend_sdk.testing._sample_inputs import copy_with_strides, dtype_name

# aten overloads with a CPU kernel and no Meta kernel, on purpose.
META_EXCLUSIONS: dict[str, str] = {}

# aten overloads no OpInfo reaches, with the reason (they are tested elsewhere or are internal).
NOT_COVERED: dict[str, str] = {
    "aten::dim": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::is_contiguous": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::is_contiguous.memory_format": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::sym_numel": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::sym_size": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::sym_storage_offset": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::sym_stride": "metadata query for wrapper subclass policies -- tests/test_python_dispatch_policies.py",
    "aten::_local_scalar_dense": "reads data (Tensor.item()); Meta raises by design -- tests/test_tensor.py",
    "aten::_index_put_impl_": "internal implementation of index_put_ (covered through index_put_)",
    "aten::empty.memory_format": "values undefined; covered by the `empty` OpInfo's metadata only",
    "aten::_amp_foreach_non_finite_check_and_unscale_": "GradScaler's: mutates a Tensor[] and a flag; "
                                                         "tests/test_grad_scaler.py (cpu, accel, meta)",
    "aten::_amp_update_scale_": "GradScaler's: mutates the scale and tracker; tests/test_grad_scaler.py",
    "aten::as_strided_": "in-place geometry; tests/test_autograd_tensor_api.py, tests/test_autograd_moved_formulas.py",
    **{f"aten::{q}": "in-place geometry (Tensor.t_, transpose_, ...); tests/test_autograd_moved_formulas.py"
       for q in ("t_", "transpose_", "squeeze_", "squeeze_.dim", "squeeze_.dims", "unsqueeze_")},
    "aten::var_mean": "the unbiased=bool overload (only a positional bool reaches it); var_mean.dim/.correction "
                      "are OpInfos and tests/test_autograd_tensor_api.py calls it",
    "aten::std_mean": "the unbiased=bool overload; as aten::var_mean",
    "aten::sym_size.int": "returns an int, not a tensor; tests/test_ops_core20.py",
    "aten::sym_stride.int": "returns an int, not a tensor; tests/test_ops_core20.py",
    "aten::sym_numel": "returns an int, not a tensor; tests/test_ops_core20.py",
    "aten::sym_storage_offset": "returns an int, not a tensor; tests/test_ops_core20.py",
    **{f"aten::{n}": "Tensor.new_* as an aten operator on self (a subclass's backward zeros); composed of "
                     "empty.memory_format + fill_, which are covered -- tests/test_python_dispatch.py"
       for n in ("new_empty", "new_zeros", "new_ones", "new_full")},
}
# The multi-tensor and fused optimizer operators take and return lists: tests/test_optim_foreach.py checks
# every overload on cpu, accel and meta against the per-tensor operators.
NOT_COVERED.update({q: "Tensor[] operator: tests/test_optim_foreach.py" for q in _C._registered_operators()
                    if q.startswith(("aten::_foreach_", "aten::_fused_")) and q not in NOT_COVERED})


def _aten_overloads() -> list[str]:
    return [q for q in _C._registered_operators() if q.startswith("aten::")]


def test_every_cpu_kernel_has_a_meta_kernel() -> None:
    missing = []
    for q in _aten_overloads():
        t = _table(q)
        if _has(t.get("CPU")) and not _has(t.get("Meta")) and q not in META_EXCLUSIONS:
            missing.append(q)
    assert not missing, f"operators with a CPU kernel and no Meta kernel: {missing}"


def test_meta_exclusions_are_current() -> None:
    """An exclusion whose operator has gained a Meta kernel (or is gone) must be removed."""
    registered = set(_aten_overloads())
    stale = [q for q in META_EXCLUSIONS if q not in registered or _has(_table(q).get("Meta"))]
    assert not stale, stale


def test_every_overload_is_covered_by_an_opinfo() -> None:
    claimed = {q for op in op_db for q in op.aten_overloads}
    registered = set(_aten_overloads())
    uncovered = sorted(q for q in registered if q not in claimed and q not in NOT_COVERED)
    assert not uncovered, f"aten overloads no OpInfo covers: {uncovered}"
    unknown = sorted(q for q in claimed if q not in registered)
    assert not unknown, f"OpInfos claim overloads that are not registered: {unknown}"


# ---- metadata of Meta results against CPU results ----------------------------------------------
def _cases() -> list:
    out = []
    for op in op_db:
        for dtype in op.dtypes:
            for variant in op.variants:
                skip = op.skip_for(variant, dtype, "meta")
                marks = [pytest.mark.xfail(strict=True, reason=skip.reason)] if skip else []
                out.append(pytest.param(op, dtype, variant, marks=marks,
                                        id=f"{op.full_name}-{dtype_name(dtype)}-{variant}"))
    return out


def _flat(r: Any) -> list:
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _significant_strides(t: backend_sdk.Tensor) -> tuple:
    return tuple(st if s > 1 else None for s, st in zip(t.shape, t.stride()))


def _run(op: OpInfo, variant: str, sample: SampleInput) -> tuple[Any, Any, BaseException | None]:
    """(result, the argument that must be returned, error)."""
    if variant == "inplace":
        sample = SampleInput(copy_with_strides(sample.input), sample.args, sample.kwargs, sample.name)
        expect = sample.input
    elif variant == "out":
        try:
            ref = call_variant(op, "functional", sample)
        except Exception as e:  # noqa: BLE001 - compared with the other device's error
            return None, None, e
        outs = [backend_sdk.empty(list(r.shape), dtype=r.dtype, device=r.device) for r in _flat(ref)]
        expect = tuple(outs) if isinstance(ref, (tuple, list)) else outs[0]
        sample = SampleInput(sample.input, sample.args, {**sample.kwargs, "out": expect}, sample.name)
    else:
        expect = None
    try:
        return call_variant(op, variant, sample), expect, None
    except Exception as e:  # noqa: BLE001
        return None, None, e


@pytest.mark.parametrize("op, dtype, variant", _cases())
def test_meta_matches_cpu(op: OpInfo, dtype: Any, variant: str) -> None:
    n = 0
    # the same samples (values, sizes, strides) built for each device
    for sample, meta_sample in zip(op.sample_inputs("cpu", dtype), op.sample_inputs("meta", dtype)):
        if sample.variants is not None and variant not in sample.variants:
            continue
        n += 1
        cpu_r, cpu_expect, cpu_err = _run(op, variant, sample)
        meta_r, meta_expect, meta_err = _run(op, variant, meta_sample)
        if cpu_err is None and isinstance(meta_err, NotImplementedError) and "data-dependent" in str(meta_err):
            continue  # the result's shape depends on values a meta tensor does not have (as PyTorch's meta)
        if cpu_err is not None or meta_err is not None:
            assert cpu_err is not None and meta_err is not None, (
                f"{sample}: CPU {'raised ' + repr(cpu_err) if cpu_err else 'succeeded'}, "
                f"Meta {'raised ' + repr(meta_err) if meta_err else 'succeeded'}")
            assert type(cpu_err) is type(meta_err), f"{sample}: CPU raised {cpu_err!r}, Meta raised {meta_err!r}"
            continue
        cpu_outs, meta_outs = _flat(cpu_r), _flat(meta_r)
        assert len(cpu_outs) == len(meta_outs), sample
        for i, (c, m) in enumerate(zip(cpu_outs, meta_outs)):
            if not isinstance(c, backend_sdk.Tensor):
                assert c == m, f"output {i}: {c!r} vs {m!r} for {sample}"
                continue
            assert m.device.type == "meta", f"output {i} on {m.device} for {sample}"
            assert tuple(m.shape) == tuple(c.shape), f"output {i}: sizes {tuple(m.shape)} vs CPU {tuple(c.shape)} for {sample}"
            assert m.dtype == c.dtype, f"output {i}: dtype {m.dtype} vs CPU {c.dtype} for {sample}"
            assert _significant_strides(m) == _significant_strides(c), (
                f"output {i}: strides {tuple(m.stride())} vs CPU {tuple(c.stride())} for {sample}")
            assert m.storage_offset() == c.storage_offset(), (
                f"output {i}: storage offset {m.storage_offset()} vs CPU {c.storage_offset()} for {sample}")
        if variant == "inplace":
            for r, e in ((cpu_r, cpu_expect), (meta_r, meta_expect)):
                assert r is e, f"in-place form did not return its input for {sample}"
        if variant == "out":
            for r, e in ((cpu_r, cpu_expect), (meta_r, meta_expect)):
                for a, b in zip(_flat(r), _flat(e)):
                    assert a is b, f"out= form did not return out for {sample}"
    assert n > 0
