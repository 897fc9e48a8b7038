// _local_scalar_dense (Tensor.item()): the single element as a Scalar.
#include <cstring>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/CpuLoops.h>

namespace sdk::ops {
namespace {

void check_one_element(const Tensor& self) {
  SDK_CHECK_VALUE(self.numel() == 1, "_local_scalar_dense: a Tensor with ", self.numel(),
                  " elements cannot be converted to Scalar");
}

// bool -> bool, integers -> int64, floating types -> double (as PyTorch).
Scalar local_scalar_cpu(const Tensor& self) {
  check_one_element(self);
  const char* p = static_cast<const char*>(self.data_ptr());
  return cpu::dispatch_storage_type(self.dtype(), "_local_scalar_dense", [&](auto tag) -> Scalar {
    using S = typename decltype(tag)::type;
    S v;
    std::memcpy(&v, p, sizeof(S));
    if constexpr (std::is_same_v<S, bool>) {
      return Scalar(v);
    } else if constexpr (std::is_integral_v<S>) {
      return Scalar(static_cast<int64_t>(v));
    } else {
      return Scalar(static_cast<double>(v));
    }
  });
}

Scalar local_scalar_meta(const Tensor& self) {
  check_one_element(self);
  SDK_THROW(Runtime, "_local_scalar_dense: Tensor.item() cannot be called on meta tensors");
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("_local_scalar_dense", &sdk::ops::local_scalar_cpu); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("_local_scalar_dense", &sdk::ops::local_scalar_meta); }
