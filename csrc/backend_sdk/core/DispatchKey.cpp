#include <backend_sdk/core/DispatchKey.h>

#include <cctype>

#include <backend_sdk/core/Exception.h>

namespace sdk {
namespace {

const char* const kFunctionalityNames[kNumFunctionalityKeys] = {
    "Undefined",     "Dense",           "BackendSelect",         "Fake",             "Python",
    "ADInplaceOrView", "AutogradFunctionality", "Tracer", "AutocastFunctionality",
    "FuncTorchBatched", "FuncTorchVmapMode", "PythonTLSSnapshot"};

const char* const kBackendNames[kNumBackends + 1] = {"Invalid", "CPU", "Meta", "PrivateUse1", "PrivateUse2",
                                                     "PrivateUse3"};

DispatchKey start_of_backends(DispatchKey functionality) {
  switch (functionality) {
    case DispatchKey::Dense:
      return DispatchKey::StartOfDenseBackends;
    case DispatchKey::AutogradFunctionality:
      return DispatchKey::StartOfAutogradBackends;
    case DispatchKey::AutocastFunctionality:
      return DispatchKey::StartOfAutocastBackends;
    default:
      return DispatchKey::Undefined;
  }
}

// "Accel" for a renamed PrivateUse1, else the canonical component name.
std::string backend_display_name(BackendComponent b) {
  DeviceType t = device_type_for(b);
  if (is_privateuse(t) && is_backend_renamed(t)) {
    std::string name = device_type_name(t);
    name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    return name;
  }
  return kBackendNames[static_cast<int>(b)];
}

const char* functionality_prefix(DispatchKey functionality) {
  switch (functionality) {
    case DispatchKey::AutogradFunctionality:
      return "Autograd";
    case DispatchKey::AutocastFunctionality:
      return "Autocast";
    default:
      return "";
  }
}

}  // namespace

DispatchKey to_functionality_key(DispatchKey k) {
  if (k <= DispatchKey::EndOfFunctionalityKeys) return k;
  if (k <= DispatchKey::EndOfDenseBackends) return DispatchKey::Dense;
  if (k <= DispatchKey::EndOfAutogradBackends) return DispatchKey::AutogradFunctionality;
  if (k <= DispatchKey::EndOfAutocastBackends) return DispatchKey::AutocastFunctionality;
  return DispatchKey::Undefined;
}

BackendComponent to_backend_component(DispatchKey k) {
  if (!is_runtime_per_backend_key(k)) return BackendComponent::InvalidBit;
  DispatchKey start = start_of_backends(to_functionality_key(k));
  return static_cast<BackendComponent>(static_cast<int>(k) - static_cast<int>(start));
}

DispatchKey to_runtime_per_backend_key(DispatchKey functionality, BackendComponent b) {
  SDK_CHECK(is_per_backend_functionality(functionality) && b != BackendComponent::InvalidBit,
            "to_runtime_per_backend_key: ", kFunctionalityNames[static_cast<int>(functionality)],
            " is not a per-backend functionality");
  return static_cast<DispatchKey>(static_cast<int>(start_of_backends(functionality)) + static_cast<int>(b));
}

BackendComponent backend_component_for(DeviceType t) {
  return static_cast<BackendComponent>(static_cast<int>(t) + 1);
}
DeviceType device_type_for(BackendComponent b) {
  return static_cast<DeviceType>(static_cast<int>(b) - 1);
}
DispatchKey dense_key_for(DeviceType t) {
  return to_runtime_per_backend_key(DispatchKey::Dense, backend_component_for(t));
}

std::string to_string(BackendComponent b) {
  if (b == BackendComponent::InvalidBit) return "Invalid";
  return backend_display_name(b);
}

std::string to_string(DispatchKey k) {
  if (k < DispatchKey::EndOfFunctionalityKeys) return kFunctionalityNames[static_cast<int>(k)];
  switch (k) {
    case DispatchKey::Autograd:
      return "Autograd";
    case DispatchKey::CompositeImplicitAutograd:
      return "CompositeImplicitAutograd";
    case DispatchKey::CompositeExplicitAutograd:
      return "CompositeExplicitAutograd";
    default:
      break;
  }
  if (!is_runtime_per_backend_key(k)) return "UNKNOWN_DISPATCH_KEY";
  return std::string(functionality_prefix(to_functionality_key(k))) + backend_display_name(to_backend_component(k));
}

DispatchKey parse_dispatch_key(std::string_view name) {
  // Device-type names ("cpu", "privateuseone", "accel") name Dense keys.
  DeviceType type;
  if (parse_device_type(name, &type)) return dense_key_for(type);
  for (int i = 1; i <= static_cast<int>(DispatchKey::EndOfAliasKeys); ++i) {
    auto k = static_cast<DispatchKey>(i);
    if (k == DispatchKey::EndOfFunctionalityKeys || k == DispatchKey::StartOfAutogradBackends ||
        k == DispatchKey::StartOfAutocastBackends) {
      continue;
    }
    if (to_string(k) == name) return k;
    if (is_runtime_per_backend_key(k)) {
      // Canonical spelling is accepted even after renaming.
      std::string canonical = std::string(functionality_prefix(to_functionality_key(k))) +
                              kBackendNames[static_cast<int>(to_backend_component(k))];
      if (canonical == name) return k;
    }
  }
  std::string valid;
  for (int i = 1; i <= static_cast<int>(DispatchKey::EndOfAliasKeys); ++i) {
    auto k = static_cast<DispatchKey>(i);
    if (k == DispatchKey::EndOfFunctionalityKeys || k == DispatchKey::StartOfAutogradBackends ||
        k == DispatchKey::StartOfAutocastBackends || is_per_backend_functionality(k)) {
      continue;
    }
    valid += (valid.empty() ? "" : ", ") + to_string(k);
  }
  SDK_THROW(Value, "Unknown dispatch key '", name, "'. Valid keys are: ", valid, " (or a device type: ",
            valid_device_type_names(), ")");
}

std::ostream& operator<<(std::ostream& os, DispatchKey k) { return os << to_string(k); }

}  // namespace sdk
