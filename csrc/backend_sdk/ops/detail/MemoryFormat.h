// Memory formats (PyTorch's MemoryFormat ids as ints) and the strides they
// give a tensor; used by empty.memory_format and the copies (_to_copy, clone).
//
// Note [Memory formats]
// ~~~~~~~~~~~~~~~~~~~~~
// The ids are PyTorch's: contiguous_format 0, preserve_format 1,
// channels_last 2 (rank 4, NCHW sizes laid out as NHWC: strides
// [H*W*C, 1, W*C, C]), channels_last_3d 3 (rank 5, NCDHW laid out as NDHWC).
// A memory format is only a stride order: the sizes stay NCHW, so every
// kernel that handles strided tensors handles channels_last ones. A factory
// (`empty`) refuses preserve_format ("unsupported memory format Preserve", as
// PyTorch); a copy keeps self's strides under preserve_format when self is
// non-overlapping and dense, else takes the format self's strides suggest
// (suggest_memory_format). The Python side (backend_sdk/_formats.py) mirrors
// suggest_memory_format and is_contiguous(memory_format=) for *_like.
#pragma once

#include <cstdint>
#include <optional>

#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

constexpr int64_t kContiguousFormat = 0;
constexpr int64_t kPreserveFormat = 1;
constexpr int64_t kChannelsLast = 2;
constexpr int64_t kChannelsLast3d = 3;

// Strides of a fresh tensor of `sizes` in format `fmt` (contiguous,
// channels_last or channels_last_3d); RuntimeError for a rank the format
// does not fit ("required rank 4 tensor to use channels_last format") or
// for preserve_format.
DimVector memory_format_strides(IntArrayRef sizes, int64_t fmt, const char* op);

// True when t's strides are those of `fmt` for its sizes (size-1 dims ignored).
bool is_contiguous_as(const Tensor& t, int64_t fmt);

// PyTorch's suggest_memory_format: channels_last(_3d) when t is laid out so
// (and not also plainly contiguous), else contiguous_format.
int64_t suggest_memory_format(const Tensor& t);

}  // namespace sdk::ops
