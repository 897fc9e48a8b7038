// libbackend_sdk's implementation of the ABI-stable C shim (stable/c/shim.h).
//
// Every entry point runs its body inside `guarded`, which turns any exception into a
// status and the thread's last message (Note [Stable status codes]); nothing here lets an
// exception reach the C caller. Handles are heap `sdk::Tensor`s (one reference each) and
// heap `StableLibrary`s holding an sdk::Library (Note [Stable handle ownership]).
#include <backend_sdk/stable/c/shim.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/IValue.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/dispatch/detail/LibraryGroups.h>
#include <backend_sdk/dispatch/detail/SchemaDefaults.h>
#include <backend_sdk/dispatch/detail/StaticRegistration.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace sdk {
namespace {

// The C header's numbers are the C++ enums' (the C header may not include C++ headers).
static_assert(SDK_STABLE_DTYPE_BOOL == static_cast<int>(ScalarType::Bool));
static_assert(SDK_STABLE_DTYPE_UINT8 == static_cast<int>(ScalarType::UInt8));
static_assert(SDK_STABLE_DTYPE_INT8 == static_cast<int>(ScalarType::Int8));
static_assert(SDK_STABLE_DTYPE_INT16 == static_cast<int>(ScalarType::Int16));
static_assert(SDK_STABLE_DTYPE_INT32 == static_cast<int>(ScalarType::Int32));
static_assert(SDK_STABLE_DTYPE_INT64 == static_cast<int>(ScalarType::Int64));
static_assert(SDK_STABLE_DTYPE_FLOAT16 == static_cast<int>(ScalarType::Float16));
static_assert(SDK_STABLE_DTYPE_BFLOAT16 == static_cast<int>(ScalarType::BFloat16));
static_assert(SDK_STABLE_DTYPE_FLOAT32 == static_cast<int>(ScalarType::Float32));
static_assert(SDK_STABLE_DTYPE_FLOAT64 == static_cast<int>(ScalarType::Float64));
static_assert(SDK_STABLE_DEVICE_CPU == static_cast<int>(DeviceType::CPU));
static_assert(SDK_STABLE_DEVICE_META == static_cast<int>(DeviceType::Meta));
static_assert(SDK_STABLE_DEVICE_PRIVATEUSE1 == static_cast<int>(DeviceType::PrivateUse1));
static_assert(SDK_STABLE_DEVICE_PRIVATEUSE2 == static_cast<int>(DeviceType::PrivateUse2));
static_assert(SDK_STABLE_DEVICE_PRIVATEUSE3 == static_cast<int>(DeviceType::PrivateUse3));
static_assert(SDK_STABLE_ERROR_RUNTIME == static_cast<int>(ErrorKind::Runtime) + 1);
static_assert(SDK_STABLE_ERROR_VALUE == static_cast<int>(ErrorKind::Value) + 1);
static_assert(SDK_STABLE_ERROR_TYPE == static_cast<int>(ErrorKind::Type) + 1);
static_assert(SDK_STABLE_ERROR_INDEX == static_cast<int>(ErrorKind::Index) + 1);
static_assert(SDK_STABLE_ERROR_NOT_IMPLEMENTED == static_cast<int>(ErrorKind::NotImplemented) + 1);
static_assert(SDK_STABLE_ERROR_OUT_OF_MEMORY == static_cast<int>(ErrorKind::OutOfMemory) + 1);
static_assert(SDK_STABLE_ERROR_ACCELERATOR == static_cast<int>(ErrorKind::Accelerator) + 1);
static_assert(sizeof(sdk_stable_ivalue) == 16 && offsetof(sdk_stable_ivalue, tag) == 8);
static_assert(sizeof(sdk_stable_int_list) == 16);

thread_local std::string t_last_error;

sdk_stable_status fail(sdk_stable_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

template <typename F>
sdk_stable_status guarded(F&& body) noexcept {
  try {
    body();
    return SDK_STABLE_OK;
  } catch (const Error& e) {
    return fail(static_cast<sdk_stable_status>(e.kind()) + 1, e.what());
  } catch (const std::bad_alloc&) {
    return fail(SDK_STABLE_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(SDK_STABLE_ERROR_RUNTIME, e.what());
  } catch (...) {
    return fail(SDK_STABLE_ERROR_RUNTIME, "unknown C++ exception");
  }
}

Tensor& tensor_of(sdk_stable_tensor h, const char* fn) {
  SDK_CHECK_VALUE(h != nullptr, fn, ": the tensor handle is NULL");
  return *reinterpret_cast<Tensor*>(h);
}

sdk_stable_tensor new_handle(Tensor t) { return reinterpret_cast<sdk_stable_tensor>(new Tensor(std::move(t))); }

template <typename T>
void check_out(T* out, const char* fn) {
  SDK_CHECK_VALUE(out != nullptr, fn, ": the output pointer is NULL");
}

// The geometry, dtype and device arguments every tensor-making shim call takes, checked once here:
// the device they name.
Device checked_tensor_args(const char* fn, const int64_t* sizes, int64_t ndim, int32_t dtype, int32_t device_type,
                           int32_t device_index) {
  SDK_CHECK_VALUE(ndim >= 0 && (ndim == 0 || sizes != nullptr), fn, ": invalid sizes (ndim ", ndim, ")");
  SDK_CHECK_TYPE(dtype >= 0 && dtype < kNumScalarTypes, fn, ": invalid dtype ", dtype);
  SDK_CHECK_VALUE(device_type >= 0 && device_type < kNumDeviceTypes, fn, ": invalid device type ", device_type);
  SDK_CHECK_VALUE(device_index >= -1 && device_index <= 127, fn, ": invalid device index ", device_index);
  return Device(static_cast<DeviceType>(device_type), static_cast<int8_t>(device_index));
}

uint64_t bits_of(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}
double double_of(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
uint64_t device_payload(Device d) {
  return static_cast<uint8_t>(d.type) | (static_cast<uint64_t>(static_cast<uint8_t>(d.index)) << 8);
}
Device device_of_payload(uint64_t p, const std::string& what) {
  int type = static_cast<int>(p & 0xff);
  SDK_CHECK_VALUE(type < kNumDeviceTypes, what, ": invalid device type ", type);
  return Device(static_cast<DeviceType>(type), static_cast<int8_t>((p >> 8) & 0xff));
}

const char* tag_name(int32_t tag) {
  switch (tag) {
    case SDK_STABLE_TAG_NONE: return "None";
    case SDK_STABLE_TAG_TENSOR: return "Tensor";
    case SDK_STABLE_TAG_INT: return "int";
    case SDK_STABLE_TAG_DOUBLE: return "float";
    case SDK_STABLE_TAG_BOOL: return "bool";
    case SDK_STABLE_TAG_INT_LIST: return "int[]";
    case SDK_STABLE_TAG_DEVICE: return "Device";
    case SDK_STABLE_TAG_STRING: return "str";
    default: return "<invalid tag>";
  }
}

// A stable value for an argument of schema type `type` -> IValue, checked against the type.
IValue to_ivalue(const sdk_stable_ivalue& v, const Type& type, const std::string& what) {
  auto mismatch = [&]() {
    SDK_THROW(Type, what, " expected a value of type ", type.str(), " but got a stable value tagged ", tag_name(v.tag));
  };
  if (type.kind == TypeKind::Optional) {
    if (v.tag == SDK_STABLE_TAG_NONE) return IValue();
    return to_ivalue(v, *type.elem, what);
  }
  switch (type.kind) {
    case TypeKind::Tensor:
      if (v.tag != SDK_STABLE_TAG_TENSOR) mismatch();
      return IValue(tensor_of(reinterpret_cast<sdk_stable_tensor>(v.payload), what.c_str()));
    case TypeKind::Int:
    case TypeKind::SymInt:
    case TypeKind::ScalarType:
    case TypeKind::Layout:
    case TypeKind::MemoryFormat:
      if (v.tag != SDK_STABLE_TAG_INT) mismatch();
      return IValue(static_cast<int64_t>(v.payload));
    case TypeKind::Float:
      if (v.tag == SDK_STABLE_TAG_INT) return IValue(static_cast<double>(static_cast<int64_t>(v.payload)));
      if (v.tag != SDK_STABLE_TAG_DOUBLE) mismatch();
      return IValue(double_of(v.payload));
    case TypeKind::Bool:
      if (v.tag != SDK_STABLE_TAG_BOOL) mismatch();
      return IValue(v.payload != 0);
    case TypeKind::Scalar:
      if (v.tag == SDK_STABLE_TAG_INT) return IValue(static_cast<int64_t>(v.payload));
      if (v.tag == SDK_STABLE_TAG_DOUBLE) return IValue(double_of(v.payload));
      if (v.tag == SDK_STABLE_TAG_BOOL) return IValue(v.payload != 0);
      mismatch();
      break;
    case TypeKind::Str:
      if (v.tag != SDK_STABLE_TAG_STRING || v.payload == 0) mismatch();
      return IValue(std::string(reinterpret_cast<const char*>(v.payload)));
    case TypeKind::Device:
      if (v.tag != SDK_STABLE_TAG_DEVICE) mismatch();
      return IValue(device_of_payload(v.payload, what));
    case TypeKind::List: {
      TypeKind ek = type.elem->kind;
      if (ek != TypeKind::Int && ek != TypeKind::SymInt) break;
      if (v.tag != SDK_STABLE_TAG_INT_LIST || v.payload == 0) mismatch();
      const auto* list = reinterpret_cast<const sdk_stable_int_list*>(v.payload);
      SDK_CHECK_VALUE(list->size >= 0 && (list->size == 0 || list->data != nullptr), what,
                      ": invalid int list (size ", list->size, ")");
      return IValue(std::vector<int64_t>(list->data, list->data + list->size));
    }
    default:
      break;
  }
  SDK_THROW(NotImplemented, what, " has type ", type.str(), ", which the stable ABI cannot pass yet");
}

// An IValue -> a stable value the receiver owns (tensors as new handles). Only what
// Note [StableIValue] allows as a return.
sdk_stable_ivalue to_stable_return(const IValue& v, const std::string& what) {
  sdk_stable_ivalue out{0, SDK_STABLE_TAG_NONE, 0};
  switch (v.tag()) {
    case IValue::Tag::None:
      break;
    case IValue::Tag::Tensor:
      if (!v.to_tensor().defined()) break;
      out.tag = SDK_STABLE_TAG_TENSOR;
      out.payload = reinterpret_cast<uintptr_t>(new_handle(v.to_tensor()));
      break;
    case IValue::Tag::Int:
      out.tag = SDK_STABLE_TAG_INT;
      out.payload = static_cast<uint64_t>(v.to_int());
      break;
    case IValue::Tag::Double:
      out.tag = SDK_STABLE_TAG_DOUBLE;
      out.payload = bits_of(v.to_double());
      break;
    case IValue::Tag::Bool:
      out.tag = SDK_STABLE_TAG_BOOL;
      out.payload = v.to_bool() ? 1 : 0;
      break;
    case IValue::Tag::Device:
      out.tag = SDK_STABLE_TAG_DEVICE;
      out.payload = device_payload(v.to_device());
      break;
    default:
      SDK_THROW(NotImplemented, what, " is a ", v.tag_name(), ", which the stable ABI cannot return yet");
  }
  return out;
}

void free_stable(sdk_stable_ivalue* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (values[i].tag == SDK_STABLE_TAG_TENSOR) delete reinterpret_cast<Tensor*>(values[i].payload);
    values[i].tag = SDK_STABLE_TAG_NONE;
  }
}

std::string qualified_name(const char* name, const char* overload) {
  SDK_CHECK_VALUE(name != nullptr && *name != '\0', "sdk_stable_call_op: the operator name is empty");
  std::string q = name;
  if (overload != nullptr && *overload != '\0') q += std::string(".") + overload;
  return q;
}

// Note [Stable kernels]
// ~~~~~~~~~~~~~~~~~~~~~
// A kernel registered through the shim is a boxed SDK kernel whose functor holds the C
// function and its ctx. A call pops the schema's arguments, lends them to the kernel as
// stable values (tensor handles and int lists owned here, freed after the call, so a kernel
// that keeps one past its return breaks the ownership rule, not memory safety of others),
// and takes over the returns it wrote, checked against the schema's return types. A failing
// kernel's status and message become an sdk::Error of that kind naming the operator.
struct StableKernel final : OperatorKernel {
  sdk_stable_boxed_kernel fn;
  void* ctx;
  StableKernel(sdk_stable_boxed_kernel f, void* c) : fn(f), ctx(c) {}
};

void stable_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  auto* k = static_cast<StableKernel*>(functor);
  const FunctionSchema& schema = op.schema();
  const size_t num_args = schema.arguments.size();
  const size_t num_returns = schema.returns.size();
  SDK_CHECK(stack->size() >= num_args, op.name(), ": the stack holds ", stack->size(), " values, the schema needs ",
            num_args);
  std::vector<IValue> args(std::make_move_iterator(stack->end() - num_args), std::make_move_iterator(stack->end()));
  stack->erase(stack->end() - num_args, stack->end());

  std::vector<sdk_stable_ivalue> sv(std::max(num_args, num_returns), sdk_stable_ivalue{0, SDK_STABLE_TAG_NONE, 0});
  std::vector<std::unique_ptr<Tensor>> lent;  // argument handles, freed after the call
  std::vector<sdk_stable_int_list> lists(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const IValue& a = args[i];
    sdk_stable_ivalue& s = sv[i];
    switch (a.tag()) {
      case IValue::Tag::None: break;
      case IValue::Tag::Tensor:
        if (!a.to_tensor().defined()) break;
        lent.push_back(std::make_unique<Tensor>(a.to_tensor()));
        s.tag = SDK_STABLE_TAG_TENSOR;
        s.payload = reinterpret_cast<uintptr_t>(lent.back().get());
        break;
      case IValue::Tag::Int: s.tag = SDK_STABLE_TAG_INT; s.payload = static_cast<uint64_t>(a.to_int()); break;
      case IValue::Tag::Double: s.tag = SDK_STABLE_TAG_DOUBLE; s.payload = bits_of(a.to_double()); break;
      case IValue::Tag::Bool: s.tag = SDK_STABLE_TAG_BOOL; s.payload = a.to_bool() ? 1 : 0; break;
      case IValue::Tag::Device: s.tag = SDK_STABLE_TAG_DEVICE; s.payload = device_payload(a.to_device()); break;
      case IValue::Tag::String:
        s.tag = SDK_STABLE_TAG_STRING;
        s.payload = reinterpret_cast<uintptr_t>(a.to_string().c_str());
        break;
      case IValue::Tag::IntList:
        lists[i] = sdk_stable_int_list{a.to_int_list().data(), static_cast<int64_t>(a.to_int_list().size())};
        s.tag = SDK_STABLE_TAG_INT_LIST;
        s.payload = reinterpret_cast<uintptr_t>(&lists[i]);
        break;
      default:
        SDK_THROW(NotImplemented, op.name(), ": argument '", schema.arguments[i].name, "' is a ", a.tag_name(),
                  ", which the stable ABI cannot pass to a kernel yet");
    }
  }
  sdk_stable_status st = k->fn(k->ctx, sv.data(), static_cast<int64_t>(num_args), static_cast<int64_t>(num_returns));
  if (st != SDK_STABLE_OK) {
    std::string msg = t_last_error.empty() ? std::string("the kernel failed without a message") : t_last_error;
    t_last_error.clear();
    ErrorKind kind = (st >= SDK_STABLE_ERROR_RUNTIME && st <= SDK_STABLE_ERROR_ACCELERATOR)
                         ? static_cast<ErrorKind>(st - 1)
                         : ErrorKind::Runtime;
    throw Error(kind, msg);
  }
  // Take over every return first (so none leaks if one is wrong), then check them. A return
  // that is one of the argument handles (or twice the same handle) breaks Note [Stable handle
  // ownership]: taking it would free it twice, so it is refused instead.
  std::vector<std::unique_ptr<Tensor>> owned;
  bool reused_handle = false;
  for (size_t i = 0; i < num_returns; ++i) {
    if (sv[i].tag != SDK_STABLE_TAG_TENSOR || sv[i].payload == 0) continue;
    auto* t = reinterpret_cast<Tensor*>(sv[i].payload);
    bool seen = std::any_of(lent.begin(), lent.end(), [&](const auto& p) { return p.get() == t; }) ||
                std::any_of(owned.begin(), owned.end(), [&](const auto& p) { return p.get() == t; });
    if (seen) {
      reused_handle = true;
      sv[i].payload = 0;
    } else {
      owned.emplace_back(t);
    }
  }
  SDK_CHECK(!reused_handle, op.name(), ": a stable kernel returned one of its argument handles (or one handle twice); "
            "a return must be a new reference (sdk_stable_tensor_new_reference)");
  size_t next_owned = 0;
  for (size_t i = 0; i < num_returns; ++i) {
    const Type& type = *schema.returns[i].type;
    std::string what = op.name() + ": return " + std::to_string(i) + " of the stable kernel";
    if (sv[i].tag == SDK_STABLE_TAG_TENSOR) {
      SDK_CHECK_TYPE(type.base_kind() == TypeKind::Tensor && type.kind != TypeKind::List, what,
                     " is a Tensor, the schema says ", type.str());
      SDK_CHECK_VALUE(sv[i].payload != 0, what, " is a NULL tensor handle");
      stack->emplace_back(*owned[next_owned++]);
    } else {
      SDK_CHECK_TYPE(type.kind != TypeKind::Tensor, what, " is tagged ", tag_name(sv[i].tag),
                     ", the schema says Tensor");
      stack->push_back(to_ivalue(sv[i], type, what));
    }
  }
}

struct StableLibrary {
  Library lib;
};

// Note [Stable device backends] (stable/c/shim.h): the copy_ kernel of a stable backend. The
// SDK's contract-backed copy_ (ops/DeviceOps.h) takes the within-device copy as a plain function
// pointer, so the backend's C callback and its ctx reach it through a thread-local set for the
// duration of the call (copy_ calls it synchronously, on the calling thread).
struct StableLocalCopy final : OperatorKernel {
  sdk_stable_local_copy_fn fn;
  void* ctx;
  StableLocalCopy(sdk_stable_local_copy_fn f, void* c) : fn(f), ctx(c) {}
};

thread_local const StableLocalCopy* t_local_copy = nullptr;

void call_stable_local_copy(const Tensor& dst, const Tensor& src) {
  const StableLocalCopy* lc = t_local_copy;
  SDK_CHECK(lc != nullptr, "copy_: the stable backend's local copy ran outside its copy_ kernel");
  Tensor d = dst, s = src;  // borrowed by the callback
  sdk_stable_status st = lc->fn(lc->ctx, reinterpret_cast<sdk_stable_tensor>(&d), reinterpret_cast<sdk_stable_tensor>(&s));
  if (st != SDK_STABLE_OK) {
    std::string msg = t_last_error.empty() ? std::string("the backend's local copy failed without a message")
                                           : std::move(t_last_error);
    t_last_error.clear();
    ErrorKind kind = (st >= SDK_STABLE_ERROR_RUNTIME && st <= SDK_STABLE_ERROR_ACCELERATOR)
                         ? static_cast<ErrorKind>(st - 1)
                         : ErrorKind::Runtime;
    throw Error(kind, "copy_ (within the device): " + msg);
  }
}

// copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
void stable_copy_boxed(OperatorKernel* functor, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  SDK_CHECK(stack->size() >= 3, "copy_: the stack holds ", stack->size(), " values, the schema needs 3");
  bool non_blocking = stack->back().to_bool();
  Tensor src = (stack->end() - 2)->to_tensor();
  Tensor self = (stack->end() - 3)->to_tensor();
  stack->erase(stack->end() - 3, stack->end());
  const StableLocalCopy* previous = t_local_copy;
  t_local_copy = static_cast<const StableLocalCopy*>(functor);
  struct Restore {
    const StableLocalCopy* previous;
    ~Restore() { t_local_copy = previous; }
  } restore{previous};
  stack->emplace_back(ops::device::copy_(self, src, non_blocking, &call_stable_local_copy));
}

}  // namespace
}  // namespace sdk

using sdk::guarded;

extern "C" {

uint32_t sdk_stable_abi_version(void) { return SDK_STABLE_ABI_VERSION; }

const char* sdk_stable_last_error_message(void) { return sdk::t_last_error.c_str(); }

void sdk_stable_set_last_error_message(const char* message) {
  try {
    sdk::t_last_error = message ? message : "";
  } catch (...) {
    // out of memory while copying the message: keep the previous one
  }
}

sdk_stable_status sdk_stable_empty_strided(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype,
                                           int32_t device_type, int32_t device_index, sdk_stable_tensor* out) {
  return guarded([&] {
    const char* fn = "sdk_stable_empty_strided";
    sdk::check_out(out, fn);
    *out = nullptr;
    const sdk::Device device = sdk::checked_tensor_args(fn, sizes, ndim, dtype, device_type, device_index);
    sdk::IntArrayRef size(sizes, static_cast<size_t>(ndim));
    auto st = static_cast<sdk::ScalarType>(dtype);
    // empty_on allocates with the device type's allocator, which serves the *current* device: a
    // tensor asked for on another device index is allocated there under a guard, as the
    // dispatcher's allocation kernels do (ops/DeviceOps.cpp).
    std::optional<sdk::runtime::DeviceGuard> guard;
    if (device.type != sdk::DeviceType::CPU && device.type != sdk::DeviceType::Meta) guard.emplace(device);
    sdk::Tensor t = strides ? sdk::ops::empty_strided_on(device, size, sdk::IntArrayRef(strides, ndim), st, std::nullopt)
                            : sdk::ops::empty_on(device, size, st, std::nullopt, std::nullopt);
    *out = sdk::new_handle(std::move(t));
  });
}

sdk_stable_status sdk_stable_from_blob(void* data, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                                       int32_t dtype, int32_t device_type, int32_t device_index,
                                       sdk_stable_tensor* out) {
  return guarded([&] {
    const char* fn = "sdk_stable_from_blob";
    sdk::check_out(out, fn);
    *out = nullptr;
    const sdk::Device device = sdk::checked_tensor_args(fn, sizes, ndim, dtype, device_type, device_index);
    sdk::IntArrayRef size(sizes, static_cast<size_t>(ndim));
    auto st = static_cast<sdk::ScalarType>(dtype);
    sdk::DimVector stride = strides ? sdk::DimVector(sdk::IntArrayRef(strides, static_cast<size_t>(ndim))) : sdk::contiguous_strides(size, fn);
    size_t nbytes = sdk::TensorImpl::compute_storage_nbytes(size, stride, sdk::element_size(st), 0, fn);
    SDK_CHECK_VALUE(data != nullptr || nbytes == 0, fn, ": data is NULL for a tensor of ", nbytes, " bytes");
    *out = sdk::new_handle(sdk::from_blob(data, nbytes, size, stride, 0, st, device));
  });
}

sdk_stable_status sdk_stable_tensor_free(sdk_stable_tensor tensor) {
  return guarded([&] { delete reinterpret_cast<sdk::Tensor*>(tensor); });
}

sdk_stable_status sdk_stable_tensor_new_reference(sdk_stable_tensor tensor, sdk_stable_tensor* out) {
  return guarded([&] {
    const char* fn = "sdk_stable_tensor_new_reference";
    sdk::check_out(out, fn);
    *out = sdk::new_handle(sdk::tensor_of(tensor, fn));
  });
}

#define SDK_STABLE_GETTER(fname, T, expr)                              \
  sdk_stable_status fname(sdk_stable_tensor tensor, T* out) {          \
    return guarded([&] {                                               \
      sdk::check_out(out, #fname);                                     \
      const sdk::Tensor& t = sdk::tensor_of(tensor, #fname);           \
      SDK_CHECK_VALUE(t.defined(), #fname ": the tensor is undefined"); \
      *out = (expr);                                                   \
    });                                                                \
  }

SDK_STABLE_GETTER(sdk_stable_tensor_dim, int64_t, t.dim())
SDK_STABLE_GETTER(sdk_stable_tensor_sizes, const int64_t*, t.sizes().data())
SDK_STABLE_GETTER(sdk_stable_tensor_strides, const int64_t*, t.strides().data())
SDK_STABLE_GETTER(sdk_stable_tensor_numel, int64_t, t.numel())
SDK_STABLE_GETTER(sdk_stable_tensor_storage_offset, int64_t, t.storage_offset())
SDK_STABLE_GETTER(sdk_stable_tensor_dtype, int32_t, static_cast<int32_t>(t.dtype()))
SDK_STABLE_GETTER(sdk_stable_tensor_data_ptr, void*, t.data_ptr())
SDK_STABLE_GETTER(sdk_stable_tensor_is_contiguous, int32_t, t.is_contiguous() ? 1 : 0)
#undef SDK_STABLE_GETTER

sdk_stable_status sdk_stable_tensor_device(sdk_stable_tensor tensor, int32_t* out_type, int32_t* out_index) {
  return guarded([&] {
    const char* fn = "sdk_stable_tensor_device";
    sdk::check_out(out_type, fn);
    sdk::check_out(out_index, fn);
    sdk::Device d = sdk::tensor_of(tensor, fn).device();
    *out_type = static_cast<int32_t>(d.type);
    *out_index = d.index;
  });
}

sdk_stable_status sdk_stable_call_op(const char* name, const char* overload, sdk_stable_ivalue* stack,
                                     int64_t num_args, int64_t capacity, int64_t* num_returns) {
  return guarded([&] {
    std::string qualified = sdk::qualified_name(name, overload);
    sdk::check_out(num_returns, "sdk_stable_call_op");
    *num_returns = 0;
    std::optional<sdk::OperatorHandle> op = sdk::Dispatcher::singleton().find_schema(qualified);
    SDK_CHECK_VALUE(op.has_value(), "sdk_stable_call_op: unknown operator '", qualified, "'");
    const sdk::FunctionSchema& schema = op->schema();
    const int64_t n_schema = static_cast<int64_t>(schema.arguments.size());
    const int64_t n_returns = static_cast<int64_t>(schema.returns.size());
    SDK_CHECK_VALUE(num_args >= 0 && num_args <= n_schema, qualified, ": got ", num_args,
                    " stable arguments, the schema takes ", n_schema, " (", schema.str(), ")");
    SDK_CHECK_VALUE(num_args == 0 || stack != nullptr, qualified, ": the stack is NULL");
    SDK_CHECK_VALUE(capacity >= n_returns && capacity >= num_args, qualified, ": the stack has room for ", capacity,
                    " values, the call needs ", std::max(n_returns, num_args));
    sdk::Stack ivalues;
    ivalues.reserve(n_schema);
    for (int64_t i = 0; i < n_schema; ++i) {
      const sdk::Argument& arg = schema.arguments[i];
      if (i < num_args) {
        ivalues.push_back(sdk::to_ivalue(stack[i], *arg.type, qualified + ": argument '" + arg.name + "'"));
      } else {
        SDK_CHECK_VALUE(arg.default_text.has_value(), qualified, ": missing value for argument '", arg.name,
                        "' (", schema.str(), ")");
        ivalues.push_back(sdk::detail::default_ivalue(arg));
      }
    }
    op->call_boxed(&ivalues);
    SDK_CHECK(static_cast<int64_t>(ivalues.size()) == n_returns, qualified, ": the kernel left ", ivalues.size(),
              " values on the stack, the schema returns ", n_returns);
    int64_t done = 0;
    try {
      for (; done < n_returns; ++done) {
        stack[done] = sdk::to_stable_return(ivalues[done], qualified + ": return " + std::to_string(done));
      }
    } catch (...) {
      sdk::free_stable(stack, done);
      throw;
    }
    *num_returns = n_returns;
  });
}

sdk_stable_status sdk_stable_library_create(int32_t kind, const char* ns, const char* dispatch_key, const char* file,
                                            uint32_t line, sdk_stable_library* out) {
  return guarded([&] {
    const char* fn = "sdk_stable_library_create";
    sdk::check_out(out, fn);
    *out = nullptr;
    SDK_CHECK_VALUE(kind >= SDK_STABLE_LIBRARY_DEF && kind <= SDK_STABLE_LIBRARY_IMPL, fn, ": invalid kind ", kind);
    SDK_CHECK_VALUE(ns != nullptr && *ns != '\0', fn, ": the namespace is empty");
    std::optional<sdk::DispatchKey> key;
    if (dispatch_key != nullptr) key = sdk::parse_dispatch_key(dispatch_key);
    auto lib_kind = kind == SDK_STABLE_LIBRARY_DEF        ? sdk::Library::DEF
                    : kind == SDK_STABLE_LIBRARY_FRAGMENT ? sdk::Library::FRAGMENT
                                                          : sdk::Library::IMPL;
    auto lib = std::make_unique<sdk::StableLibrary>(
        sdk::StableLibrary{sdk::Library(lib_kind, ns, key, file ? file : "<stable>", line)});
    // Note [Extension library groups]: a reload of the extension with changed sources undoes it.
    sdk::detail::add_to_open_static_library_group(&lib->lib);
    *out = reinterpret_cast<sdk_stable_library>(lib.release());
  });
}

sdk_stable_status sdk_stable_library_def(sdk_stable_library library, const char* schema) {
  return guarded([&] {
    SDK_CHECK_VALUE(library != nullptr, "sdk_stable_library_def: the library handle is NULL");
    SDK_CHECK_VALUE(schema != nullptr, "sdk_stable_library_def: the schema is NULL");
    reinterpret_cast<sdk::StableLibrary*>(library)->lib.def(schema);
  });
}

sdk_stable_status sdk_stable_library_impl(sdk_stable_library library, const char* name, sdk_stable_boxed_kernel fn,
                                          void* ctx) {
  return guarded([&] {
    SDK_CHECK_VALUE(library != nullptr, "sdk_stable_library_impl: the library handle is NULL");
    SDK_CHECK_VALUE(name != nullptr && *name != '\0', "sdk_stable_library_impl: the operator name is empty");
    SDK_CHECK_VALUE(fn != nullptr, "sdk_stable_library_impl(", name, "): the kernel is NULL");
    auto functor = std::make_shared<sdk::StableKernel>(fn, ctx);
    reinterpret_cast<sdk::StableLibrary*>(library)->lib.impl(
        name, sdk::CppFunction::make_from_boxed(&sdk::stable_boxed, std::move(functor)));
  });
}

sdk_stable_status sdk_stable_library_free(sdk_stable_library library) {
  return guarded([&] {
    auto* lib = reinterpret_cast<sdk::StableLibrary*>(library);
    if (lib == nullptr) return;
    sdk::detail::forget_static_library(&lib->lib);
    delete lib;
  });
}

sdk_stable_status sdk_stable_library_impl_device_kernels(sdk_stable_library library, sdk_stable_local_copy_fn local_copy,
                                                         void* ctx) {
  return guarded([&] {
    const char* fn = "sdk_stable_library_impl_device_kernels";
    SDK_CHECK_VALUE(library != nullptr, fn, ": the library handle is NULL");
    SDK_CHECK_VALUE(local_copy != nullptr, fn, ": the local copy function is NULL");
    sdk::Library& lib = reinterpret_cast<sdk::StableLibrary*>(library)->lib;
    lib.impl("empty.memory_format", &sdk::ops::device::empty);
    lib.impl("empty_strided", &sdk::ops::device::empty_strided);
    lib.impl("resize_", &sdk::ops::device::resize_);
    lib.impl("_local_scalar_dense", &sdk::ops::device::local_scalar_dense);
    lib.impl("copy_", sdk::CppFunction::make_from_boxed(&sdk::stable_copy_boxed,
                                                        std::make_shared<sdk::StableLocalCopy>(local_copy, ctx)));
  });
}

sdk_stable_status sdk_stable_library_fallback_cpu(sdk_stable_library library) {
  return guarded([&] {
    SDK_CHECK_VALUE(library != nullptr, "sdk_stable_library_fallback_cpu: the library handle is NULL");
    reinterpret_cast<sdk::StableLibrary*>(library)->lib.fallback(sdk::ops::cpu_fallback_function());
  });
}

sdk_stable_status sdk_stable_current_stream(int32_t device_type, int32_t device_index, void** out_native_stream) {
  return guarded([&] {
    const char* fn = "sdk_stable_current_stream";
    sdk::check_out(out_native_stream, fn);
    *out_native_stream = nullptr;
    SDK_CHECK_VALUE(device_type >= 0 && device_type < sdk::kNumDeviceTypes, fn, ": invalid device type ", device_type);
    SDK_CHECK_VALUE(device_index >= -1 && device_index <= INT8_MAX, fn, ": invalid device index ", device_index);
    sdk::Device d(static_cast<sdk::DeviceType>(device_type), static_cast<int8_t>(device_index));
    *out_native_stream = reinterpret_cast<void*>(sdk::runtime::current_stream(d).native());
  });
}

void sdk_stable_report_registration_error(const char* message) {
  try {
    sdk::detail::record_static_registration_error(message ? message : "unknown registration error");
  } catch (...) {
    // out of memory: the error is lost, the process goes on
  }
}

}  // extern "C"
