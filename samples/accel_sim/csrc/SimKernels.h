// How the accel backend runs kernels on the simulated device.
//
// Note [Simulated kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The simulator's compute units are the host's cores: a kernel is a host
// function the simulator runs on the stream's worker thread, in order with
// the stream's copies and other kernels, reaching device memory through its
// host alias (device_sim_translate; device_sim::launch and device_sim::host_alias,
// device_sim.hpp, for kernels written by hand). This backend's kernels are the SDK's own
// CPU kernels run that way:
//  1. at launch, on the calling thread, the operator runs on meta tensors of
//     the same geometry: this checks the arguments (errors are raised here,
//     synchronously, as from any backend) and gives the results' sizes,
//     strides and dtypes; fresh results are allocated on the device and out=
//     arguments resized. An operator whose result shapes depend on the data
//     (its Meta kernel raises NotImplementedError: boolean-mask indexing)
//     runs through the SDK's CPU fallback instead, synchronously;
//  2. a job holding host aliases of every device tensor is launched on the
//     current stream and returns at once;
//  3. on the worker, the CPU kernel runs over the aliases and fresh results
//     are copied into their device buffers. An error there (an integer
//     division by zero) is reported to the simulator as a kernel fault, which
//     surfaces at the next synchronising call.
// The job holds no reference to device memory: like a CUDA kernel's pointer
// arguments, its buffers stay valid because the caching allocator reuses a
// freed block only in its stream's order (record_stream covers other streams).
#pragma once

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/tensor/Tensor.h>

namespace accel {

// A meta tensor with `t`'s geometry over a (resizable) meta storage as big as
// t's: running an operator's Meta kernel on it checks the arguments.
sdk::Tensor meta_like(const sdk::Tensor& t);

// The boxed kernel of Note [Simulated kernels], for any aten operator with a
// Meta kernel whose results are fresh tensors or its mutated arguments.
void simulated_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys,
                      sdk::Stack* stack);

}  // namespace accel
