#include <backend_sdk/tensor/TensorImpl.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/detail/SafeSize.h>

#include <cstdlib>

namespace sdk {

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, Device device, DispatchKeySet keys)
    : storage_(std::move(storage)), dtype_(dtype), device_(device), key_set_(keys),
      inference_(inference_mode_enabled()) {
  sizes_.resize(1, 0);
  strides_.resize(1, 1);
  numel_ = 0;
}

TensorImpl::~TensorImpl() = default;

namespace {
thread_local bool t_inference_mode = false;  // Note [Inference tensors]
}  // namespace

bool TensorImpl::inference_mode_enabled() { return t_inference_mode; }
void TensorImpl::set_inference_mode_enabled(bool enabled) { t_inference_mode = enabled; }

void TensorImpl::refuse_inference_write() {
  SDK_CHECK(false,
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get "
            "a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
            "details.");
  std::abort();  // unreachable: SDK_CHECK(false) throws
}

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
  // Callers check their sizes first (with their own wording); this is the
  // backstop that keeps a wrapped element count out of every tensor
  // (Note [Size arithmetic overflow], core/detail/SafeSize.h).
  int64_t n = 0;
  SDK_CHECK(!multiply_sizes_overflows(sizes_, &n), "numel: integer multiplication overflow with sizes=",
            IntArrayRef(sizes_));
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
                                          int64_t storage_offset, const char* op) {
  SDK_CHECK_VALUE(sizes.size() == strides.size(), op, ": sizes and strides must have the same length, got ",
                  sizes.size(), " and ", strides.size());
  SDK_CHECK_VALUE(storage_offset >= 0, op, ": storage offset must be non-negative, got ", storage_offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    SDK_CHECK_VALUE(sizes[i] >= 0 && strides[i] >= 0, op, ": sizes and strides must be non-negative, got sizes ",
                    sizes, " and strides ", strides);
  }
  return safe_storage_nbytes(sizes, strides, itemsize, storage_offset, op);
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

DimVector contiguous_strides(IntArrayRef sizes, const char* op) { return safe_contiguous_strides(sizes, op); }

int64_t checked_numel(IntArrayRef sizes, const char* what) {
  for (int64_t s : sizes) {
    SDK_CHECK_VALUE(s >= 0, what, ": Trying to create tensor with negative dimension ", s, ": ", sizes);
  }
  return safe_numel(sizes, what);
}

}  // namespace sdk
