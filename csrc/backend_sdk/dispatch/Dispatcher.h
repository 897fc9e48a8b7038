// OperatorEntry, OperatorHandle and the Dispatcher.
//
// Note [Dispatch]
// ~~~~~~~~~~~~~~~
// A call computes its key set once (tensor arguments | TLS included -
// TLS excluded; see Note [TLS key sets]), masks out the operator's
// fallthrough keys for the call's highest backend, and loads the kernel from
// the operator's precomputed table at dispatch_table_index() (see
// Note [Dispatch table index]). Redispatch skips the key computation: the
// kernel passes a key set (normally its own keys minus the keys up to and
// including its own) and the same lookup runs on it.
//
// Note [Kernel lifetime]
// ~~~~~~~~~~~~~~~~~~~~~~
// Calls never lock. Table slots are atomic pointers to AnnotatedKernel
// records, which are immutable once published. Registration and
// deregistration happen under the Dispatcher mutex and only swap pointers; a
// deregistered record is moved to a graveyard instead of being freed, because
// another thread may be inside a call to it at that moment. A record is a few
// dozen bytes plus its functor, so the graveyard only grows by what
// registration churn adds (a process that registers and closes a Python
// Library in a loop keeps every closed kernel alive). Graveyard records are
// never destroyed, which also makes unloading a vendor library safe: its
// functors' code is never called again, not even their destructors. Operator
// entries are never freed either: handles to them stay valid for the process's
// life. Schemas follow the same rule: see Note [Schema lifetime].
//
// Note [Schema lifetime]
// ~~~~~~~~~~~~~~~~~~~~~~
// An operator's schema lives in an immutable SchemaRecord that def() publishes
// through an atomic pointer and its deregistration unpublishes; records are
// never freed (the Dispatcher keeps them, like graveyard kernels). So a call
// that read `op.schema()` may keep using the reference after another thread
// closed the library that defined the operator or redefined it: a Python
// kernel converting its returns, the CPU fallback copying results back.
// Each def() publishes a new record, so a record's address also identifies
// one definition. A handle bound to a definition (a Python OpOverload, which
// binds arguments to the schema it was created for) passes its record to
// call_boxed_bound(), which refuses to run it against another definition: the
// stack was built for the old schema, and reading it with the new one would
// read past its end. Boxed calls also check that the stack holds the
// schema's arguments before reading them.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <backend_sdk/dispatch/FunctionSchema.h>
#include <backend_sdk/dispatch/KernelFunction.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include <backend_sdk/dispatch/RecordFunction.h>

namespace sdk {

// One definition of an operator (Note [Schema lifetime]).
struct SchemaRecord {
  FunctionSchema schema;
  std::string debug;                           // where def() was called
  std::vector<uint16_t> tensor_arg_positions;  // positions of Tensor / Tensor? / Tensor[] arguments
};

struct AnnotatedKernel {
  KernelFunction kernel;
  std::string debug;  // where it was registered: "file.cpp:12" or "Python: my_kernel"
  DispatchKey key = DispatchKey::Undefined;  // the key it was registered under (may be an alias)
  bool fallback = false;  // a backend fallback (register_fallback): the profiler marks calls it runs
};

class Dispatcher;

class SDK_API OperatorEntry {
 public:
  explicit OperatorEntry(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  bool has_schema() const { return schema_record() != nullptr; }
  // The current definition, or null. Valid for the process's life.
  const SchemaRecord* schema_record() const { return schema_.load(std::memory_order_acquire); }
  const FunctionSchema& schema() const;
  const std::string& schema_debug() const;

  // Hot path: see Note [Dispatch]. The kernel receives the masked key set
  // (its fallthrough keys removed), as in c10.
  DispatchKeySet mask_fallthroughs(DispatchKeySet ks) const {
    uint64_t mask = non_fallthrough_[static_cast<int>(ks.highest_backend())].load(std::memory_order_relaxed);
    return ks & DispatchKeySet(DispatchKeySet::RawTag{}, mask);
  }
  // mask_fallthroughs for a call (not a redispatch): also drops the Autograd
  // key when its slot is the autograd fallback and no tensor argument requires
  // grad (`any_requires_grad()`), so such calls skip the fallback entirely.
  // See Note [Autograd fallback fast path] (ops/detail/Autograd.h).
  template <typename AnyRequiresGrad>
  DispatchKeySet mask_for_call(DispatchKeySet ks, AnyRequiresGrad&& any_requires_grad) const {
    int b = static_cast<int>(ks.highest_backend());
    uint64_t mask = non_fallthrough_[b].load(std::memory_order_relaxed);
    uint64_t drop = drop_without_grad_[b].load(std::memory_order_relaxed) & ks.raw_repr() & mask;
    if (drop != 0 && !any_requires_grad()) mask &= ~drop;
    return ks & DispatchKeySet(DispatchKeySet::RawTag{}, mask);
  }
  const KernelFunction& lookup_masked(DispatchKeySet masked) const {
    return table_[masked.dispatch_table_index()].load(std::memory_order_acquire)->kernel;
  }
  // The record behind lookup_masked (the profiler: Note [Record function]).
  const AnnotatedKernel* lookup_annotated(DispatchKeySet masked) const {
    return table_[masked.dispatch_table_index()].load(std::memory_order_acquire);
  }
  // The key set of a boxed call: tensor arguments on the stack | TLS.
  DispatchKeySet compute_keys_boxed(const Stack& stack) const { return compute_keys_boxed(schema_record(), stack); }
  DispatchKeySet compute_keys_boxed(const SchemaRecord* rec, const Stack& stack) const;
  // True if a tensor argument on the stack requires grad (Note [Autograd fallback fast path]).
  bool any_requires_grad_boxed(const Stack& stack) const { return any_requires_grad_boxed(schema_record(), stack); }
  bool any_requires_grad_boxed(const SchemaRecord* rec, const Stack& stack) const;
  // Throws unless the stack holds at least the record's arguments (Note [Schema lifetime]).
  void check_stack(const SchemaRecord* rec, const Stack& stack) const;

  // These take the Dispatcher lock.
  // Human-readable computed table, one line per runtime key (c10's dumpComputedTable).
  std::string dump_computed_table() const;
  // Registered kernels by key (c10's dumpState).
  std::string dump_state() const;
  // Keys that have a direct or alias registration: "[CPU, Meta, CompositeImplicitAutograd]".
  std::string registered_keys_str() const;
  bool has_kernel_for(DispatchKey k) const;

 private:
  friend class Dispatcher;
  std::string dump_computed_table_locked() const;
  std::string registered_keys_str_locked() const;
  void update_table(const std::array<const AnnotatedKernel*, kDispatchTableSize>& fallbacks);
  const AnnotatedKernel* compute_entry(int index, const std::array<const AnnotatedKernel*, kDispatchTableSize>&,
                                       const char** source) const;
  const AnnotatedKernel* find_kernel(DispatchKey k) const;

  std::string name_;
  std::atomic<const SchemaRecord*> schema_{nullptr};  // owned by Dispatcher::schemas_
  std::array<std::atomic<const AnnotatedKernel*>, kDispatchTableSize> table_{};
  std::array<std::atomic<uint64_t>, kNumBackends + 1> non_fallthrough_{};
  // Per backend: the Autograd bit when that backend's Autograd slot is the autograd fallback.
  std::array<std::atomic<uint64_t>, kNumBackends + 1> drop_without_grad_{};
  // Guarded by the Dispatcher mutex. Newest registration first.
  std::map<DispatchKey, std::list<std::unique_ptr<AnnotatedKernel>>> kernels_;
};

class SDK_API OperatorHandle {
 public:
  explicit OperatorHandle(OperatorEntry* e) : entry_(e) {}
  const std::string& name() const { return entry_->name(); }
  const FunctionSchema& schema() const { return entry_->schema(); }
  OperatorEntry& entry() const { return *entry_; }
  bool operator==(const OperatorHandle& o) const { return entry_ == o.entry_; }

  template <typename Sig>
  class Typed;
  template <typename Sig>
  Typed<Sig> typed() const {
    return Typed<Sig>(entry_);
  }

  // Computes the key set from the stack and calls the kernel.
  void call_boxed(Stack* stack) const;
  // call_boxed for a stack built for the definition `bound`: raises a
  // RuntimeError naming the operator if it was redefined or undefined since
  // (Note [Schema lifetime]).
  void call_boxed_bound(const SchemaRecord* bound, Stack* stack) const;
  void redispatch_boxed_bound(const SchemaRecord* bound, DispatchKeySet ks, Stack* stack) const;
  void redispatch_boxed(DispatchKeySet ks, Stack* stack) const;

 protected:
  OperatorEntry* entry_;
};

template <typename Ret, typename... Args>
class OperatorHandle::Typed<Ret(Args...)> : public OperatorHandle {
 public:
  explicit Typed(OperatorEntry* e) : OperatorHandle(e) {}
  Ret call(Args... args) const {
    LocalDispatchKeySet tls = tls_local_dispatch_key_set();
    DispatchKeySet ks = entry_->mask_for_call((boxing::keys_of(args...) | tls.included) - tls.excluded,
                                              [&] { return boxing::any_requires_grad(args...); });
    if (profiler::record_function_active()) return call_recorded(ks, std::forward<Args>(args)...);
    return entry_->lookup_masked(ks).template call<Ret, Args...>(*this, ks, std::forward<Args>(args)...);
  }
  Ret redispatch(DispatchKeySet ks, Args... args) const {
    ks = entry_->mask_fallthroughs(ks);
    return entry_->lookup_masked(ks).template call<Ret, Args...>(*this, ks, std::forward<Args>(args)...);
  }

 private:
  // Note [Record function]: the call while a profiler records, out of the hot path.
  SDK_RECORD_NOINLINE Ret call_recorded(DispatchKeySet ks, Args... args) const {
    profiler::RecordFunctionGuard guard(*entry_, ks);
    if (guard.wants_inputs()) guard.set_inputs(Stack{boxing::to_ivalue(args)...});
    return entry_->lookup_masked(ks).template call<Ret, Args...>(*this, ks, std::forward<Args>(args)...);
  }
};

namespace detail {
template <typename Ret, typename... Args>
Ret redispatch_below_autograd(const OperatorHandle& op, DispatchKeySet keys, Args... args) {
  constexpr uint64_t autograd_and_above =
      ~((uint64_t{1} << (kNumBackends + static_cast<int>(DispatchKey::AutogradFunctionality) - 1)) - 1) &
      ~kBackendBitsMask;
  DispatchKeySet below = keys - DispatchKeySet(DispatchKeySet::RawTag{}, autograd_and_above);
  return op.typed<Ret(Args...)>().redispatch(below, std::forward<Args>(args)...);
}
}  // namespace detail

// Removes what it registered when destroyed (move-only).
class SDK_API RegistrationHandle {
 public:
  RegistrationHandle() = default;
  explicit RegistrationHandle(std::function<void()> on_destroy) : on_destroy_(std::move(on_destroy)) {}
  RegistrationHandle(RegistrationHandle&& o) noexcept : on_destroy_(std::move(o.on_destroy_)) { o.on_destroy_ = nullptr; }
  RegistrationHandle& operator=(RegistrationHandle&& o) noexcept {
    if (this != &o) {
      reset();
      on_destroy_ = std::move(o.on_destroy_);
      o.on_destroy_ = nullptr;
    }
    return *this;
  }
  ~RegistrationHandle() { reset(); }
  void reset() {
    if (on_destroy_) {
      auto f = std::move(on_destroy_);
      on_destroy_ = nullptr;
      f();
    }
  }

 private:
  std::function<void()> on_destroy_;
};

class SDK_API Dispatcher {
 public:
  friend class OperatorEntry;
  static Dispatcher& singleton();

  // Operators with a schema ("ns::name.overload" or "ns::name" for the default overload).
  std::optional<OperatorHandle> find_schema(const std::string& qualified_name);
  OperatorHandle find_schema_or_throw(const std::string& qualified_name);
  // Every operator with a schema, sorted by name.
  std::vector<std::string> registered_operator_names();
  // Overload names of `ns::name` that have schemas, in definition order.
  std::vector<std::string> overload_names(const std::string& ns_and_name);

  RegistrationHandle register_def(FunctionSchema schema, std::string debug);
  // key == nullopt means CompositeImplicitAutograd (c10's catch-all).
  RegistrationHandle register_impl(const std::string& qualified_name, DispatchKey key, KernelFunction kernel,
                                   std::string debug);
  RegistrationHandle register_fallback(DispatchKey key, KernelFunction kernel, std::string debug);
  // A namespace may be claimed by one DEF library (SDK_LIBRARY) only.
  RegistrationHandle register_library(const std::string& ns, std::string debug);

  // Called with the missing key when a table slot has no kernel.
  [[noreturn]] static void report_missing_kernel(const OperatorHandle& op, DispatchKeySet ks);

 private:
  Dispatcher();
  OperatorEntry* find_or_create(const std::string& qualified_name);  // mutex held
  void update_all_tables();                                            // mutex held
  std::array<const AnnotatedKernel*, kDispatchTableSize> fallback_table() const;
  static void check_kernel_matches_schema(const OperatorEntry& op, const AnnotatedKernel& k);
  void emit_warnings(std::vector<std::string> warnings);

  std::mutex mutex_;
  std::unordered_map<std::string, OperatorEntry*> ops_;
  std::unordered_map<std::string, std::vector<std::string>> overloads_;  // "ns::name" -> overload names
  std::array<std::unique_ptr<AnnotatedKernel>, kDispatchTableSize> fallbacks_;
  std::unordered_map<std::string, std::string> libraries_;
  std::vector<std::unique_ptr<AnnotatedKernel>> graveyard_;  // see Note [Kernel lifetime]
  std::vector<std::unique_ptr<SchemaRecord>> schemas_;        // every definition: Note [Schema lifetime]
};

// Warnings from C++ (e.g. a kernel overriding another). The default handler
// prints to stderr; the Python bindings route them to `warnings.warn`.
using WarningHandler = void (*)(const std::string& message);
SDK_API void set_warning_handler(WarningHandler h);
SDK_API void warn(const std::string& message);

}  // namespace sdk
