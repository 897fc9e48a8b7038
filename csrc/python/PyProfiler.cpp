// backend_sdk._C._profiler: the record-function hook's session control and
// its events (Note [Record function], dispatch/RecordFunction.h), for
// backend_sdk.profiler.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/RecordFunction.h>
#include <backend_sdk/dispatch/RecordFunctionExtras.h>
#include "python/PyRuntime.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

// A record_function scope held by Python (enter .. exit; exit twice is harmless).
class PyRecordScope {
 public:
  explicit PyRecordScope(const std::string& name) : guard_(std::make_unique<profiler::RecordFunctionGuard>(name)) {}
  void exit() { guard_.reset(); }

 private:
  std::unique_ptr<profiler::RecordFunctionGuard> guard_;
};

// Note [Record function extras] (dispatch/RecordFunctionExtras.h): the Python stack of the calling
// thread, innermost frame first, as "file(line): function"; empty when the thread does not hold the GIL
// (a C++ thread, or Python code that released it around the call).
std::vector<std::string> python_stack() {
  std::vector<std::string> out;
  if (!Py_IsInitialized() || !PyGILState_Check()) return out;
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  constexpr size_t kMaxDepth = 128;
  while (f != nullptr && out.size() < kMaxDepth) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    const int line = PyFrame_GetLineNumber(f);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    if (file == nullptr) PyErr_Clear();
    const char* name = PyUnicode_AsUTF8(code->co_name);
    if (name == nullptr) PyErr_Clear();
    out.push_back(std::string(file ? file : "?") + "(" + std::to_string(line) + "): " + (name ? name : "?"));
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return out;
}

}  // namespace

void init_profiler(py::module_& parent) {
  py::module_ m = parent.def_submodule("_profiler", "The dispatcher's record-function hook (Note [Record function]).");
  m.attr("RECORD_SHAPES") = static_cast<uint32_t>(profiler::kRecordShapes);
  m.attr("RECORD_MEMORY") = static_cast<uint32_t>(profiler::kRecordMemory);
  m.attr("RECORD_DEVICE") = static_cast<uint32_t>(profiler::kRecordDevice);
  m.attr("EVENT_USER_SCOPE") = static_cast<uint32_t>(profiler::kEventUserScope);
  m.attr("EVENT_PYTHON_KERNEL") = static_cast<uint32_t>(profiler::kEventPythonKernel);
  m.attr("EVENT_FALLBACK") = static_cast<uint32_t>(profiler::kEventFallback);
  m.attr("EVENT_BOXED_KERNEL") = static_cast<uint32_t>(profiler::kEventBoxedKernel);
  m.def(
      "start",
      [](uint32_t flags, const std::vector<std::string>& backends) {
        std::vector<DeviceType> types;
        for (const auto& b : backends) types.push_back(parse_backend(b));
        profiler::start(flags, types);
      },
      py::arg("flags"), py::arg("backends") = std::vector<std::string>(),
      "Starts a session (ValueError if one is active); backends get correlation ids with RECORD_DEVICE.");
  m.attr("RECORD_STACK") = static_cast<uint32_t>(profiler::kRecordStack);
  // The Python stack hook stays installed: it runs only for sessions started with RECORD_STACK.
  profiler::set_stack_hook(&python_stack);
  m.def("stop", &profiler::stop);
  m.def(
      "collect_extras",
      [] {
        std::vector<profiler::EventExtras> extras;
        {
          py::gil_scoped_release nogil;
          extras = profiler::collect_event_extras();
        }
        py::dict out;  // id -> (sequence_nr, stack, concrete_inputs)
        for (auto& x : extras) {
          out[py::int_(x.id)] = py::make_tuple(x.sequence_nr, py::cast(x.stack), py::cast(x.concrete_inputs));
        }
        return out;
      },
      "Note [Record function extras] of the current or last session's events: id -> (sequence_nr, stack, "
      "concrete_inputs).");
  m.def("is_enabled", [] { return profiler::g_record_function_flags.load() != 0; });
  m.def("now_ns", &profiler::now_ns, "The steady clock of the events (time.monotonic_ns on Linux).");
  m.def("registered_thread_buffers", &profiler::registered_thread_buffers);
  m.def(
      "collect",
      [] {
        std::vector<profiler::Event> events;
        {
          py::gil_scoped_release nogil;
          events = profiler::collect_events();
        }
        py::list out;
        for (auto& e : events) {
          // A tuple: (name, overload, id, parent_id, thread, depth, flags, start_ns, end_ns, dispatch_key,
          // fallback_key, shapes, dtypes); backend_sdk.profiler names the fields.
          out.append(py::make_tuple(e.name, e.overload_name, e.id, e.parent_id, e.thread, e.depth, e.flags,
                                    e.start_ns, e.end_ns, e.dispatch_key, e.fallback_key, py::cast(e.shapes),
                                    py::cast(e.dtypes)));
        }
        return out;
      },
      "The events of the current or last session, by start time.");
  m.def(
      "collect_memory",
      [] {
        std::vector<profiler::MemoryEvent> events;
        {
          py::gil_scoped_release nogil;
          events = profiler::collect_memory_events();
        }
        py::list out;
        for (const auto& e : events) {
          // (time_ns, device_type name, device, bytes, addr, event_id, thread, total_allocated)
          out.append(py::make_tuple(e.time_ns, device_type_name(e.device_type), e.device, e.bytes, e.addr,
                                    e.event_id, e.thread, e.total_allocated));
        }
        return out;
      },
      "The allocator events of the session (RECORD_MEMORY), by time.");
  py::class_<PyRecordScope>(m, "_RecordScope")
      .def(py::init<const std::string&>(), py::arg("name"), "Opens a record_function scope on this thread.")
      .def("exit", &PyRecordScope::exit, "Closes it (once; later calls do nothing).");
}

}  // namespace sdk::python
