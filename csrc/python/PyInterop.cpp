// Zero-copy interop: numpy (__array_interface__) and DLPack capsules.
#include <pybind11/stl.h>

#include <backend_sdk/core/Exception.h>
#include "python/Errors.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

// ---- numpy ----
const char* typestr(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "|b1";
    case ScalarType::UInt8: return "|u1";
    case ScalarType::Int8: return "|i1";
    case ScalarType::Int16: return "<i2";
    case ScalarType::Int32: return "<i4";
    case ScalarType::Int64: return "<i8";
    case ScalarType::Float16: return "<f2";
    case ScalarType::BFloat16: return "<u2";  // reinterpreted as ml_dtypes.bfloat16 by the caller
    case ScalarType::Float32: return "<f4";
    case ScalarType::Float64: return "<f8";
    default: return "";
  }
}

void check_host_accessible(const Tensor& t, const char* what) {
  SDK_CHECK_TYPE(t.is_cpu(), "can't convert ", t.device(), " device type tensor to ", what,
                 ". Use Tensor.cpu() to copy the tensor to host memory first.");
  // A wrapper subclass (Note [Python key tensors], PyPythonDispatch.h) or a fake tensor reports a device
  // but holds a meta storage: no memory to share.
  SDK_CHECK(t.storage()->device().type != DeviceType::Meta, "Cannot access data pointer of Tensor that doesn't ",
            "have storage: can't convert a tensor without data (a wrapper subclass or a fake tensor) to ", what);
}

py::dict array_interface(const Tensor& t) {
  check_host_accessible(t, "numpy");
  py::dict d;
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides;
  for (int64_t s : t.strides()) strides.push_back(s * static_cast<int64_t>(t.itemsize()));
  d["shape"] = py::tuple(py::cast(shape));
  d["strides"] = py::tuple(py::cast(strides));
  d["typestr"] = typestr(t.dtype());
  // numpy rejects a null data pointer for non-empty arrays; empty tensors may have one.
  uintptr_t ptr = reinterpret_cast<uintptr_t>(t.data_ptr());
  d["data"] = py::make_tuple(ptr ? ptr : uintptr_t{64}, false);
  d["version"] = 3;
  return d;
}

void decref_with_gil(void* obj) {
  if (!Py_IsInitialized()) return;  // interpreter gone: nothing left to release
  PyGILState_STATE s = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(obj));
  PyGILState_Release(s);
}

// A tensor over memory owned by a Python object (kept alive until the storage dies).
Tensor tensor_over_python_memory(py::object owner, uintptr_t data, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& byte_strides, ScalarType dtype) {
  size_t itemsize = element_size(dtype);
  std::vector<int64_t> strides;
  for (int64_t s : byte_strides) {
    SDK_CHECK_VALUE(s >= 0, "from_numpy: At least one stride in the given numpy array is negative, and tensors "
                    "with negative strides are not currently supported. (You can probably work around this by "
                    "making a copy of your array with array.copy().)");
    SDK_CHECK_VALUE(s % static_cast<int64_t>(itemsize) == 0, "from_numpy: given numpy array strides not a multiple "
                    "of the element byte size. Copy the numpy array to reallocate the memory.");
    strides.push_back(s / static_cast<int64_t>(itemsize));
  }
  size_t nbytes = TensorImpl::compute_storage_nbytes(shape, strides, itemsize, 0);
  PyObject* raw_owner = owner.release().ptr();
  DataPtr ptr(reinterpret_cast<void*>(data), raw_owner, &decref_with_gil, Device(DeviceType::CPU));
  auto storage = make_intrusive<StorageImpl>(std::move(ptr), nbytes, nullptr, false);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype, Device(DeviceType::CPU),
                                         default_tensor_key_set(DeviceType::CPU));
  impl->set_sizes_and_strides(shape, strides, 0);
  return Tensor(std::move(impl));
}

// ---- DLPack (v0.8 ABI, unversioned capsules) ----
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
// DLPack 1.0: a versioned capsule ("dltensor_versioned") carries flags, among them read-only.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kDLPackFlagReadOnly = 1ULL << 0;
constexpr int32_t kDLCPU = 1;
// Note [DLPack device tensors]: PyTorch exports a PrivateUse1 tensor as kDLExtDev with its device index; so
// do we for every PrivateUse backend. Importing a kDLExtDev capsule needs to know which backend it belongs
// to: the Python caller passes the current accelerator (backend_sdk/utils/dlpack.py).
constexpr int32_t kDLExtDev = 12;
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

DLDataType to_dl_dtype(ScalarType t) {
  uint8_t bits = static_cast<uint8_t>(element_size(t) * 8);
  switch (t) {
    case ScalarType::Bool: return {kDLBool, 8, 1};
    case ScalarType::UInt8: return {kDLUInt, bits, 1};
    case ScalarType::Float16:
    case ScalarType::Float32:
    case ScalarType::Float64: return {kDLFloat, bits, 1};
    case ScalarType::BFloat16: return {kDLBfloat, 16, 1};
    default: return {kDLInt, bits, 1};
  }
}

ScalarType from_dl_dtype(DLDataType d) {
  SDK_CHECK_TYPE(d.lanes == 1, "from_dlpack: vector types (lanes=", d.lanes, ") are not supported");
  switch (d.code) {
    case kDLBool: return ScalarType::Bool;
    case kDLUInt:
      SDK_CHECK_TYPE(d.bits == 8, "from_dlpack: unsupported unsigned integer width ", int(d.bits));
      return ScalarType::UInt8;
    case kDLInt:
      switch (d.bits) {
        case 8: return ScalarType::Int8;
        case 16: return ScalarType::Int16;
        case 32: return ScalarType::Int32;
        case 64: return ScalarType::Int64;
      }
      break;
    case kDLFloat:
      switch (d.bits) {
        case 16: return ScalarType::Float16;
        case 32: return ScalarType::Float32;
        case 64: return ScalarType::Float64;
      }
      break;
    case kDLBfloat:
      if (d.bits == 16) return ScalarType::BFloat16;
      break;
  }
  SDK_THROW(Type, "from_dlpack: unsupported DLPack dtype (code ", int(d.code), ", bits ", int(d.bits), ")");
}

struct ExportedTensor {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

void exported_deleter(DLManagedTensor* m) { delete static_cast<ExportedTensor*>(m->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // Only an unconsumed capsule still owns its tensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m && m->deleter) m->deleter(m);
  }
}

py::object to_dlpack(const Tensor& t) {
  if (!is_privateuse(t.device().type)) check_host_accessible(t, "DLPack");
  auto* e = new ExportedTensor();
  e->tensor = t;
  e->shape.assign(t.sizes().begin(), t.sizes().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = t.is_cpu() ? DLDevice{kDLCPU, 0} : DLDevice{kDLExtDev, static_cast<int32_t>(t.device().index)};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl_dtype(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = &exported_deleter;
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
  if (!cap) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

// Producers (numpy) may touch Python objects in their deleter: it runs with the GIL.
template <class Managed>
void call_dl_deleter(void* ctx) {
  auto* m = static_cast<Managed*>(ctx);
  if (!m->deleter) return;
  if (Py_IsInitialized()) {
    PyGILState_STATE s = PyGILState_Ensure();
    m->deleter(m);
    PyGILState_Release(s);
  } else {
    m->deleter(m);
  }
}

template <class Managed>
Tensor tensor_over_dl_tensor(py::handle capsule, Managed* m, const char* used_name, std::optional<Device> ext) {
  const DLTensor& dl = m->dl_tensor;
  Device device(DeviceType::CPU);
  if (dl.device.device_type == kDLExtDev && ext) {  // Note [DLPack device tensors]
    device = Device(ext->type, static_cast<int8_t>(dl.device.device_id));
  } else {
    SDK_CHECK_TYPE(dl.device.device_type == kDLCPU, "from_dlpack: only CPU (kDLCPU) and accelerator (kDLExtDev) "
                   "DLPack tensors are supported, got device type ", dl.device.device_type,
                   dl.device.device_type == kDLExtDev ? " with no accelerator attached" : "");
  }
  ScalarType dtype = from_dl_dtype(dl.dtype);
  SDK_CHECK_VALUE(dl.ndim >= 0, "from_dlpack: negative number of dimensions (", dl.ndim, ")");
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  for (int64_t s : shape) SDK_CHECK_VALUE(s >= 0, "from_dlpack: negative dimension ", s);
  std::vector<int64_t> strides = dl.strides ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                            : contiguous_strides(shape).ref().vec();
  for (int64_t s : strides) SDK_CHECK_VALUE(s >= 0, "from_dlpack: negative strides are not supported");
  size_t nbytes = TensorImpl::compute_storage_nbytes(shape, strides, element_size(dtype), 0);
  char* data = static_cast<char*>(dl.data) + dl.byte_offset;
  DataPtr ptr(data, m, &call_dl_deleter<Managed>, device);
  PyCapsule_SetName(capsule.ptr(), used_name);  // ownership moved to the storage
  auto storage = make_intrusive<StorageImpl>(std::move(ptr), nbytes, nullptr, false);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype, device, default_tensor_key_set(device.type));
  impl->set_sizes_and_strides(shape, strides, 0);
  return Tensor(std::move(impl));
}

DLManagedTensorVersioned* versioned_of(py::handle capsule) {
  auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
  SDK_CHECK_VALUE(m != nullptr, "from_dlpack: invalid 'dltensor_versioned' capsule");
  SDK_CHECK_VALUE(m->version.major == 1, "from_dlpack: unsupported DLPack version ", m->version.major, ".",
                  m->version.minor, " (this SDK reads DLPack 1.x and unversioned capsules)");
  return m;
}

void check_capsule(py::handle capsule) {
  SDK_CHECK_TYPE(PyCapsule_CheckExact(capsule.ptr()), "from_dlpack: expected an object with __dlpack__ or a "
                 "DLPack capsule, got ", Py_TYPE(capsule.ptr())->tp_name);
  SDK_CHECK_VALUE(PyCapsule_IsValid(capsule.ptr(), "dltensor") || PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned"),
                  "from_dlpack: the capsule was already consumed (a DLPack capsule can be used only once) or is "
                  "not named 'dltensor' or 'dltensor_versioned'");
}

Tensor from_dlpack_capsule(py::handle capsule, std::optional<Device> ext) {
  check_capsule(capsule);
  if (PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
    return tensor_over_dl_tensor(capsule, versioned_of(capsule), "used_dltensor_versioned", ext);
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  return tensor_over_dl_tensor(capsule, m, "used_dltensor", ext);
}

// Only DLPack 1.x capsules can say their memory is read-only; unversioned ones are writable.
bool dlpack_capsule_read_only(py::handle capsule) {
  check_capsule(capsule);
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) return false;
  return (versioned_of(capsule)->flags & kDLPackFlagReadOnly) != 0;
}

}  // namespace

void init_interop(py::module_& m) {
  m.def("_array_interface", &array_interface, py::arg("tensor"),
        "numpy's __array_interface__ for a CPU tensor (shares memory).");
  m.def(
      "_tensor_from_buffer",
      [](py::object owner, uintptr_t data, std::vector<int64_t> shape, std::vector<int64_t> byte_strides,
         py::handle dtype) {
        ScalarType t;
        SDK_CHECK_TYPE(parse_dtype(dtype.ptr(), &t), "_tensor_from_buffer: expected a dtype");
        return tensor_over_python_memory(std::move(owner), data, shape, byte_strides, t);
      },
      py::arg("owner"), py::arg("data"), py::arg("shape"), py::arg("byte_strides"), py::arg("dtype"),
      "A CPU tensor over memory that `owner` keeps alive (no copy).");
  m.def("_storage_nbytes", [](const Tensor& t) { return t.storage()->nbytes(); }, py::arg("tensor"));
  m.def("_storage_data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage()->data()); },
        py::arg("tensor"));
  // UntypedStorage's byte face (backend_sdk/_tensor.py): a uint8 tensor over the whole storage, sharing
  // the StorageImpl (so resize_ of it grows the storage every view of it sees, and copies through it write
  // the same bytes).
  m.def(
      "_storage_bytes",
      [](const Tensor& t) {
        const int64_t n = static_cast<int64_t>(t.storage()->nbytes());
        auto impl = make_intrusive<TensorImpl>(t.storage(), ScalarType::UInt8, t.device(), t.impl()->key_set());
        const int64_t size[1] = {n}, stride[1] = {1};
        impl->set_sizes_and_strides(IntArrayRef(size, 1), IntArrayRef(stride, 1), 0);
        return Tensor(std::move(impl));
      },
      py::arg("tensor"));
  // Note [Storage objects] (backend_sdk/_storage.py): `storage[start:stop]` is a new storage over those bytes of
  // the old one (PyTorch's storage slicing); its DataPtr keeps the parent StorageImpl alive and frees nothing.
  m.def(
      "_storage_slice",
      [](const Tensor& t, int64_t start, int64_t stop) {
        const int64_t n = static_cast<int64_t>(t.storage()->nbytes());
        SDK_CHECK_INDEX(0 <= start && start <= stop && stop <= n, "storage slice [", start, ":", stop,
                        "] is out of range for a storage of ", n, " bytes");
        char* base = static_cast<char*>(t.storage()->data());
        auto* parent = new Storage(t.storage());
        DataPtr ptr(base ? base + start : nullptr, parent, [](void* ctx) { delete static_cast<Storage*>(ctx); },
                    t.device());
        auto storage = make_intrusive<StorageImpl>(std::move(ptr), static_cast<size_t>(stop - start), nullptr, false);
        auto impl = make_intrusive<TensorImpl>(std::move(storage), ScalarType::UInt8, t.device(), t.impl()->key_set());
        const int64_t size[1] = {stop - start}, stride[1] = {1};
        impl->set_sizes_and_strides(IntArrayRef(size, 1), IntArrayRef(stride, 1), 0);
        return Tensor(std::move(impl));
      },
      py::arg("tensor"), py::arg("start"), py::arg("stop"));
  // Tensor.set_(storage, offset, size, stride): `self` views `source`'s StorageImpl (same device), so it
  // shares its bytes and version counter (Note [Version counter]).
  m.def(
      "_set_storage",
      [](const Tensor& self, const Tensor& source, int64_t offset, std::vector<int64_t> sizes,
         std::vector<int64_t> strides) {
        SDK_CHECK(self.device() == source.device(), "set_: Expected a Storage on ", self.device(), ", got one on ",
                  source.device());
        SDK_CHECK_VALUE(sizes.size() == strides.size(), "set_: mismatch in length of strides and shape");
        SDK_CHECK_VALUE(offset >= 0, "set_: negative storage_offset ", offset);
        const size_t need = TensorImpl::compute_storage_nbytes(sizes, strides, self.itemsize(), offset);
        SDK_CHECK(need <= source.storage()->nbytes(), "set_: setStorage: sizes ", IntArrayRef(sizes), ", strides ",
                  IntArrayRef(strides), " and storage offset ", offset, " require ", need,
                  " bytes, but the storage has only ", source.storage()->nbytes());
        self.impl()->set_storage(source.storage());
        self.impl()->set_sizes_and_strides(sizes, strides, offset);
        self.impl()->bump_version();
      },
      py::arg("self"), py::arg("source"), py::arg("offset"), py::arg("sizes"), py::arg("strides"));
  m.def("_to_dlpack", &to_dlpack, py::arg("tensor"), "A 'dltensor' capsule sharing the tensor's memory.");
  m.def("_from_dlpack_capsule", &from_dlpack_capsule, py::arg("capsule"), py::arg("ext_device") = py::none(),
        "A tensor sharing the memory of a 'dltensor' or 'dltensor_versioned' capsule, which it consumes.");
  m.def("_dlpack_capsule_read_only", &dlpack_capsule_read_only, py::arg("capsule"),
        "Whether a DLPack capsule flags its memory read-only (DLPack 1.x only); does not consume it.");
}

}  // namespace sdk::python
