// Indexing operators on CPU and Meta:
//   index.Tensor(_out), index_put(_), _index_put_impl_   advanced indexing
//   index_select(.out), gather(.out), scatter* (src, value, reduce),
//   scatter_add(_)(.out), scatter_reduce(_).two(_out) (Note [scatter_reduce]),
//   masked_select(.out), nonzero(.out), take(.out),
//   flip(.out)
// and the composites nonzero_numpy and where(condition).
//
// Note [Advanced indexing plan]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten::index(self, indices) follows PyTorch (and numpy): entry i of
// `indices` indexes dim i of self (None: the whole dim). A bool/uint8 mask of
// k dims stands for k long indices, the columns of nonzero(mask), and must
// match the k dims it covers; a 0-d mask inserts a size-1 dim that it indexes
// with [0] (True) or [] (False). The long/int indices broadcast together to
// one shape B. Where the result puts B depends on the indexed dims: when they
// are adjacent, B replaces them in place ([pre..., B..., post...]); when
// None/full dims separate them, B comes first ([B..., rest...]).
// plan_index() computes that layout once, shared by index, index_put_ and
// the Meta kernels, so their result shapes cannot disagree. On CPU it also
// computes three tables of element offsets into self: pre dims, B (the sum
// over indexed dims of index * stride, bounds-checked) and post dims. Result
// element (p, b, q) is self[pre_off[p] + b_off[b] + post_off[q]], which every
// kernel then walks without any per-element index arithmetic. Masks need
// their data to know B, so Meta refuses them, as PyTorch does.
//
// Note [Deterministic accumulation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// index_put_(accumulate=True), scatter_add and scatter's reduce= sum or
// multiply into the same element when indices repeat. Those loops add in index
// order, so results are reproducible bit for bit whatever the thread count:
// scatter's run on one thread; index_put_'s, into a contiguous self (whose
// elements each have one position in the post dims), is split over threads by
// post-dim position, so each element is still summed by one thread in index
// order (index_select's backward, hence embedding's, runs there). The
// overwriting forms (gather, index, index_select) run in parallel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <backend_sdk/core/detail/SafeSize.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/Resize.h>

namespace sdk::ops {
namespace {

bool is_meta(const Tensor& t) { return t.device().type == DeviceType::Meta; }

template <typename Sig>
OperatorHandle::Typed<Sig> aten_op(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Row-major element offsets of every position of a (sizes, strides) walk.
std::vector<int64_t> offsets_of(IntArrayRef sizes, IntArrayRef strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  if (n == 0) return out;
  size_t k = 1;
  // Build outer to inner: each dim multiplies the table.
  for (size_t d = 0; d < sizes.size(); ++d) {
    size_t m = static_cast<size_t>(sizes[d]);
    // Expand in place from the back so entries are not overwritten before use.
    for (size_t i = k; i-- > 0;) {
      int64_t base = out[i];
      for (size_t j = m; j-- > 0;) out[i * m + j] = base + static_cast<int64_t>(j) * strides[d];
    }
    k *= m;
  }
  return out;
}

// Calls f(U{}) with U an unsigned type of the element size: moves elements bit for bit.
template <typename F>
void with_word(size_t itemsize, const F& f) {
  switch (itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

// The type arithmetic on elements of T happens in (float for Half/BFloat16).
template <typename T>
using acc_type_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
T add_elem(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else {
    return static_cast<T>(static_cast<acc_type_t<T>>(a) + static_cast<acc_type_t<T>>(b));
  }
}
template <typename T>
T mul_elem(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else {
    return static_cast<T>(static_cast<acc_type_t<T>>(a) * static_cast<acc_type_t<T>>(b));
  }
}

// A contiguous int64 copy of an index tensor, broadcast to `shape`.
Tensor long_index(const Tensor& index, IntArrayRef shape) {
  if (index.dtype() == ScalarType::Int64 && index.is_contiguous() && index.sizes().equals(shape)) return index;
  return copy_(make_tensor(shape, ScalarType::Int64, index.device()), index);
}

// numpy's broadcasting of several shapes; nullopt when they do not broadcast.
std::optional<DimVector> broadcast_shapes(const std::vector<IntArrayRef>& shapes) {
  size_t ndim = 0;
  for (IntArrayRef s : shapes) ndim = std::max(ndim, s.size());
  DimVector out(ndim, 1);
  for (IntArrayRef s : shapes) {
    size_t lead = ndim - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[lead + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[i];
    }
  }
  return out;
}

// Strides of t viewed as broadcast to `shape` (0 along broadcast dims).
DimVector broadcast_strides(const Tensor& t, IntArrayRef shape) {
  DimVector out(shape.size(), 0);
  size_t lead = shape.size() - static_cast<size_t>(t.dim());
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    out[lead + i] = t.size(static_cast<int64_t>(i)) == 1 ? 0 : t.stride(static_cast<int64_t>(i));
  }
  return out;
}

// out= handling shared by the kernels here: dtype must match; a different
// shape is only taken by an out with no elements (resized), as TensorIterator does.
void prepare_out(const char* op, const Tensor& out, IntArrayRef sizes, ScalarType dtype) {
  SDK_CHECK_TYPE(out.dtype() == dtype, op, ": Expected out tensor to have dtype ", scalar_type_name(dtype),
                 ", but got ", scalar_type_name(out.dtype()), " instead");
  resize_output(out, sizes, op);  // Note [Resizing out= arguments]
}

Tensor write_out(const char* op, const Tensor& out, const Tensor& result) {
  check_same_device(op, out, result);
  prepare_out(op, out, result.sizes(), result.dtype());
  return copy_(out, result);
}

// ---------------------------------------------------------------------------
// nonzero
// ---------------------------------------------------------------------------

template <typename T>
bool nonzero_elem(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else {
    return static_cast<acc_type_t<T>>(v) != acc_type_t<T>{};
  }
}

// Calls row(outer_offset, outer_linear) for each row of t (all dims but the last,
// row-major), outer_offset in elements; rows of a 0-d tensor: one of one element.
template <typename F>
void for_each_row(IntArrayRef sizes, IntArrayRef strides, const F& row) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd <= 1) {
    row(int64_t{0}, int64_t{0});
    return;
  }
  int64_t rows = 1;
  for (int64_t d = 0; d < nd - 1; ++d) rows *= sizes[d];
  if (rows == 0) return;
  DimVector coord(static_cast<size_t>(nd - 1), 0);
  int64_t off = 0;
  for (int64_t r = 0; r < rows; ++r) {
    row(off, r);
    for (int64_t d = nd - 2; d >= 0; --d) {
      off += strides[d];
      if (++coord[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      coord[d] = 0;
    }
  }
}

// [n, ndim] int64 coordinates of the non-zero elements, in row-major order:
// one pass counts, a second writes, both row by row along the last dim.
Tensor nonzero_cpu(const Tensor& self) {
  const int64_t ndim = self.dim();
  const int64_t inner = ndim ? self.size(ndim - 1) : 1;
  const int64_t istride = ndim ? self.stride(ndim - 1) : 1;
  Tensor out;
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "nonzero", [&] {
    const scalar_t* data = self.data_ptr<scalar_t>();
    int64_t count = 0;
    if (self.numel() > 0) {
      for_each_row(self.sizes(), self.strides(), [&](int64_t off, int64_t) {
        const scalar_t* p = data + off;
        for (int64_t j = 0; j < inner; ++j) count += nonzero_elem(p[j * istride]);
      });
    }
    out = make_tensor({count, ndim}, ScalarType::Int64, self.device());
    if (count == 0) return;
    int64_t* o = out.data_ptr<int64_t>();
    DimVector coord(static_cast<size_t>(ndim), 0);
    for_each_row(self.sizes(), self.strides(), [&](int64_t off, int64_t r) {
      // the row's coordinates (all dims but the last) from its row-major number
      for (int64_t d = ndim - 2, rem = r; d >= 0; --d) {
        coord[d] = rem % self.size(d);
        rem /= self.size(d);
      }
      const scalar_t* p = data + off;
      for (int64_t j = 0; j < inner; ++j) {
        if (!nonzero_elem(p[j * istride])) continue;
        for (int64_t d = 0; d + 1 < ndim; ++d) *o++ = coord[d];
        if (ndim) *o++ = j;
      }
    });
  });
  return out;
}

[[noreturn]] void data_dependent(const char* op) {
  SDK_THROW(NotImplemented, op,
            ": the shape of the result depends on the data of the input, which a meta tensor does not have "
            "(data-dependent output shape)");
}

Tensor nonzero_kernel(const Tensor& self) {
  if (is_meta(self)) data_dependent("nonzero");
  return nonzero_cpu(self);
}

Tensor nonzero_out_kernel(const Tensor& self, const Tensor& out) {
  if (is_meta(self)) data_dependent("nonzero.out");
  return write_out("nonzero.out", out, nonzero_cpu(self));
}

// ---------------------------------------------------------------------------
// index.Tensor / index_put_: see Note [Advanced indexing plan]
// ---------------------------------------------------------------------------

struct IndexPlan {
  Tensor src;  // self, with a size-1 dim inserted for each 0-d mask
  DimVector result_sizes;
  DimVector bshape;                 // the indices' broadcast shape
  size_t n_pre = 0, n_post = 0;     // result dims before and after B
  DimVector pre_dims, post_dims;    // src dims they come from
  std::vector<int64_t> pre_off, b_off, post_off;  // element offsets into src (CPU only)
  bool post_contiguous = false;                   // post_off[q] == q: the post dims are one dense block
};

// A [n] int64 tensor of zeros: how a 0-d mask indexes the dim it inserts.
Tensor zeros_index(int64_t n, Device device) {
  Tensor t = make_tensor({n}, ScalarType::Int64, device);
  if (n) std::memset(t.data_ptr(), 0, static_cast<size_t>(n) * sizeof(int64_t));
  return t;
}

IndexPlan plan_index(const char* op, const Tensor& self, OptionalTensorList indices, bool compute) {
  IndexPlan p;
  p.src = self;
  // 1. Expand masks into long indices, one entry per src dim.
  std::vector<Tensor> per_dim;
  int64_t consumed = 0;
  for (const auto& maybe : indices) {
    if (!maybe || !maybe->defined()) {
      per_dim.emplace_back();
      ++consumed;
      continue;
    }
    const Tensor& idx = *maybe;
    const ScalarType t = idx.dtype();
    SDK_CHECK_INDEX(t == ScalarType::Int64 || t == ScalarType::Int32 || t == ScalarType::Bool ||
                        t == ScalarType::UInt8,
                    "tensors used as indices must be long, int, byte or bool tensors");
    SDK_CHECK_VALUE(idx.device() == self.device() || idx.is_cpu(),
                    op, ": indices should be either on cpu or on the same device as the indexed tensor (",
                    self.device(), ")");
    if (t == ScalarType::Int64 || t == ScalarType::Int32) {
      per_dim.push_back(idx);
      ++consumed;
      continue;
    }
    if (is_meta(idx) || is_meta(self)) data_dependent(op);
    const int64_t pos = static_cast<int64_t>(per_dim.size());
    if (idx.dim() == 0) {
      // A 0-d mask: a new size-1 dim at pos, indexed by [0] or [].
      DimVector sizes(p.src.sizes()), strides(p.src.strides());
      sizes.insert(static_cast<size_t>(pos), 1);
      strides.insert(static_cast<size_t>(pos), 1);
      p.src = make_view(p.src, sizes, strides, p.src.storage_offset(), op);
      bool value = t == ScalarType::Bool ? *idx.data_ptr<bool>() : *idx.data_ptr<uint8_t>() != 0;
      per_dim.push_back(zeros_index(value ? 1 : 0, self.device()));
      continue;
    }
    SDK_CHECK_INDEX(consumed + idx.dim() <= self.dim(), "too many indices for tensor of dimension ", self.dim());
    for (int64_t j = 0; j < idx.dim(); ++j) {
      SDK_CHECK_INDEX(idx.size(j) == p.src.size(pos + j), "The shape of the mask ", idx.sizes(), " at index ", j,
                      " does not match the shape of the indexed tensor ", p.src.sizes(), " at index ", pos + j);
    }
    Tensor nz = nonzero_cpu(idx);  // [n, k]
    for (int64_t j = 0; j < idx.dim(); ++j) {
      per_dim.push_back(make_view(nz, {nz.size(0)}, {nz.stride(0)}, nz.storage_offset() + j * nz.stride(1), op));
    }
    consumed += idx.dim();
  }
  SDK_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim());
  const Tensor& src = p.src;
  per_dim.resize(static_cast<size_t>(src.dim()));

  // 2. Broadcast the indices.
  std::vector<IntArrayRef> shapes;
  DimVector adv;
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (!per_dim[d].defined()) continue;
    shapes.push_back(per_dim[d].sizes());
    adv.push_back(static_cast<int64_t>(d));
  }
  std::optional<DimVector> b = broadcast_shapes(shapes);
  if (!b) {
    std::string all;
    for (size_t i = 0; i < shapes.size(); ++i) all += (i ? ", " : "") + shape_str(shapes[i]);
    SDK_THROW(Index, "shape mismatch: indexing tensors could not be broadcast together with shapes ", all);
  }
  p.bshape = *b;

  // 3. Where B goes.
  bool adjacent = adv.empty() || adv[adv.size() - 1] - adv[0] + 1 == static_cast<int64_t>(adv.size());
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (per_dim[static_cast<size_t>(d)].defined()) continue;
    bool before = adjacent && (adv.empty() || d < adv[0]);
    (before ? p.pre_dims : p.post_dims).push_back(d);
  }
  p.n_pre = p.pre_dims.size();
  p.n_post = p.post_dims.size();
  for (int64_t d : p.pre_dims) p.result_sizes.push_back(src.size(d));
  for (int64_t s : p.bshape) p.result_sizes.push_back(s);
  for (int64_t d : p.post_dims) p.result_sizes.push_back(src.size(d));
  // The result's element count, checked (Note [Size arithmetic overflow]). Without elements
  // there is nothing to gather or scatter and the offset tables are not built: they have one
  // entry per position of the pre/post dims, which can be huge when another dim is 0
  // (`x.expand(2**40, 1)[:, empty_index]`), and callers treat empty tables as "no work".
  if (safe_numel(p.result_sizes, op) == 0 || !compute) return p;

  // 4. Offset tables.
  auto sub = [&](const DimVector& dims, bool strides) {
    DimVector out;
    for (int64_t d : dims) out.push_back(strides ? src.stride(d) : src.size(d));
    return out;
  };
  p.pre_off = offsets_of(sub(p.pre_dims, false), sub(p.pre_dims, true));
  p.post_off = offsets_of(sub(p.post_dims, false), sub(p.post_dims, true));
  p.post_contiguous = true;
  for (size_t q = 0; q < p.post_off.size() && p.post_contiguous; ++q) {
    p.post_contiguous = p.post_off[q] == static_cast<int64_t>(q);
  }
  int64_t nb = 1;
  for (int64_t s : p.bshape) nb *= s;
  p.b_off.assign(static_cast<size_t>(nb), 0);
  for (int64_t d : adv) {
    Tensor li = long_index(per_dim[static_cast<size_t>(d)], p.bshape);
    const int64_t* v = li.data_ptr<int64_t>();
    const int64_t size = src.size(d), stride = src.stride(d);
    int64_t* bo = p.b_off.data();
    parallel_for(0, nb, kParallelGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t x = v[i];
        SDK_CHECK_INDEX(x >= -size && x < size, "index ", x, " is out of bounds for dimension ", d, " with size ",
                        size);
        bo[i] += (x < 0 ? x + size : x) * stride;
      }
    });
  }
  return p;
}

// out (contiguous, plan.result_sizes) = src gathered through the plan.
void run_index(const IndexPlan& p, const Tensor& out) {
  const int64_t npre = static_cast<int64_t>(p.pre_off.size()), nb = static_cast<int64_t>(p.b_off.size()),
                npost = static_cast<int64_t>(p.post_off.size());
  if (npre * nb * npost == 0) return;
  with_word(p.src.itemsize(), [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(p.src.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    const int64_t* pre = p.pre_off.data();
    const int64_t* bo = p.b_off.data();
    const int64_t* post = p.post_off.data();
    int64_t grain = std::max<int64_t>(1, kParallelGrain / npost);
    const bool block = p.post_contiguous;
    parallel_for(0, npre * nb, grain, [&](int64_t lo, int64_t hi) {
      int64_t pi = lo / nb, bi = lo % nb;  // (pre, b) of r, stepped without a division per row
      for (int64_t r = lo; r < hi; ++r) {
        const U* base = in + pre[pi] + bo[bi];
        U* dst = o + r * npost;
        if (npost == 1) {
          *dst = *base;
        } else if (block) {
          std::memcpy(dst, base, static_cast<size_t>(npost) * sizeof(U));
        } else {
          for (int64_t q = 0; q < npost; ++q) dst[q] = base[post[q]];
        }
        if (++bi == nb) {
          bi = 0;
          ++pi;
        }
      }
    });
  });
}

Tensor masked_select_cpu(const char* op, const Tensor& self, const Tensor& mask);

Tensor index_impl(const char* op, const Tensor& self, OptionalTensorList indices) {
  const bool meta = is_meta(self);
  // self[mask] with a bool mask of self's shape: masked_select's single pass (same result, in row-major order).
  if (!meta && indices.size() == 1 && indices[0] && indices[0]->defined() && self.dim() > 0) {
    const Tensor& m = *indices[0];
    if (m.dtype() == ScalarType::Bool && m.sizes().equals(self.sizes()) && !is_meta(m) &&
        (m.device() == self.device())) {
      return masked_select_cpu(op, self, m);
    }
  }
  IndexPlan p = plan_index(op, self, indices, !meta);
  Tensor out = make_tensor(p.result_sizes, self.dtype(), self.device());
  if (!meta) run_index(p, out);
  return out;
}

Tensor index_kernel(const Tensor& self, OptionalTensorList indices) { return index_impl("index.Tensor", self, indices); }

Tensor index_out_kernel(const Tensor& self, OptionalTensorList indices, const Tensor& out) {
  const char* op = "index.Tensor_out";
  if (is_meta(self)) {
    IndexPlan p = plan_index(op, self, indices, false);
    prepare_out(op, out, p.result_sizes, self.dtype());
    return out;
  }
  return write_out(op, out, index_impl(op, self, indices));
}

// d[q] += s[q * vstep] for q in [q0, q1), vstep 1 (dense values) or 0 (one
// value broadcast along the run, e.g. the gradient of a sum), when T adds
// exactly as add_elem does: a float or double sum rounded from a wider one is
// the plain sum, so the loop vectorises; false for other types (add_elem's
// loop then runs).
template <typename T>
bool add_dense_run(T* d, const T* s, int64_t vstep, int64_t q0, int64_t q1) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (vstep == 0) {
      const T v = *s;
      for (int64_t q = q0; q < q1; ++q) d[q] += v;
    } else {
      for (int64_t q = q0; q < q1; ++q) d[q] += s[q];
    }
    return true;
  } else {
    return false;
  }
}

Tensor index_put_impl(const char* op, const Tensor& self, OptionalTensorList indices, const Tensor& values,
                      bool accumulate) {
  SDK_CHECK_TYPE(values.dtype() == self.dtype(), op, ": Index put requires the source and destination dtypes match, "
                 "got ", legacy_type_name(self.dtype()), " for the destination and ", legacy_type_name(values.dtype()),
                 " for the source.");
  check_same_device(op, self, values);
  const bool meta = is_meta(self);
  IndexPlan p = plan_index(op, self, indices, !meta);
  // values broadcast to the indexing result.
  std::optional<DimVector> vb = broadcast_shapes({values.sizes(), p.result_sizes});
  SDK_CHECK_VALUE(vb && vb->ref().equals(p.result_sizes), "shape mismatch: value tensor of shape ", values.sizes(),
                  " cannot be broadcast to indexing result of shape ", p.result_sizes);
  if (meta) {
    self.impl()->bump_version();
    return self;
  }
  if (p.pre_off.empty()) {  // no elements to write: plan_index built no tables
    self.impl()->bump_version();
    return self;
  }
  // The same three-part split of the (broadcast) values' strides.
  DimVector vstrides = broadcast_strides(values, p.result_sizes);
  IntArrayRef rs = p.result_sizes;
  const size_t nbd = p.bshape.size();
  auto part = [&](size_t from, size_t n) {
    return offsets_of(IntArrayRef(rs.data() + from, n), IntArrayRef(vstrides.data() + from, n));
  };
  std::vector<int64_t> vpre = part(0, p.n_pre), vb_off = part(p.n_pre, nbd), vpost = part(p.n_pre + nbd, p.n_post);
  const int64_t npre = static_cast<int64_t>(p.pre_off.size()), nb = static_cast<int64_t>(p.b_off.size()),
                npost = static_cast<int64_t>(p.post_off.size());
  if (npre * nb * npost > 0) {
    if (!accumulate) {
      with_word(self.itemsize(), [&](auto word) {
        using U = decltype(word);
        U* dst = static_cast<U*>(p.src.data_ptr());
        const U* v = static_cast<const U*>(values.data_ptr());
        int64_t grain = std::max<int64_t>(1, kParallelGrain / npost);
        parallel_for(0, npre * nb, grain, [&](int64_t lo, int64_t hi) {
          int64_t pi = lo / nb, bi = lo % nb;
          for (int64_t r = lo; r < hi; ++r) {
            U* d = dst + p.pre_off[pi] + p.b_off[bi];
            const U* s = v + vpre[pi] + vb_off[bi];
            for (int64_t q = 0; q < npost; ++q) d[p.post_off[q]] = s[vpost[q]];
            if (++bi == nb) {
              bi = 0;
              ++pi;
            }
          }
        });
      });
    } else {
      // See Note [Deterministic accumulation].
      // The post dims one dense block of self, and of the values or one value broadcast over it.
      const int64_t vstep = npost > 1 && vpost[1] == 0 ? 0 : 1;
      bool dense_post = p.post_contiguous;
      for (int64_t q = 0; dense_post && q < npost; ++q) dense_post = vpost[static_cast<size_t>(q)] == q * vstep;
      SDK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
        scalar_t* dst = static_cast<scalar_t*>(p.src.data_ptr());
        const scalar_t* v = static_cast<const scalar_t*>(values.data_ptr());
        // Post elements [q0, q1) of every (pre, B) row, rows in index order.
        auto columns = [&](int64_t q0, int64_t q1) {
          for (int64_t pi = 0; pi < npre; ++pi) {
            for (int64_t bi = 0; bi < nb; ++bi) {
              scalar_t* d = dst + p.pre_off[pi] + p.b_off[bi];
              const scalar_t* s = v + vpre[pi] + vb_off[bi];
              if (dense_post && add_dense_run(d, s, vstep, q0, q1)) continue;
              for (int64_t q = q0; q < q1; ++q) d[p.post_off[q]] = add_elem(d[p.post_off[q]], s[vpost[q]]);
            }
          }
        };
        if (p.src.is_contiguous()) {
          parallel_for(0, npost, std::max<int64_t>(1, kParallelGrain / (npre * nb)), columns);
        } else {
          columns(0, npost);
        }
      });
    }
  }
  self.impl()->bump_version();
  return self;
}

Tensor index_put_inplace_kernel(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  return index_put_impl("index_put_", self, indices, values, accumulate);
}
Tensor index_put_impl_kernel(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate,
                             bool /*unsafe*/) {
  return index_put_impl("_index_put_impl_", self, indices, values, accumulate);
}

// index_put: CompositeExplicitAutograd, a copy of self then index_put_.
Tensor index_put_functional(const Tensor& self, OptionalTensorList indices, const Tensor& values, bool accumulate) {
  using Sig = Tensor(const Tensor&, OptionalTensorList, const Tensor&, bool);
  static const auto op = aten_op<Sig>("aten::index_put_");
  Tensor copy = copy_(
      empty_strided(self.sizes(), contiguous_strides(self.sizes(), "index_put"), self.dtype(), self.device()), self);
  return op.call(copy, indices, values, accumulate);
}

// ---------------------------------------------------------------------------
// index_select
// ---------------------------------------------------------------------------

template <bool kOut>
Tensor index_select_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  const char* op = kOut ? "index_select.out" : "index_select";
  SDK_CHECK_VALUE(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, op,
                 "(): Expected dtype int32 or int64 for index");
  check_same_device(op, self, index);
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t n = index.numel();
  DimVector sizes(self.sizes());
  if (self.dim() > 0) sizes[d] = n;
  if (self.dim() == 0) SDK_CHECK_INDEX(n == 1, op, "(): index_select() on a 0-d tensor needs exactly one index, got ", n);
  Tensor result = kOut ? out : make_tensor(sizes, self.dtype(), self.device());
  if (kOut) {
    check_same_device(op, self, out);
    prepare_out(op, out, sizes, self.dtype());
  }
  if (is_meta(self)) return result;
  Tensor li = long_index(index, {n});
  const int64_t* v = li.data_ptr<int64_t>();
  const int64_t size = self.dim() ? self.size(d) : 1;
  for (int64_t i = 0; i < n; ++i) {
    SDK_CHECK_INDEX(v[i] >= 0 && v[i] < size, op, "(): index ", v[i], " is out of bounds for dimension ", d,
                    " with size ", size);
  }
  // result = self viewed with dim d indexed: the index plan with one index at d (no negatives here).
  std::vector<std::optional<Tensor>> idx(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)));
  if (self.dim() == 0) {
    // A 0-d tensor: the result is self.
    return copy_(result, self);
  }
  idx[static_cast<size_t>(d)] = make_view(li, {n}, {1}, li.storage_offset(), op);
  IndexPlan p = plan_index(op, self, idx, true);
  if (result.is_contiguous()) {
    run_index(p, result);
  } else {
    Tensor tmp = make_tensor(sizes, self.dtype(), self.device());
    run_index(p, tmp);
    copy_(result, tmp);
  }
  if (kOut) result.impl()->bump_version();
  return result;
}

Tensor index_select_kernel(const Tensor& self, int64_t dim, const Tensor& index) {
  return index_select_impl<false>(self, dim, index, Tensor());
}
Tensor index_select_out_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out) {
  return index_select_impl<true>(self, dim, index, out);
}

// ---------------------------------------------------------------------------
// gather / scatter
// ---------------------------------------------------------------------------

// Sizes and strides of t with a 0-d tensor seen as 1-d of one element (PyTorch's ensure_nonempty).
DimVector sizes1(const Tensor& t) { return t.dim() ? DimVector(t.sizes()) : DimVector{1}; }
DimVector strides1(const Tensor& t) { return t.dim() ? DimVector(t.strides()) : DimVector{1}; }

void gather_shape_check(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  SDK_CHECK_VALUE(std::max<int64_t>(index.dim(), 1) == nd, op,
                  "(): Index tensor must have the same number of dimensions as input tensor");
  DimVector ss = sizes1(self), is = sizes1(index);
  for (int64_t i = 0; i < nd; ++i) {
    if (i == dim) continue;
    SDK_CHECK_VALUE(is[i] <= ss[i], op, "(): Size does not match at dimension ", i, " expected index ",
                    index.sizes(), " to be no larger than self ", self.sizes(), " apart from dimension ", dim);
  }
}

void scatter_shape_check(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  if (index.numel() == 0) return;
  const int64_t nd = std::max<int64_t>(self.dim(), 1);
  SDK_CHECK_VALUE(std::max<int64_t>(index.dim(), 1) == nd, op,
                  "(): Index tensor must have the same number of dimensions as self tensor");
  DimVector ss = sizes1(self), is = sizes1(index);
  bool bad_self = false, bad_src = false;
  for (int64_t i = 0; i < nd; ++i) {
    if (i != dim && is[i] > ss[i]) bad_self = true;
  }
  if (src) {
    SDK_CHECK_VALUE(std::max<int64_t>(src->dim(), 1) == nd, op,
                    "(): Index tensor must have the same number of dimensions as src tensor");
    DimVector rs = sizes1(*src);
    for (int64_t i = 0; i < nd; ++i) {
      if (is[i] > rs[i]) bad_src = true;
    }
  }
  if (bad_self || bad_src) {
    if (src) {
      SDK_THROW(Value, op, "(): Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim, " and to be no larger size than src ", src->sizes());
    }
    SDK_THROW(Value, op, "(): Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
              " apart from dimension ", dim);
  }
}

// Walks index's elements in row-major order, calling f(self_offset, other_offset):
// self_offset (elements) addresses self at the index's multi-index with dim
// replaced by the index value (bounds-checked, no negative indices, as
// PyTorch's gather/scatter), other_offset the same multi-index in `other`
// (out for gather, src for scatter). Rows along the index's last dim are
// walked with running offsets; parallel walks split rows over threads.
template <typename F>
void walk_index(const char* op, const Tensor& index, int64_t dim, IntArrayRef self_sizes, IntArrayRef self_strides,
                IntArrayRef other_strides, bool parallel, const F& f) {
  const DimVector is = sizes1(index), ist = strides1(index);
  const int64_t nd = static_cast<int64_t>(is.size());
  if (index.numel() == 0) return;
  const int64_t* idx = index.data_ptr<int64_t>();
  const int64_t limit = self_sizes[dim], sstride = self_strides[dim];
  const int64_t last = nd - 1, inner = is[last];
  const int64_t i_in = ist[last], o_in = other_strides[last], s_in = last == dim ? 0 : self_strides[last];
  int64_t rows = 1;
  for (int64_t d = 0; d < last; ++d) rows *= is[d];
  auto body = [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t ibase = 0, sbase = 0, obase = 0;
      for (int64_t d = last - 1, rem = r; d >= 0; --d) {
        const int64_t c = rem % is[d];
        rem /= is[d];
        ibase += c * ist[d];
        obase += c * other_strides[d];
        if (d != dim) sbase += c * self_strides[d];
      }
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t x = idx[ibase + j * i_in];
        SDK_CHECK_INDEX(x >= 0 && x < limit, op, "(): index ", x, " is out of bounds for dimension ", dim,
                        " with size ", limit);
        f(sbase + j * s_in + x * sstride, obase + j * o_in);
      }
    }
  };
  if (parallel) {
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(inner, 1)), body);
  } else {
    body(0, rows);
  }
}

template <bool kOut>
Tensor gather_impl(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/, const Tensor& out) {
  const char* op = kOut ? "gather.out" : "gather";
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64, op, "(): Expected dtype int64 for index");
  check_same_device(op, self, index);
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  gather_shape_check(op, self, d, index);
  Tensor result = kOut ? out : make_tensor(index.sizes(), self.dtype(), self.device());
  if (kOut) {
    check_same_device(op, self, out);
    prepare_out(op, out, index.sizes(), self.dtype());
  }
  if (is_meta(self)) return result;
  Tensor target = result.is_contiguous() ? result : make_tensor(index.sizes(), self.dtype(), self.device());
  DimVector ts = strides1(target);
  with_word(self.itemsize(), [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(target.data_ptr());
    walk_index(op, index, d, sizes1(self), strides1(self), ts, true,
               [&](int64_t soff, int64_t ooff) { o[ooff] = in[soff]; });
  });
  if (!target.is_same(result)) copy_(result, target);
  if (kOut) result.impl()->bump_version();
  return result;
}

Tensor gather_kernel(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  return gather_impl<false>(self, dim, index, sparse_grad, Tensor());
}
Tensor gather_out_kernel(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad, const Tensor& out) {
  return gather_impl<true>(self, dim, index, sparse_grad, out);
}

enum class Reduce { None, Add, Multiply };

Reduce parse_reduce(const char* op, std::optional<std::string_view> reduce) {
  if (!reduce) return Reduce::None;
  if (*reduce == "add") return Reduce::Add;
  if (*reduce == "multiply") return Reduce::Multiply;
  SDK_THROW(Value, op, "(): reduce argument must be either add or multiply.");
}

// self (in place) receives src (a tensor, or a scalar when src is undefined) at index along dim.
Tensor scatter_inplace(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       const std::optional<Scalar>& value, Reduce reduce) {
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64, op, "(): Expected dtype int64 for index");
  check_same_device(op, self, index);
  if (src.defined()) {
    SDK_CHECK_TYPE(src.dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
    check_same_device(op, self, src);
  }
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  scatter_shape_check(op, self, d, index, src.defined() ? &src : nullptr);
  if (is_meta(self) || index.numel() == 0) {
    self.impl()->bump_version();
    return self;
  }
  SDK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    scalar_t* o = self.data_ptr<scalar_t>();
    const scalar_t* s = src.defined() ? src.data_ptr<scalar_t>() : nullptr;
    scalar_t v{};
    if (!src.defined()) v = checked_scalar_to<scalar_t>(*value, op, "value", self.dtype());
    DimVector src_strides = src.defined() ? strides1(src) : DimVector(static_cast<size_t>(std::max<int64_t>(index.dim(), 1)), 0);
    // See Note [Deterministic accumulation]: one thread, index order.
    walk_index(op, index, d, sizes1(self), strides1(self), src_strides, false, [&](int64_t soff, int64_t ioff) {
      scalar_t x = s ? s[ioff] : v;
      switch (reduce) {
        case Reduce::None: o[soff] = x; break;
        case Reduce::Add: o[soff] = add_elem(o[soff], x); break;
        case Reduce::Multiply: o[soff] = mul_elem(o[soff], x); break;
      }
    });
  });
  self.impl()->bump_version();
  return self;
}

Tensor clone_of(const Tensor& self) {
  return copy_(empty_strided(self.sizes(), contiguous_strides(self.sizes(), "clone"), self.dtype(), self.device()),
               self);
}

// ---- scatter_ overloads ----
Tensor scatter__src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace("scatter_", self, dim, index, src, std::nullopt, Reduce::None);
}
Tensor scatter__value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_inplace("scatter_", self, dim, index, Tensor(), value, Reduce::None);
}
Tensor scatter__reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       std::string_view reduce) {
  return scatter_inplace("scatter_", self, dim, index, src, std::nullopt, parse_reduce("scatter_", reduce));
}
Tensor scatter__value_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                             std::string_view reduce) {
  return scatter_inplace("scatter_", self, dim, index, Tensor(), value, parse_reduce("scatter_", reduce));
}
Tensor scatter_add__kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace("scatter_add_", self, dim, index, src, std::nullopt, Reduce::Add);
}

// ---- functional and out= forms: a copy of self, then the in-place form ----
Tensor scatter_src(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace("scatter", clone_of(self), dim, index, src, std::nullopt, Reduce::None);
}
Tensor scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return scatter_inplace("scatter", clone_of(self), dim, index, Tensor(), value, Reduce::None);
}
Tensor scatter_reduce_str(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce) {
  return scatter_inplace("scatter", clone_of(self), dim, index, src, std::nullopt, parse_reduce("scatter", reduce));
}
Tensor scatter_value_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                            std::string_view reduce) {
  return scatter_inplace("scatter", clone_of(self), dim, index, Tensor(), value, parse_reduce("scatter", reduce));
}
Tensor scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_inplace("scatter_add", clone_of(self), dim, index, src, std::nullopt, Reduce::Add);
}

Tensor scatter_out_common(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          const std::optional<Scalar>& value, Reduce reduce, const Tensor& out) {
  check_same_device(op, self, out);
  prepare_out(op, out, self.sizes(), self.dtype());
  if (!out.is_same(self)) copy_(out, self);
  return scatter_inplace(op, out, dim, index, src, value, reduce);
}
Tensor scatter_src_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  return scatter_out_common("scatter.src_out", self, dim, index, src, std::nullopt, Reduce::None, out);
}
Tensor scatter_value_out(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                         const Tensor& out) {
  return scatter_out_common("scatter.value_out", self, dim, index, Tensor(), value, Reduce::None, out);
}
Tensor scatter_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, const Tensor& out) {
  return scatter_out_common("scatter.reduce_out", self, dim, index, src, std::nullopt,
                            parse_reduce("scatter.reduce_out", reduce), out);
}
Tensor scatter_value_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
                                std::string_view reduce, const Tensor& out) {
  return scatter_out_common("scatter.value_reduce_out", self, dim, index, Tensor(), value,
                            parse_reduce("scatter.value_reduce_out", reduce), out);
}
Tensor scatter_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const Tensor& out) {
  return scatter_out_common("scatter_add.out", self, dim, index, src, std::nullopt, Reduce::Add, out);
}

// ---- scatter_reduce.two: reduce = sum | prod | mean | amax | amin, include_self ----
// Note [scatter_reduce]: a count per destination element (indexed by its
// offset from self's data pointer) records how many src values it received;
// with include_self=false the first one replaces self's value; mean divides
// by count (+1 with include_self), flooring for integral dtypes as PyTorch.
// amax/amin propagate NaN. One thread in index order (Note [Deterministic
// accumulation]).
enum class TwoReduce { Sum, Prod, Mean, Amax, Amin };

TwoReduce parse_two_reduce(const char* op, std::string_view reduce) {
  if (reduce == "sum") return TwoReduce::Sum;
  if (reduce == "prod") return TwoReduce::Prod;
  if (reduce == "mean") return TwoReduce::Mean;
  if (reduce == "amax") return TwoReduce::Amax;
  if (reduce == "amin") return TwoReduce::Amin;
  SDK_THROW(Value, op, "(): reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

template <typename T>
bool nan_elem(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(static_cast<acc_type_t<T>>(v));
  }
}

template <typename T>
T pick_elem(T a, T b, bool take_max) {
  if (nan_elem(a)) return a;
  if (nan_elem(b)) return b;
  using A = acc_type_t<T>;
  A x = static_cast<A>(a), y = static_cast<A>(b);
  return (take_max ? y > x : y < x) ? b : a;
}

template <typename T>
T mean_elem(T sum, int64_t n) {
  if constexpr (std::is_integral_v<T>) {
    int64_t a = static_cast<int64_t>(sum);
    int64_t q = a / n;
    if ((a % n != 0) && (a < 0)) --q;  // floor (n > 0)
    return static_cast<T>(q);
  } else {
    return static_cast<T>(static_cast<acc_type_t<T>>(sum) / static_cast<acc_type_t<T>>(n));
  }
}

Tensor scatter_reduce_two_inplace(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor& src, std::string_view reduce, bool include_self) {
  const TwoReduce r = parse_two_reduce(op, reduce);
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64, op, "(): Expected dtype int64 for index");
  check_same_device(op, self, index);
  SDK_CHECK_TYPE(src.dtype() == self.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
  check_same_device(op, self, src);
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  scatter_shape_check(op, self, d, index, &src);
  if (is_meta(self) || index.numel() == 0 || self.numel() == 0) {
    self.impl()->bump_version();
    return self;
  }
  const DimVector ss = sizes1(self), st = strides1(self);
  int64_t span = 1;
  for (size_t i = 0; i < ss.size(); ++i) span += (ss[i] - 1) * st[i];
  std::vector<int64_t> count(static_cast<size_t>(span), 0);
  SDK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    scalar_t* o = self.data_ptr<scalar_t>();
    const scalar_t* s = src.data_ptr<scalar_t>();
    walk_index(op, index, d, ss, st, strides1(src), false, [&](int64_t soff, int64_t ioff) {
      scalar_t x = s[ioff];
      int64_t& c = count[static_cast<size_t>(soff)];
      if (!include_self && c == 0) {
        o[soff] = x;
      } else {
        switch (r) {
          case TwoReduce::Sum:
          case TwoReduce::Mean: o[soff] = add_elem(o[soff], x); break;
          case TwoReduce::Prod: o[soff] = mul_elem(o[soff], x); break;
          case TwoReduce::Amax: o[soff] = pick_elem(o[soff], x, true); break;
          case TwoReduce::Amin: o[soff] = pick_elem(o[soff], x, false); break;
        }
      }
      ++c;
    });
    if (r == TwoReduce::Mean) {
      for (int64_t off = 0; off < span; ++off) {
        int64_t c = count[static_cast<size_t>(off)];
        if (c > 0) o[off] = mean_elem(o[off], c + (include_self ? 1 : 0));
      }
    }
  });
  self.impl()->bump_version();
  return self;
}

Tensor scatter_reduce_two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool include_self) {
  return scatter_reduce_two_inplace("scatter_reduce", clone_of(self), dim, index, src, reduce, include_self);
}
Tensor scatter_reduce__two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce, bool include_self) {
  return scatter_reduce_two_inplace("scatter_reduce_", self, dim, index, src, reduce, include_self);
}
Tensor scatter_reduce_two_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                              std::string_view reduce, bool include_self, const Tensor& out) {
  const char* op = "scatter_reduce.two_out";
  check_same_device(op, self, out);
  prepare_out(op, out, self.sizes(), self.dtype());
  if (!out.is_same(self)) copy_(out, self);
  return scatter_reduce_two_inplace(op, out, dim, index, src, reduce, include_self);
}

// ---------------------------------------------------------------------------
// masked_select, take, flip
// ---------------------------------------------------------------------------

Tensor masked_select_cpu(const char* op, const Tensor& self, const Tensor& mask) {
  SDK_CHECK_TYPE(mask.dtype() == ScalarType::Bool, op, ": expected BoolTensor for mask");
  check_same_device(op, self, mask);
  std::optional<DimVector> shape = broadcast_shapes({self.sizes(), mask.sizes()});
  if (!shape) {
    // PyTorch's broadcasting error, naming the first mismatching dim from the right.
    const int64_t n = std::max(self.dim(), mask.dim());
    for (int64_t i = n - 1; i >= 0; --i) {
      const int64_t da = i - (n - self.dim()), db = i - (n - mask.dim());
      const int64_t a = da >= 0 ? self.size(da) : 1, b = db >= 0 ? mask.size(db) : 1;
      SDK_CHECK_VALUE(a == b || a == 1 || b == 1, op, ": The size of tensor a (", a,
                      ") must match the size of tensor b (", b, ") at non-singleton dimension ", i);
    }
  }
  if (is_meta(self) || is_meta(mask)) data_dependent(op);
  // Row by row over the broadcast shape (all dims but the last), with both operands' strides.
  const DimVector ss = broadcast_strides(self, *shape), ms = broadcast_strides(mask, *shape);
  const size_t nd = shape->size();
  const size_t outer = nd ? nd - 1 : 0;
  const int64_t inner = nd ? (*shape)[nd - 1] : 1;
  const int64_t s_in = nd ? ss[nd - 1] : 0, m_in = nd ? ms[nd - 1] : 0;
  std::vector<int64_t> srow = offsets_of(IntArrayRef(shape->data(), outer), IntArrayRef(ss.data(), outer));
  std::vector<int64_t> mrow = offsets_of(IntArrayRef(shape->data(), outer), IntArrayRef(ms.data(), outer));
  const bool* m = mask.data_ptr<bool>();
  int64_t count = 0;
  for (size_t r = 0; r < mrow.size(); ++r) {
    const bool* mr = m + mrow[r];
    for (int64_t j = 0; j < inner; ++j) count += mr[j * m_in];
  }
  Tensor out = make_tensor({count}, self.dtype(), self.device());
  if (count == 0) return out;
  with_word(self.itemsize(), [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    for (size_t r = 0; r < mrow.size(); ++r) {
      const bool* mr = m + mrow[r];
      const U* sr = in + srow[r];
      for (int64_t j = 0; j < inner; ++j) {
        if (mr[j * m_in]) *o++ = sr[j * s_in];
      }
    }
  });
  return out;
}

Tensor masked_select_kernel(const Tensor& self, const Tensor& mask) {
  return masked_select_cpu("masked_select", self, mask);
}
Tensor masked_select_out_kernel(const Tensor& self, const Tensor& mask, const Tensor& out) {
  return write_out("masked_select.out", out, masked_select_cpu("masked_select.out", self, mask));
}

template <bool kOut>
Tensor take_impl(const Tensor& self, const Tensor& index, const Tensor& out) {
  const char* op = kOut ? "take.out" : "take";
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64, op, "(): Expected a long tensor for index, but got ",
                 legacy_type_name(index.dtype()));
  check_same_device(op, self, index);
  Tensor result = kOut ? out : make_tensor(index.sizes(), self.dtype(), self.device());
  if (kOut) {
    check_same_device(op, self, out);
    prepare_out(op, out, index.sizes(), self.dtype());
  }
  if (is_meta(self)) return result;
  const int64_t numel = self.numel();
  SDK_CHECK_INDEX(numel > 0 || index.numel() == 0, op, "(): tried to take from an empty tensor");
  Tensor li = long_index(index, index.sizes());
  Tensor target = result.is_contiguous() ? result : make_tensor(index.sizes(), self.dtype(), self.device());
  const int64_t* v = li.data_ptr<int64_t>();
  const int64_t n = index.numel();
  with_word(self.itemsize(), [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(target.data_ptr());
    parallel_for(0, n, kParallelGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t x = v[i];
        SDK_CHECK_INDEX(x >= -numel && x < numel, "out of range: tried to access index ", x, " on a tensor of ",
                        numel, " elements.");
        if (x < 0) x += numel;
        int64_t off = 0;
        for (int64_t d = self.dim() - 1; d >= 0; --d) {
          off += (x % self.size(d)) * self.stride(d);
          x /= self.size(d);
        }
        o[i] = in[off];
      }
    });
  });
  if (!target.is_same(result)) copy_(result, target);
  if (kOut) result.impl()->bump_version();
  return result;
}

Tensor take_kernel(const Tensor& self, const Tensor& index) { return take_impl<false>(self, index, Tensor()); }
Tensor take_out_kernel(const Tensor& self, const Tensor& index, const Tensor& out) {
  return take_impl<true>(self, index, out);
}

template <bool kOut>
Tensor flip_impl(const Tensor& self, IntArrayRef dims, const Tensor& out) {
  const char* op = kOut ? "flip.out" : "flip";
  uint64_t mask = 0;
  for (int64_t d : dims) {
    int64_t w = maybe_wrap_dim(d, self.dim());
    SDK_CHECK_VALUE(!((mask >> w) & 1u), op, ": dim ", w, " appears multiple times in the list of dims");
    mask |= uint64_t{1} << w;
  }
  Tensor result = kOut ? out : make_tensor(self.sizes(), self.dtype(), self.device());
  if (kOut) {
    check_same_device(op, self, out);
    prepare_out(op, out, self.sizes(), self.dtype());
  }
  if (is_meta(self) || self.numel() == 0) return result;
  // Walk self with negated strides along the flipped dims, from the last element of each.
  DimVector strides(self.strides());
  int64_t base = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if ((mask >> d) & 1u) {
      base += (self.size(d) - 1) * strides[d];
      strides[d] = -strides[d];
    }
  }
  // Offsets of the rows (all dims but the last), then each row with the last dim's (signed) stride.
  const int64_t nd = self.dim();
  const int64_t inner = nd ? self.size(nd - 1) : 1, istride = nd ? strides[nd - 1] : 1;
  std::vector<int64_t> rows = offsets_of(IntArrayRef(self.sizes().data(), nd ? nd - 1 : 0),
                                         IntArrayRef(strides.data(), nd ? nd - 1 : 0));
  Tensor target = result.is_contiguous() ? result : make_tensor(self.sizes(), self.dtype(), self.device());
  with_word(self.itemsize(), [&](auto word) {
    using U = decltype(word);
    const U* in = static_cast<const U*>(self.data_ptr()) + base;
    U* o = static_cast<U*>(target.data_ptr());
    const int64_t n = static_cast<int64_t>(rows.size());
    parallel_for(0, n, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const U* src = in + rows[r];
        U* dst = o + r * inner;
        if (istride == 1) {
          std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(U));
        } else if (istride == -1) {
          // A flipped contiguous last dim: a constant negative step, which the
          // compiler vectorises (loads reversed by a permute), unlike the
          // run-time stride below.
          for (int64_t j = 0; j < inner; ++j) dst[j] = src[-j];
        } else {
          for (int64_t j = 0; j < inner; ++j) dst[j] = src[j * istride];
        }
      }
    });
  });
  if (!target.is_same(result)) copy_(result, target);
  if (kOut) result.impl()->bump_version();
  return result;
}

Tensor flip_kernel(const Tensor& self, IntArrayRef dims) { return flip_impl<false>(self, dims, Tensor()); }
Tensor flip_out_kernel(const Tensor& self, IntArrayRef dims, const Tensor& out) {
  return flip_impl<true>(self, dims, out);
}

// ---------------------------------------------------------------------------
// Composites: nonzero_numpy and where(condition), the columns of nonzero.
// ---------------------------------------------------------------------------

std::vector<Tensor> nonzero_numpy_impl(const Tensor& self) {
  static const auto op = aten_op<Tensor(const Tensor&)>("aten::nonzero");
  // A 0-d input counts as 1-d (numpy's and PyTorch's nonzero(as_tuple=True)).
  Tensor in = self.dim() == 0 ? as_strided(self, {1}, {1}, self.storage_offset()) : self;
  Tensor nz = op.call(in);
  std::vector<Tensor> out;
  for (int64_t j = 0; j < in.dim(); ++j) {
    out.push_back(as_strided(nz, {nz.size(0)}, {nz.stride(0)}, nz.storage_offset() + j * nz.stride(1)));
  }
  return out;
}

std::vector<Tensor> where_condition_impl(const Tensor& condition) { return nonzero_numpy_impl(condition); }

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  m.impl("index_put", &sdk::ops::index_put_functional);
}
SDK_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.impl("nonzero_numpy", &sdk::ops::nonzero_numpy_impl);
  m.impl("where", &sdk::ops::where_condition_impl);
}

// One set of kernels serves CPU and Meta: they stop after the shape checks
// and allocation on meta (see Note [Advanced indexing plan]).
#define SDK_INDEXING_IMPLS(m)                                            \
  m.impl("index.Tensor", &sdk::ops::index_kernel);                       \
  m.impl("index.Tensor_out", &sdk::ops::index_out_kernel);               \
  m.impl("index_put_", &sdk::ops::index_put_inplace_kernel);             \
  m.impl("_index_put_impl_", &sdk::ops::index_put_impl_kernel);          \
  m.impl("index_select", &sdk::ops::index_select_kernel);                \
  m.impl("index_select.out", &sdk::ops::index_select_out_kernel);        \
  m.impl("gather", &sdk::ops::gather_kernel);                            \
  m.impl("gather.out", &sdk::ops::gather_out_kernel);                    \
  m.impl("scatter.src", &sdk::ops::scatter_src);                         \
  m.impl("scatter_.src", &sdk::ops::scatter__src);                       \
  m.impl("scatter.src_out", &sdk::ops::scatter_src_out);                 \
  m.impl("scatter.value", &sdk::ops::scatter_value);                     \
  m.impl("scatter_.value", &sdk::ops::scatter__value);                   \
  m.impl("scatter.value_out", &sdk::ops::scatter_value_out);             \
  m.impl("scatter.reduce", &sdk::ops::scatter_reduce_str);               \
  m.impl("scatter_.reduce", &sdk::ops::scatter__reduce);                 \
  m.impl("scatter.reduce_out", &sdk::ops::scatter_reduce_out);           \
  m.impl("scatter.value_reduce", &sdk::ops::scatter_value_reduce);       \
  m.impl("scatter_.value_reduce", &sdk::ops::scatter__value_reduce);     \
  m.impl("scatter.value_reduce_out", &sdk::ops::scatter_value_reduce_out); \
  m.impl("scatter_add", &sdk::ops::scatter_add_kernel);                  \
  m.impl("scatter_add_", &sdk::ops::scatter_add__kernel);                \
  m.impl("scatter_add.out", &sdk::ops::scatter_add_out);                 \
  m.impl("scatter_reduce.two", &sdk::ops::scatter_reduce_two);           \
  m.impl("scatter_reduce_.two", &sdk::ops::scatter_reduce__two);         \
  m.impl("scatter_reduce.two_out", &sdk::ops::scatter_reduce_two_out);   \
  m.impl("masked_select", &sdk::ops::masked_select_kernel);              \
  m.impl("masked_select.out", &sdk::ops::masked_select_out_kernel);      \
  m.impl("nonzero", &sdk::ops::nonzero_kernel);                          \
  m.impl("nonzero.out", &sdk::ops::nonzero_out_kernel);                  \
  m.impl("take", &sdk::ops::take_kernel);                                \
  m.impl("take.out", &sdk::ops::take_out_kernel);                        \
  m.impl("flip", &sdk::ops::flip_kernel);                                \
  m.impl("flip.out", &sdk::ops::flip_out_kernel)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_INDEXING_IMPLS(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_INDEXING_IMPLS(m); }
