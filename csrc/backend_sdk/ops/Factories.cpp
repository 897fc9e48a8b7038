// empty.memory_format and empty_strided: CPU and Meta kernels (allocation
// only) and their BackendSelect kernels (see Note [BackendSelect]).
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/BackendSelect.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/ops/detail/Geometry.h>

namespace sdk::ops {
namespace {

using EmptySig = Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<int64_t>, std::optional<Device>,
                        std::optional<bool>, std::optional<int64_t>);
using EmptyStridedSig = Tensor(IntArrayRef, IntArrayRef, std::optional<ScalarType>, std::optional<int64_t>,
                               std::optional<Device>, std::optional<bool>);

ScalarType resolve_dtype(std::optional<ScalarType> dtype, const char* op) {
  ScalarType t = dtype.value_or(default_dtype());
  SDK_CHECK_TYPE(t >= ScalarType::Bool && t < ScalarType::NumOptions, op, ": invalid dtype ", static_cast<int>(t));
  return t;
}

// Layout ids as in PyTorch: 0 is torch.strided, the only layout the SDK has.
void check_layout(std::optional<int64_t> layout, const char* op) {
  SDK_CHECK_VALUE(!layout || *layout == 0, op, ": only the strided layout is supported, got layout ", *layout);
}

// MemoryFormat ids as in PyTorch: contiguous_format=0, preserve_format=1,
// channels_last=2, channels_last_3d=3. Only contiguous tensors are made here.
void check_memory_format(std::optional<int64_t> memory_format, const char* op) {
  SDK_CHECK_VALUE(!memory_format || *memory_format == 0, op, ": memory_format ", *memory_format,
                  " is not supported; only contiguous_format is");
}

// The kernel of backend kType allocates there. CPU and meta tensors have no
// device index ("cpu:0" makes a tensor on "cpu", as in PyTorch); a device
// backend keeps the requested index (-1: make_tensor resolves the current one).
template <DeviceType kType>
Device target_device(std::optional<Device> device) {
  if (kType == DeviceType::CPU || kType == DeviceType::Meta) return Device(kType);
  return Device(kType, device && device->type == kType ? device->index : -1);
}

}  // namespace

Tensor empty_on(Device device, IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                std::optional<int64_t> memory_format) {
  const char* op = "empty.memory_format";
  check_layout(layout, op);
  check_memory_format(memory_format, op);
  return make_tensor(size, resolve_dtype(dtype, op), device);
}

Tensor empty_strided_on(Device device, IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                        std::optional<int64_t> layout) {
  const char* op = "empty_strided";
  check_layout(layout, op);
  ScalarType t = resolve_dtype(dtype, op);
  SDK_CHECK_VALUE(size.size() == stride.size(), op, ": mismatch in length of strides and shape");
  checked_numel(size, op);
  check_non_negative_strides(stride, op);
  checked_storage_nbytes(size, stride, element_size(t), 0, op);  // overflow check before allocating
  return make_tensor_strided(size, stride, t, device);
}

namespace {

template <DeviceType kType>
Tensor empty_kernel(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                    std::optional<Device> device, std::optional<bool> pin_memory,
                    std::optional<int64_t> memory_format) {
  return empty_on(target_device<kType>(device), size, dtype, layout, memory_format);
}

template <DeviceType kType>
Tensor empty_strided_kernel(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                            std::optional<int64_t> layout, std::optional<Device> device,
                            std::optional<bool> pin_memory) {
  return empty_strided_on(target_device<kType>(device), size, stride, dtype, layout);
}

Tensor empty_backend_select(DispatchKeySet, IntArrayRef size, std::optional<ScalarType> dtype,
                            std::optional<int64_t> layout, std::optional<Device> device,
                            std::optional<bool> pin_memory, std::optional<int64_t> memory_format) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::empty.memory_format").typed<EmptySig>();
  return op.redispatch(backend_select_keys(device), size, dtype, layout, device, pin_memory, memory_format);
}

Tensor empty_strided_backend_select(DispatchKeySet, IntArrayRef size, IntArrayRef stride,
                                    std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                                    std::optional<Device> device, std::optional<bool> pin_memory) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::empty_strided").typed<EmptyStridedSig>();
  return op.redispatch(backend_select_keys(device), size, stride, dtype, layout, device, pin_memory);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) {
  using namespace sdk::ops;
  m.impl("empty.memory_format", &empty_kernel<sdk::DeviceType::CPU>);
  m.impl("empty_strided", &empty_strided_kernel<sdk::DeviceType::CPU>);
}

SDK_LIBRARY_IMPL(aten, Meta, m) {
  using namespace sdk::ops;
  m.impl("empty.memory_format", &empty_kernel<sdk::DeviceType::Meta>);
  m.impl("empty_strided", &empty_strided_kernel<sdk::DeviceType::Meta>);
}

SDK_LIBRARY_IMPL(aten, BackendSelect, m) {
  using namespace sdk::ops;
  m.impl("empty.memory_format", &empty_backend_select);
  m.impl("empty_strided", &empty_strided_backend_select);
}
