#include "tensor/TensorImpl.h"

#include "core/Exception.h"

namespace sdk {

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, Device device, DispatchKeySet keys)
    : storage_(std::move(storage)), dtype_(dtype), device_(device), key_set_(keys) {
  sizes_.resize(1, 0);
  strides_.resize(1, 1);
  numel_ = 0;
}

TensorImpl::~TensorImpl() = default;

int64_t TensorImpl::size(int64_t d) const { return sizes_[maybe_wrap_dim(d, dim(), false)]; }
int64_t TensorImpl::stride(int64_t d) const { return strides_[maybe_wrap_dim(d, dim(), false)]; }

void TensorImpl::set_sizes_contiguous(IntArrayRef sizes) {
  sizes_.assign(sizes);
  strides_ = contiguous_strides(sizes);
  refresh();
}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  SDK_CHECK_VALUE(sizes.size() == strides.size(), "sizes and strides must have the same length, got ",
                  sizes.size(), " and ", strides.size());
  sizes_.assign(sizes);
  strides_.assign(strides);
  storage_offset_ = storage_offset;
  refresh();
}

void TensorImpl::refresh() {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  numel_ = n;
  // PyTorch's rule: dims of size 1 may have any stride; an empty tensor is contiguous.
  bool contiguous = true;
  if (n != 0) {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (sizes_[d] == 1) continue;
      if (strides_[d] != expected) {
        contiguous = false;
        break;
      }
      expected *= sizes_[d];
    }
  }
  is_contiguous_ = contiguous;
}

size_t TensorImpl::compute_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                                          int64_t storage_offset) {
  SDK_CHECK_VALUE(sizes.size() == strides.size(), "sizes and strides must have the same length, got ", sizes.size(),
                  " and ", strides.size());
  SDK_CHECK_VALUE(storage_offset >= 0, "storage offset must be non-negative, got ", storage_offset);
  int64_t last = storage_offset;
  bool overflow = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    SDK_CHECK_VALUE(sizes[i] >= 0 && strides[i] >= 0, "sizes and strides must be non-negative, got sizes ", sizes,
                    " and strides ", strides);
    if (sizes[i] == 0) return 0;
    int64_t extent;
    overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &extent);
    overflow |= __builtin_add_overflow(last, extent, &last);
  }
  uint64_t nbytes;
  overflow |= __builtin_mul_overflow(static_cast<uint64_t>(last) + 1, static_cast<uint64_t>(itemsize), &nbytes);
  SDK_CHECK_VALUE(!overflow, "a tensor with sizes ", sizes, " and strides ", strides,
                  " needs more storage than can be addressed");
  return static_cast<size_t>(nbytes);
}

int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, bool wrap_scalar) {
  if (ndim <= 0) {
    SDK_CHECK_INDEX(wrap_scalar, "Dimension specified as ", dim, " but tensor has no dimensions");
    ndim = 1;
  }
  int64_t lo = -ndim, hi = ndim - 1;
  SDK_CHECK_INDEX(dim >= lo && dim <= hi, "Dimension out of range (expected to be in range of [", lo, ", ", hi,
                  "], but got ", dim, ")");
  return dim < 0 ? dim + ndim : dim;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    acc *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

int64_t checked_numel(IntArrayRef sizes, const char* what) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    SDK_CHECK_VALUE(s >= 0, what, ": Trying to create tensor with negative dimension ", s, ": ", sizes);
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  SDK_CHECK_VALUE(!overflow, what, ": the number of elements of a tensor of size ", sizes, " overflows int64");
  return n;
}

}  // namespace sdk
