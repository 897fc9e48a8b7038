"""Tagged in-place and out= custom operators and version bumps of mutated arguments (issue 16)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tag, Tensor
from backend_sdk.library import custom_op, opcheck


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 2)


def test_inplace_tagged_op_schema_call_and_result_check(ns: str) -> None:
    @custom_op(f"{ns}::scale_", mutates_args={"x"}, tags=Tag.inplace)
    def scale_(x: Tensor, s: float) -> Tensor:
        x.mul_(s)
        return x

    assert str(scale_._schema) == f"{ns}::scale_(Tensor(a0!) x, float s) -> Tensor(a0!)"
    assert Tag.inplace in scale_.tags
    x = arr(3)
    before = x.numpy().copy()
    assert scale_(x, 2.0) is x
    np.testing.assert_array_equal(x.numpy(), before * 2)

    @custom_op(f"{ns}::bad_", mutates_args={"x"}, tags=Tag.inplace)
    def bad_(x: Tensor) -> Tensor:
        return x.clone()

    with pytest.raises(RuntimeError, match=f"{ns}::bad_: An operator tagged with backend_sdk.Tag.inplace must "
                                           "return its first argument."):
        bad_(arr(2))


def test_inplace_tag_bad_definitions(ns: str) -> None:
    def scalar_first(s: float, x: Tensor) -> Tensor:
        return x

    with pytest.raises(ValueError, match="backend_sdk.Tag.inplace requires the first positional argument to be a Tensor"):
        custom_op(f"{ns}::a", scalar_first, mutates_args={"x"}, tags=Tag.inplace)

    def first_not_mutated(x: Tensor, y: Tensor) -> Tensor:
        return x

    with pytest.raises(ValueError, match="Tag.inplace requires mutates_args to contain exactly the first positional argument"):
        custom_op(f"{ns}::b", first_not_mutated, mutates_args={"y"}, tags=Tag.inplace)

    def returns_none(x: Tensor) -> None:
        return None

    with pytest.raises(ValueError, match="Tag.inplace requires the return annotation to be backend_sdk.Tensor"):
        custom_op(f"{ns}::c", returns_none, mutates_args={"x"}, tags=Tag.inplace)
    with pytest.raises(AssertionError, match="Tag.inplace and backend_sdk.Tag.out are mutually exclusive"):
        custom_op(f"{ns}::d", first_not_mutated, mutates_args={"x"}, tags=[Tag.inplace, Tag.out])
    with pytest.raises(ValueError, match="return must alias the first argument"):  # an explicit schema that does not fit
        custom_op(f"{ns}::e", lambda x: x, mutates_args={"x"}, tags=Tag.inplace,
                  schema="(Tensor(a!) x) -> Tensor")


def test_out_tagged_op_one_and_two_outs(ns: str) -> None:
    @custom_op(f"{ns}::neg_out", mutates_args={"out"}, tags=Tag.out)
    def neg_out(x: Tensor, *, out: Tensor) -> Tensor:
        return backend_sdk.ops.aten.neg.out(x, out=out)

    assert str(neg_out._schema) == f"{ns}::neg_out(Tensor x, *, Tensor(a1!) out) -> Tensor(a1!)"
    out = backend_sdk.empty(3)
    assert neg_out(arr(3), out=out) is out
    np.testing.assert_array_equal(out.numpy(), -arr(3).numpy())

    @custom_op(f"{ns}::split_out", mutates_args={"lo", "hi"}, tags=Tag.out)
    def split_out(x: Tensor, *, lo: Tensor, hi: Tensor) -> tuple[Tensor, Tensor]:
        lo.copy_(backend_sdk.clamp(x, max=0.0))
        hi.copy_(backend_sdk.clamp(x, min=0.0))
        return lo, hi

    assert str(split_out._schema) == (f"{ns}::split_out(Tensor x, *, Tensor(a1!) lo, Tensor(a2!) hi) -> "
                                 "(Tensor(a1!), Tensor(a2!))")
    lo, hi = backend_sdk.empty(3), backend_sdk.empty(3)
    r = split_out(arr(3), lo=lo, hi=hi)
    assert r[0] is lo and r[1] is hi
    np.testing.assert_array_equal(hi.numpy(), np.maximum(arr(3).numpy(), 0))

    @custom_op(f"{ns}::bad_out", mutates_args={"out"}, tags=Tag.out)
    def bad_out(x: Tensor, *, out: Tensor) -> Tensor:
        return x.clone()

    with pytest.raises(RuntimeError, match="An operator tagged with backend_sdk.Tag.out must return its mutable "
                                           "keyword-only arguments"):
        bad_out(arr(2), out=backend_sdk.empty(2))


def test_out_tag_refuses_autograd_and_bad_definitions(ns: str) -> None:
    @custom_op(f"{ns}::neg_out", mutates_args={"out"}, tags=Tag.out)
    def neg_out(x: Tensor, *, out: Tensor) -> Tensor:
        return backend_sdk.ops.aten.neg.out(x, out=out)

    x = arr(3)
    x.requires_grad_(True)
    with pytest.raises(RuntimeError, match=r"neg_out\(\): functions with out=\.\.\. arguments don't support automatic "
                                           r"differentiation, but one of the arguments requires grad"):
        neg_out(x, out=backend_sdk.empty(3))
    with backend_sdk.no_grad():
        neg_out(x, out=backend_sdk.empty(3))

    def no_kwarg_tensors(x: Tensor, out: Tensor) -> Tensor:
        return out

    with pytest.raises(ValueError, match="backend_sdk.Tag.out requires mutable arguments to be keyword-only"):
        custom_op(f"{ns}::a", no_kwarg_tensors, mutates_args={"out"}, tags=Tag.out)

    def kwarg_tensor(x: Tensor, *, y: Tensor) -> Tensor:
        return x + y

    with pytest.raises(NotImplementedError, match="custom_op with kwarg-only Tensor args"):
        custom_op(f"{ns}::b", kwarg_tensor, mutates_args=())


def test_mutated_arguments_get_their_version_bumped(ns: str) -> None:
    @custom_op(f"{ns}::numpy_add_one", mutates_args={"x"})
    def numpy_add_one(x: Tensor) -> None:
        a = x.numpy()
        a += 1  # a write the SDK does not see

    x = arr(3)
    v = x._version
    numpy_add_one(x)
    assert x._version == v + 1
    np.testing.assert_array_equal(x.numpy(), arr(3).numpy() + 1)

    # saved-tensor checks see the write
    leaf = arr(3)
    leaf.requires_grad_(True)
    b = leaf * 1.0
    c = b.sin()  # saves b
    with backend_sdk.no_grad():
        numpy_add_one(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_tagged_op_autograd(ns: str) -> None:
    @custom_op(f"{ns}::double_", mutates_args={"x"}, tags=Tag.inplace)
    def double_(x: Tensor) -> Tensor:
        x.numpy()[...] *= 2
        return x

    # PyTorch 2.13 refuses an autograd formula for any mutable operator, Tag.inplace ones included.
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        double_.register_autograd(lambda ctx, grad: grad * 2)
    return
    leaf = arr(3)
    leaf.requires_grad_(True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        double_(leaf)
    y = leaf * 1.0
    z = double_(y)
    assert z is y
    z.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 2.0, 2.0])


def test_opcheck_and_fake_tensors_handle_both_kinds(ns: str) -> None:
    @custom_op(f"{ns}::add_one_", mutates_args={"x"}, tags=Tag.inplace)
    def add_one_(x: Tensor) -> Tensor:
        return x.add_(1)

    @add_one_.register_fake
    def _(x: Tensor) -> Tensor:
        return x

    @custom_op(f"{ns}::twice_out", mutates_args={"out"}, tags=Tag.out)
    def twice_out(x: Tensor, *, out: Tensor) -> Tensor:
        return out.copy_(x * 2)

    @twice_out.register_fake
    def _(x: Tensor, *, out: Tensor) -> Tensor:
        return out

    for op, args, kwargs in ((add_one_, (arr(2, 3),), {}), (twice_out, (arr(2, 3),), {"out": backend_sdk.empty(2, 3)}),
                             (twice_out, [arr(2, 3).t()], {"out": backend_sdk.empty(3, 2)})):
        result = opcheck(op, args, kwargs)
        assert result == {k: "SUCCESS" for k in ("test_schema", "test_autograd_registration", "test_faketensor",
                                                 "test_aot_dispatch_dynamic")}
    gm = backend_sdk.trace(lambda x, o: twice_out(x, out=o), arr(3), backend_sdk.empty(3))
    assert f"ops.{ns}.twice_out.default" in str(gm)
