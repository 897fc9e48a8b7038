"""backend_sdk.testing.assert_close: tolerances per dtype and PyTorch's messages."""
from __future__ import annotations

import re

import pytest

import backend_sdk as B
from backend_sdk.testing import assert_close


def test_equal_and_close_pass():
    assert_close(B.tensor([1.0, 2.0]), B.tensor([1.0, 2.0 + 1e-6]))
    assert_close(B.tensor([1, 2]), B.tensor([1, 2]))
    assert_close([B.tensor([1.0]), 2.0], [B.tensor([1.0]), 2.0])
    assert_close({"a": B.tensor([1.0])}, {"a": B.tensor([1.0])})


def test_default_tolerances_depend_on_dtype():
    a = B.tensor([1.0], dtype=B.float32)
    assert_close(a, B.tensor([1.0 + 5e-6], dtype=B.float32))  # within float32's atol 1e-5
    with pytest.raises(AssertionError):
        assert_close(B.tensor([1.0], dtype=B.float64), B.tensor([1.0 + 5e-6], dtype=B.float64))
    assert_close(B.tensor([1.0], dtype=B.float16), B.tensor([1.0009765625], dtype=B.float16))
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        assert_close(B.tensor([1, 2]), B.tensor([1, 3]))


def test_mismatch_message_names_greatest_difference_and_index():
    actual = B.tensor([[1.0, 2.0], [3.0, 4.0]])
    expected = B.tensor([[1.0, 2.0], [3.5, 4.0]])
    with pytest.raises(AssertionError) as e:
        assert_close(actual, expected)
    msg = str(e.value)
    assert msg.startswith("Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\n")
    assert "Greatest absolute difference: 0.5 at index (1, 0) (up to 1e-05 allowed)" in msg
    assert re.search(r"Greatest relative difference: 0\.142857\d* at index \(1, 0\) \(up to 1\.3e-06 allowed\)", msg)


def test_exact_message_for_integers():
    with pytest.raises(AssertionError) as e:
        assert_close(B.tensor([1, 2, 3]), B.tensor([1, 2, 5]))
    msg = str(e.value)
    assert "Mismatched elements: 1 / 3 (33.3%)" in msg
    assert "Greatest absolute difference: 2 at index (2,)" in msg


def test_metadata_mismatches():
    with pytest.raises(AssertionError, match=r"The values for attribute 'shape' do not match"):
        assert_close(B.ones(2), B.ones(3))
    with pytest.raises(AssertionError, match=r"The values for attribute 'dtype' do not match: backend_sdk.float32 "
                                             r"!= backend_sdk.float64"):
        assert_close(B.ones(2), B.ones(2, dtype=B.float64))
    assert_close(B.ones(2), B.ones(2, dtype=B.float64), check_dtype=False)


def test_rtol_atol_must_come_together_and_custom_tolerances():
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted, but got no atol"):
        assert_close(B.ones(1), B.ones(1), rtol=0.1)
    assert_close(B.tensor([1.0]), B.tensor([1.1]), rtol=0.0, atol=0.2)


def test_nan_handling_and_custom_msg():
    nan = float("nan")
    with pytest.raises(AssertionError):
        assert_close(B.tensor([nan]), B.tensor([nan]))
    assert_close(B.tensor([nan]), B.tensor([nan]), equal_nan=True)
    with pytest.raises(AssertionError, match="^custom$"):
        assert_close(B.tensor([1.0]), B.tensor([2.0]), msg="custom")
    with pytest.raises(AssertionError, match="^wrapped: Tensor-likes"):
        assert_close(B.tensor([1.0]), B.tensor([2.0]), msg=lambda m: "wrapped: " + m)


def test_scalars():
    assert_close(1.0, 1.0 + 1e-7)
    with pytest.raises(AssertionError, match="Scalars are not close!"):
        assert_close(1.0, 1.1)


def test_tensor_requiring_grad_can_be_compared():
    x = B.tensor([1.0], requires_grad=True)
    assert_close(x * 2, B.tensor([2.0]))


def test_gradgradcheck_catches_a_wrong_double_backward():
    # The numerical Jacobian of the first-order gradients is taken with grad mode off; the gradients must
    # still be computed there (they once were skipped, and every gradgradcheck passed whatever the formula).
    import backend_sdk as sdk
    from backend_sdk.testing._gradcheck import gradgradcheck as ggc

    class DetachedSquare(sdk.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x.detach() * g  # right first derivative, no second one

    x = sdk.randn(3, dtype=sdk.float64, requires_grad=True)
    assert ggc(lambda t: t * t, (x,))
    assert not ggc(DetachedSquare.apply, (x,), raise_exception=False)
