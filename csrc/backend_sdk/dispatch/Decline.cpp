// Note [Declining kernels] (dispatch/Decline.h).
#include <backend_sdk/dispatch/Decline.h>

#include <map>
#include <mutex>

#include <backend_sdk/dispatch/detail/KernelRegistry.h>

namespace sdk {

void decline(std::string reason) { throw KernelDeclined(std::move(reason)); }

namespace {
thread_local const std::string* t_reason = nullptr;
std::mutex g_counts_mutex;
std::map<std::pair<std::string, std::string>, int64_t>& counts() {
  static auto* m = new std::map<std::pair<std::string, std::string>, int64_t>();  // leaked: used at exit
  return *m;
}

// Sets current_decline_reason() for the fallback's run (restored on exit, also by an exception).
class ReasonScope {
 public:
  explicit ReasonScope(const std::string* reason) : previous_(t_reason) { t_reason = reason; }
  ~ReasonScope() { t_reason = previous_; }
  ReasonScope(const ReasonScope&) = delete;
  ReasonScope& operator=(const ReasonScope&) = delete;

 private:
  const std::string* previous_;
};
}  // namespace

const std::string* current_decline_reason() { return t_reason; }

namespace detail {
void run_declined(const OperatorHandle& op, DispatchKeySet keys, Stack* stack, const std::string& reason) {
  const BackendComponent backend = keys.highest_backend();
  const DispatchKey key = to_runtime_per_backend_key(DispatchKey::Dense, backend);
  const std::string& name = device_type_name(device_type_for(backend));
  {
    std::lock_guard<std::mutex> guard(g_counts_mutex);
    ++counts()[{op.name(), reason}];
  }
  std::optional<KernelFunction> fallback = backend_fallback(key);
  SDK_CHECK_NOT_IMPLEMENTED(fallback.has_value(), name, "'s kernel for ", op.name(), " declined this call (", reason,
                            "), and the ", name, " backend has no fallback to run it: register one with "
                            "SDK_LIBRARY_IMPL(_, ", to_string(key), ", m) { m.fallback(...); }");
  ReasonScope scope(&reason);
  fallback->call_boxed(op, keys, stack);
}
}  // namespace detail

std::vector<DeclineCount> decline_counts() {
  std::lock_guard<std::mutex> guard(g_counts_mutex);
  std::vector<DeclineCount> out;
  for (const auto& [k, n] : counts()) out.push_back({k.first, k.second, n});
  return out;
}

void reset_decline_counts() {
  std::lock_guard<std::mutex> guard(g_counts_mutex);
  counts().clear();
}

}  // namespace sdk
