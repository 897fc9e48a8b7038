// Index-tensor builders for the composites (ops/detail/CompositeOps.h).
#include <backend_sdk/ops/detail/CompositeOps.h>

namespace sdk::ops::cx {

T index_tensor(const std::vector<int64_t>& values, Device device) {
  const int64_t n = static_cast<int64_t>(values.size());
  if (device.type == DeviceType::Meta) return make_tensor({n}, ScalarType::Int64, device);
  Tensor host = make_tensor({n}, ScalarType::Int64, Device(DeviceType::CPU));
  auto* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = values[static_cast<size_t>(i)];
  return index_on_device(host, device);
}

T index_on_device(T host, Device device) {
  if (device.type == DeviceType::CPU) return host;
  // Non-blocking: `host` is a temporary, staged by the device without waiting for its stream (as arange_impl, CoreOps20.cpp).
  return _to_copy(host, std::nullopt, device, /*non_blocking=*/true);
}

T arange(int64_t n, Device device) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return index_tensor(v, device);
}

T full(IntArrayRef sizes, const Scalar& value, ScalarType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  if (device.type == DeviceType::Meta) return t;
  return fill_(t, value);
}

}  // namespace sdk::ops::cx
