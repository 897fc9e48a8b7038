#include <backend_sdk/core/DispatchKeySet.h>

#include <backend_sdk/core/Exception.h>

namespace sdk {
namespace detail {
namespace {

// constexpr: kTableOffsets is constant-initialised, so a static initialiser of another translation
// unit that dispatches or registers before this file's initialisers ran sees the real table, not
// zeros (Note [Init-order-safe registration errors], dispatch/Library.cpp).
constexpr std::array<TableOffsetAndMask, kNumFunctionalityKeys> compute_offsets() {
  std::array<TableOffsetAndMask, kNumFunctionalityKeys> out{};
  uint16_t next = 1;  // slot 0 is Undefined
  for (int f = 1; f < kNumFunctionalityKeys; ++f) {
    out[f].offset = next;
    if (is_per_backend_functionality(static_cast<DispatchKey>(f))) {
      out[f].backend_mask = kBackendBitsMask;
      next += kNumBackends + 1;
    } else {
      next += 1;
    }
  }
  return out;
}

}  // namespace

const std::array<TableOffsetAndMask, kNumFunctionalityKeys> kTableOffsets = compute_offsets();

}  // namespace detail

uint64_t DispatchKeySet::bits_for(DispatchKey k) {
  if (k == DispatchKey::Undefined) return 0;
  if (k < DispatchKey::EndOfFunctionalityKeys) {
    return uint64_t{1} << (kNumBackends + static_cast<int>(k) - 1);
  }
  SDK_CHECK_VALUE(is_runtime_per_backend_key(k), "DispatchKeySet: ", to_string(k),
                  " is an alias key; expand it with runtime_key_set_for()");
  return bits_for(to_functionality_key(k)) | DispatchKeySet(to_backend_component(k)).repr_;
}

DispatchKeySet DispatchKeySet::full() {
  return {RawTag{}, (uint64_t{1} << (kNumBackends + kNumFunctionalityKeys - 1)) - 1};
}

DispatchKeySet DispatchKeySet::remove(DispatchKey k) const {
  return {RawTag{}, repr_ & ~bits_for(to_functionality_key(k))};
}

bool DispatchKeySet::has(DispatchKey k) const {
  uint64_t bits = bits_for(k);
  return bits != 0 && (repr_ & bits) == bits;
}

DispatchKey DispatchKeySet::highest_priority_key() const {
  DispatchKey f = highest_functionality_key();
  if (!is_per_backend_functionality(f)) return f;
  BackendComponent b = highest_backend();
  if (b == BackendComponent::InvalidBit) return DispatchKey::Undefined;
  return to_runtime_per_backend_key(f, b);
}

std::string DispatchKeySet::str() const {
  std::string out = "DispatchKeySet(";
  bool first = true;
  // Functionality keys from highest priority down; per-backend ones once per backend bit.
  for (int f = kNumFunctionalityKeys - 1; f >= 1; --f) {
    auto fk = static_cast<DispatchKey>(f);
    if (!has_any(DispatchKeySet(fk))) continue;
    if (is_per_backend_functionality(fk)) {
      for (int b = kNumBackends; b >= 1; --b) {
        auto bc = static_cast<BackendComponent>(b);
        if (!has_backend(bc)) continue;
        out += (first ? "" : ", ") + to_string(to_runtime_per_backend_key(fk, bc));
        first = false;
      }
    } else {
      out += (first ? "" : ", ") + to_string(fk);
      first = false;
    }
  }
  return out + ")";
}

int num_runtime_entries() {
  const auto& last = detail::kTableOffsets[kNumFunctionalityKeys - 1];
  return last.offset + (last.backend_mask ? kNumBackends + 1 : 1);
}

DispatchKey runtime_key_for_table_index(int index) {
  for (int f = kNumFunctionalityKeys - 1; f >= 1; --f) {
    const auto& om = detail::kTableOffsets[f];
    if (index < om.offset) continue;
    auto fk = static_cast<DispatchKey>(f);
    if (!is_per_backend_functionality(fk)) return index == om.offset ? fk : DispatchKey::Undefined;
    int b = index - om.offset;
    return b == 0 ? DispatchKey::Undefined : to_runtime_per_backend_key(fk, static_cast<BackendComponent>(b));
  }
  return DispatchKey::Undefined;
}

namespace {
DispatchKeySet all_backends_of(DispatchKey functionality) {
  return DispatchKeySet(functionality) | DispatchKeySet(DispatchKeySet::RawTag{}, kBackendBitsMask);
}
}  // namespace

DispatchKeySet runtime_key_set_for(DispatchKey k) {
  switch (k) {
    case DispatchKey::Autograd:
      return all_backends_of(DispatchKey::AutogradFunctionality);
    case DispatchKey::CompositeExplicitAutograd:
      return all_backends_of(DispatchKey::Dense);
    case DispatchKey::CompositeImplicitAutograd:
      return all_backends_of(DispatchKey::Dense) | all_backends_of(DispatchKey::AutogradFunctionality);
    default:
      return DispatchKeySet(k);
  }
}

DispatchKeySet keys_after(DispatchKey k) {
  DispatchKey f = to_functionality_key(k);
  // All functionality bits strictly below f, plus every backend bit.
  uint64_t below = (uint64_t{1} << (kNumBackends + static_cast<int>(f) - 1)) - 1;
  return DispatchKeySet(DispatchKeySet::RawTag{}, below | kBackendBitsMask);
}

}  // namespace sdk
