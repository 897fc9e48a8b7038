/* device_sim: the simulated device's own C API (besides the device runtime
 * contract, runtime/DeviceApi.h, version 2, which it implements and exports
 * as sdk_device_entry, with the "sdk.trace" extension).
 *
 * Vendors writing simulated kernels, and the device_sim Python package
 * (through ctypes), use these; C++ kernels use the helpers over them in
 * device_sim.hpp (launching a callable, host aliases, the simulator's
 * contract table for delegation). Device pointers handed out by the simulator
 * point into memory the host cannot touch (Note [Simulated device memory] in
 * csrc/SimMemory.h): a kernel reaches it through device_sim_translate(),
 * like a real kernel reaching device memory on the device.
 */
#ifndef DEVICE_SIM_H_
#define DEVICE_SIM_H_

#include <stddef.h>
#include <stdint.h>

#include <backend_sdk/runtime/DeviceApi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DEVICE_SIM_API __declspec(dllexport)
#else
#define DEVICE_SIM_API __attribute__((visibility("default")))
#endif

/* The contract: fills instance->api and instance->context (Note [Device
 * context]; the simulator's context identifies it, Note [device_sim context]
 * in csrc/SimApi.cpp). */
DEVICE_SIM_API sdk_status sdk_device_entry(sdk_device_instance* instance);
/* The same as sdk_device_entry, under a name of its own: for a backend whose
 * device library delegates to the simulator (the scaffold's Device.cpp) and
 * exports its own sdk_device_entry, which that name binds to inside it
 * (device_sim::contract() in device_sim.hpp calls this). */
DEVICE_SIM_API sdk_status device_sim_get_contract(sdk_device_instance* instance);
/* The detailed message of the calling thread's last failing call (the
 * contract's get_last_error_message, without the table). */
DEVICE_SIM_API const char* device_sim_last_error_message(void);

/* Sets the number of devices (1..64) and the memory capacity of each (bytes,
 * at least 1 MiB, rounded up to 64 KiB). Only before first use (the first
 * call of the contract, which happens when the simulator is attached);
 * afterwards SDK_ERROR_INVALID_VALUE unless the values are unchanged. A value
 * <= 0 keeps the current setting. Defaults: 2 devices of 1 GiB, overridden by
 * the environment variables DEVICE_SIM_NUM_DEVICES and DEVICE_SIM_MEMORY_BYTES. */
DEVICE_SIM_API sdk_status device_sim_configure(int32_t num_devices, int64_t memory_bytes);
/* 1 once the simulator has started (configuration is then fixed). */
DEVICE_SIM_API int32_t device_sim_is_initialized(void);
/* The current configuration. */
DEVICE_SIM_API int32_t device_sim_num_devices(void);
DEVICE_SIM_API int64_t device_sim_memory_bytes(void);

/* A kernel: runs on the stream's worker thread, in order with the stream's
 * other work. `args` points to the simulator's copy of the launch arguments
 * (valid during the call). */
typedef void (*device_sim_kernel_fn)(void* args);

/* Launches fn on `stream` with a copy of args[0..args_size) (at most 4096
 * bytes), like a CUDA kernel launch: returns at once. The kernel's name in
 * fault messages and traces is its exported symbol name if dladdr() finds
 * one, else "kernel@0x..."; use device_sim_launch_kernel_named to set it. */
DEVICE_SIM_API sdk_status device_sim_launch_kernel(sdk_stream_t stream, device_sim_kernel_fn fn, const void* args,
                                                   size_t args_size);
/* The same with an explicit name ("add_f32"; copied, at most 200 bytes kept;
 * NULL: as device_sim_launch_kernel). */
DEVICE_SIM_API sdk_status device_sim_launch_kernel_named(sdk_stream_t stream, const char* name,
                                                         device_sim_kernel_fn fn, const void* args, size_t args_size);

/* The same, with `release`: called instead of fn, with the same argument
 * copy and on the same worker thread, when the kernel does not run (an
 * injected kernel fault marked it, or its device was lost and the queue is
 * drained; Note [Simulated faults]). A kernel whose arguments own host
 * resources (a pointer to a job object it deletes when done) frees them
 * there; without it they leak with every kernel that does not run. Exactly
 * one of fn and release is called per successful launch. release may be
 * NULL (as device_sim_launch_kernel_named). */
DEVICE_SIM_API sdk_status device_sim_launch_kernel_ex(sdk_stream_t stream, const char* name, device_sim_kernel_fn fn,
                                                      device_sim_kernel_fn release, const void* args,
                                                      size_t args_size);

/* A kernel that a graph capture may record (Note [Simulated graphs]): fn
 * may run any number of times with the same argument copy (once per replay
 * of a graph that recorded it) and must leave its arguments intact; release
 * runs exactly once, after fn's last run (right after the run for a launch
 * outside capture, when the graph is freed for a recorded one), or instead
 * of fn when the kernel never runs. A kernel launched with
 * device_sim_launch_kernel_ex on a capturing stream invalidates the capture
 * (its fn frees what its arguments point to). */
DEVICE_SIM_API sdk_status device_sim_launch_kernel_reusable(sdk_stream_t stream, const char* name,
                                                            device_sim_kernel_fn fn, device_sim_kernel_fn release,
                                                            const void* args, size_t args_size);

/* The host-accessible alias of a device address (for kernels and copy
 * engines), or NULL if `device_ptr` is not inside a device's memory. */
DEVICE_SIM_API void* device_sim_translate(const void* device_ptr);
/* The device owning a device address, or -1. */
DEVICE_SIM_API int32_t device_sim_device_of(const void* device_ptr);

/* ---- Faults ----
 *
 * Asynchronous faults behave as on real hardware (Note [Simulated faults] in
 * csrc/SimDevice.h): a fault is kept by its device and returned by the next
 * synchronising call on that device (stream_synchronize, event_synchronize,
 * device_synchronize, a synchronous memcpy) as SDK_ERROR_KERNEL_FAULT with
 * the message "kernel fault in '<kernel>' on stream 0x.. of device D: ..."
 * (get_last_error_message); the SDK raises it as backend_sdk.AcceleratorError.
 * Reading it clears it: the device is usable again. Work queued after the
 * faulting kernel still runs.
 *
 * Reporting a fault from inside a kernel: a kernel that detects an error it
 * cannot recover from (an integer division by zero, an index out of range)
 * calls device_sim_kernel_fail(message) and returns; nothing is thrown and
 * nothing aborts:
 *
 *     static void div_i64(void* p) {
 *       DivArgs* a = (DivArgs*)p;
 *       int64_t* y = (int64_t*)device_sim_translate(a->y);
 *       const int64_t* x = (const int64_t*)device_sim_translate(a->x);
 *       for (int64_t i = 0; i < a->n; ++i) {
 *         if (a->d == 0) { device_sim_kernel_fail("integer division by zero"); return; }
 *         y[i] = x[i] / a->d;
 *       }
 *     }
 *
 * Only the first fault per device is kept until it is read (later ones are
 * counted in its message). device_sim_kernel_fail returns SDK_SUCCESS, or
 * SDK_ERROR_INVALID_VALUE when the calling thread is not running a kernel. */
DEVICE_SIM_API sdk_status device_sim_kernel_fail(const char* message);

#define DEVICE_SIM_FAULT_ALLOC_FAILURE 1 /* the next `count` device mallocs return SDK_ERROR_OUT_OF_MEMORY */
#define DEVICE_SIM_FAULT_KERNEL_FAULT 2  /* the next `count` kernels launched on `stream` (NULL: any stream
                                            of the device) fault when they run, with `message` (may be NULL) */
#define DEVICE_SIM_FAULT_DEVICE_LOST 3   /* the device is lost: every call on it returns
                                            SDK_ERROR_DEVICE_LOST until device_sim_reset_device */
/* Injects a fault on `device` (Python: device_sim.inject). A new injection of
 * a kind replaces the pending one of that kind. Queued work on a lost device
 * is dropped (event records still complete, so other devices' waits end);
 * device free/host free and stream/event destroy keep working on it. */
DEVICE_SIM_API sdk_status device_sim_inject(int32_t kind, int32_t device, sdk_stream_t stream, int64_t count,
                                            const char* message);
/* Waits for the device's queued work to drain, then clears loss, the pending
 * fault and pending injections. Allocations and streams stay valid. */
DEVICE_SIM_API sdk_status device_sim_reset_device(int32_t device);
/* 1 if the device is lost. */
DEVICE_SIM_API int32_t device_sim_is_device_lost(int32_t device);

/* ---- Chrome trace (Note [Simulated trace] in csrc/Trace.cpp) ----
 * Off by default. start clears the buffer and keeps at most `capacity`
 * records (the oldest are overwritten). Every kernel, copy, memset, host
 * function and event record is recorded with start/end time, device (pid)
 * and stream (tid). export writes JSON for chrome://tracing and Perfetto. */
DEVICE_SIM_API sdk_status device_sim_start_trace(int64_t capacity);
DEVICE_SIM_API sdk_status device_sim_stop_trace(void);
DEVICE_SIM_API int64_t device_sim_trace_event_count(void);
DEVICE_SIM_API int64_t device_sim_trace_dropped(void);
DEVICE_SIM_API sdk_status device_sim_export_chrome_trace(const char* path);

/* ---- Timing model (Note [Simulated timing] in csrc/SimDevice.cpp) ----
 * A kernel then takes at least launch_latency_us, a copy or memset of n bytes
 * at least n / copy_bandwidth_gbps nanoseconds (GB/s = bytes per ns). 0
 * disables a part; a negative value keeps it. Settable at any time; initial
 * values from DEVICE_SIM_LAUNCH_LATENCY_US and DEVICE_SIM_COPY_BANDWIDTH_GBPS. */
DEVICE_SIM_API sdk_status device_sim_set_timing(double launch_latency_us, double copy_bandwidth_gbps);
DEVICE_SIM_API void device_sim_get_timing(double* launch_latency_us, double* copy_bandwidth_gbps);

/* Built-in kernels, for tests, benchmarks and samples. */
/* Sleeps `microseconds` on the stream (a long-running kernel). */
DEVICE_SIM_API sdk_status device_sim_kernel_sleep(sdk_stream_t stream, int64_t microseconds);
/* y[i] = a * x[i] + b for i < n (float32; x and y are device pointers, may be equal). */
DEVICE_SIM_API sdk_status device_sim_kernel_axpb_f32(sdk_stream_t stream, float* y, const float* x, int64_t n, float a,
                                                     float b);
/* An empty kernel (launch overhead). */
DEVICE_SIM_API sdk_status device_sim_kernel_empty(sdk_stream_t stream);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* DEVICE_SIM_H_ */
