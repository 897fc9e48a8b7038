// Note [Closed namespaces] (dispatch/detail/KernelRegistry.h).
#include <backend_sdk/dispatch/detail/KernelRegistry.h>

#include <algorithm>
#include <cctype>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/detail/KernelChecker.h>
#include <backend_sdk/dispatch/detail/StaticRegistration.h>

namespace sdk::detail {

namespace {

struct LiveKernel {
  std::string op;
  DispatchKey key;
  std::string where;
  const Library* owner;
  bool check_pending;  // Note [Closed namespaces]: checked when its library's load ends
};

std::mutex g_mutex;
// Every live kernel registered through register_kernel (erased by its handle).
std::list<LiveKernel>& live_kernels() {
  static auto* l = new std::list<LiveKernel>();  // leaked: handles may run at exit
  return *l;
}
// ns -> where its DEF libraries were registered (normally one; a stack while one replaces another).
std::unordered_map<std::string, std::vector<std::string>>& closed() {
  static auto* m = new std::unordered_map<std::string, std::vector<std::string>>();
  return *m;
}
std::map<DispatchKey, std::vector<std::pair<uint64_t, KernelFunction>>>& fallbacks() {
  static auto* m = new std::map<DispatchKey, std::vector<std::pair<uint64_t, KernelFunction>>>();
  return *m;
}
uint64_t g_next_fallback = 1;
thread_local bool t_in_static_block = false;

// "ns::name.default" and "ns::name" are the same operator.
std::string normalised(const std::string& qualified) {
  auto [ns, name, overload] = parse_operator_name(qualified);
  std::string out = ns + "::" + name;
  if (!overload.empty() && overload != "default") out += "." + overload;
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Up to three names of `ns` nearest to `op` ("ns::name.overload"): case-insensitive edit distance
// on "name.overload", the overloads of the same name first.
std::vector<std::string> nearest_names(const std::string& ns, const std::string& op) {
  const std::string prefix = ns + "::";
  const std::string wanted = lower(op.substr(prefix.size()));
  const std::string wanted_base = wanted.substr(0, wanted.find('.'));
  const size_t limit = std::max<size_t>(2, wanted.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& name : Dispatcher::singleton().registered_operator_names()) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string candidate = lower(name.substr(prefix.size()));
    size_t d = edit_distance(wanted, candidate);
    const std::string base = candidate.substr(0, candidate.find('.'));
    if (base == wanted_base) {
      d = std::min<size_t>(d, 1);  // the overloads of the name asked for
    } else if (base.size() >= 3 && (wanted_base.rfind(base, 0) == 0 || base.rfind(wanted_base, 0) == 0)) {
      d = std::min(d, limit);  // "gelu_fast" -> "gelu": one name extends the other
    }
    if (d <= limit) scored.emplace_back(d, name);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out.push_back(scored[i].second);
  return out;
}

// The refusal of Note [Closed namespaces], or "" when `op` exists or its namespace is open.
std::string closed_namespace_error(const std::string& op, DispatchKey key, const std::string& where) {
  if (Dispatcher::singleton().find_schema(op)) return "";
  const std::string ns = op.substr(0, op.find("::"));
  std::string def_site;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto it = closed().find(ns);
    if (it == closed().end() || it->second.empty()) return "";
    def_site = it->second.back();
  }
  std::string msg = "impl(\"" + op + "\", " + to_string(key) + ") at " + where + ": the operator " + op +
                    " does not exist; the namespace '" + ns + "' is closed (its operators are defined by the " +
                    "DEF library at " + def_site + "), so this kernel would never run.";
  std::vector<std::string> near = nearest_names(ns, op);
  if (!near.empty()) {
    msg += " Did you mean ";
    for (size_t i = 0; i < near.size(); ++i) {
      if (i) msg += i + 1 == near.size() ? " or " : ", ";
      msg += near[i];
    }
    msg += "?";
  }
  return msg;
}

}  // namespace

StaticBlockScope::StaticBlockScope() : previous_(t_in_static_block) { t_in_static_block = true; }
StaticBlockScope::~StaticBlockScope() { t_in_static_block = previous_; }

RegistrationHandle register_kernel(const std::string& qualified, DispatchKey key, KernelFunction kernel,
                                   const std::string& debug, const Library* owner) {
  const std::string op = normalised(qualified);
  const bool deferred = t_in_static_block || static_library_group_open();  // Note [Closed namespaces], when
  if (!deferred) {
    std::string error = closed_namespace_error(op, key, debug);
    SDK_CHECK_VALUE(error.empty(), error);
  }
  // Note [Kernel checker]: a backend's kernel registered while the checker is requested is wrapped.
  RegistrationHandle inner =
      Dispatcher::singleton().register_impl(op, key, maybe_checked_kernel(op, key, std::move(kernel)), debug);
  std::list<LiveKernel>::iterator it;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    it = live_kernels().insert(live_kernels().end(), LiveKernel{op, key, debug, owner, deferred});
  }
  auto shared = std::make_shared<RegistrationHandle>(std::move(inner));
  return RegistrationHandle([it, shared] {
    {
      std::lock_guard<std::mutex> guard(g_mutex);
      live_kernels().erase(it);
    }
    shared->reset();
  });
}

void resolve_deferred_checks(const std::vector<Library*>* libs) {
  std::vector<LiveKernel> pending;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    for (LiveKernel& k : live_kernels()) {
      if (!k.check_pending) continue;
      if (libs && std::find(libs->begin(), libs->end(), k.owner) == libs->end()) continue;
      k.check_pending = false;
      pending.push_back(k);
    }
  }
  for (const LiveKernel& k : pending) {
    std::string error = closed_namespace_error(k.op, k.key, k.where);
    if (!error.empty()) record_static_registration_error(std::move(error));
  }
}

RegistrationHandle close_namespace(const std::string& ns, const std::string& debug) {
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    closed()[ns].push_back(debug);
  }
  return RegistrationHandle([ns, debug] {
    std::lock_guard<std::mutex> guard(g_mutex);
    auto& sites = closed()[ns];
    auto it = std::find(sites.begin(), sites.end(), debug);
    if (it != sites.end()) sites.erase(it);
    if (sites.empty()) closed().erase(ns);
  });
}

RegistrationHandle register_backend_fallback(DispatchKey key, KernelFunction kernel, const std::string& debug) {
  KernelFunction copy = kernel;
  RegistrationHandle inner = Dispatcher::singleton().register_fallback(key, std::move(kernel), debug);
  uint64_t id;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    id = g_next_fallback++;
    fallbacks()[key].emplace_back(id, std::move(copy));
  }
  auto shared = std::make_shared<RegistrationHandle>(std::move(inner));
  return RegistrationHandle([key, id, shared] {
    shared->reset();
    std::lock_guard<std::mutex> guard(g_mutex);
    auto& v = fallbacks()[key];
    v.erase(std::remove_if(v.begin(), v.end(), [id](const auto& p) { return p.first == id; }), v.end());
  });
}

std::optional<KernelFunction> backend_fallback(DispatchKey key) {
  std::lock_guard<std::mutex> guard(g_mutex);
  auto it = fallbacks().find(key);
  if (it == fallbacks().end() || it->second.empty()) return std::nullopt;
  return it->second.back().second;
}

std::vector<UndefinedKernel> kernels_for_undefined_operators() {
  std::vector<LiveKernel> all;
  {
    std::lock_guard<std::mutex> guard(g_mutex);
    all.assign(live_kernels().begin(), live_kernels().end());
  }
  std::vector<UndefinedKernel> out;
  for (const LiveKernel& k : all) {
    if (!Dispatcher::singleton().find_schema(k.op)) out.push_back({k.op, to_string(k.key), k.where});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.op < b.op; });
  return out;
}

}  // namespace sdk::detail
