#include <backend_sdk/dispatch/Dispatcher.h>

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <backend_sdk/core/Exception.h>

namespace sdk {

// ---------------------------------------------------------------------------
// Warnings
// ---------------------------------------------------------------------------
namespace {
// C stdio, not std::cerr: a warning may come from a static initialiser (Note [Init-order-safe registration errors]).
void default_warning_handler(const std::string& message) { std::fprintf(stderr, "[backend_sdk] Warning: %s\n", message.c_str()); }
std::atomic<WarningHandler> g_warning_handler{&default_warning_handler};
}  // namespace

void set_warning_handler(WarningHandler h) { g_warning_handler.store(h ? h : &default_warning_handler); }
void warn(const std::string& message) { g_warning_handler.load()(message); }

// ---------------------------------------------------------------------------
// KernelFunction
// ---------------------------------------------------------------------------
namespace {
struct FallthroughMarker : OperatorKernel {};
void fallthrough_kernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack*) {
  // Unreachable: fallthrough keys are masked out before lookup.
  SDK_THROW(Runtime, "Internal error: fallthrough kernel of ", op.name(), " was called for ", ks.str());
}
}  // namespace

KernelFunction KernelFunction::make_fallthrough() {
  KernelFunction k;
  k.boxed_ = &fallthrough_kernel;
  return k;
}

bool KernelFunction::is_fallthrough() const { return boxed_ == &fallthrough_kernel; }

KernelFunction KernelFunction::make_from_boxed(BoxedKernelFn fn, std::shared_ptr<OperatorKernel> functor) {
  SDK_CHECK_VALUE(fn != nullptr, "make_from_boxed: kernel function is null");
  KernelFunction k;
  k.boxed_ = fn;
  k.functor_ = std::move(functor);
  return k;
}

KernelFunction KernelFunction::make_autograd_fallback(BoxedKernelFn fn, std::shared_ptr<OperatorKernel> functor) {
  KernelFunction k = make_from_boxed(fn, std::move(functor));
  k.skip_without_grad_ = true;
  return k;
}

namespace {
std::string demangle(const char* name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string result = status == 0 && out ? out : name;
  std::free(out);
  return result;
}
}  // namespace

void KernelFunction::signature_mismatch(const OperatorHandle& op, const std::type_info& called) const {
  SDK_THROW(Runtime, "Tried to call operator ", op.name(),
            " with a C++ signature that does not match the signature of its registered kernel. Called with ",
            demangle(called.name()), " but the kernel has ", demangle(signature_->name()),
            ". Use the canonical argument types of Note [Kernel argument types].");
}

// ---------------------------------------------------------------------------
// OperatorEntry
// ---------------------------------------------------------------------------
namespace {
void missing_kernel(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack*) {
  Dispatcher::report_missing_kernel(op, ks);
}
// The record every empty slot points at, so lookup never sees null.
const AnnotatedKernel* missing_record() {
  static const AnnotatedKernel* rec = [] {
    auto* r = new AnnotatedKernel();  // immortal
    r->kernel = KernelFunction::make_from_boxed(&missing_kernel);
    r->debug = "missing";
    return r;
  }();
  return rec;
}

bool is_tensor_like(const Type& t) {
  if (t.kind == TypeKind::Tensor) return true;
  if ((t.kind == TypeKind::Optional || t.kind == TypeKind::List) && t.elem) return is_tensor_like(*t.elem);
  return false;
}
}  // namespace

const FunctionSchema& OperatorEntry::schema() const {
  const SchemaRecord* rec = schema_record();
  SDK_CHECK(rec != nullptr, "Operator ", name_, " has kernels registered but no schema: it was never defined");
  return rec->schema;
}

const std::string& OperatorEntry::schema_debug() const {
  static const std::string none;
  const SchemaRecord* rec = schema_record();
  return rec ? rec->debug : none;
}

void OperatorEntry::check_stack(const SchemaRecord* rec, const Stack& stack) const {
  size_t n = rec ? rec->schema.arguments.size() : 0;
  SDK_CHECK(stack.size() >= n, "Internal error: ", name_, " was called with ", stack.size(),
            " values on the stack but its schema has ", n, " arguments");
}

namespace {
// The tensor arguments of a boxed call, for the record's definition (none if undefined).
template <typename Fn>
bool any_tensor_argument(const SchemaRecord* rec, const Stack& stack, Fn&& fn) {
  if (!rec) return false;
  const IValue* base = stack.data() + stack.size() - rec->schema.arguments.size();
  for (uint16_t pos : rec->tensor_arg_positions) {
    const IValue& v = base[pos];
    if (v.is_tensor()) {
      if (fn(v.to_tensor())) return true;
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) {
        if (fn(t)) return true;
      }
    } else if (v.is_list()) {
      for (const IValue& e : v.to_list()) {
        if (e.is_tensor() && fn(e.to_tensor())) return true;
      }
    }
  }
  return false;
}
}  // namespace

DispatchKeySet OperatorEntry::compute_keys_boxed(const SchemaRecord* rec, const Stack& stack) const {
  uint64_t repr = 0;
  any_tensor_argument(rec, stack, [&](const Tensor& t) {
    if (t.defined()) repr |= t.key_set().raw_repr();
    return false;
  });
  LocalDispatchKeySet tls = tls_local_dispatch_key_set();
  return (DispatchKeySet(DispatchKeySet::RawTag{}, repr) | tls.included) - tls.excluded;
}

bool OperatorEntry::any_requires_grad_boxed(const SchemaRecord* rec, const Stack& stack) const {
  return any_tensor_argument(rec, stack, [](const Tensor& t) { return boxing::tensor_requires_grad(t); });
}

const AnnotatedKernel* OperatorEntry::find_kernel(DispatchKey k) const {
  auto it = kernels_.find(k);
  if (it == kernels_.end() || it->second.empty()) return nullptr;
  return it->second.front().get();
}

bool OperatorEntry::has_kernel_for(DispatchKey k) const {
  std::lock_guard<std::mutex> guard(Dispatcher::singleton().mutex_);
  return find_kernel(k) != nullptr;
}

// c10's precedence, see DESIGN.md "Dispatcher model":
//   direct registration > CompositeExplicitAutograd > CompositeImplicitAutograd
//   > Autograd alias > backend fallback > missing
const AnnotatedKernel* OperatorEntry::compute_entry(
    int index, const std::array<const AnnotatedKernel*, kDispatchTableSize>& fallbacks,
    const char** source) const {
  DispatchKey k = runtime_key_for_table_index(index);
  *source = "missing";
  if (k == DispatchKey::Undefined) {
    // A call with no tensor (and no backend) key, e.g. cat([]): as in c10, a
    // composite kernel may still handle it (and report the bad input itself).
    if (index != 0) return nullptr;
    for (DispatchKey alias : {DispatchKey::CompositeExplicitAutograd, DispatchKey::CompositeImplicitAutograd}) {
      if (const AnnotatedKernel* c = find_kernel(alias)) {
        *source = "composite kernel for calls without a backend";
        return c;
      }
    }
    return nullptr;
  }
  if (const AnnotatedKernel* direct = find_kernel(k)) {
    *source = "kernel";
    return direct;
  }
  DispatchKey functionality = to_functionality_key(k);
  if (functionality == DispatchKey::Dense) {
    if (const AnnotatedKernel* c = find_kernel(DispatchKey::CompositeExplicitAutograd)) {
      *source = "default backend kernel";
      return c;
    }
  }
  if (functionality == DispatchKey::Dense || functionality == DispatchKey::AutogradFunctionality) {
    const AnnotatedKernel* c = find_kernel(DispatchKey::CompositeImplicitAutograd);
    // For an autograd key, a CompositeImplicitAutograd kernel is used only if
    // the backend has no kernel of its own (otherwise autograd must wrap that
    // kernel, not decompose around it).
    bool backend_has_kernel = false;
    if (functionality == DispatchKey::AutogradFunctionality) {
      DispatchKey dense = to_runtime_per_backend_key(DispatchKey::Dense, to_backend_component(k));
      backend_has_kernel = find_kernel(dense) || find_kernel(DispatchKey::CompositeExplicitAutograd);
    }
    if (c && !backend_has_kernel) {
      *source = "math kernel";
      return c;
    }
  }
  if (functionality == DispatchKey::AutogradFunctionality) {
    if (const AnnotatedKernel* a = find_kernel(DispatchKey::Autograd)) {
      *source = "autograd kernel";
      return a;
    }
  }
  if (fallbacks[index]) {
    *source = "backend fallback";
    return fallbacks[index];
  }
  return nullptr;
}

void OperatorEntry::update_table(const std::array<const AnnotatedKernel*, kDispatchTableSize>& fallbacks) {
  std::array<uint64_t, kNumBackends + 1> masks;
  masks.fill(DispatchKeySet::full().raw_repr());
  std::array<uint64_t, kNumBackends + 1> drops{};
  for (int i = 0; i < kDispatchTableSize; ++i) {
    const char* source;
    const AnnotatedKernel* k = compute_entry(i, fallbacks, &source);
    if (k && k->kernel.is_fallthrough()) {
      DispatchKey key = runtime_key_for_table_index(i);
      uint64_t bit = DispatchKeySet(to_functionality_key(key)).raw_repr();
      if (is_runtime_per_backend_key(key)) {
        masks[static_cast<int>(to_backend_component(key))] &= ~bit;
      } else {
        for (auto& m : masks) m &= ~bit;
      }
      k = nullptr;  // never called: masked out
    } else if (k && k->kernel.skips_without_grad()) {
      DispatchKey key = runtime_key_for_table_index(i);
      if (is_runtime_per_backend_key(key)) {
        drops[static_cast<int>(to_backend_component(key))] |= DispatchKeySet(to_functionality_key(key)).raw_repr();
      }
    }
    table_[i].store(k ? k : missing_record(), std::memory_order_release);
  }
  for (int b = 0; b <= kNumBackends; ++b) {
    non_fallthrough_[b].store(masks[b], std::memory_order_relaxed);
    drop_without_grad_[b].store(drops[b], std::memory_order_relaxed);
  }
}

std::string OperatorEntry::registered_keys_str() const {
  std::lock_guard<std::mutex> guard(Dispatcher::singleton().mutex_);
  return registered_keys_str_locked();
}

std::string OperatorEntry::registered_keys_str_locked() const {
  std::string out = "[";
  bool first = true;
  for (const auto& [key, list] : kernels_) {
    if (list.empty()) continue;
    out += (first ? "" : ", ") + to_string(key);
    first = false;
  }
  return out + "]";
}

std::string OperatorEntry::dump_computed_table() const {
  std::lock_guard<std::mutex> guard(Dispatcher::singleton().mutex_);
  return dump_computed_table_locked();
}

std::string OperatorEntry::dump_computed_table_locked() const {
  auto fallbacks = Dispatcher::singleton().fallback_table();
  std::ostringstream os;
  for (int i = 1; i < kDispatchTableSize; ++i) {
    DispatchKey k = runtime_key_for_table_index(i);
    if (k == DispatchKey::Undefined) continue;
    const char* source;
    const AnnotatedKernel* kernel = compute_entry(i, fallbacks, &source);
    os << to_string(k) << ": ";
    if (!kernel) {
      os << "missing\n";
    } else if (kernel->kernel.is_fallthrough()) {
      os << "fallthrough registered at " << kernel->debug << " [" << source << "]\n";
    } else {
      os << "registered at " << kernel->debug << " [" << source << "]\n";
    }
  }
  return os.str();
}

std::string OperatorEntry::dump_state() const {
  std::lock_guard<std::mutex> guard(Dispatcher::singleton().mutex_);
  std::ostringstream os;
  os << "name: " << name_ << "\n";
  const SchemaRecord* rec = schema_record();
  os << "schema: " << (rec ? rec->schema.str() : "(none)") << "\n";
  if (rec) os << "debug: " << rec->debug << "\n";
  for (const auto& [key, list] : kernels_) {
    for (const auto& k : list) {
      os << to_string(key) << (k->kernel.is_fallthrough() ? " [fallthrough]" : "") << ": " << k->debug << "\n";
    }
  }
  return os.str();
}

// ---------------------------------------------------------------------------
// OperatorHandle
// ---------------------------------------------------------------------------
namespace {
// Note [Record function]: a boxed call while a profiler records.
SDK_RECORD_NOINLINE void call_boxed_recorded(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  profiler::RecordFunctionGuard guard(op.entry(), ks);
  if (guard.wants_inputs()) guard.set_inputs(*stack);
  op.entry().lookup_masked(ks).call_boxed(op, ks, stack);
}
}  // namespace

void OperatorHandle::call_boxed(Stack* stack) const {
  const SchemaRecord* rec = entry_->schema_record();
  entry_->check_stack(rec, *stack);
  DispatchKeySet ks = entry_->mask_for_call(entry_->compute_keys_boxed(rec, *stack),
                                            [&] { return entry_->any_requires_grad_boxed(rec, *stack); });
  if (profiler::record_function_active()) return call_boxed_recorded(*this, ks, stack);
  entry_->lookup_masked(ks).call_boxed(*this, ks, stack);
}

namespace {
[[noreturn]] void stale_handle(const OperatorEntry& e, const SchemaRecord* bound, const SchemaRecord* now) {
  SDK_THROW(Runtime, "Tried to call ", e.name(), " through a handle created for its schema '",
            bound ? bound->schema.str() : std::string("(none)"), "', but the operator ",
            now ? "was redefined since as '" + now->schema.str() + "'"
                : std::string("is no longer defined (the library that defined it was closed)"),
            ". Look the operator up again (backend_sdk.ops.<namespace>.<name>) after redefining it.");
}
}  // namespace

void OperatorHandle::call_boxed_bound(const SchemaRecord* bound, Stack* stack) const {
  const SchemaRecord* rec = entry_->schema_record();
  if (rec != bound) stale_handle(*entry_, bound, rec);
  entry_->check_stack(rec, *stack);
  DispatchKeySet ks = entry_->mask_for_call(entry_->compute_keys_boxed(rec, *stack),
                                            [&] { return entry_->any_requires_grad_boxed(rec, *stack); });
  if (profiler::record_function_active()) return call_boxed_recorded(*this, ks, stack);
  entry_->lookup_masked(ks).call_boxed(*this, ks, stack);
}

void OperatorHandle::redispatch_boxed_bound(const SchemaRecord* bound, DispatchKeySet ks, Stack* stack) const {
  const SchemaRecord* rec = entry_->schema_record();
  if (rec != bound) stale_handle(*entry_, bound, rec);
  entry_->check_stack(rec, *stack);
  redispatch_boxed(ks, stack);
}

void OperatorHandle::redispatch_boxed(DispatchKeySet ks, Stack* stack) const {
  ks = entry_->mask_fallthroughs(ks);
  entry_->lookup_masked(ks).call_boxed(*this, ks, stack);
}

// ---------------------------------------------------------------------------
// Dispatcher
// ---------------------------------------------------------------------------
Dispatcher::Dispatcher() = default;

Dispatcher& Dispatcher::singleton() {
  static Dispatcher* d = new Dispatcher();  // immortal: see Note [Kernel lifetime]
  return *d;
}

namespace {
// "ns::name" -> "ns::name" (default overload has an empty overload name).
std::string normalise(const std::string& qualified_name) {
  auto [ns, name, overload] = parse_operator_name(qualified_name);
  std::string out = ns.empty() ? name : ns + "::" + name;
  if (!overload.empty() && overload != "default") out += "." + overload;
  return out;
}
}  // namespace

OperatorEntry* Dispatcher::find_or_create(const std::string& qualified_name) {
  auto it = ops_.find(qualified_name);
  if (it != ops_.end()) return it->second;
  auto* entry = new OperatorEntry(qualified_name);  // immortal
  entry->update_table(fallback_table());
  ops_.emplace(qualified_name, entry);
  return entry;
}

std::optional<OperatorHandle> Dispatcher::find_schema(const std::string& qualified_name) {
  std::string key = normalise(qualified_name);
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = ops_.find(key);
  if (it == ops_.end() || !it->second->has_schema()) return std::nullopt;
  return OperatorHandle(it->second);
}

OperatorHandle Dispatcher::find_schema_or_throw(const std::string& qualified_name) {
  if (auto op = find_schema(qualified_name)) return *op;
  std::string key = normalise(qualified_name);
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = ops_.find(key);
  if (it != ops_.end() && !it->second->kernels_.empty()) {
    SDK_THROW(Runtime, "Could not find schema for ", key, ": kernels were registered for it (",
              it->second->registered_keys_str_locked(), ") but it was never defined with def()");
  }
  SDK_THROW(Runtime, "Could not find schema for ", key);
}

std::vector<std::string> Dispatcher::registered_operator_names() {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, entry] : ops_) {
    if (entry->has_schema()) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Dispatcher::overload_names(const std::string& ns_and_name) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto it = overloads_.find(ns_and_name);
  return it == overloads_.end() ? std::vector<std::string>{} : it->second;
}

std::array<const AnnotatedKernel*, kDispatchTableSize> Dispatcher::fallback_table() const {
  std::array<const AnnotatedKernel*, kDispatchTableSize> out;
  for (int i = 0; i < kDispatchTableSize; ++i) out[i] = fallbacks_[i].get();
  return out;
}

void Dispatcher::update_all_tables() {
  auto fallbacks = fallback_table();
  for (auto& [name, entry] : ops_) entry->update_table(fallbacks);
}

void Dispatcher::check_kernel_matches_schema(const OperatorEntry& op, const AnnotatedKernel& k) {
  const SchemaRecord* rec = op.schema_record();
  if (!rec || k.kernel.num_cpp_args() < 0) return;
  const FunctionSchema& s = rec->schema;
  SDK_CHECK_VALUE(static_cast<size_t>(k.kernel.num_cpp_args()) == s.arguments.size(),
                  "The C++ kernel registered for ", op.name(), " at ", k.debug, " takes ", k.kernel.num_cpp_args(),
                  " arguments but the schema '", s.str(), "' has ", s.arguments.size());
  SDK_CHECK_VALUE(static_cast<size_t>(k.kernel.num_cpp_returns()) == s.returns.size(),
                  "The C++ kernel registered for ", op.name(), " at ", k.debug, " returns ",
                  k.kernel.num_cpp_returns(), " values but the schema '", s.str(), "' has ", s.returns.size());
}

void Dispatcher::emit_warnings(std::vector<std::string> warnings) {
  for (const auto& w : warnings) warn(w);
}

RegistrationHandle Dispatcher::register_def(FunctionSchema schema, std::string debug) {
  SDK_CHECK_VALUE(!schema.ns.empty(), "def(): the schema '", schema.str(), "' needs a namespace");
  std::string name = schema.qualified_name();
  auto record = std::make_unique<SchemaRecord>();
  record->schema = std::move(schema);
  record->debug = std::move(debug);
  const FunctionSchema& s = record->schema;
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    if (is_tensor_like(*s.arguments[i].type)) record->tensor_arg_positions.push_back(static_cast<uint16_t>(i));
  }
  const SchemaRecord* raw = record.get();
  std::string overload = s.overload_name, ns_name = s.ns + "::" + s.name;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    OperatorEntry* op = find_or_create(name);
    const SchemaRecord* existing = op->schema_record();
    SDK_CHECK_VALUE(!existing, "Tried to register an operator (", s.str(),
                    ") with the same name and overload name multiple times. Each overload's schema should only "
                    "be registered with a single call to def(). Duplicate registration: ",
                    raw->debug, ". Original registration: ", existing ? existing->debug : std::string());
    // Kept before it is published (a failed def stays kept: a reader may have loaded it).
    schemas_.push_back(std::move(record));  // never freed: Note [Schema lifetime]
    // Kernels registered before the def are checked against it now.
    op->schema_.store(raw, std::memory_order_release);
    for (const auto& [key, list] : op->kernels_) {
      for (const auto& k : list) {
        try {
          check_kernel_matches_schema(*op, *k);
        } catch (...) {
          op->schema_.store(nullptr, std::memory_order_release);
          throw;
        }
      }
    }
    overloads_[ns_name].push_back(overload);
  }
  return RegistrationHandle([this, name, overload, ns_name, raw] {
    std::lock_guard<std::mutex> guard(mutex_);
    OperatorEntry* op = ops_.at(name);
    if (op->schema_record() == raw) op->schema_.store(nullptr, std::memory_order_release);
    auto& overloads = overloads_[ns_name];
    auto it = std::find(overloads.begin(), overloads.end(), overload);
    if (it != overloads.end()) overloads.erase(it);
  });
}

RegistrationHandle Dispatcher::register_impl(const std::string& qualified_name, DispatchKey key,
                                             KernelFunction kernel, std::string debug) {
  std::string name = normalise(qualified_name);
  SDK_CHECK_VALUE(key == DispatchKey::Undefined ? false : true, "impl(): a dispatch key is required");
  auto record = std::make_unique<AnnotatedKernel>();
  record->kernel = std::move(kernel);
  record->debug = std::move(debug);
  record->key = key;
  AnnotatedKernel* raw = record.get();
  std::vector<std::string> warnings;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    OperatorEntry* op = find_or_create(name);
    check_kernel_matches_schema(*op, *raw);
    auto& list = op->kernels_[key];
    if (!list.empty()) {
      warnings.push_back("Overriding a previously registered kernel for the same operator and the same dispatch "
                         "key\n  operator: " + name + "\n    registered at " + op->schema_debug() +
                         "\n  dispatch key: " + to_string(key) + "\n  previous kernel: " + list.front()->debug +
                         "\n       new kernel: " + raw->debug);
    }
    list.push_front(std::move(record));
    op->update_table(fallback_table());
  }
  emit_warnings(std::move(warnings));
  return RegistrationHandle([this, name, key, raw] {
    std::lock_guard<std::mutex> guard(mutex_);
    OperatorEntry* op = ops_.at(name);
    auto& list = op->kernels_[key];
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->get() == raw) {
        graveyard_.push_back(std::move(*it));
        list.erase(it);
        break;
      }
    }
    if (list.empty()) op->kernels_.erase(key);
    op->update_table(fallback_table());
  });
}

RegistrationHandle Dispatcher::register_fallback(DispatchKey key, KernelFunction kernel, std::string debug) {
  SDK_CHECK_VALUE(!is_alias_key(key), "fallback(): cannot register a backend fallback for the alias key ",
                  to_string(key));
  DispatchKeySet ks(key);
  int index = ks.dispatch_table_index();
  auto record = std::make_unique<AnnotatedKernel>();
  record->kernel = std::move(kernel);
  record->debug = std::move(debug);
  record->key = key;
  record->fallback = true;
  AnnotatedKernel* raw = record.get();
  {
    std::lock_guard<std::mutex> guard(mutex_);
    SDK_CHECK_VALUE(!fallbacks_[index], "Tried to register multiple backend fallbacks for the same dispatch key ",
                    to_string(key), "; previous registration ", fallbacks_[index]->debug, ", new registration ",
                    raw->debug);
    fallbacks_[index] = std::move(record);
    update_all_tables();
  }
  return RegistrationHandle([this, index, raw] {
    std::lock_guard<std::mutex> guard(mutex_);
    if (fallbacks_[index].get() == raw) {
      graveyard_.push_back(std::move(fallbacks_[index]));
      update_all_tables();
    }
  });
}

RegistrationHandle Dispatcher::register_library(const std::string& ns, std::string debug) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    auto it = libraries_.find(ns);
    SDK_CHECK_VALUE(it == libraries_.end(), "Only a single SDK_LIBRARY can be used to register the namespace ", ns,
                    "; please put all of your definitions in a single SDK_LIBRARY block. If you were trying to "
                    "specify implementations, consider using SDK_LIBRARY_IMPL (which can be duplicated). If you "
                    "really intended to define operators for a single namespace in a distributed way, you can "
                    "use SDK_LIBRARY_FRAGMENT to explicitly indicate this. Previous registration of SDK_LIBRARY "
                    "was registered at ",
                    it->second, "; latest registration was registered at ", debug);
    libraries_.emplace(ns, std::move(debug));
  }
  return RegistrationHandle([this, ns] {
    std::lock_guard<std::mutex> guard(mutex_);
    libraries_.erase(ns);
  });
}

void Dispatcher::report_missing_kernel(const OperatorHandle& op, DispatchKeySet ks) {
  DispatchKey k = ks.highest_priority_key();
  // A renamed backend's Dense key is named after its device: 'accel'.
  std::string backend = to_string(k);
  if (to_functionality_key(k) == DispatchKey::Dense) {
    DeviceType t = device_type_for(to_backend_component(k));
    if (is_privateuse(t) && is_backend_renamed(t)) backend = device_type_name(t);
  }
  std::string keys, table;
  {
    std::lock_guard<std::mutex> guard(singleton().mutex_);
    keys = op.entry().registered_keys_str_locked();
    table = op.entry().dump_computed_table_locked();
  }
  SDK_THROW(NotImplemented, "Could not run '", op.name(), "' with arguments from the '", backend,
            "' backend. This could be because the operator doesn't exist for this backend, or its kernel was not "
            "registered (a backend registers kernels with SDK_LIBRARY_IMPL or library.impl). '",
            op.name(), "' is only available for these backends: ", keys, ".\n\n", table);
}

}  // namespace sdk
