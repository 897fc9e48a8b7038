// aten::convolution and aten::convolution_backward (CPU and Meta kernels), direct
// and transposed, and the conv1d / conv2d / conv_transpose1d / conv_transpose2d
// composites over them.
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
// order. float16/bfloat16 compute in float32.
//
// Note [Transposed convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A transposed convolution (ConvTranspose, transposed=True) is the adjoint of
// the convolution whose input has the transposed one's output size: its weight
// (in, out / groups, kH, kW) is that convolution's weight (out' = in,
// in' / groups = out / groups). So ConvGeom always describes the direct
// convolution, "big" side (n, c, h, w) -> "small" side (n, o, oh, ow), and
// transposed only swaps which side is the operator's input:
//                 forward            grad_input        grad_weight           grad_bias
//   direct:       apply(x)           adjoint(g)        wgrad(big=x, g)       sum g over (n, oh, ow)
//   transposed:   adjoint(x)         apply(g)          wgrad(big=g, x)       sum g over (n, h, w)
// where apply is im2col + GEMM and adjoint is GEMM^T + col2im. The transposed
// output size is (H - 1) * stride - 2 * padding + dilation * (k - 1) +
// output_padding + 1 per dim, and output_padding must be smaller than the
// stride or the dilation (PyTorch's checks and messages; 1-D ones in the 2-D
// form PyTorch prints, height 1).
// Derivative (PyTorch's derivatives.yaml; the autograd table needs it):
//   convolution: input, weight, bias = convolution_backward(grad, input, weight, bias.sizes(), stride, padding,
//                dilation, transposed, output_padding, groups, grad_input_mask)
#include <algorithm>
#include <cstring>
#include <memory>
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
  bool transposed;       // Note [Transposed convolution]: the operator's input is the small side
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

ConvGeom transposed_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             const DimVector& s, const DimVector& p, const DimVector& d, IntArrayRef output_padding,
                             int64_t groups);

ConvGeom conv_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                       IntArrayRef output_padding, int64_t groups) {
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
  if (transposed) return transposed_geometry(input, weight, bias, s, p, d, output_padding, groups);
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

// Note [Transposed convolution]: input (n, in, H, W), weight (in, out / groups, kH, kW).
ConvGeom transposed_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                             const DimVector& s, const DimVector& p, const DimVector& d, IntArrayRef output_padding,
                             int64_t groups) {
  const int64_t spatial = weight.dim() - 2;
  const DimVector op = expand_param(output_padding, spatial, "output_padding");
  for (int64_t i = 0; i < spatial; ++i) SDK_CHECK_VALUE(op[i] >= 0, "negative output_padding is not supported");
  // (height, width): 1-D as height 1, as PyTorch's messages print it
  auto hw = [spatial](const DimVector& v, int64_t one) {
    return std::pair<int64_t, int64_t>(spatial == 2 ? v[0] : one, v[spatial - 1]);
  };
  const auto [oph, opw] = hw(op, 0);
  const auto [sh, sw] = hw(s, 1);
  const auto [dh, dw] = hw(d, 1);
  const auto [ph, pw] = hw(p, 0);
  SDK_CHECK_VALUE((oph < sh || oph < dh) && (opw < sw || opw < dw),
                  "output padding must be smaller than either stride or dilation, but got output_padding_height: ",
                  oph, " output_padding_width: ", opw, " stride_height: ", sh, " stride_width: ", sw,
                  " dilation_height: ", dh, " dilation_width: ", dw);
  SDK_CHECK_VALUE(groups > 0, "non-positive groups is not supported");
  SDK_CHECK_VALUE(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ",
                  groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  SDK_CHECK_VALUE(input.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(),
                  ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ",
                  input.size(1), " channels instead");
  const int64_t out_channels = weight.size(1) * groups;
  if (bias) {
    SDK_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == out_channels, "Given transposed=1, weight of size ",
                    weight.sizes(), ", expected bias to be 1-dimensional with ", out_channels,
                    " elements, but got bias of size ", bias->sizes(), " instead");
    SDK_CHECK_TYPE(bias->dtype() == input.dtype(), "Input type (", scalar_type_name(input.dtype()),
                   ") and bias type (", scalar_type_name(bias->dtype()), ") should be the same");
  }
  ConvGeom g{};
  g.spatial = spatial;
  g.transposed = true;
  g.n = input.size(0);
  g.oh = spatial == 2 ? input.size(2) : 1;  // the small side is the operator's input
  g.ow = input.size(-1);
  g.o = weight.size(0);
  g.c = out_channels;
  g.kh = spatial == 2 ? weight.size(2) : 1;
  g.kw = weight.size(-1);
  g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw, g.dh = dh, g.dw = dw;
  g.groups = groups;
  g.h = (g.oh - 1) * sh - 2 * ph + dh * (g.kh - 1) + oph + 1;
  g.w = (g.ow - 1) * sw - 2 * pw + dw * (g.kw - 1) + opw + 1;
  SDK_CHECK_VALUE(g.h >= 1 && g.w >= 1, "Given input size per channel: (", g.oh, " x ", g.ow,
                  "). Calculated output size per channel: (", g.h, " x ", g.w, "). Output size is too small");
  return g;
}

// The direct convolution's input side (n, c, h, w) and output side (n, o, oh, ow).
DimVector big_sizes(const ConvGeom& g) {
  if (g.spatial == 2) return DimVector({g.n, g.c, g.h, g.w});
  return DimVector({g.n, g.c, g.w});
}
DimVector small_sizes(const ConvGeom& g) {
  if (g.spatial == 2) return DimVector({g.n, g.o, g.oh, g.ow});
  return DimVector({g.n, g.o, g.ow});
}
// The operator's output: Note [Transposed convolution].
DimVector out_sizes(const ConvGeom& g) { return g.transposed ? big_sizes(g) : small_sizes(g); }

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
// Output rows [y0, y1) only (the whole map by default): cols is then [k, (y1 - y0) * ow].
template <typename T>
void im2col(const T* in, const ConvGeom& g, T* cols, int64_t y0 = 0, int64_t y1 = -1) {
  if (y1 < 0) y1 = g.oh;
  const int64_t ohw = (y1 - y0) * g.ow;
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T* row = cols + ((c * g.kh + ki) * g.kw + kj) * ohw;
        const int64_t off = kj * g.dw - g.pw;
        const ColRange r = valid_cols(off, g.sw, g.w, g.ow);
        for (int64_t y = y0; y < y1; ++y) {
          const int64_t iy = y * g.sh - g.ph + ki * g.dh;
          T* dst = row + (y - y0) * g.ow;
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
// Output rows [y0, y1) only, as im2col.
template <typename T>
void col2im(const T* cols, const ConvGeom& g, T* in, int64_t y0 = 0, int64_t y1 = -1) {
  if (y1 < 0) y1 = g.oh;
  const int64_t ohw = (y1 - y0) * g.ow;
  for (int64_t c = 0; c < g.cg(); ++c) {
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T* row = cols + ((c * g.kh + ki) * g.kw + kj) * ohw;
        const int64_t off = kj * g.dw - g.pw;
        const ColRange r = valid_cols(off, g.sw, g.w, g.ow);
        for (int64_t y = y0; y < y1; ++y) {
          const int64_t iy = y * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          T* __restrict dst = in + (c * g.h + iy) * g.w;
          const T* __restrict src = row + (y - y0) * g.ow;
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

// Note [Transposed convolution]'s pieces, over the direct convolution's
// big side (n, c, h, w) and small side (n, o, oh, ow).
// Note [Convolution threads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With more than one pool thread and more than one sample, samples (or, for
// grad_weight, parts of the batch) are split over the pool and every GEMM is
// single-threaded (Note [GEMMs inside parallel loops]); otherwise samples run
// in order and each GEMM uses the BLAS's threads (one sample of a big layer).
// The im2col buffers are not zero-filled: im2col writes every element.
template <typename F>
void over_samples(int64_t count, const F& f) {
  if (count > 1 && parallel_num_threads() > 1) {
    blas::SerialGemmScope serial_gemms;
    parallel_for(0, count, 1, f);
  } else {
    f(0, count);
  }
}

// Note [Convolution tiles]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// im2col (and col2im) work on tiles of output rows whose columns take about
// kTileBytes, not on a sample's whole [k, oh * ow] matrix (7.2 MB for a
// ResNet-18 block): a tile is still in L2 when the GEMM packs it, where the
// whole matrix went through memory twice. Each tile is one GEMM (the output,
// or grad_output, addressed with its full row stride). Measured on one core
// (8x64x56x56, 3x3, float32): forward 24.5 -> 20.3 ms, grad_input 23.5 ->
// 21.8 ms, grad_weight 22.8 -> 19.3 ms; 256 KiB and 1 MiB tiles were slower.
constexpr int64_t kTileBytes = int64_t{512} << 10;

// Output rows per tile (at least one).
int64_t tile_rows(const ConvGeom& g) {
  const int64_t row_bytes = std::max<int64_t>(1, g.k() * g.ow * int64_t(sizeof(float)));
  return std::clamp<int64_t>(kTileBytes / row_bytes, 1, std::max<int64_t>(1, g.oh));
}

template <typename T>
std::unique_ptr<T[]> uninitialised(int64_t count) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(count)]);
}

// dst[c * ld_dst + r] = src[r * cols + c] for an r x c block of a row-major source: tiles of 16 x 16, so
// both sides are read and written a cache line at a time.
template <typename T>
void transpose_into(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld_dst) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * cols + c];
      }
    }
  }
}

// apply: small = conv(big, w) (+ bias per small-side channel).
template <typename T>
void conv_apply(const ConvGeom& g, ScalarType ct, const T* big, const T* w, const T* b, T* small) {
  const int64_t big_sample = g.c * g.h * g.w, small_sample = g.o * g.ohw();
  const int64_t rows = tile_rows(g);
  over_samples(g.n, [&](int64_t nb, int64_t ne) {
    auto cols = uninitialised<T>(g.k() * rows * g.ow);
    for (int64_t n = nb; n < ne; ++n) {
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        T* o = small + n * small_sample + grp * g.og() * g.ohw();
        for (int64_t y0 = 0; y0 < g.oh; y0 += rows) {
          const int64_t y1 = std::min(g.oh, y0 + rows), width = (y1 - y0) * g.ow;
          im2col(big + n * big_sample + grp * g.cg() * g.h * g.w, g, cols.get(), y0, y1);
          blas::gemm(ct, false, false, g.og(), width, g.k(), 1.0, w + grp * g.og() * g.k(), g.k(), cols.get(), width,
                     0.0, o + y0 * g.ow, g.ohw());
        }
      }
      if (b) {
        for (int64_t oc = 0; oc < g.o; ++oc) {
          T* o = small + n * small_sample + oc * g.ohw();
          for (int64_t i = 0; i < g.ohw(); ++i) o[i] += b[oc];
        }
      }
    }
  });
}

// One tile of the adjoint: gcols = W^T * go[:, rows y0..y1) of group grp, scattered into the sample `big_sample`.
template <typename T>
void adjoint_tile(const ConvGeom& g, ScalarType ct, const T* w, const T* go, int64_t grp, int64_t y0, int64_t y1,
                  T* gcols, T* big_sample) {
  const int64_t width = (y1 - y0) * g.ow;
  blas::gemm(ct, true, false, g.k(), width, g.og(), 1.0, w + grp * g.og() * g.k(), g.k(), go + y0 * g.ow, g.ohw(), 0.0,
             gcols, width);
  col2im(gcols, g, big_sample + grp * g.cg() * g.h * g.w, y0, y1);
}

// adjoint: big = conv^T(small, w) (+ bias per big-side channel).
template <typename T>
void conv_adjoint(const ConvGeom& g, ScalarType ct, const T* small, const T* w, const T* b, T* big) {
  const int64_t big_sample = g.c * g.h * g.w, small_sample = g.o * g.ohw();
  const int64_t rows = tile_rows(g);
  over_samples(g.n, [&](int64_t nb, int64_t ne) {
    auto gcols = uninitialised<T>(g.k() * rows * g.ow);  // the GEMM writes it (beta 0)
    for (int64_t n = nb; n < ne; ++n) {
      std::fill(big + n * big_sample, big + (n + 1) * big_sample, T(0));  // col2im accumulates
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T* go = small + n * small_sample + grp * g.og() * g.ohw();
        for (int64_t y0 = 0; y0 < g.oh; y0 += rows) {
          const int64_t y1 = std::min(g.oh, y0 + rows);
          adjoint_tile(g, ct, w, go, grp, y0, y1, gcols.get(), big + n * big_sample);
        }
      }
      if (b) {
        for (int64_t c = 0; c < g.c; ++c) {
          T* o = big + n * big_sample + c * g.h * g.w;
          for (int64_t i = 0; i < g.h * g.w; ++i) o[i] += b[c];
        }
      }
    }
  });
}

// Note [Convolution weight gradient order]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// gw is a sum over samples. The batch is cut into parts whose number depends
// on the shapes only (at most kWeightGradParts, their buffers within
// kWeightGradPartBytes), never on the thread count; each part sums its samples
// in order into its own buffer (GEMMs with beta 1), the pool runs parts in
// parallel, and the parts are added in order. So the result is the same bits
// on one thread and on many.
constexpr int64_t kWeightGradParts = 16;
constexpr int64_t kWeightGradPartBytes = int64_t{32} << 20;

// wgrad: gw = sum over samples of small * cols(big)^T, accumulated as gw^T[k, og] per group (Note [Convolution
// GEMM layouts]) and transposed into gw at the end.
// With `w` and `big_grad` (a direct convolution's grad_input wanted too), the same pass also computes
// big_grad = adjoint(small) tile by tile, while each grad_output tile is in cache for both GEMMs.
template <typename T>
void conv_weight_grad(const ConvGeom& g, ScalarType ct, const T* big, const T* small, T* gw, const T* w = nullptr,
                      T* big_grad = nullptr) {
  const int64_t big_sample = g.c * g.h * g.w, small_sample = g.o * g.ohw(), wsize = g.o * g.k();
  const int64_t by_memory = std::max<int64_t>(1, kWeightGradPartBytes / std::max<int64_t>(1, wsize * int64_t(sizeof(T))));
  const int64_t parts = std::max<int64_t>(1, std::min({g.n, kWeightGradParts, by_memory}));
  std::vector<T> partial(static_cast<size_t>(parts * wsize));  // part p: per group, gw^T[k, og]
  const int64_t rows = tile_rows(g);
  over_samples(parts, [&](int64_t pb, int64_t pe) {
    auto cols = uninitialised<T>(g.k() * rows * g.ow);
    for (int64_t p = pb; p < pe; ++p) {
      T* acc = partial.data() + p * wsize;
      for (int64_t n = g.n * p / parts; n < g.n * (p + 1) / parts; ++n) {
        if (big_grad) std::fill(big_grad + n * big_sample, big_grad + (n + 1) * big_sample, T(0));
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          const T* go = small + n * small_sample + grp * g.og() * g.ohw();
          for (int64_t y0 = 0; y0 < g.oh; y0 += rows) {
            const int64_t y1 = std::min(g.oh, y0 + rows), width = (y1 - y0) * g.ow;
            // conv_adjoint's tile, in the cols buffer before im2col refills it
            if (big_grad) adjoint_tile(g, ct, w, go, grp, y0, y1, cols.get(), big_grad + n * big_sample);
            im2col(big + n * big_sample + grp * g.cg() * g.h * g.w, g, cols.get(), y0, y1);
            blas::gemm(ct, false, true, g.k(), g.og(), width, 1.0, cols.get(), width, go + y0 * g.ow, g.ohw(), 1.0,
                       acc + grp * g.k() * g.og(), g.og());
          }
        }
      }
    }
  });
  for (int64_t p = 1; p < parts; ++p) {
    const T* part = partial.data() + p * wsize;
    for (int64_t i = 0; i < wsize; ++i) partial[static_cast<size_t>(i)] += part[i];
  }
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    transpose_into(partial.data() + grp * g.k() * g.og(), g.k(), g.og(), gw + grp * g.og() * g.k(), g.k());
  }
}

// grad_bias: gout (n, channels, positions) summed over samples and positions (in double).
template <typename T>
void bias_grad(const T* gout, int64_t n, int64_t channels, int64_t positions, T* gb) {
  for (int64_t oc = 0; oc < channels; ++oc) {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* go = gout + (i * channels + oc) * positions;
      for (int64_t j = 0; j < positions; ++j) acc += static_cast<double>(go[j]);
    }
    gb[oc] = static_cast<T>(acc);
  }
}

template <bool kCpu>
Tensor convolution_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                          IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                          IntArrayRef output_padding, int64_t groups) {
  const ConvGeom g = conv_geometry(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
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
        const scalar_t* bp = b.defined() ? b.data_ptr<scalar_t>() : nullptr;
        if (g.transposed) {
          conv_adjoint<scalar_t>(g, ct, x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), bp, out.data_ptr<scalar_t>());
        } else {
          conv_apply<scalar_t>(g, ct, x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), bp, out.data_ptr<scalar_t>());
        }
      });
    }
    return finish(out, input.dtype());
  }
}

// Note [Transposed convolution]: the three gradients of either kind.
template <typename T>
void conv_backward(const ConvGeom& g, ScalarType ct, const T* gout, const T* in, const T* w, T* gin, T* gw, T* gb) {
  if (!g.transposed) {
    if (gin && gw) {
      conv_weight_grad<T>(g, ct, in, gout, gw, w, gin);  // one pass for both
    } else if (gin) {
      conv_adjoint<T>(g, ct, gout, w, nullptr, gin);
    } else if (gw) {
      conv_weight_grad<T>(g, ct, in, gout, gw);
    }
    if (gb) bias_grad<T>(gout, g.n, g.o, g.ohw(), gb);
  } else {
    if (gin) conv_apply<T>(g, ct, gout, w, nullptr, gin);
    if (gw) conv_weight_grad<T>(g, ct, gout, in, gw);
    if (gb) bias_grad<T>(gout, g.n, g.c, g.h * g.w, gb);
  }
}

template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> convolution_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                             const Tensor& weight, bool has_bias, IntArrayRef stride,
                                                             IntArrayRef padding, IntArrayRef dilation, bool transposed,
                                                             IntArrayRef output_padding, int64_t groups,
                                                             const bool mask[3]) {
  const ConvGeom g =
      conv_geometry(input, weight, std::nullopt, stride, padding, dilation, transposed, output_padding, groups);
  const DimVector expected = out_sizes(g);
  SDK_CHECK_VALUE(grad_output.sizes().equals(expected), "convolution_backward: expected grad_output of size ",
                  IntArrayRef(expected), ", but got ", grad_output.sizes());
  const int64_t out_channels = g.transposed ? g.c : g.o;
  if constexpr (!kCpu) {
    return {mask[0] ? make_tensor(input.sizes(), input.dtype(), input.device()) : Tensor(),
            mask[1] ? make_tensor(weight.sizes(), weight.dtype(), weight.device()) : Tensor(),
            mask[2] && has_bias ? make_tensor({out_channels}, input.dtype(), input.device()) : Tensor()};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor go = dense(grad_output, ct), x = dense(input, ct), w = dense(weight, ct);
    Tensor gi_c = mask[0] ? make_tensor(input.sizes(), ct, input.device()) : Tensor();
    Tensor gw_c = mask[1] ? make_tensor(weight.sizes(), ct, input.device()) : Tensor();
    Tensor gb_c = mask[2] && has_bias ? make_tensor({out_channels}, ct, input.device()) : Tensor();
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
  std::vector<int64_t> output_padding = s[base + 8].to_int_list();
  const int64_t groups = s[base + 9].to_int();
  bool mask[3];
  for (size_t i = 0; i < 3; ++i) mask[i] = cx::list_bool(s[base + 10], i);
  auto [gi, gw, gb] = convolution_backward_impl<kCpu>(grad_output, input, weight, has_bias, stride, padding, dilation,
                                                      transposed, output_padding, groups, mask);
  s.resize(base);
  s.emplace_back(std::move(gi));
  s.emplace_back(std::move(gw));
  s.emplace_back(std::move(gb));
}

// ---- conv1d / conv2d / conv_transpose1d / conv_transpose2d (CompositeImplicitAutograd, as PyTorch's) ----
// aten::convolution on the input with a batch dim of 1 added when it has none (and removed from the result).
template <int kSpatial>
Tensor conv_batched(const char* name, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                    IntArrayRef output_padding, int64_t groups) {
  SDK_CHECK_VALUE(input.dim() == kSpatial + 1 || input.dim() == kSpatial + 2, "Expected ", kSpatial + 1,
                  "D (unbatched) or ", kSpatial + 2, "D (batched) input to ", name, ", but got input of size: ",
                  input.sizes());
  const bool unbatched = input.dim() == kSpatial + 1;
  Tensor x = unbatched ? cx::unsqueeze(input, 0) : input;
  static const auto conv = cx::typed<Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                                            IntArrayRef, IntArrayRef, bool, IntArrayRef, int64_t)>("aten::convolution");
  Tensor out = conv.call(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  if (!unbatched) return out;
  DimVector sizes;
  for (int64_t d = 1; d < out.dim(); ++d) sizes.push_back(out.size(d));
  return view(out, sizes);
}

template <int kSpatial>
Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_batched<kSpatial>(kSpatial == 1 ? "conv1d" : "conv2d", input, weight, bias, stride, padding, dilation,
                                false, DimVector({0}), groups);
}

// Note [Transposed convolution]
template <int kSpatial>
Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                         IntArrayRef dilation) {
  return conv_batched<kSpatial>(kSpatial == 1 ? "conv_transpose1d" : "conv_transpose2d", input, weight, bias, stride,
                                padding, dilation, true, output_padding, groups);
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
  m.def("conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, SymInt[1] padding=0, "
        "SymInt[1] output_padding=0, SymInt groups=1, SymInt[1] dilation=1) -> Tensor");
  m.def("conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
        "SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, SymInt[2] dilation=1) -> Tensor");
  m.impl("conv1d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::conv_nd<1>);
  m.impl("conv_transpose1d", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::conv_transpose_nd<1>);
  m.impl("conv_transpose2d.input", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::conv_transpose_nd<2>);
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
