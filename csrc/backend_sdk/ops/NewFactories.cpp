// Tensor.new_empty / new_zeros / new_ones / new_full as aten operators (PyTorch's schemas).
//
// They take the tensor they copy dtype and device from as `self`, so a call dispatches on self's
// keys: a __torch_dispatch__ subclass (the Python key, Note [Python dispatch]) sees aten::new_zeros
// and answers with an instance of its class, which is how PyTorch's backward formulas
// (as_strided_backward, select_backward, ...) keep a subclass gradient a subclass. A factory
// without a tensor argument (aten::zeros) could not. CompositeExplicitAutograd: one kernel for
// every backend, composed of aten::empty.memory_format and aten::fill_ through the dispatcher, so
// the backend's own primitives run; the results are not differentiable (derivatives.yaml lists
// self as non_differentiable; backend_sdk/autograd/_formulas.py NOT_DIFFERENTIABLE).
#include <optional>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace sdk::ops {
namespace {

using OptDtype = std::optional<ScalarType>;
using OptLayout = std::optional<int64_t>;
using OptDevice = std::optional<Device>;
using OptBool = std::optional<bool>;

Tensor new_empty_kernel(const Tensor& self, IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device,
                        OptBool pin_memory) {
  static const auto op = Dispatcher::singleton()
                             .find_schema_or_throw("aten::empty.memory_format")
                             .typed<Tensor(IntArrayRef, OptDtype, OptLayout, OptDevice, OptBool, OptLayout)>();
  return op.call(size, dtype ? dtype : OptDtype(self.dtype()), layout, device ? device : OptDevice(self.device()),
                 pin_memory, std::nullopt);
}

Tensor new_full_kernel(const Tensor& self, IntArrayRef size, const Scalar& fill_value, OptDtype dtype,
                       OptLayout layout, OptDevice device, OptBool pin_memory) {
  Tensor out = new_empty_kernel(self, size, dtype, layout, device, pin_memory);
  fill_(out, fill_value);
  return out;
}

Tensor new_zeros_kernel(const Tensor& self, IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device,
                        OptBool pin_memory) {
  return new_full_kernel(self, size, Scalar(0), dtype, layout, device, pin_memory);
}

Tensor new_ones_kernel(const Tensor& self, IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device,
                       OptBool pin_memory) {
  return new_full_kernel(self, size, Scalar(1), dtype, layout, device, pin_memory);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  const char* opts = "*, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor";
  m.def(std::string("new_empty(Tensor self, SymInt[] size, ") + opts);
  m.def(std::string("new_zeros(Tensor self, SymInt[] size, ") + opts);
  m.def(std::string("new_ones(Tensor self, SymInt[] size, ") + opts);
  m.def(std::string("new_full(Tensor self, SymInt[] size, Scalar fill_value, ") + opts);
  const auto composite = sdk::DispatchKey::CompositeExplicitAutograd;
  m.impl("new_empty", composite, &sdk::ops::new_empty_kernel);
  m.impl("new_zeros", composite, &sdk::ops::new_zeros_kernel);
  m.impl("new_ones", composite, &sdk::ops::new_ones_kernel);
  m.impl("new_full", composite, &sdk::ops::new_full_kernel);
}
