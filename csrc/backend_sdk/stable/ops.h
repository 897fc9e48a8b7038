// sdk::stable:: operator functions: a generic call_op over the C shim and typed
// functions for common operators. Header-only.
//
//   using namespace sdk::stable;
//   Tensor c = add(a, b, 2.0);                                   // aten::add.Tensor
//   Returns r = call_op("aten::sum", "", {from(a)});             // any operator
//   Tensor s = r.take<Tensor>(0);
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include <backend_sdk/stable/stableivalue_conversions.h>

namespace sdk::stable {

// The returns of one call_op: owns what the call transferred (tensor handles) and frees
// whatever is not taken.
class Returns {
 public:
  Returns() = default;
  Returns(std::vector<StableIValue> values) : values_(std::move(values)) {}  // NOLINT
  Returns(const Returns&) = delete;
  Returns& operator=(const Returns&) = delete;
  Returns(Returns&&) = default;
  Returns& operator=(Returns&& o) noexcept {
    release_all();
    values_ = std::move(o.values_);
    return *this;
  }
  ~Returns() { release_all(); }

  size_t size() const { return values_.size(); }
  const StableIValue& operator[](size_t i) const { return values_.at(i); }
  // The i-th return as T; a tensor is taken over (taking it twice gives an undefined Tensor).
  template <typename T>
  T take(size_t i) {
    SDK_CHECK_INDEX(i < values_.size(), "call_op: return ", i, " out of range (", values_.size(), " returns)");
    T out = StableValue<T>::take(values_[i]);
    if (values_[i].tag == SDK_STABLE_TAG_TENSOR) values_[i] = make_value(SDK_STABLE_TAG_NONE, 0);
    return out;
  }

 private:
  void release_all() noexcept {
    for (auto& v : values_) {
      if (v.tag == SDK_STABLE_TAG_TENSOR) (void)sdk_stable_tensor_free(reinterpret_cast<sdk_stable_tensor>(v.payload));
      v.tag = SDK_STABLE_TAG_NONE;
    }
  }
  std::vector<StableIValue> values_;
};

// Calls "name.overload" through the dispatcher with borrowed arguments (stable values made
// with from(); trailing arguments with defaults may be left out).
inline Returns call_op(const char* name, const char* overload, std::initializer_list<StableIValue> args) {
  std::vector<StableIValue> stack(args);
  stack.resize(std::max<size_t>(stack.size(), 8), make_value(SDK_STABLE_TAG_NONE, 0));
  int64_t num_returns = 0;
  check_status(sdk_stable_call_op(name, overload, stack.data(), static_cast<int64_t>(args.size()),
                                  static_cast<int64_t>(stack.size()), &num_returns));
  stack.resize(static_cast<size_t>(num_returns));
  return Returns(std::move(stack));
}

namespace detail {
inline Tensor call_tensor_op(const char* name, const char* overload, std::initializer_list<StableIValue> args) {
  return call_op(name, overload, args).take<Tensor>(0);
}
}  // namespace detail

// A new uninitialised tensor (strides empty: contiguous).
inline Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  SDK_CHECK_VALUE(strides.empty() || strides.size() == sizes.size(), "empty_strided: got ", sizes.size(),
                  " sizes and ", strides.size(), " strides");
  sdk_stable_tensor h = nullptr;
  check_status(sdk_stable_empty_strided(sizes.data(), strides.empty() ? nullptr : strides.data(),
                                        static_cast<int64_t>(sizes.size()), static_cast<int32_t>(dtype),
                                        static_cast<int32_t>(device.type), device.index, &h));
  return Tensor(h);
}
inline Tensor empty(IntArrayRef sizes, ScalarType dtype, Device device) { return empty_strided(sizes, {}, dtype, device); }
// A tensor over memory the caller owns and keeps alive (sdk_stable_from_blob; ABI version 2):
// `data` is element 0, strides empty: contiguous.
inline Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  SDK_CHECK_VALUE(strides.empty() || strides.size() == sizes.size(), "from_blob: got ", sizes.size(), " sizes and ",
                  strides.size(), " strides");
  sdk_stable_tensor h = nullptr;
  check_status(sdk_stable_from_blob(data, sizes.data(), strides.empty() ? nullptr : strides.data(),
                                    static_cast<int64_t>(sizes.size()), static_cast<int32_t>(dtype),
                                    static_cast<int32_t>(device.type), device.index, &h));
  return Tensor(h);
}
// Like PyTorch's empty_like for the common case: a contiguous tensor of self's sizes,
// dtype and device (or the given dtype).
inline Tensor empty_like(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt) {
  return empty(self.sizes(), dtype.value_or(self.scalar_type()), self.device());
}

// aten::add.Tensor / aten::mul.Tensor / aten::sub.Tensor.
inline Tensor add(const Tensor& self, const Tensor& other, double alpha = 1.0) {
  return detail::call_tensor_op("aten::add", "Tensor", {from(self), from(other), from(alpha)});
}
inline Tensor sub(const Tensor& self, const Tensor& other, double alpha = 1.0) {
  return detail::call_tensor_op("aten::sub", "Tensor", {from(self), from(other), from(alpha)});
}
inline Tensor mul(const Tensor& self, const Tensor& other) {
  return detail::call_tensor_op("aten::mul", "Tensor", {from(self), from(other)});
}
// aten::mul.Scalar.
inline Tensor mul(const Tensor& self, double other) {
  return detail::call_tensor_op("aten::mul", "Scalar", {from(self), from(other)});
}
// aten::copy_: copies src into self (broadcasting, converting, across devices); returns self.
inline Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking = false) {
  detail::call_tensor_op("aten::copy_", "", {from(self), from(src), from(non_blocking)});
  return self;
}
// aten::fill_.Scalar.
inline Tensor fill_(const Tensor& self, double value) {
  detail::call_tensor_op("aten::fill_", "Scalar", {from(self), from(value)});
  return self;
}
inline Tensor zero_(const Tensor& self) { return fill_(self, 0.0); }
// aten::clone.
inline Tensor clone(const Tensor& self) { return detail::call_tensor_op("aten::clone", "", {from(self)}); }
// self when it is contiguous, else a contiguous copy.
inline Tensor contiguous(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = empty_like(self);
  return copy_(out, self);
}
// aten::sum (all elements, optionally as dtype).
inline Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt) {
  return detail::call_tensor_op("aten::sum", "", {from(self), from(dtype)});
}
// aten::view.
inline Tensor view(const Tensor& self, IntArrayRef size) {
  IntList l(size);
  return detail::call_tensor_op("aten::view", "", {from(self), l.value()});
}

}  // namespace sdk::stable
