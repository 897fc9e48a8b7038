// backend_sdk._C._runtime: the "sdk.collectives" device extension (Note
// [Device collectives extension]) for backend_sdk.distributed's device
// backends (Note [Device collectives backend], distributed/_ccl_backend.py),
// and the SDK's fabric on MPI (Note [MPI fabric]).
#include <dlfcn.h>
#include <link.h>

#include <pybind11/pybind11.h>

#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/detail/DeviceCollectives.h>
#include "python/PyRuntime.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

// Note [MPI fabric]
// ~~~~~~~~~~~~~~~~~
// The sdk_ccl_fabric the SDK hands a device whose collectives cross
// processes (device_sim's simccl carries its bytes over it). The SDK does not
// link MPI (mpi4py's wheel ships no headers and the MPI library is chosen at
// install time): the fabric finds MPI_Sendrecv in the MPI library mpi4py
// already loaded (dl_iterate_phdr over the loaded objects, dlopen with
// RTLD_NOLOAD) and calls it on a communicator mpi4py duplicated for the
// process group (its handle from MPI._handleof, as the MPI_BYTE datatype's).
// Handles travel as intptr_t: MPICH's int handles and Open MPI's pointer
// handles are both passed in one integer register or stack slot, so one
// declaration calls either ABI. The status is a 64-byte buffer (bigger than
// either library's MPI_Status). The calls run on the device's worker threads
// without the GIL (MPI is initialised with MPI_THREAD_MULTIPLE, Note
// [Distributed engine]); messages over INT_MAX bytes go in 1 GiB pieces.
using SendrecvFn = int (*)(const void*, int, intptr_t, int, int, void*, int, intptr_t, int, int, intptr_t, void*);
using SendFn = int (*)(const void*, int, intptr_t, int, int, intptr_t);
using RecvFn = int (*)(void*, int, intptr_t, int, int, intptr_t, void*);
using ErrorStringFn = int (*)(int, char*, int*);

struct MpiSymbols {
  SendrecvFn sendrecv = nullptr;
  SendFn send = nullptr;
  RecvFn recv = nullptr;
  ErrorStringFn error_string = nullptr;
};

int find_mpi_cb(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<MpiSymbols*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || std::strstr(name, "libmpi") == nullptr) return 0;
  void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return 0;
  out->sendrecv = reinterpret_cast<SendrecvFn>(dlsym(h, "MPI_Sendrecv"));
  out->send = reinterpret_cast<SendFn>(dlsym(h, "MPI_Send"));
  out->recv = reinterpret_cast<RecvFn>(dlsym(h, "MPI_Recv"));
  out->error_string = reinterpret_cast<ErrorStringFn>(dlsym(h, "MPI_Error_string"));
  dlclose(h);  // NOLOAD took a reference; mpi4py keeps the library loaded
  return out->sendrecv && out->send && out->recv ? 1 : 0;
}

const MpiSymbols& mpi_symbols() {
  static MpiSymbols s = [] {
    MpiSymbols found;
    dl_iterate_phdr(&find_mpi_cb, &found);
    if (!found.sendrecv) {  // a library linked into the executable
      found.sendrecv = reinterpret_cast<SendrecvFn>(dlsym(RTLD_DEFAULT, "MPI_Sendrecv"));
      found.send = reinterpret_cast<SendFn>(dlsym(RTLD_DEFAULT, "MPI_Send"));
      found.recv = reinterpret_cast<RecvFn>(dlsym(RTLD_DEFAULT, "MPI_Recv"));
      found.error_string = reinterpret_cast<ErrorStringFn>(dlsym(RTLD_DEFAULT, "MPI_Error_string"));
    }
    return found;
  }();
  return s;
}

thread_local std::string t_fabric_error;
constexpr int kFabricTag = 0x5cc1;
constexpr size_t kPiece = size_t(1) << 30;

class MpiFabric {
 public:
  MpiFabric(intptr_t comm, intptr_t byte_type) : comm_(comm), byte_(byte_type) {
    SDK_CHECK(mpi_symbols().sendrecv != nullptr,
              "the MPI fabric of device collectives: no loaded MPI library exports MPI_Sendrecv (import mpi4py first)");
    table_.struct_size = sizeof(sdk_ccl_fabric);
    table_.context = this;
    table_.sendrecv = &MpiFabric::sendrecv_cb;
    table_.last_error = [](void*) -> const char* { return t_fabric_error.c_str(); };
  }
  const sdk_ccl_fabric* table() const { return &table_; }

 private:
  static sdk_status sendrecv_cb(void* ctx, int32_t dst, const void* sbuf, size_t sn, int32_t src, void* rbuf,
                                size_t rn) {
    auto* self = static_cast<MpiFabric*>(ctx);
    const MpiSymbols& m = mpi_symbols();
    alignas(16) char status[64];
    size_t so = 0, ro = 0;
    do {
      const size_t s = dst >= 0 ? std::min(kPiece, sn - so) : 0, r = src >= 0 ? std::min(kPiece, rn - ro) : 0;
      const bool do_s = dst >= 0 && (so < sn || sn == 0) && !(sn == 0 && so > 0);
      const bool do_r = src >= 0 && (ro < rn || rn == 0) && !(rn == 0 && ro > 0);
      int rc = 0;
      const char* sp = static_cast<const char*>(sbuf) + so;
      char* rp = static_cast<char*>(rbuf) + ro;
      if (do_s && do_r) {
        rc = m.sendrecv(sp, int(s), self->byte_, dst, kFabricTag, rp, int(r), self->byte_, src, kFabricTag,
                        self->comm_, status);
      } else if (do_s) {
        rc = m.send(sp, int(s), self->byte_, dst, kFabricTag, self->comm_);
      } else if (do_r) {
        rc = m.recv(rp, int(r), self->byte_, src, kFabricTag, self->comm_, status);
      }
      if (rc != 0) {
        char text[512] = {0};
        int len = 0;
        if (m.error_string) m.error_string(rc, text, &len);
        t_fabric_error = "MPI error " + std::to_string(rc) + (text[0] ? std::string(": ") + text : "");
        return SDK_ERROR_UNKNOWN;
      }
      so += s;
      ro += r;
      if (s == 0 && r == 0) break;
    } while ((dst >= 0 && so < sn) || (src >= 0 && ro < rn));
    return SDK_SUCCESS;
  }

  intptr_t comm_, byte_;
  sdk_ccl_fabric table_{};
};

DeviceType device_type_of(const std::string& backend) { return parse_backend(backend); }

sdk_ccl_comm_t as_comm(uintptr_t h) { return reinterpret_cast<sdk_ccl_comm_t>(h); }
sdk_stream_t as_stream(uintptr_t h) { return reinterpret_cast<sdk_stream_t>(h); }
const void* as_ptr(uintptr_t p) { return reinterpret_cast<const void*>(p); }
void* as_mut(uintptr_t p) { return reinterpret_cast<void*>(p); }

}  // namespace

void init_runtime_collectives(py::module_& m) {
  py::class_<MpiFabric>(m, "_CclMpiFabric", "The SDK's fabric on MPI for device collectives (Note [MPI fabric]).")
      .def(py::init<intptr_t, intptr_t>(), py::arg("comm_handle"), py::arg("byte_handle"));
  m.def("_has_device_collectives",
        [](const std::string& backend) { return runtime::has_device_collectives(device_type_of(backend)); },
        py::arg("backend"));
  m.def(
      "_ccl_backend_name",
      [](const std::string& backend) {
        return std::string(runtime::device_collectives(device_type_of(backend), "backend_name").backend_name);
      },
      py::arg("backend"));
  m.def(
      "_ccl_unique_id",
      [](const std::string& backend) {
        DeviceType t = device_type_of(backend);
        const auto& c = runtime::device_collectives(t, "get_unique_id");
        sdk_ccl_unique_id id{};
        runtime::check_status(t, c.get_unique_id(runtime::device_api(t).context(), &id), "ccl get_unique_id");
        return py::bytes(id.internal, sizeof(id.internal));
      },
      py::arg("backend"));
  m.def(
      "_ccl_comm_init",
      [](const std::string& backend, int32_t device, const py::bytes& uid, int32_t nranks, int32_t rank,
         const MpiFabric* fabric) {
        DeviceType t = device_type_of(backend);
        const auto& c = runtime::device_collectives(t, "comm_init_rank");
        std::string bytes = uid;
        SDK_CHECK_VALUE(bytes.size() == SDK_CCL_UNIQUE_ID_BYTES, "ccl comm_init_rank: the unique id has ",
                        bytes.size(), " bytes, expected ", SDK_CCL_UNIQUE_ID_BYTES);
        sdk_ccl_unique_id id{};
        std::memcpy(id.internal, bytes.data(), bytes.size());
        sdk_ccl_comm_t comm = nullptr;
        runtime::check_status(t,
                              c.comm_init_rank(runtime::device_api(t).context(), &comm, device, &id, nranks, rank,
                                               fabric ? fabric->table() : nullptr),
                              "ccl comm_init_rank");
        return reinterpret_cast<uintptr_t>(comm);
      },
      py::arg("backend"), py::arg("device"), py::arg("unique_id"), py::arg("nranks"), py::arg("rank"),
      py::arg("fabric").none(true));
  m.def(
      "_ccl_comm_destroy",
      [](const std::string& backend, uintptr_t comm) {
        DeviceType t = device_type_of(backend);
        const auto& c = runtime::device_collectives(t, "comm_destroy");
        runtime::check_status(t, c.comm_destroy(runtime::device_api(t).context(), as_comm(comm)), "ccl comm_destroy");
      },
      py::arg("backend"), py::arg("comm"));
  // One entry for the enqueueing calls: name, comm, send, recv, count, dtype (SDK_DTYPE_*), op or root/peer, stream.
  m.def(
      "_ccl_enqueue",
      [](const std::string& backend, const std::string& name, uintptr_t comm, uintptr_t send, uintptr_t recv,
         size_t count, int32_t dtype, int32_t arg, uintptr_t stream) {
        DeviceType t = device_type_of(backend);
        const auto& c = runtime::device_collectives(t, name.c_str());
        void* ctx = runtime::device_api(t).context();
        sdk_status st;
        if (name == "all_reduce") {
          st = c.all_reduce(ctx, as_ptr(send), as_mut(recv), count, dtype, arg, as_comm(comm), as_stream(stream));
        } else if (name == "all_gather") {
          st = c.all_gather(ctx, as_ptr(send), as_mut(recv), count, dtype, as_comm(comm), as_stream(stream));
        } else if (name == "reduce_scatter") {
          st = c.reduce_scatter(ctx, as_ptr(send), as_mut(recv), count, dtype, arg, as_comm(comm), as_stream(stream));
        } else if (name == "broadcast") {
          st = c.broadcast(ctx, as_ptr(send), as_mut(recv), count, dtype, arg, as_comm(comm), as_stream(stream));
        } else if (name == "send") {
          st = c.send(ctx, as_ptr(send), count, dtype, arg, as_comm(comm), as_stream(stream));
        } else if (name == "recv") {
          st = c.recv(ctx, as_mut(recv), count, dtype, arg, as_comm(comm), as_stream(stream));
        } else {
          SDK_THROW(Value, "ccl: unknown collective '", name, "'");
        }
        runtime::check_status(t, st, "ccl " + name);
      },
      py::arg("backend"), py::arg("name"), py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("count"),
      py::arg("dtype"), py::arg("arg"), py::arg("stream"));
}

}  // namespace sdk::python
