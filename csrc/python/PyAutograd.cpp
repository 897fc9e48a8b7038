// Bindings of the C++ autograd graph (csrc/backend_sdk/autograd/): C++ nodes as
// Python objects, Python nodes in the C++ graph (PyNode), and the graph state of
// tensors (grad_fn, output_nr, AccumulateGrad) that backend_sdk/autograd reads.
#include <pybind11/pybind11.h>

#include <backend_sdk/autograd/detail/Node.h>
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {

namespace {

using autograd::AccumulateGrad;
using autograd::Edge;
using autograd::Node;
using autograd::variable_list;

// A node written in Python (backend_sdk.autograd.graph.Node: Python formulas,
// autograd.Function, CopySlices) in the C++ graph: holds the Python object,
// whose apply(grads) -> grads, name() and release() it calls under the GIL.
struct PyNode final : Node {
  explicit PyNode(PyObject* o) : obj(o) { Py_INCREF(o); }
  ~PyNode() override {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(obj);
    PyGILState_Release(s);
  }
  variable_list apply(variable_list&& grads) override {
    py::gil_scoped_acquire gil;
    py::list in;
    for (const Tensor& g : grads) in.append(g.defined() ? py::cast(g) : py::none());
    py::object out = py::reinterpret_borrow<py::object>(obj).attr("apply")(in);
    variable_list result;
    for (py::handle h : out) result.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
    return result;
  }
  std::string name() const override {
    py::gil_scoped_acquire gil;
    return py::str(py::reinterpret_borrow<py::object>(obj).attr("name")());
  }
  void release_variables() override {
    py::gil_scoped_acquire gil;
    py::reinterpret_borrow<py::object>(obj).attr("release")();
  }
  PyObject* obj;
};

py::object node_to_py(const std::shared_ptr<Node>& n) {
  if (!n) return py::none();
  if (auto* p = dynamic_cast<PyNode*>(n.get())) return py::reinterpret_borrow<py::object>(p->obj);
  return py::cast(n);  // pybind11 finds the live wrapper of the same node, if any
}

std::shared_ptr<Node> node_from_py(py::handle h) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<Node>(h)) return h.cast<std::shared_ptr<Node>>();
  return std::make_shared<PyNode>(h.ptr());
}

py::tuple edge_to_py(const Edge& e) {
  if (!e.is_valid()) return py::make_tuple(py::none(), 0);
  return py::make_tuple(node_to_py(e.function), e.input_nr);
}

// Note [Node Python state] (autograd/detail/Node.h): hooks and retain_grad references live in
// a dict the node owns, so they outlive the node's Python wrapper.
py::dict node_state(Node& n) {
  if (n.py_state == nullptr) n.py_state = py::dict().release().ptr();
  return py::reinterpret_borrow<py::dict>(static_cast<PyObject*>(n.py_state));
}

py::object state_get(Node& n, const char* key) {
  if (n.py_state == nullptr) return py::none();
  py::dict d = node_state(n);
  return d.contains(key) ? py::object(d[key]) : py::object(py::none());
}

void release_node_state(void* state) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE s = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(state));
  PyGILState_Release(s);
}

}  // namespace

void init_autograd(py::module_& m) {
  Node::release_py_state = &release_node_state;
  py::class_<Node, std::shared_ptr<Node>>(m, "_CppNode", "A backward node of the C++ autograd graph.")
      .def("name", &Node::name, "The node's name, e.g. ``MulBackward0``.")
      .def_property_readonly(
          "next_functions",
          [](Node& n) {
            py::tuple t(n.next_edges().size());
            for (size_t i = 0; i < n.next_edges().size(); ++i) t[i] = edge_to_py(n.next_edges()[i]);
            return t;
          },
          "One (node, input_nr) pair per differentiable input ((None, 0) where none).")
      .def_property_readonly("_seq", &Node::sequence_nr)
      .def_property_readonly("num_outputs", &Node::num_inputs, "Number of gradients the node receives.")
      .def(
          "apply",
          [](Node& n, py::sequence grads) {
            variable_list in;
            for (py::handle h : grads) in.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
            variable_list out = n.apply(std::move(in));
            py::list r;
            for (const Tensor& g : out) r.append(g.defined() ? py::cast(g) : py::none());
            return r;
          },
          py::arg("grads"), "Runs the node: one gradient per output -> one per next function.")
      .def("release", &Node::release_variables, "Frees what the node saved for backward.")
      .def_property(
          "_pre_hooks", [](Node& n) { return state_get(n, "_pre_hooks"); },
          [](Node& n, py::object v) { node_state(n)["_pre_hooks"] = v; })
      .def_property(
          "_retains", [](Node& n) { return state_get(n, "_retains"); },
          [](Node& n, py::object v) { node_state(n)["_retains"] = v; })
      .def_property(
          "_hooks", [](Node& n) { return state_get(n, "_hooks"); },
          [](Node& n, py::object v) { node_state(n)["_hooks"] = v; })
      .def_property(
          "_prehooks", [](Node& n) { return state_get(n, "_prehooks"); },
          [](Node& n, py::object v) { node_state(n)["_prehooks"] = v; })
      .def("__hash__", [](Node& n) { return std::hash<const void*>()(&n); })
      .def("__eq__", [](Node& a, py::object b) {
        return py::isinstance<Node>(b) && &a == b.cast<Node*>();
      });
  py::class_<AccumulateGrad, Node, std::shared_ptr<AccumulateGrad>>(
      m, "_AccumulateGrad", "The node at a leaf that requires grad: accumulates into its .grad.")
      .def_property_readonly("variable", [](AccumulateGrad& a) { return a.variable; });

  m.def("_grad_fn", [](const Tensor& t) { return node_to_py(autograd::grad_fn(t)); }, py::arg("tensor"));
  m.def("_output_nr", [](const Tensor& t) { return autograd::output_nr(t); }, py::arg("tensor"));
  m.def("_gradient_edge", [](const Tensor& t) { return edge_to_py(autograd::gradient_edge(t)); },
        py::arg("tensor"), "(grad_fn, output_nr), (AccumulateGrad, 0) for a leaf that requires grad, or (None, 0).");
  m.def("_grad_accumulator", [](const Tensor& t) { return node_to_py(autograd::grad_accumulator(t)); },
        py::arg("tensor"));
  m.def(
      "_set_history",
      [](const Tensor& t, py::object node, uint32_t nr) { autograd::set_history(t, node_from_py(node), nr); },
      py::arg("tensor"), py::arg("node"), py::arg("output_nr"),
      "Makes tensor output output_nr of node (a C++ or Python node); None makes it a leaf.");
  m.def("_next_sequence_nr", &autograd::next_sequence_nr);
}

}  // namespace sdk::python
