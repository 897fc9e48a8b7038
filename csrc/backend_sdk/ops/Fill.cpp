// fill_.Scalar: CPU and Meta kernels.
#include <cstring>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CpuLoops.h>
#include <backend_sdk/ops/Parallel.h>
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

// Note [Small contiguous fill]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A contiguous self smaller than TensorIterator's serial threshold (2 * kParallelGrain, for_each) is one
// run of numel elements at stride itemsize: the loop the iterator would reach after merging its dims,
// so it is written directly, without building the iterator, which was a fifth of zeros(3)'s time
// (issue 18; Note [Factory fast path], csrc/python/PyFactories.cpp). A contiguous tensor has no
// internal overlap and fill_ has no inputs, so the iterator's checks have nothing to refuse; the
// value's checked conversion (element_bits) and the version bump are the same. Larger or strided
// tensors keep the iterator (threads, any layout).
bool fill_contiguous_small(const Tensor& self, uint64_t bits, bool write) {
  const int64_t n = self.numel();
  if (!self.is_contiguous() || n >= 2 * kParallelGrain) return false;
  if (!write || n == 0) return true;
  char* out = static_cast<char*>(self.data_ptr());
  if (out == nullptr) return false;  // the iterator's error (no host data)
  const size_t size = self.itemsize();
  if (bits == 0) {
    std::memset(out, 0, static_cast<size_t>(n) * size);
    return true;
  }
  switch (size) {
    case 1: store_repeated<uint8_t>(out, 1, bits, n); break;
    case 2: store_repeated<uint16_t>(out, 2, bits, n); break;
    case 4: store_repeated<uint32_t>(out, 4, bits, n); break;
    default: store_repeated<uint64_t>(out, 8, bits, n); break;
  }
  return true;
}

template <bool kCpu>
Tensor fill_kernel(const Tensor& self, const Scalar& value) {
  if (self.defined() && self.itemsize() <= 8 && fill_contiguous_small(self, element_bits(value, self.dtype()), kCpu)) {
    self.impl()->bump_version();
    return self;
  }
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
