// The allocation step of empty.memory_format and empty_strided, shared by the
// CPU and Meta kernels and by device backends (ops/DeviceOps.h): argument
// checks with the operators' messages, then an uninitialised tensor on
// `device` (index -1: the current device of its backend).
#pragma once

#include <optional>

#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

SDK_API Tensor empty_on(Device device, IntArrayRef size, std::optional<ScalarType> dtype,
                        std::optional<int64_t> layout, std::optional<int64_t> memory_format);
SDK_API Tensor empty_strided_on(Device device, IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                                std::optional<int64_t> layout);

}  // namespace sdk::ops
