// Bindings of the C++ derivative formula table (Note [Derivative formula table],
// csrc/backend_sdk/autograd/detail/Formulas.h) for the Python recording hook
// (backend_sdk/autograd/_record.py): in-place variants of an operator with a C++
// formula are recorded in Python (leaf / view checks, CopySlices) and their node
// runs the functional overload's C++ formula through _autograd_run_formula.
#include <pybind11/pybind11.h>

#include <backend_sdk/autograd/detail/Formulas.h>
#include "python/PyArgs.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {

namespace {

const FunctionSchema& schema_of(const std::string& qualname) {
  std::optional<OperatorHandle> op = Dispatcher::singleton().find_schema(qualname);
  SDK_CHECK_VALUE(op && op->entry().has_schema(), "_autograd_run_formula(): no operator '", qualname, "'");
  return op->entry().schema_record()->schema;
}

autograd::InputMetadata meta_of(py::handle h, const std::string& qualname, size_t i) {
  autograd::InputMetadata m;
  m.defined = true;
  py::tuple t = py::reinterpret_borrow<py::tuple>(h);
  SDK_CHECK_TYPE(t.size() == 3, "_autograd_run_formula(): ", qualname, " metadata ", i,
                 " must be (shape, dtype, device)");
  for (py::handle s : t[0]) m.shape.push_back(s.cast<int64_t>());
  SDK_CHECK_TYPE(parse_dtype(t[1].ptr(), &m.dtype), "_autograd_run_formula(): ", qualname, " metadata ", i,
                 ": not a dtype");
  SDK_CHECK_TYPE(parse_device(t[2].ptr(), &m.device), "_autograd_run_formula(): ", qualname, " metadata ", i,
                 ": not a device");
  return m;
}

Tensor tensor_or_undefined(py::handle h) { return h.is_none() ? Tensor() : h.cast<Tensor>(); }

}  // namespace

void init_formulas(py::module_& m) {
  m.def(
      "_autograd_formula_saves",
      [](const std::string& qualname) -> py::object {
        const autograd::FormulaInfo* info = autograd::formula_for_name(qualname);
        if (info == nullptr) return py::none();
        py::list names, tensor_names, saves;
        for (size_t i = 0; i < info->names.size(); ++i) {
          names.append(py::str(info->names[i]));
          if (info->saved[i]) saves.append(py::str(info->names[i]));
        }
        for (uint16_t pos : info->tensor_args) tensor_names.append(py::str(info->names[pos]));
        if (info->saves_result) saves.append(py::str("result"));
        return py::make_tuple(py::tuple(names), py::tuple(tensor_names), py::tuple(saves),
                              py::str(info->formula->node_name));
      },
      py::arg("qualname"),
      "(argument names, tensor argument names, saved names and \"result\", node name) of the overload's C++ "
      "formula, or None if it has none.");
  m.def(
      "_autograd_not_differentiable_ops",
      [] {
        py::list out;
        for (const std::string& n : autograd::not_differentiable_names()) out.append(py::str(n));
        return out;
      },
      "The overloads derivatives.def declares not differentiable (Note [Operators that are not differentiable]).");
  m.def(
      "_autograd_run_formula",
      [](const std::string& qualname, py::sequence args, py::sequence metas, py::sequence grads,
         py::sequence results, py::sequence needs) -> py::list {
        const autograd::FormulaInfo* info = autograd::formula_for_name(qualname);
        SDK_CHECK_VALUE(info != nullptr, "_autograd_run_formula(): '", qualname, "' has no C++ formula");
        const FunctionSchema& s = schema_of(qualname);
        SDK_CHECK_VALUE(py::len(args) == s.arguments.size() && py::len(metas) == s.arguments.size(),
                        "_autograd_run_formula(): ", qualname, " takes ", s.arguments.size(), " arguments");
        std::vector<IValue> iv(s.arguments.size());
        std::vector<autograd::InputMetadata> meta(s.arguments.size());
        for (size_t i = 0; i < s.arguments.size(); ++i) {
          py::handle a = args[i];
          if (!a.is_none()) {
            SDK_CHECK_TYPE(to_ivalue(a.ptr(), *s.arguments[i].type, &iv[i]), "_autograd_run_formula(): ", qualname,
                           " argument '", s.arguments[i].name, "' has type ", python_type_name(a.ptr()));
          }
          if (!py::handle(metas[i]).is_none()) meta[i] = meta_of(metas[i], qualname, i);
        }
        autograd::variable_list g, r;
        for (py::handle h : grads) g.push_back(tensor_or_undefined(h));
        for (py::handle h : results) r.push_back(tensor_or_undefined(h));
        std::vector<bool> nd;
        for (py::handle h : needs) nd.push_back(h.cast<bool>());
        autograd::variable_list out =
            autograd::run_formula_for(*info, std::move(iv), std::move(meta), std::move(g), std::move(r), std::move(nd));
        py::list res;
        for (const Tensor& t : out) res.append(t.defined() ? py::cast(t) : py::none());
        return res;
      },
      py::arg("qualname"), py::arg("args"), py::arg("metas"), py::arg("grads"), py::arg("results"), py::arg("needs"),
      "Runs the C++ formula of the overload outside a graph: one gradient per tensor argument (None where none).");
}

}  // namespace sdk::python
