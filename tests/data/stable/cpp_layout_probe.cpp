// The negative control of tools/stable_abi_check.sh: a kernel library built against the SDK's C++
// API (not the stable surface). Its kernel reads TensorImpl through the inline accessors of
// <backend_sdk/tensor/Tensor.h>, so the field offsets of the SDK it was compiled against are baked
// into the binary. On an SDK whose TensorImpl layout changed (SDK_TEST_TENSORIMPL_PADDING) it reads
// the wrong fields: the check shows that the padded build does break a C++-API library, so that a
// stable library passing on it means something.
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/tensor/Tensor.h>

namespace {
// The numel and dim TensorImpl stores, as this binary's layout finds them: 1000 * dim + numel.
int64_t layout_probe(const sdk::Tensor& x) { return 1000 * x.dim() + x.numel(); }
}  // namespace

SDK_LIBRARY(cpp_layout_probe, m) { m.def("probe(Tensor x) -> int"); }

SDK_LIBRARY_IMPL(cpp_layout_probe, CPU, m) { m.impl("probe", &layout_probe); }
