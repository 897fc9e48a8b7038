/* device_sim: the simulated device's own C API (besides the device runtime
 * contract, runtime/DeviceApi.h, which it implements and exports as
 * sdk_device_api_entry).
 *
 * Vendors writing simulated kernels, and the device_sim Python package
 * (through ctypes), use these. Device pointers handed out by the simulator
 * point into memory the host cannot touch (Note [Simulated device memory] in
 * csrc/SimMemory.h): a kernel reaches it through device_sim_translate(),
 * like a real kernel reaching device memory on the device.
 */
#ifndef DEVICE_SIM_H_
#define DEVICE_SIM_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/DeviceApi.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DEVICE_SIM_API __declspec(dllexport)
#else
#define DEVICE_SIM_API __attribute__((visibility("default")))
#endif

/* The contract (also reachable as sdk_device_api_entry). */
DEVICE_SIM_API const sdk_device_api* sdk_device_api_entry(void);

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
 * bytes), like a CUDA kernel launch: returns at once. */
DEVICE_SIM_API sdk_status device_sim_launch_kernel(sdk_stream_t stream, device_sim_kernel_fn fn, const void* args,
                                                   size_t args_size);

/* The host-accessible alias of a device address (for kernels and copy
 * engines), or NULL if `device_ptr` is not inside a device's memory. */
DEVICE_SIM_API void* device_sim_translate(const void* device_ptr);
/* The device owning a device address, or -1. */
DEVICE_SIM_API int32_t device_sim_device_of(const void* device_ptr);

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
