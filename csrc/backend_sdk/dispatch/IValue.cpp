#include <backend_sdk/dispatch/IValue.h>

#include <sstream>

namespace sdk {

IValue::IValue(const Scalar& s) {
  switch (s.tag()) {
    case Scalar::Tag::Bool:
      v_ = s.to_bool();
      break;
    case Scalar::Tag::Int:
      v_ = s.to_int();
      break;
    case Scalar::Tag::Double:
      v_ = s.to_double();
      break;
  }
}

const char* IValue::tag_name() const {
  static const char* names[] = {"None",   "Tensor", "float",  "int",      "bool",   "str",
                                "Device", "int[]",  "float[]", "Tensor[]", "list", "Generator"};
  return names[v_.index()];
}

double IValue::to_double() const {
  if (is_double()) return std::get<double>(v_);
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  if (is_bool()) return std::get<bool>(v_) ? 1.0 : 0.0;
  type_error("float");
}

int64_t IValue::to_int() const {
  if (is_int()) return std::get<int64_t>(v_);
  if (is_bool()) return std::get<bool>(v_) ? 1 : 0;
  type_error("int");
}

Scalar IValue::to_scalar() const {
  if (is_double()) return Scalar(std::get<double>(v_));
  if (is_int()) return Scalar(std::get<int64_t>(v_));
  if (is_bool()) return Scalar(std::get<bool>(v_));
  type_error("Scalar");
}

void IValue::type_error(const char* expected) const {
  SDK_THROW(Type, "Expected a value of type ", expected, " but found ", tag_name());
}

std::string IValue::repr() const {
  std::ostringstream os;
  switch (tag()) {
    case Tag::None:
      os << "None";
      break;
    case Tag::Tensor:
      os << to_tensor().str();
      break;
    case Tag::Double:
      os << std::get<double>(v_);
      break;
    case Tag::Int:
      os << std::get<int64_t>(v_);
      break;
    case Tag::Bool:
      os << (std::get<bool>(v_) ? "True" : "False");
      break;
    case Tag::String:
      os << "'" << to_string() << "'";
      break;
    case Tag::Device:
      os << to_device();
      break;
    case Tag::IntList:
      os << IntArrayRef(to_int_list());
      break;
    case Tag::DoubleList: {
      os << "[";
      for (size_t i = 0; i < to_double_list().size(); ++i) os << (i ? ", " : "") << to_double_list()[i];
      os << "]";
      break;
    }
    case Tag::TensorList:
      os << "[" << to_tensor_list().size() << " tensors]";
      break;
    case Tag::GenericList: {
      os << "[";
      for (size_t i = 0; i < to_list().size(); ++i) os << (i ? ", " : "") << to_list()[i].repr();
      os << "]";
      break;
    }
    case Tag::Generator:
      os << "Generator(device=" << to_generator()->device() << ")";
      break;
  }
  return os.str();
}

}  // namespace sdk
