// sdk::stable::Tensor: an RAII reference to an SDK tensor, over the C shim only.
//
// Header-only and calling nothing but stable/c/shim.h, so an extension using it depends
// on the C shim's ABI, never on the SDK's C++ ABI (Note [Stable ABI compatibility rule]).
// Copies share one owning handle (as PyTorch's torch::stable::Tensor does, through a
// shared_ptr), so copying is cheap and the handle is freed once, when the last copy goes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <backend_sdk/headeronly/ArrayRef.h>
#include <backend_sdk/headeronly/DeviceType.h>
#include <backend_sdk/headeronly/Exception.h>
#include <backend_sdk/headeronly/Half.h>
#include <backend_sdk/headeronly/ScalarType.h>
#include <backend_sdk/stable/c/shim.h>

namespace sdk::stable {

// Throws the sdk::Error that a failed shim call's status and message stand for
// (Note [Stable status codes]).
inline void check_status(sdk_stable_status status) {
  if (SDK_LIKELY(status == SDK_STABLE_OK)) return;
  ErrorKind kind = (status >= SDK_STABLE_ERROR_RUNTIME && status <= SDK_STABLE_ERROR_ACCELERATOR)
                       ? static_cast<ErrorKind>(status - 1)
                       : ErrorKind::Runtime;
  throw Error(kind, sdk_stable_last_error_message());
}

// The status a caught sdk::Error maps to.
inline sdk_stable_status status_of(ErrorKind kind) { return static_cast<sdk_stable_status>(kind) + 1; }

class Tensor {
 public:
  // An undefined tensor (no handle).
  Tensor() = default;
  // Takes over an owning handle (Note [Stable handle ownership]).
  explicit Tensor(sdk_stable_tensor owned) : handle_(owned, &free_handle) {}
  // A new owning handle to the tensor behind a borrowed one (a kernel's argument).
  static Tensor borrow(sdk_stable_tensor borrowed) {
    sdk_stable_tensor h = nullptr;
    check_status(sdk_stable_tensor_new_reference(borrowed, &h));
    return Tensor(h);
  }

  bool defined() const { return handle_ != nullptr; }
  // The handle, still owned by this Tensor (pass it as a borrowed argument).
  sdk_stable_tensor get() const { return handle_.get(); }
  // A new owning handle for the receiver of a transfer (a kernel's return).
  sdk_stable_tensor new_reference() const {
    sdk_stable_tensor h = nullptr;
    check_status(sdk_stable_tensor_new_reference(get(), &h));
    return h;
  }

  int64_t dim() const { return get_int(&sdk_stable_tensor_dim); }
  int64_t numel() const { return get_int(&sdk_stable_tensor_numel); }
  int64_t storage_offset() const { return get_int(&sdk_stable_tensor_storage_offset); }
  // Views into the tensor (valid while it lives and is not resized).
  IntArrayRef sizes() const {
    const int64_t* p = nullptr;
    check_status(sdk_stable_tensor_sizes(get(), &p));
    return IntArrayRef(p, static_cast<size_t>(dim()));
  }
  IntArrayRef strides() const {
    const int64_t* p = nullptr;
    check_status(sdk_stable_tensor_strides(get(), &p));
    return IntArrayRef(p, static_cast<size_t>(dim()));
  }
  // Like PyTorch's, negative dims count from the end; out of range is an IndexError.
  int64_t size(int64_t d) const { return sizes()[wrap_dim(d)]; }
  int64_t stride(int64_t d) const { return strides()[wrap_dim(d)]; }
  ScalarType scalar_type() const {
    int32_t t = 0;
    check_status(sdk_stable_tensor_dtype(get(), &t));
    return static_cast<ScalarType>(t);
  }
  Device device() const {
    int32_t type = 0, index = -1;
    check_status(sdk_stable_tensor_device(get(), &type, &index));
    return Device(static_cast<DeviceType>(type), static_cast<int8_t>(index));
  }
  bool is_cpu() const { return device().type == DeviceType::CPU; }
  bool is_contiguous() const {
    int32_t c = 0;
    check_status(sdk_stable_tensor_is_contiguous(get(), &c));
    return c != 0;
  }
  size_t element_size() const { return headeronly::element_size(scalar_type()); }
  void* data_ptr() const {
    void* p = nullptr;
    check_status(sdk_stable_tensor_data_ptr(get(), &p));
    return p;
  }
  // The data as T*, checked against the dtype (TypeError naming both).
  template <typename T>
  T* data_ptr() const {
    check_dtype_matches<T>();
    return static_cast<T*>(data_ptr());
  }

 private:
  static void free_handle(sdk_stable_tensor h) { (void)sdk_stable_tensor_free(h); }
  int64_t get_int(sdk_stable_status (*fn)(sdk_stable_tensor, int64_t*)) const {
    int64_t v = 0;
    check_status(fn(get(), &v));
    return v;
  }
  size_t wrap_dim(int64_t d) const {
    int64_t n = dim();
    SDK_CHECK_INDEX(d >= -n && d < n && n > 0, "Dimension out of range (expected to be in range of [", -n, ", ",
                    n - 1, "], but got ", d, ")");
    return static_cast<size_t>(d < 0 ? d + n : d);
  }
  template <typename T>
  void check_dtype_matches() const;

  std::shared_ptr<sdk_stable_tensor_opaque> handle_;
};

namespace detail {
template <typename T>
struct CppTypeToScalarType;
#define SDK_STABLE_CPP_DTYPE(cpp, st) \
  template <>                         \
  struct CppTypeToScalarType<cpp> {   \
    static constexpr ScalarType value = ScalarType::st; \
  };
SDK_STABLE_CPP_DTYPE(bool, Bool)
SDK_STABLE_CPP_DTYPE(uint8_t, UInt8)
SDK_STABLE_CPP_DTYPE(int8_t, Int8)
SDK_STABLE_CPP_DTYPE(int16_t, Int16)
SDK_STABLE_CPP_DTYPE(int32_t, Int32)
SDK_STABLE_CPP_DTYPE(int64_t, Int64)
SDK_STABLE_CPP_DTYPE(::sdk::Half, Float16)
SDK_STABLE_CPP_DTYPE(::sdk::BFloat16, BFloat16)
SDK_STABLE_CPP_DTYPE(float, Float32)
SDK_STABLE_CPP_DTYPE(double, Float64)
#undef SDK_STABLE_CPP_DTYPE
}  // namespace detail

template <typename T>
void Tensor::check_dtype_matches() const {
  if constexpr (std::is_void_v<std::remove_cv_t<T>>) {
    return;
  } else {
    constexpr ScalarType want = detail::CppTypeToScalarType<std::remove_cv_t<T>>::value;
    ScalarType have = scalar_type();
    SDK_CHECK_TYPE(have == want, "expected scalar type ", headeronly::scalar_type_name(want), " but found ",
                   headeronly::scalar_type_name(have));
  }
}

}  // namespace sdk::stable
