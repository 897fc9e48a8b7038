// Python bindings for operator schemas: backend_sdk._C.FunctionSchema,
// backend_sdk._C.Argument, _C._parse_schema and _C._parse_operator_name.
//
// Types, alias annotations and defaults are exposed as their schema text
// (Argument.type == "Tensor?[]", .alias_info == "a!", .default == "[0, 1]"),
// matching what PyTorch users read in native_functions.yaml. Parse errors are
// sdk::Error(Value) and reach Python as ValueError through the translator
// installed by the module init.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <set>

#include <backend_sdk/dispatch/FunctionSchema.h>

namespace py = pybind11;

namespace {

std::string repr_of(const char* cls, const std::string& text) {
  return std::string(cls) + "(" + py::repr(py::str(text)).cast<std::string>() + ")";
}

}  // namespace

void init_schema_bindings(py::module_& m) {
  // torch._C._AliasInfo: is_write, before_set, after_set. It also compares equal to its text ("a!"), which
  // is how SDK code written before it existed reads alias annotations.
  py::class_<sdk::AliasInfo>(m, "_AliasInfo", "The alias annotation of an argument or return, e.g. (a!).")
      .def_readonly("is_write", &sdk::AliasInfo::is_write)
      .def_property_readonly(
          "before_set",
          [](const sdk::AliasInfo& a) { return std::set<std::string>(a.before_sets.begin(), a.before_sets.end()); },
          "The alias sets before the call ({'a'} for a!).")
      .def_property_readonly(
          "after_set",
          [](const sdk::AliasInfo& a) {
            // Without '->' the sets are the same after the call, as PyTorch reports them.
            const auto& sets = a.after_sets.empty() ? a.before_sets : a.after_sets;
            return std::set<std::string>(sets.begin(), sets.end());
          },
          "The alias sets after the call ({'*'} for 'a -> *').")
      .def("__str__", &sdk::AliasInfo::str)
      .def("__repr__", [](const sdk::AliasInfo& a) { return repr_of("_AliasInfo", a.str()); })
      .def("__eq__",
           [](const sdk::AliasInfo& a, py::handle other) {
             if (PyUnicode_Check(other.ptr())) return a.str() == other.cast<std::string>();
             if (py::isinstance<sdk::AliasInfo>(other)) return a == other.cast<sdk::AliasInfo>();
             return false;
           })
      .def("__hash__", [](const sdk::AliasInfo& a) { return py::hash(py::str(a.str())); });
  py::class_<sdk::Argument>(m, "Argument", "One argument or return of a FunctionSchema.")
      .def_property_readonly("name", [](const sdk::Argument& a) { return a.name; },
                             "Argument name; '' for an unnamed return.")
      .def_property_readonly("type", [](const sdk::Argument& a) { return a.type->str(); },
                             "Schema text of the type, without alias annotation, e.g. 'Tensor?[]'.")
      .def_property_readonly("default",
                             [](const sdk::Argument& a) -> std::optional<std::string> { return a.default_text; },
                             "Canonical text of the default value, or None when there is none.")
      .def_property_readonly("kwarg_only", [](const sdk::Argument& a) { return a.kwarg_only; })
      .def_property_readonly(
          "alias_info", [](const sdk::Argument& a) { return a.alias_info; },
          "The alias annotation (an _AliasInfo, whose str() is the text without parentheses: 'a!', 'a', "
          "'a -> *'), or None.")
      .def_property_readonly("is_write", [](const sdk::Argument& a) { return a.is_write(); })
      .def_property_readonly("fixed_size",
                             [](const sdk::Argument& a) -> std::optional<int64_t> {
                               const sdk::Type* t = a.type.get();
                               if (t->kind == sdk::TypeKind::Optional) t = t->elem.get();
                               if (t->kind == sdk::TypeKind::List) return t->fixed_size;
                               return std::nullopt;
                             },
                             "N for 'int[N]' / 'int[N]?' types, else None.")
      .def("__str__", &sdk::Argument::str)
      .def("__repr__", [](const sdk::Argument& a) { return repr_of("Argument", a.str()); })
      .def("__eq__", [](const sdk::Argument& a, const sdk::Argument& b) { return a == b; },
           py::is_operator())
      .def("__hash__", [](const sdk::Argument& a) { return py::hash(py::str(a.str())); });

  py::class_<sdk::FunctionSchema>(m, "FunctionSchema",
                                  "A parsed operator schema, e.g. "
                                  "'aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor'.")
      .def(py::init([](const std::string& text) { return sdk::parse_schema(text); }), py::arg("schema"))
      .def_readonly("ns", &sdk::FunctionSchema::ns)
      .def_readonly("name", &sdk::FunctionSchema::name)
      .def_readonly("overload_name", &sdk::FunctionSchema::overload_name)
      .def_property_readonly("qualified_name", &sdk::FunctionSchema::qualified_name)
      .def_readonly("arguments", &sdk::FunctionSchema::arguments)
      .def_readonly("returns", &sdk::FunctionSchema::returns)
      .def_readonly("is_vararg", &sdk::FunctionSchema::is_vararg)
      .def_readonly("is_varret", &sdk::FunctionSchema::is_varret)
      .def_property_readonly("is_mutable", &sdk::FunctionSchema::is_mutable)
      .def_property_readonly("is_out_fn", &sdk::FunctionSchema::is_out_fn)
      .def_property_readonly("is_inplace", &sdk::FunctionSchema::is_inplace)
      .def_property_readonly("num_positional", &sdk::FunctionSchema::num_positional)
      .def_property_readonly("mutable_argument_indices", &sdk::FunctionSchema::mutable_argument_indices)
      .def("is_mutable_arg", &sdk::FunctionSchema::is_mutable_arg, py::arg("index"))
      .def("argument_index",
           [](const sdk::FunctionSchema& s, const std::string& name) { return s.argument_index(name); },
           py::arg("name"), "Index of the argument called `name`, or None.")
      .def("__str__", &sdk::FunctionSchema::str)
      .def("__repr__", [](const sdk::FunctionSchema& s) { return repr_of("FunctionSchema", s.str()); })
      .def("__eq__", [](const sdk::FunctionSchema& a, const sdk::FunctionSchema& b) { return a == b; },
           py::is_operator())
      .def("__hash__", [](const sdk::FunctionSchema& s) { return py::hash(py::str(s.str())); });

  m.def("_parse_schema", [](const std::string& text) { return sdk::parse_schema(text); }, py::arg("schema"),
        "Parses an operator schema in PyTorch's grammar; raises ValueError on malformed input.");
  // OpOverload._schema is a FunctionSchema (as PyTorch's); code that parses it again gets it back.
  m.def("_parse_schema", [](const sdk::FunctionSchema& s) { return s; }, py::arg("schema"));
  m.def("_parse_operator_name", [](const std::string& text) { return sdk::parse_operator_name(text); },
        py::arg("name"), "Splits 'ns::name.overload' into (ns, name, overload); missing parts are ''.");
}
