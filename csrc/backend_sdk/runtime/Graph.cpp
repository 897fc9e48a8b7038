#include <backend_sdk/runtime/Graph.h>

#include <atomic>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceGraphExtension.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/detail/BlockingWait.h>

namespace sdk::runtime {
namespace {

const sdk_graph_extension& graph_extension(DeviceType type, const char* what) {
  (void)device_api(type);  // RuntimeError if no device
  const auto* ext = find_device_extension(type, SDK_GRAPH_EXTENSION_NAME);
  SDK_CHECK_NOT_IMPLEMENTED(ext != nullptr, what, ": the device of backend '", device_type_name(type), "' (",
                            device_source(type), ") does not implement graph capture (the '",
                            SDK_GRAPH_EXTENSION_NAME, "' extension, Note [Device graph extension])");
  return *reinterpret_cast<const sdk_graph_extension*>(ext);  // size checked at attach
}

std::atomic<int64_t> g_next_pool{1};

}  // namespace

int64_t new_graph_pool_id() { return g_next_pool.fetch_add(1, std::memory_order_relaxed); }

bool has_device_graphs(DeviceType type) {
  return has_device(type) && find_device_extension(type, SDK_GRAPH_EXTENSION_NAME) != nullptr;
}

bool is_stream_capturing(const Stream& stream) {
  const DeviceType type = stream.device().type;
  if (!is_privateuse(type) || !has_device_graphs(type)) return false;
  const auto& g = graph_extension(type, "is_current_stream_capturing");
  int32_t flag = 0;
  check_status(type, g.is_capturing(device_api(type).context(), stream.native(), &flag), "is_capturing");
  return flag != 0;
}

Graph::~Graph() {
  try {
    reset();
  } catch (...) {  // a lost device: the graph's memory is the device's problem now
  }
}

// Note [Graph capture].
void Graph::capture_begin(const Stream& stream, int64_t pool, int capture_error_mode) {
  const DeviceType type = stream.device().type;
  SDK_CHECK(!capturing_, "capture_begin: this graph is already capturing");
  SDK_CHECK(graph_ == nullptr, "capture_begin: this graph already holds a capture; call reset() first");
  const auto& g = graph_extension(type, "capture_begin");
  SDK_CHECK_VALUE(capture_error_mode >= 0 && capture_error_mode <= 2, "capture_begin: invalid capture_error_mode ",
                  capture_error_mode);
  SDK_CHECK(!stream.is_default(), device_type_name(type),
            " graphs must be captured on a non-default stream. (However, after capture, it's ok to replay them on "
            "the default stream.)");
  pool_ = pool != 0 ? pool : new_graph_pool_id();
  owns_pool_ = pool == 0;
  caching_allocator(type)->begin_graph_capture(stream, pool_);
  sdk_status st = g.capture_begin(device_api(type).context(), stream.native());
  if (st != SDK_SUCCESS) {
    caching_allocator(type)->end_graph_capture(stream);
    check_status(type, st, "capture_begin");
  }
  stream_ = stream;
  capturing_ = true;
  mode_ = capture_error_mode;
  note_capture_begin(mode_);
}

void Graph::capture_end() {
  SDK_CHECK(capturing_, "capture_end: this graph is not capturing (call capture_begin first)");
  const DeviceType type = stream_.device().type;
  const auto& g = graph_extension(type, "capture_end");
  capturing_ = false;
  note_capture_end(mode_);
  caching_allocator(type)->end_graph_capture(stream_);
  sdk_graph_t out = nullptr;
  check_status(type, g.capture_end(device_api(type).context(), stream_.native(), &out), "capture_end");
  graph_ = out;
}

void Graph::instantiate() {
  SDK_CHECK(graph_ != nullptr, "instantiate: this graph holds no capture (capture_begin/capture_end first)");
  if (instantiated_) return;
  const DeviceType type = stream_.device().type;
  check_status(type, graph_extension(type, "instantiate").instantiate(device_api(type).context(), graph_),
               "instantiate");
  instantiated_ = true;
}

void Graph::replay() {
  SDK_CHECK(graph_ != nullptr, "replay: this graph holds no capture: call capture_begin and capture_end (or use "
            "the graph context manager) before replay()");
  instantiate();
  const DeviceType type = stream_.device().type;
  Stream on = current_stream(stream_.device());
  check_status(type, graph_extension(type, "replay").launch(device_api(type).context(), graph_, on.native()),
               "replay");
}

void Graph::reset() {
  if (capturing_) {
    const DeviceType type = stream_.device().type;
    capturing_ = false;
    note_capture_end(mode_);
    caching_allocator(type)->end_graph_capture(stream_);
    sdk_graph_t dropped = nullptr;
    const auto& g = graph_extension(type, "reset");
    if (g.capture_end(device_api(type).context(), stream_.native(), &dropped) == SDK_SUCCESS && dropped) {
      g.destroy(device_api(type).context(), dropped);
    }
  }
  if (graph_ != nullptr) {
    const DeviceType type = stream_.device().type;
    sdk_graph_t g = graph_;
    graph_ = nullptr;
    instantiated_ = false;
    check_status(type, graph_extension(type, "reset").destroy(device_api(type).context(), g), "reset");
  }
  if (pool_ != 0 && owns_pool_) {
    // Queued replays may still write the pool's blocks: wait for the device before handing them out again.
    device_synchronize(stream_.device());
    caching_allocator(stream_.device().type)->release_graph_pool(stream_.device().index, pool_);
  }
  pool_ = 0;
  owns_pool_ = false;
}

}  // namespace sdk::runtime
