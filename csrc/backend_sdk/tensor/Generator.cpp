#include <backend_sdk/tensor/Generator.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/CurrentDevice.h>

namespace sdk {

GeneratorImpl::GeneratorImpl(Device device, uint64_t seed) : device_(device), seed_(seed) {
  SDK_CHECK_VALUE(!device.is_meta(), "Device type ", device.type, " is not supported for Generator() api");
  if (device_.is_cpu()) device_.index = -1;
}

void GeneratorImpl::set_current_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t GeneratorImpl::current_seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

uint64_t GeneratorImpl::seed() {
  uint64_t s = nondeterministic_seed();
  set_current_seed(s);
  return s;
}

void GeneratorImpl::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}

uint64_t GeneratorImpl::get_offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}

std::pair<uint64_t, uint64_t> GeneratorImpl::philox_engine_inputs(uint64_t increment) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t offset = offset_;
  offset_ += increment;
  return {seed_, offset};
}

namespace {
void store_le(uint8_t* p, uint64_t v) {
  for (int b = 0; b < 8; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}
uint64_t load_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
  return v;
}
}  // namespace

Tensor GeneratorImpl::get_state() const {
  Tensor state = make_tensor({kGeneratorStateSize}, ScalarType::UInt8, Device(DeviceType::CPU));
  auto* p = state.data_ptr<uint8_t>();
  std::lock_guard<std::mutex> lock(mutex_);
  store_le(p, seed_);
  store_le(p + 8, offset_);
  return state;
}

void GeneratorImpl::set_state(const Tensor& state) {
  SDK_CHECK_VALUE(state.defined(), "set_state: expected a state tensor, got an undefined tensor");
  SDK_CHECK_TYPE(state.dtype() == ScalarType::UInt8, "set_state: expected a torch.ByteTensor (uint8) state, got ",
                 scalar_type_name(state.dtype()));
  SDK_CHECK_VALUE(state.is_cpu(), "set_state: expected a cpu state tensor, got one on ", state.device());
  SDK_CHECK_VALUE(state.numel() == kGeneratorStateSize && state.dim() == 1, "set_state: expected a 1-D state of ",
                  kGeneratorStateSize, " bytes (seed and offset), got a tensor of shape ", state.sizes());
  uint8_t bytes[kGeneratorStateSize];
  const auto* p = state.data_ptr<uint8_t>();
  int64_t stride = state.stride(0);
  for (int64_t i = 0; i < kGeneratorStateSize; ++i) bytes[i] = p[i * stride];
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = load_le(bytes);
  offset_ = load_le(bytes + 8);
}

Generator make_generator(Device device) { return Generator(make_intrusive<GeneratorImpl>(device)); }

namespace {
struct DefaultGenerators {
  std::mutex mutex;
  std::map<std::pair<int, int>, Generator> by_device;  // (type, index), cpu first
  uint64_t seed_for_new = kDefaultRngSeed;             // the last manual_seed_all
};
DefaultGenerators& defaults() {
  static auto* d = new DefaultGenerators();  // never destroyed: kernels may run during exit
  return *d;
}
}  // namespace

Generator default_generator(Device device) {
  SDK_CHECK_VALUE(!device.is_meta(), "default_generator: Device type ", device.type,
                  " has no random number generator");
  if (device.is_cpu()) {
    device.index = -1;
  } else if (!device.has_index()) {
    device.index = runtime::current_device_index(device.type);
  }
  auto& d = defaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  auto key = std::make_pair(static_cast<int>(device.type), static_cast<int>(device.index));
  auto it = d.by_device.find(key);
  if (it != d.by_device.end()) return it->second;
  Generator g(make_intrusive<GeneratorImpl>(device, d.seed_for_new));
  d.by_device.emplace(key, g);
  return g;
}

std::vector<Generator> default_generators() {
  auto& d = defaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<Generator> out;
  for (const auto& [key, g] : d.by_device) out.push_back(g);
  return out;
}

void manual_seed_all(uint64_t seed) {
  auto& d = defaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.seed_for_new = seed;
  for (auto& [key, g] : d.by_device) g->set_current_seed(seed);
}

uint64_t nondeterministic_seed() {
  std::random_device rd;
  uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  s ^= static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  return s;
}

}  // namespace sdk
