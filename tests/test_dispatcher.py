"""The dispatcher seen from Python: definitions, kernels, precedence, fallthroughs, errors."""
from __future__ import annotations

import re

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.library import Library, fallthrough_kernel


def cpu_tensor(*shape):
    return backend_sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))


@pytest.fixture
def lib(ns):
    lib = Library(ns, "DEF")
    yield lib
    lib._destroy()


def op(ns, name):
    return getattr(getattr(backend_sdk.ops, ns), name)


# ---- definitions and calls -------------------------------------------------------
def test_define_and_call_python_kernel(lib, ns):
    lib.define("scale(Tensor x, int factor=2, *, bool flag=False) -> Tensor")
    seen = {}

    def kernel(x, factor, *, flag):
        seen.update(factor=factor, flag=flag)
        return x

    lib.impl("scale", kernel, "CPU")
    x = cpu_tensor(3)
    assert op(ns, "scale")(x) is x
    assert seen == {"factor": 2, "flag": False}
    op(ns, "scale").default(x, 5, flag=True)
    assert seen == {"factor": 5, "flag": True}


def test_argument_binding_errors(lib, ns):
    lib.define("f(Tensor x, int n) -> Tensor")
    lib.impl("f", lambda x, n: x, "CPU")
    x = cpu_tensor(2)
    f = op(ns, "f").default
    with pytest.raises(TypeError, match=r"argument 'n' \(position 2\) must be int, not str"):
        f(x, "a")
    with pytest.raises(TypeError, match=r"missing required argument 'n'"):
        f(x)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'm'"):
        f(x, 1, m=2)
    with pytest.raises(TypeError, match=r"takes 2 positional arguments but 3 were given"):
        f(x, 1, 2)
    with pytest.raises(TypeError, match=r"must be int, not bool"):
        f(x, True)


def test_overload_resolution_picks_first_matching(lib, ns):
    lib.define("g.Tensor(Tensor x, Tensor y) -> Tensor")
    lib.define("g.Scalar(Tensor x, Scalar y) -> Tensor")
    calls = []
    lib.impl("g.Tensor", lambda x, y: calls.append("Tensor") or x, "CPU")
    lib.impl("g.Scalar", lambda x, y: calls.append(("Scalar", y)) or x, "CPU")
    x = cpu_tensor(2)
    op(ns, "g")(x, x)
    op(ns, "g")(x, 2.5)
    assert calls == ["Tensor", ("Scalar", 2.5)]
    assert op(ns, "g")._overload_names == ["Tensor", "Scalar"]
    with pytest.raises(TypeError, match="None of its overloads matched"):
        op(ns, "g")(x, "nope")


def test_python_kernel_bad_return_is_type_error(lib, ns):
    lib.define("h(Tensor x) -> Tensor")
    lib.impl("h", lambda x: 3, "CPU")
    with pytest.raises(TypeError, match=r"Python kernel of .*::h returned int where the schema declares Tensor"):
        op(ns, "h")(cpu_tensor(1))


def test_python_kernel_exception_propagates_unchanged(lib, ns):
    lib.define("boom(Tensor x) -> Tensor")

    class Custom(Exception):
        pass

    def kernel(x):
        raise Custom("from the kernel")

    lib.impl("boom", kernel, "CPU")
    with pytest.raises(Custom, match="from the kernel"):
        op(ns, "boom")(cpu_tensor(1))


def test_multiple_returns_are_a_tuple(lib, ns):
    lib.define("two(Tensor x) -> (Tensor, Tensor)")
    lib.impl("two", lambda x: (x, x), "CPU")
    x = cpu_tensor(2)
    a, b = op(ns, "two")(x)
    assert a is x and b is x


# ---- precedence --------------------------------------------------------------------
def test_precedence_direct_over_composite_explicit_over_implicit(lib, ns):
    lib.define("p(Tensor x) -> Tensor")
    calls = []

    def tag(name):
        def kernel(x):
            calls.append(name)
            return x

        return kernel

    x = cpu_tensor(1)
    lib.impl("p", tag("implicit"), "CompositeImplicitAutograd")
    op(ns, "p")(x)
    lib.impl("p", tag("explicit"), "CompositeExplicitAutograd")
    op(ns, "p")(x)
    lib.impl("p", tag("cpu"), "CPU")
    op(ns, "p")(x)
    assert calls == ["implicit", "explicit", "cpu"]
    table = _C._dispatch_dump_table(f"{ns}::p")
    assert re.search(r"^CPU: registered at .* \[kernel\]$", table, re.M)
    assert re.search(r"^Meta: registered at .* \[default backend kernel\]$", table, re.M)


def test_composite_implicit_serves_autograd_only_without_backend_kernel(lib, ns):
    lib.define("q(Tensor x) -> Tensor")
    lib.impl("q", lambda x: x, "CompositeImplicitAutograd")
    table = _C._dispatch_dump_table(f"{ns}::q")
    assert re.search(r"^AutogradCPU: registered at .* \[math kernel\]$", table, re.M)
    lib.impl("q", lambda x: x, "CPU")
    table = _C._dispatch_dump_table(f"{ns}::q")
    # The CPU backend now has its own kernel: autograd must not decompose around it.
    assert not re.search(r"^AutogradCPU: .*\[math kernel\]$", table, re.M)
    assert re.search(r"^AutogradMeta: registered at .* \[math kernel\]$", table, re.M)


def test_autograd_alias_kernel_runs_before_backend_and_redispatches(lib, ns):
    lib.define("r(Tensor x) -> Tensor")
    calls = []

    def autograd_kernel(keyset, x):
        calls.append(("autograd", keyset.highest_priority_key()))
        return _C._redispatch(f"{ns}::r", keyset.keys_after("AutogradCPU"), x)

    def cpu_kernel(x):
        calls.append("cpu")
        return x

    lib.impl("r", autograd_kernel, "Autograd", with_keyset=True)
    lib.impl("r", cpu_kernel, "CPU")
    x = cpu_tensor(1)
    assert op(ns, "r")(x) is x
    assert calls == [("autograd", "AutogradCPU"), "cpu"]


def test_fallthrough_kernel_is_skipped(lib, ns):
    lib.define("s(Tensor x) -> Tensor")
    lib.impl("s", lambda x: x, "CPU")
    def autograd_kernel(x):
        raise RuntimeError("autograd kernel ran")

    lib.impl("s", autograd_kernel, "AutogradCPU")
    with pytest.raises(RuntimeError, match="autograd kernel ran"):
        op(ns, "s")(cpu_tensor(1))
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
        lib.impl("s", fallthrough_kernel, "AutogradCPU")
    x = cpu_tensor(1)
    assert op(ns, "s")(x) is x
    assert "fallthrough" in _C._dispatch_dump_table(f"{ns}::s")


def test_backend_fallback_and_its_error(ns):
    defs = Library(ns, "DEF")
    defs.define("t(Tensor x) -> Tensor")
    seen = []

    def fallback(op_overload, keyset, args, kwargs):
        seen.append(op_overload.__name__)
        return args[0]

    fb = Library("_", "IMPL", "PrivateUse3")
    try:
        fb.fallback(fallback)
        with pytest.raises(ValueError, match="multiple backend fallbacks for the same dispatch key"):
            Library("_", "IMPL", "PrivateUse3").fallback(fallback)
        table = _C._dispatch_dump_table(f"{ns}::t")
        assert re.search(r"^PrivateUse3: registered at .* \[backend fallback\]$", table, re.M)
    finally:
        fb._destroy()
        defs._destroy()


# ---- registration errors ----------------------------------------------------------------
def test_define_twice_is_an_error(lib, ns):
    lib.define("dup(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="same name and overload name multiple times"):
        lib.define("dup(Tensor x) -> Tensor")


def test_second_def_library_for_namespace_is_an_error(lib, ns):
    with pytest.raises(ValueError, match=f"Only a single SDK_LIBRARY can be used to register the namespace {ns}"):
        Library(ns, "DEF")
    frag = Library(ns, "FRAGMENT")  # fragments are fine
    frag.define("ok(Tensor x) -> Tensor")
    frag._destroy()


def test_impl_key_must_match_impl_library(ns):
    impl = Library(ns, "IMPL", "CPU")
    with pytest.raises(ValueError, match=r"Explicitly provided dispatch key \(Meta\) is inconsistent"):
        impl.impl("x", lambda x: x, "Meta")
    impl._destroy()


def test_impl_before_def_then_call_errors_clearly(ns):
    impl = Library(ns, "IMPL", "CPU")
    impl.impl("later", lambda x: x)
    with pytest.raises(AttributeError, match="not a registered operator"):
        getattr(backend_sdk.ops, ns).later
    with pytest.raises(RuntimeError, match=r"kernels were registered for it \(\[CPU\]\) but it was never defined"):
        _C._dispatch_dump_table(f"{ns}::later")
    defs = Library(ns, "DEF")
    defs.define("later(Tensor x) -> Tensor")
    x = cpu_tensor(1)
    assert getattr(backend_sdk.ops, ns).later(x) is x
    impl._destroy()
    defs._destroy()


def test_unknown_dispatch_key_lists_valid_ones(lib, ns):
    lib.define("k(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match=r"Unknown dispatch key 'CUDAX'. Valid keys are: .*CompositeImplicitAutograd"):
        lib.impl("k", lambda x: x, "CUDAX")
    # A key of a PyTorch backend this process lacks is recorded, never dispatched
    # (Note [Registrations for absent backends]).
    lib.impl("k", lambda x: x, "CUDA")
    assert "CUDA" not in _C._dispatch_dump_table(f"{ns}::k")


def test_bad_schema_is_value_error_with_position(lib):
    with pytest.raises(ValueError, match=r"Invalid schema .* at position"):
        lib.define("bad(Tensor x, int) -> Tensor")


def test_missing_kernel_error_reads_like_pytorch(lib, ns):
    lib.define("m(Tensor x) -> Tensor")
    lib.impl("m", lambda x: x, "Meta")
    with pytest.raises(NotImplementedError) as info:
        op(ns, "m")(cpu_tensor(1))
    msg = str(info.value)
    assert msg.startswith(f"Could not run '{ns}::m' with arguments from the 'CPU' backend.")
    assert f"'{ns}::m' is only available for these backends: [Meta]." in msg
    assert re.search(r"^CPU: missing$", msg, re.M)  # the computed table follows


def test_closing_a_library_removes_its_kernels(ns):
    defs = Library(ns, "DEF")
    defs.define("gone(Tensor x) -> Tensor")
    impl = Library(ns, "IMPL", "CPU")
    impl.impl("gone", lambda x: x)
    x = cpu_tensor(1)
    assert getattr(backend_sdk.ops, ns).gone(x) is x
    impl._destroy()
    with pytest.raises(NotImplementedError, match="Could not run"):
        getattr(backend_sdk.ops, ns).gone(x)
    defs._destroy()
    with pytest.raises(AttributeError):
        getattr(backend_sdk.ops, ns).gone
    with pytest.raises(RuntimeError, match="closed"):
        defs.define("again(Tensor x) -> Tensor")


def test_overriding_a_kernel_warns_and_closing_restores_the_previous(lib, ns):
    lib.define("w(Tensor x) -> Tensor")
    first = Library(ns, "IMPL", "CPU")
    first.impl("w", lambda x: "first" and x)
    calls = []
    second = Library(ns, "IMPL", "CPU")
    # Note [Python kernel overrides]: as in PyTorch, a second Python kernel needs allow_override=True.
    with pytest.raises(RuntimeError, match="already a kernel registered from python overriding w's behavior for CPU"):
        second.impl("w", lambda x: calls.append("second") or x)
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
        second.impl("w", lambda x: calls.append("second") or x, allow_override=True)
    op(ns, "w")(cpu_tensor(1))
    assert calls == ["second"]
    second._destroy()
    op(ns, "w")(cpu_tensor(1))
    assert calls == ["second"]  # the first kernel is back
    first._destroy()


# ---- key sets and TLS ---------------------------------------------------------------------
def test_tensor_key_set_and_call_key_set():
    x = cpu_tensor(1)
    ks = _C._dispatch_key_set(x)
    for key in ("CPU", "AutogradCPU", "ADInplaceOrView"):
        assert ks.has(key)
    call = _C._dispatch_keys_for_call(x)
    assert call.has("BackendSelect")  # included by default, as in c10
    assert not call.has("AutocastCPU")  # excluded by default


def test_exclude_guard_changes_dispatch_and_restores(lib, ns):
    lib.define("e(Tensor x) -> Tensor")
    calls = []
    lib.impl("e", lambda x: calls.append("autograd") or x, "AutogradCPU")
    lib.impl("e", lambda x: calls.append("cpu") or x, "CPU")
    x = cpu_tensor(1)
    op(ns, "e")(x)
    # Excluding a functionality (not a backend's runtime key, whose backend bit
    # would exclude the CPU backend too), as c10's autograd guards do.
    guard = _C._DispatchKeyGuard(_C.DispatchKeySet(["AutogradFunctionality"]), False)
    with pytest.raises(ZeroDivisionError):
        with guard:
            op(ns, "e")(x)
            1 / 0
    op(ns, "e")(x)
    assert calls == ["autograd", "cpu", "autograd"]
    assert not _C._dispatch_tls_local_exclude_set().has("AutogradFunctionality")


def test_include_guard_adds_keys(lib, ns):
    lib.define("i(Tensor x) -> Tensor")
    calls = []
    lib.impl("i", lambda x: calls.append("python") or x, "Python")
    lib.impl("i", lambda x: calls.append("cpu") or x, "CPU")
    x = cpu_tensor(1)
    with _C._DispatchKeyGuard(_C.DispatchKeySet(["Python"]), True):
        op(ns, "i")(x)
    op(ns, "i")(x)
    assert calls == ["python", "cpu"]


# ---- threads ------------------------------------------------------------------------------------
def test_calls_are_safe_while_kernels_are_registered_and_removed():
    result = _C._stress_dispatch(num_callers=3, calls_per_thread=100000, registrations=3000)
    assert result["registrations"] == 3000
    assert result["wrong"] == 0 and result["other_errors"] == 0
    assert result["ok"] + result["missing"] == 300000
    assert result["ok"] > 0


def test_dispatch_benchmark_hook_reports_time():
    ns_per_call = _C._benchmark_dispatch(10000)
    assert 0 < ns_per_call < 1e6
