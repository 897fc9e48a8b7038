#include <backend_sdk/ops/detail/Geometry.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/detail/SafeSize.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace sdk::ops {

size_t checked_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize, int64_t storage_offset,
                              const char* op) {
  SDK_CHECK_VALUE(sizes.size() == strides.size(), op, ": mismatch in length of strides and shape");
  return safe_storage_nbytes(sizes, strides, itemsize, storage_offset, op);
}

void check_non_negative_strides(IntArrayRef strides, const char* op) {
  for (int64_t s : strides) {
    SDK_CHECK_VALUE(s >= 0, op, ": negative strides are not supported, got strides ", strides);
  }
}

DimVector infer_view_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVector result(shape);
  int64_t known = 1;  // product of the given dims
  int64_t infer_dim = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      SDK_CHECK_VALUE(infer_dim < 0, op, ": only one dimension can be inferred");
      infer_dim = static_cast<int64_t>(d);
    } else {
      SDK_CHECK_VALUE(shape[d] >= 0, op, ": invalid shape dimension ", shape[d]);
    }
  }
  // The given dims' product overflowing is its own error, not "invalid for input of size"
  // (a wrapped product could even match numel); Note [Size arithmetic overflow].
  {
    DimVector given;
    for (int64_t s : shape) {
      if (s != -1) given.push_back(s);
    }
    known = safe_numel(given, op);
  }
  bool fits = (numel == known || (infer_dim >= 0 && known > 0 && numel % known == 0));
  SDK_CHECK_VALUE(fits, op, ": shape '", shape, "' is invalid for input of size ", numel);
  if (infer_dim >= 0) {
    // With no elements, any size fits the -1 (0 * k == 0): refuse to guess.
    SDK_CHECK_VALUE(known != 0, op, ": cannot reshape tensor of 0 elements into shape ", shape,
                    " because the unspecified dimension size -1 can be any value and is ambiguous");
    result[infer_dim] = numel / known;
  }
  return result;
}

std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                              IntArrayRef new_sizes) {
  const int64_t new_ndim = static_cast<int64_t>(new_sizes.size());
  if (old_sizes.empty()) return DimVector(new_sizes.size(), 1);
  // old_sizes are an existing tensor's: their product fits (TensorImpl::refresh checks it),
  // but a running product may not when a 0 comes last ([2**31, 2**32, 0]): safe_numel
  // counts any 0 dim as 0 elements (Note [Size arithmetic overflow]).
  const int64_t numel = safe_numel(old_sizes, "view");
  if (numel == 0) {
    if (old_sizes.equals(new_sizes)) return DimVector(old_strides);
    return contiguous_strides(new_sizes, "view");
  }

  DimVector new_strides(new_sizes.size());
  int64_t next_new = new_ndim - 1;  // innermost new dim not yet given a stride
  // Walk the old dims innermost first; a chunk ends where the next-outer
  // dim is not laid out right after it (see Note [View strides]).
  int64_t chunk_end = static_cast<int64_t>(old_sizes.size()) - 1;
  while (chunk_end >= 0) {
    const int64_t base_stride = old_strides[chunk_end];
    int64_t chunk_numel = old_sizes[chunk_end];
    int64_t d = chunk_end;
    while (d > 0 && (old_sizes[d - 1] == 1 || old_strides[d - 1] == chunk_numel * base_stride)) {
      --d;
      chunk_numel *= old_sizes[d];
    }
    // Give the chunk new dims until their product reaches the chunk's size;
    // size-1 new dims are absorbed by whichever chunk reaches them first.
    int64_t view_numel = 1;
    while (next_new >= 0 && (view_numel < chunk_numel || new_sizes[next_new] == 1)) {
      new_strides[next_new] = view_numel * base_stride;
      view_numel *= new_sizes[next_new];
      --next_new;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    chunk_end = d - 1;
  }
  if (next_new != -1) return std::nullopt;
  return new_strides;
}

}  // namespace sdk::ops
