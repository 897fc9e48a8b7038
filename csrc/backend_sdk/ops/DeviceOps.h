// Kernels every device backend gets from the device runtime contract, and the
// CPU fallback. A vendor registers them under its key in two lines:
//
//   SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
//     sdk::ops::device::register_contract_kernels(m, &my_local_copy);  // empty, copy_, resize_, item
//   }
//   SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
//
// (or one by one: m.impl("empty.memory_format", &sdk::ops::device::empty), ..., and a copy_ kernel
// calling sdk::ops::device::copy_(self, src, non_blocking, &my_local_copy)).
//
// view and as_strided need nothing: they are CompositeExplicitAutograd.
#pragma once

#include <optional>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

namespace device {

// Note [Contract-backed kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// These kernels need only the device runtime contract (runtime/DeviceApi.h)
// of the tensor's backend, never device code:
//  - allocation goes through the backend's caching allocator on the target
//    device (a DeviceGuard makes "accel:1" allocate on device 1 whatever the
//    current device is) and the current stream of that device;
//  - transfers are memcpy_async on the current stream of the device involved,
//    so they are ordered after the kernels already queued there. A copy to the
//    host synchronizes that stream, except a non_blocking copy whose bytes land
//    directly in pinned memory (the caller then synchronizes, as with CUDA). A
//    non_blocking copy from the host goes through the pinned host allocator
//    (runtime/HostAllocator.h): pageable memory is staged in a pinned block at
//    once, so the caller may change or free its tensor right away;
//  - the only device computation a copy needs (a strided or converting copy
//    within one device) is the vendor's LocalCopy.
// A copy between two devices of one backend orders the two current streams
// with events in both directions (the destination's pending work before the
// copy, the copy before the destination's later work) and runs the peer copy
// on the source device's stream.

// Copies src into dst on their common device, on the current stream: dst and
// src have the same sizes (src may be an expanded view) and any strides and
// dtypes. Called with a DeviceGuard set to that device.
using LocalCopy = void (*)(const Tensor& dst, const Tensor& src);

// aten::empty.memory_format and aten::empty_strided for any device backend.
SDK_API Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                     std::optional<Device> device, std::optional<bool> pin_memory,
                     std::optional<int64_t> memory_format);
SDK_API Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                             std::optional<int64_t> layout, std::optional<Device> device,
                             std::optional<bool> pin_memory);
// aten::resize_: a bigger storage comes from the caching allocator; the old
// bytes move with a device-to-device copy on the current stream.
SDK_API Tensor resize_(const Tensor& self, IntArrayRef size, std::optional<int64_t> memory_format);
// aten::_local_scalar_dense (item()): a synchronous device-to-host copy.
SDK_API Scalar local_scalar_dense(const Tensor& self);
// aten::copy_ between this backend and the CPU or between two of its devices,
// with broadcasting and dtype conversion (Note [Contract-backed kernels]).
SDK_API Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking, LocalCopy local_copy);

// Registers the kernels above on `m`, the SDK_LIBRARY_IMPL(aten, <backend>, m) block of a device
// backend: empty.memory_format, empty_strided, resize_, _local_scalar_dense, and copy_ with
// `local_copy` for copies within one device (Note [Contract kernel registration], DeviceOps.cpp).
// The C++ form of backend_sdk.utils.python_device.register_contract_kernels. ValueError for a
// library of no device backend (CPU, Meta, an alias key) or a null local_copy.
SDK_API void register_contract_kernels(Library& m, LocalCopy local_copy);

}  // namespace device

// Note [CPU fallback]
// ~~~~~~~~~~~~~~~~~~~
// A boxed backend fallback that runs any operator on the CPU: tensor
// arguments on a device are copied to the host, the operator runs there
// (every CPU kernel and composite serves), mutated arguments (Tensor(a!) in
// the schema, in-place and out=) are written back to their device tensors,
// and fresh results are copied to the device of the first device argument.
// Each operator warns once ("... will fall back to run on the CPU ..."), like
// the CPU fallbacks real backends ship. Operators whose results alias an
// input without writing it (views) cannot be served this way: the fallback
// refuses them with NotImplementedError, since a copy would not be a view.
SDK_API void cpu_fallback(const OperatorHandle& op, DispatchKeySet keys, Stack* stack);
// cpu_fallback as a kernel for Library::fallback / Library::impl.
SDK_API CppFunction cpu_fallback_function();

}  // namespace sdk::ops
