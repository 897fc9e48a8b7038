// Streams the SDK did not create (torch.cuda.ExternalStream).
//
// Note [External streams]
// ~~~~~~~~~~~~~~~~~~~~~~~
// external_stream(device, handle) gives a native stream handle that vendor
// code (or another library) created a Stream value: it takes one of the
// device's external slots, after the pool slots of Note [Stream pools]
// (kMaxExternalStreams per device; the same handle always gets the same
// slot), so it works everywhere a Stream does (current stream, events,
// allocation, guards). The SDK never destroys an external handle: its
// creator must keep it alive while work may use it. The handle is checked
// with the device's stream_query first (an unknown handle is the device's
// error, typed).
#pragma once

#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::runtime {

constexpr int kMaxExternalStreams = 64;

SDK_API Stream external_stream(Device device, sdk_stream_t handle);

}  // namespace sdk::runtime
