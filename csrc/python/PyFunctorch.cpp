// Batched tensors for vmap: the TensorImpl that carries the FuncTorchBatched key.
//
// Note [Batched tensors] (backend_sdk/_functorch/vmap.py) is the whole design; this file only
// holds the C++ object: a BatchedTensorImpl wraps a `value` tensor that has one more dimension
// (`bdim`, the batch dimension) and remembers the vmap `level` it belongs to. Its own sizes and
// strides are the *logical* ones (value's without bdim), its storage, offset, dtype and device are
// the value's, and its key set is the value's plus FuncTorchBatched. So the wrapper is, to any
// C++ code that reads it directly, a valid view of the first batch element (memory-safe, never
// out of bounds); every operator call reaches the Python batching fallback first, because
// FuncTorchBatched is above every key a tensor carries (Note [DispatchKey layout]).
#include <pybind11/pybind11.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/tensor/TensorImpl.h>
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

class BatchedTensorImpl final : public TensorImpl {
 public:
  BatchedTensorImpl(Tensor value, int64_t bdim, int64_t level)
      : TensorImpl(value.storage(), value.dtype(), value.device(),
                   value.key_set() | DispatchKeySet(DispatchKey::FuncTorchBatched)),
        value_(std::move(value)),
        bdim_(bdim),
        level_(level) {
    DimVector sizes, strides;
    for (int64_t d = 0; d < value_.dim(); ++d) {
      if (d == bdim_) continue;
      sizes.push_back(value_.sizes()[d]);
      strides.push_back(value_.strides()[d]);
    }
    set_sizes_and_strides(sizes, strides, value_.storage_offset());
  }
  const Tensor& value() const { return value_; }
  int64_t bdim() const { return bdim_; }
  int64_t level() const { return level_; }

 private:
  Tensor value_;
  int64_t bdim_;
  int64_t level_;
};

// Only this file makes BatchedTensorImpls, so the dynamic_cast (whose type info is local to this
// module) finds every one of them; a plain TensorImpl that copied a batched key set is not one.
const BatchedTensorImpl* as_batched(PyObject* obj) {
  if (!is_tensor(obj)) return nullptr;
  const Tensor& t = unpack_tensor(obj);
  if (!t.defined() || !t.key_set().has(DispatchKey::FuncTorchBatched)) return nullptr;
  return dynamic_cast<const BatchedTensorImpl*>(t.impl());
}

}  // namespace

void init_functorch(py::module_& m) {
  m.def(
      "_make_batched",
      [](const Tensor& value, int64_t bdim, int64_t level) {
        SDK_CHECK_VALUE(value.defined(), "_make_batched: the value is an undefined tensor");
        SDK_CHECK_VALUE(value.dim() >= 1, "_make_batched: the value must have a batch dimension, got a 0-dim tensor");
        SDK_CHECK_INDEX(bdim >= 0 && bdim < value.dim(), "_make_batched: bdim ", bdim,
                        " is out of range for a value of ", value.dim(), " dimensions");
        SDK_CHECK_VALUE(level >= 1, "_make_batched: level must be >= 1, got ", level);
        return Tensor(make_intrusive<BatchedTensorImpl>(value, bdim, level));
      },
      py::arg("value"), py::arg("bdim"), py::arg("level"),
      "A batched tensor of vmap level `level` over `value`, batched along `bdim` (Note [Batched tensors]).");
  m.def(
      "_unwrap_batched",
      [](py::handle obj) -> py::object {
        const BatchedTensorImpl* b = as_batched(obj.ptr());
        if (b == nullptr) return py::none();
        return py::make_tuple(py::reinterpret_steal<py::object>(wrap_tensor(b->value())), b->bdim(), b->level());
      },
      py::arg("obj"), "(value, bdim, level) of a batched tensor, None for anything else.");
  m.def(
      "_batched_level",
      [](py::handle obj) -> int64_t {
        const BatchedTensorImpl* b = as_batched(obj.ptr());
        return b == nullptr ? 0 : b->level();
      },
      py::arg("obj"), "The vmap level of a batched tensor, 0 for anything else (also non-tensors).");
}

}  // namespace sdk::python
