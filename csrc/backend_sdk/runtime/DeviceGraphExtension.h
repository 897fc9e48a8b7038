/* The "sdk.graph" device extension: capture of a stream's work into a graph
 * and its replay (Note [Device API extensions] in runtime/DeviceApi.h); the
 * SDK's face is runtime/Graph.h, Python's backend_sdk.accelerator.Graph.
 *
 * Note [Device graph extension]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * capture_begin(ctx, stream) puts a stream in capture mode: the work the SDK
 * or a kernel library enqueues on it from then on (kernels, copies, memsets)
 * is recorded, not run, and the calls that enqueue it succeed as usual. Work
 * the device cannot replay (a host function, an event record or wait, a
 * kernel launched through an API whose function frees its arguments) makes
 * the capture invalid: the enqueueing call still succeeds, the work is
 * dropped (its release function runs), and capture_end returns
 * SDK_ERROR_NOT_SUPPORTED with get_last_error_message naming it.
 * capture_end(ctx, stream, &graph) ends capture mode and returns the graph
 * (owned by the SDK until destroy). instantiate(ctx, graph) prepares it for
 * launches (may be a no-op). launch(ctx, graph, stream) enqueues one replay on
 * any stream of the graph's device: the recorded work runs again, in order,
 * on the same memory, as ONE operation of that stream (so a replay costs one
 * submission however many operations it holds). destroy(ctx, graph) may be
 * called while replays are queued: the device frees the graph after the last
 * one ran, and then calls the release functions of its recorded kernels.
 * is_capturing(ctx, stream, &flag) reports capture mode. Every function is
 * thread-safe; a stream of another device, an unknown handle or a second
 * capture_begin on a capturing stream return SDK_ERROR_INVALID_HANDLE /
 * SDK_ERROR_INVALID_VALUE.
 *
 * Ownership: the graph handle is the SDK's from capture_end until destroy;
 * what it points to is the device's. Recorded kernel arguments are the
 * device's copies (as at launch) and live until the graph is freed.
 *
 * Version 1: capture_begin, capture_end, instantiate, launch, destroy,
 * is_capturing (all required).
 */
#ifndef SDK_RUNTIME_DEVICE_GRAPH_EXTENSION_H_
#define SDK_RUNTIME_DEVICE_GRAPH_EXTENSION_H_

#include <backend_sdk/runtime/DeviceApi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_GRAPH_EXTENSION_NAME "sdk.graph"
#define SDK_GRAPH_EXTENSION_VERSION 1u

typedef struct sdk_graph_st* sdk_graph_t;

typedef struct sdk_graph_extension {
  sdk_device_extension_base base; /* name SDK_GRAPH_EXTENSION_NAME */
  sdk_status (*capture_begin)(void* context, sdk_stream_t stream);
  sdk_status (*capture_end)(void* context, sdk_stream_t stream, sdk_graph_t* graph);
  sdk_status (*instantiate)(void* context, sdk_graph_t graph);
  sdk_status (*launch)(void* context, sdk_graph_t graph, sdk_stream_t stream);
  sdk_status (*destroy)(void* context, sdk_graph_t graph);
  sdk_status (*is_capturing)(void* context, sdk_stream_t stream, int32_t* capturing);
} sdk_graph_extension;

#define SDK_GRAPH_EXTENSION_SIZE_1 (offsetof(sdk_graph_extension, is_capturing) + sizeof(void*))

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_GRAPH_EXTENSION_H_ */
