// 2-D pooling: max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d and
// their backward operators (CPU and Meta kernels); max_pool2d and
// adaptive_avg_pool2d are CompositeImplicitAutograd over them, as PyTorch's.
//
// Note [Pooling windows]
// ~~~~~~~~~~~~~~~~~~~~~~
// Input is (C, H, W) or (N, C, H, W): N*C independent planes. Output size per
// dim: (in + 2*pad - dilation*(k-1) - 1) / stride + 1, rounded up with
// ceil_mode, minus one when the last window would start in the right padding
// (PyTorch's pooling_output_shape). Max pooling ignores padding, propagates
// NaN (a NaN wins), and records the flat index h*W + w within the plane of the
// first maximum. Average pooling divides by divisor_override, else by the
// window's size clipped to the padded input (count_include_pad) or to the
// input. Adaptive average pooling's window for output o is
// [floor(o*in/out), ceil((o+1)*in/out)).
// Derivatives (PyTorch's derivatives.yaml; the autograd table needs them):
//   max_pool2d_with_indices: self = max_pool2d_with_indices_backward(grad, self, kernel_size, stride, padding,
//                            dilation, ceil_mode, result1)
//   avg_pool2d:              self = avg_pool2d_backward(grad, self, kernel_size, stride, padding, ceil_mode,
//                            count_include_pad, divisor_override)
//   _adaptive_avg_pool2d:    self = _adaptive_avg_pool2d_backward(grad, self)
#include <cmath>
#include <tuple>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/CompositeOps.h>

namespace sdk::ops {
namespace {

using cx::as_dtype;
using cx::compute_type;
using cx::dense;
using cx::floating_dispatch;

struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  bool batched;
};

int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

std::pair<int64_t, int64_t> pair_of(IntArrayRef p, const char* op, const char* what, int64_t dflt_a, int64_t dflt_b) {
  if (p.empty()) return {dflt_a, dflt_b};
  SDK_CHECK_VALUE(p.size() == 1 || p.size() == 2, op, ": ", what, " must either be a single int, or a tuple of two ints");
  return {p[0], p.size() == 2 ? p[1] : p[0]};
}

PoolGeom pool_geometry(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode, const char* op) {
  SDK_CHECK_VALUE((self.dim() == 3 || self.dim() == 4) && self.numel() > 0,
                  "non-empty 3D or 4D (batch mode) tensor expected for input");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op, ": expected a floating point input, got ",
                 scalar_type_name(self.dtype()));
  SDK_CHECK_VALUE(!kernel.empty(), op, ": kernel_size must either be a single int, or a tuple of two ints");
  auto [kh, kw] = pair_of(kernel, op, "kernel_size", 0, 0);
  auto [sh, sw] = pair_of(stride, op, "stride", kh, kw);
  auto [ph, pw] = pair_of(padding, op, "padding", 0, 0);
  auto [dh, dw] = pair_of(dilation, op, "dilation", 1, 1);
  SDK_CHECK_VALUE(kh > 0 && kw > 0, "kernel size should be greater than zero, but got kH: ", kh, " kW: ", kw);
  SDK_CHECK_VALUE(sh > 0 && sw > 0, "stride should be greater than zero, but got dH: ", sh, " dW: ", sw);
  SDK_CHECK_VALUE(dh > 0 && dw > 0, "dilation should be greater than zero, but got dilationH: ", dh, " dilationW: ", dw);
  SDK_CHECK_VALUE(ph <= ((kh - 1) * dh + 1) / 2 && pw <= ((kw - 1) * dw + 1) / 2,
                  "pad should be at most half of effective kernel size, but got pad=", std::max(ph, pw),
                  ", kernel_size=", std::max(kh, kw), " and dilation=", std::max(dh, dw));
  PoolGeom g{};
  g.batched = self.dim() == 4;
  g.h = self.size(-2);
  g.w = self.size(-1);
  g.planes = self.numel() / (g.h * g.w);
  g.kh = kh; g.kw = kw; g.sh = sh; g.sw = sw; g.ph = ph; g.pw = pw; g.dh = dh; g.dw = dw;
  g.oh = pool_out(g.h, kh, ph, sh, dh, ceil_mode);
  g.ow = pool_out(g.w, kw, pw, sw, dw, ceil_mode);
  const int64_t c = self.size(-3);
  SDK_CHECK_VALUE(g.oh >= 1 && g.ow >= 1, "Given input size: (", c, "x", g.h, "x", g.w, "). Calculated output size: (",
                  c, "x", g.oh, "x", g.ow, "). Output size is too small");
  return g;
}

DimVector pooled_sizes(const Tensor& self, int64_t oh, int64_t ow) {
  DimVector s(self.sizes());
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

// ---- max pooling ----
template <bool kCpu>
std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                                          IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const PoolGeom g = pool_geometry(self, kernel, stride, padding, dilation, ceil_mode, "max_pool2d");
  const DimVector os = pooled_sizes(self, g.oh, g.ow);
  Tensor indices = make_tensor(os, ScalarType::Int64, self.device());
  if constexpr (!kCpu) {
    return {make_tensor(os, self.dtype(), self.device()), indices};
  } else {
    const ScalarType ct = compute_type(self.dtype());
    Tensor x = dense(self, ct);
    Tensor out = make_tensor(os, ct, self.device());
    floating_dispatch(ct, "max_pool2d", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data_ptr<T>();
      T* po = out.data_ptr<T>();
      int64_t* pi = indices.data_ptr<int64_t>();
      parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          const T* plane = px + p * g.h * g.w;
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              T best = T(0);
              int64_t at = -1;
              for (int64_t i = 0; i < g.kh; ++i) {
                const int64_t y = oy * g.sh - g.ph + i * g.dh;
                if (y < 0 || y >= g.h) continue;
                for (int64_t j = 0; j < g.kw; ++j) {
                  const int64_t xx = ox * g.sw - g.pw + j * g.dw;
                  if (xx < 0 || xx >= g.w) continue;
                  const T v = plane[y * g.w + xx];
                  if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                    best = v;
                    at = y * g.w + xx;
                  }
                }
              }
              const int64_t o = (p * g.oh + oy) * g.ow + ox;
              po[o] = best;
              pi[o] = at;
            }
          }
        }
      });
    });
    return {as_dtype(out, self.dtype()), indices};
  }
}

template <bool kCpu>
Tensor max_pool2d_backward_kernel(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                  const Tensor& indices) {
  const PoolGeom g = pool_geometry(self, kernel, stride, padding, dilation, ceil_mode, "max_pool2d_backward");
  const DimVector os = pooled_sizes(self, g.oh, g.ow);
  SDK_CHECK_VALUE(grad_output.sizes().equals(os) && indices.sizes().equals(os),
                  "max_pool2d_with_indices_backward: expected grad_output and indices of size ", IntArrayRef(os),
                  ", but got ", grad_output.sizes(), " and ", indices.sizes());
  if constexpr (!kCpu) {
    return make_tensor(self.sizes(), self.dtype(), self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    Tensor go = dense(grad_output, ct), idx = dense(indices, ScalarType::Int64);
    Tensor gi = make_tensor(self.sizes(), ct, self.device());
    floating_dispatch(ct, "max_pool2d_backward", [&](auto tag) {
      using T = decltype(tag);
      const T* pg = go.data_ptr<T>();
      const int64_t* pi = idx.data_ptr<int64_t>();
      T* po = gi.data_ptr<T>();
      std::fill(po, po + gi.numel(), T(0));
      parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          for (int64_t o = 0; o < g.oh * g.ow; ++o) {
            const int64_t at = pi[p * g.oh * g.ow + o];
            if (at >= 0) po[p * g.h * g.w + at] += pg[p * g.oh * g.ow + o];
          }
        }
      });
    });
    return as_dtype(gi, self.dtype());
  }
}

Tensor max_pool2d_impl(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode) {
  static const auto op = cx::typed<std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                                              IntArrayRef, bool)>("aten::max_pool2d_with_indices");
  return std::get<0>(op.call(self, kernel, stride, padding, dilation, ceil_mode));
}

// ---- average pooling ----
struct AvgWindow {
  int64_t y0, y1, x0, x1;
  double divisor;
};

AvgWindow avg_window(const PoolGeom& g, int64_t oy, int64_t ox, bool count_include_pad,
                     std::optional<int64_t> divisor_override) {
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  int64_t y1 = std::min(y0 + g.kh, g.h + g.ph), x1 = std::min(x0 + g.kw, g.w + g.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0);
  x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, g.h);
  x1 = std::min(x1, g.w);
  double divisor = divisor_override ? static_cast<double>(*divisor_override)
                                    : static_cast<double>(count_include_pad ? padded : (y1 - y0) * (x1 - x0));
  return {y0, y1, x0, x1, divisor};
}

template <bool kCpu>
Tensor avg_pool2d_kernel(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                         bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  SDK_CHECK_VALUE(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  const PoolGeom g = pool_geometry(self, kernel, stride, padding, {}, ceil_mode, "avg_pool2d");
  const DimVector os = pooled_sizes(self, g.oh, g.ow);
  if constexpr (!kCpu) {
    return make_tensor(os, self.dtype(), self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    Tensor x = dense(self, ct);
    Tensor out = make_tensor(os, ct, self.device());
    floating_dispatch(ct, "avg_pool2d", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data_ptr<T>();
      T* po = out.data_ptr<T>();
      parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          const T* plane = px + p * g.h * g.w;
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const AvgWindow win = avg_window(g, oy, ox, count_include_pad, divisor_override);
              double s = 0;
              for (int64_t y = win.y0; y < win.y1; ++y) {
                for (int64_t xx = win.x0; xx < win.x1; ++xx) s += plane[y * g.w + xx];
              }
              po[(p * g.oh + oy) * g.ow + ox] = static_cast<T>(s / win.divisor);
            }
          }
        }
      });
    });
    return as_dtype(out, self.dtype());
  }
}

template <bool kCpu>
Tensor avg_pool2d_backward_kernel(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                  std::optional<int64_t> divisor_override) {
  SDK_CHECK_VALUE(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  const PoolGeom g = pool_geometry(self, kernel, stride, padding, {}, ceil_mode, "avg_pool2d_backward");
  const DimVector os = pooled_sizes(self, g.oh, g.ow);
  SDK_CHECK_VALUE(grad_output.sizes().equals(os), "avg_pool2d_backward: expected grad_output of size ",
                  IntArrayRef(os), ", but got ", grad_output.sizes());
  if constexpr (!kCpu) {
    return make_tensor(self.sizes(), self.dtype(), self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    Tensor go = dense(grad_output, ct);
    Tensor gi = make_tensor(self.sizes(), ct, self.device());
    floating_dispatch(ct, "avg_pool2d_backward", [&](auto tag) {
      using T = decltype(tag);
      const T* pg = go.data_ptr<T>();
      T* po = gi.data_ptr<T>();
      std::fill(po, po + gi.numel(), T(0));
      parallel_for(0, g.planes, 1, [&](int64_t pb, int64_t pe) {
        for (int64_t p = pb; p < pe; ++p) {
          T* plane = po + p * g.h * g.w;
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const AvgWindow win = avg_window(g, oy, ox, count_include_pad, divisor_override);
              const T v = static_cast<T>(pg[(p * g.oh + oy) * g.ow + ox] / win.divisor);
              for (int64_t y = win.y0; y < win.y1; ++y) {
                for (int64_t xx = win.x0; xx < win.x1; ++xx) plane[y * g.w + xx] += v;
              }
            }
          }
        }
      });
    });
    return as_dtype(gi, self.dtype());
  }
}

// ---- adaptive average pooling ----
int64_t start_index(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
int64_t end_index(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

std::pair<int64_t, int64_t> adaptive_sizes(const Tensor& self, IntArrayRef output_size, const char* op) {
  SDK_CHECK_VALUE(output_size.size() == 2, op, ": output_size must be 2");
  SDK_CHECK_VALUE(self.dim() == 3 || self.dim() == 4, op, ": Expected 3D or 4D tensor, but got ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d) {
    SDK_CHECK_VALUE(self.size(d) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but "
                    "input has sizes ", self.sizes(), " with dimension ", d, " being empty");
  }
  SDK_CHECK_VALUE(output_size[0] >= 0 && output_size[1] >= 0, op, ": elements of output_size must be greater than or "
                  "equal to 0 but received {", output_size[0], ", ", output_size[1], "}");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op, ": expected a floating point input, got ",
                 scalar_type_name(self.dtype()));
  return {output_size[0], output_size[1]};
}

template <bool kCpu, bool kBackward>
void adaptive_loop(const Tensor& plane_src, const Tensor& dst, int64_t planes, int64_t h, int64_t w, int64_t oh,
                   int64_t ow, ScalarType ct) {
  floating_dispatch(ct, "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const T* src = plane_src.data_ptr<T>();
    T* out = dst.data_ptr<T>();
    if constexpr (kBackward) std::fill(out, out + dst.numel(), T(0));
    parallel_for(0, planes, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) {
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t y0 = start_index(oy, oh, h), y1 = end_index(oy, oh, h);
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t x0 = start_index(ox, ow, w), x1 = end_index(ox, ow, w);
            const double cnt = static_cast<double>((y1 - y0) * (x1 - x0));
            if constexpr (kBackward) {
              const T v = static_cast<T>(src[(p * oh + oy) * ow + ox] / cnt);
              for (int64_t y = y0; y < y1; ++y) {
                for (int64_t x = x0; x < x1; ++x) out[(p * h + y) * w + x] += v;
              }
            } else {
              double s = 0;
              for (int64_t y = y0; y < y1; ++y) {
                for (int64_t x = x0; x < x1; ++x) s += src[(p * h + y) * w + x];
              }
              out[(p * oh + oy) * ow + ox] = static_cast<T>(s / cnt);
            }
          }
        }
      }
    });
  });
}

template <bool kCpu>
Tensor adaptive_avg_pool2d_kernel(const Tensor& self, IntArrayRef output_size) {
  auto [oh, ow] = adaptive_sizes(self, output_size, "adaptive_avg_pool2d");
  const DimVector os = pooled_sizes(self, oh, ow);
  if constexpr (!kCpu) {
    return make_tensor(os, self.dtype(), self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    const int64_t h = self.size(-2), w = self.size(-1);
    Tensor x = dense(self, ct);
    Tensor out = make_tensor(os, ct, self.device());
    if (out.numel() > 0) adaptive_loop<kCpu, false>(x, out, self.numel() / (h * w), h, w, oh, ow, ct);
    return as_dtype(out, self.dtype());
  }
}

template <bool kCpu>
Tensor adaptive_avg_pool2d_backward_kernel(const Tensor& grad_output, const Tensor& self) {
  const int64_t oh = grad_output.size(-2), ow = grad_output.size(-1);
  adaptive_sizes(self, DimVector({oh, ow}), "adaptive_avg_pool2d_backward");
  if constexpr (!kCpu) {
    return make_tensor(self.sizes(), self.dtype(), self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    const int64_t h = self.size(-2), w = self.size(-1);
    Tensor go = dense(grad_output, ct);
    Tensor gi = make_tensor(self.sizes(), ct, self.device());
    adaptive_loop<kCpu, true>(go, gi, self.numel() / (h * w), h, w, oh, ow, ct);
    return as_dtype(gi, self.dtype());
  }
}

// adaptive_avg_pool2d: a mean over H and W for output (1, 1) (as PyTorch, which
// then needs no pooling kernel), else _adaptive_avg_pool2d.
Tensor adaptive_avg_pool2d_impl(const Tensor& self, IntArrayRef output_size) {
  adaptive_sizes(self, output_size, "adaptive_avg_pool2d");
  if (output_size[0] == 1 && output_size[1] == 1) return cx::mean(self, {-2, -1}, true);
  static const auto op = cx::typed<Tensor(const Tensor&, IntArrayRef)>("aten::_adaptive_avg_pool2d");
  return op.call(self, output_size);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
        "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)");
  m.def("max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
        "int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor");
  m.def("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor");
  m.def("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor");
  m.def("avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
        "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor");
  m.def("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor");
  m.def("_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor");
  m.def("_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor");
  m.impl("max_pool2d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::max_pool2d_impl);
  m.impl("adaptive_avg_pool2d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::adaptive_avg_pool2d_impl);
}

#define SDK_POOL_IMPLS(m, cpu)                                                                  \
  m.impl("max_pool2d_with_indices", &sdk::ops::max_pool2d_with_indices_kernel<cpu>);           \
  m.impl("max_pool2d_with_indices_backward", &sdk::ops::max_pool2d_backward_kernel<cpu>);      \
  m.impl("avg_pool2d", &sdk::ops::avg_pool2d_kernel<cpu>);                                     \
  m.impl("avg_pool2d_backward", &sdk::ops::avg_pool2d_backward_kernel<cpu>);                   \
  m.impl("_adaptive_avg_pool2d", &sdk::ops::adaptive_avg_pool2d_kernel<cpu>);                  \
  m.impl("_adaptive_avg_pool2d_backward", &sdk::ops::adaptive_avg_pool2d_backward_kernel<cpu>)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_POOL_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_POOL_IMPLS(m, false); }
