// backend_sdk._C._runtime: the device runtime's Python face (devices, streams,
// events, the caching allocator). backend_sdk/_runtime.py wraps it with typed,
// documented functions; the generated device modules build on that.
//
// Every binding that can wait on a device releases the GIL: host functions
// launched from Python run on device worker threads and take the GIL, so a
// thread waiting for them while holding it would deadlock. Waits inside
// operators (a copy to the host, item()) release it through the runtime's
// blocking-wait hooks installed here: Note [Blocking waits release the GIL].
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>

#include <backend_sdk/core/DispatchKey.h>
#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Functions.h>
#include "python/PyCore.h"
#include "python/PyRuntime.h"
#include "python/PyTensor.h"
#include <backend_sdk/runtime/detail/BlockingWait.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/DeviceTrace.h>
#include <backend_sdk/runtime/DeviceTraceExtension.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/HostAllocator.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/Tensor.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace py = pybind11;

namespace sdk::python {

DeviceType parse_backend(const std::string& name) {
  DeviceType t;
  SDK_CHECK_VALUE(parse_device_type(name, &t), "unknown backend '", name, "'; expected one of ",
                  valid_device_type_names());
  SDK_CHECK_VALUE(is_privateuse(t), "'", name, "' is not an accelerator backend (PrivateUse1/2/3)");
  return t;
}

// A device argument: a device object, "accel:1", "accel" (current device).
Device parse_accel_device(py::handle obj, const char* what) {
  Device d;
  SDK_CHECK_TYPE(parse_device(obj.ptr(), &d), what, ": expected a device, got ", Py_TYPE(obj.ptr())->tp_name);
  return runtime::resolve_device(d, what);
}

PyObject* device_obj(Device d) { return device_object(d); }

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

size_t checked_size(int64_t n, const char* what) {
  SDK_CHECK_VALUE(n >= 0, what, ": the size must be non-negative, got ", n);
  return static_cast<size_t>(n);
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
    blocks.append(bd);
  }
  d["blocks"] = blocks;
  return d;
}

void empty_host_fn(void*) {}

// Note [Host-addressable devices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device written in Python (backend_sdk.utils.python_device) keeps its
// memory in host buffers, so a device pointer is also a host address. The
// one piece of device compute the contract-backed copy_ needs (LocalCopy,
// ops/DeviceOps.h) is then the CPU copy over aliases of the two storages.
// Such a device runs stream work synchronously, so the copy runs at once.
Tensor host_alias(const Tensor& t) {
  const StorageImpl& storage = *t.storage();
  return from_blob(storage.data(), storage.nbytes(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(),
                   Device(DeviceType::CPU));
}

void host_addressable_local_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  ops::copy_(host_alias(dst), host_alias(src));
}

Tensor host_addressable_copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  return ops::device::copy_(self, src, non_blocking, &host_addressable_local_copy);
}

// Registrations made from Python for a backend's lifetime (the process): never
// closed, like a vendor library's static registrations.
std::vector<std::unique_ptr<Library>>& python_registered_libraries() {
  static auto* libs = new std::vector<std::unique_ptr<Library>>();
  return *libs;
}

}  // namespace

namespace {
// Note [Blocking waits release the GIL]: release it only if this thread holds
// it, and not while the interpreter shuts down.
void* release_gil_for_wait() {
  #if PY_VERSION_HEX >= 0x030D0000
  if (!Py_IsInitialized() || Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#else
  if (!Py_IsInitialized() || _Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#endif
  return PyEval_SaveThread();
}
void reacquire_gil_after_wait(void* token) {
  if (token) PyEval_RestoreThread(static_cast<PyThreadState*>(token));
}
}  // namespace

void init_runtime(py::module_& parent) {
  runtime::set_blocking_wait_hooks(&release_gil_for_wait, &reacquire_gil_after_wait);
  runtime::set_sync_debug_warn_hook([](const char* message) { sdk::warn(message); });
  py::module_ m = parent.def_submodule("_runtime", "The device runtime: devices, streams, events, caching allocator.");
  m.def("_set_sync_debug_mode", &runtime::set_sync_debug_mode, py::arg("mode"),
        "Note [Sync debug mode]: 0 default, 1 warn, 2 error on every synchronising call.");
  m.def("_get_sync_debug_mode", &runtime::sync_debug_mode);

  // ---- devices ----
  m.def("attach_device_library", [](const std::string& backend, const std::string& path) {
    runtime::load_device_library(parse_backend(backend), path);
  });
  m.def(
      "_attach_device_api",
      [](const std::string& backend, uintptr_t address, const std::string& source, py::object keepalive,
         uintptr_t context) {
        runtime::attach_device(parse_backend(backend), reinterpret_cast<const sdk_device_api*>(address),
                               reinterpret_cast<void*>(context), source);
        // Note [Device attachment]: an attached struct is never released, so
        // neither is the Python object that owns it and its trampolines.
        if (!keepalive.is_none()) {
          static auto* kept = new std::vector<py::object>();
          kept->push_back(std::move(keepalive));
        }
      },
      py::arg("backend"), py::arg("address"), py::arg("source"), py::arg("keepalive") = py::none(),
      py::arg("context") = 0,
      "Attaches the sdk_device_api struct at `address`, with its `context` (Note [Device context]), to a "
      "PrivateUse backend; `keepalive` (the owner of the struct and its function pointers) is kept for the rest "
      "of the process.");
  m.def(
      "_device_api_slots",
      [] {
        py::list out;
        for (const auto& slot : runtime::device_api_slots()) {
          py::dict d;
          d["name"] = slot.name;
          d["return_type"] = slot.return_type;
          d["params"] = slot.params;
          d["required"] = slot.required;
          d["minor"] = slot.minor;
          d["offset"] = slot.offset;
          out.append(std::move(d));
        }
        return out;
      },
      "The slots of the device contract, from SDK_DEVICE_API_SLOTS (runtime/DeviceApi.h): dicts with name, "
      "return_type and params (C text), required, minor and offset.");
  m.def("_device_api_version", [] { return std::make_pair(SDK_DEVICE_API_MAJOR, SDK_DEVICE_API_MINOR); });
  m.def("_device_api_size_of_minor", [](uint32_t minor) { return runtime::device_api_size_of_minor(minor); });
  m.def("_device_api_constants", [] {
    py::dict d;
#define SDK_CONSTANT_(n) d[#n] = n;
    SDK_CONSTANT_(SDK_DTYPE_UINT8) SDK_CONSTANT_(SDK_DTYPE_INT8) SDK_CONSTANT_(SDK_DTYPE_INT16)
    SDK_CONSTANT_(SDK_DTYPE_INT32) SDK_CONSTANT_(SDK_DTYPE_INT64) SDK_CONSTANT_(SDK_DTYPE_FLOAT16)
    SDK_CONSTANT_(SDK_DTYPE_FLOAT32) SDK_CONSTANT_(SDK_DTYPE_FLOAT64) SDK_CONSTANT_(SDK_DTYPE_BOOL)
    SDK_CONSTANT_(SDK_DTYPE_BFLOAT16)
    SDK_CONSTANT_(SDK_TRACE_KERNEL) SDK_CONSTANT_(SDK_TRACE_MEMCPY) SDK_CONSTANT_(SDK_TRACE_MEMSET)
    SDK_CONSTANT_(SDK_TRACE_HOST_FUNC) SDK_CONSTANT_(SDK_TRACE_EVENT_RECORD)
#undef SDK_CONSTANT_
    d["sizeof(sdk_device_api)"] = sizeof(sdk_device_api);
    d["sizeof(sdk_device_extension_base)"] = sizeof(sdk_device_extension_base);
    d["sizeof(sdk_trace_extension)"] = sizeof(sdk_trace_extension);
    d["sizeof(sdk_trace_record)"] = sizeof(sdk_trace_record);
    d["sizeof(sdk_device_instance)"] = sizeof(sdk_device_instance);
    return d;
  });
  m.def(
      "device_extensions",
      [](const std::string& backend) { return runtime::device_extensions(parse_backend(backend)); },
      py::arg("backend"),
      "(name, version) of each extension of the backend's device, in chain order (Note [Device API extensions]).");
  m.def(
      "device_context",
      [](const std::string& backend) {
        return reinterpret_cast<uintptr_t>(runtime::device_api(parse_backend(backend)).context());
      },
      py::arg("backend"), "The context the SDK passes to the backend's device slots (Note [Device context]).");
  m.def(
      "device_api_version",
      [](const std::string& backend) {
        const auto& api = runtime::device_api(parse_backend(backend));
        return std::make_pair(api.major_version(), api.minor_version());
      },
      py::arg("backend"), "(major, minor) of the device contract the backend's device declared.");
  m.def(
      "can_device_access_peer",
      [](py::handle device, py::handle peer) {
        Device d = parse_accel_device(device, "can_device_access_peer");
        Device p = parse_accel_device(peer, "can_device_access_peer");
        SDK_CHECK_VALUE(d.type == p.type, "can_device_access_peer: ", d, " and ", p, " are of different backends");
        int32_t can = 0;
        runtime::check_status(d.type, runtime::device_api(d.type).can_access_peer(d.index, p.index, &can),
                              "can_device_access_peer");
        return can != 0;
      },
      py::arg("device"), py::arg("peer"));
  m.def(
      "trace_start",
      [](const std::string& backend, int64_t capacity) { runtime::device_trace_start(parse_backend(backend), capacity); },
      py::arg("backend"), py::arg("capacity") = int64_t(1) << 20);
  m.def(
      "trace_stop", [](const std::string& backend) { runtime::device_trace_stop(parse_backend(backend)); },
      py::arg("backend"));
  m.def(
      "trace_collect",
      [](const std::string& backend) {
        uint64_t dropped = 0;
        std::vector<runtime::DeviceTraceRecord> records;
        {
          py::gil_scoped_release nogil;
          records = runtime::device_trace_collect(parse_backend(backend), &dropped);
        }
        py::list out;
        for (const auto& r : records) {
          py::dict d;
          d["kind"] = r.kind;
          d["name"] = r.name;
          d["device"] = r.device;
          d["stream"] = r.stream;
          d["start_ns"] = r.start_ns;
          d["end_ns"] = r.end_ns;
          d["bytes"] = r.bytes;
          d["correlation_id"] = r.correlation_id;  // "sdk.trace" v2; 0 for version 1 devices
          out.append(std::move(d));
        }
        return py::make_tuple(out, dropped);
      },
      py::arg("backend"));
  m.def(
      "_register_contract_kernels",
      [](const std::string& backend) {
        DeviceType t = parse_backend(backend);
        auto lib = std::make_unique<Library>(Library::IMPL, "aten", dense_key_for(t),
                                             "backend_sdk.utils.python_device.register_contract_kernels", 0);
        lib->impl("empty.memory_format", &ops::device::empty);
        lib->impl("empty_strided", &ops::device::empty_strided);
        lib->impl("resize_", &ops::device::resize_);
        lib->impl("_local_scalar_dense", &ops::device::local_scalar_dense);
        lib->impl("copy_", &host_addressable_copy_);
        python_registered_libraries().push_back(std::move(lib));
      },
      py::arg("backend"),
      "Registers the contract-backed kernels (ops/DeviceOps.h) for a backend whose device memory is "
      "host-addressable (Note [Host-addressable devices]).");
  m.def(
      "_register_cpu_fallback",
      [](const std::string& backend) {
        DeviceType t = parse_backend(backend);
        auto lib = std::make_unique<Library>(Library::IMPL, "_", dense_key_for(t),
                                             "backend_sdk.utils.python_device.register_cpu_fallback", 0);
        lib->fallback(ops::cpu_fallback_function());
        python_registered_libraries().push_back(std::move(lib));
      },
      py::arg("backend"), "Registers the SDK's boxed CPU fallback (Note [CPU fallback]) as the backend's fallback.");
  m.def("has_device", [](const std::string& backend) { return runtime::has_device(parse_backend(backend)); });
  m.def("device_source", [](const std::string& backend) { return runtime::device_source(parse_backend(backend)); });
  m.def("device_count", [](const std::string& backend) { return runtime::device_count(parse_backend(backend)); });
  m.def("current_device", [](const std::string& backend) {
    return static_cast<int>(runtime::current_device_index(parse_backend(backend)));
  });
  m.def("set_device", [](py::handle device) { runtime::set_current_device(parse_accel_device(device, "set_device")); });
  m.def("synchronize", [](py::handle device) {
    Device d = parse_accel_device(device, "synchronize");
    py::gil_scoped_release nogil;
    runtime::device_synchronize(d);
  });
  m.def("get_device_properties", [](py::handle device) {
    Device d = parse_accel_device(device, "get_device_properties");
    const auto& p = runtime::device_properties(d.type, d.index);
    py::dict out;
    out["name"] = p.name;
    out["total_memory"] = p.total_memory;
    out["supported_dtypes"] = p.supported_dtypes;
    out["stream_priority_least"] = p.stream_priority_least;
    out["stream_priority_greatest"] = p.stream_priority_greatest;
    return out;
  });

  init_runtime_streams(m);  // PyStreams.cpp: Stream, Event, current/default stream
  init_runtime_graphs(m);   // PyGraphs.cpp: graph capture and replay

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
  m.def("_record_memory_history", [](const std::string& backend, bool enabled, int64_t max_entries, bool clear) {
    SDK_CHECK_VALUE(max_entries > 0, "_record_memory_history: max_entries must be positive, got ", max_entries);
    runtime::caching_allocator(parse_backend(backend))->record_history(enabled, static_cast<size_t>(max_entries), clear);
  }, py::arg("backend"), py::arg("enabled"), py::arg("max_entries"), py::arg("clear"));
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
      x["frames"] = py::list();
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

  // ---- micro-benchmarks (benchmarks/bench_runtime.py): ns per iteration, timed in C++ ----
  m.def("_bench_alloc_free", [](const Stream& s, int64_t nbytes, int64_t iters) {
    auto* a = runtime::caching_allocator(s.device().type);
    size_t n = checked_size(nbytes, "_bench_alloc_free");
    py::gil_scoped_release nogil;
    runtime::StreamGuard guard(s);
    { DataPtr warm = a->allocate(n); }
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      DataPtr p = a->allocate(n);
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
  m.def("_bench_launch_empty", [](const Stream& s, int64_t iters) {
    const auto& api = runtime::device_api(s.device().type);
    sdk_stream_t h = s.native();
    py::gil_scoped_release nogil;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) runtime::check_status(s.device().type, api.launch_host_func(h, &empty_host_fn, nullptr, nullptr), "launch");
    auto t1 = std::chrono::steady_clock::now();
    runtime::check_status(s.device().type, api.stream_synchronize(h), "synchronize");
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
  m.def("_bench_launch_sync", [](const Stream& s, int64_t iters) {
    const auto& api = runtime::device_api(s.device().type);
    sdk_stream_t h = s.native();
    py::gil_scoped_release nogil;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      runtime::check_status(s.device().type, api.launch_host_func(h, &empty_host_fn, nullptr, nullptr), "launch");
      runtime::check_status(s.device().type, api.stream_synchronize(h), "synchronize");
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
}

}  // namespace sdk::python
