// Shape and stride arithmetic shared by factories, views and resize_:
// storage extents, view size inference and view stride computation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/core/Macros.h>

namespace sdk::ops {

// Bytes of storage a tensor with this geometry needs from the storage's start
// (0 when it has no elements), checked against overflow. Sizes and strides
// must be non-negative (callers check them first, with their own wording).
// RuntimeError "op: Storage size calculation overflowed ..." on overflow
// (Note [Size arithmetic overflow], core/detail/SafeSize.h).
SDK_API size_t checked_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                                      int64_t storage_offset, const char* op);

// ValueError unless every stride is >= 0: "op: negative strides are not supported, got strides [-1]".
SDK_API void check_non_negative_strides(IntArrayRef strides, const char* op);

// view/reshape size inference: replaces a single -1 by what makes the
// product equal numel. ValueError "op: shape '[2, 5]' is invalid for input
// of size 6", "op: only one dimension can be inferred", "op: invalid shape
// dimension -2", and the ambiguous 0-element case as PyTorch words them;
// RuntimeError when the given dims' product overflows.
SDK_API DimVector infer_view_size(IntArrayRef shape, int64_t numel, const char* op);

// Note [View strides]
// ~~~~~~~~~~~~~~~~~~~
// A tensor can be viewed with a new shape without copying when every group
// of its dims that is laid out as one contiguous block ("chunk": dims d-1, d
// with stride[d-1] == size[d] * stride[d], size-1 dims joining any chunk) is
// split or merged by the new shape only *within* itself: walking both shapes
// from the innermost dim, the new dims consumed for a chunk must multiply to
// exactly the chunk's element count. New dims of size 1 may sit anywhere.
// Each new dim's stride is the chunk's innermost stride times the product of
// the new dims inside it. A 0-dim tensor (one element) views as anything of
// one element with all strides 1; a tensor without elements keeps its
// strides when the shape is unchanged and is otherwise contiguous. Returns
// nullopt when no such strides exist (PyTorch then asks for .reshape()).
SDK_API std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                                      IntArrayRef new_sizes);

}  // namespace sdk::ops
