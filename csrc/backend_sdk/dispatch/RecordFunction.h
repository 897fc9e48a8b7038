// The dispatcher's record-function hook: what backend_sdk.profiler records
// about each operator call (c10's RecordFunction, reduced to what the
// profiler uses).
//
// Note [Record function]
// ~~~~~~~~~~~~~~~~~~~~~~
// One process-wide atomic word, g_record_function_flags, says whether a
// profiler session is recording and what (kRecord* bits). Every top-level
// operator call (OperatorHandle::Typed::call, call_boxed, call_boxed_bound;
// redispatches are not calls, as in c10) loads it once, relaxed, and when it
// is 0 goes on exactly as before: the hook costs one load and one predicted
// branch on the hot path (benchmarked in docs/profiler.md). When it is set,
// the call runs through an out-of-line path that opens a RecordFunctionGuard
// around the kernel.
//
// A guard appends one Event to its thread's buffer at construction (start
// time, operator, parent = the thread's innermost open event, depth) and sets
// its end time at destruction, also when the kernel throws. Buffers are per
// thread and registered once in a global list, each with its own mutex, so
// recording threads never contend with each other; collect() takes each
// buffer's mutex in turn. A session (start() .. stop()) has a generation
// number: a buffer that belongs to an older generation is cleared the next
// time its thread records, so events never leak from one session into the
// next, and start() clears the buffers it can see. Threads that exit leave
// their buffer in the list (a shared_ptr) so their events are still collected.
//
// Every event gets a process-wide id (the correlation id). With kRecordDevice
// set, the id of the thread's innermost open operator is passed to each
// profiled device's "sdk.trace" v2 set_correlation_id (Note [Device trace
// extension]) when the operator opens and the parent's id when it closes, so
// the device tags the kernels and copies the operator launches with it: the
// profiler draws flow arrows from the operator to them.
//
// With kRecordMemory set, the caching allocators report each allocation and
// free (record_memory) from the allocating thread, attributed to its innermost
// open event; Python kernels and fallbacks mark the event they run in
// (mark_current) so the profiler can say which kind of kernel ran.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/DispatchKeySet.h>
#include <backend_sdk/core/Macros.h>

// The recorded path of a call stays out of line so the hot path keeps its size.
#if defined(_MSC_VER)
#define SDK_RECORD_NOINLINE __declspec(noinline)
#else
#define SDK_RECORD_NOINLINE __attribute__((noinline))
#endif

namespace sdk {

class IValue;
class OperatorEntry;

namespace profiler {

enum : uint32_t {
  kRecordOps = 1u,     // operator calls and record_function scopes
  kRecordShapes = 2u,  // input shapes and dtypes (record_shapes=True)
  kRecordMemory = 4u,  // allocator events (profile_memory=True)
  kRecordDevice = 8u,  // correlation ids to the devices (a device activity)
};

// Note [Record function]: 0 when no profiler is recording.
SDK_API extern std::atomic<uint32_t> g_record_function_flags;
inline bool record_function_active() {
  return SDK_UNLIKELY(g_record_function_flags.load(std::memory_order_relaxed) != 0);
}

// Event flags (Event::flags).
enum : uint32_t {
  kEventUserScope = 1u,       // a record_function scope, not an operator
  kEventPythonKernel = 2u,    // a Python kernel ran for it
  kEventFallback = 4u,        // a backend fallback ran for it (fallback_key says which)
  kEventBoxedKernel = 8u,     // the kernel that ran first was boxed-only (no unboxed C++ entry)
};

struct Event {
  std::string name;           // "aten::mm", "mylib::op" or the record_function name
  std::string overload_name;  // "Tensor" of aten::add.Tensor; "" for the default overload and scopes
  uint64_t id = 0;            // process-wide, > 0: the correlation id
  uint64_t parent_id = 0;     // 0: top level on its thread
  int64_t thread = 0;         // OS thread id
  int32_t depth = 0;
  uint32_t flags = 0;         // kEvent*
  int64_t start_ns = 0;       // steady clock
  int64_t end_ns = -1;        // -1 while open
  std::string dispatch_key;   // the key of the kernel the call landed on ("CPU", "AutogradPrivateUse1", ...)
  std::string fallback_key;   // kEventFallback: the fallback's key
  std::vector<std::vector<int64_t>> shapes;  // per argument; [] for non-tensors (kRecordShapes)
  std::vector<std::string> dtypes;           // per argument; "" for non-tensors
};

// An allocator event (kRecordMemory), attributed to the innermost open event of the allocating thread.
struct MemoryEvent {
  int64_t time_ns = 0;
  DeviceType device_type = DeviceType::CPU;
  int device = 0;
  int64_t bytes = 0;  // > 0 allocated, < 0 freed
  uint64_t addr = 0;
  uint64_t event_id = 0;  // 0: outside every recorded event
  int64_t thread = 0;
  int64_t total_allocated = 0;  // bytes allocated on that device after the event (the allocator's count)
};

class SDK_API RecordFunctionGuard {
 public:
  // An operator call that landed on `ks` (the masked key set of the call).
  RecordFunctionGuard(const OperatorEntry& op, DispatchKeySet ks);
  // A user scope (record_function).
  explicit RecordFunctionGuard(const std::string& name);
  ~RecordFunctionGuard();
  RecordFunctionGuard(const RecordFunctionGuard&) = delete;
  RecordFunctionGuard& operator=(const RecordFunctionGuard&) = delete;
  bool wants_inputs() const { return recording_ && (flags_ & kRecordShapes) != 0; }
  // Records the shapes and dtypes of the call's arguments (a boxed copy of them).
  void set_inputs(const std::vector<IValue>& args);

 private:
  void open(std::string name, std::string overload, uint32_t event_flags, const OperatorEntry* op,
            DispatchKeySet ks);
  bool recording_ = false;
  uint32_t flags_ = 0;
  size_t index_ = 0;       // in the thread's buffer
  uint64_t generation_ = 0;
  uint64_t restore_correlation_ = 0;
};

// Session control (backend_sdk.profiler). start() clears every buffer and begins a new generation;
// `device_types` are the backends whose devices get correlation ids (kRecordDevice).
SDK_API void start(uint32_t flags, const std::vector<DeviceType>& device_types);
SDK_API void stop();
// The events and memory events of the current (or last) session, ordered by start time.
SDK_API std::vector<Event> collect_events();
SDK_API std::vector<MemoryEvent> collect_memory_events();
// Steady-clock nanoseconds (the clock of Event and of the device traces).
SDK_API int64_t now_ns();
// Marks the thread's innermost open event (kEventPythonKernel, kEventFallback with `key`).
SDK_API void mark_current(uint32_t event_flags, const char* key = nullptr);
// Allocator hook (kRecordMemory): bytes > 0 on allocation, < 0 on free.
SDK_API void record_memory(DeviceType type, int device, uint64_t addr, int64_t bytes, int64_t total_allocated);
inline bool memory_profiling_active() {
  return SDK_UNLIKELY((g_record_function_flags.load(std::memory_order_relaxed) & kRecordMemory) != 0);
}
// Number of threads that have recorded since the process started (tests: no-profiler state).
SDK_API size_t registered_thread_buffers();

}  // namespace profiler
}  // namespace sdk
