"""vmap over the operator database: for every OpInfo sample, vmap(op) of a batch equals op stacked over the slices.

Each sample becomes a batch of 3: every tensor of the sample (input and positional tensor arguments) gets
two more versions with its values permuted (so value domains, index ranges and masks stay valid), batched
along dim 0, its last dim, or not at all (in turn), which exercises batch dims that are not in front and
unbatched arguments. Operators whose aten overloads have a batching rule (or a CompositeImplicitAutograd
decomposition into operators that do) must not reach the slow fallback; the others go through it and
must still be right.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _C
from backend_sdk._functorch import _rules
from backend_sdk.func import vmap
from backend_sdk.testing import assert_close
from backend_sdk.testing._opinfo import op_db

B = 3
# where vmap is (as PyTorch's) not the loop over slices
_NOT_LOOPS = {
    "resize_": "resize_ of a batched tensor is refused unless the size is unchanged",
    "as_strided": "as_strided's storage_offset is relative to each element under vmap (PyTorch's rule), absolute "
                  "on a slice",
    "_native_batch_norm_legit": "calls native_batch_norm (below)",
    "_native_batch_norm_legit_no_training": "calls native_batch_norm (below)",
    "native_batch_norm": "writes running_mean/running_var in place (mutable schema): the fallback refuses it, as "
                         "PyTorch's does",
}
# decompositions that write batched values into a temporary they create unbatched: the loop serves them
_DECOMPOSED_TO_FALLBACK: set[str] = {
    # composites over the 2-d pooling operators, which have no batching rule yet
    "avg_pool1d", "adaptive_avg_pool1d", "max_pool3d_with_indices", "avg_pool3d", "_adaptive_avg_pool3d"}
_SKIP_CATEGORIES = ("factory", "random")


def _opinfos():
    return [o for o in op_db if o.category not in _SKIP_CATEGORIES and not o.random and "functional" in o.variants
            and sdk.float32 in o.dtypes]


def _functional_overloads(opinfo) -> list[str]:
    names = []
    for n in opinfo.aten_overloads:
        short = n.split("::", 1)[1]
        base, _, overload = short.partition(".")
        if base.endswith("_") or overload.endswith("out") or "_out" in overload:
            continue
        names.append(n)
    return names


def _covered(opinfo) -> bool:
    """Every functional aten overload of the OpInfo has a rule or a math-kernel decomposition."""
    names = _functional_overloads(opinfo)
    if opinfo.name in _DECOMPOSED_TO_FALLBACK:
        return False
    return bool(names) and all(_rules.has_rule(n) or _rules._math_kernel_key(n) is not None for n in names)


def _permuted(t: sdk.Tensor, k: int) -> sdk.Tensor:
    if t.numel() <= 1:
        return t.clone()
    rng = np.random.default_rng(k)
    perm = sdk.tensor(rng.permutation(t.numel()).tolist(), device=t.device)
    return t.reshape(-1)[perm].reshape(list(t.shape))


def _batched(t: sdk.Tensor, where: str) -> tuple[sdk.Tensor | None, int | None]:
    if where == "none":
        return t, None
    stacked = sdk.stack([t] + [_permuted(t, k) for k in (1, 2)], 0)
    if where == "last" and t.dim() > 0:
        return stacked.movedim(0, -1).contiguous() if hasattr(stacked, "movedim") else \
            stacked.permute(*range(1, stacked.dim()), 0).contiguous(), t.dim()
    return stacked, 0


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("opinfo", _opinfos(), ids=lambda o: o.full_name)
def test_vmap_matches_loop(opinfo, device):
    if opinfo.name in _NOT_LOOPS:
        pytest.skip(_NOT_LOOPS[opinfo.name])
    if device != "cpu" and opinfo.category == "conversion":
        pytest.skip("conversions are checked on cpu (device moves are not operators of one device)")
    covered = _covered(opinfo)
    checked = 0
    for sample in opinfo.sample_inputs(device, sdk.float32):
        positional = [sample.input] + list(sample.args)
        placements = []
        batched_args, in_dims = [], []
        for i, a in enumerate(positional):
            if isinstance(a, sdk.Tensor):
                where = "front" if i == 0 else ("last", "none", "front")[i % 3]
                v, d = _batched(a, where)
            else:
                v, d = a, None
            batched_args.append(v)
            in_dims.append(d)
            placements.append(d)
        if all(d is None for d in in_dims):
            continue
        kwargs = dict(sample.kwargs)

        def fn(*args):
            return opinfo.op(*args, **kwargs)

        try:
            slices = [[a if d is None else a.select(d, b) for a, d in zip(batched_args, in_dims)] for b in range(B)]
            ref_outs = [fn(*s) for s in slices]
            if not all(isinstance(o, sdk.Tensor) for r in ref_outs for o in _flat(r)):
                continue
            ref = [sdk.stack([_flat(r)[i] for r in ref_outs]) for i in range(len(_flat(ref_outs[0])))]
        except Exception:  # shapes that differ per slice (nonzero, masked_select...): no stacked reference
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = vmap(fn, in_dims=tuple(in_dims))(*batched_args)
        fallback = [str(w.message) for w in caught if "performance drop" in str(w.message)]
        # batched integer tensor arguments (indices, targets) have rules too: covered means no loop at all
        if covered:
            assert not fallback, f"{opinfo.full_name} ({sample!r}) reached the slow fallback: {fallback}"
        atol, rtol = opinfo.tolerance(sdk.float32)
        for got, want in zip(_flat(out), ref):
            assert_close(got, want, atol=max(atol, 1e-5), rtol=max(rtol, 1e-5), equal_nan=True,
                         msg=lambda m: f"{opinfo.full_name} {sample!r} in_dims={in_dims}: {m}")
        checked += 1
    if checked == 0:
        pytest.skip("no sample with a stackable reference")


def test_rule_coverage():
    """Most of the operator database is covered by rules (the slow fallback is the exception)."""
    infos = _opinfos()
    covered = [o.full_name for o in infos if _covered(o)]
    assert len(covered) >= 0.75 * len(infos), sorted(set(o.full_name for o in infos) - set(covered))
