#include <backend_sdk/dispatch/LocalDispatchKeySet.h>

namespace sdk {
namespace detail {
thread_local RawLocalDispatchKeySet raw_local_dispatch_key_set;
}  // namespace detail

void tls_set_local_dispatch_key_set(LocalDispatchKeySet s) {
  detail::raw_local_dispatch_key_set.included_xor_default =
      s.included.raw_repr() ^ default_included_keys().raw_repr();
  detail::raw_local_dispatch_key_set.excluded_xor_default =
      s.excluded.raw_repr() ^ default_excluded_keys().raw_repr();
}

IncludeDispatchKeyGuard::IncludeDispatchKeyGuard(DispatchKeySet keys) : saved_(tls_local_dispatch_key_set()) {
  tls_set_local_dispatch_key_set({saved_.included | keys, saved_.excluded});
}
IncludeDispatchKeyGuard::~IncludeDispatchKeyGuard() { tls_set_local_dispatch_key_set(saved_); }

ExcludeDispatchKeyGuard::ExcludeDispatchKeyGuard(DispatchKeySet keys) : saved_(tls_local_dispatch_key_set()) {
  tls_set_local_dispatch_key_set({saved_.included, saved_.excluded | keys});
}
ExcludeDispatchKeyGuard::~ExcludeDispatchKeyGuard() { tls_set_local_dispatch_key_set(saved_); }

}  // namespace sdk
