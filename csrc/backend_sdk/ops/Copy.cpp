// copy_: CPU and Meta kernels. A device backend registers its own copy_ for
// its key: a copy with any operand on the device dispatches there (the
// highest backend of the call), in both directions.
#include <algorithm>
#include <cstring>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/CpuLoops.h>
#include <backend_sdk/ops/TensorIterator.h>

namespace sdk::ops {
namespace {

// self keeps its shape and dtype: src broadcasts to self, converted to
// self's dtype; devices are the kernel's business (see the file comment).
void build_copy(TensorIterator& iter, const Tensor& self, const Tensor& src) {
  iter.add_output(self).resize_outputs(false).output_name("self").declare_static_dtype(self.dtype());
  iter.check_same_device(false).add_input(src);
  iter.build();
}

// Same dtype: elements move unchanged, as unsigned words of their size.
template <typename U>
void copy_words(char* out, int64_t so, const char* in, int64_t si, int64_t n) {
  constexpr int64_t size = sizeof(U);
  if (so == size && si == size) {
    std::memmove(out, in, static_cast<size_t>(n * size));
  } else if (si == 0) {
    const U v = *reinterpret_cast<const U*>(in);
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(out + i * so) = v;
  } else {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<U*>(out + i * so) = *reinterpret_cast<const U*>(in + i * si);
  }
}

void copy_same_dtype(const TensorIterator& iter) {
  const size_t size = iter.tensor(0).itemsize();
  iter.for_each([size](char** data, const int64_t* strides, int64_t n) {
    switch (size) {
      case 1: return copy_words<uint8_t>(data[0], strides[0], data[1], strides[1], n);
      case 2: return copy_words<uint16_t>(data[0], strides[0], data[1], strides[1], n);
      case 4: return copy_words<uint32_t>(data[0], strides[0], data[1], strides[1], n);
      default: return copy_words<uint64_t>(data[0], strides[0], data[1], strides[1], n);
    }
  });
}

// Different dtypes: through the compute type of self's dtype (Note [Compute type]).
void copy_converting(const TensorIterator& iter) {
  const ScalarType dst = iter.dtype(0), src = iter.dtype(1);
  cpu::dispatch_compute_type(dst, "copy_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool direct_out = dst == cpu::scalar_type_of<T>();
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
      if (direct_out && strides[0] == static_cast<int64_t>(sizeof(T))) {
        cpu::load_converted(reinterpret_cast<T*>(data[0]), data[1], strides[1], src, n);
        return;
      }
      T buf[cpu::kChunk];
      for (int64_t i = 0; i < n; i += cpu::kChunk) {
        const int64_t m = std::min(cpu::kChunk, n - i);
        const T* x = cpu::run_as(data[1] + i * strides[1], strides[1], src, buf, m);
        cpu::store_converted(data[0] + i * strides[0], strides[0], dst, x, m);
      }
    });
  });
}

Tensor copy_cpu(const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.is_same(src)) {
    self.impl()->bump_version();
    return self;
  }
  TensorIterator iter("copy_");
  build_copy(iter, self, src);
  SDK_CHECK_NOT_IMPLEMENTED(src.is_cpu() && self.is_cpu(), "copy_: copying from ", src.device(), " to ",
                            self.device(), " needs the copy_ kernel of the device's backend");
  if (iter.dtype(0) == iter.dtype(1)) {
    copy_same_dtype(iter);
  } else {
    copy_converting(iter);
  }
  self.impl()->bump_version();
  return self;
}

// Meta: checks only. Data cannot come out of a meta tensor into a real one.
Tensor copy_meta(const Tensor& self, const Tensor& src, bool non_blocking) {
  TensorIterator iter("copy_");
  build_copy(iter, self, src);
  SDK_CHECK_NOT_IMPLEMENTED(self.is_meta() || !src.is_meta(), "copy_: Cannot copy out of meta tensor; no data!");
  self.impl()->bump_version();
  return self;
}

// Note [copy_ into overlapping memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// copy_ into a tensor with internal overlap (an expanded view: a stride-0 dim
// of size > 1) writes several values into one element; PyTorch refuses it at
// the call. Each backend's copy_ kernel is the vendor's (device::copy_, a
// Python backend's, a sample's), and on a device the first place that would
// notice is the strided copy running asynchronously on the stream, where it
// surfaces as an AcceleratorError at some later synchronization, or not at
// all. So the check runs once for every backend in a kernel at
// ADInplaceOrView, a key every tensor carries and that sits below Autograd
// (so autograd's redispatch reaches it too) and above every backend: it checks
// and redispatches to the keys after it. `x.copy_(x)` is a no-op on every
// backend, as PyTorch's copy_ makes it before any backend code (only the
// version counter moves, as for any write).
Tensor copy_overlap_check(DispatchKeySet keys, const Tensor& self, const Tensor& src, bool non_blocking) {
  if (self.is_same(src)) {
    self.impl()->bump_version();
    return self;
  }
  check_no_internal_overlap(self, "copy_");
  static const auto op = Dispatcher::singleton()
                             .find_schema_or_throw("aten::copy_")
                             .typed<Tensor(const Tensor&, const Tensor&, bool)>();
  return op.redispatch(keys & keys_after(DispatchKey::ADInplaceOrView), self, src, non_blocking);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("copy_", &sdk::ops::copy_cpu); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("copy_", &sdk::ops::copy_meta); }
SDK_LIBRARY_IMPL(aten, ADInplaceOrView, m) { m.impl("copy_", &sdk::ops::copy_overlap_check); }
