"""accel serves the backward operators with a ``bool[3] output_mask`` on its streams (Note [Undefined
results], samples/accel_sim/csrc/SimKernels.cpp): a masked-off gradient comes back undefined (None), the
others bit for bit as the CPU's, with no CPU-fallback round trip."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import accel  # noqa: F401  (registers the backend)
import backend_sdk as sdk

ROOT = Path(__file__).resolve().parents[1]
aten = sdk.ops.aten
MASKS = [list(m) for m in itertools.product([False, True], repeat=3)]


def _rand(*shape: int, seed: int) -> sdk.Tensor:
    return sdk.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _on(device: str, args: list[Any]) -> list[Any]:
    return [a.to(device) if isinstance(a, sdk.Tensor) else a for a in args]


def _conv_args() -> list[Any]:
    x, w = _rand(2, 4, 7, 6, seed=0), _rand(6, 2, 3, 3, seed=1)
    go = _rand(2, 6, 4, 3, seed=2)  # stride 2, padding 1, groups 2
    return [go, x, w, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 2]


def _layer_norm_args() -> list[Any]:
    x, w, b = _rand(3, 5, 8, seed=3), _rand(8, seed=4), _rand(8, seed=5)
    _, mean, rstd = aten.native_layer_norm(x, [8], w, b, 1e-5)
    return [_rand(3, 5, 8, seed=6), x, [8], mean, rstd, w, b]


def _batch_norm_args() -> list[Any]:
    x, w, b = _rand(4, 3, 5, 5, seed=7), _rand(3, seed=8), _rand(3, seed=9)
    rm, rv = sdk.zeros(3), sdk.ones(3)
    _, save_mean, save_invstd = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
    return [_rand(4, 3, 5, 5, seed=10), x, w, rm, rv, save_mean, save_invstd, True, 1e-5]


def _group_norm_args() -> list[Any]:
    x, w, b = _rand(2, 6, 4, 4, seed=11), _rand(6, seed=12), _rand(6, seed=13)
    _, mean, rstd = aten.native_group_norm(x, w, b, 2, 6, 16, 3, 1e-5)
    return [_rand(2, 6, 4, 4, seed=14), x, mean, rstd, w, 2, 6, 16, 3]


CASES: dict[str, tuple[Callable[..., Any], Callable[[], list[Any]]]] = {
    "convolution_backward": (aten.convolution_backward, _conv_args),
    "native_layer_norm_backward": (aten.native_layer_norm_backward, _layer_norm_args),
    "native_batch_norm_backward": (aten.native_batch_norm_backward, _batch_norm_args),
    "native_group_norm_backward": (aten.native_group_norm_backward, _group_norm_args),
}


@pytest.mark.parametrize("name", sorted(set(CASES) - {"native_group_norm_backward"}))  # that one is a composite
def test_served_by_accel_not_the_cpu_fallback(name: str) -> None:
    table = sdk._C._dispatch_dump_table(f"aten::{name}")
    line = next(ln for ln in table.splitlines() if ln.startswith("Accel:"))
    assert "AccelKernels.cpp" in line and "[kernel]" in line, line


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
def test_masked_results_are_none_and_the_rest_match_the_cpu(name: str, mask: list[bool]) -> None:
    op, make = CASES[name]
    args = make()
    want = op(*args, mask)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CPU-fallback warning would fail the call
        got = op(*_on("accel", args), mask)
    assert len(got) == 3
    for j, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None) == (not mask[j]), (j, g, w)
        if w is not None:
            assert g.device == sdk.device("accel:0") and g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g.cpu().numpy(), w.numpy())


def test_no_bias_means_no_bias_gradient_even_if_asked() -> None:
    args = _conv_args()
    args[3] = None  # bias_sizes: the convolution had no bias
    gi, gw, gb = aten.convolution_backward(*_on("accel", args), [True, True, True])
    assert gb is None and gi is not None and gw is not None
    np.testing.assert_array_equal(gw.cpu().numpy(), aten.convolution_backward(*args, [True, True, True])[1].numpy())


def test_bad_input_raises_at_launch_as_on_the_cpu() -> None:
    args = _conv_args()
    args[0] = _rand(2, 6, 5, 3, seed=2)  # grad_output of the wrong size
    with pytest.raises(RuntimeError) as cpu_err:
        aten.convolution_backward(*args, [True, True, True])
    with pytest.raises(RuntimeError) as accel_err:
        aten.convolution_backward(*_on("accel", args), [True, True, True])
    assert "convolution_backward: expected grad_output of size [2, 6, 4, 3], but got [2, 6, 5, 3]" in str(cpu_err.value)
    assert str(accel_err.value) == str(cpu_err.value)


def test_training_backward_runs_without_fallback() -> None:
    """A conv - batch_norm - layer_norm net's backward on accel: the same gradients as the CPU's, and the
    first conv's input gradient (not required) is never computed."""
    def grads(device: str) -> list[np.ndarray]:
        sdk.manual_seed(0)
        conv = sdk.nn.Conv2d(3, 4, 3, padding=1).to(device)
        bn = sdk.nn.BatchNorm2d(4).to(device)
        ln = sdk.nn.LayerNorm([4, 6, 6]).to(device)
        x = _rand(2, 3, 6, 6, seed=20).to(device)
        ln(bn(conv(x))).square().sum().backward()
        return [p.grad.cpu().numpy() for m in (conv, bn, ln) for p in m.parameters()]

    want = grads("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = grads("accel")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_kernel_checker_accepts_undefined_results() -> None:
    """With BACKEND_SDK_CHECK_KERNELS=1 each accel kernel is compared with the Meta kernel: a masked-off
    result must be undefined on both sides (csrc/backend_sdk/dispatch/KernelChecker.cpp)."""
    code = ("import backend_sdk as sdk, accel\n"
            "from backend_sdk.testing import kernel_checks_enabled, kernel_checks_run\n"
            "go, x, w = sdk.ones(1, 2, 3, 3, device='accel'), sdk.ones(1, 2, 5, 5, device='accel'), "
            "sdk.ones(2, 2, 3, 3, device='accel')\n"
            "n = kernel_checks_run()\n"
            "r = sdk.ops.aten.convolution_backward(go, x, w, [2], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, "
            "[False, True, False])\n"
            "print(kernel_checks_enabled(), kernel_checks_run() > n, r[0] is None, r[2] is None, "
            "float(r[1].sum().item()))\n")
    env = dict(os.environ, BACKEND_SDK_CHECK_KERNELS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "samples" / "accel_sim")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True", "True", "324.0"], r.stdout + r.stderr


def test_arange_on_accel_matches_the_cpu() -> None:
    """arange's host-built values reach the device by a non-blocking (staged) copy: the values are right
    even when the host buffer is gone before the stream runs the copy."""
    a = [sdk.arange(n, device="accel") for n in (1, 7, 1000)]
    b = sdk.arange(2.5, 9.0, 0.5, device="accel")
    sdk.accel.synchronize()
    assert [t.cpu().tolist() for t in a] == [list(range(n)) for n in (1, 7, 1000)]
    assert b.cpu().tolist() == sdk.arange(2.5, 9.0, 0.5).tolist()
