// empty.memory_format and empty_strided: CPU and Meta kernels (allocation
// only) and their BackendSelect kernels (see Note [BackendSelect]).
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/BackendSelect.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/ops/detail/Geometry.h>
#include <backend_sdk/ops/detail/MemoryFormat.h>

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
  const int64_t fmt = memory_format.value_or(kContiguousFormat);
  if (fmt == kContiguousFormat) return make_tensor(size, resolve_dtype(dtype, op), device);
  // Note [Memory formats]: channels_last is a stride order of the same sizes.
  DimVector strides = memory_format_strides(size, fmt, op);
  checked_numel(size, op);
  return make_tensor_strided(size, strides, resolve_dtype(dtype, op), device);
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

// Note [Memory formats].
DimVector memory_format_strides(IntArrayRef sizes, int64_t fmt, const char* op) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  switch (fmt) {
    case kContiguousFormat:
      return contiguous_strides(sizes, op);
    case kChannelsLast:
    case kChannelsLast3d: {
      const int64_t rank = fmt == kChannelsLast ? 4 : 5;
      SDK_CHECK(n == rank, op, ": required rank ", rank, " tensor to use ",
                fmt == kChannelsLast ? "channels_last" : "channels_last_3d", " format");
      // Innermost first: C, then W, H (and D), then N.
      DimVector strides(sizes.size(), 1);
      int64_t stride = 1;
      strides[1] = stride;
      stride *= std::max<int64_t>(sizes[1], 1);
      for (int64_t d = n - 1; d >= 2; --d) {
        strides[d] = stride;
        stride *= std::max<int64_t>(sizes[d], 1);
      }
      strides[0] = stride;
      return strides;
    }
    case kPreserveFormat:
      SDK_CHECK(false, op, ": unsupported memory format Preserve");
    default:
      SDK_CHECK_VALUE(false, op, ": unknown memory format ", fmt);
  }
  return {};
}

bool is_contiguous_as(const Tensor& t, int64_t fmt) {
  if (fmt == kContiguousFormat || fmt == kPreserveFormat) return t.is_contiguous();
  if (t.dim() != (fmt == kChannelsLast ? 4 : 5)) return false;
  DimVector expected = memory_format_strides(t.sizes(), fmt, "is_contiguous");
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != expected[d]) return false;
  }
  return true;
}

int64_t suggest_memory_format(const Tensor& t) {
  if (t.is_contiguous()) return kContiguousFormat;
  if (t.dim() == 4 && is_contiguous_as(t, kChannelsLast)) return kChannelsLast;
  if (t.dim() == 5 && is_contiguous_as(t, kChannelsLast3d)) return kChannelsLast3d;
  return kContiguousFormat;
}

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
