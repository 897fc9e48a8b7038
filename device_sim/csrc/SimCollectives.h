// "simccl": the simulator's collective library, the "sdk.collectives"
// extension (Note [Device collectives extension]); Note [Simulated
// collectives] in SimCollectives.cpp.
#pragma once

#include <string>

#include <backend_sdk/runtime/DeviceCollectivesExtension.h>

namespace device_sim {

// Linked into the extension chain by SimApi.cpp.
extern const sdk_collectives_extension kCollectivesExtension;

// SimApi.cpp: the checks every entry point makes, shared with the collectives.
bool context_is_valid(const void* ctx);
bool simulator_started();                // starts it on first use; false (and the reason recorded) if it cannot
int stream_device(sdk_stream_t stream);  // the device of a live stream, or -1
int device_count();
bool device_is_lost(int device);
sdk_status record_call_error(sdk_status status, std::string message);  // the calling thread's last error

}  // namespace device_sim
