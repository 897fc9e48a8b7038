"""Facts about torch.library that the port of PyTorch's test_custom_ops.py revealed, as our own tests.

Each test asserts one behaviour PyTorch 2.13 has (names, types, messages) and would fail if ours differed.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tensor, _C, library
from backend_sdk.library import Library, custom_op
from backend_sdk.testing import OpCheckError, assert_close


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape))


# ---- OpOverload._schema and alias annotations -----------------------------------------------------------
def test_schema_is_a_function_schema_with_alias_info(ns: str) -> None:
    @custom_op(f"{ns}::scale_", mutates_args={"x"}, tags=backend_sdk.Tag.inplace)
    def scale_(x: Tensor, s: float) -> Tensor:
        x.mul_(s)
        return x

    schema = scale_._opoverload._schema
    assert isinstance(schema, _C.FunctionSchema)
    assert str(schema) == f"{ns}::scale_(Tensor(a0!) x, float s) -> Tensor(a0!)"
    arg, ret = schema.arguments[0].alias_info, schema.returns[0].alias_info
    assert arg.is_write and ret.is_write and arg.before_set == ret.before_set == {"a0"}
    assert arg.after_set == {"a0"} and schema.arguments[1].alias_info is None
    assert arg == "a0!" and str(arg) == "a0!"  # still comparable with its text
    view = _C._parse_schema("aten::split(Tensor(a -> *) self, int n) -> Tensor(a)[]").arguments[0].alias_info
    assert not view.is_write and view.before_set == {"a"} and view.after_set == {"*"}
    assert _C._parse_schema(schema) is not None  # code that parses _schema again keeps working


# ---- DispatchKey and the dispatch-key guards ----------------------------------------------------------
def test_dispatch_key_enum_and_keyset() -> None:
    assert _C.DispatchKey.CPU.name == "CPU" and _C.DispatchKey.ADInplaceOrView.name == "ADInplaceOrView"
    assert _C.DispatchKeySet(_C.DispatchKey.CPU).has("CPU")
    assert _C.DispatchKeySet(_C.DispatchKey.CPU).has(_C.DispatchKey.CPU)


def _excluded() -> int:
    return _C._dispatch_tls_local_exclude_set().raw_repr


def test_auto_dispatch_below_autograd_as_object_and_context_manager() -> None:
    x = arr(2).requires_grad_(True)
    before = _excluded()
    guard = _C._AutoDispatchBelowAutograd()
    assert _excluded() != before and not (x * 2).requires_grad  # the Autograd keys are skipped
    del guard  # released when destroyed, as torch._C's guard
    assert _excluded() == before and (x * 2).requires_grad
    with _C._AutoDispatchBelowAutograd():
        assert not (x * 2).requires_grad
        with _C._ExcludeDispatchKeyGuard(_C.DispatchKeySet(_C.DispatchKey.ADInplaceOrView)):
            assert "ADInplaceOrView" in repr(_C._dispatch_tls_local_exclude_set())
        assert "ADInplaceOrView" not in repr(_C._dispatch_tls_local_exclude_set())
    assert _excluded() == before


def test_guards_released_out_of_order_undo_only_their_own_keys() -> None:
    before = _excluded()
    a = _C._AutoDispatchBelowAutograd()
    with_autograd = _excluded()
    b = _C._ExcludeDispatchKeyGuard(_C.DispatchKeySet(_C.DispatchKey.ADInplaceOrView))
    del a  # released first: ADInplaceOrView stays excluded
    assert "ADInplaceOrView" in repr(_C._dispatch_tls_local_exclude_set())
    assert _excluded() & with_autograd == before
    del b
    assert _excluded() == before


def test_autograd_function_calling_the_op_below_autograd(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("foo(Tensor x) -> Tensor")
    op = getattr(backend_sdk.ops, ns).foo.default

    class Foo(backend_sdk.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # noqa: ANN001, ANN205
            with _C._AutoDispatchBelowAutograd():
                return op(x)

        @staticmethod
        def backward(ctx, g):  # noqa: ANN001, ANN205
            return g * 3

    lib.impl("foo", Foo.apply, "Autograd")
    lib.impl("foo", lambda x: x * 2, "CPU")
    x = arr(3).requires_grad_(True)
    op(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3, 3])
    lib._destroy()


# ---- opcheck ------------------------------------------------------------------------------------------
def test_opcheck_fake_check_uses_pytorch_words(ns: str) -> None:
    @custom_op(f"{ns}::perm", mutates_args=())
    def perm(x: Tensor) -> Tensor:
        return x.clone().permute(2, 0, 1)

    perm.register_fake(lambda x: x.new_empty(x.shape[2], x.shape[0], x.shape[1]))
    with pytest.raises(OpCheckError, match=r"Stride mismatch! Strides are \(16, 4, 1\) and \(1, 12, 3\)"):
        library.opcheck(perm, (backend_sdk.randn(4, 4, 3),))


def test_opcheck_accepts_data_dependent_sizes(ns: str) -> None:
    @custom_op(f"{ns}::dyn", mutates_args=[])
    def dyn(x: Tensor) -> Tensor:
        return x.new_zeros((x.size(0), 18))

    @dyn.register_fake
    def _(x: Tensor) -> Tensor:
        s = library.get_ctx().new_dynamic_size()
        return backend_sdk.empty(x.shape[0], s, device=x.device, dtype=x.dtype)

    assert library.opcheck(dyn, args=[backend_sdk.zeros(10, 20)])["test_faketensor"] == "SUCCESS"

    @custom_op(f"{ns}::static", mutates_args=[])
    def static(x: Tensor) -> Tensor:
        return x.new_zeros((x.size(0), 18))

    static.register_fake(lambda x: backend_sdk.empty(x.shape[0], 2, dtype=x.dtype))
    with pytest.raises(OpCheckError, match=r"Shapes backend_sdk.Size\(\[10, 2\]\) and backend_sdk.Size\(\[10, 18\]\) "
                                           r"are not equal!"):
        library.opcheck(static, args=[backend_sdk.zeros(10, 20)])


def test_opcheck_refuses_alias_annotated_custom_returns_like_functionalization(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("foo(Tensor(a!) x) -> Tensor(a!)")
    lib.impl("foo", lambda x: x.mul_(2), "CPU")
    lib.impl("foo", lambda x: x, "Meta")
    op = getattr(backend_sdk.ops, ns).foo.default
    result = library.opcheck(op, (arr(2),), raise_exception=False)
    assert result["test_schema"] == "SUCCESS" and result["test_faketensor"] == "SUCCESS"
    assert "We only support functionalizing operators whose outputs do not have alias annotations" in str(
        result["test_aot_dispatch_dynamic"])
    lib._destroy()


def test_opcheck_trace_differences_report_assert_close_and_honour_tolerances(ns: str) -> None:
    calls = {"n": 0}

    @custom_op(f"{ns}::drift", mutates_args=())
    def drift(x: Tensor) -> Tensor:
        calls["n"] += 1
        return x * calls["n"]

    drift.register_fake(lambda x: backend_sdk.empty_like(x))
    x = backend_sdk.tensor(1.0)
    with pytest.raises(OpCheckError, match="eager-mode PyTorch vs AOTDispatcher") as info:
        library.opcheck(drift, (x,), test_utils="test_aot_dispatch_dynamic")
    assert "Absolute difference:" in str(info.value.__context__.__context__)
    assert library.opcheck(drift, (x,), test_utils="test_aot_dispatch_dynamic", atol=10, rtol=0.01) == {
        "test_aot_dispatch_dynamic": "SUCCESS"}


def test_assert_close_reports_zero_dim_tensors_as_scalars() -> None:
    with pytest.raises(AssertionError, match=r"Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute "
                                             r"difference: 1.0 \(up to 1e-05 allowed\)"):
        assert_close(backend_sdk.tensor(1.0), backend_sdk.tensor(2.0))


# ---- register_autograd --------------------------------------------------------------------------------
def test_register_autograd_inputs_are_the_arguments_passed(ns: str) -> None:
    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor, y: Optional[Tensor] = None, scale: float = 2.0, enabled: bool = False) -> Tensor:
        return x.sin()

    seen = {}

    def setup_context(ctx, inputs, output):  # noqa: ANN001, ANN202
        seen["inputs"] = inputs
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):  # noqa: ANN001, ANN202
        seen["needs"] = ctx.needs_input_grad
        return grad * ctx.saved_tensors[0].cos(), None, None, None  # one per schema input: trimmed

    f.register_autograd(backward, setup_context=setup_context)
    x = arr(3).requires_grad_(True)
    f(x).sum().backward()
    assert seen["inputs"][1:] == (None, 2.0, False)  # defaults filled for setup_context
    assert seen["needs"] == (True,)  # only the argument passed is an input of the Function
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)

    def too_few(ctx, grad):  # noqa: ANN001, ANN202
        return grad, None, None

    f.register_autograd(too_few, setup_context=setup_context)
    with pytest.raises(RuntimeError, match=r"incorrect number of gradients \(expected 1 or 4, got 3\)"):
        f(x).sum().backward()


def test_register_autograd_setup_context_gets_keyword_only_inputs(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("foo(Tensor w, int x=2, *, int y=3, int z) -> Tensor")
    lib.impl("foo", lambda w, x=2, *, y=3, z: w * x * y * z, "CPU")
    got = {}

    def setup_context(ctx, inputs, keyword_only_inputs, output):  # noqa: ANN001, ANN202
        got["inputs"], got["kw"] = inputs, keyword_only_inputs
        ctx.c = inputs[1] * keyword_only_inputs["y"] * keyword_only_inputs["z"]

    library.register_autograd(f"{ns}::foo", lambda ctx, g: g * ctx.c, setup_context=setup_context, lib=lib)
    w = arr(3).requires_grad_(True)
    getattr(backend_sdk.ops, ns).foo(w, z=5).sum().backward()
    assert len(got["inputs"]) == 2 and got["inputs"][1] == 2 and got["kw"] == {"y": 3, "z": 5}
    np.testing.assert_array_equal(w.grad.numpy(), [30, 30, 30])
    lib._destroy()


# ---- tagged ops, set_kernel_enabled, register_kernel ----------------------------------------------------
def test_tagged_ops_get_an_autogenerated_fake_kernel(ns: str) -> None:
    @custom_op(f"{ns}::add_", mutates_args={"x"}, tags=backend_sdk.Tag.inplace)
    def add_(x: Tensor, y: Tensor) -> Tensor:
        x.add_(y)
        return x

    @custom_op(f"{ns}::split_out", mutates_args={"lo", "hi"}, tags=backend_sdk.Tag.out)
    def split_out(x: Tensor, *, lo: Tensor, hi: Tensor) -> tuple[Tensor, Tensor]:
        lo.copy_(x)
        hi.copy_(x)
        return lo, hi

    mode = backend_sdk._subclasses.FakeTensorMode()
    x, lo, hi = (mode.from_tensor(arr(2)) for _ in range(3))
    with mode:
        assert add_(x, x) is x
        assert split_out(x, lo=lo, hi=hi) == (lo, hi)


def test_set_kernel_enabled_logs_as_pytorch(ns: str, caplog: pytest.LogCaptureFixture) -> None:
    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x + 1

    x = arr(1)
    with caplog.at_level(logging.WARNING, logger="backend_sdk._library.custom_ops"):
        with f.set_kernel_enabled("gpu", enabled=False):  # not a device type: only a warning
            np.testing.assert_array_equal(f(x).numpy(), [2])
    assert "no kernel was registered for this device type" in caplog.text
    with f.set_kernel_enabled("cpu", enabled=False):
        f.register_kernel("cpu", lambda x: x + 2)  # registered while disabled: stays disabled
        np.testing.assert_array_equal(f(x).numpy(), [2])
    np.testing.assert_array_equal(f(x).numpy(), [3])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="backend_sdk._library.custom_ops"):
        with f.set_kernel_enabled("cpu", enabled=True):
            pass
    assert "already enabled" in caplog.text


def test_register_kernel_none_is_every_device_and_device_types_limit_the_op(ns: str) -> None:
    @custom_op(f"{ns}::g", mutates_args=(), device_types="meta")
    def g(x: Tensor) -> Tensor:
        return backend_sdk.empty_like(x)

    with pytest.raises(RuntimeError, match="g does not have a kernel registered for cpu"):
        g(arr(2))
    library.register_kernel(g, None, lambda x: x * 10)
    np.testing.assert_array_equal(g(arr(2)).numpy(), [10, 20])
    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have a `device"):
        custom_op(f"{ns}::nodev", lambda: None, mutates_args=(), schema="() -> Tensor", device_types="cpu")


def test_custom_op_with_an_overload_name(ns: str) -> None:
    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x * 2

    @custom_op(f"{ns}::f.two", mutates_args=())
    def f_two(x: Tensor, y: Tensor) -> Tensor:
        return x + y

    packet = getattr(backend_sdk.ops, ns).f
    np.testing.assert_array_equal(packet(arr(2)).numpy(), [2, 4])
    np.testing.assert_array_equal(packet(arr(2), arr(2)).numpy(), [2, 4])
    assert str(packet.two._schema) == f"{ns}::f.two(Tensor x, Tensor y) -> Tensor"


# ---- definitions --------------------------------------------------------------------------------------
def test_define_forms_and_defined_in_python(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    with pytest.raises(ValueError, match="expected schema to look like"):
        library.define(f"{ns}::bad", "bad(Tensor x) -> Tensor", lib=lib)

    @library.define(lib, "legacy(Tensor x) -> Tensor")
    def legacy(x: Tensor) -> Tensor:
        return x + 5

    np.testing.assert_array_equal(getattr(backend_sdk.ops, ns).legacy(arr(2)).numpy(), [6, 7])
    assert getattr(backend_sdk.ops, ns).legacy.default._defined_in_python
    assert not backend_sdk.ops.aten.sin.default._defined_in_python
    qualname = f"{ns}::legacy"
    lib._destroy()
    assert qualname not in library._python_defined


def test_tag_on_c_and_layout_constraint_tag(ns: str) -> None:
    from backend_sdk._library.utils import get_layout_constraint_tag

    assert _C.Tag is backend_sdk.Tag
    Tag = backend_sdk.Tag
    for tags, expected in [({Tag.needs_fixed_stride_order}, Tag.needs_fixed_stride_order),
                           (set(), Tag.needs_exact_strides),
                           ({Tag.flexible_layout, Tag.needs_fixed_stride_order}, Tag.needs_fixed_stride_order)]:
        with library._scoped_library(ns, "FRAGMENT") as lib:
            lib.define("foobar(Tensor x) -> Tensor", tags=tuple(tags))
            assert get_layout_constraint_tag(getattr(backend_sdk.ops, ns).foobar.default) is expected
    assert get_layout_constraint_tag(backend_sdk.ops.aten.sin.default) is Tag.flexible_layout


def test_load_library_of_a_missing_file_says_pytorchs_words() -> None:
    with pytest.raises(OSError, match="Could not load this library: .*libnoexist.so"):
        backend_sdk.ops.load_library("libnoexist.so")


# ---- get_kernel ---------------------------------------------------------------------------------------
def test_get_kernel_is_a_snapshot_invalidated_with_its_library(ns: str) -> None:
    ks = _C.DispatchKeySet(_C.DispatchKey.CPU)
    with library._scoped_library(ns, "FRAGMENT") as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x * 2, "CPU")
        original = library.get_kernel(f"{ns}::f", "CPU")
        with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
            with library._scoped_library(ns, "FRAGMENT") as lib2:
                # the new kernel wraps the one it replaces, without recursing into itself
                lib2.impl("f", lambda keys, x: original.call_boxed(keys, x) + 1, "CPU", with_keyset=True)
                np.testing.assert_array_equal(getattr(backend_sdk.ops, ns).f(arr(2)).numpy(), [3, 5])
                wrapper = library.get_kernel(f"{ns}::f", "CPU")
        with pytest.raises(RuntimeError, match="has been invalidated"):
            wrapper.call_boxed(ks, arr(2))
        np.testing.assert_array_equal(original.call_boxed(ks, arr(2)).numpy(), [2, 4])
    np.testing.assert_array_equal(
        library.get_kernel("aten::mul.Tensor", "CPU").call_boxed(ks, arr(2), arr(2)).numpy(), [1, 4])
    with pytest.raises(RuntimeError, match="no kernel for CUDA for aten::mul.Tensor"):
        library.get_kernel("aten::mul.Tensor", "CUDA")


# ---- register_fake ------------------------------------------------------------------------------------
def test_register_fake_stack_and_conflicts(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("foo(Tensor x) -> Tensor")
    op = getattr(backend_sdk.ops, ns).foo.default
    meta = lambda n: backend_sdk.ones(n, device="meta")  # noqa: E731
    library.register_fake(f"{ns}::foo", lambda x: x * 1, lib=lib)
    with pytest.raises(RuntimeError, match="already has a fake impl"):
        library.register_fake(f"{ns}::foo", lambda x: x, lib=lib, allow_override=False)
    library.register_fake(f"{ns}::foo", lambda x: backend_sdk.cat([x, x]), lib=lib)
    assert tuple(op(meta(3)).shape) == (6,)
    with library._scoped_library(ns, "FRAGMENT") as lib2:
        library.register_fake(f"{ns}::foo", lambda x: x * 1, lib=lib2)
        assert tuple(op(meta(3)).shape) == (3,)
    assert tuple(op(meta(3)).shape) == (6,)  # the previous one is back
    lib._destroy()

    lib = Library(ns, "FRAGMENT")
    lib.define("cia(Tensor x) -> Tensor")
    lib.impl("cia", lambda x: x.sin(), "CompositeImplicitAutograd")
    with pytest.raises(RuntimeError, match="CompositeImplicitAutograd"):
        library.register_fake(f"{ns}::cia", lambda x: x, lib=lib)
    lib.define("m(Tensor x) -> Tensor")
    lib.impl("m", lambda x: x, "Meta")
    with pytest.raises(RuntimeError, match=r"already has an DispatchKey::Meta implementation"):
        library.register_fake(f"{ns}::m", lambda x: x, lib=lib, allow_override=False)
    lib._destroy()


# ---- infer_schema and argument conversion -------------------------------------------------------------
MyList = list
MyTensor = Tensor


def test_infer_schema_resolves_strings_inside_generics_and_refuses_variadic_tuples() -> None:
    def stringy(x: Tensor) -> "MyList[Tensor]": ...

    def substringy(x: Tensor) -> list["MyTensor"]: ...

    def bad(x: Tensor) -> "list[_TestTensor]": ...

    def variadic(x: Tensor) -> tuple[Tensor, ...]: ...

    assert library.infer_schema(stringy, mutates_args=()) == "(Tensor x) -> Tensor[]"
    assert library.infer_schema(substringy, mutates_args=()) == "(Tensor x) -> Tensor[]"
    with pytest.raises(ValueError, match=r"Unsupported type annotation list\[_TestTensor\]\. It is not a type\."):
        library.infer_schema(bad, mutates_args=())
    with pytest.raises(ValueError, match="Return has unsupported type"):
        library.infer_schema(variadic, mutates_args=())


def test_python_kernels_receive_dtype_lists_as_dtypes(ns: str) -> None:
    got = []
    with library._scoped_library(ns, "FRAGMENT") as lib:
        lib.define("f(Tensor x, ScalarType[] ts, ScalarType? t=None) -> ()")
        lib.impl("f", lambda x, ts, t=None: got.extend([ts, t]), "CPU")
        getattr(backend_sdk.ops, ns).f(arr(1), [backend_sdk.float32, backend_sdk.int64], backend_sdk.bfloat16)
    assert got == [[backend_sdk.float32, backend_sdk.int64], backend_sdk.bfloat16]


def test_every_written_argument_gets_one_version_bump(ns: str) -> None:
    @custom_op(f"{ns}::f", mutates_args={"y", "z", "w"})
    def f(x: Tensor, y: Optional[Tensor], z: list[Tensor], w: list[Optional[Tensor]]) -> None:
        return None

    x, y, z, w = arr(2), arr(2), [arr(2), arr(2)], [arr(2), None, arr(2)]
    before = [t._version for t in (x, y, *z, w[0], w[2])]
    f(x, y, z, w)
    after = [t._version for t in (x, y, *z, w[0], w[2])]
    assert after == [before[0]] + [v + 1 for v in before[1:]]  # x is not written; each written one once
    f(x, None, z, w)  # an absent optional is skipped
    assert [t._version for t in (*z, w[0], w[2])] == [v + 2 for v in before[2:]]


def test_supports_tensorlist_lets_a_function_take_lists() -> None:
    from backend_sdk._library.autograd import supports_tensorlist

    seen = {}

    @supports_tensorlist
    class Stack(backend_sdk.autograd.Function):
        @staticmethod
        def forward(ctx, xs, scale):  # noqa: ANN001, ANN205
            ctx.n, ctx.scale = len(xs), scale
            return backend_sdk.stack(xs) * scale

        @staticmethod
        def backward(ctx, grad):  # noqa: ANN001, ANN205
            seen["needs"] = ctx.needs_input_grad
            return [g * ctx.scale for g in grad.unbind(0)], None

    xs = [backend_sdk.tensor(float(i)).requires_grad_(True) for i in range(3)]
    grads = backend_sdk.autograd.grad(Stack.apply(xs, 2.0).sum(), xs)
    assert [float(g) for g in grads] == [2.0, 2.0, 2.0]
    assert seen["needs"] == ([True, True, True], False)
    with pytest.raises(NotImplementedError, match="Function.forward directly"):
        Stack.forward(None, xs, 2.0)
    with pytest.raises(NotImplementedError, match="Function.backward directly"):
        Stack.backward(None, xs)


def test_tag_out_manual_schema_with_a_non_tensor_out_is_refused(ns: str) -> None:
    with pytest.raises(ValueError, match="only supports Tensor mutable arguments"):
        custom_op(f"{ns}::o", lambda x, *, out: out, mutates_args={"out"}, tags=backend_sdk.Tag.out,
                  schema="(Tensor x, *, int(a!) out) -> int(a!)")


def test_argument_default_values_as_pytorch_reports_them(ns: str) -> None:
    got = []

    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor, a: Optional[int] = None, b: float = 3.14, f: backend_sdk.dtype = backend_sdk.float32,
          h: backend_sdk.dtype = backend_sdk.int32, i: backend_sdk.device = backend_sdk.device("cpu:0"),
          j: backend_sdk.device = "cpu") -> Tensor:
        got.extend([a, b, f, h, i, j])
        return x.clone()

    f(arr(1))  # the quoted device defaults ("cpu:0") parse when the call fills them in
    assert got == [None, 3.14, backend_sdk.float32, backend_sdk.int32, backend_sdk.device("cpu:0"), "cpu"]
    defaults = [a.default_value for a in f._opoverload._schema.arguments]
    # dtypes as c10::ScalarType numbers (float32 6, int32 3), devices as devices, no default as None
    assert defaults == [None, None, 3.14, 6, 3, backend_sdk.device("cpu:0"), backend_sdk.device("cpu")]
