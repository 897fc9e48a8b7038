// Graph capture and replay on a backend whose device implements "sdk.graph"
// (Note [Device graph extension], runtime/DeviceGraphExtension.h): the SDK's
// face, behind backend_sdk.accelerator.Graph.
//
// Note [Graph capture]
// ~~~~~~~~~~~~~~~~~~~~
// capture_begin(stream) refuses the default stream (as PyTorch does) and a
// stream that is already capturing, puts the stream in capture mode on the
// device and starts the graph's memory pool in the caching allocator (Note
// [Graph memory pools]); capture_end ends both and keeps the device's graph;
// replay() launches it on the current stream of its device: one submission.
// reset() destroys the device graph (replays still queued finish first, the
// device frees it after them) and releases the pool once the device is idle
// (a replay in flight may still write the pool's blocks). Synchronising calls
// during capture are refused by the Python face (Note [Sync debug mode]'s
// hook names the call). A Graph is not thread-safe; distinct Graphs are.
#pragma once

#include <cstdint>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/Stream.h>

struct sdk_graph_st;

namespace sdk::runtime {

// Whether the backend's device implements "sdk.graph" (false if no device).
SDK_API bool has_device_graphs(DeviceType type);
// True while `stream` is being captured (false on a device without "sdk.graph").
SDK_API bool is_stream_capturing(const Stream& stream);

class SDK_API Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // `pool`: share the memory pool of another graph (0: a fresh pool).
  // capture_error_mode: 0 "global"/"default", 1 "thread_local", 2 "relaxed" (Note [Synchronising during capture]).
  void capture_begin(const Stream& stream, int64_t pool = 0, int capture_error_mode = 0);
  void capture_end();
  void instantiate();
  void replay();
  void reset();
  bool captured() const { return graph_ != nullptr; }
  bool capturing() const { return capturing_; }
  int64_t pool() const { return pool_; }

 private:
  Stream stream_{Device(DeviceType::CPU)};
  bool capturing_ = false;
  bool instantiated_ = false;
  sdk_graph_st* graph_ = nullptr;
  int64_t pool_ = 0;
  bool owns_pool_ = false;
  int mode_ = 0;
};

// A fresh pool id (graph_pool_handle()).
SDK_API int64_t new_graph_pool_id();

}  // namespace sdk::runtime
