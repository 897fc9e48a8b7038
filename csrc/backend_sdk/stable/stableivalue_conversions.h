// C++ values <-> sdk_stable_ivalue (Note [StableIValue], stable/c/shim.h). Header-only.
//
//   StableValue<T>::from(arg)   a stable value to pass to a call (borrowed: it points into
//                               `arg`, which must outlive the call)
//   StableValue<T>::to(value)   the C++ value of a stable value (a Tensor takes a new
//                               reference of a borrowed handle)
//   StableValue<T>::give(ret)   a stable value that transfers ownership (a kernel's return)
//   StableValue<T>::take(value) the C++ value of a transferred value (a call's return)
//
// Supported: Tensor, int64_t (and int), double, bool, ScalarType, Device, std::optional<T>,
// IntArrayRef / std::vector<int64_t> (arguments), const char* / std::string (arguments).
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <backend_sdk/stable/tensor.h>

namespace sdk::stable {

using StableIValue = sdk_stable_ivalue;

inline StableIValue make_value(int32_t tag, uint64_t payload) { return StableIValue{payload, tag, 0}; }

namespace detail {
[[noreturn]] inline void bad_tag(const StableIValue& v, const char* expected) {
  SDK_THROW(Type, "stable value: expected ", expected, " but got tag ", v.tag);
}
inline void expect_tag(const StableIValue& v, int32_t tag, const char* expected) {
  if (SDK_UNLIKELY(v.tag != tag)) bad_tag(v, expected);
}
}  // namespace detail

template <typename T, typename = void>
struct StableValue;

template <>
struct StableValue<Tensor> {
  static StableIValue from(const Tensor& t) {
    if (!t.defined()) return make_value(SDK_STABLE_TAG_NONE, 0);
    return make_value(SDK_STABLE_TAG_TENSOR, reinterpret_cast<uintptr_t>(t.get()));
  }
  static Tensor to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_TENSOR, "Tensor");
    return Tensor::borrow(reinterpret_cast<sdk_stable_tensor>(v.payload));
  }
  static StableIValue give(const Tensor& t) {
    if (!t.defined()) return make_value(SDK_STABLE_TAG_NONE, 0);
    return make_value(SDK_STABLE_TAG_TENSOR, reinterpret_cast<uintptr_t>(t.new_reference()));
  }
  static Tensor take(const StableIValue& v) {
    if (v.tag == SDK_STABLE_TAG_NONE) return Tensor();
    detail::expect_tag(v, SDK_STABLE_TAG_TENSOR, "Tensor");
    return Tensor(reinterpret_cast<sdk_stable_tensor>(v.payload));
  }
};

// Values without ownership: give/take are from/to.
template <typename T>
struct PlainStableValue {
  static StableIValue give(const T& x) { return StableValue<T>::from(x); }
  static T take(const StableIValue& v) { return StableValue<T>::to(v); }
};

template <typename T>
struct StableValue<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> : PlainStableValue<T> {
  static StableIValue from(T x) { return make_value(SDK_STABLE_TAG_INT, static_cast<uint64_t>(static_cast<int64_t>(x))); }
  static T to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_INT, "int");
    return static_cast<T>(static_cast<int64_t>(v.payload));
  }
};

template <>
struct StableValue<double> : PlainStableValue<double> {
  static StableIValue from(double x) {
    uint64_t u;
    std::memcpy(&u, &x, 8);
    return make_value(SDK_STABLE_TAG_DOUBLE, u);
  }
  static double to(const StableIValue& v) {
    if (v.tag == SDK_STABLE_TAG_INT) return static_cast<double>(static_cast<int64_t>(v.payload));
    detail::expect_tag(v, SDK_STABLE_TAG_DOUBLE, "float");
    double d;
    std::memcpy(&d, &v.payload, 8);
    return d;
  }
};

template <>
struct StableValue<bool> : PlainStableValue<bool> {
  static StableIValue from(bool b) { return make_value(SDK_STABLE_TAG_BOOL, b ? 1 : 0); }
  static bool to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_BOOL, "bool");
    return v.payload != 0;
  }
};

template <>
struct StableValue<ScalarType> : PlainStableValue<ScalarType> {
  static StableIValue from(ScalarType t) { return StableValue<int64_t>::from(static_cast<int64_t>(t)); }
  static ScalarType to(const StableIValue& v) { return static_cast<ScalarType>(StableValue<int64_t>::to(v)); }
};

template <>
struct StableValue<Device> : PlainStableValue<Device> {
  static StableIValue from(Device d) {
    return make_value(SDK_STABLE_TAG_DEVICE,
                      static_cast<uint8_t>(d.type) | (static_cast<uint64_t>(static_cast<uint8_t>(d.index)) << 8));
  }
  static Device to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_DEVICE, "Device");
    return Device(static_cast<DeviceType>(v.payload & 0xff), static_cast<int8_t>((v.payload >> 8) & 0xff));
  }
};

template <typename T>
struct StableValue<std::optional<T>> {
  static StableIValue from(const std::optional<T>& o) {
    return o ? StableValue<T>::from(*o) : make_value(SDK_STABLE_TAG_NONE, 0);
  }
  static std::optional<T> to(const StableIValue& v) {
    if (v.tag == SDK_STABLE_TAG_NONE) return std::nullopt;
    return StableValue<T>::to(v);
  }
  static StableIValue give(const std::optional<T>& o) {
    return o ? StableValue<T>::give(*o) : make_value(SDK_STABLE_TAG_NONE, 0);
  }
  static std::optional<T> take(const StableIValue& v) {
    if (v.tag == SDK_STABLE_TAG_NONE) return std::nullopt;
    return StableValue<T>::take(v);
  }
};

// Int lists: argument values only. `from` needs a sdk_stable_int_list that outlives the
// call: IntList keeps one next to the view.
struct IntList {
  sdk_stable_int_list list;
  explicit IntList(IntArrayRef a) : list{a.data(), static_cast<int64_t>(a.size())} {}
  StableIValue value() const { return make_value(SDK_STABLE_TAG_INT_LIST, reinterpret_cast<uintptr_t>(&list)); }
};

template <>
struct StableValue<IntArrayRef> {
  static IntArrayRef to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_INT_LIST, "int[]");
    const auto* l = reinterpret_cast<const sdk_stable_int_list*>(v.payload);
    return IntArrayRef(l->data, static_cast<size_t>(l->size));
  }
};
template <>
struct StableValue<std::vector<int64_t>> {
  static std::vector<int64_t> to(const StableIValue& v) { return StableValue<IntArrayRef>::to(v).vec(); }
};

template <>
struct StableValue<const char*> {
  static StableIValue from(const char* s) { return make_value(SDK_STABLE_TAG_STRING, reinterpret_cast<uintptr_t>(s)); }
  static const char* to(const StableIValue& v) {
    detail::expect_tag(v, SDK_STABLE_TAG_STRING, "str");
    return reinterpret_cast<const char*>(v.payload);
  }
};
template <>
struct StableValue<std::string> {
  static std::string to(const StableIValue& v) { return StableValue<const char*>::to(v); }
};

// Shorthands, as PyTorch's from()/to<T>().
template <typename T>
StableIValue from(const T& x) {
  return StableValue<std::decay_t<T>>::from(x);
}
template <typename T>
T to(const StableIValue& v) {
  return StableValue<T>::to(v);
}

}  // namespace sdk::stable
