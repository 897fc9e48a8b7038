// aten::convolution and aten::convolution_backward (CPU and Meta kernels), and
// the conv1d / conv2d composites over them.
//
// Note [Convolution by im2col]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A 1-D or 2-D convolution (1-D runs as 2-D with height 1) of one sample and
// one group is a GEMM: out[Og, OH*OW] = W[Og, Cg*KH*KW] * cols[Cg*KH*KW, OH*OW],
// where cols (im2col) holds, for each output position, the input patch it
// sees (zero outside the padded border). The backward reuses it:
//   grad_input:  gcols = W^T * grad_out, scattered back (col2im, accumulating);
//   grad_weight: sum over samples of grad_out * cols^T;
//   grad_bias:   grad_out summed over samples and positions.
// GEMM is ops/detail/Blas.h (OpenBLAS when loaded). Samples are split over
// threads for the forward and grad_input (each thread its own cols buffer);
// grad_weight accumulates sample by sample (beta = 1), so the sum has one
// order. float16/bfloat16 compute in float32. Transposed convolution is not
// implemented (NotImplementedError naming it).
// Derivative (PyTorch's derivatives.yaml; the autograd table needs it):
//   convolution: input, weight, bias = convolution_backward(grad, input, weight, bias.sizes(), stride, padding,
//                dilation, transposed, output_padding, groups, grad_input_mask)
#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/Blas.h>
#include <backend_sdk/ops/detail/CompositeOps.h>

namespace sdk::ops {
namespace {

struct ConvGeom {
  int64_t n, c, h, w;    // input
  int64_t o, kh, kw;     // weight (o, c / groups, kh, kw)
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t oh, ow;
  int64_t spatial;       // 1 or 2
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t k() const { return cg() * kh * kw; }
  int64_t ohw() const { return oh * ow; }
};

DimVector expand_param(IntArrayRef p, int64_t spatial, const char* name) {
  SDK_CHECK_VALUE(static_cast<int64_t>(p.size()) == 1 || static_cast<int64_t>(p.size()) == spatial, "expected ",
                  name, " to be a single integer value or a list of ", spatial,
                  " values to match the convolution dimensions, but got ", name, "=", p);
  DimVector out;
  for (int64_t i = 0; i < spatial; ++i) out.push_back(p.size() == 1 ? p[0] : p[static_cast<size_t>(i)]);
  return out;
}

ConvGeom conv_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed, int64_t groups) {
  SDK_CHECK_NOT_IMPLEMENTED(!transposed, "convolution: transposed convolution (ConvTranspose) is not implemented "
                            "by the SDK yet");
  const int64_t dim = weight.dim();
  SDK_CHECK_NOT_IMPLEMENTED(dim == 3 || dim == 4, "convolution: only 1-D and 2-D convolutions are implemented, got a ",
                            dim, "-D weight of size ", weight.sizes());
  SDK_CHECK_VALUE(input.dim() == dim, "Expected ", dim, "-dimensional input for ", dim, "-dimensional weight ",
                  weight.sizes(), ", but got ", input.dim(), "-dimensional input of size ", input.sizes(),
                  " instead");
  SDK_CHECK_TYPE(input.dtype() == weight.dtype(), "Input type (", scalar_type_name(input.dtype()),
                 ") and weight type (", scalar_type_name(weight.dtype()), ") should be the same");
  SDK_CHECK_TYPE(is_floating_type(input.dtype()), "convolution: expected a floating point input, got ",
                 scalar_type_name(input.dtype()));
  check_same_device("convolution", input, weight);
  const int64_t spatial = dim - 2;
  DimVector s = expand_param(stride, spatial, "stride"), p = expand_param(padding, spatial, "padding"),
            d = expand_param(dilation, spatial, "dilation");
  for (int64_t i = 0; i < spatial; ++i) {
    SDK_CHECK_VALUE(s[i] > 0, "non-positive stride is not supported");
    SDK_CHECK_VALUE(p[i] >= 0, "negative padding is not supported");
    SDK_CHECK_VALUE(d[i] > 0, "dilation should be greater than zero");
  }
  SDK_CHECK_VALUE(groups > 0, "non-positive groups is not supported");
  ConvGeom g{};
  g.spatial = spatial;
  g.n = input.size(0);
  g.c = input.size(1);
  g.h = spatial == 2 ? input.size(2) : 1;
  g.w = input.size(-1);
  g.o = weight.size(0);
  g.kh = spatial == 2 ? weight.size(2) : 1;
  g.kw = weight.size(-1);
  g.sh = spatial == 2 ? s[0] : 1;
  g.sw = s[spatial - 1];
  g.ph = spatial == 2 ? p[0] : 0;
  g.pw = p[spatial - 1];
  g.dh = spatial == 2 ? d[0] : 1;
  g.dw = d[spatial - 1];
  g.groups = groups;
  SDK_CHECK_VALUE(g.o % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
                  " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  SDK_CHECK_VALUE(g.c == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
                  ", expected input", input.sizes(), " to have ", weight.size(1) * groups,
                  " channels, but got ", g.c, " channels instead");
  if (bias) {
    SDK_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == g.o, "Given weight of size ", weight.sizes(),
                    ", expected bias to be 1-dimensional with ", g.o, " elements, but got bias of size ",
                    bias->sizes(), " instead");
    SDK_CHECK_TYPE(bias->dtype() == input.dtype(), "Input type (", scalar_type_name(input.dtype()),
                   ") and bias type (", scalar_type_name(bias->dtype()), ") should be the same");
  }
  const int64_t eh = g.h + 2 * g.ph, ew = g.w + 2 * g.pw;
  const int64_t kh_eff = g.dh * (g.kh - 1) + 1, kw_eff = g.dw * (g.kw - 1) + 1;
  if (eh < kh_eff || ew < kw_eff) {
    if (spatial == 2) {
      SDK_THROW(Value, "Calculated padded input size per channel: (", eh, " x ", ew, "). Kernel size: (", kh_eff,
                " x ", kw_eff, "). Kernel size can't be greater than actual input size");
    }
    SDK_THROW(Value, "Calculated padded input size per channel: (", ew, "). Kernel size: (", kw_eff,
              "). Kernel size can't be greater than actual input size");
  }
  g.oh = (eh - kh_eff) / g.sh + 1;
  g.ow = (ew - kw_eff) / g.sw + 1;
  return g;
}

DimVector out_sizes(const ConvGeom& g) {
  if (g.spatial == 2) return DimVector({g.n, g.o, g.oh, g.ow});
  return DimVector({g.n, g.o, g.ow});
}

using cx::compute_type;
using cx::dense;
using cx::floating_dispatch;
Tensor finish(const Tensor& result, ScalarType want) { return cx::as_dtype(result, want); }

// The output columns x < ow whose input column x*sw + off lies inside [0, w): [x0, x1) (empty when none).
struct ColRange {
  int64_t x0, x1;
};
inline ColRange valid_cols(int64_t off, int64_t sw, int64_t w, int64_t ow) {
  const int64_t x0 = std::min<int64_t>(off >= 0 ? 0 : (-off + sw - 1) / sw, ow);
  const int64_t x1 = std::max<int64_t>(x0, std::min<int64_t>(w - off <= 0 ? 0 : (w - off - 1) / sw + 1, ow));
  return {x0, x1};
}

// cols[(c, ki, kj), (y, x)] = in[c, y*sh - ph + ki*dh, x*sw - pw + kj*dw] (0 outside). The in-range columns
// of an output row are found once per (kj), so the copy has no per-element test (a memcpy at stride 1).
template <typename T>
void im2col(const T* in, const ConvGeom& g, T* cols) {
  const int64_t ohw = g.ohw();
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T* row = cols + ((c * g.kh + ki) * g.kw + kj) * ohw;
        const int64_t off = kj * g.dw - g.pw;
        const ColRange r = valid_cols(off, g.sw, g.w, g.ow);
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + ki * g.dh;
          T* dst = row + y * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(dst, dst + g.ow, T(0));
            continue;
          }
          const T* src = in + (c * g.h + iy) * g.w;  // input column x * sw + off, in range for x in [x0, x1)
          std::fill(dst, dst + r.x0, T(0));
          if (g.sw == 1) {
            if (r.x1 > r.x0) std::memcpy(dst + r.x0, src + r.x0 + off, static_cast<size_t>(r.x1 - r.x0) * sizeof(T));
          } else {
            for (int64_t x = r.x0; x < r.x1; ++x) dst[x] = src[x * g.sw + off];
          }
          std::fill(dst + r.x1, dst + g.ow, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col: in[...] += cols[...].
template <typename T>
void col2im(const T* cols, const ConvGeom& g, T* in) {
  const int64_t ohw = g.ohw();
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T* row = cols + ((c * g.kh + ki) * g.kw + kj) * ohw;
        const int64_t off = kj * g.dw - g.pw;
        const ColRange r = valid_cols(off, g.sw, g.w, g.ow);
        for (int64_t y = 0; y < g.oh; ++y) {
          const int64_t iy = y * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          T* __restrict dst = in + (c * g.h + iy) * g.w;
          const T* __restrict src = row + y * g.ow;
          if (g.sw == 1) {
            for (int64_t x = r.x0; x < r.x1; ++x) dst[x + off] += src[x];
          } else {
            for (int64_t x = r.x0; x < r.x1; ++x) dst[x * g.sw + off] += src[x];
          }
        }
      }
    }
  }
}

template <typename T>
void conv_forward(const ConvGeom& g, ScalarType ct, const T* in, const T* w, const T* b, T* out) {
  const int64_t in_sample = g.c * g.h * g.w, out_sample = g.o * g.ohw();
  parallel_for(0, g.n, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> cols(static_cast<size_t>(g.k() * g.ohw()));
    for (int64_t n = nb; n < ne; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(in + n * in_sample + grp * g.cg() * g.h * g.w, g, cols.data());
        T* o = out + n * out_sample + grp * g.og() * g.ohw();
        blas::gemm(ct, false, false, g.og(), g.ohw(), g.k(), 1.0, w + grp * g.og() * g.k(), g.k(), cols.data(),
                   g.ohw(), 0.0, o, g.ohw());
      }
      if (b) {
        for (int64_t oc = 0; oc < g.o; ++oc) {
          T* o = out + n * out_sample + oc * g.ohw();
          for (int64_t i = 0; i < g.ohw(); ++i) o[i] += b[oc];
        }
      }
    }
  });
}

template <bool kCpu>
Tensor convolution_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                          IntArrayRef output_padding, int64_t groups) {
  (void)output_padding;
  const ConvGeom g = conv_geometry(input, weight, bias, stride, padding, dilation, transposed, groups);
  if constexpr (!kCpu) {
    return make_tensor(out_sizes(g), input.dtype(), input.device());
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor x = dense(input, ct), w = dense(weight, ct);
    Tensor b = bias ? dense(*bias, ct) : Tensor();
    Tensor out = make_tensor(out_sizes(g), ct, input.device());
    if (out.numel() > 0) {
      floating_dispatch(ct, "convolution", [&](auto tag) {
        using scalar_t = decltype(tag);
        conv_forward<scalar_t>(g, ct, x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                               b.defined() ? b.data_ptr<scalar_t>() : nullptr, out.data_ptr<scalar_t>());
      });
    }
    return finish(out, input.dtype());
  }
}

template <typename T>
void conv_backward(const ConvGeom& g, ScalarType ct, const T* gout, const T* in, const T* w, T* gin, T* gw, T* gb) {
  const int64_t in_sample = g.c * g.h * g.w, out_sample = g.o * g.ohw();
  if (gin) {
    std::fill(gin, gin + g.n * in_sample, T(0));
    parallel_for(0, g.n, 1, [&](int64_t nb, int64_t ne) {
      std::vector<T> gcols(static_cast<size_t>(g.k() * g.ohw()));
      for (int64_t n = nb; n < ne; ++n) {
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const T* go = gout + n * out_sample + grp * g.og() * g.ohw();
          blas::gemm(ct, true, false, g.k(), g.ohw(), g.og(), 1.0, w + grp * g.og() * g.k(), g.k(), go, g.ohw(), 0.0,
                     gcols.data(), g.ohw());
          col2im(gcols.data(), g, gin + n * in_sample + grp * g.cg() * g.h * g.w);
        }
      }
    });
  }
  if (gw) {
    std::fill(gw, gw + g.o * g.k(), T(0));
    std::vector<T> cols(static_cast<size_t>(g.k() * g.ohw()));
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        im2col(in + n * in_sample + grp * g.cg() * g.h * g.w, g, cols.data());
        const T* go = gout + n * out_sample + grp * g.og() * g.ohw();
        blas::gemm(ct, false, true, g.og(), g.k(), g.ohw(), 1.0, go, g.ohw(), cols.data(), g.ohw(), 1.0,
                   gw + grp * g.og() * g.k(), g.k());
      }
    }
  }
  if (gb) {
    for (int64_t oc = 0; oc < g.o; ++oc) {
      double acc = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* go = gout + n * out_sample + oc * g.ohw();
        for (int64_t i = 0; i < g.ohw(); ++i) acc += static_cast<double>(go[i]);
      }
      gb[oc] = static_cast<T>(acc);
    }
  }
}

template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> convolution_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                             const Tensor& weight, bool has_bias, IntArrayRef stride,
                                                             IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                                             int64_t groups, const bool mask[3]) {
  const ConvGeom g = conv_geometry(input, weight, std::nullopt, stride, padding, dilation, transposed, groups);
  const DimVector expected = out_sizes(g);
  SDK_CHECK_VALUE(grad_output.sizes().equals(expected), "convolution_backward: expected grad_output of size ",
                  IntArrayRef(expected), ", but got ", grad_output.sizes());
  Tensor gi = mask[0] ? make_tensor(input.sizes(), input.dtype(), input.device()) : Tensor();
  Tensor gw = mask[1] ? make_tensor(weight.sizes(), weight.dtype(), weight.device()) : Tensor();
  Tensor gb = mask[2] && has_bias ? make_tensor({g.o}, input.dtype(), input.device()) : Tensor();
  if constexpr (!kCpu) {
    return {gi, gw, gb};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor go = dense(grad_output, ct), x = dense(input, ct), w = dense(weight, ct);
    Tensor gi_c = gi.defined() ? make_tensor(input.sizes(), ct, input.device()) : Tensor();
    Tensor gw_c = gw.defined() ? make_tensor(weight.sizes(), ct, input.device()) : Tensor();
    Tensor gb_c = gb.defined() ? make_tensor({g.o}, ct, input.device()) : Tensor();
    floating_dispatch(ct, "convolution_backward", [&](auto tag) {
      using scalar_t = decltype(tag);
      conv_backward<scalar_t>(g, ct, go.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(),
                              gi_c.defined() ? gi_c.data_ptr<scalar_t>() : nullptr,
                              gw_c.defined() ? gw_c.data_ptr<scalar_t>() : nullptr,
                              gb_c.defined() ? gb_c.data_ptr<scalar_t>() : nullptr);
    });
    return {gi_c.defined() ? finish(gi_c, input.dtype()) : Tensor(),
            gw_c.defined() ? finish(gw_c, weight.dtype()) : Tensor(),
            gb_c.defined() ? finish(gb_c, input.dtype()) : Tensor()};
  }
}

// convolution_backward's schema has `bool[3] output_mask`: Note [Boxed kernels for bool lists].
template <bool kCpu>
void convolution_backward_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 11;
  Tensor grad_output = s[base + 0].to_tensor(), input = s[base + 1].to_tensor(), weight = s[base + 2].to_tensor();
  const bool has_bias = !s[base + 3].is_none();
  std::vector<int64_t> stride = s[base + 4].to_int_list(), padding = s[base + 5].to_int_list(),
                       dilation = s[base + 6].to_int_list();
  const bool transposed = s[base + 7].to_bool();
  const int64_t groups = s[base + 9].to_int();
  bool mask[3];
  for (size_t i = 0; i < 3; ++i) mask[i] = cx::list_bool(s[base + 10], i);
  auto [gi, gw, gb] = convolution_backward_impl<kCpu>(grad_output, input, weight, has_bias, stride, padding, dilation,
                                                      transposed, groups, mask);
  s.resize(base);
  s.emplace_back(std::move(gi));
  s.emplace_back(std::move(gw));
  s.emplace_back(std::move(gb));
}

// ---- conv1d / conv2d (CompositeImplicitAutograd, as PyTorch's) ----
template <int kSpatial>
Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  const char* name = kSpatial == 1 ? "conv1d" : "conv2d";
  SDK_CHECK_VALUE(input.dim() == kSpatial + 1 || input.dim() == kSpatial + 2, "Expected ", kSpatial + 1,
                  "D (unbatched) or ", kSpatial + 2, "D (batched) input to ", name, ", but got input of size: ",
                  input.sizes());
  const bool unbatched = input.dim() == kSpatial + 1;
  Tensor x = unbatched ? cx::unsqueeze(input, 0) : input;
  static const auto conv = cx::typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                                            IntArrayRef, IntArrayRef, bool, IntArrayRef, int64_t)>("aten::convolution");
  Tensor out = conv.call(x, weight, bias, stride, padding, dilation, false, DimVector({0}), groups);
  if (!unbatched) return out;
  DimVector sizes;
  for (int64_t d = 1; d < out.dim(); ++d) sizes.push_back(out.size(d));
  return view(out, sizes);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
        "bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor");
  m.def("convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, "
        "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, "
        "bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  m.def("conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, "
        "SymInt[1] dilation=1, SymInt groups=1) -> Tensor");
  m.def("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
        "SymInt[2] dilation=1, SymInt groups=1) -> Tensor");
  m.impl("conv1d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::conv_nd<1>);
  m.impl("conv2d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::conv_nd<2>);
}

SDK_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("convolution", &sdk::ops::convolution_kernel<true>);
  m.impl("convolution_backward", sdk::CppFunction::make_from_boxed(&sdk::ops::convolution_backward_boxed<true>));
}
SDK_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("convolution", &sdk::ops::convolution_kernel<false>);
  m.impl("convolution_backward", sdk::CppFunction::make_from_boxed(&sdk::ops::convolution_backward_boxed<false>));
}
