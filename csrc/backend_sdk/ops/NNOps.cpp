// nn operators that are compositions: embedding, dropout, attention, padding,
// upsampling and einsum; plus the explicit native_dropout /
// embedding_dense_backward pairs PyTorch's autograd formulas use.
//
// Note [nn composites]
// ~~~~~~~~~~~~~~~~~~~~
// CompositeImplicitAutograd here (differentiable through the operators they
// call, no formula of their own), as in PyTorch unless said otherwise:
//   dropout, scaled_dot_product_attention, _scaled_dot_product_attention_math,
//   pad, einsum, conv/pool wrappers (Convolution.cpp, Pooling.cpp);
//   embedding (CompositeExplicitAutograd with a formula in PyTorch): here an
//     index_select whose rows at padding_idx are taken below autograd, so the
//     padding row gets no gradient, as PyTorch's embedding_backward;
//   constant_pad_nd (CompositeExplicitAutograd in PyTorch): cat with constant
//     blocks and narrow for negative pads: the gradient is PyTorch's formula's
//     (the gradient narrowed back);
//   reflection_pad1d/2d, replication_pad1d/2d, upsample_nearest2d,
//   upsample_bilinear2d (kernels with formulas in PyTorch): index_select with
//     host-computed indices and lerp weights: same values, same gradients
//     (index_select's backward is index_add, what their backward kernels do).
// native_dropout is CompositeExplicitAutograd (bernoulli mask times input times
// 1/(1-p)) and native_dropout_backward CompositeExplicitAutograd; their formula
// (native_dropout: input = native_dropout_backward(grad, result1, 1/(1-p))) is
// for the autograd table. embedding_dense_backward has CPU and Meta kernels
// (formula: embedding: weight = embedding_dense_backward(grad, indices,
// weight.size(0), padding_idx, scale_grad_by_freq)).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include <backend_sdk/ops/detail/Autograd.h>
#include <backend_sdk/ops/detail/CompositeOps.h>
#include <backend_sdk/ops/Parallel.h>

namespace sdk::ops {
namespace {

using namespace cx;

// ---- embedding ----
Tensor embedding_impl(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                      bool sparse) {
  SDK_CHECK_VALUE(weight.dim() == 2, "'weight' must be 2-D");
  SDK_CHECK_TYPE(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32,
                 "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
                 "but got ", scalar_type_name(indices.dtype()), " instead (while checking arguments for embedding)");
  SDK_CHECK_NOT_IMPLEMENTED(!sparse, "embedding: sparse gradients are not supported by the SDK");
  SDK_CHECK_NOT_IMPLEMENTED(!scale_grad_by_freq, "embedding: scale_grad_by_freq=True is not supported by the SDK yet");
  const int64_t n = indices.numel();
  Tensor flat = reshape(indices, {n});
  Tensor rows = cx::index_select(weight, 0, flat);
  if (padding_idx >= 0) {
    Tensor frozen;
    {
      ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
      frozen = cx::index_select(weight, 0, flat);
    }
    Tensor keep = view(ne_s(flat, Scalar(padding_idx)), {n, 1});
    rows = where(keep, rows, frozen);
  }
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.size(1));
  return view(rows, sizes);
}

// Note [Deterministic embedding backward]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The gradient (num_weights x d) is split over threads by *destination* rows:
// a thread zeroes its block of rows, then scans every index in order and adds
// the gradient rows whose index falls in its block. Each weight row thus sums
// its contributions in index order whatever the thread count or the blocks,
// so the result is bit-identical to the serial loop's (PyTorch's CPU kernel is
// deterministic too), and the zero-fill, most of the work for a large
// vocabulary, is spread over the threads. Indices are checked first, so a bad
// one raises before anything is written.
template <typename U>
void embedding_backward_rows(const U* pg, const int64_t* pi, int64_t n, int64_t d, int64_t num_weights,
                             int64_t padding_idx, const std::vector<int64_t>& counts, U* po) {
  const int64_t grain_rows = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(d, 1));
  parallel_for(0, num_weights, grain_rows, [&](int64_t r0, int64_t r1) {
    std::fill(po + r0 * d, po + r1 * d, U(0));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = pi[i];
      if (r < r0 || r >= r1 || r == padding_idx) continue;
      U* dst = po + r * d;
      const U* src = pg + i * d;
      if (counts.empty()) {
        for (int64_t j = 0; j < d; ++j) dst[j] += src[j];
      } else {
        const U scale = U(1) / static_cast<U>(counts[static_cast<size_t>(r)]);
        for (int64_t j = 0; j < d; ++j) dst[j] += src[j] * scale;
      }
    }
  });
}

template <bool kCpu>
Tensor embedding_dense_backward_kernel(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                       int64_t padding_idx, bool scale_grad_by_freq) {
  const int64_t n = indices.numel();
  const int64_t d = grad_output.dim() == 0 ? 1 : grad_output.size(-1);
  SDK_CHECK_VALUE(grad_output.numel() == n * d, "embedding_dense_backward: grad_output of size ", grad_output.sizes(),
                  " does not match indices of size ", indices.sizes());
  if constexpr (!kCpu) {
    return make_tensor({num_weights, d}, grad_output.dtype(), grad_output.device());
  } else {
    const ScalarType ct = compute_type(grad_output.dtype());
    Tensor g = dense(grad_output, ct), idx = dense(indices, ScalarType::Int64);
    Tensor out = make_tensor({num_weights, d}, ct, grad_output.device());
    const int64_t* pi = idx.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      SDK_CHECK_INDEX(pi[i] >= 0 && pi[i] < num_weights, "index out of range in self");
    }
    std::vector<int64_t> counts;
    if (scale_grad_by_freq) {
      counts.assign(static_cast<size_t>(num_weights), 0);
      for (int64_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(pi[i])];
    }
    floating_dispatch(ct, "embedding_dense_backward", [&](auto tag) {
      using U = decltype(tag);
      embedding_backward_rows<U>(g.data_ptr<U>(), pi, n, d, num_weights, padding_idx, counts, out.data_ptr<U>());
    });
    return as_dtype(out, grad_output.dtype());
  }
}

// ---- dropout ----
// The keep-mask (bool, p_keep = 1 - p) drawn below autograd: random, never differentiated.
Tensor keep_mask(const Tensor& input, double p) {
  ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
  return ne_s(bernoulli_p(input, 1.0 - p), Scalar(0.0));
}

void check_p(double p, const char* op) {
  SDK_CHECK_VALUE(p >= 0 && p <= 1, op, " probability has to be between 0 and 1, but got ", p);
}

std::tuple<Tensor, Tensor> native_dropout_impl(const Tensor& input, double p, std::optional<bool> train) {
  check_p(p, "dropout");
  SDK_CHECK_TYPE(is_floating_type(input.dtype()), "native_dropout: expected a floating point input, got ",
                 scalar_type_name(input.dtype()));
  if (train.has_value() && !*train) {
    return {cx::clone(input), full(input.sizes(), Scalar(true), ScalarType::Bool, input.device())};
  }
  if (p == 1.0) return {mul(input, Scalar(0.0)), full(input.sizes(), Scalar(false), ScalarType::Bool, input.device())};
  Tensor mask = keep_mask(input, p);
  return {mul(mul(input, mask), Scalar(1.0 / (1.0 - p))), mask};
}

Tensor native_dropout_backward_impl(const Tensor& grad_output, const Tensor& mask, double scale) {
  SDK_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "Mask should be Bool Scalar Type", scalar_type_name(mask.dtype()));
  return mul(mul(grad_output, mask), Scalar(scale));
}

Tensor dropout_impl(const Tensor& input, double p, bool train) {
  check_p(p, "dropout");
  if (!train || p == 0.0 || input.numel() == 0) return input;
  if (p == 1.0) return mul(input, Scalar(0.0));
  return mul(mul(input, keep_mask(input, p)), Scalar(1.0 / (1.0 - p)));
}

// ---- scaled dot-product attention ----
std::tuple<Tensor, Tensor> sdpa_math(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                     const std::optional<Tensor>& dropout_mask, std::optional<double> scale,
                                     bool enable_gqa) {
  SDK_CHECK_VALUE(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, "scaled_dot_product_attention: expected query, key "
                  "and value to be at least 2-D, got ", q.dim(), "-D, ", k.dim(), "-D and ", v.dim(), "-D");
  SDK_CHECK_VALUE(q.size(-1) == k.size(-1), "scaled_dot_product_attention: expected query and key to have the same "
                  "last dimension (embedding size), got ", q.size(-1), " and ", k.size(-1));
  SDK_CHECK_VALUE(k.size(-2) == v.size(-2), "scaled_dot_product_attention: expected key and value to have the same "
                  "sequence length (dim -2), got ", k.size(-2), " and ", v.size(-2));
  SDK_CHECK_TYPE(q.dtype() == k.dtype() && q.dtype() == v.dtype(), "Expected query, key, and value to have the same "
                 "dtype, but got query.dtype: ", scalar_type_name(q.dtype()), " key.dtype: ",
                 scalar_type_name(k.dtype()), " and value.dtype: ", scalar_type_name(v.dtype()), " instead.");
  SDK_CHECK_VALUE(!(is_causal && attn_mask), "_scaled_dot_product_attention: Explicit attn_mask should not be set "
                  "when is_causal=True");
  Tensor key = k, value = v;
  if (enable_gqa && q.dim() >= 3 && k.size(-3) != q.size(-3)) {
    SDK_CHECK_VALUE(q.size(-3) % k.size(-3) == 0, "scaled_dot_product_attention: number of heads in key/value must "
                    "divide number of heads in query");
    static const auto ri = typed<Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>)>(
        "aten::repeat_interleave.self_int");
    key = ri.call(k, q.size(-3) / k.size(-3), k.dim() - 3, std::nullopt);
    value = ri.call(v, q.size(-3) / v.size(-3), v.dim() - 3, std::nullopt);
  }
  const int64_t L = q.size(-2), S = key.size(-2);
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  // q * sqrt(scale) and k * sqrt(scale), as PyTorch's math path (keeps the product's magnitude balanced).
  const double root = std::sqrt(sc);
  Tensor qs = mul(q, Scalar(root)), ks = mul(key, Scalar(root));
  // Note [Attention as bmm]: with the same batch dims on q, k and v (no broadcasting), the products are
  // bmm over the folded batch (k's transpose a strided operand BLAS reads directly), not matmul's
  // broadcasting path (whose expand views cost a zero-filled gradient buffer each in backward).
  const bool fold = q.dim() >= 3 && key.dim() == q.dim() && value.dim() == q.dim() && [&] {
    for (int64_t d = 0; d < q.dim() - 2; ++d)
      if (key.size(d) != q.size(d) || value.size(d) != q.size(d)) return false;
    return true;
  }();
  static const auto bmm = typed<Tensor(const Tensor&, const Tensor&)>("aten::bmm");
  DimVector score_sizes(q.sizes());  // q's batch dims, then (L, S)
  score_sizes[score_sizes.size() - 1] = S;
  const int64_t batch = L * S == 0 ? 0 : [&] {
    int64_t b = 1;
    for (int64_t d = 0; d < q.dim() - 2; ++d) b *= q.size(d);
    return b;
  }();
  auto fold3 = [&](const Tensor& t) { return cx::reshape(t, {batch, t.size(-2), t.size(-1)}); };
  // Folded: scores is [batch, L, S] (a fresh tensor, not a view); otherwise matmul's broadcast shape.
  Tensor scores = fold ? bmm.call(fold3(qs), transpose(fold3(ks), 1, 2)) : matmul(qs, transpose(ks, -2, -1));
  // Note [Attention masks in place]: a causal or boolean mask is written into the fresh scores as -inf
  // with grad mode off (no float mask, no where and its backward): softmax gives exactly 0 there, so its
  // backward already gives those scores a zero gradient, and every higher derivative is zero there too
  // (each term of softmax's derivatives has y_i or y_j of a masked entry as a factor). The scores are
  // saved by no node (bmm saves its operands, softmax its result), so the write invalidates nothing.
  auto mask_in_place = [&](const Tensor& keep) {
    static const auto fill = typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>("aten::masked_fill_.Scalar");
    Tensor drop = logical_not(keep);
    if (fold && drop.dim() > 2) drop = fold3(cx::expand(drop, score_sizes));
    const bool grad = autograd::is_grad_enabled();
    autograd::set_grad_enabled(false);
    try {
      fill.call(scores, drop, Scalar(-INFINITY));
    } catch (...) {
      autograd::set_grad_enabled(grad);
      throw;
    }
    autograd::set_grad_enabled(grad);
  };
  if (is_causal) {
    Tensor rows = view(arange(L, q.device()), {L, 1});
    Tensor cols = view(arange(S, q.device()), {1, S});
    mask_in_place(le(cols, rows));
  } else if (attn_mask && attn_mask->dtype() == ScalarType::Bool) {
    mask_in_place(*attn_mask);
  } else if (attn_mask) {
    scores = fold ? fold3(add(view(scores, score_sizes), *attn_mask)) : add(scores, *attn_mask);
  }
  Tensor attn = softmax(scores, -1);
  Tensor v_used = value;
  if (dropout_p > 0.0) {
    if (dropout_mask) {
      // PyTorch's: the weights returned are masked, the 1 / (1 - p) scaling goes on the values
      attn = mul(attn, fold ? fold3(cx::expand(*dropout_mask, score_sizes)) : *dropout_mask);
      v_used = mul(value, Scalar(1.0 / (1.0 - dropout_p)));
    } else {
      attn = dropout_impl(attn, dropout_p, true);
    }
  }
  if (!fold) return {matmul(attn, v_used), attn};
  DimVector out_sizes(q.sizes());
  out_sizes[out_sizes.size() - 1] = value.size(-1);
  return {view(bmm.call(attn, fold3(v_used)), out_sizes), view(attn, score_sizes)};
}

Tensor sdpa_impl(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& attn_mask,
                 double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  return std::get<0>(sdpa_math(q, k, v, attn_mask, dropout_p, is_causal, std::nullopt, scale, enable_gqa));
}

// ---- padding ----
Tensor constant_pad_nd_impl(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  SDK_CHECK_VALUE(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  const int64_t npad = static_cast<int64_t>(pad.size()) / 2;
  SDK_CHECK_VALUE(npad <= self.dim(), "Length of pad should be no more than twice the number of dimensions of the "
                  "input. Pad length is ", pad.size(), " while the input has ", self.dim(), " dimensions.");
  Tensor out = self;
  for (int64_t i = 0; i < npad; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t before = pad[static_cast<size_t>(2 * i)], after = pad[static_cast<size_t>(2 * i + 1)];
    const int64_t n = out.size(d);
    SDK_CHECK_VALUE(n + before + after >= 0, "The input size ", n, ", plus negative padding ", before, " and ", after,
                    " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
    // negative pads crop
    int64_t start = before < 0 ? -before : 0;
    int64_t len = n - start - (after < 0 ? -after : 0);
    if (start != 0 || len != n) out = narrow(out, d, start, std::max<int64_t>(len, 0));
    std::vector<Tensor> parts;
    auto block = [&](int64_t size) {
      DimVector s(out.sizes());
      s[d] = size;
      return full(s, value, out.dtype(), out.device());
    };
    if (before > 0) parts.push_back(block(before));
    parts.push_back(out);
    if (after > 0) parts.push_back(block(after));
    if (parts.size() > 1) out = cat(parts, d);
  }
  return out.is_same(self) ? mul(self, Scalar(int64_t{1})) : out;
}

// Indices of a reflected (reflect) or clamped (replicate) padding of n elements by (before, after), as
// an int64 tensor on `device`. They are written into a tensor from the allocator, not a host vector: a
// width no host can hold (padding of 2**40) is then the allocator's OutOfMemoryError naming the bytes,
// where a vector's std::bad_alloc would abort the process under ASan (Note [Views counted before they
// are made] in Composite.cpp says why).
Tensor pad_index(int64_t n, int64_t before, int64_t after, bool reflect, Device device) {
  if (device.type == DeviceType::Meta) return make_tensor({n + before + after}, ScalarType::Int64, device);
  Tensor idx = make_tensor({n + before + after}, ScalarType::Int64, Device(DeviceType::CPU));
  int64_t* out = idx.data_ptr<int64_t>();
  for (int64_t j = -before; j < n + after; ++j) {
    int64_t s = j;
    if (reflect) {
      if (s < 0) s = -s;
      if (s >= n) s = 2 * (n - 1) - s;
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
    }
    *out++ = s;
  }
  return cx::index_on_device(idx, device);
}

template <bool kReflect, int kDims>
Tensor index_pad(const Tensor& self, IntArrayRef padding) {
  static constexpr const char* kNames[2][3] = {{"replication_pad1d", "replication_pad2d", "replication_pad3d"},
                                               {"reflection_pad1d", "reflection_pad2d", "reflection_pad3d"}};
  const char* name = kNames[kReflect ? 1 : 0][kDims - 1];
  SDK_CHECK_VALUE(static_cast<int64_t>(padding.size()) == 2 * kDims, name, ": padding size is expected to be ",
                  2 * kDims, ", but got: ", padding.size());
  // PyTorch's check_valid_input: only the batch dimension of a batched input may be empty.
  const bool batched = self.dim() == kDims + 2;
  bool valid = batched || self.dim() == kDims + 1;
  for (int64_t d = batched ? 1 : 0; valid && d < self.dim(); ++d) valid = self.size(d) != 0;
  SDK_CHECK_VALUE(valid, "Expected ", kDims + 1, "D or ", kDims + 2,
                  "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
                  self.sizes());
  DimVector out_sizes(self.sizes());
  for (int64_t i = 0; i < kDims; ++i) {
    const int64_t d = self.dim() - 1 - i, n = self.size(d);
    const int64_t before = padding[static_cast<size_t>(2 * i)], after = padding[static_cast<size_t>(2 * i + 1)];
    if (kReflect) {
      SDK_CHECK_VALUE(before < n && after < n, "Argument #4: Padding size should be less than the corresponding input "
                      "dimension, but got: padding (", before, ", ", after, ") at dimension ", d, " of input ",
                      self.sizes());
    }
    int64_t width = 0;
    SDK_CHECK_VALUE(!__builtin_add_overflow(n, before, &width) && !__builtin_add_overflow(width, after, &width) &&
                    width > 0, name, ": input (", n, ") with padding (", before, ", ", after,
                    ") gives an empty output along dimension ", d);
    out_sizes[static_cast<size_t>(d)] = width;
  }
  // An empty batch pads to an empty result of the padded shape, without index vectors as long as the padding
  // (a padding of 2**40 on an empty batch is a valid call); narrow + expand keep the autograd history.
  if (self.size(0) == 0) {
    Tensor edge = self;
    for (int64_t i = 0; i < kDims; ++i) edge = narrow(edge, self.dim() - 1 - i, 0, 1);
    return cx::clone(cx::expand(edge, out_sizes));
  }
  Tensor out = self;
  for (int64_t i = 0; i < kDims; ++i) {
    const int64_t d = self.dim() - 1 - i;
    const int64_t n = self.size(d), before = padding[static_cast<size_t>(2 * i)],
                  after = padding[static_cast<size_t>(2 * i + 1)];
    out = cx::index_select(out, d, pad_index(n, before, after, kReflect, self.device()));
  }
  return out;
}

Tensor pad_impl(const Tensor& self, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  if (mode == "constant") return constant_pad_nd_impl(self, pad, Scalar(value.value_or(0.0)));
  SDK_CHECK_VALUE(!value || *value == 0.0, "Padding mode \"", mode, "\" doesn't take in value argument");
  const bool reflect = mode == "reflect";
  SDK_CHECK_NOT_IMPLEMENTED(reflect || mode == "replicate" || mode == "circular", "Unrecognised padding mode ", mode);
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  SDK_CHECK_VALUE(pad.size() % 2 == 0 && k >= 1 && k <= 2 && self.dim() >= k + 1 && self.dim() <= k + 2,
                  "Padding size ", pad.size(), " is not supported for ", self.dim(), "-D input with mode ", mode);
  if (mode == "circular") {
    Tensor out = self;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = self.dim() - 1 - i, n = self.size(d);
      const int64_t before = pad[static_cast<size_t>(2 * i)], after = pad[static_cast<size_t>(2 * i + 1)];
      std::vector<int64_t> idx;
      for (int64_t j = -before; j < n + after; ++j) idx.push_back(((j % n) + n) % n);
      out = cx::index_select(out, d, index_tensor(idx, self.device()));
    }
    return out;
  }
  if (k == 1) return reflect ? index_pad<true, 1>(self, pad) : index_pad<false, 1>(self, pad);
  return reflect ? index_pad<true, 2>(self, pad) : index_pad<false, 2>(self, pad);
}

// ---- upsampling (the last two dims) ----
double area_scale(int64_t in, int64_t out, std::optional<double> scale, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

void check_upsample(const Tensor& self, IntArrayRef output_size, const char* op) {
  SDK_CHECK_VALUE(output_size.size() == 2, op, ": It is expected output_size equals to 2, but got size ",
                  output_size.size());
  SDK_CHECK_VALUE(self.dim() == 4, op, ": Non-empty 4D data tensor expected but got a tensor with sizes ",
                  self.sizes());
  SDK_CHECK_VALUE(output_size[0] > 0 && output_size[1] > 0 && self.size(2) > 0 && self.size(3) > 0, op,
                  ": Input and output sizes should be greater than 0, but got input (H: ", self.size(2), ", W: ",
                  self.size(3), ") output (H: ", output_size[0], ", W: ", output_size[1], ")");
}

Tensor upsample_nearest2d_impl(const Tensor& self, IntArrayRef output_size, std::optional<double> scales_h,
                               std::optional<double> scales_w) {
  check_upsample(self, output_size, "upsample_nearest2d");
  Tensor out = self;
  for (int i = 0; i < 2; ++i) {
    const int64_t d = 2 + i, in = self.size(d), o = output_size[static_cast<size_t>(i)];
    const double sc = area_scale(in, o, i == 0 ? scales_h : scales_w, false);
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < o; ++j) {
      idx.push_back(std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(j) * sc)), in - 1));
    }
    out = cx::index_select(out, d, index_tensor(idx, self.device()));
  }
  return out;
}

Tensor upsample_bilinear2d_impl(const Tensor& self, IntArrayRef output_size, bool align_corners,
                                std::optional<double> scales_h, std::optional<double> scales_w) {
  check_upsample(self, output_size, "upsample_bilinear2d");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "upsample_bilinear2d: expected a floating point input, got ",
                 scalar_type_name(self.dtype()));
  Tensor out = self;
  for (int i = 0; i < 2; ++i) {
    const int64_t d = 2 + i, in = self.size(d), o = output_size[static_cast<size_t>(i)];
    const double sc = area_scale(in, o, i == 0 ? scales_h : scales_w, align_corners);
    std::vector<int64_t> i0, i1;
    Tensor lam = make_tensor({o}, ScalarType::Float64, Device(DeviceType::CPU));
    double* pl = lam.data_ptr<double>();
    for (int64_t j = 0; j < o; ++j) {
      double src = align_corners ? static_cast<double>(j) * sc : (static_cast<double>(j) + 0.5) * sc - 0.5;
      if (src < 0) src = 0;
      const int64_t a = std::min<int64_t>(static_cast<int64_t>(std::floor(src)), in - 1);
      i0.push_back(a);
      i1.push_back(std::min<int64_t>(a + 1, in - 1));
      pl[j] = src - static_cast<double>(a);
    }
    Tensor lo = cx::index_select(out, d, index_tensor(i0, self.device()));
    Tensor hi = cx::index_select(out, d, index_tensor(i1, self.device()));
    DimVector ls(4, 1);
    ls[static_cast<size_t>(d)] = o;
    Tensor w = view(_to_copy(lam, self.dtype(), self.device()), ls);
    out = add(lo, mul(sub(hi, lo), w));
  }
  return out;
}

// ---- einsum ----
// Labels: 'a'-'z' -> 0-25, 'A'-'Z' -> 26-51, ellipsis dims -> 52 + k (right-aligned).
int label_of(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  SDK_THROW(Value, "einsum(): invalid subscript given at index ", 0, " in the equation string, subscripts must be in ",
            "[a-zA-Z]");
}

std::vector<int> parse_term(std::string_view term, int64_t ndim, int64_t ell_dims, bool is_output, int64_t operand) {
  std::vector<int> labels;
  const size_t ell = term.find("...");
  int64_t letters = 0;
  for (char ch : term) letters += (ch != '.' && ch != ' ') ? 1 : 0;
  if (!is_output) {
    if (ell == std::string_view::npos) {
      SDK_CHECK_VALUE(letters == ndim, "einsum(): the number of subscripts in the equation (", letters,
                      ") does not match the number of dimensions (", ndim, ") for operand ", operand,
                      " and no ellipsis was given");
    } else {
      SDK_CHECK_VALUE(letters <= ndim, "einsum(): the number of subscripts in the equation (", letters,
                      ") is more than the number of dimensions (", ndim, ") for operand ", operand);
    }
  }
  const int64_t here = is_output ? ell_dims : ndim - letters;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == ' ') continue;
    if (term.substr(i, 3) == "...") {
      for (int64_t k = ell_dims - here; k < ell_dims; ++k) labels.push_back(52 + static_cast<int>(k));
      i += 2;
      continue;
    }
    SDK_CHECK_VALUE(term[i] != '.', "einsum(): found '.' for operand ", operand, " that is not part of any ellipsis");
    labels.push_back(label_of(term[i]));
  }
  return labels;
}

struct Term {
  Tensor t;
  std::vector<int> labels;  // one per dim, distinct
};

// Takes the diagonal of repeated labels so each label names one dim.
Term dedupe(const Tensor& t, std::vector<int> labels) {
  Tensor x = t;
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = i + 1; j < labels.size();) {
      if (labels[j] != labels[i]) {
        ++j;
        continue;
      }
      SDK_CHECK_VALUE(x.size(static_cast<int64_t>(i)) == x.size(static_cast<int64_t>(j)), "einsum(): subscript ",
                      static_cast<char>('a' + labels[i]), " is repeated for operand but the sizes don't match, ",
                      x.size(static_cast<int64_t>(i)), " != ", x.size(static_cast<int64_t>(j)));
      // diagonal of dims (i, j) goes last; move it back to position i
      DimVector sizes, strides;
      for (int64_t d = 0; d < x.dim(); ++d) {
        if (d == static_cast<int64_t>(j)) continue;
        sizes.push_back(x.size(d));
        strides.push_back(d == static_cast<int64_t>(i) ? x.stride(d) + x.stride(static_cast<int64_t>(j)) : x.stride(d));
      }
      x = as_strided(x, sizes, strides, x.storage_offset());
      labels.erase(labels.begin() + static_cast<std::ptrdiff_t>(j));
    }
  }
  return {x, labels};
}

// Sums the dims whose labels are not in `keep`.
Term reduce_unneeded(Term a, const std::vector<bool>& keep) {
  DimVector dims;
  std::vector<int> rest;
  for (size_t i = 0; i < a.labels.size(); ++i) {
    if (keep[static_cast<size_t>(a.labels[i])]) rest.push_back(a.labels[i]);
    else dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return a;
  return {cx::sum(a.t, dims, false), rest};
}

int64_t size_of_label(const Term& a, int l) {
  for (size_t i = 0; i < a.labels.size(); ++i) {
    if (a.labels[i] == l) return a.t.size(static_cast<int64_t>(i));
  }
  return 1;
}

// A's dims permuted to `order` (labels absent from A become size-1 dims), expanded to `sizes`.
Tensor arrange(const Term& a, const std::vector<int>& order, const DimVector& sizes) {
  DimVector perm;
  std::vector<int> present;
  for (int l : order) {
    for (size_t i = 0; i < a.labels.size(); ++i) {
      if (a.labels[i] == l) perm.push_back(static_cast<int64_t>(i));
    }
  }
  Tensor x = permute(a.t, perm);
  DimVector shaped;
  for (int l : order) shaped.push_back(size_of_label(a, l));
  x = reshape(x, shaped);
  bool need_expand = false;
  for (size_t i = 0; i < shaped.size(); ++i) need_expand |= shaped[i] != sizes[i];
  return need_expand ? expand(x, sizes) : x;
}

Term contract(const Term& a, const Term& b, const std::vector<bool>& needed) {
  std::vector<int> batch, a_only, b_only, sum;
  auto in = [](const Term& t, int l) { return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end(); };
  for (int l : a.labels) {
    if (in(b, l)) (needed[static_cast<size_t>(l)] ? batch : sum).push_back(l);
    else a_only.push_back(l);
  }
  for (int l : b.labels) {
    if (!in(a, l)) b_only.push_back(l);
  }
  auto sz = [&](int l) {
    const int64_t x = size_of_label(a, l), y = size_of_label(b, l);
    SDK_CHECK_VALUE(x == y || x == 1 || y == 1, "einsum(): operands do not broadcast with remapped shapes: subscript "
                    "sizes ", x, " and ", y);
    return std::max(x, y);
  };
  int64_t nb = 1, na = 1, nk = 1, nn = 1;
  DimVector out_sizes;
  std::vector<int> out_labels;
  DimVector a_sizes, b_sizes;
  std::vector<int> a_order, b_order;
  for (int l : batch) { nb *= sz(l); out_sizes.push_back(sz(l)); out_labels.push_back(l); }
  for (int l : a_only) { na *= sz(l); out_sizes.push_back(sz(l)); out_labels.push_back(l); }
  for (int l : b_only) { nn *= sz(l); out_sizes.push_back(sz(l)); out_labels.push_back(l); }
  for (int l : sum) nk *= sz(l);
  for (int l : batch) { a_order.push_back(l); a_sizes.push_back(sz(l)); b_order.push_back(l); b_sizes.push_back(sz(l)); }
  for (int l : a_only) { a_order.push_back(l); a_sizes.push_back(sz(l)); }
  for (int l : sum) { a_order.push_back(l); a_sizes.push_back(sz(l)); b_order.push_back(l); b_sizes.push_back(sz(l)); }
  for (int l : b_only) { b_order.push_back(l); b_sizes.push_back(sz(l)); }
  Tensor x = reshape(arrange(a, a_order, a_sizes), {nb, na, nk});
  Tensor y = reshape(arrange(b, b_order, b_sizes), {nb, nk, nn});
  return {view(bmm(x, y), out_sizes), out_labels};
}

Tensor einsum_impl(std::string_view equation, TensorList tensors, std::optional<IntArrayRef> path) {
  (void)path;  // contraction order is left to right
  SDK_CHECK_VALUE(!tensors.empty(), "einsum(): must provide at least one operand");
  const size_t arrow = equation.find("->");
  std::string_view lhs = equation.substr(0, arrow);
  std::vector<std::string_view> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  SDK_CHECK_VALUE(tensors.size() <= terms.size(), "einsum(): more operands were provided than specified in the equation");
  SDK_CHECK_VALUE(tensors.size() >= terms.size(),
                  "einsum(): fewer operands were provided than were specified in the equation");
  int64_t ell_dims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string_view::npos) continue;
    int64_t letters = 0;
    for (char ch : terms[i]) letters += (ch != '.' && ch != ' ') ? 1 : 0;
    ell_dims = std::max(ell_dims, tensors[i].dim() - letters);
  }
  std::vector<Term> ops;
  std::vector<int> count(52 + 64, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    Term t = dedupe(tensors[i], parse_term(terms[i], tensors[i].dim(), ell_dims, false, static_cast<int64_t>(i)));
    for (int l : t.labels) ++count[static_cast<size_t>(l)];
    ops.push_back(std::move(t));
  }
  std::vector<int> out_labels;
  if (arrow != std::string_view::npos) {
    out_labels = parse_term(equation.substr(arrow + 2), 0, ell_dims, true, 0);
    for (int l : out_labels) {
      SDK_CHECK_VALUE(count[static_cast<size_t>(l)] > 0 || l >= 52, "einsum(): output subscript ",
                      static_cast<char>(l < 26 ? 'a' + l : 'A' + l - 26),
                      " does not appear in the equation for any input operand");
    }
  } else {
    for (int64_t k = 0; k < ell_dims; ++k) out_labels.push_back(52 + static_cast<int>(k));
    for (int l = 0; l < 52; ++l) {
      if (count[static_cast<size_t>(l)] == 1) out_labels.push_back(l);
    }
  }
  std::vector<bool> in_out(count.size(), false);
  for (int l : out_labels) in_out[static_cast<size_t>(l)] = true;
  // needed[i]: labels in the output or in operands after i.
  auto needed_after = [&](size_t i) {
    std::vector<bool> need = in_out;
    for (size_t j = i + 1; j < ops.size(); ++j) {
      for (int l : ops[j].labels) need[static_cast<size_t>(l)] = true;
    }
    return need;
  };
  Term acc = ops[0];
  if (ops.size() == 1) {
    acc = reduce_unneeded(acc, in_out);
  } else {
    for (size_t i = 1; i < ops.size(); ++i) {
      std::vector<bool> need = needed_after(i);
      // labels of the next operand are needed while contracting with it
      std::vector<bool> keep_acc = need, keep_next = need;
      for (int l : ops[i].labels) keep_acc[static_cast<size_t>(l)] = true;
      for (int l : acc.labels) keep_next[static_cast<size_t>(l)] = true;
      acc = contract(reduce_unneeded(acc, keep_acc), reduce_unneeded(ops[i], keep_next), need);
    }
    acc = reduce_unneeded(acc, in_out);
  }
  // labels of the output absent from acc (ellipsis dims of size 1) become size-1 dims.
  DimVector sizes;
  for (int l : out_labels) sizes.push_back(size_of_label(acc, l));
  return arrange(acc, out_labels, sizes);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
        "bool sparse=False) -> Tensor");
  m.def("embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, "
        "bool scale_grad_by_freq) -> Tensor");
  m.def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)");
  m.def("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor");
  m.def("dropout(Tensor input, float p, bool train) -> Tensor");
  m.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
        "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor");
  m.def("_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
        "float dropout_p=0.0, bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None, "
        "bool enable_gqa=False) -> (Tensor, Tensor)");
  m.def("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor");
  m.def("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor");
  m.def("reflection_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  m.def("reflection_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  m.def("replication_pad1d(Tensor self, SymInt[2] padding) -> Tensor");
  m.def("replication_pad2d(Tensor self, SymInt[4] padding) -> Tensor");
  m.def("reflection_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  m.def("replication_pad3d(Tensor self, SymInt[6] padding) -> Tensor");
  m.def("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
        "float? scales_w=None) -> Tensor");
  m.def("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor");
  constexpr auto kCIA = sdk::DispatchKey::CompositeImplicitAutograd;
  constexpr auto kCEA = sdk::DispatchKey::CompositeExplicitAutograd;
  using namespace sdk::ops;
  m.impl("embedding", kCIA, &embedding_impl);
  m.impl("native_dropout", kCEA, &native_dropout_impl);
  m.impl("native_dropout_backward", kCEA, &native_dropout_backward_impl);
  m.impl("dropout", kCIA, &dropout_impl);
  m.impl("scaled_dot_product_attention", kCIA, &sdpa_impl);
  m.impl("_scaled_dot_product_attention_math", kCIA, &sdpa_math);
  m.impl("constant_pad_nd", kCIA, &constant_pad_nd_impl);
  m.impl("pad", kCIA, &pad_impl);
  m.impl("reflection_pad1d", kCIA, &index_pad<true, 1>);
  m.impl("reflection_pad2d", kCIA, &index_pad<true, 2>);
  m.impl("replication_pad1d", kCIA, &index_pad<false, 1>);
  m.impl("replication_pad2d", kCIA, &index_pad<false, 2>);
  m.impl("reflection_pad3d", kCIA, &index_pad<true, 3>);
  m.impl("replication_pad3d", kCIA, &index_pad<false, 3>);
  m.impl("upsample_nearest2d", kCIA, &upsample_nearest2d_impl);
  m.impl("upsample_bilinear2d", kCIA, &upsample_bilinear2d_impl);
  m.impl("einsum", kCIA, &einsum_impl);
}

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("embedding_dense_backward", &sdk::ops::embedding_dense_backward_kernel<true>); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("embedding_dense_backward", &sdk::ops::embedding_dense_backward_kernel<false>); }
