// fill_.Scalar: CPU and Meta kernels.
#include <cstring>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CpuLoops.h>
#include <backend_sdk/ops/TensorIterator.h>

namespace sdk::ops {
namespace {

// The bytes of `value` as one element of dtype t (checked: ValueError when
// it does not fit, as PyTorch's checked conversion).
uint64_t element_bits(const Scalar& value, ScalarType t) {
  uint64_t bits = 0;
  cpu::dispatch_storage_type(t, "fill_.Scalar", [&](auto tag) {
    using S = typename decltype(tag)::type;
    S v = checked_scalar_to<S>(value, "fill_.Scalar", "value", t);
    std::memcpy(&bits, &v, sizeof(S));
  });
  return bits;
}

template <typename U>
void store_repeated(char* out, int64_t stride, uint64_t bits, int64_t n) {
  U v;
  std::memcpy(&v, &bits, sizeof(U));
  if (stride == static_cast<int64_t>(sizeof(U))) {
    U* o = reinterpret_cast<U*>(out);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * stride, &v, sizeof(U));
  }
}

void fill_loop(const TensorIterator& iter, uint64_t bits) {
  const size_t size = iter.tensor(0).itemsize();
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    switch (size) {
      case 1: return store_repeated<uint8_t>(data[0], strides[0], bits, n);
      case 2: return store_repeated<uint16_t>(data[0], strides[0], bits, n);
      case 4: return store_repeated<uint32_t>(data[0], strides[0], bits, n);
      default: return store_repeated<uint64_t>(data[0], strides[0], bits, n);
    }
  });
}

template <bool kCpu>
Tensor fill_kernel(const Tensor& self, const Scalar& value) {
  TensorIterator iter("fill_.Scalar");
  iter.add_output(self).resize_outputs(false).output_name("self");
  iter.build();
  uint64_t bits = element_bits(value, self.dtype());
  if constexpr (kCpu) fill_loop(iter, bits);
  self.impl()->bump_version();
  return self;
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("fill_.Scalar", &sdk::ops::fill_kernel<true>); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("fill_.Scalar", &sdk::ops::fill_kernel<false>); }
