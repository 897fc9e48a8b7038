// The profiler's observer of CPU allocations (profile_memory).
//
// Note [CPU allocation observer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// While an observer is set, the CPU allocator (core/Allocator.cpp) reports each allocation, and the
// free of each buffer it allocated while observed, on the calling thread: bytes > 0 (the requested
// size) for an allocation, < 0 for a free, with the live bytes of the observed buffers after the
// event (PyTorch's "Total Allocated" of CPU memory events). Such a buffer's DataPtr wraps the
// allocator's own in a small heap record that carries its size; buffers allocated while no
// observer was set are not wrapped and their frees are not reported. With no observer (the
// default) an allocation costs one relaxed load more. The observer must not allocate through the
// CPU allocator. dispatch/RecordFunction.cpp installs it for sessions with kRecordMemory.
#pragma once

#include <cstdint>

#include <backend_sdk/core/Macros.h>

namespace sdk::detail {

using CpuAllocationObserver = void (*)(uint64_t addr, int64_t bytes, int64_t total_allocated);
SDK_API void set_cpu_allocation_observer(CpuAllocationObserver fn);

}  // namespace sdk::detail
