// GEMM for the CPU kernels: an optimised BLAS when one can be loaded, a plain
// loop otherwise.
//
// Note [BLAS loading]
// ~~~~~~~~~~~~~~~~~~~
// The optimised path is OpenBLAS from the scipy-openblas32 wheel (the build
// numpy and scipy use), a runtime dependency of the Python package. It is
// loaded with dlopen on first use rather than linked, so libbackend_sdk has no
// link-time dependency on a path inside some Python environment: the loader
// tries $BACKEND_SDK_BLAS, then the path the Python package registers
// (set_blas_library_path), then scipy_openblas32/lib next to the installed
// backend_sdk package. If none loads, GEMM falls back to a portable loop
// (correct, slower) and blas_library() says so.
#pragma once

#include <cstdint>
#include <string>

#include <backend_sdk/core/ScalarType.h>

namespace sdk::ops::blas {

// C(m x n, row stride ldc) = alpha * op(A) * op(B) + beta * C, row-major.
// op(A) is m x k: A itself (row stride lda) or, with trans_a, A^T where A is
// k x m with row stride lda. Likewise B. float32 and float64 only. beta == 0
// means C's previous contents are ignored (NaNs in C do not propagate).
SDK_API void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc);

// Note [GEMMs inside parallel loops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel that splits work over the pool (Note [Parallel loops]) and calls
// gemm in every chunk (convolution, one sample per chunk) wants each GEMM on
// one thread: OpenBLAS's own threads on top of the pool's oversubscribe the
// cores (conv2d 8x64x56x56 forward on 2 cores: 18.4 ms, against 14.4 ms with
// single-threaded GEMMs). The OpenBLAS that scipy-openblas ships (pthreads)
// has no per-call or thread-local thread count, only the process-wide
// openblas_set_num_threads. A SerialGemmScope sets it to 1 while at least one
// scope is open and restores the count it found when the last one closes
// (scopes are counted under a mutex, so they nest and overlap across
// threads). GEMMs other threads run meanwhile are single-threaded: correct,
// only slower. Without OpenBLAS (the builtin loop) a scope does nothing.
class SDK_API SerialGemmScope {
 public:
  SerialGemmScope();
  ~SerialGemmScope();
  SerialGemmScope(const SerialGemmScope&) = delete;
  SerialGemmScope& operator=(const SerialGemmScope&) = delete;
};

// The BLAS's own thread count (1 inside a SerialGemmScope), 1 for the builtin loop.
SDK_API int gemm_num_threads();

// Path of the BLAS in use, or "builtin (no optimised BLAS found)".
SDK_API std::string blas_library();
SDK_API void set_blas_library_path(const std::string& path);

}  // namespace sdk::ops::blas
