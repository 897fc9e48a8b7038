// The autograd layer's C++ part: the per-tensor requires-grad flag and the
// boxed fallback registered for every Autograd<Backend> key.
//
// Note [Autograd fallback fast path]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every tensor carries its backend's Autograd key (Note [Fallthrough keys]),
// so every call that is not excluded reaches the Autograd slot. Operators with
// a kernel of their own there (CompositeImplicitAutograd ones, custom autograd
// kernels) run it; all others reach the boxed autograd fallback. It must cost
// almost nothing when autograd has nothing to do:
//   * grad mode off (no_grad) is the thread-local exclusion of
//     AutogradFunctionality (Note [TLS key sets]), so such calls never reach
//     the Autograd slot at all;
//   * when no tensor argument requires grad, a call skips the Autograd key:
//     the operator's table records, per backend, that its Autograd slot is
//     this fallback (OperatorEntry::drop_without_grad_), and a call's key
//     masking (OperatorEntry::mask_for_call) drops the Autograd bit after
//     checking the arguments (boxing::any_requires_grad for unboxed calls,
//     OperatorEntry::any_requires_grad_boxed for boxed ones, all of Python's):
//     one table load and a scan of the tensor arguments' AutogradMeta pointers.
//   * a redispatch into the slot (a kernel above Autograd redispatching) still
//     reaches the fallback, which makes the same check and redispatches below
//     Autograd; for unboxed calls before boxing
//     (KernelFunction::make_autograd_fallback), so it never boxes either.
// "Requires grad" is the flag kept in the tensor's AutogradMeta: set on leaves
// with requires_grad=True and on every output recorded in a graph (a non-leaf
// with a grad_fn). Tensors without an AutogradMeta do not require grad.
// Otherwise an operator with a C++ derivative formula is recorded in C++
// (Note [Derivative formula table], autograd/detail/Formulas.h), also without
// Python; any other calls the recording hook installed by the Python autograd
// package (backend_sdk/autograd/_record.py), which runs the operator below
// Autograd with AutogradFunctionality excluded and records a Python node whose
// backward is the operator's Python formula. Without a hook (C++ only, no
// Python) such an operator runs below Autograd and nothing is recorded.
#pragma once

#include <memory>

#include <backend_sdk/dispatch/KernelFunction.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::autograd {

struct Node;  // <backend_sdk/autograd/detail/Node.h>

// Note [Autograd state across wrappers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The Python autograd state of a tensor (tensor hooks, retain_grad, Python
// view bases; grad_fn and .grad are below, in C++) lives in its Python
// wrapper's __dict__. A wrapper can die while the TensorImpl lives
// on (a Python kernel's result is unwrapped into an IValue, C++ keeps a
// tensor), so when a wrapper whose tensor has an AutogradMeta is finalized and
// the TensorImpl outlives it, the bindings park a copy of the __dict__ here
// (`py_state`, an owned PyObject*), and the next wrapper of the tensor takes
// it back. It is parked only while no wrapper exists, so it never hides a
// Python reference cycle from the garbage collector. `release_py_state` (set
// by the bindings) drops it under the GIL when the TensorImpl dies.
//
// Note [Autograd view bases]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A view made in grad mode of a floating-point tensor that does not take part
// in autograd is not recorded (the fast path skips its operator), yet an
// in-place write of a tensor that requires grad into it must give its base a
// history (CopySlices, backend_sdk/autograd/_record.py). The view creation
// hook (Note [View creation hook], tensor/detail/ViewHook.h) keeps the root base in
// the view's AutogradMeta (`view_base`); views recorded by autograd keep it
// on the Python side instead (recording a view resets what is here).
//
// Note [View creation meta]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's CreationMeta: a view made with grad mode off (no_grad, and the
// kernels of recorded operators, which run with it off) is a NoGradMode view,
// one made in inference mode of a normal tensor an InferenceMode view; both
// keep their root base. A tracked view requires grad when its base does (it is a
// leaf without an edge of its own: computing with it records nodes whose edge
// for it is (None, 0), as PyTorch's), and an in-place write into it with grad
// mode on is refused with PyTorch's message (backend_sdk/autograd/_record.py).
// detach() makes an alias that is not a view (`_C._detach`).
//
// The graph state of a tensor lives here too, as PyTorch's AutogradMeta keeps
// it (Note [Autograd nodes], autograd/detail/Node.h): `grad_fn` and `output_nr` (the
// node that produced a non-leaf and which of its outputs it is) and, for a
// leaf that requires grad, a weak reference to its AccumulateGrad node (weak:
// the node holds the tensor, so a strong one would be a cycle), and .grad.
// Note [View creation meta]; the values are PyTorch's order, and Python reads them.
// MultiOutputNode: an output of an operator returning several views (unbind, split; Note [Tensor lists in
// the formula table]), which refuses in-place writes.
enum class CreationMeta : uint8_t { Default = 0, NoGradMode = 1, InferenceMode = 2, MultiOutputNode = 3 };

struct SDK_API AutogradMeta final : AutogradMetaInterface {
  bool requires_grad_ = false;
  CreationMeta creation_meta = CreationMeta::Default;  // of a view with a view_base
  // A leaf whose hooks live in Python: the engine accumulates through the bindings (Engine.h).
  bool has_py_hooks = false;
  uint32_t output_nr = 0;
  uint32_t attr_version = 0;  // the version when grad_fn was set (Note [View grad_fn regeneration], Node.cpp)
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;
  Tensor grad;  // .grad
  Tensor view_base;  // Note [Autograd view bases]
  void* py_state = nullptr;
  static void (*release_py_state)(void*);
  // Its own flag, or (Note [View creation meta]) its base's for a view this meta tracks.
  bool requires_grad() const override {
    return requires_grad_ || (view_base.defined() && view_base.impl()->autograd_meta() != nullptr &&
                               view_base.impl()->autograd_meta()->requires_grad());
  }
  ~AutogradMeta() override {
    if (py_state != nullptr && release_py_state != nullptr) release_py_state(py_state);
  }
};
// The tensor's AutogradMeta, created on first use.
SDK_API AutogradMeta& autograd_meta_of(const Tensor& t);
SDK_API AutogradMeta* maybe_autograd_meta(const Tensor& t);
// The root base remembered for a view (Note [Autograd view bases]); undefined if none.
SDK_API Tensor view_base(const Tensor& t);

// The flag of Note [Autograd fallback fast path].
SDK_API bool requires_grad(const Tensor& t);
SDK_API void set_requires_grad(const Tensor& t, bool value);

// Installs the kernel the fallback calls when a tensor argument requires grad
// (boxed, receives the call's key set). Replaces any previous hook; the old one
// is kept alive (Note [Kernel lifetime]).
SDK_API void set_recording_hook(KernelFunction hook);
SDK_API bool has_recording_hook();

// Grad mode: a thread-local flag; off also excludes AutogradFunctionality on the thread
// (Note [Grad mode and the Autograd keys], autograd/Fallback.cpp).
SDK_API bool is_grad_enabled();
SDK_API void set_grad_enabled(bool enabled);

}  // namespace sdk::autograd
