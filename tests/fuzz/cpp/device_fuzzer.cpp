// libFuzzer harness for device strings (sdk::Device::parse, csrc/backend_sdk/core/DeviceType.cpp); built and run
// by tests/fuzz/run.py (target device_cpp).
//
// Oracle: Device::parse returns or throws sdk::Error of kind Value; a parsed device prints as text
// that parses back to the same device. PrivateUse1 is renamed to "accel" first, as in the tests,
// so both the placeholder and the vendor name are exercised.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Exception.h>

namespace {
[[noreturn]] void finding(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "device_fuzzer: %s\n  input: '%.*s'\n  %s\n", what, static_cast<int>(input.size()),
               input.data(), detail.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sdk::rename_privateuse_backend(sdk::DeviceType::PrivateUse1, "accel");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sdk::Device device;
  try {
    device = sdk::Device::parse(text);
  } catch (const sdk::Error& e) {
    if (e.kind() != sdk::ErrorKind::Value) finding("error of a kind other than Value", text, e.what());
    return 0;
  } catch (const std::exception& e) {
    finding("exception other than sdk::Error", text, e.what());
  }
  std::string printed = device.str();
  try {
    if (sdk::Device::parse(printed) != device) finding("round trip changed the device", text, printed);
  } catch (const std::exception& e) {
    finding("printed device does not parse", text, printed + ": " + e.what());
  }
  sdk::DeviceType type;
  (void)sdk::parse_device_type(text, &type);  // never throws
  return 0;
}
