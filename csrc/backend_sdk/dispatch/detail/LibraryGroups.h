// Groups of the SDK_LIBRARY* blocks one shared library ran when it was loaded, so that a loader
// (backend_sdk.utils.cpp_extension) can undo all of them later without unloading the library.
// Internal: not installed; used by the Python bindings.
#pragma once

#include <cstdint>

#include <backend_sdk/core/Macros.h>

namespace sdk {
class Library;
}  // namespace sdk

namespace sdk::detail {

// Note [Extension library groups]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `cpp_extension.load` of a name whose sources changed loads a new library (`NAME_v1`, as
// PyTorch's JIT does) whose SDK_LIBRARY blocks would collide with those of the version already
// loaded ("Only a single SDK_LIBRARY can be used to register the namespace ..."). The new version
// replaces the old one instead: before loading it, the loader undoes every registration the old
// library made. Unloading the old library (dlclose) cannot be relied on for that: the dynamic
// loader keeps a library mapped while anything holds it (a Python extension module is never
// unloaded) or when it has STB_GNU_UNIQUE symbols (g++ emits them for inline statics and template
// static members), and then its static destructors, which would undo its registrations, never run.
//
// So the loader brackets the dlopen with begin/end: every SDK_LIBRARY* block whose static
// constructor runs on this thread in between (static initialisation runs inside dlopen, on the
// calling thread) records its Library in the group, even a block that failed half-way.
// reset_static_library_group() calls Library::reset() on each (its registrations are deregistered,
// Note [Kernel lifetime] keeps a kernel that another thread is still running alive) and forgets
// the group. The Library objects live in the loaded library's static storage: a group may only be
// reset while that library is still loaded, which the loader guarantees by resetting a group
// before it ever dlcloses the library, and otherwise never closing it. A reset Library's own
// destructor (at exit, or a later dlclose) then has nothing left to undo.
//
// Groups nest (a library whose static initialisation loads another one): a block belongs to the
// innermost open group of its thread.
SDK_API void begin_static_library_group();
// Closes the innermost open group of this thread and returns its id (never 0). Throws when no
// group is open.
SDK_API uint64_t end_static_library_group();
// A Library made outside SDK_LIBRARY* during a load (the stable shim's sdk_stable_library_create,
// which STABLE_SDK_LIBRARY* blocks call) joins the innermost open group of this thread, if any.
void add_to_open_static_library_group(Library* lib);
// Removes `lib` from every group before it is destroyed (sdk_stable_library_free).
void forget_static_library(Library* lib);
// Undoes the registrations of every library of group `id` and forgets it; returns how many
// libraries it held (0 for an unknown or already reset id).
SDK_API int64_t reset_static_library_group(uint64_t id);

}  // namespace sdk::detail
