// IValue: the boxed value of one operator argument or return.
//
// Boxed kernels (Python kernels, fallbacks) see a call as a Stack of IValues,
// one per schema argument, in schema order; they pop the arguments and push
// the returns. Optional arguments that are absent are None. Scalars are stored
// as Int/Double/Bool; ScalarType, Layout and MemoryFormat as Int, as in c10.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/tensor/Generator.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk {

class IValue;
using Stack = std::vector<IValue>;
using GenericList = std::vector<IValue>;

class SDK_API IValue {
 public:
  enum class Tag : uint8_t { None, Tensor, Double, Int, Bool, String, Device, IntList, DoubleList, TensorList, GenericList,
                           Generator };

  IValue() = default;  // None
  IValue(std::nullopt_t) {}  // NOLINT
  IValue(Tensor t) : v_(std::move(t)) {}  // NOLINT
  IValue(double d) : v_(d) {}  // NOLINT
  IValue(int64_t i) : v_(i) {}  // NOLINT
  IValue(int i) : v_(static_cast<int64_t>(i)) {}  // NOLINT
  IValue(bool b) : v_(b) {}  // NOLINT
  IValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  IValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  IValue(Device d) : v_(d) {}  // NOLINT
  IValue(ScalarType t) : v_(static_cast<int64_t>(t)) {}  // NOLINT
  IValue(const Scalar& s);  // NOLINT
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  IValue(IntArrayRef v) : v_(v.vec()) {}  // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}  // NOLINT
  IValue(GenericList v) : v_(std::move(v)) {}  // NOLINT
  IValue(sdk::Generator g) : v_(std::move(g)) {}  // NOLINT
  template <typename T>
  IValue(std::optional<T> o) {  // NOLINT
    if (o) *this = IValue(std::move(*o));
  }

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  const char* tag_name() const;
  bool is_none() const { return tag() == Tag::None; }
  bool is_tensor() const { return tag() == Tag::Tensor; }
  bool is_int() const { return tag() == Tag::Int; }
  bool is_double() const { return tag() == Tag::Double; }
  bool is_bool() const { return tag() == Tag::Bool; }
  bool is_scalar() const { return is_int() || is_double() || is_bool(); }
  bool is_string() const { return tag() == Tag::String; }
  bool is_device() const { return tag() == Tag::Device; }
  bool is_int_list() const { return tag() == Tag::IntList; }
  bool is_double_list() const { return tag() == Tag::DoubleList; }
  bool is_tensor_list() const { return tag() == Tag::TensorList; }
  bool is_list() const { return tag() == Tag::GenericList; }
  bool is_generator() const { return tag() == Tag::Generator; }

  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  Tensor& to_tensor() { return const_cast<Tensor&>(std::as_const(*this).get<Tensor>("Tensor")); }
  double to_double() const;  // accepts Int and Bool too
  int64_t to_int() const;    // accepts Bool too
  bool to_bool() const { return get<bool>("bool"); }
  Scalar to_scalar() const;
  const std::string& to_string() const { return get<std::string>("str"); }
  Device to_device() const { return get<Device>("Device"); }
  ScalarType to_scalar_type() const { return static_cast<ScalarType>(to_int()); }
  const std::vector<int64_t>& to_int_list() const { return get<std::vector<int64_t>>("int[]"); }
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const GenericList& to_list() const { return get<GenericList>("list"); }
  const sdk::Generator& to_generator() const { return get<sdk::Generator>("Generator"); }
  GenericList& to_list() { return const_cast<GenericList&>(std::as_const(*this).get<GenericList>("list")); }

  std::string repr() const;  // for debugging and error messages

 private:
  template <typename T>
  const T& get(const char* expected) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    type_error(expected);
  }
  [[noreturn]] void type_error(const char* expected) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, Device, std::vector<int64_t>,
               std::vector<double>, std::vector<Tensor>, GenericList, sdk::Generator>
      v_;
};

}  // namespace sdk
