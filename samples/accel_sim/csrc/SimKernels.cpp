#include "SimKernels.h"

#include <cstring>
#include <optional>
#include <vector>

#include "device_sim.h"
#include "ops/Factories.h"
#include "ops/Functions.h"
#include "ops/DeviceOps.h"
#include "runtime/DeviceGuard.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Stream.h"

namespace accel {

using sdk::Device;
using sdk::DeviceType;
using sdk::IValue;
using sdk::Tensor;

namespace {

struct Job {
  std::function<void()> fn;
};

// Runs on the stream's worker (Note [Simulated kernels], step 3).
void run_job(void* args) {
  Job* job = nullptr;
  std::memcpy(&job, args, sizeof(job));
  try {
    job->fn();
  } catch (const std::exception& e) {
    device_sim_kernel_fail(e.what());  // surfaces at the next synchronising call
  }
  delete job;
}

bool on_device(const Tensor& t) { return t.defined() && !t.is_cpu() && !t.is_meta(); }

// Calls f(tensor) for every tensor inside an argument.
template <typename F>
void for_each_tensor(IValue& v, F&& f) {
  if (v.is_tensor()) {
    f(v.to_tensor());
  } else if (v.is_tensor_list()) {
    std::vector<Tensor> list = v.to_tensor_list();
    for (Tensor& t : list) f(t);
    v = IValue(std::move(list));
  } else if (v.is_list()) {
    for (IValue& e : v.to_list()) {
      if (e.is_tensor()) f(e.to_tensor());
    }
  }
}

}  // namespace

Tensor meta_like(const Tensor& t) {
  const int64_t itemsize = static_cast<int64_t>(t.itemsize());
  const int64_t elems = (static_cast<int64_t>(t.storage()->nbytes()) + itemsize - 1) / itemsize;
  Tensor base = sdk::make_tensor({elems}, t.dtype(), Device(DeviceType::Meta));
  return sdk::make_view(base, t.sizes(), t.strides(), t.storage_offset(), "meta_like");
}

namespace {

// The device of the call; every other tensor must be on it, except CPU
// 0-dim tensors (scalars), as with CUDA.
Device call_device(const sdk::OperatorHandle& op, IValue* args, size_t n) {
  std::optional<Tensor> first;
  for (size_t i = 0; i < n; ++i) {
    for_each_tensor(args[i], [&](Tensor& t) {
      if (!t.defined() || (t.is_cpu() && t.dim() == 0)) return;
      if (!first) {
        first = t;
      } else if (t.device() != first->device()) {
        sdk::check_same_device(op.name().c_str(), *first, t);
      }
    });
  }
  SDK_CHECK_VALUE(first && on_device(*first), op.name(), ": no tensor argument is on the device");
  return first->device();
}

// The argument a `Tensor(a!)` return aliases.
size_t aliased_argument(const sdk::FunctionSchema& schema, const sdk::Argument& ret) {
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    const auto& a = schema.arguments[i].alias_info;
    if (a && a->is_write && a->before_sets == ret.alias_info->before_sets) return i;
  }
  SDK_CHECK(false, schema.qualified_name(), ": a mutable return aliases no argument");
  return 0;
}

}  // namespace

Tensor host_alias(const Tensor& t) {
  const sdk::StorageImpl& storage = *t.storage();
  void* host = storage.data() ? device_sim_translate(storage.data()) : nullptr;
  SDK_CHECK(host || !storage.data(), "accel: ", t.str(), " is not in simulated device memory");
  return sdk::from_blob(host, storage.nbytes(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(),
                        Device(DeviceType::CPU));
}

void launch(Device device, const char* name, std::function<void()> fn) {
  auto* job = new Job{std::move(fn)};
  sdk::runtime::Stream stream = sdk::runtime::current_stream(device);
  sdk_status st = device_sim_launch_kernel_named(stream.native(), name, &run_job, &job, sizeof(job));
  if (st != SDK_SUCCESS) {
    delete job;
    sdk::runtime::check_status(device.type, st, "accel: kernel launch");
  }
}

void local_copy(const Tensor& dst, const Tensor& src) {
  Tensor d = host_alias(dst), s = host_alias(src);
  launch(dst.device(), "copy_", [d, s] { sdk::ops::copy_(d, s); });
}

void simulated_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet, sdk::Stack* stack) {
  const sdk::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments.size(), base = stack->size() - n;
  IValue* args = stack->data() + base;
  const Device device = call_device(op, args, n);
  sdk::runtime::DeviceGuard guard(device);

  // 1. The meta run: checks, result geometry, out= sizes.
  sdk::Stack meta(args, args + n);
  for (IValue& v : meta) for_each_tensor(v, [](Tensor& t) { if (on_device(t)) t = meta_like(t); });
  try {
    op.redispatch_boxed(sdk::DispatchKeySet(sdk::DispatchKey::Meta), &meta);
  } catch (const sdk::Error& e) {
    if (e.kind() != sdk::ErrorKind::NotImplemented) throw;
    // The results' shapes depend on the data (a boolean mask, nonzero): no
    // launch can allocate them up front, so the operator runs on the host.
    sdk::ops::cpu_fallback(op, sdk::DispatchKeySet(), stack);
    return;
  }
  const size_t m = schema.returns.size();
  std::vector<Tensor> results(m);
  std::vector<Tensor> fresh(m);  // device buffers of fresh results
  for (size_t j = 0; j < m; ++j) {
    const sdk::Argument& ret = schema.returns[j];
    const IValue& r = meta[meta.size() - m + j];
    SDK_CHECK_NOT_IMPLEMENTED(r.is_tensor(), op.name(), ": accel runs only operators that return tensors");
    if (ret.alias_info && ret.alias_info->is_write) {
      results[j] = args[aliased_argument(schema, ret)].to_tensor();
      if (!results[j].sizes().equals(r.to_tensor().sizes())) {
        sdk::ops::device::resize_(results[j], r.to_tensor().sizes(), std::nullopt);
      }
    } else {
      const Tensor& g = r.to_tensor();
      fresh[j] = results[j] = sdk::ops::empty_strided_on(device, g.sizes(), g.strides(), g.dtype(), std::nullopt);
    }
  }
  for (size_t i : schema.mutable_argument_indices()) {
    if (args[i].is_tensor() && args[i].to_tensor().defined()) args[i].to_tensor().impl()->bump_version();
  }

  // 2. The job: the CPU kernel over host aliases, on the stream.
  sdk::Stack host(args, args + n);
  for (IValue& v : host) for_each_tensor(v, [](Tensor& t) { if (on_device(t)) t = host_alias(t); });
  std::vector<Tensor> fresh_alias(m);
  for (size_t j = 0; j < m; ++j) {
    if (fresh[j].defined()) fresh_alias[j] = host_alias(fresh[j]);
  }
  launch(device, op.name().c_str(), [op, host = std::move(host), fresh_alias = std::move(fresh_alias), m]() mutable {
    op.call_boxed(&host);
    for (size_t j = 0; j < m; ++j) {
      if (fresh_alias[j].defined()) sdk::ops::copy_(fresh_alias[j], host[host.size() - m + j].to_tensor());
    }
  });

  stack->resize(base);
  for (Tensor& r : results) stack->emplace_back(std::move(r));
}

}  // namespace accel
