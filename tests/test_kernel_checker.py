"""The kernel checker (Note [Kernel checker], csrc/backend_sdk/dispatch/detail/KernelChecker.h): a
backend's kernels registered while it is on are compared with the operator's Meta kernel on every call."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import backend_sdk as sdk
from backend_sdk.library import Library
from backend_sdk.testing import check_kernels, kernel_checks_enabled, kernel_checks_run

from _helpers import ROOT, kernel_checker_ops


@pytest.fixture
def checked_ops():
    """kchk::scale, kchk::scale_ and the view kchk::flip with Meta kernels, and a Library for accel kernels
    registered while the checker is on."""
    with kernel_checker_ops("kchk", views=True) as impls:
        yield impls


def _x() -> sdk.Tensor:
    return sdk.arange(6, dtype=sdk.float32).reshape(2, 3).to("accel")


def test_correct_kernels_pass_and_are_counted(checked_ops):
    checked_ops.impl("scale", lambda x: x * 2)
    checked_ops.impl("scale_", lambda x: x.mul_(2))
    before = kernel_checks_run()
    x = _x()
    assert sdk.ops.kchk.scale(x).cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert sdk.ops.kchk.scale_(x) is not None
    assert kernel_checks_run() >= before + 2


@pytest.mark.parametrize("kernel, message", [
    (lambda x: (x * 2).t(), r"accel's kernel for kchk::scale returned result 0 of shape \[3, 2\], but the "
                            r"operator's Meta kernel gives \[2, 3\]"),
    (lambda x: (x * 2).to(sdk.float64), r"returned result 0 of dtype float64, but the operator's Meta kernel "
                                        r"gives float32"),
    (lambda x: x.cpu() * 2, r"returned result 0 on cpu, but the call's tensors are on accel:0"),
    (lambda x: x.view(2, 3), r"returned result 0 sharing storage with its argument 'x'; a functional kernel "
                             r"returns fresh storage"),
])
def test_wrong_functional_kernels_are_caught(checked_ops, kernel, message):
    checked_ops.impl("scale", kernel)
    with pytest.raises(RuntimeError, match=r"kernel check \(BACKEND_SDK_CHECK_KERNELS\): .*" + message):
        sdk.ops.kchk.scale(_x())


def test_inplace_kernel_must_return_its_argument(checked_ops):
    checked_ops.impl("scale_", lambda x: x * 2)
    with pytest.raises(RuntimeError, match=r"accel's kernel for kchk::scale_ returned a new tensor as result 0; "
                                           r"an in-place or out= kernel returns its argument 'x' itself"):
        sdk.ops.kchk.scale_(_x())


def test_view_kernel_must_return_the_promised_view(checked_ops):
    x = _x()
    checked_ops.impl("flip", lambda x: x.t())
    v = sdk.ops.kchk.flip(x)
    assert v.shape == (3, 2) and v.stride() == (1, 3)


@pytest.mark.parametrize("kernel, message", [
    (lambda x: x.t().contiguous(), r"returned result 0 in new storage; a view operator returns a view of its "
                                   r"argument 'x'"),
    (lambda x: x.as_strided((3, 2), (2, 1)), r"returned result 0 with strides \[2, 1\] and storage offset 0, but "
                                             r"the operator's Meta kernel gives strides \[1, 3\] and offset 0"),
    (lambda x: x.as_strided((3, 2), (1, 2), 1), r"with strides \[1, 2\] and storage offset 1, but the operator's "
                                                r"Meta kernel gives strides \[1, 3\] and offset 0"),
])
def test_wrong_view_kernels_are_caught(checked_ops, kernel, message):
    checked_ops.impl("flip", kernel)
    with pytest.raises(RuntimeError, match=r"kernel check \(BACKEND_SDK_CHECK_KERNELS\): accel's kernel for "
                                           r"kchk::flip .*" + message):
        sdk.ops.kchk.flip(_x())


def test_switch_off_stops_the_checks(checked_ops):
    checked_ops.impl("scale", lambda x: (x * 2).t())
    check_kernels(False)
    assert sdk.ops.kchk.scale(_x()).shape == (3, 2)  # unchecked: the wrong shape goes through
    check_kernels(True)
    with pytest.raises(RuntimeError, match="kernel check"):
        sdk.ops.kchk.scale(_x())


def test_kernels_registered_while_off_are_not_wrapped():
    before = kernel_checks_enabled()
    check_kernels(False)
    defs = Library("kchk_off", "DEF")
    defs.define("scale(Tensor x) -> Tensor")
    defs.impl("scale", lambda x: sdk.empty(tuple(x.shape), dtype=x.dtype, device="meta"), "Meta")
    impls = Library("kchk_off", "IMPL", "accel")
    impls.impl("scale", lambda x: (x * 2).t())
    try:
        check_kernels(True)
        assert sdk.ops.kchk_off.scale(_x()).shape == (3, 2)
    finally:
        impls._destroy()
        defs._destroy()
        check_kernels(before)


def test_switch_rejects_non_bool():
    with pytest.raises(TypeError, match="enabled must be a bool"):
        check_kernels(1)  # type: ignore[arg-type]


def test_environment_variable_turns_it_on():
    code = ("import backend_sdk, accel\n"
            "from backend_sdk.testing import kernel_checks_enabled, kernel_checks_run\n"
            "x = backend_sdk.ones(4, device='accel')\n"
            "(x + x).cpu()\n"
            "print(kernel_checks_enabled(), kernel_checks_run() > 0)\n")
    env = dict(os.environ, BACKEND_SDK_CHECK_KERNELS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "samples" / "accel_sim")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"], r.stdout + r.stderr
