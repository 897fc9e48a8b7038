#include <backend_sdk/dispatch/detail/SchemaDefaults.h>

#include <cmath>
#include <cstdlib>
#include <utility>

#include <backend_sdk/core/Exception.h>

namespace sdk::detail {

namespace {

// Enum-like defaults that schemas spell as identifiers.
bool enum_default(const std::string& text, IValue* out) {
  static const std::pair<const char*, int64_t> kEnums[] = {
      {"contiguous_format", 0}, {"preserve_format", 1}, {"channels_last", 2}, {"channels_last_3d", 3},
      {"strided", 0},           {"Mean", 1},            {"Sum", 2},           {"Reduction::Mean", 1}};
  for (const auto& [name, value] : kEnums) {
    if (text == name) {
      *out = IValue(value);
      return true;
    }
  }
  static const std::pair<const char*, ScalarType> kDtypes[] = {
      {"long", ScalarType::Int64}, {"int", ScalarType::Int32},   {"float", ScalarType::Float32},
      {"double", ScalarType::Float64}, {"bool", ScalarType::Bool}, {"half", ScalarType::Float16}};
  for (const auto& [name, value] : kDtypes) {
    if (text == name) {
      *out = IValue(value);
      return true;
    }
  }
  // PyTorch's dtype names ("float32", "int64", ...), which infer_schema writes for a dtype default.
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    if (text == scalar_type_name(t)) {
      *out = IValue(t);
      return true;
    }
  }
  return false;
}

double parse_double(const std::string& text) {
  if (text == "inf") return INFINITY;
  if (text == "-inf") return -INFINITY;
  if (text == "nan") return NAN;
  return std::strtod(text.c_str(), nullptr);
}

IValue parse_default(const std::string& text, const Type& type) {
  if (text == "None") return IValue();
  switch (type.kind) {
    case TypeKind::Optional:
      return parse_default(text, *type.elem);
    case TypeKind::Int:
    case TypeKind::SymInt: {
      IValue e;
      if (enum_default(text, &e)) return e;
      return IValue(static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10)));
    }
    case TypeKind::Float:
      return IValue(parse_double(text));
    case TypeKind::Bool:
      return IValue(text == "True");
    case TypeKind::Scalar:
      if (text == "True" || text == "False") return IValue(text == "True");
      if (text.find_first_of(".eEn") != std::string::npos) return IValue(parse_double(text));
      return IValue(static_cast<int64_t>(std::strtoll(text.c_str(), nullptr, 10)));
    case TypeKind::Str:
      return IValue(text.size() >= 2 ? text.substr(1, text.size() - 2) : text);
    case TypeKind::ScalarType:
    case TypeKind::Layout:
    case TypeKind::MemoryFormat: {
      IValue e;
      SDK_CHECK_VALUE(enum_default(text, &e), "unsupported default value '", text, "' for type ", type.str());
      return e;
    }
    case TypeKind::Device:
      // PyTorch writes device defaults as strings ("cpu:0" with quotes; infer_schema does too).
      if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
        return IValue(Device::parse(text.substr(1, text.size() - 2)));
      return IValue(Device::parse(text));
    case TypeKind::List: {
      std::vector<std::string> items;
      if (text.size() >= 2 && text.front() == '[') {
        std::string body = text.substr(1, text.size() - 2);
        size_t start = 0;
        while (start < body.size()) {
          size_t comma = body.find(',', start);
          std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          item.erase(0, item.find_first_not_of(' '));
          item.erase(item.find_last_not_of(' ') + 1);
          if (!item.empty()) items.push_back(item);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      } else {
        // "int[2] stride=1": one value for every element
        items.assign(type.fixed_size.value_or(1), text);
      }
      TypeKind ek = type.elem->kind;
      if (ek == TypeKind::Int || ek == TypeKind::SymInt) {
        std::vector<int64_t> v;
        for (const auto& s : items) v.push_back(std::strtoll(s.c_str(), nullptr, 10));
        return IValue(std::move(v));
      }
      if (ek == TypeKind::Float) {
        std::vector<double> v;
        for (const auto& s : items) v.push_back(parse_double(s));
        return IValue(std::move(v));
      }
      if (ek == TypeKind::Tensor) {
        SDK_CHECK_VALUE(items.empty(), "a Tensor[] default can only be []");
        return IValue(std::vector<Tensor>{});
      }
      GenericList v;
      for (const auto& s : items) v.push_back(parse_default(s, *type.elem));
      return IValue(std::move(v));
    }
    default:
      SDK_THROW(Value, "unsupported default value '", text, "' for type ", type.str());
  }
}

}  // namespace

IValue default_ivalue(const Argument& arg) {
  SDK_CHECK(arg.default_text.has_value(), "argument '", arg.name, "' has no default");
  return parse_default(*arg.default_text, *arg.type);
}

}  // namespace sdk::detail
