#include <backend_sdk/ops/detail/Blas.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <shared_mutex>
#include <string>
#include <vector>

#include <backend_sdk/core/Exception.h>

namespace sdk::ops::blas {
namespace {

// CBLAS enums (cblas.h): the values are fixed by the CBLAS standard.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);

using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

struct Blas {
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SetThreadsFn set_num_threads = nullptr;  // optional: Note [GEMMs inside parallel loops]
  GetThreadsFn get_num_threads = nullptr;
  std::string path;
};

// Note [BLAS and fork]
// ~~~~~~~~~~~~~~~~~~~~
// OpenBLAS installs a pthread_atfork prepare handler that shuts its thread
// pool down (joins its server threads). Run while another thread is inside
// an OpenBLAS call (a device_sim worker running an accel matmul), it waits
// for a pool that never becomes idle, and the parent hangs inside fork()
// holding the GIL. Every call below holds g_calls shared; our own prepare
// handler takes it exclusively, so fork() waits for the calls in flight and
// no new one starts until the parent and child handlers release it. Prepare
// handlers run in reverse order of registration, and ours is registered
// right after OpenBLAS is loaded, so it runs before OpenBLAS's.
std::shared_mutex g_calls;
void before_fork() { g_calls.lock(); }
void after_fork() { g_calls.unlock(); }

std::mutex g_mutex;
std::string g_registered_path;
Blas* g_blas = nullptr;  // set once, never freed (the library stays loaded)

bool try_load(const std::string& path, Blas* out) {
  if (path.empty()) return false;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return false;
  // scipy-openblas prefixes its symbols; a system OpenBLAS does not.
  for (const char* prefix : {"scipy_", ""}) {
    auto s = reinterpret_cast<SgemmFn>(dlsym(handle, (std::string(prefix) + "cblas_sgemm").c_str()));
    auto d = reinterpret_cast<DgemmFn>(dlsym(handle, (std::string(prefix) + "cblas_dgemm").c_str()));
    if (s && d) {
      pthread_atfork(&before_fork, &after_fork, &after_fork);  // Note [BLAS and fork]
      auto set = reinterpret_cast<SetThreadsFn>(dlsym(handle, (std::string(prefix) + "openblas_set_num_threads").c_str()));
      auto get = reinterpret_cast<GetThreadsFn>(dlsym(handle, (std::string(prefix) + "openblas_get_num_threads").c_str()));
      *out = Blas{s, d, set && get ? set : nullptr, set && get ? get : nullptr, path};
      return true;
    }
  }
  dlclose(handle);
  return false;
}

std::string path_next_to_this_library() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&path_next_to_this_library), &info) || !info.dli_fname) return "";
  std::string self = info.dli_fname;  // .../site-packages/backend_sdk/lib/libbackend_sdk.so
  auto cut = self.rfind("/backend_sdk/lib/");
  if (cut == std::string::npos) return "";
  return self.substr(0, cut) + "/scipy_openblas32/lib/libscipy_openblas.so";
}

const Blas& blas() {
  std::lock_guard<std::mutex> guard(g_mutex);
  if (g_blas) return *g_blas;
  auto* b = new Blas();
  const char* env = std::getenv("BACKEND_SDK_BLAS");
  if (!(env && try_load(env, b)) && !try_load(g_registered_path, b) && !try_load(path_next_to_this_library(), b)) {
    b->path = "builtin (no optimised BLAS found)";
  }
  g_blas = b;
  return *g_blas;
}

// The portable fallback: i-p-j order so the inner loop streams rows of B and C.
template <typename T>
void gemm_loop(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc) {
  std::vector<T> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), T(0));
    for (int64_t p = 0; p < k; ++p) {
      T av = ta ? a[p * lda + i] : a[i * lda + p];
      if (tb) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + p];
      } else {
        const T* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
    }
    T* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) crow[j] = alpha * row[j] + (beta == T(0) ? T(0) : beta * crow[j]);
  }
}

// Note [GEMMs inside parallel loops]: open scopes, and the thread count the first one found.
std::mutex g_serial_mutex;
int g_serial_scopes = 0;
int g_threads_before = 1;

bool fits_blasint(int64_t v) { return v >= 0 && v <= INT32_MAX; }

}  // namespace

void set_blas_library_path(const std::string& path) {
  std::lock_guard<std::mutex> guard(g_mutex);
  g_registered_path = path;
}

std::string blas_library() { return blas().path; }

SerialGemmScope::SerialGemmScope() {
  const Blas& lib = blas();
  if (!lib.set_num_threads) return;
  std::lock_guard<std::mutex> guard(g_serial_mutex);
  if (g_serial_scopes++ == 0) {
    g_threads_before = lib.get_num_threads();
    if (g_threads_before > 1) lib.set_num_threads(1);
  }
}

SerialGemmScope::~SerialGemmScope() {
  const Blas& lib = blas();
  if (!lib.set_num_threads) return;
  std::lock_guard<std::mutex> guard(g_serial_mutex);
  if (--g_serial_scopes == 0 && g_threads_before > 1) lib.set_num_threads(g_threads_before);
}

int gemm_num_threads() {
  const Blas& lib = blas();
  return lib.get_num_threads ? lib.get_num_threads() : 1;
}

void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const Blas& lib = blas();
  bool use_blas = lib.sgemm && fits_blasint(m) && fits_blasint(n) && fits_blasint(k) && fits_blasint(lda) &&
                  fits_blasint(ldb) && fits_blasint(ldc) && k > 0;
  int ta = trans_a ? kTrans : kNoTrans, tb = trans_b ? kTrans : kNoTrans;
  // BLAS requires leading dimensions >= the row length even when unused.
  lda = std::max<int64_t>(lda, std::max<int64_t>(1, trans_a ? m : k));
  ldb = std::max<int64_t>(ldb, std::max<int64_t>(1, trans_b ? k : n));
  std::shared_lock<std::shared_mutex> in_call(g_calls, std::defer_lock);
  if (use_blas) in_call.lock();  // Note [BLAS and fork]
  if (dtype == ScalarType::Float32) {
    if (use_blas) {
      lib.sgemm(kRowMajor, ta, tb, int(m), int(n), int(k), float(alpha), static_cast<const float*>(a), int(lda),
                static_cast<const float*>(b), int(ldb), float(beta), static_cast<float*>(c), int(ldc));
    } else {
      gemm_loop<float>(trans_a, trans_b, m, n, k, float(alpha), static_cast<const float*>(a), lda,
                       static_cast<const float*>(b), ldb, float(beta), static_cast<float*>(c), ldc);
    }
  } else if (dtype == ScalarType::Float64) {
    if (use_blas) {
      lib.dgemm(kRowMajor, ta, tb, int(m), int(n), int(k), alpha, static_cast<const double*>(a), int(lda),
                static_cast<const double*>(b), int(ldb), beta, static_cast<double*>(c), int(ldc));
    } else {
      gemm_loop<double>(trans_a, trans_b, m, n, k, alpha, static_cast<const double*>(a), lda,
                        static_cast<const double*>(b), ldb, beta, static_cast<double*>(c), ldc);
    }
  } else {
    SDK_THROW(Type, "gemm: only float32 and float64 are supported, got ", scalar_type_name(dtype));
  }
}

}  // namespace sdk::ops::blas
