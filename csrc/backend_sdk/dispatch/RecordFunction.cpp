// Note [Record function] (RecordFunction.h): per-thread event buffers, the
// session generation and the device correlation hooks.
#include <backend_sdk/dispatch/RecordFunction.h>
#include <backend_sdk/dispatch/DisableRecordFunction.h>
#include <backend_sdk/dispatch/RecordFunctionExtras.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/detail/CpuAllocationObserver.h>
#include <backend_sdk/core/ScalarType.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/IValue.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceTrace.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sdk::profiler {

std::atomic<uint32_t> g_record_function_flags{0};

namespace {

struct ThreadBuffer {
  std::mutex mutex;  // the owning thread vs collect()
  uint64_t generation = 0;
  int64_t thread = 0;
  std::vector<Event> events;
  std::vector<MemoryEvent> memory;
  std::vector<size_t> open;  // indices of the open events, innermost last
  std::vector<const OperatorEntry*> open_ops;  // parallel to `open`: the operator of each (null: a scope)
  std::vector<EventExtras> extras;  // Note [Record function extras]: at most one per event id, in id order
};

// The extras entry of event `id` in b (appended when missing; events open in id order on a thread).
EventExtras& extras_of(ThreadBuffer& b, uint64_t id) {
  for (auto it = b.extras.rbegin(); it != b.extras.rend(); ++it) {
    if (it->id == id) return *it;
    if (it->id < id) break;
  }
  EventExtras e;
  e.id = id;
  auto pos = std::upper_bound(b.extras.begin(), b.extras.end(), id,
                              [](uint64_t v, const EventExtras& x) { return v < x.id; });
  return *b.extras.insert(pos, std::move(e));
}

std::atomic<StackHook> g_stack_hook{nullptr};

std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_next_id{1};

// Guards the list of buffers and the correlation hooks (written by start() before the flags are set).
std::mutex& registry_mutex() {
  static auto* m = new std::mutex();  // immortal: threads may record while the process exits
  return *m;
}
std::vector<std::shared_ptr<ThreadBuffer>>& registry() {
  static auto* v = new std::vector<std::shared_ptr<ThreadBuffer>>();
  return *v;
}

// Atomics: a guard of the previous session may still read them (its destructor restores the devices'
// correlation) while start() writes the next session's.
constexpr int kMaxHooks = 8;
using CorrelationFn = int32_t (*)(void*, uint64_t);
std::atomic<CorrelationFn> g_hook_fns[kMaxHooks];
std::atomic<void*> g_hook_contexts[kMaxHooks];
std::atomic<int> g_num_hooks{0};

int64_t os_thread_id() {
#if defined(__linux__)
  return static_cast<int64_t>(::syscall(SYS_gettid));
#else
  static std::atomic<int64_t> next{1};
  thread_local int64_t id = next++;
  return id;
#endif
}

// The calling thread's buffer, cleared if it belongs to an older session (Note [Record function]).
// Returns it locked.
ThreadBuffer& local_buffer(std::unique_lock<std::mutex>& lock) {
  thread_local std::shared_ptr<ThreadBuffer> buffer;
  if (SDK_UNLIKELY(!buffer)) {
    buffer = std::make_shared<ThreadBuffer>();
    buffer->thread = os_thread_id();
    std::lock_guard<std::mutex> g(registry_mutex());
    registry().push_back(buffer);
  }
  lock = std::unique_lock<std::mutex>(buffer->mutex);
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (buffer->generation != gen) {
    buffer->generation = gen;
    buffer->events.clear();
    buffer->memory.clear();
    buffer->open.clear();
    buffer->open_ops.clear();
    buffer->extras.clear();
  }
  return *buffer;
}

thread_local uint64_t t_correlation = 0;  // the id passed to the devices last on this thread
thread_local bool t_disabled = false;     // DisableRecordFunctionGuard

void set_device_correlation(uint64_t id) {
  int n = g_num_hooks.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    CorrelationFn fn = g_hook_fns[i].load(std::memory_order_acquire);
    if (fn != nullptr) fn(g_hook_contexts[i].load(std::memory_order_acquire), id);  // best effort: status ignored
  }
  t_correlation = id;
}

std::string dtype_name(ScalarType t) { return scalar_type_name(t); }

bool is_autograd_fallback_key(DispatchKey k) { return to_string(k).rfind("Autograd", 0) == 0; }

void describe(const IValue& v, std::vector<int64_t>& shape, std::string& dtype) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    if (!t.defined()) return;
    IntArrayRef s = t.sizes();
    shape.assign(s.begin(), s.end());
    dtype = dtype_name(t.dtype());
  } else if (v.is_tensor_list()) {
    const auto& list = v.to_tensor_list();
    if (!list.empty() && list[0].defined()) dtype = dtype_name(list[0].dtype());
    dtype = dtype.empty() ? "TensorList" : "TensorList(" + dtype + ")";
  } else if (v.is_int()) {
    dtype = "Scalar";
  } else if (v.is_double()) {
    dtype = "Scalar";
  }
}

// Note [Record function extras]: an int, float, bool or int-list argument's value, "" otherwise.
std::string concrete_value(const IValue& v) {
  if (v.is_bool()) return v.to_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.to_int());
  if (v.is_double()) {
    std::ostringstream os;
    os << v.to_double();
    return os.str();
  }
  if (v.is_int_list()) {
    std::string out = "[";
    const auto& l = v.to_int_list();
    for (size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + std::to_string(l[i]);
    return out + "]";
  }
  return "";
}

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

DisableRecordFunctionGuard::DisableRecordFunctionGuard() : previous_(t_disabled) { t_disabled = true; }
DisableRecordFunctionGuard::~DisableRecordFunctionGuard() { t_disabled = previous_; }

RecordFunctionGuard::RecordFunctionGuard(const OperatorEntry& op, DispatchKeySet ks) {
  flags_ = g_record_function_flags.load(std::memory_order_acquire);
  if ((flags_ & kRecordOps) == 0 || t_disabled) return;
  const SchemaRecord* rec = op.schema_record();
  std::string name = op.name(), overload;
  if (rec) {
    const FunctionSchema& s = rec->schema;
    name = s.ns.empty() ? s.name : s.ns + "::" + s.name;
    overload = s.overload_name;
  }
  open(std::move(name), std::move(overload), 0, &op, ks);
}

RecordFunctionGuard::RecordFunctionGuard(const std::string& name) {
  flags_ = g_record_function_flags.load(std::memory_order_acquire);
  if ((flags_ & kRecordOps) == 0 || t_disabled) return;
  open(name, std::string(), kEventUserScope, nullptr, DispatchKeySet());
}

void RecordFunctionGuard::open(std::string name, std::string overload, uint32_t event_flags, const OperatorEntry* op,
                               DispatchKeySet ks) {
  Event e;
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  e.name = std::move(name);
  e.overload_name = std::move(overload);
  e.id = id;
  e.flags = event_flags;
  if (op != nullptr && !ks.empty()) {
    const AnnotatedKernel* k = op->lookup_annotated(ks);
    e.dispatch_key = to_string(ks.highest_priority_key());
    if (k != nullptr) {
      // The autograd fallback is the framework's own (c10's autograd fallback too), not a backend
      // serving an operator it lacks: not marked.
      if (k->fallback && !is_autograd_fallback_key(k->key)) {
        e.flags |= kEventFallback;
        e.fallback_key = to_string(k->key);
      }
      if (!k->kernel.has_unboxed()) e.flags |= kEventBoxedKernel;
    }
  }
  std::vector<std::string> stack;
  if (flags_ & kRecordStack) {  // Note [Record function extras]: outside the buffer's lock
    if (StackHook hook = g_stack_hook.load(std::memory_order_acquire)) stack = hook();
  }
  {
    std::unique_lock<std::mutex> lock;
    ThreadBuffer& b = local_buffer(lock);
    // An operator's kernel that calls the same operator again (with keys excluded, e.g. a custom op's
    // autograd forward calling below Autograd) is a redispatch in c10's terms: one event, not two.
    if (op != nullptr && !b.open_ops.empty() && b.open_ops.back() == op) return;
    e.thread = b.thread;
    if (!b.open.empty()) {
      const Event& parent = b.events[b.open.back()];
      e.parent_id = parent.id;
      e.depth = parent.depth + 1;
    }
    generation_ = b.generation;
    index_ = b.events.size();
    b.open.push_back(index_);
    b.open_ops.push_back(op);
    e.start_ns = now_ns();
    b.events.push_back(std::move(e));
    if (!stack.empty()) extras_of(b, id).stack = std::move(stack);
  }
  recording_ = true;
  if (flags_ & kRecordDevice) {
    restore_correlation_ = t_correlation;
    set_device_correlation(id);
  }
}

void RecordFunctionGuard::set_inputs(const std::vector<IValue>& args) {
  if (!recording_) return;
  std::vector<std::vector<int64_t>> shapes(args.size());
  std::vector<std::string> dtypes(args.size());
  std::vector<std::string> concrete(args.size());
  bool any_concrete = false;
  for (size_t i = 0; i < args.size(); ++i) {
    describe(args[i], shapes[i], dtypes[i]);
    concrete[i] = concrete_value(args[i]);
    any_concrete = any_concrete || !concrete[i].empty();
  }
  std::unique_lock<std::mutex> lock;
  ThreadBuffer& b = local_buffer(lock);
  if (b.generation != generation_ || index_ >= b.events.size()) return;  // a new session started meanwhile
  b.events[index_].shapes = std::move(shapes);
  b.events[index_].dtypes = std::move(dtypes);
  if (any_concrete) extras_of(b, b.events[index_].id).concrete_inputs = std::move(concrete);
}

RecordFunctionGuard::~RecordFunctionGuard() {
  if (!recording_) return;
  int64_t end = now_ns();
  {
    std::unique_lock<std::mutex> lock;
    ThreadBuffer& b = local_buffer(lock);
    if (b.generation == generation_ && index_ < b.events.size()) {
      b.events[index_].end_ns = end;
      // Guards close in LIFO order on a thread; pop this one (and anything a throw left above it).
      while (!b.open.empty() && b.open.back() >= index_) {
        b.open.pop_back();
        b.open_ops.pop_back();
      }
    }
  }
  if (flags_ & kRecordDevice) set_device_correlation(restore_correlation_);
}

void mark_current(uint32_t event_flags, const char* key) {
  if ((g_record_function_flags.load(std::memory_order_relaxed) & kRecordOps) == 0 || t_disabled) return;
  std::unique_lock<std::mutex> lock;
  ThreadBuffer& b = local_buffer(lock);
  if (b.open.empty()) return;
  Event& e = b.events[b.open.back()];
  e.flags |= event_flags;
  if (key != nullptr && (event_flags & kEventFallback)) e.fallback_key = key;
}

void set_current_sequence_nr(int64_t sequence_nr, bool operators_only) {
  if ((g_record_function_flags.load(std::memory_order_relaxed) & kRecordOps) == 0 || t_disabled) return;
  std::unique_lock<std::mutex> lock;
  ThreadBuffer& b = local_buffer(lock);
  if (b.open.empty()) return;
  const Event& e = b.events[b.open.back()];
  if (operators_only && (e.flags & kEventUserScope)) return;
  extras_of(b, e.id).sequence_nr = sequence_nr;
}

void set_stack_hook(StackHook hook) { g_stack_hook.store(hook, std::memory_order_release); }

std::vector<EventExtras> collect_event_extras() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> g(registry_mutex());
    buffers = registry();
  }
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  std::vector<EventExtras> out;
  for (auto& b : buffers) {
    std::lock_guard<std::mutex> lock(b->mutex);
    if (b->generation != gen) continue;
    out.insert(out.end(), b->extras.begin(), b->extras.end());
  }
  return out;
}

void record_memory(DeviceType type, int device, uint64_t addr, int64_t bytes, int64_t total_allocated) {
  if ((g_record_function_flags.load(std::memory_order_relaxed) & kRecordMemory) == 0 || t_disabled) return;
  MemoryEvent m;
  m.time_ns = now_ns();
  m.device_type = type;
  m.device = device;
  m.addr = addr;
  m.bytes = bytes;
  m.total_allocated = total_allocated;
  std::unique_lock<std::mutex> lock;
  ThreadBuffer& b = local_buffer(lock);
  m.thread = b.thread;
  if (!b.open.empty()) m.event_id = b.events[b.open.back()].id;
  b.memory.push_back(m);
}

namespace {
// Note [CPU allocation observer]: the CPU allocator's events, as the caching allocators'.
void record_cpu_memory(uint64_t addr, int64_t bytes, int64_t total_allocated) {
  record_memory(DeviceType::CPU, 0, addr, bytes, total_allocated);
}
}  // namespace

void start(uint32_t flags, const std::vector<DeviceType>& device_types) {
  SDK_CHECK(g_record_function_flags.load() == 0,
            "Profiler is already enabled: stop the active profiler before starting another (one profiler records "
            "at a time in a process, Note [Record function])");
  SDK_CHECK_VALUE(device_types.size() <= static_cast<size_t>(kMaxHooks), "profiler: at most ", kMaxHooks,
                  " device types, got ", device_types.size());
  std::lock_guard<std::mutex> g(registry_mutex());
  int n = 0;
  if (flags & kRecordDevice) {
    for (DeviceType t : device_types) {
      runtime::DeviceCorrelationHook h = runtime::device_trace_correlation_hook(t);
      if (h.fn == nullptr) continue;
      g_hook_contexts[n].store(h.context, std::memory_order_release);
      g_hook_fns[n++].store(h.fn, std::memory_order_release);
    }
  }
  g_num_hooks.store(n, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  for (auto& b : registry()) {
    std::lock_guard<std::mutex> lock(b->mutex);
    b->generation = g_generation.load(std::memory_order_relaxed);
    b->events.clear();
    b->events.shrink_to_fit();
    b->memory.clear();
    b->open.clear();
    b->open_ops.clear();
    b->extras.clear();
  }
  runtime::set_allocation_observer((flags & kRecordMemory) ? &record_memory : nullptr);
  detail::set_cpu_allocation_observer((flags & kRecordMemory) ? &record_cpu_memory : nullptr);
  g_record_function_flags.store(flags | kRecordOps, std::memory_order_release);
}

void stop() {
  g_record_function_flags.store(0, std::memory_order_release);
  runtime::set_allocation_observer(nullptr);
  detail::set_cpu_allocation_observer(nullptr);
  // Guards still open keep their flags_ (and restore the devices' correlation when they close).
}

std::vector<Event> collect_events() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> g(registry_mutex());
    buffers = registry();
  }
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  int64_t now = now_ns();
  std::vector<Event> out;
  for (auto& b : buffers) {
    std::lock_guard<std::mutex> lock(b->mutex);
    if (b->generation != gen) continue;
    for (const Event& e : b->events) {
      out.push_back(e);
      if (out.back().end_ns < 0) out.back().end_ns = now;  // still open: ends at collection
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.id < b.id;
  });
  return out;
}

std::vector<MemoryEvent> collect_memory_events() {
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  {
    std::lock_guard<std::mutex> g(registry_mutex());
    buffers = registry();
  }
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  std::vector<MemoryEvent> out;
  for (auto& b : buffers) {
    std::lock_guard<std::mutex> lock(b->mutex);
    if (b->generation != gen) continue;
    out.insert(out.end(), b->memory.begin(), b->memory.end());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_ns < b.time_ns; });
  return out;
}

size_t registered_thread_buffers() {
  std::lock_guard<std::mutex> g(registry_mutex());
  return registry().size();
}

}  // namespace sdk::profiler
