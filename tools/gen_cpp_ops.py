"""Writes the C++ operator API: csrc/backend_sdk/ops/Operators.h and Operators.cpp.

One ``sdk::ops::`` function per aten overload the SDK defines in C++, generated
from the registered schemas as ATen's Functions.h is from native_functions.yaml:

- the C++ name is the operator's name (``add``, ``add_``); overloads become C++
  overloads, except where two would take the same parameter types: the later
  one (in overload-name order) is then ``<name>_<overload>``;
- an out= overload is ``<name>_out(out..., args...)``: its out arguments first,
  as ``at::add_out`` takes them;
- parameters use the canonical C++ type of each schema type (Note [Kernel
  argument types], dispatch/Boxing.h); a default is kept when every later
  parameter keeps one too, and the factory arguments (dtype, layout, device,
  pin_memory) and everything before them take none, as in ATen's unpacked
  TensorOptions overloads (so ``arange(start, end)`` is not ambiguous);
- each call goes through a cached typed operator handle (one key-set
  computation and one table lookup); an overload with an argument type that has
  no unboxed form (``bool[3]``, ``float[]?``, ``Scalar[]``) is called boxed.

The overloads hand-written in Functions.h, MathFunctions.h, LinearAlgebra.h and
Random.h (HANDWRITTEN) keep their declarations there and are not generated.

Run it from the checkout after building, whenever aten operators are added::

    PYTHONPATH=. python tools/gen_cpp_ops.py          # writes the two files
    PYTHONPATH=. python tools/gen_cpp_ops.py --check  # exit 1 if they are stale

tests/test_cpp_operators.py regenerates the text and compares it with the
committed files, so they cannot drift from the schemas.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = ROOT / "csrc" / "backend_sdk" / "ops" / "Operators.h"
SOURCE = ROOT / "csrc" / "backend_sdk" / "ops" / "Operators.cpp"

# Overloads with a hand-written function in a public ops header (same name, an
# equal or convenience signature): generating them too would make calls ambiguous.
HANDWRITTEN: frozenset[str] = frozenset({
    # Functions.h (its short forms of empty.memory_format, empty_strided and _to_copy take fewer
    # arguments than the generated ones, which take every factory argument: both exist)
    "add.Tensor", "add.Scalar", "add_.Tensor", "add.out",
    "mul.Tensor", "mul.Scalar", "mul_.Tensor", "mul.out", "copy_", "fill_.Scalar", "resize_", "view",
    "as_strided", "index.Tensor", "index_put_", "index_put", "index_select", "gather", "scatter.src",
    "scatter.value", "scatter_add", "masked_select", "nonzero", "take", "flip", "to.dtype",
    "_local_scalar_dense",
    # MathFunctions.h
    "sub.Tensor", "rsub.Scalar", "div.Tensor", "div.Scalar", "neg", "exp", "tanh", "sigmoid", "cos", "sin",
    "pow.Tensor_Scalar", "gt.Scalar", "t", "sum.dim_IntList",
    # LinearAlgebra.h
    "mm", "bmm", "addmm", "dot", "matmul", "linear",
    # Random.h (rand, randn and randint there are short forms, as empty's)
    "uniform_", "normal_", "bernoulli_.float",
})

CPP_KEYWORDS = frozenset(
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char class compl const constexpr "
    "const_cast continue decltype default delete do double dynamic_cast else enum explicit export extern false "
    "float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or "
    "or_eq private protected public register reinterpret_cast return short signed sizeof static static_assert "
    "static_cast struct switch template this thread_local throw true try typedef typeid typename union "
    "unsigned using virtual void volatile wchar_t while xor xor_eq".split())

# Schema type -> (canonical C++ parameter type, passes unboxed).
_SIMPLE: dict[str, str] = {
    "Tensor": "const Tensor&", "Tensor?": "const std::optional<Tensor>&",
    "Tensor[]": "TensorList", "Tensor?[]": "OptionalTensorList",
    "int": "int64_t", "SymInt": "int64_t", "int?": "std::optional<int64_t>", "SymInt?": "std::optional<int64_t>",
    "float": "double", "float?": "std::optional<double>", "bool": "bool", "bool?": "std::optional<bool>",
    "Scalar": "const Scalar&", "Scalar?": "const std::optional<Scalar>&",
    "ScalarType": "ScalarType", "ScalarType?": "std::optional<ScalarType>",
    "Device": "Device", "Device?": "std::optional<Device>",
    "str": "std::string_view", "str?": "std::optional<std::string_view>",
    "Layout": "int64_t", "Layout?": "std::optional<int64_t>",
    "MemoryFormat": "int64_t", "MemoryFormat?": "std::optional<int64_t>",
    "Generator?": "const std::optional<Generator>&",
}
_RETURNS: dict[str, str] = {"Tensor": "Tensor", "Tensor[]": "std::vector<Tensor>", "SymInt": "int64_t",
                            "int": "int64_t", "bool": "bool", "float": "double", "Scalar": "Scalar"}
_FACTORY_ARGS = ("dtype", "layout", "device", "pin_memory")
_SCALAR_TYPE_NAMES = {"long": "Int64", "int": "Int32", "float": "Float32", "double": "Float64", "bool": "Bool",
                      "half": "Float16", "bfloat16": "BFloat16", "short": "Int16", "char": "Int8", "byte": "UInt8"}
_REDUCTIONS = {"None": "0", "Mean": "1", "Sum": "2"}


@dataclass
class Param:
    """One C++ parameter of a generated function."""

    name: str
    schema_type: str
    cpp_type: str
    unboxed: bool
    default: str | None


def cpp_type(schema_type: str) -> tuple[str, bool]:
    """The C++ parameter type of a schema type and whether the typed (unboxed) call can pass it."""
    if schema_type in _SIMPLE:
        return _SIMPLE[schema_type], True
    m = re.fullmatch(r"(int|SymInt)(?:\[\d*\])(\?)?", schema_type)
    if m:
        return ("std::optional<IntArrayRef>" if m.group(2) else "IntArrayRef"), True
    m = re.fullmatch(r"bool\[(\d+)\]", schema_type)
    if m:
        return f"std::array<bool, {m.group(1)}>", False
    if schema_type == "float[]?":
        return "std::optional<ArrayRef<double>>", False
    if schema_type == "Scalar[]":
        return "ArrayRef<Scalar>", False
    raise ValueError(f"gen_cpp_ops: no C++ type for schema type {schema_type!r}")


def cpp_default(schema_type: str, text: str) -> str:
    """The C++ default argument for a schema default's canonical text."""
    base = schema_type.rstrip("?")
    if text == "None":
        return "{}"
    if text in ("True", "False"):
        return text.lower()
    if base.startswith(("int[", "SymInt[")):
        if text.startswith("["):
            return "{" + text[1:-1] + "}"
        n = int(base[base.index("[") + 1:-1] or 1)  # `int[2] stride=1` is [1, 1]
        return "{" + ", ".join([text] * n) + "}"
    if base == "ScalarType" and text in _SCALAR_TYPE_NAMES:
        return f"ScalarType::{_SCALAR_TYPE_NAMES[text]}"
    if base == "int" and text in _REDUCTIONS:
        return _REDUCTIONS[text]
    if base == "str":
        return '"' + text.strip("'\"") + '"'
    if re.fullmatch(r"-?\d+", text):
        return text
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?", text):
        return text if ("." in text or "e" in text) else text + ".0"
    raise ValueError(f"gen_cpp_ops: no C++ default for {schema_type} = {text!r}")


def ident(name: str) -> str:
    """A C++ identifier for an argument name."""
    return name + "_" if name in CPP_KEYWORDS else name


@dataclass
class Function:
    """One generated C++ function: its name, parameters in C++ order, and how it calls the operator."""

    schema: str  # the schema text, for the comment
    qualified: str  # aten::name.overload
    cpp_name: str
    params: list[Param]  # C++ order
    call_order: list[int]  # schema order of the C++ params
    ret: str

    @property
    def unboxed(self) -> bool:
        return all(p.unboxed for p in self.params)

    def key(self) -> tuple[str, ...]:
        return tuple(p.cpp_type for p in self.params)


def make_function(schema) -> Function:
    """The Function for one FunctionSchema (backend_sdk._C.FunctionSchema)."""
    args = list(schema.arguments)
    outs = [i for i, a in enumerate(args) if a.kwarg_only and a.is_write and schema.is_out_fn]
    order = outs + [i for i in range(len(args)) if i not in outs]
    names = [a.name for a in args]
    factory_end = -1
    for i in range(len(names) - len(_FACTORY_ARGS) + 1):
        if tuple(names[i:i + len(_FACTORY_ARGS)]) == _FACTORY_ARGS:
            factory_end = order.index(i + len(_FACTORY_ARGS) - 1)
    params: list[Param] = []
    for i in order:
        a = args[i]
        ty, unboxed = cpp_type(a.type)
        default = None if a.default is None else cpp_default(a.type, a.default)
        params.append(Param(ident(a.name), a.type, ty, unboxed, default))
    keep = True
    for pos in range(len(params) - 1, -1, -1):
        keep = keep and params[pos].default is not None and pos > factory_end
        if not keep:
            params[pos].default = None
    rets = [r.type for r in schema.returns]
    if not rets:
        ret = "void"
    elif len(rets) == 1:
        ret = _RETURNS[rets[0]]
    else:
        ret = "std::tuple<" + ", ".join(_RETURNS[r] for r in rets) + ">"
    cpp_name = schema.name + "_out" if outs else schema.name
    return Function(str(schema), schema.qualified_name, cpp_name, params,
                    [order.index(i) for i in range(len(args))], ret)


def plan(schemas) -> list[Function]:
    """The functions for the given schemas, renamed where two would take the same parameter types."""
    fns: list[Function] = []
    seen: dict[str, set[tuple[str, ...]]] = {}
    for s in sorted(schemas, key=lambda s: (s.name, s.overload_name)):
        if s.qualified_name[len("aten::"):] in HANDWRITTEN:
            continue
        f = make_function(s)
        if f.key() in seen.setdefault(f.cpp_name, set()):
            f.cpp_name = f"{f.cpp_name}_{s.overload_name}"
            if f.key() in seen.setdefault(f.cpp_name, set()):
                raise ValueError(f"gen_cpp_ops: {f.qualified} clashes with another overload as {f.cpp_name}")
        seen[f.cpp_name].add(f.key())
        fns.append(f)
    return fns


def _decl(f: Function, with_defaults: bool) -> str:
    ps = ", ".join(f"{p.cpp_type} {p.name}" + (f" = {p.default}" if with_defaults and p.default else "")
                   for p in f.params)
    return f"{f.ret} {f.cpp_name}({ps})"


def _box(p: Param) -> str:
    """Expression that boxes parameter p (for the boxed calls)."""
    if p.schema_type.startswith("bool["):
        return f"detail::box_bools({p.name})"
    if p.schema_type == "Scalar[]":
        return f"detail::box_scalars({p.name})"
    if p.schema_type == "float[]?":
        return f"detail::box_doubles({p.name})"
    return f"boxing::to_ivalue({p.name})"


def _definition(f: Function) -> str:
    schema_order = [f.params[i] for i in f.call_order]
    lines = [_decl(f, False) + " {"]
    if f.unboxed:
        sig = f"{f.ret}(" + ", ".join(p.cpp_type for p in schema_order) + ")"
        lines.append(f'  static const auto op = detail::typed<{sig}>("{f.qualified}");')
        lines.append("  return op.call(" + ", ".join(p.name for p in schema_order) + ");")
    else:
        lines.append(f'  static const OperatorHandle op = detail::handle("{f.qualified}");')
        lines.append("  Stack s;")
        lines.append(f"  s.reserve({len(schema_order)});")
        for p in schema_order:
            lines.append(f"  s.push_back({_box(p)});")
        lines.append("  op.call_boxed(&s);")
        if f.ret != "void":
            lines.append(f"  return boxing::Returns<{f.ret}>::pop(s);")
    lines.append("}")
    return "\n".join(lines)


_HEADER_TOP = """\
// The C++ operator API of the aten operators: one function per overload, generated from the
// registered schemas by tools/gen_cpp_ops.py (see its docstring for the naming and default rules).
// DO NOT EDIT: rerun the script after adding operators; tests/test_cpp_operators.py fails when
// this file is stale.
//
// Each function calls the dispatcher, so it reaches whichever kernel is registered for the
// arguments' backend (CPU, Meta, a vendor's device, a Python kernel), with autograd and the other
// dispatch keys in between, like at::add. Out= overloads take their outputs first
// (sdk::ops::sum_out(out, self, dim)). The factory overloads take their dtype, layout, device and
// pin_memory explicitly (pass {} for "default"); the short forms empty(size, dtype, device) and
// friends are in Functions.h.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/LinearAlgebra.h>
#include <backend_sdk/ops/MathFunctions.h>
#include <backend_sdk/ops/Random.h>
#include <backend_sdk/tensor/Generator.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk {
using TensorList = ArrayRef<Tensor>;                   // Tensor[] (as in dispatch/Boxing.h)
using OptionalTensorList = ArrayRef<std::optional<Tensor>>;  // Tensor?[]
}  // namespace sdk

namespace sdk::ops {
"""

_SOURCE_TOP = """\
// Generated by tools/gen_cpp_ops.py from the registered aten schemas: the definitions of
// Operators.h. DO NOT EDIT.
#include <backend_sdk/ops/Operators.h>

#include <backend_sdk/dispatch/Dispatcher.h>

namespace sdk::ops {

namespace detail {
namespace {
OperatorHandle handle(const char* name) { return Dispatcher::singleton().find_schema_or_throw(name); }
template <typename Sig>
OperatorHandle::Typed<Sig> typed(const char* name) {
  return handle(name).typed<Sig>();
}
template <size_t N>
IValue box_bools(const std::array<bool, N>& v) {
  GenericList l(v.begin(), v.end());
  return IValue(std::move(l));
}
IValue box_scalars(ArrayRef<Scalar> v) {
  GenericList l;
  l.reserve(v.size());
  for (const Scalar& s : v) l.emplace_back(s);
  return IValue(std::move(l));
}
IValue box_doubles(std::optional<ArrayRef<double>> v) {
  if (!v) return IValue();
  return IValue(v->vec());
}
}  // namespace
}  // namespace detail

"""


def render(schemas) -> tuple[str, str]:
    """The text of Operators.h and Operators.cpp for the given schemas."""
    fns = plan(schemas)
    h = [_HEADER_TOP]
    for f in fns:
        h.append(f"// {f.schema}\nSDK_API {_decl(f, True)};")
    h.append("\n}  // namespace sdk::ops\n")
    c = [_SOURCE_TOP]
    for f in fns:
        c.append(_definition(f) + "\n")
    c.append("}  // namespace sdk::ops\n")
    return "\n".join(h), "\n".join(c)


def cpp_schemas() -> list:
    """The schemas of the aten overloads defined in C++ (not those Python defines at import)."""
    import backend_sdk  # noqa: F401  (loads the operator library)
    from backend_sdk import _C

    out = []
    for name in _C._registered_operators():
        if not name.startswith("aten::"):
            continue
        debug = next((ln for ln in _C._dispatch_dump(name).splitlines() if ln.startswith("debug: ")), "")
        if not re.search(r"\.cpp:\d+$", debug):
            continue
        base, _, overload = name[len("aten::"):].partition(".")
        out.append(getattr(getattr(backend_sdk.ops.aten, base), overload or "default")._schema)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the committed files differ")
    ns = p.parse_args(argv)
    header, source = render(cpp_schemas())
    if ns.check:
        stale = [str(f) for f, t in ((HEADER, header), (SOURCE, source)) if not f.exists() or f.read_text() != t]
        if stale:
            print(f"stale (rerun tools/gen_cpp_ops.py): {stale}", file=sys.stderr)
            return 1
        return 0
    HEADER.write_text(header)
    SOURCE.write_text(source)
    print(f"wrote {HEADER.name} and {SOURCE.name} ({header.count('SDK_API ')} functions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
