// DispatchKeySet: one 64-bit word of backend bits and functionality bits.
//
// Note [DispatchKeySet representation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
//   bits [0, kNumBackends)            one per BackendComponent (bit = component - 1)
//   bits [kNumBackends, ...)          one per functionality key (bit = kNumBackends + key - 1)
// A per-backend runtime key such as AutogradPrivateUse1 sets two bits: its
// functionality (AutogradFunctionality) and its backend (PrivateUse1Bit). The
// highest-priority runtime key of a set is therefore its highest functionality
// bit, combined — when that functionality is per-backend — with its highest
// backend bit: two count-leading-zero instructions, no branches on names.
//
// Note [Dispatch table index]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every operator keeps a flat table with one slot per runtime key:
//   slot 0                      Undefined (never holds a kernel)
//   1 slot                      each non-per-backend functionality
//   kNumBackends + 1 slots      each per-backend functionality; the first of
//                               them ("no backend bit set") never holds a kernel.
// dispatch_table_index() maps a key set to its slot with one table load.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <backend_sdk/core/DispatchKey.h>

namespace sdk {

namespace detail {
// 1-based index of the highest set bit, 0 when none is set.
inline int last_set(uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

struct TableOffsetAndMask {
  uint16_t offset = 0;
  uint64_t backend_mask = 0;  // all backend bits for per-backend functionalities, else 0
};
SDK_API extern const std::array<TableOffsetAndMask, kNumFunctionalityKeys> kTableOffsets;
}  // namespace detail

constexpr uint64_t kBackendBitsMask = (uint64_t{1} << kNumBackends) - 1;

// The bit of a functionality key (Dense, BackendSelect, ...): usable in
// constant expressions, so hot paths never call DispatchKeySet(DispatchKey).
constexpr uint64_t functionality_bit(DispatchKey k) {
  return k == DispatchKey::Undefined ? 0 : uint64_t{1} << (kNumBackends + static_cast<int>(k) - 1);
}

class SDK_API DispatchKeySet {
 public:
  struct RawTag {};
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(RawTag, uint64_t repr) : repr_(repr) {}
  explicit DispatchKeySet(DispatchKey k) : repr_(bits_for(k)) {}
  explicit DispatchKeySet(BackendComponent b)
      : repr_(b == BackendComponent::InvalidBit ? 0 : uint64_t{1} << (static_cast<int>(b) - 1)) {}
  DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (auto k : keys) repr_ |= bits_for(k);
  }
  static DispatchKeySet full();  // every runtime key

  uint64_t raw_repr() const { return repr_; }
  bool empty() const { return repr_ == 0; }

  DispatchKeySet operator|(DispatchKeySet o) const { return {RawTag{}, repr_ | o.repr_}; }
  DispatchKeySet operator&(DispatchKeySet o) const { return {RawTag{}, repr_ & o.repr_}; }
  DispatchKeySet operator-(DispatchKeySet o) const { return {RawTag{}, repr_ & ~o.repr_}; }
  DispatchKeySet& operator|=(DispatchKeySet o) { repr_ |= o.repr_; return *this; }
  bool operator==(DispatchKeySet o) const { return repr_ == o.repr_; }
  bool operator!=(DispatchKeySet o) const { return repr_ != o.repr_; }
  DispatchKeySet add(DispatchKey k) const { return *this | DispatchKeySet(k); }
  // Removes a functionality key; for a per-backend runtime key only its
  // functionality bit is removed (as c10 does), other backends' bits stay.
  DispatchKeySet remove(DispatchKey k) const;

  // True if the runtime key k is in the set (both its bits for per-backend keys).
  bool has(DispatchKey k) const;
  bool has_backend(BackendComponent b) const { return (repr_ & DispatchKeySet(b).repr_) != 0; }
  bool has_any(DispatchKeySet o) const { return (repr_ & o.repr_) != 0; }

  DispatchKey highest_functionality_key() const {
    int idx = detail::last_set(repr_ >> kNumBackends);
    return static_cast<DispatchKey>(idx);
  }
  BackendComponent highest_backend() const {
    return static_cast<BackendComponent>(detail::last_set(repr_ & kBackendBitsMask));
  }
  // The runtime key a call with this set dispatches to.
  DispatchKey highest_priority_key() const;

  // See Note [Dispatch table index].
  int dispatch_table_index() const {
    int functionality = detail::last_set(repr_ >> kNumBackends);
    const auto& om = detail::kTableOffsets[functionality];
    return om.offset + detail::last_set(repr_ & om.backend_mask);
  }

  std::string str() const;  // "DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU)"

 private:
  static uint64_t bits_for(DispatchKey k);
  uint64_t repr_ = 0;
};

// Size of every operator's dispatch table; see Note [Dispatch table index].
constexpr int compute_dispatch_table_size() {
  int n = 1;
  for (int f = 1; f < kNumFunctionalityKeys; ++f) {
    n += is_per_backend_functionality(static_cast<DispatchKey>(f)) ? kNumBackends + 1 : 1;
  }
  return n;
}
constexpr int kDispatchTableSize = compute_dispatch_table_size();
SDK_API int num_runtime_entries();
// The runtime key stored in slot `index` (Undefined for the unused slots).
SDK_API DispatchKey runtime_key_for_table_index(int index);

// Alias expansion: the runtime keys an alias key stands for.
//   Autograd                  -> every AutogradFunctionality backend key
//   CompositeExplicitAutograd -> every Dense backend key (+ BackendSelect? no)
//   CompositeImplicitAutograd -> Dense and Autograd backend keys
// A runtime key expands to itself.
SDK_API DispatchKeySet runtime_key_set_for(DispatchKey k);

static_assert(static_cast<int>(BackendComponent::CPUBit) - 1 == static_cast<int>(DeviceType::CPU) &&
                  static_cast<int>(BackendComponent::PrivateUse3Bit) - 1 == static_cast<int>(DeviceType::PrivateUse3),
              "backend bits are indexed by DeviceType");

// The set a tensor on `device` carries by default: Dense, ADInplaceOrView,
// AutogradFunctionality and AutocastFunctionality for its backend. Inline:
// every new tensor computes it.
inline DispatchKeySet default_tensor_key_set(DeviceType device) {
  constexpr uint64_t functionalities =
      functionality_bit(DispatchKey::Dense) | functionality_bit(DispatchKey::ADInplaceOrView) |
      functionality_bit(DispatchKey::AutogradFunctionality) | functionality_bit(DispatchKey::AutocastFunctionality);
  // backend bit = BackendComponent - 1 = DeviceType (see backend_component_for)
  return DispatchKeySet(DispatchKeySet::RawTag{}, functionalities | (uint64_t{1} << static_cast<int>(device)));
}

// Keys after `k` in priority order, for redispatch from a kernel registered
// at `k`: the set of keys strictly lower in priority than k.
SDK_API DispatchKeySet keys_after(DispatchKey k);

}  // namespace sdk
