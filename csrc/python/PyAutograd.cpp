// Bindings of the C++ autograd graph (csrc/backend_sdk/autograd/): C++ nodes as
// Python objects, Python nodes in the C++ graph (PyNode), and the graph state of
// tensors (grad_fn, output_nr, AccumulateGrad) that backend_sdk/autograd reads.
#include <atomic>
#include <pybind11/pybind11.h>

#include <backend_sdk/autograd/detail/Engine.h>
#include <backend_sdk/autograd/detail/Node.h>
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {

namespace {

using autograd::AccumulateGrad;
using autograd::Edge;
using autograd::Node;
using autograd::variable_list;

std::shared_ptr<Node> node_from_py(py::handle h);

// The Python object's weak link to its PyNode (attribute `_cpp_node`): one PyNode per Python
// node, so the engine counts its dependencies once; weak, so there is no cycle.
struct WeakNode {
  std::weak_ptr<Node> ref;
};

// A node written in Python (backend_sdk.autograd.graph.Node: Python formulas,
// autograd.Function, CopySlices) in the C++ graph: holds the Python object,
// whose apply(grads) -> grads, name() and release() it calls under the GIL.
// Its edges and sequence number are read once from the object (next_functions
// and _seq are fixed when a node is made).
// Note [Anomaly mode] (backend_sdk/autograd/_graph_api.py): while anomaly mode is on, a Python node
// runs through _graph_api._apply_with_anomaly(node, grads), which names the node's forward traceback
// when it raises and refuses NaN outputs. Set by _C._set_anomaly_apply (None: off). C++ nodes run as
// they are: they keep no forward traceback.
std::atomic<PyObject*> g_anomaly_apply{nullptr};

struct PyNode final : Node {
  explicit PyNode(PyObject* o) : obj(o) {
    Py_INCREF(o);
    py::handle h(o);
    sequence_nr_ = h.attr("_seq").cast<uint64_t>();
    n_outputs = h.attr("num_outputs").cast<size_t>();
    for (py::handle item : h.attr("next_functions")) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
      next_edges_.push_back({node_from_py(pair[0]), pair[1].cast<uint32_t>()});
    }
  }
  bool is_python() const override { return true; }
  size_t num_inputs() const override { return n_outputs; }
  size_t n_outputs = 1;
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
    for (size_t i = grads.size(); i < n_outputs; ++i) in.append(py::none());
    PyObject* anomaly = g_anomaly_apply.load(std::memory_order_acquire);
    py::object self = py::reinterpret_borrow<py::object>(obj);
    py::object out = anomaly != nullptr ? py::reinterpret_borrow<py::object>(anomaly)(self, in) : self.attr("apply")(in);
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
  py::object w = py::getattr(h, "_cpp_node", py::none());
  if (!w.is_none()) {
    if (std::shared_ptr<Node> p = w.cast<WeakNode&>().ref.lock()) return p;
  }
  auto p = std::make_shared<PyNode>(h.ptr());
  h.attr("_cpp_node") = py::cast(WeakNode{p});
  return p;
}

py::list to_py_list(const variable_list& v, size_t n) {
  py::list l;
  for (const Tensor& g : v) l.append(g.defined() ? py::cast(g) : py::none());
  for (size_t i = v.size(); i < n; ++i) l.append(py::none());
  return l;
}

variable_list from_py_list(py::handle l) {
  variable_list v;
  for (py::handle h : l) v.push_back(h.is_none() ? Tensor() : h.cast<Tensor>());
  return v;
}

// Note [Autograd engine] (autograd/detail/Engine.h): what of a run lives in Python.
// The Python functions are set once by backend_sdk.autograd.graph (never freed: nodes run at exit).
py::object* g_pre_hooks = nullptr;    // (node, grads list) -> None, mutates the list
py::object* g_post_hooks = nullptr;   // (node, outputs list, grads list) -> outputs list
py::object* g_accumulate = nullptr;   // (AccumulateGrad, grad, create_graph) -> None
py::object* g_node_pre_hooks = nullptr;  // (node, grads list) -> None, mutates the list

void engine_pre(Node& n, variable_list& grads) {
  py::gil_scoped_acquire gil;
  py::list buf = to_py_list(grads, n.num_inputs());
  (*g_pre_hooks)(node_to_py(n.shared_from_this()), buf);
  grads = from_py_list(buf);
}

void engine_post(Node& n, variable_list& outs, const variable_list& grads) {
  py::gil_scoped_acquire gil;
  py::object r = (*g_post_hooks)(node_to_py(n.shared_from_this()), to_py_list(outs, 0), to_py_list(grads, n.num_inputs()));
  outs = from_py_list(r);
}

// Whether the node has prehooks, read without calling into Python code: most nodes with Python
// state (every Python node) have none, and this runs once per node of a backward.
bool has_prehooks(Node& n) {
  PyObject* list = nullptr;
  if (auto* p = dynamic_cast<PyNode*>(&n)) {
    PyObject** dict = _PyObject_GetDictPtr(p->obj);
    if (dict != nullptr && *dict != nullptr) list = PyDict_GetItemString(*dict, "_prehooks_list");
  } else if (n.py_state != nullptr) {
    list = PyDict_GetItemString(static_cast<PyObject*>(n.py_state), "_prehooks");
  }
  return list != nullptr && PyList_Check(list) && PyList_GET_SIZE(list) > 0;
}

void engine_node_pre(Node& n, variable_list& grads) {
  py::gil_scoped_acquire gil;
  if (!has_prehooks(n)) return;
  py::list buf = to_py_list(grads, n.num_inputs());
  (*g_node_pre_hooks)(node_to_py(n.shared_from_this()), buf);
  grads = from_py_list(buf);
}

void engine_accumulate(AccumulateGrad& n, const Tensor& g, bool create_graph) {
  py::gil_scoped_acquire gil;
  (*g_accumulate)(node_to_py(n.shared_from_this()), g, create_graph);
}

const autograd::EngineHooks g_engine_hooks{&engine_pre, &engine_post, &engine_accumulate, &engine_node_pre};

autograd::edge_list edges_from_py(py::handle seq) {
  autograd::edge_list edges;
  for (py::handle item : seq) {
    py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
    edges.push_back({node_from_py(pair[0]), pair[1].cast<uint32_t>()});
  }
  return edges;
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
      .def_property_readonly(
          "_input_metadata",
          [](Node& n) {
            py::list l;
            for (const autograd::InputMetadata& m : n.input_metadata) {
              py::tuple shape(m.shape.size());
              for (size_t i = 0; i < m.shape.size(); ++i) shape[i] = py::int_(m.shape[i]);
              l.append(py::make_tuple(shape, py::reinterpret_steal<py::object>(python::dtype_object(m.dtype)),
                                   py::reinterpret_steal<py::object>(python::device_object(m.device))));
            }
            return l;
          },
          "(shape, dtype, device) of each gradient the node receives (PyTorch's node._input_metadata).")
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
      m, "AccumulateGrad", "The node at a leaf that requires grad: accumulates into its .grad.")
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
  m.def(
      "_set_anomaly_apply",
      [](py::object fn) {
        // The function is kept for the process (a node may be running it on another thread).
        PyObject* p = fn.is_none() ? nullptr : fn.release().ptr();
        g_anomaly_apply.store(p, std::memory_order_release);
      },
      py::arg("fn"), "Python nodes run through fn(node, grads) while anomaly mode is on (Note [Anomaly mode]).");
  py::class_<WeakNode>(m, "_WeakNode", "A Python node's weak link to its place in the C++ graph.");
  m.def(
      "_set_engine_callbacks",
      [](py::object pre, py::object post, py::object accumulate, py::object node_pre) {
        g_pre_hooks = new py::object(std::move(pre));
        g_post_hooks = new py::object(std::move(post));
        g_accumulate = new py::object(std::move(accumulate));
        g_node_pre_hooks = new py::object(std::move(node_pre));
        autograd::set_engine_hooks(&g_engine_hooks);
      },
      py::arg("pre"), py::arg("post"), py::arg("accumulate"), py::arg("node_pre"),
      "Installs the Python parts of a backward run (Note [Autograd engine]).");
  m.def(
      "_run_backward",
      [](py::sequence roots, py::sequence grads, bool keep_graph, bool create_graph, py::object capture,
         bool accumulate_targets) -> py::object {
        autograd::edge_list r = edges_from_py(roots);
        variable_list g = from_py_list(grads);
        const bool capturing = !capture.is_none();
        autograd::edge_list c = capturing ? edges_from_py(capture) : autograd::edge_list{};
        variable_list out;
        {
          py::gil_scoped_release no_gil;  // C++ nodes run without the GIL; Python parts take it
          out = autograd::run_backward(r, g, keep_graph, create_graph, c, accumulate_targets);
        }
        if (!capturing) return py::none();
        return to_py_list(out, 0);
      },
      py::arg("roots"), py::arg("grads"), py::arg("keep_graph"), py::arg("create_graph"), py::arg("capture") = py::none(),
      py::arg("accumulate_targets") = false,
      "Runs backward from roots ((node, output_nr) pairs) with their gradients (Note [Autograd engine]); with "
      "capture, returns the gradients reaching those edges instead of accumulating (accumulate_targets: the "
      "captured nodes run, leaves accumulate, as backward(inputs=...)).");
  m.def(
      "_accumulate_into_leaf",
      [](const Tensor& leaf, const Tensor& g, bool create_graph, bool sole_python_reference) {
        // The caller knows whether Python holds other references to grad; C++ ones (the engine's
        // buffer, the argument) die with this call, so grad may then become .grad as it is.
        autograd::accumulate_into_leaf(leaf, g, create_graph, sole_python_reference ? g.impl()->use_count() : 1);
      },
      py::arg("leaf"), py::arg("grad"), py::arg("create_graph"), py::arg("sole_python_reference") = false,
      "Adds grad into leaf.grad (Note [Autograd engine]).");
  m.def(
      "_grad",
      [](const Tensor& t) {
        const autograd::AutogradMeta* meta = autograd::maybe_autograd_meta(t);
        return meta != nullptr ? meta->grad : Tensor();
      },
      py::arg("tensor"));
  m.def(
      "_set_grad",
      [](const Tensor& t, py::object g) {
        if (g.is_none() && autograd::maybe_autograd_meta(t) == nullptr) return;
        autograd::autograd_meta_of(t).grad = g.is_none() ? Tensor() : g.cast<Tensor>();
      },
      py::arg("tensor"), py::arg("grad"));
  m.def(
      "_set_leaf_py_hooks", [](const Tensor& t, bool v) { autograd::autograd_meta_of(t).has_py_hooks = v; },
      py::arg("tensor"), py::arg("value"), "Marks a leaf whose hooks live in Python (Note [Autograd engine]).");
}

}  // namespace sdk::python
