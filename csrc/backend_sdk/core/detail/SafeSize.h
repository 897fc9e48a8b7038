// Overflow-checked size arithmetic: numel, contiguous strides, storage bytes,
// and the products and sums shape functions compute.
//
// Note [Size arithmetic overflow]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Sizes, strides and offsets are int64 and come straight from users
// (`ones(4).repeat(2**62)`, `empty(2**61, dtype=float64)`, a `cat` of
// expanded tensors). Computed with plain `*` and `+`, a product or sum past
// int64 wraps (undefined behaviour, in practice modulo 2**64): repeat gave
// shape (0,), cat a "negative dimension", and a wrapped byte count would
// allocate a buffer smaller than the tensor. So every size computation in
// factories and shape functions goes through the helpers below, which use
// the compiler's overflow builtins and throw a RuntimeError (ErrorKind::Runtime,
// PyTorch's TORCH_CHECK type) worded as PyTorch words it, prefixed with the
// operator:
//   - element count:  "<op>: numel: integer multiplication overflow ..."
//   - contiguous strides: "<op>: Stride calculation overflowed with sizes=[...]"
//   - storage bytes:  "<op>: Storage size calculation overflowed with sizes=[...]"
//                     (" and strides=[...]" for an explicit layout)
//   - any other product/sum of sizes (repeat, cat): "<op>: integer
//     multiplication/addition overflow: <what>".
// Rules (as c10's, except where noted):
//   - A tensor with a 0 dim has 0 elements whatever its other sizes (c10's
//     product is order dependent here; ours is not), and needs 0 bytes.
//   - Contiguous strides multiply max(size, 1), so they can overflow even for
//     a tensor without elements (`empty(0, 2**62, 4)`): c10 refuses it too.
//   - Byte counts must fit in int64 (c10's storage_max()), since storage
//     sizes and offsets are int64 throughout.
// Negative sizes are the caller's check (a ValueError with PyTorch's
// "Trying to create tensor with negative dimension" wording); the helpers
// assume sizes >= 0 unless they say otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/core/Exception.h>

namespace sdk {

// a * b / a + b into *out; true when the exact result does not fit in int64.
inline bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool add_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

// Product of non-negative sizes into *out (0 if any size is 0); true on overflow.
inline bool multiply_sizes_overflows(IntArrayRef sizes, int64_t* out) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) {
      *out = 0;
      return false;
    }
    overflow |= mul_overflows(n, s, &n);
  }
  *out = n;
  return overflow;
}

// a * b, or RuntimeError "<op>: integer multiplication overflow: <what...>".
template <typename... What>
int64_t safe_mul(int64_t a, int64_t b, const char* op, const What&... what) {
  int64_t r = 0;
  SDK_CHECK(!mul_overflows(a, b, &r), op, ": integer multiplication overflow: ", what...);
  return r;
}

// a + b, or RuntimeError "<op>: integer addition overflow: <what...>".
template <typename... What>
int64_t safe_add(int64_t a, int64_t b, const char* op, const What&... what) {
  int64_t r = 0;
  SDK_CHECK(!add_overflows(a, b, &r), op, ": integer addition overflow: ", what...);
  return r;
}

// The element count of non-negative sizes; RuntimeError on overflow.
inline int64_t safe_numel(IntArrayRef sizes, const char* op) {
  int64_t n = 0;
  SDK_CHECK(!multiply_sizes_overflows(sizes, &n), op, ": numel: integer multiplication overflow with sizes=", sizes);
  return n;
}

// Row-major strides of sizes (products of max(size, 1)); RuntimeError on overflow.
inline DimVector safe_contiguous_strides(IntArrayRef sizes, const char* op) {
  DimVector strides(sizes.size());
  int64_t acc = 1;
  bool overflow = false;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = acc;
    // The product past the outermost dim is not a stride: do not check it.
    if (d > 0) overflow |= mul_overflows(acc, sizes[d] > 1 ? sizes[d] : 1, &acc);
  }
  SDK_CHECK(!overflow, op, ": Stride calculation overflowed with sizes=", sizes);
  return strides;
}

// Bytes a contiguous tensor of sizes needs (0 without elements); RuntimeError
// when they do not fit in int64.
inline size_t safe_storage_nbytes_contiguous(IntArrayRef sizes, size_t itemsize, const char* op) {
  int64_t n = 0;
  bool overflow = multiply_sizes_overflows(sizes, &n);
  overflow |= mul_overflows(n, static_cast<int64_t>(itemsize), &n);
  SDK_CHECK(!overflow, op, ": Storage size calculation overflowed with sizes=", sizes);
  return static_cast<size_t>(n);
}

// Bytes of storage, from its start, that a tensor of sizes/strides at
// storage_offset (all non-negative) reaches: (offset + sum((size-1)*stride) + 1)
// * itemsize, or 0 without elements. RuntimeError when they do not fit in int64.
inline size_t safe_storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize, int64_t storage_offset,
                                  const char* op) {
  for (int64_t s : sizes) {
    if (s == 0) return 0;
  }
  int64_t last = storage_offset;
  bool overflow = false;
  for (size_t i = 0; i < sizes.size() && i < strides.size(); ++i) {
    int64_t extent = 0;
    overflow |= mul_overflows(sizes[i] - 1, strides[i], &extent);
    overflow |= add_overflows(last, extent, &last);
  }
  int64_t nbytes = 0;
  overflow |= add_overflows(last, 1, &last);
  overflow |= mul_overflows(last, static_cast<int64_t>(itemsize), &nbytes);
  SDK_CHECK(!overflow, op, ": Storage size calculation overflowed with sizes=", sizes, " and strides=", strides,
            storage_offset ? " at storage offset " : "", storage_offset ? std::to_string(storage_offset) : "");
  return static_cast<size_t>(nbytes);
}

}  // namespace sdk
