// Thread-local included/excluded dispatch keys and their RAII guards.
//
// Note [TLS key sets]
// ~~~~~~~~~~~~~~~~~~~
// The key set of a call is
//     (OR of the tensor arguments' key sets | included) - excluded
// where `included` and `excluded` are per thread. BackendSelect and
// ADInplaceOrView are included by default (as in c10), and Autocast is
// excluded by default. The included set is stored XOR the default so that a
// zero-initialised thread_local means "defaults", with no init check on the
// hot path.
#pragma once

#include <backend_sdk/core/DispatchKeySet.h>

namespace sdk {

constexpr uint64_t kDefaultIncludedBits =
    functionality_bit(DispatchKey::BackendSelect) | functionality_bit(DispatchKey::ADInplaceOrView);
constexpr uint64_t kDefaultExcludedBits = functionality_bit(DispatchKey::AutocastFunctionality);
inline DispatchKeySet default_included_keys() { return DispatchKeySet(DispatchKeySet::RawTag{}, kDefaultIncludedBits); }
inline DispatchKeySet default_excluded_keys() { return DispatchKeySet(DispatchKeySet::RawTag{}, kDefaultExcludedBits); }

namespace detail {
struct RawLocalDispatchKeySet {
  uint64_t included_xor_default = 0;
  uint64_t excluded_xor_default = 0;
};
SDK_API extern thread_local RawLocalDispatchKeySet raw_local_dispatch_key_set;
}  // namespace detail

struct LocalDispatchKeySet {
  DispatchKeySet included;
  DispatchKeySet excluded;
};

inline LocalDispatchKeySet tls_local_dispatch_key_set() {
  const auto& raw = detail::raw_local_dispatch_key_set;
  return {DispatchKeySet(DispatchKeySet::RawTag{}, raw.included_xor_default ^ kDefaultIncludedBits),
          DispatchKeySet(DispatchKeySet::RawTag{}, raw.excluded_xor_default ^ kDefaultExcludedBits)};
}
SDK_API void tls_set_local_dispatch_key_set(LocalDispatchKeySet s);

// Adds keys to the thread's included set for the guard's lifetime.
class SDK_API IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet keys);
  explicit IncludeDispatchKeyGuard(DispatchKey k) : IncludeDispatchKeyGuard(DispatchKeySet(k)) {}
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;
  ~IncludeDispatchKeyGuard();

 private:
  LocalDispatchKeySet saved_;
};

// Adds keys to the thread's excluded set for the guard's lifetime.
class SDK_API ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet keys);
  explicit ExcludeDispatchKeyGuard(DispatchKey k) : ExcludeDispatchKeyGuard(DispatchKeySet(k)) {}
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;
  ~ExcludeDispatchKeyGuard();

 private:
  LocalDispatchKeySet saved_;
};

}  // namespace sdk
