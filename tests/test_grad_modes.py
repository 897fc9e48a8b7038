"""Grad modes as PyTorch's: no_grad / enable_grad / set_grad_enabled / inference_mode as context managers
and as decorators of functions, generators and (deprecated) classes; inference tensors; anomaly mode."""
from __future__ import annotations

import threading
import warnings

import pytest

import backend_sdk as B


# ---- decorators -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode_cls, inside", [(B.no_grad, False), (B.enable_grad, True)])
def test_mode_decorates_function_with_and_without_parentheses(mode_cls, inside):
    seen = []

    def f():
        seen.append(B.is_grad_enabled())

    with B.set_grad_enabled(not inside):
        mode_cls()(f)()
        mode_cls(f)()
        assert B.is_grad_enabled() is (not inside)
    assert seen == [inside, inside]


def test_class_decoration_warns_and_only_construction_runs_in_the_mode():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @B.no_grad()
        class Foo:
            def __init__(self) -> None:
                self.init_grad = B.is_grad_enabled()

            def method(self) -> bool:
                return B.is_grad_enabled()

    foo = Foo()
    assert foo.init_grad is False
    assert foo.method() is True


def test_method_decoration_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class Foo:
            @B.no_grad()
            def f(self) -> bool:
                return B.is_grad_enabled()

        assert Foo().f() is False


def test_generator_runs_inside_the_mode_and_caller_outside():
    @B.no_grad()
    def gen():
        for i in range(3):
            assert not B.is_grad_enabled()
            received = yield i
            assert not B.is_grad_enabled()
            assert received == i * 10
        return "done"

    g = gen()
    assert next(g) == 0
    assert B.is_grad_enabled()
    assert g.send(0) == 1
    assert g.send(10) == 2
    with pytest.raises(StopIteration) as stop:
        g.send(20)
    assert stop.value.value == "done"


def test_generator_throw_is_delivered_inside_the_mode():
    class Boom(Exception):
        pass

    modes = []

    @B.no_grad()
    def gen():
        while True:
            try:
                yield 1
            except Boom:
                modes.append(B.is_grad_enabled())
                yield -1

    g = gen()
    next(g)
    assert g.throw(Boom) == -1
    assert modes == [False]
    assert B.is_grad_enabled()


def test_generator_exception_escapes_with_caller_mode_restored():
    class Boom(Exception):
        pass

    @B.enable_grad()
    def gen():
        try:
            yield 0
        except Boom:
            assert B.is_grad_enabled()
            raise ValueError("converted")

    with B.no_grad():
        g = gen()
        next(g)
        with pytest.raises(ValueError, match="converted"):
            g.throw(Boom)
        assert not B.is_grad_enabled()


def test_generator_close_runs_cleanup_inside_the_mode():
    state = []

    @B.no_grad()
    def gen():
        try:
            yield 0
            yield 1
        except GeneratorExit:
            state.append(B.is_grad_enabled())
            raise

    g = gen()
    next(g)
    g.close()
    assert state == [False]
    assert B.is_grad_enabled()


def test_set_grad_enabled_as_function_context_and_decorator():
    try:
        B.set_grad_enabled(False)
        assert not B.is_grad_enabled()
    finally:
        B.set_grad_enabled(True)
    with B.set_grad_enabled(False):
        assert not B.is_grad_enabled()
    assert B.is_grad_enabled()

    @B.set_grad_enabled(False)
    def f() -> bool:
        return B.is_grad_enabled()

    assert B.is_grad_enabled()  # decorating does not change the caller's mode
    assert f() is False
    assert B.is_grad_enabled()


def test_decorated_recursion_preserves_each_callers_mode():
    @B.enable_grad()
    def on(depth: int) -> None:
        assert B.is_grad_enabled()
        if depth:
            off(depth - 1)
            assert B.is_grad_enabled()

    @B.no_grad()
    def off(depth: int) -> None:
        assert not B.is_grad_enabled()
        if depth:
            on(depth - 1)
            assert not B.is_grad_enabled()

    with B.no_grad():
        on(6)
        assert not B.is_grad_enabled()


def test_grad_mode_is_per_thread():
    result = []
    with B.no_grad():
        t = threading.Thread(target=lambda: result.append(B.is_grad_enabled()))
        t.start()
        t.join()
    assert result == [True]


# ---- inference mode -------------------------------------------------------------------------------------
def test_inference_mode_context_nesting_and_grad_mode():
    assert not B.is_inference_mode_enabled()
    with B.inference_mode():
        assert B.is_inference_mode_enabled()
        assert not B.is_grad_enabled()
        with B.inference_mode(False):
            assert not B.is_inference_mode_enabled()
            assert B.is_grad_enabled()
        assert B.is_inference_mode_enabled()
    assert not B.is_inference_mode_enabled()
    assert B.is_grad_enabled()


def test_inference_mode_decorator_and_bare_decorator():
    @B.inference_mode()
    def f(x):
        assert B.is_inference_mode_enabled()
        return x * x

    @B.inference_mode
    def g(x):
        return x + 1

    x = B.ones(2, requires_grad=True)
    for out in (f(x), g(x)):
        assert B.is_inference(out)
        assert not out.requires_grad
    assert not B.is_inference_mode_enabled()


def test_tensors_made_in_inference_mode_are_inference_tensors():
    with B.inference_mode():
        c = B.ones(2, 3)
        d = c * 2
        r = B.ones(2, requires_grad=True)
    assert B.is_inference(c) and c.is_inference() and B.is_inference(d)
    assert r.requires_grad and B.is_inference(r)
    assert not B.is_inference(B.ones(2))
    assert not B.is_inference(c * 2)  # computed outside inference mode: a normal tensor


def test_views_follow_their_base():
    a = B.ones(2, 3)
    with B.inference_mode():
        v = a.view(-1)  # a view of a normal tensor stays normal
        c = B.ones(2, 3)
    assert not B.is_inference(v)
    assert B.is_inference(c.view(-1))  # a view of an inference tensor is one, even outside the mode


def test_inference_tensor_has_no_version_counter():
    with B.inference_mode():
        c = B.ones(3)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        c._version


def test_inplace_on_inference_tensor_outside_inference_mode_is_refused():
    with B.inference_mode():
        c = B.ones(3)
        c.add_(1)  # fine inside
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode is not allowed"):
        c.add_(1)
    s = B.ones(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        B.mul(s, s, out=c)


def test_inplace_on_normal_tensor_inside_inference_mode_keeps_it_normal_and_counts():
    s = B.ones(2, requires_grad=True)
    a = s.clone()
    out = a * a  # saves a
    with B.inference_mode():
        a.add_(2)
    assert not B.is_inference(a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(B.ones_like(out))


def test_inference_tensor_cannot_be_saved_by_a_function():
    class Mul(B.autograd.Function):
        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(c)
            return x * c

        @staticmethod
        def backward(ctx, g):
            return g, None

    with B.inference_mode():
        c = B.ones(2)
    x = B.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        Mul.apply(x, c)


def test_inference_leaf_that_requires_grad_gets_a_gradient_through_add():
    with B.inference_mode():
        c = B.ones(2, requires_grad=True)
    s = B.ones(2, requires_grad=True)
    (c + s).sum().backward()
    assert c.grad.tolist() == [1.0, 1.0]


def test_inference_mode_is_per_thread():
    seen = []
    with B.inference_mode():
        t = threading.Thread(target=lambda: seen.append((B.is_inference_mode_enabled(), B.is_inference(B.ones(1)))))
        t.start()
        t.join()
    assert seen == [(False, False)]


# ---- anomaly mode ---------------------------------------------------------------------------------------
def test_detect_anomaly_warns_on_entry_and_restores():
    assert not B.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = B.autograd.detect_anomaly()
    with ctx:
        assert B.is_anomaly_enabled() and B.is_anomaly_check_nan_enabled()
    assert not B.is_anomaly_enabled()
    with B.autograd.set_detect_anomaly(True, check_nan=False):
        assert B.is_anomaly_enabled() and not B.is_anomaly_check_nan_enabled()
    assert not B.is_anomaly_enabled() and B.is_anomaly_check_nan_enabled()


class _NanBackward(B.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def _make_nan_graph():
    x = B.ones(2, requires_grad=True)
    return x, _NanBackward.apply(x).sum()  # line of the forward call, looked for in the traceback


def test_nan_in_backward_names_the_node_and_its_forward_traceback():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = B.autograd.detect_anomaly()
    with ctx:
        x, y = _make_nan_graph()
        with pytest.warns(UserWarning, match=r"(?s)Error detected in _NanBackwardBackward.*_make_nan_graph"):
            with pytest.raises(RuntimeError,
                               match=r"Function '_NanBackwardBackward' returned nan values in its 0th output."):
                y.backward()
    # Without anomaly mode the NaN flows through silently, as in PyTorch.
    x, y = _make_nan_graph()
    y.backward()
    assert x.grad is not None


def test_error_in_backward_warns_with_forward_traceback_under_anomaly_mode():
    class Fails(B.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("backward failed")

    with B.autograd.set_detect_anomaly(True):
        y = Fails.apply(B.ones(1, requires_grad=True))
        with pytest.warns(UserWarning, match="Traceback of forward call that caused the error"):
            with pytest.raises(ValueError, match="backward failed"):
                y.sum().backward()


def test_check_nan_false_lets_nan_through():
    with B.autograd.set_detect_anomaly(True, check_nan=False):
        x, y = _make_nan_graph()
        y.backward()
    assert x.grad is not None
