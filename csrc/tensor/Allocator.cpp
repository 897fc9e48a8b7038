#include "tensor/Allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

#include "core/Exception.h"

namespace sdk {
namespace {

constexpr size_t kAlignment = 64;

class CPUAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* p = nullptr;
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    p = std::aligned_alloc(kAlignment, rounded);
    SDK_CHECK_KIND(ErrorKind::OutOfMemory, p != nullptr, "CPU out of memory: tried to allocate ", nbytes,
                   " bytes");
    return DataPtr(p, p, &std::free, Device(DeviceType::CPU));
  }
};

// Meta tensors have no data: a null DataPtr of the right device.
class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t) override { return DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::Meta)); }
};

std::atomic<Allocator*>& slot(DeviceType type) {
  static std::atomic<Allocator*> slots[kNumDeviceTypes] = {};
  return slots[static_cast<int>(type)];
}

}  // namespace

Allocator* cpu_allocator() {
  static CPUAllocator* a = new CPUAllocator();  // immortal: tensors may die during static destruction
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) { slot(type).store(allocator); }

Allocator* get_allocator(DeviceType type) {
  Allocator* a = slot(type).load(std::memory_order_acquire);
  if (a) return a;
  if (type == DeviceType::CPU) return cpu_allocator();
  if (type == DeviceType::Meta) {
    static MetaAllocator* meta = new MetaAllocator();
    return meta;
  }
  SDK_THROW(Runtime, "No allocator is registered for device type '", device_type_name(type),
            "'. A backend must register its device (and its allocator) before tensors can be created on it.");
}

}  // namespace sdk
