// Uses every API of csrc/backend_sdk/headeronly/header_only_apis.txt; tests/test_stable_abi.py
// builds it with only the headeronly headers and without libbackend_sdk, then runs it.
#include <cmath>
#include <cstdio>
#include <unordered_set>
#include <vector>

#include <backend_sdk/headeronly/ArrayRef.h>
#include <backend_sdk/headeronly/DeviceType.h>
#include <backend_sdk/headeronly/Exception.h>
#include <backend_sdk/headeronly/Half.h>
#include <backend_sdk/headeronly/Macros.h>
#include <backend_sdk/headeronly/ScalarType.h>

#define EXPECT(cond)                                         \
  do {                                                       \
    if (!(cond)) {                                           \
      std::printf("FAILED line %d: %s\n", __LINE__, #cond); \
      return 1;                                              \
    }                                                        \
  } while (0)

int main() {
  using namespace sdk;
  // Half, BFloat16
  Half h(1.5f);
  EXPECT(static_cast<float>(h) == 1.5f && h.x == 0x3e00);
  EXPECT(static_cast<float>(Half(65520.f)) == INFINITY);
  BFloat16 b(3.0f);
  EXPECT(static_cast<float>(b) == 3.0f && b.x == 0x4040);

  // ScalarType
  static_assert(kNumScalarTypes == 10);
  static_assert(static_cast<int>(ScalarType::Float32) == 8);
  EXPECT(is_valid_scalar_type(ScalarType::Int64) && !is_valid_scalar_type(ScalarType::Undefined));
  EXPECT(is_floating_type(ScalarType::BFloat16) && !is_floating_type(ScalarType::Int32));
  EXPECT(is_integral_type(ScalarType::Bool, true) && !is_integral_type(ScalarType::Bool, false));
  EXPECT(is_signed_type(ScalarType::Int8) && !is_signed_type(ScalarType::UInt8));
  static_assert(headeronly::element_size(ScalarType::Float16) == 2);
  EXPECT(headeronly::element_size(ScalarType::Undefined) == 0);
  EXPECT(std::string(headeronly::scalar_type_name(ScalarType::Float64)) == "float64");

  // DeviceType, Device
  static_assert(kNumDeviceTypes == 5);
  EXPECT(is_privateuse(DeviceType::PrivateUse1) && !is_privateuse(DeviceType::CPU));
  constexpr Device d(DeviceType::PrivateUse1, 1);
  EXPECT(d.has_index() && !d.is_cpu() && !d.is_meta() && d != Device() && d == Device(DeviceType::PrivateUse1, 1));
  static_assert(sizeof(Device) == 2);
  std::unordered_set<Device> devices{d, Device(DeviceType::CPU)};
  EXPECT(devices.size() == 2 && std::hash<sdk::Device>()(d) != std::hash<sdk::Device>()(Device()));

  // ArrayRef, IntArrayRef
  std::vector<int64_t> v{2, 3, 4};
  IntArrayRef r(v);
  ArrayRef<double> empty;
  EXPECT(r.size() == 3 && r[1] == 3 && r.back() == 4 && r.equals(IntArrayRef({2, 3, 4})) && empty.empty());

  // ErrorKind, Error and the checks
  int caught = 0;
  try {
    SDK_CHECK(1 + 1 == 3, "arithmetic ", r);
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::Runtime && std::string(e.what()) == "arithmetic [2, 3, 4]";
  }
  try {
    SDK_CHECK_VALUE(false, "value");
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::Value;
  }
  try {
    SDK_CHECK_TYPE(false);
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::Type && std::string(e.what()) == "Expected false to be true, but got false.";
  }
  try {
    SDK_CHECK_INDEX(false, "index");
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::Index;
  }
  try {
    SDK_CHECK_NOT_IMPLEMENTED(false, "ni");
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::NotImplemented;
  }
  try {
    SDK_CHECK_KIND(ErrorKind::OutOfMemory, false, "oom");
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::OutOfMemory;
  }
  try {
    SDK_THROW(Accelerator, "fault ", 7);
  } catch (const Error& e) {
    caught += e.kind() == ErrorKind::Accelerator && e.msg() == "fault 7";
  }
  EXPECT(caught == 7);

  // Macros
  EXPECT(SDK_LIKELY(caught == 7) && !SDK_UNLIKELY(caught != 7));

  std::printf("headeronly ok\n");
  return 0;
}
