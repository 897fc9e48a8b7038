// backend_sdk._C._runtime, memory: DeviceBuffer, raw copies and memsets
// (Note [Raw copy bounds]), pinned host memory, the caching allocator's
// statistics, snapshots and allocation history (split out of PyRuntime.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include <backend_sdk/core/Exception.h>
#include "python/PyCore.h"
#include "python/PyRuntime.h"
#include "python/PyTensor.h"
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/HostAllocator.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/Tensor.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace py = pybind11;

namespace sdk::python {
namespace {
using runtime::Event;
using runtime::Stream;

// Device memory held by Python (tests, benchmarks, low-level users): one
// caching-allocator block.
struct DeviceBuffer {
  DataPtr data;
  size_t nbytes = 0;
};

sdk_memcpy_kind parse_kind(const std::string& k) {
  if (k == "h2h") return SDK_MEMCPY_HOST_TO_HOST;
  if (k == "h2d") return SDK_MEMCPY_HOST_TO_DEVICE;
  if (k == "d2h") return SDK_MEMCPY_DEVICE_TO_HOST;
  if (k == "d2d") return SDK_MEMCPY_DEVICE_TO_DEVICE;
  SDK_THROW(Value, "memcpy: kind must be 'h2h', 'h2d', 'd2h' or 'd2d', got '", k, "'");
}

// Note [Raw copy bounds]
// ~~~~~~~~~~~~~~~~~~~~~~
// _runtime.memcpy / copy_async / memset_async take raw addresses. The device
// checks a device side against its own allocations, but those are the
// caching allocator's segments (2 MiB and up), not the blocks carved out of
// them: a 4000-byte copy into an 8-byte tensor stays inside its segment and
// overwrites the neighbouring blocks. So these bindings check every device
// side that lies in one of this backend's segments against the block that
// contains it: the range must start in a live (allocated) block and end
// within the bytes that were requested for it. A host side given as a
// buffer object (a numpy array, bytearray, memoryview) is checked against
// its length, and must be writable when it is the destination; a host side
// given as an integer address cannot be checked (the caller vouches for it).
// The check walks the allocator's snapshot: O(blocks), fine for these
// low-level entry points, never on the tensor copy path.

// One side of a raw copy: an address, plus the buffer's length when it came
// from a buffer object (SIZE_MAX: unknown).
struct RawSide {
  uintptr_t address = 0;
  size_t length = SIZE_MAX;
};

RawSide raw_side(py::handle obj, bool writable, const char* what, const char* role) {
  RawSide side;
  if (py::isinstance<py::int_>(obj)) {
    side.address = obj.cast<uintptr_t>();
    return side;
  }
  SDK_CHECK_TYPE(PyObject_CheckBuffer(obj.ptr()), what, ": ", role, " must be an address (int) or a buffer (numpy array, "
                 "bytearray, memoryview), got ", Py_TYPE(obj.ptr())->tp_name);
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, (writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) | PyBUF_ANY_CONTIGUOUS) != 0) {
    PyErr_Clear();
    SDK_THROW(Value, what, ": ", role, " ", Py_TYPE(obj.ptr())->tp_name, " is not a ",
              writable ? "writable " : "", "contiguous buffer");
  }
  side.address = reinterpret_cast<uintptr_t>(view.buf);
  side.length = static_cast<size_t>(view.len);
  PyBuffer_Release(&view);  // the object keeps the memory alive; the caller keeps the object
  return side;
}

void check_host_length(const RawSide& side, size_t n, const char* what, const char* role) {
  SDK_CHECK_VALUE(side.length == SIZE_MAX || n <= side.length, what, ": ", role, " is a host buffer of ", side.length,
                  " bytes, too small for a copy of ", n, " bytes");
}

std::string hex_address(uintptr_t p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(p));
  return buf;
}

// Note [Raw copy bounds]: a device side inside one of the caching allocator's segments.
void check_device_range(DeviceType t, uintptr_t p, size_t n, const char* what, const char* role) {
  for (const runtime::SegmentInfo& seg : runtime::caching_allocator(t)->snapshot()) {
    if (p < seg.address || p - seg.address >= seg.total_size) continue;
    const std::string range = std::to_string(n) + " bytes at [" + hex_address(p) + ", " +
                              (n > UINTPTR_MAX - p ? std::string("the end of the address space") : hex_address(p + n)) +
                              ")";
    for (const runtime::BlockInfo& b : seg.blocks) {
      if (p < b.address || p - b.address >= b.size) continue;
      const Device d(t, static_cast<int8_t>(seg.device));
      SDK_CHECK_VALUE(b.state == "active_allocated", what, ": ", role, ": ", range, " start in a freed block (",
                      b.size, " bytes at ", hex_address(b.address), ") of the caching allocator on ", d);
      SDK_CHECK_VALUE(p - b.address <= b.requested_size && n <= b.requested_size - (p - b.address), what, ": ", role,
                      ": ", range, " run past the end of the allocation [", hex_address(b.address), ", ",
                      hex_address(b.address + b.requested_size), ") of ", b.requested_size, " bytes at ",
                      hex_address(b.address), " on ", d);
      return;
    }
    return;
  }
  // Not the allocator's memory: the device checks it against its own allocations.
}

void check_raw_copy(DeviceType t, const RawSide& dst, const RawSide& src, size_t n, sdk_memcpy_kind k,
                    const char* what) {
  const bool dst_dev = k == SDK_MEMCPY_HOST_TO_DEVICE || k == SDK_MEMCPY_DEVICE_TO_DEVICE;
  const bool src_dev = k == SDK_MEMCPY_DEVICE_TO_HOST || k == SDK_MEMCPY_DEVICE_TO_DEVICE;
  SDK_CHECK_VALUE(!(dst_dev && dst.length != SIZE_MAX), what, ": the copy writes device memory but dst is a host buffer");
  SDK_CHECK_VALUE(!(src_dev && src.length != SIZE_MAX), what, ": the copy reads device memory but src is a host buffer");
  if (dst_dev) {
    check_device_range(t, dst.address, n, what, "dst");
  } else {
    check_host_length(dst, n, what, "dst");
  }
  if (src_dev) {
    check_device_range(t, src.address, n, what, "src");
  } else {
    check_host_length(src, n, what, "src");
  }
}

// Note [Allocation history]: PyTorch's frame dicts ({"filename", "line", "name"}), innermost first.
py::list frames_list(const runtime::HistoryFrames& frames) {
  py::list out;
  if (!frames) return out;
  for (const runtime::HistoryFrame& f : *frames) {
    py::dict x;
    x["filename"] = f.filename;
    x["line"] = f.line;
    x["name"] = f.name;
    out.append(std::move(x));
  }
  return out;
}

// Note [Allocation history]: the allocator's gatherer. It reads the calling thread's Python stack only when that
// thread holds the GIL (it never takes it: the caller may hold locks a GIL holder waits for). Creating the frame
// objects may run the GC; the allocator calls this outside its lock, and the GC is paused meanwhile so that no
// finalizer runs in the middle of an allocation.
constexpr int kMaxHistoryFrames = 128;
runtime::HistoryFrames gather_python_frames() {
#if PY_VERSION_HEX >= 0x030D0000
  if (!Py_IsInitialized() || Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#else
  if (!Py_IsInitialized() || _Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#endif
  PyObject* error_type = nullptr;
  PyObject* error_value = nullptr;
  PyObject* error_tb = nullptr;
  PyErr_Fetch(&error_type, &error_value, &error_tb);  // a free may run while an exception is being raised
  const int gc_was_enabled = PyGC_Disable();
  auto frames = std::make_shared<std::vector<runtime::HistoryFrame>>();
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  while (f != nullptr && static_cast<int>(frames->size()) < kMaxHistoryFrames) {
    PyCodeObject* code = PyFrame_GetCode(f);  // new reference
    runtime::HistoryFrame x;
    if (const char* file = PyUnicode_AsUTF8(code->co_filename)) x.filename = file;
    if (const char* name = PyUnicode_AsUTF8(code->co_name)) x.name = name;
    x.line = PyFrame_GetLineNumber(f);
    Py_DECREF(code);
    frames->push_back(std::move(x));
    PyFrameObject* back = PyFrame_GetBack(f);  // new reference or NULL
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyErr_Clear();
  if (gc_was_enabled) PyGC_Enable();
  PyErr_Restore(error_type, error_value, error_tb);
  if (frames->empty()) return nullptr;
  return frames;
}

runtime::HistoryContext parse_history_context(const std::string& c) {
  if (c.empty() || c == "None") return runtime::HistoryContext::None;
  if (c == "state") return runtime::HistoryContext::State;
  if (c == "alloc") return runtime::HistoryContext::Alloc;
  if (c == "all") return runtime::HistoryContext::All;
  SDK_THROW(Value, "_record_memory_history: context must be None, 'state', 'alloc' or 'all', got '", c, "'");
}

py::dict segment_dict(const runtime::SegmentInfo& s) {
  py::dict d;
  d["device"] = s.device;
  d["address"] = s.address;
  d["total_size"] = s.total_size;
  d["allocated_size"] = s.allocated_size;
  d["active_size"] = s.active_size;
  d["stream"] = s.stream;
  d["segment_type"] = s.segment_type;
  py::list blocks;
  for (const auto& b : s.blocks) {
    py::dict bd;
    bd["address"] = b.address;
    bd["size"] = b.size;
    bd["requested_size"] = b.requested_size;
    bd["state"] = b.state;
    bd["frames"] = frames_list(b.frames);
    blocks.append(bd);
  }
  d["blocks"] = blocks;
  return d;
}

}  // namespace

void init_runtime_memory(py::module_& m) {
  // ---- memory ----
  py::class_<DeviceBuffer>(m, "DeviceBuffer", "Device memory from the caching allocator, freed by free() or GC.")
      .def(py::init([](int64_t nbytes, const Stream& s) {
             size_t n = checked_size(nbytes, "DeviceBuffer");
             auto* a = runtime::caching_allocator(s.device().type);
             DeviceBuffer b;
             {
               py::gil_scoped_release nogil;  // an OOM retry may wait for the device
               b.data = a->allocate_on(s, n);
             }
             b.nbytes = n;
             return b;
           }),
           py::arg("nbytes"), py::arg("stream"))
      .def_property_readonly("ptr", [](const DeviceBuffer& b) { return reinterpret_cast<uintptr_t>(b.data.get()); })
      .def_property_readonly("nbytes", [](const DeviceBuffer& b) { return b.nbytes; })
      .def_property_readonly("device", [](const DeviceBuffer& b) { return py::reinterpret_steal<py::object>(device_obj(b.data.device())); })
      .def_property_readonly("freed", [](const DeviceBuffer& b) { return b.data.ctx() == nullptr && b.data.get() == nullptr; })
      .def("free", [](DeviceBuffer& b) {
        py::gil_scoped_release nogil;
        b.data.clear();
      })
      .def("record_stream", [](DeviceBuffer& b, const Stream& s) {
        SDK_CHECK_VALUE(b.data.get() != nullptr || b.nbytes == 0, "record_stream: the buffer was freed");
        runtime::caching_allocator(s.device().type)->record_stream(b.data, s);
      });
  m.def("record_stream", [](const Tensor& t, const Stream& s) {
    const DataPtr& p = t.impl()->storage()->data_ptr();
    if (p.device().type == DeviceType::CPU && runtime::host_allocator(s.device().type)->owns(p)) {
      runtime::host_allocator(s.device().type)->record_stream(p.get(), s);  // pinned host memory
      return;
    }
    SDK_CHECK_VALUE(p.device().type == s.device().type, "record_stream: the tensor is on ", t.impl()->device(),
                    " but the stream is ", s);
    runtime::caching_allocator(s.device().type)->record_stream(p, s);
  });
  m.def("memcpy", [](const std::string& backend, py::handle dst_obj, py::handle src_obj, int64_t nbytes,
                     const std::string& kind, std::optional<Stream> stream) {
    DeviceType t = parse_backend(backend);
    size_t n = checked_size(nbytes, "memcpy");
    sdk_memcpy_kind k = parse_kind(kind);
    const RawSide dside = raw_side(dst_obj, /*writable=*/true, "memcpy", "dst");
    const RawSide sside = raw_side(src_obj, /*writable=*/false, "memcpy", "src");
    const uintptr_t dst = dside.address, src = sside.address;
    const auto& api = runtime::device_api(t);
    py::gil_scoped_release nogil;
    check_raw_copy(t, dside, sside, n, k, "memcpy");  // Note [Raw copy bounds]
    if (stream) {
      SDK_CHECK_VALUE(stream->device().type == t, "memcpy: ", *stream, " is not a stream of '", backend, "'");
      runtime::check_status(t, api.memcpy_async(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n, k,
                                                stream->native()),
                            "memcpy_async (" + kind + ")");
      // Note [Pinned host allocator]: a pinned host side is not reused before the copy ran.
      if (n > 0 && (k == SDK_MEMCPY_HOST_TO_DEVICE || k == SDK_MEMCPY_HOST_TO_HOST))
        runtime::host_allocator(t)->record_stream(reinterpret_cast<const void*>(src), *stream);
      if (n > 0 && (k == SDK_MEMCPY_DEVICE_TO_HOST || k == SDK_MEMCPY_HOST_TO_HOST))
        runtime::host_allocator(t)->record_stream(reinterpret_cast<const void*>(dst), *stream);
    } else {
      runtime::check_status(t, api.memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n, k),
                            "memcpy (" + kind + ")");
    }
  }, py::arg("backend"), py::arg("dst"), py::arg("src"), py::arg("nbytes"), py::arg("kind"), py::arg("stream") = py::none());
  m.def("copy_async", [](py::handle dst_obj, py::handle src_obj, int64_t nbytes, const std::string& kind,
                         const Stream& s) {
    size_t n = checked_size(nbytes, "copy_async");
    sdk_memcpy_kind k = parse_kind(kind);
    const RawSide dside = raw_side(dst_obj, /*writable=*/true, "copy_async", "dst");
    const RawSide sside = raw_side(src_obj, /*writable=*/false, "copy_async", "src");
    const uintptr_t dst = dside.address, src = sside.address;
    py::gil_scoped_release nogil;
    check_raw_copy(s.device().type, dside, sside, n, k, "copy_async");  // Note [Raw copy bounds]
    runtime::copy_async(s, reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n, k);
  });
  m.def("pinned_empty", [](std::vector<int64_t> sizes, py::handle dtype, const std::string& backend) {
    DeviceType t = parse_backend(backend);
    ScalarType st = ScalarType::Float32;
    if (!dtype.is_none()) SDK_CHECK_TYPE(parse_dtype(dtype.ptr(), &st), "pinned_empty: expected a dtype, got ",
                                         Py_TYPE(dtype.ptr())->tp_name);
    int64_t numel = 1;
    for (int64_t d : sizes) {
      SDK_CHECK_VALUE(d >= 0, "pinned_empty: negative dimension ", d);
      numel *= d;
    }
    size_t nbytes = static_cast<size_t>(numel) * element_size(st);
    Storage storage;
    {
      py::gil_scoped_release nogil;  // a retry may wait for the device
      storage = make_intrusive<StorageImpl>(nbytes, runtime::host_allocator(t));
    }
    Device cpu(DeviceType::CPU, -1);
    auto impl = make_intrusive<TensorImpl>(std::move(storage), st, cpu, default_tensor_key_set(DeviceType::CPU));
    impl->set_sizes_contiguous(IntArrayRef(sizes));
    return Tensor(std::move(impl));
  }, py::arg("sizes"), py::arg("dtype"), py::arg("backend"));
  m.def("is_pinned", [](py::handle obj, const std::string& backend) {
    DeviceType t = parse_backend(backend);
    const void* p = nullptr;
    if (py::isinstance<py::int_>(obj)) {
      p = reinterpret_cast<const void*>(obj.cast<uintptr_t>());
    } else {
      SDK_CHECK_TYPE(is_tensor(obj.ptr()), "is_pinned: expected a Tensor or an address, got ",
                     Py_TYPE(obj.ptr())->tp_name);
      Tensor tensor = unpack_tensor(obj.ptr());
      if (tensor.impl()->device().type != DeviceType::CPU) return false;
      p = tensor.impl()->storage()->data();
    }
    return runtime::host_allocator(t)->is_pinned(p);
  });
  m.def("host_memory_stats", [](const std::string& backend) {
    return runtime::host_allocator(parse_backend(backend))->stats();
  });
  m.def("host_empty_cache", [](const std::string& backend) {
    auto* a = runtime::host_allocator(parse_backend(backend));
    py::gil_scoped_release nogil;
    a->empty_cache();
  });
  m.def("_in_bad_fork", &runtime::in_bad_fork);
  m.def("memset_async", [](uintptr_t dst, int value, int64_t nbytes, const Stream& s) {
    size_t n = checked_size(nbytes, "memset_async");
    DeviceType t = s.device().type;
    py::gil_scoped_release nogil;  // the allocator's lock may be held by a thread waiting for the device
    check_device_range(t, dst, n, "memset_async", "dst");  // Note [Raw copy bounds]
    runtime::check_status(t, runtime::device_api(t).memset_async(reinterpret_cast<void*>(dst), value, n, s.native()),
                          "memset_async");
  });
  m.def("memory_stats", [](py::handle device) {
    Device d = parse_accel_device(device, "memory_stats");
    return runtime::caching_allocator(d.type)->memory_stats(d.index);
  });
  m.def("mem_get_info", [](py::handle device) {
    // (free, total) bytes of the device; free is total minus what this
    // process reserved when the device cannot tell (the slot is optional).
    Device d = parse_accel_device(device, "mem_get_info");
    const auto& api = runtime::device_api(d.type);
    size_t free_bytes = 0, total_bytes = 0;
    sdk_status st = api.mem_get_info(d.index, &free_bytes, &total_bytes);  // NOT_SUPPORTED by default
    if (st != SDK_ERROR_NOT_SUPPORTED) {
      runtime::check_status(d.type, st, "mem_get_info");
      return std::make_pair(free_bytes, total_bytes);
    }
    total_bytes = runtime::device_properties(d.type, d.index).total_memory;
    int64_t reserved = runtime::caching_allocator(d.type)->memory_stats(d.index)["reserved_bytes.all.current"];
    return std::make_pair(total_bytes - static_cast<size_t>(reserved), total_bytes);
  });
  m.def("memory_summary", [](py::handle device) {
    Device d = parse_accel_device(device, "memory_summary");
    return runtime::caching_allocator(d.type)->memory_summary(d.index);
  });
  m.def("memory_snapshot", [](const std::string& backend) {
    py::list out;
    for (const auto& s : runtime::caching_allocator(parse_backend(backend))->snapshot()) out.append(segment_dict(s));
    return out;
  });
  // Note [Allocation history] (CachingAllocator.cpp): the device_traces of the memory snapshot.
  runtime::set_history_frames_gatherer(&gather_python_frames);
  m.def("_record_memory_history", [](const std::string& backend, bool enabled, int64_t max_entries, bool clear,
                                     const std::string& context) {
    SDK_CHECK_VALUE(max_entries > 0, "_record_memory_history: max_entries must be positive, got ", max_entries);
    runtime::caching_allocator(parse_backend(backend))
        ->record_history(enabled, static_cast<size_t>(max_entries), clear, parse_history_context(context));
  }, py::arg("backend"), py::arg("enabled"), py::arg("max_entries"), py::arg("clear"), py::arg("context") = "",
     "Note [Allocation history]: enabled keeps the event trace; context (''/'state'/'alloc'/'all') which events "
     "keep the Python stack.");
  m.def("_memory_history", [](py::handle device) {
    static const char* kActions[] = {"alloc", "free_completed", "segment_alloc", "segment_free"};
    Device d = parse_accel_device(device, "_memory_history");
    py::list out;
    for (const auto& e : runtime::caching_allocator(d.type)->history(d.index)) {
      py::dict x;
      x["action"] = kActions[e.action];
      x["addr"] = e.addr;
      x["size"] = e.size;
      x["stream"] = e.stream;
      x["time_us"] = e.time_us;
      x["frames"] = frames_list(e.frames);
      out.append(std::move(x));
    }
    return out;
  });
  m.def("empty_cache", [](const std::string& backend) {
    auto* a = runtime::caching_allocator(parse_backend(backend));
    py::gil_scoped_release nogil;
    a->empty_cache();
  });
  m.def("set_per_process_memory_fraction", [](double fraction, py::handle device) {
    Device d = parse_accel_device(device, "set_per_process_memory_fraction");
    runtime::caching_allocator(d.type)->set_memory_fraction(fraction, d.index);
  });
  m.def("get_per_process_memory_fraction", [](py::handle device) {
    Device d = parse_accel_device(device, "get_per_process_memory_fraction");
    return runtime::caching_allocator(d.type)->memory_fraction(d.index);
  });
  m.def("reset_peak_memory_stats", [](py::handle device) {
    Device d = parse_accel_device(device, "reset_peak_memory_stats");
    runtime::caching_allocator(d.type)->reset_peak_stats(d.index);
  });
  m.def("reset_accumulated_memory_stats", [](py::handle device) {
    Device d = parse_accel_device(device, "reset_accumulated_memory_stats");
    runtime::caching_allocator(d.type)->reset_accumulated_stats(d.index);
  });
}

}  // namespace sdk::python
