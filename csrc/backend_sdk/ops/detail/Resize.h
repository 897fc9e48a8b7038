// Resizing a tensor in place: new sizes (and strides) over a storage that
// grows when it is too small. Used by resize_ and by out= arguments.
#pragma once

#include <optional>

#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

// Note [Resizing storage]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A resize never shrinks a storage; it replaces the storage's buffer with a
// bigger one from the same allocator when the new geometry needs more bytes
// (every tensor sharing the storage sees the new buffer, as in PyTorch).
// With keep_data, the old bytes are copied into the new buffer; that needs
// host-addressable memory; device memory is copied with the backend's
// device-to-device copy on the current stream (see grow_storage).
// The storage must be resizable (tensors over external memory are not).
// Strides default to contiguous ones. Errors are ValueError naming `op`.
SDK_API void resize_impl(const Tensor& self, IntArrayRef sizes, std::optional<IntArrayRef> strides, bool keep_data,
                         const char* op);

// Note [Resizing out= arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An out= tensor whose shape differs from the result's is resized to the
// result's shape (contiguous strides), as PyTorch's resize_output does. When it
// had elements, PyTorch also warns (a UserWarning: the behaviour is
// deprecated there); so do we, with PyTorch's text, through sdk::warn. Returns
// true if it resized. Every out= kernel goes through this one function.
SDK_API bool resize_output(const Tensor& out, IntArrayRef sizes, const char* op);

// The aten::resize_ kernel of CPU, Meta and (under a DeviceGuard) device
// backends: resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None).
SDK_API Tensor resize_kernel(const Tensor& self, IntArrayRef size, std::optional<int64_t> memory_format);

}  // namespace sdk::ops
