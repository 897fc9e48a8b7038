// DispatchKey and BackendComponent: the names of dispatch-table slots.
//
// Note [DispatchKey layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// As in PyTorch's c10, a key is either
//  * a *functionality* key (Dense, BackendSelect, Python, ..., Autograd, ...),
//    ordered by priority: a higher enumerator runs first;
//  * a *per-backend runtime* key (CPU, AutogradPrivateUse1, ...): a per-backend
//    functionality (Dense, AutogradFunctionality, AutocastFunctionality)
//    combined with a BackendComponent;
//  * an *alias* key (Autograd, CompositeImplicitAutograd,
//    CompositeExplicitAutograd) that only exists at registration time and
//    expands into a set of runtime keys (see DispatchKeySet.h).
// The per-backend runtime keys are laid out so that
//   key - StartOf<Functionality>Backends == BackendComponent
// which lets both directions be computed without tables.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>

namespace sdk {

enum class BackendComponent : uint8_t {
  InvalidBit = 0,
  CPUBit,
  MetaBit,
  PrivateUse1Bit,
  PrivateUse2Bit,
  PrivateUse3Bit,
  EndOfBackendKeys = PrivateUse3Bit,
};
constexpr int kNumBackends = static_cast<int>(BackendComponent::EndOfBackendKeys);

enum class DispatchKey : uint16_t {
  Undefined = 0,
  // ---- functionality keys, lowest priority first ----
  Dense,  // per-backend
  BackendSelect,
  // Fake tensors (ours; c10 has no such key): below Python, so the modes and subclasses above see a
  // call on fake tensors first and FakeTensorMode is a mode (Note [Infra modes],
  // backend_sdk/_python_dispatch_impl.py).
  Fake,
  Python,
  ADInplaceOrView,
  AutogradFunctionality,  // per-backend
  Tracer,
  AutocastFunctionality,  // per-backend
  // vmap (Note [Batched tensors], backend_sdk/_functorch/vmap.py), where c10 places them: above
  // Autograd and Autocast, so batching rules see (and autograd records) the unbatched values.
  FuncTorchBatched,    // carried by batched tensors
  FuncTorchVmapMode,   // thread-included while a vmap runs: random operators and factories
  PythonTLSSnapshot,
  EndOfFunctionalityKeys,

  // ---- per-backend runtime keys ----
  StartOfDenseBackends = EndOfFunctionalityKeys,
  CPU,
  Meta,
  PrivateUse1,
  PrivateUse2,
  PrivateUse3,
  EndOfDenseBackends = PrivateUse3,

  StartOfAutogradBackends,
  AutogradCPU,
  AutogradMeta,
  AutogradPrivateUse1,
  AutogradPrivateUse2,
  AutogradPrivateUse3,
  EndOfAutogradBackends = AutogradPrivateUse3,

  StartOfAutocastBackends,
  AutocastCPU,
  AutocastMeta,
  AutocastPrivateUse1,
  AutocastPrivateUse2,
  AutocastPrivateUse3,
  EndOfAutocastBackends = AutocastPrivateUse3,
  EndOfRuntimeBackendKeys = EndOfAutocastBackends,

  // ---- alias keys (registration only) ----
  Autograd,
  CompositeImplicitAutograd,
  CompositeExplicitAutograd,
  StartOfAliasKeys = Autograd,
  EndOfAliasKeys = CompositeExplicitAutograd,
};

constexpr int kNumFunctionalityKeys = static_cast<int>(DispatchKey::EndOfFunctionalityKeys);

constexpr bool is_per_backend_functionality(DispatchKey k) {
  return k == DispatchKey::Dense || k == DispatchKey::AutogradFunctionality ||
         k == DispatchKey::AutocastFunctionality;
}
constexpr bool is_alias_key(DispatchKey k) {
  return k >= DispatchKey::StartOfAliasKeys && k <= DispatchKey::EndOfAliasKeys;
}
constexpr bool is_runtime_per_backend_key(DispatchKey k) {
  return k > DispatchKey::StartOfDenseBackends && k <= DispatchKey::EndOfRuntimeBackendKeys &&
         k != DispatchKey::StartOfAutogradBackends && k != DispatchKey::StartOfAutocastBackends;
}

// CPU -> Dense, AutogradPrivateUse1 -> AutogradFunctionality; functionality keys map to themselves.
SDK_API DispatchKey to_functionality_key(DispatchKey k);
// AutogradPrivateUse1 -> PrivateUse1Bit; InvalidBit for keys without a backend.
SDK_API BackendComponent to_backend_component(DispatchKey k);
// (AutogradFunctionality, PrivateUse1Bit) -> AutogradPrivateUse1.
SDK_API DispatchKey to_runtime_per_backend_key(DispatchKey functionality, BackendComponent b);

SDK_API BackendComponent backend_component_for(DeviceType t);
SDK_API DeviceType device_type_for(BackendComponent b);
// The Dense key of a device type: CPU -> CPU, PrivateUse1 -> PrivateUse1.
SDK_API DispatchKey dense_key_for(DeviceType t);

// Printable name. Per-backend keys of a renamed PrivateUse backend use the
// capitalised vendor name ("Accel", "AutogradAccel"); see Note [Backend renaming].
SDK_API std::string to_string(DispatchKey k);
SDK_API std::string to_string(BackendComponent b);
// Parses a key name as registration accepts it: canonical names
// ("AutogradPrivateUse1"), renamed forms ("AutogradAccel"), and device-type
// names ("cpu", "meta", "privateuseone", "accel") for Dense keys.
// Throws ValueError listing the valid names.
SDK_API DispatchKey parse_dispatch_key(std::string_view name);

SDK_API std::ostream& operator<<(std::ostream& os, DispatchKey k);

}  // namespace sdk
