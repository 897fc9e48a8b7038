// What a profiler event carries besides RecordFunction.h's Event: autograd sequence numbers and
// Python stacks.
//
// Note [Record function extras]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Kept out of RecordFunction.h (which Dispatcher.h includes, so every file) and stored per thread
// beside the events of Note [Record function] (the same buffer, mutex and session generation),
// keyed by event id:
//   * sequence_nr: PyTorch's link between a forward operator and its backward node. A Node takes
//     its sequence number when it is created, inside the operator autograd is recording, and
//     annotates that operator's event (the thread's innermost open operator event; the last node
//     created there wins, so the operator's own node beats the AccumulateGrad nodes its leaf
//     inputs got first). The engine opens an "autograd::engine::evaluate_function: <node name>"
//     scope around each node it runs, annotated with the node's number, so both events carry the
//     same "Sequence number" (PyTorch's trace arg); the forward thread of a backward event
//     (fwd_thread) is the thread of the forward event with its number.
//   * stack: with kRecordStack (with_stack=True), the hook the Python bindings install returns the
//     Python stack of the calling thread when an event opens ("file(line): function", innermost
//     first; empty without the GIL or outside Python), PyTorch's FunctionEvent.stack.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <backend_sdk/core/Macros.h>

namespace sdk::profiler {

// A start() flag beside RecordFunction.h's kRecord* bits: record each event's Python stack.
inline constexpr uint32_t kRecordStack = 16u;

struct EventExtras {
  uint64_t id = 0;            // the Event's id
  int64_t sequence_nr = -1;   // -1: none
  std::vector<std::string> stack;
  // With kRecordShapes: per argument, the value of an int, float, bool or int list ("2", "0.5",
  // "[1, 1]"), "" for other arguments; what with_flops needs of conv2d (stride, padding, groups).
  std::vector<std::string> concrete_inputs;
};

// Annotates the thread's innermost open event with an autograd sequence number; with
// operators_only, only an operator event (not a record_function scope) is annotated.
SDK_API void set_current_sequence_nr(int64_t sequence_nr, bool operators_only);

// The Python stack hook (kRecordStack); nullptr removes it. Called with no profiler lock held.
using StackHook = std::vector<std::string> (*)();
SDK_API void set_stack_hook(StackHook hook);

// The extras of the current (or last) session's events that have any.
SDK_API std::vector<EventExtras> collect_event_extras();

}  // namespace sdk::profiler
