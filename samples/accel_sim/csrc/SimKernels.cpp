#include "SimKernels.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <optional>
#include <vector>

#include "device_sim.hpp"
#include <backend_sdk/dispatch/DisableRecordFunction.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Stream.h>

namespace accel {

using sdk::Device;
using sdk::DeviceType;
using sdk::IValue;
using sdk::Tensor;

namespace {

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
  Tensor meta = sdk::make_tensor({elems}, t.dtype(), Device(DeviceType::Meta));
  meta.impl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());  // not a view: nothing to track
  return meta;
}

namespace {

// The device of the call; every other tensor must be on it, except CPU
// 0-dim tensors (scalars), as with CUDA.
Device call_device(const sdk::OperatorHandle& op, const IValue* args, size_t n) {
  const Tensor* first = nullptr;
  auto visit = [&](const Tensor& t) {
    if (!t.defined() || (t.is_cpu() && t.dim() == 0)) return;
    if (!first) {
      first = &t;
    } else if (t.device() != first->device()) {
      sdk::check_same_device(op.name().c_str(), *first, t);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const IValue& v = args[i];
    if (v.is_tensor()) {
      visit(v.to_tensor());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) visit(t);
    } else if (v.is_list()) {
      for (const IValue& e : v.to_list()) {
        if (e.is_tensor()) visit(e.to_tensor());
      }
    }
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

// ---------------------------------------------------------------------------
// Note [Launch geometry cache]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Step 1 of Note [Simulated kernels] (the meta run) is a pure function of the
// operator and its arguments' metadata: a Meta kernel never sees data. So its
// outcome (the results' sizes, strides and dtypes) is cached per thread, keyed
// by a signature of the operator and of every argument (a tensor's device,
// dtype, geometry and storage size; a CPU scalar tensor's value too, the one
// piece of data a Meta kernel may read; every other argument's value). A hit
// skips the meta tensors and the Meta kernel. Not cached: a meta run that
// raised (errors are raised again by running it again), one that resized an
// out= argument (resizing warns where PyTorch does: it must run each time),
// and arguments the signature cannot spell (generators, nested lists).
// Meta kernels registered later do not invalidate entries (the operator set of
// a backend is fixed once its library is loaded).
// ---------------------------------------------------------------------------

// Note [Undefined results]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A Tensor return may be an undefined tensor (None in Python): the results a
// backward operator's `bool[N] output_mask` masks off (convolution_backward,
// native_layer_norm_backward, native_batch_norm_backward, ...), or one whose
// optional input was None (no weight, no grad_weight). The Meta kernel says
// which: its undefined results are recorded as `defined = false`, the launch
// allocates nothing for them and returns them undefined, and the worker copies
// only the defined ones. The CPU kernel (same arguments, same mask) returns
// the same ones undefined; a `.out` overload is not used for such a call (its
// out= arguments would have to be given for every return).
struct ResultGeometry {
  sdk::DimVector sizes, strides;
  sdk::ScalarType dtype;
  bool defined = true;
};

using Signature = std::vector<int64_t>;

struct SignatureHash {
  size_t operator()(const Signature& key) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t w : key) h = (h ^ static_cast<uint64_t>(w)) * 0x100000001b3ull + (h >> 29);
    return static_cast<size_t>(h);
  }
};

constexpr size_t kMaxCachedGeometries = 4096;

void sign_tensor(const Tensor& t, Signature& key) {
  if (!t.defined()) {
    key.push_back(-1);
    return;
  }
  const sdk::TensorImpl& impl = *t.impl();
  key.push_back((static_cast<int64_t>(t.device().type) << 40) | (static_cast<int64_t>(t.device().index + 1) << 24) |
                (static_cast<int64_t>(t.dtype()) << 8) | (impl.is_wrapped_number() ? 1 : 0));
  key.push_back(t.dim());
  for (int64_t s : t.sizes()) key.push_back(s);
  for (int64_t s : t.strides()) key.push_back(s);
  key.push_back(t.storage_offset());
  key.push_back(static_cast<int64_t>(t.storage()->nbytes()));
  if (t.is_cpu() && t.numel() == 1 && t.itemsize() <= 8) {
    int64_t bits = 0;
    std::memcpy(&bits, static_cast<const char*>(t.data_ptr()), t.itemsize());
    key.push_back(bits);
  }
}

// False if `v` cannot be spelled (the call is then not cached).
bool sign(const IValue& v, Signature& key) {
  key.push_back(static_cast<int64_t>(v.tag()) << 56);
  switch (v.tag()) {
    case IValue::Tag::None:
      return true;
    case IValue::Tag::Tensor:
      sign_tensor(v.to_tensor(), key);
      return true;
    case IValue::Tag::Double: {
      double d = v.to_double();
      int64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      key.push_back(bits);
      return true;
    }
    case IValue::Tag::Int:
    case IValue::Tag::Bool:
      key.push_back(v.to_int());
      return true;
    case IValue::Tag::String: {
      const std::string& s = v.to_string();
      key.push_back(static_cast<int64_t>(s.size()));
      for (size_t i = 0; i < s.size(); i += 8) {
        int64_t w = 0;
        std::memcpy(&w, s.data() + i, std::min<size_t>(8, s.size() - i));
        key.push_back(w);
      }
      return true;
    }
    case IValue::Tag::Device: {
      Device d = v.to_device();
      key.push_back((static_cast<int64_t>(d.type) << 8) | (d.index + 1));
      return true;
    }
    case IValue::Tag::IntList:
      key.push_back(static_cast<int64_t>(v.to_int_list().size()));
      key.insert(key.end(), v.to_int_list().begin(), v.to_int_list().end());
      return true;
    case IValue::Tag::DoubleList:
      key.push_back(static_cast<int64_t>(v.to_double_list().size()));
      for (double d : v.to_double_list()) {
        int64_t bits;
        std::memcpy(&bits, &d, sizeof(bits));
        key.push_back(bits);
      }
      return true;
    case IValue::Tag::TensorList:
      key.push_back(static_cast<int64_t>(v.to_tensor_list().size()));
      for (const Tensor& t : v.to_tensor_list()) sign_tensor(t, key);
      return true;
    case IValue::Tag::GenericList:
      key.push_back(static_cast<int64_t>(v.to_list().size()));
      for (const IValue& e : v.to_list()) {
        if (e.is_list() || !sign(e, key)) return false;
      }
      return true;
    default:
      return false;
  }
}

// The `.out` overload that writes a functional operator's results into given
// tensors (add.Tensor -> add.out, max.dim -> max.dim_max): the functional
// arguments, then one kwarg-only `Tensor(a!)` per return. The worker runs it
// into the fresh results' aliases, saving a host allocation and a copy.
// nullptr if there is none.
sdk::OperatorEntry* find_out_variant(const sdk::OperatorHandle& op) {
  const sdk::FunctionSchema& f = op.schema();
  if (f.is_mutable()) return nullptr;
  sdk::Dispatcher& dispatcher = sdk::Dispatcher::singleton();
  const std::string base = f.ns + "::" + f.name;
  for (const std::string& overload : dispatcher.overload_names(base)) {
    std::optional<sdk::OperatorHandle> candidate = dispatcher.find_schema(overload.empty() ? base : base + "." + overload);
    if (!candidate) continue;
    const sdk::FunctionSchema& o = candidate->schema();
    const size_t nf = f.arguments.size(), nr = f.returns.size();
    if (!o.is_out_fn() || o.arguments.size() != nf + nr || o.returns.size() != nr) continue;
    bool same = true;
    for (size_t i = 0; i < nf && same; ++i) same = o.arguments[i].str() == f.arguments[i].str();
    for (size_t i = nf; i < nf + nr && same; ++i) same = o.arguments[i].kwarg_only && o.arguments[i].is_write();
    if (same) return &candidate->entry();
  }
  return nullptr;
}

struct LaunchPlan {
  std::vector<ResultGeometry> results;
  sdk::OperatorEntry* out_variant = nullptr;  // see find_out_variant
  std::vector<size_t> mutable_arguments;      // the schema's, whose version counters a launch bumps
};

struct GeometryCache {
  std::unordered_map<Signature, LaunchPlan, SignatureHash> entries;
  std::unordered_map<sdk::OperatorEntry*, sdk::OperatorEntry*> out_variants;
  Signature scratch;

  sdk::OperatorEntry* out_variant_of(const sdk::OperatorHandle& op) {
    auto it = out_variants.find(&op.entry());
    if (it == out_variants.end()) it = out_variants.emplace(&op.entry(), find_out_variant(op)).first;
    return it->second;
  }
};

GeometryCache& geometry_cache() {
  thread_local GeometryCache cache;
  return cache;
}

// Step 1 of Note [Simulated kernels] on meta tensors. Returns false if the
// operator must run through the CPU fallback; fills `geometry` and sets
// `cacheable` to false if an out= argument was resized.
bool meta_run(const sdk::OperatorHandle& op, IValue* args, size_t n, std::vector<ResultGeometry>* geometry,
              bool* cacheable) {
  const sdk::FunctionSchema& schema = op.schema();
  sdk::Stack meta(args, args + n);
  for (IValue& v : meta) for_each_tensor(v, [](Tensor& t) { if (on_device(t)) t = meta_like(t); });
  try {
    op.redispatch_boxed(sdk::DispatchKeySet(sdk::DispatchKey::Meta), &meta);
  } catch (const sdk::Error& e) {
    if (e.kind() != sdk::ErrorKind::NotImplemented) throw;
    return false;
  }
  const size_t m = schema.returns.size();
  geometry->clear();
  for (size_t j = 0; j < m; ++j) {
    const IValue& r = meta[meta.size() - m + j];
    SDK_CHECK_NOT_IMPLEMENTED(r.is_tensor(), op.name(), ": accel runs only operators that return tensors");
    const Tensor& g = r.to_tensor();
    const sdk::Argument& ret = schema.returns[j];
    if (!g.defined()) {  // Note [Undefined results]
      SDK_CHECK(!(ret.alias_info && ret.alias_info->is_write), op.name(), ": a mutable return is undefined");
      geometry->push_back({sdk::DimVector(), sdk::DimVector(), sdk::ScalarType::Undefined, false});
      continue;
    }
    geometry->push_back({sdk::DimVector(g.sizes()), sdk::DimVector(g.strides()), g.dtype()});
    if (ret.alias_info && ret.alias_info->is_write) {
      const Tensor& arg = args[aliased_argument(schema, ret)].to_tensor();
      if (!arg.sizes().equals(g.sizes())) *cacheable = false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Note [Kernel jobs]
// ~~~~~~~~~~~~~~~~~~
// A launched operator is one KernelJob: the boxed arguments with every device
// tensor replaced by a description of its memory (host alias address and
// geometry). The worker builds the CPU tensors over the aliases itself, runs
// the CPU kernel (a functional operator's `.out` overload straight into the
// fresh results' aliases when it has one; otherwise the operator, whose
// results are then copied in) and clears what it made, so every object the kernel creates
// is created and destroyed on the worker thread; the job then goes back to a
// free list from which launching threads take it again. Allocation and
// release of each piece stay on one thread: a producer thread whose blocks a
// consumer thread frees makes malloc slow for both (arena locks, no cache).
// The job holds no device tensor (Note [Simulated kernels]), so freeing a
// tensor while its kernel is queued returns its memory at once, as in CUDA.
// A job whose kernel does not run (an injected fault marked it, or its device
// was lost and the queue drained) is returned the same way by the release
// function the simulator calls instead (device_sim_launch_kernel_ex): the
// launch's copy of the job pointer is the only reference to it, so without
// that every faulted kernel leaked its job (about 1 KiB).
// ---------------------------------------------------------------------------

struct AliasSpec {
  size_t slot;        // argument index, or result index for a fresh result
  int64_t list_pos;   // index in a Tensor[] argument, -1 for a Tensor
  void* host;
  size_t nbytes;
  sdk::DimVector sizes, strides;
  int64_t offset;
  sdk::ScalarType dtype;
};

AliasSpec alias_spec(const Tensor& t, size_t slot, int64_t list_pos) {
  return {slot, list_pos, device_sim::host_address(t), t.storage()->nbytes(), sdk::DimVector(t.sizes()),
          sdk::DimVector(t.strides()), t.storage_offset(), t.dtype()};
}

Tensor alias_of(const AliasSpec& a) {
  return sdk::from_blob(a.host, a.nbytes, a.sizes, a.strides, a.offset, a.dtype, Device(DeviceType::CPU));
}

struct KernelJob {
  sdk::OperatorEntry* op = nullptr;
  sdk::Stack args;                 // device tensors left undefined; see `inputs`
  std::vector<AliasSpec> inputs;   // device tensor arguments
  std::vector<AliasSpec> results;  // fresh results: the kernel's outputs are copied here
  size_t num_returns = 0;
  sdk::OperatorEntry* out_variant = nullptr;  // run instead of `op`, into the results' aliases
  KernelJob* next = nullptr;       // in the free list
};

// Jobs the workers finished, pushed lock-free; a launching thread takes the
// whole list at once (no ABA: nobody pops single nodes).
std::atomic<KernelJob*> g_finished_jobs{nullptr};

struct JobPool {
  std::vector<KernelJob*> free;
  ~JobPool() {
    for (KernelJob* j : free) delete j;
  }
};

KernelJob* take_job() {
  thread_local JobPool pool;
  if (pool.free.empty()) {
    for (KernelJob* j = g_finished_jobs.exchange(nullptr, std::memory_order_acquire); j != nullptr;) {
      KernelJob* next = j->next;
      j->args.clear();  // the non-tensor arguments were made on a launching thread
      if (pool.free.size() < 256) {
        pool.free.push_back(j);
      } else {
        delete j;
      }
      j = next;
    }
  }
  if (pool.free.empty()) return new KernelJob();
  KernelJob* job = pool.free.back();
  pool.free.pop_back();
  return job;
}

void finish_job(KernelJob* job) {
  job->inputs.clear();
  job->results.clear();
  KernelJob* head = g_finished_jobs.load(std::memory_order_relaxed);
  do {
    job->next = head;
  } while (!g_finished_jobs.compare_exchange_weak(head, job, std::memory_order_release, std::memory_order_relaxed));
}

// After the kernel ran, or instead of it when it does not run (Note [Kernel
// jobs]); on the stream's worker either way.
void release_kernel_job(void* raw) {
  KernelJob* job = nullptr;
  std::memcpy(&job, raw, sizeof(job));
  // What the kernel made (CPU results, aliases) dies here, on this thread.
  for (IValue& v : job->args) {
    if (v.is_tensor() || v.is_tensor_list() || v.is_list()) v = IValue();
  }
  finish_job(job);
}

// Runs on the stream's worker (Note [Simulated kernels], step 3); again for
// every replay of a graph that recorded it (Note [Simulated graphs]), so it
// works on a copy of the job's arguments and leaves the job to
// release_kernel_job, which device_sim calls after the last run.
void run_kernel_job(void* raw) {
  KernelJob* job = nullptr;
  std::memcpy(&job, raw, sizeof(job));
  sdk::profiler::DisableRecordFunctionGuard not_host_work;  // device work (as device_sim::launch's kernels)
  try {
    sdk::Stack args = job->args;  // call_boxed consumes its stack
    for (const AliasSpec& a : job->inputs) {
      IValue& v = args[a.slot];
      if (a.list_pos < 0) {
        v = IValue(alias_of(a));
      } else if (v.is_list()) {
        v.to_list()[a.list_pos] = IValue(alias_of(a));
      } else {
        std::vector<Tensor> list = v.to_tensor_list();
        list[a.list_pos] = alias_of(a);
        v = IValue(std::move(list));
      }
    }
    const size_t m = job->num_returns;
    if (job->out_variant != nullptr) {
      for (const AliasSpec& a : job->results) args.emplace_back(alias_of(a));  // in return order
      sdk::OperatorHandle(job->out_variant).call_boxed(&args);
    } else {
      sdk::OperatorHandle(job->op).call_boxed(&args);
      for (const AliasSpec& a : job->results) {
        sdk::ops::copy_(alias_of(a), args[args.size() - m + a.slot].to_tensor());
      }
    }
  } catch (const std::exception& e) {
    device_sim_kernel_fail(e.what());  // surfaces at the next synchronising call
  }
}

void launch_job(Device device, const char* name, KernelJob* job) {
  sdk::runtime::Stream stream = sdk::runtime::current_stream(device);
  sdk_status st =
      device_sim_launch_kernel_reusable(stream.native(), name, &run_kernel_job, &release_kernel_job, &job, sizeof(job));
  if (st != SDK_SUCCESS) {
    finish_job(job);
    sdk::runtime::check_status(device.type, st, "accel: kernel launch");
  }
}

}  // namespace

void simulated_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet, sdk::Stack* stack) {
  const sdk::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments.size(), base = stack->size() - n;
  IValue* args = stack->data() + base;
  const Device device = call_device(op, args, n);
  std::optional<sdk::runtime::DeviceGuard> guard;  // most launches are on the current device already
  if (sdk::runtime::current_device(device.type) != device) guard.emplace(device);

  // 1. The results' geometry: from the cache or a meta run (Note [Launch geometry cache]).
  GeometryCache& cache = geometry_cache();
  Signature& key = cache.scratch;
  key.clear();
  key.push_back(reinterpret_cast<intptr_t>(&op.entry()));
  bool signed_ok = true;
  for (size_t i = 0; i < n && signed_ok; ++i) signed_ok = sign(args[i], key);
  const LaunchPlan* plan = nullptr;
  LaunchPlan computed;
  if (signed_ok) {
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) plan = &it->second;
  }
  if (plan == nullptr) {
    bool cacheable = signed_ok;
    if (!meta_run(op, args, n, &computed.results, &cacheable)) {
      // The results' shapes depend on the data (a boolean mask, nonzero): no
      // launch can allocate them up front, so the operator runs on the host.
      sdk::ops::cpu_fallback(op, sdk::DispatchKeySet(), stack);
      return;
    }
    const bool all_defined = std::all_of(computed.results.begin(), computed.results.end(),
                                         [](const ResultGeometry& g) { return g.defined; });
    computed.out_variant = all_defined ? cache.out_variant_of(op) : nullptr;  // Note [Undefined results]
    computed.mutable_arguments = schema.mutable_argument_indices();
    if (cacheable) {
      if (cache.entries.size() >= kMaxCachedGeometries) cache.entries.clear();
      plan = &cache.entries.emplace(key, std::move(computed)).first->second;
    } else {
      plan = &computed;
    }
  }

  // Results: fresh device buffers, or the mutated arguments (resized to the
  // meta run's sizes).
  const size_t m = schema.returns.size();
  KernelJob* job = take_job();
  std::vector<Tensor> results(m);
  try {
    for (size_t j = 0; j < m; ++j) {
      const sdk::Argument& ret = schema.returns[j];
      const ResultGeometry& g = plan->results[j];
      if (!g.defined) continue;  // stays undefined: Note [Undefined results]
      if (ret.alias_info && ret.alias_info->is_write) {
        results[j] = args[aliased_argument(schema, ret)].to_tensor();
        if (!results[j].sizes().equals(g.sizes)) sdk::ops::device::resize_(results[j], g.sizes, std::nullopt);
      } else {
        results[j] = sdk::ops::empty_strided_on(device, g.sizes, g.strides, g.dtype, std::nullopt);
        job->results.push_back(alias_spec(results[j], j, -1));
      }
    }
    for (size_t i : plan->mutable_arguments) {
      if (args[i].is_tensor() && args[i].to_tensor().defined()) args[i].to_tensor().impl()->bump_version();
    }

    // 2. The job: the CPU kernel over host aliases, on the stream (Note [Kernel jobs]).
    job->op = &op.entry();
    job->num_returns = m;
    job->out_variant = plan->out_variant;
    job->args.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const IValue& v = args[i];
      if (v.is_tensor() && on_device(v.to_tensor())) {
        job->inputs.push_back(alias_spec(v.to_tensor(), i, -1));
        job->args.emplace_back();
      } else if (v.is_tensor_list()) {
        const std::vector<Tensor>& list = v.to_tensor_list();
        std::vector<Tensor> kept(list.size());
        for (size_t k = 0; k < list.size(); ++k) {
          if (on_device(list[k])) {
            job->inputs.push_back(alias_spec(list[k], i, static_cast<int64_t>(k)));
          } else {
            kept[k] = list[k];
          }
        }
        job->args.emplace_back(std::move(kept));
      } else if (v.is_list()) {  // Tensor?[]: device tensors become None until the worker aliases them
        sdk::GenericList kept = v.to_list();
        for (size_t k = 0; k < kept.size(); ++k) {
          if (kept[k].is_tensor() && on_device(kept[k].to_tensor())) {
            job->inputs.push_back(alias_spec(kept[k].to_tensor(), i, static_cast<int64_t>(k)));
            kept[k] = IValue();
          }
        }
        job->args.emplace_back(std::move(kept));
      } else {
        job->args.push_back(v);
      }
    }
  } catch (...) {
    job->args.clear();
    finish_job(job);
    throw;
  }
  launch_job(device, op.name().c_str(), job);

  stack->resize(base);
  for (Tensor& r : results) stack->emplace_back(std::move(r));
}

}  // namespace accel
