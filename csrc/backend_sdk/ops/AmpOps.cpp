// The operators behind amp.GradScaler: aten::_amp_foreach_non_finite_check_and_unscale_ and
// aten::_amp_update_scale_ (PyTorch 2.13's schemas).
//
// Note [GradScaler operators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Both are CompositeExplicitAutograd kernels written with other operators (isfinite, any, where,
// mul_, copy_), so they run on every backend, a Python one too, and never read a device value on
// the host: the found-inf flag, the scale and the growth tracker stay where they are, and the only
// synchronisation of a GradScaler step is the one PyTorch's has too (step() reading found_inf).
// _amp_update_scale_ follows PyTorch's update rule: with found_inf != 0 the scale is multiplied by
// the backoff factor and the tracker reset; otherwise the tracker counts successful steps and when
// it reaches growth_interval the scale is multiplied by the growth factor (kept only if finite) and
// the tracker reset.
#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace sdk::ops {
namespace {

using Unary = Tensor(const Tensor&);
using WhereSelf = Tensor(const Tensor&, const Tensor&, const Tensor&);
using WhereScalarSelf = Tensor(const Tensor&, const Scalar&, const Tensor&);
using CompareScalar = Tensor(const Tensor&, const Scalar&);

Tensor call_unary(const char* name, const Tensor& t) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Unary>().call(t);
}
Tensor where_self(const Tensor& c, const Tensor& a, const Tensor& b) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::where.self").typed<WhereSelf>();
  return op.call(c, a, b);
}
Tensor where_scalar_self(const Tensor& c, const Scalar& a, const Tensor& b) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::where.ScalarSelf").typed<WhereScalarSelf>();
  return op.call(c, a, b);
}
Tensor compare(const char* name, const Tensor& t, const Scalar& s) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<CompareScalar>().call(t, s);
}

bool is_float_dtype(const Tensor& t) { return t.scalar_type() == ScalarType::Float32; }

void check_one_element_float(const Tensor& t, const char* what) {
  SDK_CHECK(t.numel() == 1, what, " must be a 1-element tensor.");
  SDK_CHECK(is_float_dtype(t), what, " must be a float tensor.");
}

void amp_foreach_non_finite_check_and_unscale_(TensorList self, const Tensor& found_inf, const Tensor& inv_scale) {
  check_one_element_float(found_inf, "found_inf");
  check_one_element_float(inv_scale, "inv_scale");
  SDK_CHECK(inv_scale.device() == found_inf.device(), "_amp_foreach_non_finite_check_and_unscale_: inv_scale (on ",
            inv_scale.device(), ") and found_inf (on ", found_inf.device(), ") must be on the same device.");
  Tensor inv = view(inv_scale, {});
  Tensor found = view(found_inf, {});
  for (size_t i = 0; i < self.size(); ++i) {
    const Tensor& g = self[i];
    SDK_CHECK(g.device() == found_inf.device(), "_amp_foreach_non_finite_check_and_unscale_: self[", i, "] is on ",
              g.device(), " but found_inf is on ", found_inf.device(), ".");
    SDK_CHECK(is_floating_type(g.scalar_type()), "_amp_foreach_non_finite_check_and_unscale_: self[", i,
              "] must be a floating-point tensor, got ", scalar_type_name(g.scalar_type()), ".");
    if (g.numel() == 0) continue;
    Tensor any_non_finite = call_unary("aten::any", call_unary("aten::logical_not", call_unary("aten::isfinite", g)));
    copy_(found, where_scalar_self(any_non_finite, 1.0, found));
    mul_(g, inv);
  }
}

Tensor amp_update_scale_(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                         double scale_growth_factor, double scale_backoff_factor, int64_t growth_interval) {
  SDK_CHECK(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  SDK_CHECK(self.numel() == 1, "current_scale must be a 1-element tensor.");
  SDK_CHECK(found_inf.numel() == 1, "found_inf must be a 1-element tensor.");
  SDK_CHECK(growth_tracker.scalar_type() == ScalarType::Int32, "growth_tracker must be an int tensor.");
  SDK_CHECK(is_float_dtype(self), "current_scale must be a float tensor.");
  SDK_CHECK(is_float_dtype(found_inf), "found_inf must be a float tensor.");
  SDK_CHECK(growth_tracker.device() == self.device() && found_inf.device() == self.device(),
            "_amp_update_scale_: current_scale (on ", self.device(), "), growth_tracker (on ", growth_tracker.device(),
            ") and found_inf (on ", found_inf.device(), ") must be on the same device.");
  Tensor inf = compare("aten::ne.Scalar", found_inf, 0.0);
  Tensor successful = add(growth_tracker, Scalar(int64_t{1}));
  Tensor grow = compare("aten::eq.Scalar", successful, Scalar(growth_interval));
  Tensor grown = mul(self, Scalar(scale_growth_factor));
  Tensor kept = where_self(call_unary("aten::isfinite", grown), grown, self);
  Tensor new_scale = where_self(inf, mul(self, Scalar(scale_backoff_factor)), where_self(grow, kept, self));
  Tensor new_tracker = where_scalar_self(inf, Scalar(int64_t{0}), where_scalar_self(grow, Scalar(int64_t{0}), successful));
  copy_(growth_tracker, new_tracker);
  copy_(self, new_scale);
  return self;
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, Tensor inv_scale) -> ()");
  m.def("_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, float scale_growth_factor, "
        "float scale_backoff_factor, int growth_interval) -> Tensor(a!)");
  const auto composite = sdk::DispatchKey::CompositeExplicitAutograd;
  m.impl("_amp_foreach_non_finite_check_and_unscale_", composite, &sdk::ops::amp_foreach_non_finite_check_and_unscale_);
  m.impl("_amp_update_scale_", composite, &sdk::ops::amp_update_scale_);
}
