#include <backend_sdk/core/DeviceType.h>

#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <mutex>

#include <backend_sdk/core/Exception.h>

namespace sdk {
namespace {

const char* const kDefaultNames[kNumDeviceTypes] = {
    "cpu", "meta", "privateuseone", "privateusetwo", "privateusethree"};

// Names that would be confusing or collide with other frameworks' devices.
const char* const kReservedNames[] = {"cpu",  "cuda", "meta", "mps", "xpu",  "xla", "hip",  "ipu",
                                      "mtia", "hpu",  "ve",   "lazy", "vulkan", "fpga", "maia",
                                      "privateuseone", "privateusetwo", "privateusethree"};

struct NameTable {
  std::array<std::atomic<const std::string*>, kNumDeviceTypes> names;
  std::mutex rename_mutex;
  NameTable() {
    for (int i = 0; i < kNumDeviceTypes; ++i) {
      names[i].store(new std::string(kDefaultNames[i]));  // immortal, see Note [Backend renaming]
    }
  }
};

NameTable& table() {
  static NameTable* t = new NameTable();  // immortal: read during static destruction
  return *t;
}

bool is_valid_identifier(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

const char* default_device_type_name(DeviceType type) { return kDefaultNames[static_cast<int>(type)]; }

const std::string& device_type_name(DeviceType type) {
  return *table().names[static_cast<int>(type)].load(std::memory_order_acquire);
}

bool is_backend_renamed(DeviceType type) {
  return device_type_name(type) != default_device_type_name(type);
}

void rename_privateuse_backend(DeviceType type, std::string_view name) {
  SDK_CHECK_VALUE(is_privateuse(type), "only PrivateUse1, PrivateUse2 and PrivateUse3 can be renamed, not ",
                  default_device_type_name(type));
  SDK_CHECK_VALUE(is_valid_identifier(name), "rename_privateuse1_backend: '", name,
                  "' is not a valid backend name (use letters, digits and underscores, starting with a letter)");
  for (char c : name) {
    SDK_CHECK_VALUE(!std::isupper(static_cast<unsigned char>(c)), "rename_privateuse1_backend: backend name '",
                    name, "' must be lower case");
  }
  NameTable& t = table();
  std::lock_guard<std::mutex> guard(t.rename_mutex);
  const std::string& current = device_type_name(type);
  if (current == name) return;  // renaming twice to the same name is allowed
  SDK_CHECK(current == default_device_type_name(type), "The backend ", default_device_type_name(type),
            " has already been renamed to '", current, "' in this process; it cannot be renamed again to '", name,
            "' (PyTorch: the backend name has already been set! Current backend: ", current, ")");
  for (const char* reserved : kReservedNames) {
    SDK_CHECK_VALUE(name != reserved, "Cannot rename backend ", default_device_type_name(type), " to '", name,
                    "': that is a built-in device name");
  }
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    SDK_CHECK_VALUE(*t.names[i].load() != name, "Cannot rename backend ", default_device_type_name(type), " to '",
                    name, "': another backend already has that name");
  }
  t.names[static_cast<int>(type)].store(new std::string(name), std::memory_order_release);
}

bool parse_device_type(std::string_view name, DeviceType* out) {
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    auto type = static_cast<DeviceType>(i);
    if (name == device_type_name(type) || name == kDefaultNames[i]) {
      *out = type;
      return true;
    }
  }
  return false;
}

std::string valid_device_type_names() {
  std::string out;
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    if (i) out += ", ";
    out += device_type_name(static_cast<DeviceType>(i));
  }
  return out;
}

Device Device::parse(std::string_view text) {
  auto colon = text.find(':');
  std::string_view type_part = text.substr(0, colon);
  DeviceType type;
  SDK_CHECK_VALUE(parse_device_type(type_part, &type), "Expected one of ", valid_device_type_names(),
                  " device type at start of device string: ", text);
  if (colon == std::string_view::npos) return Device(type);
  std::string_view index_part = text.substr(colon + 1);
  int index = -1;
  auto [ptr, ec] = std::from_chars(index_part.data(), index_part.data() + index_part.size(), index);
  SDK_CHECK_VALUE(!index_part.empty() && ec == std::errc() && ptr == index_part.data() + index_part.size() &&
                      index >= 0 && index < 128,
                  "Invalid device string: '", text, "' (the device index must be an integer in [0, 127])");
  return Device(type, static_cast<int8_t>(index));
}

std::string Device::str() const {
  std::string out = device_type_name(type);
  if (index >= 0) out += ":" + std::to_string(index);
  return out;
}

std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << device_type_name(t); }
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace sdk
