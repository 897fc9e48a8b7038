"""Regression tests for what the fuzzers (tests/fuzz/) found, minimised; they run in the normal
suite without atheris or clang.

Each test names the target that found the case. Cases the fuzzers reached that are one of issue
12's known findings are covered by that finding's own regression test, not repeated here.
"""
from __future__ import annotations

import numpy as np
import pytest

import accel
import backend_sdk as sdk
from backend_sdk import _C


# ---- indexing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("write", [False, True], ids=["getitem", "setitem"])
def test_out_of_range_tensor_index_on_accel_is_a_device_error_of_that_call(write):
    """indexing target: a tensor index past the end of an empty dimension. cpu raises IndexError at
    the call; accel checks the index in the kernel (as CUDA's device-side assert does) and the
    error surfaces at the next synchronisation, naming the operator and the index. The fuzzer's
    next input then ran on a device with a pending fault: the error must be the faulting call's,
    read once, and the device must work afterwards."""
    index = np.array([-1])
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0 with size 0"):
        x = sdk.zeros(0)
        if write:
            x[sdk.from_numpy(index)] = 1.0
        else:
            x[sdk.from_numpy(index)]
    x = sdk.zeros(0, device="accel:0")
    op = "aten::index_put_" if write else "aten::index.Tensor"
    with pytest.raises(sdk.AcceleratorError, match=rf"kernel fault in '{op}'.*index -1 is out of bounds"):
        if write:
            x[sdk.from_numpy(index).to("accel:0")] = 1.0
        else:
            x[sdk.from_numpy(index).to("accel:0")]
        accel.synchronize(0)
    accel.synchronize(0)  # read once
    y = sdk.arange(3, device="accel:0")
    assert y[sdk.from_numpy(np.array([2, 0])).to("accel:0")].tolist() == [2, 0]


def test_indexing_matches_numpy_on_the_shapes_the_fuzzer_tried_first():
    """indexing target's differential oracle on a few seeds of each kind (empty dimensions,
    None/Ellipsis, negative and out-of-range slice bounds, bool and integer arrays)."""
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = sdk.from_numpy(a.copy())
    cases = [
        (Ellipsis, None), (slice(-5, 7), 0), (None, 1, slice(None, None, 2)), (1, [0, 2]),
        (np.array([True, False]),), (slice(3, 1), Ellipsis), ([1, 0], slice(None), [3, 0]),
        (0, np.array([[0, 1], [2, 0]])), (True,), (False, 0),
    ]
    for index in cases:
        sdk_index = tuple(sdk.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)
        np.testing.assert_array_equal(x[sdk_index].numpy(), a[index], err_msg=repr(index))


@pytest.mark.parametrize("shape, index, expected", [
    # An integer is a basic index (applied first), not an advanced one broadcast with the list
    # (numpy: (2, 1, 1)).
    ((3, 4, 1), (-3, None, [-4, 0]), (1, 2, 1)),
    # A list holding sequences is read as a tuple of indices (numpy now: one array, (2, 2, 2, 2, 3)).
    ((3, 2, 2, 3), [[0, 1], [1, 0]], (2, 2, 3)),
    # A bool scalar unsqueezes and indexes the new dimension on its own (numpy: (0, 1, 1, 3, 3)).
    ((1, 1, 3, 3), (slice(None, None, 3), False, None, -1), (1, 0, 1, 3, 3)),
    # Advanced indices are adjacent when the dimensions they index are, whatever a zero-width
    # Ellipsis between them says (numpy: (0, 1)).
    ((2, 1), (None, [0], Ellipsis, np.array([False])), (1, 0)),
])
def test_indexing_follows_pytorch_where_numpy_differs(shape, index, expected):
    """indexing target: the differential oracle's first reports, each a place where PyTorch's
    indexing (the specification) and numpy's differ; the SDK's results are PyTorch's."""
    x = sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    sdk_index = (tuple(sdk.from_numpy(i) if isinstance(i, np.ndarray) else i for i in index)
                 if isinstance(index, tuple) else index)
    assert tuple(x[sdk_index].shape) == expected


# ---- schema -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "f(Tensor(a!) self, *, Tensor(b|c) out, float x=-inf, int[2] k=[1, 2]) -> (Tensor(a!), Tensor(b|c))",
    "g(Tensor(a -> *) x) -> Tensor(a)",
    "h(int x=1e3, float y=-2.5e-3) -> (int a, float b)",
    "f(...) -> ...",
])
def test_schema_round_trip_of_fuzzer_seeds(text):
    """schema/schema_cpp targets' round-trip oracle: the canonical text parses to the same text."""
    try:
        printed = str(_C._parse_schema(text))
    except ValueError:
        return  # refused with the parser's error type: what the oracle accepts
    assert str(_C._parse_schema(printed)) == printed


@pytest.mark.parametrize("text", ["", "(", "f(", "f(Tensor x", "::f() -> ()", "f(Tensor(a!) x=5) -> Tensor",
                                  "f(int[999999999999999999999] x) -> ()", "f(str s='\\x00') -> ()"])
def test_malformed_schemas_are_value_errors(text):
    """schema target: malformed text is a ValueError naming the text (Note [Schema parse errors])."""
    with pytest.raises(ValueError, match="Invalid schema"):
        _C._parse_schema(text)


# ---- device strings ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", ":", "accel:", "accel:-1", "accel:01x", "cpu:0:0", "accel:99999999999999999999",
                                  " cpu", "CPU", "accel:1.0", "\x00"])
def test_malformed_device_strings_are_errors_of_a_documented_type(text):
    """device/device_cpp targets: every malformed device string is refused with ValueError or
    RuntimeError (PyTorch's type), never another exception or a crash."""
    with pytest.raises((ValueError, RuntimeError)):
        sdk.device(text)
