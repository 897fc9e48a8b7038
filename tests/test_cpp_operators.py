"""The generated C++ operator API (sdk::ops::, csrc/backend_sdk/ops/Operators.h) and the C++ Tensor
methods (issue 17, "A C++ operator API for kernel authors")."""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.utils import cpp_extension

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cpp_ops", ROOT / "tools" / "gen_cpp_ops.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_cpp_ops", mod)  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


gen = _generator()
needs_cxx = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")


# ---- the generated files are what the schemas give ----

@pytest.mark.skipif(not gen.HEADER.exists(), reason="not a source checkout")
def test_generated_files_match_the_registered_schemas():
    header, source = gen.render(gen.cpp_schemas())
    assert gen.HEADER.read_text() == header, "Operators.h is stale: rerun tools/gen_cpp_ops.py"
    assert gen.SOURCE.read_text() == source, "Operators.cpp is stale: rerun tools/gen_cpp_ops.py"


def test_every_cpp_defined_aten_overload_is_generated_or_handwritten():
    done = {f.qualified for f in gen.plan(gen.cpp_schemas())}
    for s in gen.cpp_schemas():
        name = s.qualified_name
        assert (name in done) != (name[len("aten::"):] in gen.HANDWRITTEN), name
    assert len(done) > 500


# ---- the generator's rules, on schemas of our own ----

def fn(text: str):
    return gen.make_function(_C._parse_schema(text))


def decl(text: str) -> str:
    return gen._decl(fn(text), True)


def test_types_defaults_and_returns():
    assert decl("aten::f.x(Tensor self, Tensor? w=None, *, Scalar alpha=1, int[2] stride=1, int[1]? dim=None, "
                "bool keepdim=False, str reduce=\"mean\", ScalarType dtype=long, int reduction=Mean, "
                "float eps=1e-05) -> (Tensor, Tensor)") == (
        "std::tuple<Tensor, Tensor> f(const Tensor& self, const std::optional<Tensor>& w = {}, "
        "const Scalar& alpha = 1, IntArrayRef stride = {1, 1}, std::optional<IntArrayRef> dim = {}, "
        "bool keepdim = false, std::string_view reduce = \"mean\", ScalarType dtype = ScalarType::Int64, "
        "int64_t reduction = 1, double eps = 1e-05)")
    assert decl("aten::g(Tensor[] self, Tensor?[] i, Generator? generator=None) -> Tensor[]") == (
        "std::vector<Tensor> g(TensorList self, OptionalTensorList i, const std::optional<Generator>& generator = {})")
    assert decl("aten::h(Tensor(a!) self) -> ()") == "void h(const Tensor& self)"
    # a default is kept only when every later parameter keeps one
    assert decl("aten::k(Tensor self, int dim=0, *, int n) -> Tensor") == (
        "Tensor k(const Tensor& self, int64_t dim, int64_t n)")
    # C++ keywords as argument names
    assert decl("aten::k2(Tensor self, int default) -> Tensor") == "Tensor k2(const Tensor& self, int64_t default_)"


def test_out_variants_take_their_outputs_first():
    f = fn("aten::max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) "
           "-> (Tensor(a!) values, Tensor(b!) indices)")
    assert f.cpp_name == "max_out"
    assert [p.name for p in f.params] == ["max", "max_values", "self", "dim", "keepdim"]
    assert [p.default for p in f.params] == [None, None, None, None, "false"]
    assert f.call_order == [2, 3, 4, 0, 1]  # the dispatcher gets the schema's order
    # an in-place overload is not an out= one
    assert fn("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)").cpp_name == "add_"


def test_factory_arguments_and_everything_before_take_no_default():
    f = fn("aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
           "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor")
    assert [p.default for p in f.params] == [None] * 7
    f = fn("aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
           "bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
           "-> Tensor(a)")
    assert [p.default for p in f.params] == [None] * 5 + ["false", "false", "{}"]


def test_clashing_overloads_get_the_overload_name():
    s = [_C._parse_schema("aten::zz.a(Tensor self, int dim) -> Tensor"),
         _C._parse_schema("aten::zz.b(Tensor self, int index) -> Tensor"),
         _C._parse_schema("aten::zz.c(Tensor self, Scalar other) -> Tensor")]
    assert [f.cpp_name for f in gen.plan(s)] == ["zz", "zz_b", "zz"]


def test_types_without_unboxed_form_are_called_boxed():
    f = fn("aten::bw(Tensor x, bool[3] output_mask, float[]? scales, Scalar[] s) -> Tensor")
    assert [p.cpp_type for p in f.params] == ["const Tensor&", "std::array<bool, 3>",
                                              "std::optional<ArrayRef<double>>", "ArrayRef<Scalar>"]
    assert not f.unboxed and "call_boxed" in gen._definition(f)
    assert fn("aten::u(Tensor x) -> Tensor").unboxed


def test_unknown_types_and_defaults_stop_the_generator():
    with pytest.raises(ValueError, match="no C.. type for schema type 'Dimname'"):
        fn("aten::bad(Tensor x, Dimname d) -> Tensor")
    with pytest.raises(ValueError, match="no C.. default"):
        gen.cpp_default("ScalarType", "complex_thing")


# ---- a vendor kernel file using the generated API and the Tensor methods, built and run ----

KERNELS = r"""
#include <backend_sdk/extension.h>

using sdk::IntArrayRef;
using sdk::Scalar;
using sdk::ScalarType;
using sdk::Tensor;
namespace ops = sdk::ops;

namespace {
std::vector<Tensor> probe(const Tensor& x) {  // x: float32 (2, 3)
  std::vector<Tensor> r;
  r.push_back(ops::arange(0, 6, 1, ScalarType::Float32, {}, {}, {}));        // 0 factory, all arguments
  r.push_back(x.t().contiguous());                                                // 1 copy, row-major
  r.push_back(x.t().reshape({6}));                                                // 2 copy (no view possible)
  r.push_back(x.reshape({3, 2}));                                                 // 3 a view of x
  r.push_back(x.to(ScalarType::Float64));                                         // 4
  r.push_back(x.sum(IntArrayRef{1}, true));                                       // 5
  Tensor out = ops::empty({3}, ScalarType::Float32);
  r.push_back(ops::sum_out(out, x, IntArrayRef{0}));                              // 6 out= first
  r.push_back(std::get<1>(ops::max(x, 1)));                                       // 7 tuple return
  r.push_back(ops::unbind(x, 0)[1]);                                              // 8 vector return
  r.push_back(x.narrow(1, 1, 2).mul(2).add(1));                                   // 9
  r.push_back(x.select(0, 1).neg().unsqueeze(0).expand({2, 3}));                  // 10
  r.push_back(x.clone().fill_(3).sub_(x).div(Scalar(2)));                         // 11
  r.push_back(ops::_foreach_add({x}, std::vector<Scalar>{Scalar(10)})[0]);        // 12 Scalar[] (boxed)
  r.push_back(ops::upsample_nearest2d(x.view({1, 1, 2, 3}), std::optional<IntArrayRef>(),
                                      std::vector<double>{2.0, 1.0}));            // 13 float[]? (boxed)
  Tensor g = ops::full({1, 1, 2, 2}, 1.0, {}, {}, {}, {});
  Tensor w = ops::full({1, 1, 1, 2}, 2.0, {}, {}, {}, {});
  r.push_back(std::get<0>(ops::convolution_backward(
      g, x.view({1, 1, 2, 3}), w, std::optional<IntArrayRef>(), {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1,
      {true, false, false})));                                                    // 14 bool[3] (boxed)
  r.push_back(x.transpose(0, 1).permute({1, 0}).flatten().slice(0, 1, 5, 2));     // 15
  r.push_back(x.clone().zero_().add_(x, 2).mul_(x).to(sdk::Device(sdk::DeviceType::CPU), false, true));  // 16
  return r;
}
double item_of(const Tensor& x) { return x.sum().item().to<double>(); }
Tensor bad_view(const Tensor& x) { return x.view({7}); }
}  // namespace

SDK_LIBRARY(cppops, m) {
  m.def("probe(Tensor x) -> Tensor[]");
  m.def("item_of(Tensor x) -> float");
  m.def("bad_view(Tensor x) -> Tensor");
}
SDK_LIBRARY_IMPL(cppops, CPU, m) {
  m.impl("probe", &probe);
  m.impl("item_of", &item_of);
  m.impl("bad_view", &bad_view);
}
"""


@pytest.fixture(scope="module")
def cppops(tmp_path_factory):
    root = tmp_path_factory.mktemp("cppops")
    os.environ.setdefault("BACKEND_SDK_EXTENSIONS_DIR", str(root / "ext"))
    src = root / "cppops.cpp"
    src.write_text(KERNELS)
    cpp_extension.load("test_cppops_ext", [str(src)], is_python_module=False)
    return backend_sdk.ops.cppops


@needs_cxx
def test_kernel_file_using_the_generated_api_runs(cppops):
    xn = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype=np.float32)
    x = backend_sdk.tensor(xn)
    r = cppops.probe(x)
    a = [np.asarray(t.tolist()) for t in r]
    np.testing.assert_array_equal(a[0], np.arange(6))
    np.testing.assert_array_equal(a[1], xn.T)
    assert r[1].is_contiguous() and r[1].stride() == (2, 1)
    np.testing.assert_array_equal(a[2], xn.T.reshape(6))
    np.testing.assert_array_equal(a[3], xn.reshape(3, 2))
    assert _C._storage_id(r[3]) == _C._storage_id(x)  # reshape gave a view
    assert _C._storage_id(r[2]) != _C._storage_id(x)
    assert r[4].dtype == backend_sdk.float64
    np.testing.assert_array_equal(a[5], xn.sum(1, keepdims=True))
    np.testing.assert_array_equal(a[6], xn.sum(0))
    np.testing.assert_array_equal(a[7], xn.argmax(1))
    np.testing.assert_array_equal(a[8], xn[1])
    np.testing.assert_array_equal(a[9], xn[:, 1:3] * 2 + 1)
    np.testing.assert_array_equal(a[10], np.broadcast_to(-xn[1], (2, 3)))
    np.testing.assert_array_equal(a[11], (3 - xn) / 2)
    np.testing.assert_array_equal(a[12], xn + 10)
    np.testing.assert_array_equal(a[13], np.repeat(xn, 2, axis=0).reshape(1, 1, 4, 3))
    # d(sum(conv(x, w)))/dx for a 1x2 kernel of 2s: 2 at the first and last column, 4 in between
    np.testing.assert_array_equal(a[14], np.array([[[[2, 4, 2], [2, 4, 2]]]]))
    np.testing.assert_array_equal(a[15], xn.reshape(6)[1:5:2])
    np.testing.assert_array_equal(a[16], 2 * xn * xn)
    assert cppops.item_of(x) == pytest.approx(float(xn.sum()))


@needs_cxx
def test_errors_from_the_generated_api_reach_python(cppops):
    with pytest.raises(RuntimeError, match=r"shape '\[7\]' is invalid for input of size 6"):
        cppops.bad_view(backend_sdk.zeros(2, 3))


# ---- every generated function reaches its kernels with their own C++ signature ----

# One argument value per C++ parameter type: enough to reach the kernels (a call may still fail on
# the values: a dim out of range is an error of the operator, not of the API).
_ARG = {
    "const Tensor&": "t()", "const std::optional<Tensor>&": "std::optional<Tensor>(t())",
    "TensorList": "std::vector<Tensor>{t(), t()}", "OptionalTensorList": "std::vector<std::optional<Tensor>>{t()}",
    "int64_t": "int64_t{1}", "std::optional<int64_t>": "std::optional<int64_t>()", "double": "0.5",
    "std::optional<double>": "std::optional<double>()", "bool": "false",
    "std::optional<bool>": "std::optional<bool>()", "const Scalar&": "Scalar(1)",
    "const std::optional<Scalar>&": "std::optional<Scalar>()", "ScalarType": "ScalarType::Float32",
    "std::optional<ScalarType>": "std::optional<ScalarType>()", "Device": "Device(DeviceType::CPU)",
    "std::optional<Device>": "std::optional<Device>()", "std::string_view": 'std::string_view("none")',
    "std::optional<std::string_view>": "std::optional<std::string_view>()",
    "IntArrayRef": "IntArrayRef(std::vector<int64_t>{1})", "std::optional<IntArrayRef>": "std::optional<IntArrayRef>()",
    "const std::optional<Generator>&": "std::optional<Generator>()", "std::array<bool, 3>": "std::array<bool, 3>{}",
    "std::optional<ArrayRef<double>>": "std::optional<ArrayRef<double>>()",
    "ArrayRef<Scalar>": "std::vector<Scalar>{1, 1}",
}

SIGNATURE_PROBE = r"""
#include <backend_sdk/extension.h>
#include <cstring>
using namespace sdk;
namespace {
Tensor t() { return sdk::ops::empty({2, 2}, ScalarType::Float32).fill_(0.5); }
int64_t run_case(int64_t i) {
  switch (i) {
CASES
    default: return -2;
  }
}
// 0: the call ran; 1: a C++ signature mismatch with a registered kernel; -1: another error.
int64_t probe(int64_t i) {
  try {
    return run_case(i);
  } catch (const std::exception& e) {
    return std::strstr(e.what(), "with a C++ signature that does not match") ? 1 : -1;
  }
}
}  // namespace
SDK_LIBRARY(cppsigs, m) { m.def("probe(int i) -> int"); }
SDK_LIBRARY_IMPL(cppsigs, CompositeExplicitAutograd, m) { m.impl("probe", &probe); }
"""


@needs_cxx
def test_every_generated_function_calls_its_kernels_with_their_signature(tmp_path, monkeypatch):
    """Each function, called through a pointer of its declared type (so every overload is reached), runs
    or fails on its argument values, never on a kernel registered with other C++ types (Note [Kernel
    argument types]): the generated types are the ones the SDK's kernels use."""
    import warnings

    fns = gen.plan(gen.cpp_schemas())
    cases = []
    for i, f in enumerate(fns):
        sig = f"{f.ret}(*)(" + ", ".join(p.cpp_type for p in f.params) + ")"
        args = ", ".join(_ARG[p.cpp_type] for p in f.params)
        cases.append(f"    case {i}: {{ auto fn = static_cast<{sig}>(&sdk::ops::{f.cpp_name}); fn({args}); return 0; }}")
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(tmp_path / "ext"))
    src = tmp_path / "cppsigs.cpp"
    src.write_text(SIGNATURE_PROBE.replace("CASES", "\n".join(cases)))
    cpp_extension.load("test_cppsigs_ext", [str(src)], is_python_module=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {f.qualified: backend_sdk.ops.cppsigs.probe(i) for i, f in enumerate(fns)}
    assert [name for name, r in results.items() if r == 1] == []
    assert -2 not in results.values()
    assert sum(r == 0 for r in results.values()) > len(fns) // 2  # most run to completion on these values
