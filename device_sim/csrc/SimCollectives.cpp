// "simccl": the "sdk.collectives" extension of the simulator.
//
// Note [Simulated collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every collective is one kernel ("simccl all_reduce", ...) launched on the
// caller's stream, so it runs in order with the stream's other work on a
// device worker thread, shows in traces and pays the launch latency of the
// timing model. The kernel owns a heap Job (its arguments are the Job's
// pointer); it runs the collective and deletes the Job; its release function
// (the kernel did not run: an injected kernel fault, a lost device) runs the
// same protocol in the failed state, so the peers never wait for a rank whose
// kernel was dropped.
//
// Transport. Ranks exchange bytes only through sendrecv(dst, ..., src, ...)
// on a Transport: the SDK's fabric (Note [Device collectives extension]; the
// SDK carries it over MPI between processes) or, when the communicator was
// made without one, an in-process mailbox shared by the communicators of one
// unique id (several simulated devices of one process). A mailbox send waits
// until the receiver copied the message (a rendezvous), so it behaves as a
// blocking MPI_Sendrecv; waits give up after DEVICE_SIM_CCL_TIMEOUT_S seconds
// (default 300) naming the rank that did not take part.
//
// Protocol. A collective first exchanges a small Header with every peer
// (pairwise, n-1 sendrecv steps: deadlock-free): the collective, dtype,
// count, root and the rank's state (ok; link down; kernel not run). Every
// rank then holds every rank's header and takes the SAME decision: if any
// state is bad or the headers disagree, every rank records the same
// asynchronous error (device_sim_kernel_fail: the next synchronising call
// returns SDK_ERROR_KERNEL_FAULT naming the collective and the rank) and no
// payload moves; otherwise the payload moves. So an injected link-down
// (device_sim_inject_link_down) surfaces on every rank, never as a hang.
// Send/recv exchange headers with their peer only.
//
// Algorithms: ring reduce-scatter then ring all-gather for all_reduce (each
// chunk is reduced once, along the ring, and then copied: every rank gets
// bit-identical results, which data-parallel training needs), ring
// all-gather, ring reduce-scatter, broadcast from the root to each peer.
// float16/bfloat16 are reduced in float and rounded per step (as NCCL).
//
// Timing: each sendrecv step occupies the stream for at least
// link latency + bytes / link bandwidth (device_sim_set_link_timing,
// DEVICE_SIM_LINK_LATENCY_US / DEVICE_SIM_LINK_BANDWIDTH_GBPS; 0: off).
#include "SimCollectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "SimDevice.h"
#include "device_sim.h"

namespace device_sim {
namespace {

constexpr int kMaxDevices = 64;

// ---- link timing and faults ----
std::atomic<int64_t> g_link_latency_ns{0};
std::atomic<double> g_link_ns_per_byte{0.0};
std::atomic<int64_t> g_link_down[kMaxDevices];  // collectives left that find the device's link down

void read_link_env() {
  static bool done = [] {
    if (const char* l = std::getenv("DEVICE_SIM_LINK_LATENCY_US")) {
      double v = std::atof(l);
      if (v > 0) g_link_latency_ns.store(static_cast<int64_t>(v * 1000.0));
    }
    if (const char* b = std::getenv("DEVICE_SIM_LINK_BANDWIDTH_GBPS")) {
      double v = std::atof(b);
      if (v > 0) g_link_ns_per_byte.store(1.0 / v);
    }
    return true;
  }();
  (void)done;
}

double timeout_seconds() {
  static double t = [] {
    const char* s = std::getenv("DEVICE_SIM_CCL_TIMEOUT_S");
    double v = s ? std::atof(s) : 0.0;
    return v > 0 ? v : 300.0;
  }();
  return t;
}

bool take_link_down(int device) {
  int64_t left = g_link_down[device].load(std::memory_order_acquire);
  while (left > 0) {
    if (g_link_down[device].compare_exchange_weak(left, left - 1, std::memory_order_acq_rel)) return true;
  }
  return false;
}

// ---- dtypes ----
size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case SDK_DTYPE_UINT8: case SDK_DTYPE_INT8: case SDK_DTYPE_BOOL: return 1;
    case SDK_DTYPE_INT16: case SDK_DTYPE_FLOAT16: case SDK_DTYPE_BFLOAT16: return 2;
    case SDK_DTYPE_INT32: case SDK_DTYPE_FLOAT32: return 4;
    case SDK_DTYPE_INT64: case SDK_DTYPE_FLOAT64: return 8;
    default: return 0;
  }
}

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case SDK_DTYPE_UINT8: return "uint8";
    case SDK_DTYPE_INT8: return "int8";
    case SDK_DTYPE_INT16: return "int16";
    case SDK_DTYPE_INT32: return "int32";
    case SDK_DTYPE_INT64: return "int64";
    case SDK_DTYPE_FLOAT16: return "float16";
    case SDK_DTYPE_FLOAT32: return "float32";
    case SDK_DTYPE_FLOAT64: return "float64";
    case SDK_DTYPE_BOOL: return "bool";
    case SDK_DTYPE_BFLOAT16: return "bfloat16";
    default: return "unknown";
  }
}

const char* op_name(int32_t op) {
  switch (op) {
    case SDK_CCL_SUM: return "sum";
    case SDK_CCL_PROD: return "prod";
    case SDK_CCL_MIN: return "min";
    case SDK_CCL_MAX: return "max";
    case SDK_CCL_AVG: return "avg";
    default: return "unknown";
  }
}

float bf16_to_float(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t float_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

template <typename T>
T combine(T a, T b, int32_t op) {
  switch (op) {
    case SDK_CCL_PROD: return static_cast<T>(a * b);
    case SDK_CCL_MIN: return b < a ? b : a;
    case SDK_CCL_MAX: return b > a ? b : a;
    default: return static_cast<T>(a + b);  // SUM, AVG (divided at the end)
  }
}

// One loop per reduction (the op is chosen outside the loop, so the compiler vectorises each).
template <typename T, int32_t Op>
void reduce_loop(T* a, const T* b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = combine<T>(a[i], b[i], Op);
}

template <typename T>
void reduce_typed(void* acc, const void* in, size_t n, int32_t op) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  switch (op) {
    case SDK_CCL_PROD: return reduce_loop<T, SDK_CCL_PROD>(a, b, n);
    case SDK_CCL_MIN: return reduce_loop<T, SDK_CCL_MIN>(a, b, n);
    case SDK_CCL_MAX: return reduce_loop<T, SDK_CCL_MAX>(a, b, n);
    default: return reduce_loop<T, SDK_CCL_SUM>(a, b, n);
  }
}

template <typename Load, typename Store>
void reduce_half(void* acc, const void* in, size_t n, int32_t op, Load load, Store store) {
  uint16_t* a = static_cast<uint16_t*>(acc);
  const uint16_t* b = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) a[i] = store(combine<float>(load(a[i]), load(b[i]), op));
}

float f16_load(uint16_t v) {
  _Float16 h;
  std::memcpy(&h, &v, 2);
  return static_cast<float>(h);
}
uint16_t f16_store(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t v;
  std::memcpy(&v, &h, 2);
  return v;
}

// acc[i] = op(acc[i], in[i]) for n elements.
void reduce_into(void* acc, const void* in, size_t n, int32_t dtype, int32_t op) {
  switch (dtype) {
    case SDK_DTYPE_UINT8: return reduce_typed<uint8_t>(acc, in, n, op);
    case SDK_DTYPE_INT8: return reduce_typed<int8_t>(acc, in, n, op);
    case SDK_DTYPE_INT16: return reduce_typed<int16_t>(acc, in, n, op);
    case SDK_DTYPE_INT32: return reduce_typed<int32_t>(acc, in, n, op);
    case SDK_DTYPE_INT64: return reduce_typed<int64_t>(acc, in, n, op);
    case SDK_DTYPE_FLOAT32: return reduce_typed<float>(acc, in, n, op);
    case SDK_DTYPE_FLOAT64: return reduce_typed<double>(acc, in, n, op);
    case SDK_DTYPE_FLOAT16: return reduce_half(acc, in, n, op, f16_load, f16_store);
    case SDK_DTYPE_BFLOAT16: return reduce_half(acc, in, n, op, bf16_to_float, float_to_bf16);
    case SDK_DTYPE_BOOL: {  // sum/max: or; prod/min: and (NCCL's)
      uint8_t* a = static_cast<uint8_t*>(acc);
      const uint8_t* b = static_cast<const uint8_t*>(in);
      bool any = op == SDK_CCL_SUM || op == SDK_CCL_MAX;
      for (size_t i = 0; i < n; ++i) a[i] = any ? (a[i] | b[i]) != 0 : (a[i] & b[i]) != 0;
      return;
    }
    default: return;
  }
}

template <typename T>
void divide_typed(void* p, size_t n, int nranks) {
  T* a = static_cast<T*>(p);
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(nranks));  // integers: toward zero
}

void divide(void* p, size_t n, int32_t dtype, int nranks) {
  switch (dtype) {
    case SDK_DTYPE_UINT8: return divide_typed<uint8_t>(p, n, nranks);
    case SDK_DTYPE_INT8: return divide_typed<int8_t>(p, n, nranks);
    case SDK_DTYPE_INT16: return divide_typed<int16_t>(p, n, nranks);
    case SDK_DTYPE_INT32: return divide_typed<int32_t>(p, n, nranks);
    case SDK_DTYPE_INT64: return divide_typed<int64_t>(p, n, nranks);
    case SDK_DTYPE_FLOAT32: return divide_typed<float>(p, n, nranks);
    case SDK_DTYPE_FLOAT64: return divide_typed<double>(p, n, nranks);
    case SDK_DTYPE_FLOAT16: {
      uint16_t* a = static_cast<uint16_t*>(p);
      for (size_t i = 0; i < n; ++i) a[i] = f16_store(f16_load(a[i]) / static_cast<float>(nranks));
      return;
    }
    case SDK_DTYPE_BFLOAT16: {
      uint16_t* a = static_cast<uint16_t*>(p);
      for (size_t i = 0; i < n; ++i) a[i] = float_to_bf16(bf16_to_float(a[i]) / static_cast<float>(nranks));
      return;
    }
    default: return;
  }
}

// ---- transports (Note [Simulated collectives]) ----
class Transport {
 public:
  virtual ~Transport() = default;
  // false (and *why) on failure.
  virtual bool sendrecv(int dst, const void* s, size_t sn, int src, void* r, size_t rn, std::string* why) = 0;
};

class FabricTransport final : public Transport {
 public:
  explicit FabricTransport(const sdk_ccl_fabric& f) : fabric_(f) {}
  bool sendrecv(int dst, const void* s, size_t sn, int src, void* r, size_t rn, std::string* why) override {
    sdk_status st = fabric_.sendrecv(fabric_.context, dst, s, sn, src, r, rn);
    if (st == SDK_SUCCESS) return true;
    const char* m = fabric_.last_error ? fabric_.last_error(fabric_.context) : nullptr;
    *why = std::string("the fabric failed (status ") + std::to_string(st) + ")" + (m && *m ? std::string(": ") + m : "");
    return false;
  }

 private:
  sdk_ccl_fabric fabric_;  // a copy of the table; its context is the SDK's (Note [Device collectives extension])
};

// The ranks of one unique id in this process.
struct LocalGroup {
  struct Message {
    const void* data;
    size_t n;
    bool taken = false;
  };
  std::mutex m;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<Message*>> channels;  // (from, to) -> posted messages
};

std::mutex g_groups_mutex;
std::map<std::string, std::weak_ptr<LocalGroup>>* const g_groups = new std::map<std::string, std::weak_ptr<LocalGroup>>();

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalGroup> g, int rank) : group_(std::move(g)), rank_(rank) {}
  bool sendrecv(int dst, const void* s, size_t sn, int src, void* r, size_t rn, std::string* why) override {
    LocalGroup& g = *group_;
    LocalGroup::Message mine{s, sn};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds());
    std::unique_lock<std::mutex> lock(g.m);
    if (dst >= 0) {
      g.channels[{rank_, dst}].push_back(&mine);
      g.cv.notify_all();
    }
    bool ok = true;
    if (src >= 0) {
      auto& in = g.channels[{src, rank_}];
      if (!g.cv.wait_until(lock, deadline, [&] { return !in.empty(); })) {
        *why = "rank " + std::to_string(src) + " did not take part within " + std::to_string(int(timeout_seconds())) +
               " s (DEVICE_SIM_CCL_TIMEOUT_S)";
        ok = false;
      } else {
        LocalGroup::Message* msg = in.front();
        in.pop_front();
        if (msg->n != rn) {
          *why = "rank " + std::to_string(src) + " sent " + std::to_string(msg->n) + " bytes where rank " +
                 std::to_string(rank_) + " expected " + std::to_string(rn);
          ok = false;
        } else if (rn) {
          std::memcpy(r, msg->data, rn);
        }
        msg->taken = true;
        g.cv.notify_all();
      }
    }
    if (dst >= 0) {
      if (!g.cv.wait_until(lock, deadline, [&] { return mine.taken; })) {
        auto& out = g.channels[{rank_, dst}];
        out.erase(std::remove(out.begin(), out.end(), &mine), out.end());
        if (ok) *why = "rank " + std::to_string(dst) + " did not take part within " +
                       std::to_string(int(timeout_seconds())) + " s (DEVICE_SIM_CCL_TIMEOUT_S)";
        ok = false;
      }
    }
    return ok;
  }

 private:
  std::shared_ptr<LocalGroup> group_;
  int rank_;
};

// Scratch memory of a worker thread, kept between collectives: a fresh 32 MiB vector per collective would
// page-fault (and zero) all of it every time.
char* scratch(int which, size_t bytes) {
  thread_local std::vector<char> buffers[2];
  std::vector<char>& b = buffers[which];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

struct SimComm {
  int device, nranks, rank;
  std::unique_ptr<Transport> transport;
};

std::mutex g_comms_mutex;
std::set<SimComm*>* const g_comms = new std::set<SimComm*>();  // live handles (validated before use)
// A queued collective holds a reference, so comm_destroy never frees a communicator still in use.
std::map<SimComm*, std::shared_ptr<SimComm>>* const g_comm_refs = new std::map<SimComm*, std::shared_ptr<SimComm>>();

std::shared_ptr<SimComm> comm_of(sdk_ccl_comm_t h) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  auto* c = reinterpret_cast<SimComm*>(h);
  if (!g_comms->count(c)) return nullptr;
  return (*g_comm_refs)[c];
}

// ---- the protocol ----
enum Kind : int32_t { kAllReduce = 1, kAllGather, kReduceScatter, kBroadcast, kSend, kRecv };
const char* kind_name(int32_t k) {
  switch (k) {
    case kAllReduce: return "all_reduce";
    case kAllGather: return "all_gather";
    case kReduceScatter: return "reduce_scatter";
    case kBroadcast: return "broadcast";
    case kSend: return "send";
    case kRecv: return "recv";
    default: return "?";
  }
}
enum State : int32_t { kOk = 0, kLinkDown = 1, kNotRun = 2 };
constexpr int64_t kMagic = 0x73696d63636c3031;  // "simccl01"

struct Header {
  int64_t magic, kind, dtype, count, root_or_peer, op, state, rank;
};

struct Job {
  std::shared_ptr<SimComm> comm;
  Kind kind;
  const void* send;
  void* recv;
  size_t count;  // all_reduce/broadcast/send/recv: elements; all_gather: send count; reduce_scatter: recv count
  int32_t dtype, op, peer;  // peer: broadcast's root, send/recv's peer
};

std::string describe(const Header& h) {
  std::string s = "rank " + std::to_string(h.rank) + ": " + kind_name(static_cast<int32_t>(h.kind)) + " of " +
                  std::to_string(h.count) + " " + dtype_name(static_cast<int32_t>(h.dtype));
  if (h.kind == kBroadcast) s += " (root " + std::to_string(h.root_or_peer) + ")";
  if (h.kind == kSend) s += " to rank " + std::to_string(h.root_or_peer);
  if (h.kind == kRecv) s += " from rank " + std::to_string(h.root_or_peer);
  if (h.kind == kAllReduce || h.kind == kReduceScatter) s += std::string(" (") + op_name(static_cast<int32_t>(h.op)) + ")";
  return s;
}

class Runner {
 public:
  explicit Runner(Job& j) : j_(j), c_(*j.comm) {}

  // false: *error says why (the same text on every rank for what the ranks decided together).
  bool run(State state, std::string* error) {
    read_link_env();
    Header mine{kMagic, j_.kind, j_.dtype, static_cast<int64_t>(j_.count), j_.peer, j_.op, state, c_.rank};
    if (!handshake(mine, error)) return false;
    if (j_.kind == kSend || j_.kind == kRecv) return point_to_point(error);
    const size_t es = dtype_size(j_.dtype);
    const int n = c_.nranks, r = c_.rank;
    char* recv = static_cast<char*>(j_.recv ? device_sim_translate(j_.recv) : nullptr);
    const char* send = static_cast<const char*>(j_.send ? device_sim_translate(j_.send) : nullptr);
    switch (j_.kind) {
      case kAllReduce: {
        const size_t count = j_.count;
        if (send != recv) std::memmove(recv, send, count * es);
        auto lo = [&](int i) { return static_cast<size_t>((static_cast<unsigned __int128>(count) * i) / n); };
        return reduce_scatter_ring(recv, lo, error) && finish_avg(recv + lo(r) * es, lo(r + 1) - lo(r)) &&
               all_gather_ring(recv, lo, error);
      }
      case kAllGather: {
        const size_t count = j_.count;
        if (send != recv + r * count * es) std::memmove(recv + r * count * es, send, count * es);
        return all_gather_ring(recv, [&](int i) { return count * static_cast<size_t>(i); }, error);
      }
      case kReduceScatter: {
        const size_t count = j_.count;
        char* acc = scratch(1, count * n * es);  // the input stays intact
        std::memcpy(acc, send, count * n * es);
        auto lo = [&](int i) { return count * static_cast<size_t>(i); };
        if (!reduce_scatter_ring(acc, lo, error)) return false;
        finish_avg(acc + lo(r) * es, count);
        std::memcpy(recv, acc + lo(r) * es, count * es);
        return true;
      }
      case kBroadcast: {
        const size_t bytes = j_.count * es;
        const int root = j_.peer;
        if (r == root) {
          if (send != recv) std::memmove(recv, send, bytes);
          for (int p = 0; p < n; ++p)
            if (p != root && !step(p, recv, bytes, -1, nullptr, 0, error)) return false;
          return true;
        }
        return step(-1, nullptr, 0, root, recv, bytes, error);
      }
      default:
        return true;
    }
  }

 private:
  // One transport step, padded by the link timing model.
  bool step(int dst, const void* s, size_t sn, int src, void* rbuf, size_t rn, std::string* error) {
    int64_t start = now_ns();
    if (!c_.transport->sendrecv(dst, s, sn, src, rbuf, rn, error)) {
      *error = std::string("simccl ") + kind_name(j_.kind) + " on rank " + std::to_string(c_.rank) + ": " + *error;
      return false;
    }
    int64_t pad = g_link_latency_ns.load(std::memory_order_relaxed);
    double per_byte = g_link_ns_per_byte.load(std::memory_order_relaxed);
    if (per_byte > 0) pad += static_cast<int64_t>(per_byte * static_cast<double>(std::max(sn, rn)));
    pad_until(start, pad);
    return true;
  }

  bool handshake(const Header& mine, std::string* error) {
    const int n = c_.nranks, r = c_.rank;
    std::vector<Header> all(n);
    all[r] = mine;
    if (j_.kind == kSend || j_.kind == kRecv) {
      const int peer = j_.peer;
      if (!step(peer, &mine, sizeof(Header), peer, &all[peer], sizeof(Header), error)) return false;
      const Header& h = all[peer];
      const int64_t want = j_.kind == kSend ? kRecv : kSend;
      if (h.magic != kMagic) return fail(error, "rank " + std::to_string(peer) + " sent a malformed header");
      if (mine.state != kOk || h.state != kOk) return bad_state(mine.state != kOk ? mine : h, error);
      if (h.kind != want || h.root_or_peer != r || h.dtype != mine.dtype || h.count != mine.count)
        return fail(error, "mismatched point-to-point operation: " + describe(mine) + "; " + describe(h) +
                               ". A send must meet a recv of the same count and dtype on its peer");
      return true;
    }
    for (int k = 1; k < n; ++k) {
      const int dst = (r + k) % n, src = (r - k + n) % n;
      if (!step(dst, &mine, sizeof(Header), src, &all[src], sizeof(Header), error)) return false;
    }
    for (const Header& h : all)
      if (h.magic != kMagic) return fail(error, "rank " + std::to_string(&h - all.data()) + " sent a malformed header");
    for (const Header& h : all)
      if (h.state != kOk) return bad_state(h, error);
    for (const Header& h : all) {
      if (h.kind != mine.kind || h.dtype != mine.dtype || h.count != mine.count || h.root_or_peer != mine.root_or_peer ||
          h.op != mine.op) {
        std::string sides;
        for (const Header& x : all) sides += (sides.empty() ? "" : "; ") + describe(x);
        return fail(error, std::string("mismatched collective across the ranks of the communicator: ") + sides +
                               ". Every rank must call the same collective with the same count, dtype and root");
      }
    }
    return true;
  }

  bool bad_state(const Header& h, std::string* error) {
    if (h.state == kLinkDown)
      return fail(error, "the link of rank " + std::to_string(h.rank) +
                             " is down (device_sim.inject('link_down')); no data was exchanged");
    return fail(error, "the collective's kernel did not run on rank " + std::to_string(h.rank) +
                           " (an injected kernel fault or a lost device there); no data was exchanged");
  }

  bool fail(std::string* error, std::string what) {
    *error = std::string("simccl ") + kind_name(j_.kind) + ": " + what;
    return false;
  }

  bool point_to_point(std::string* error) {
    const size_t bytes = j_.count * dtype_size(j_.dtype);
    if (j_.kind == kSend) return step(j_.peer, device_sim_translate(j_.send), bytes, -1, nullptr, 0, error);
    return step(-1, nullptr, 0, j_.peer, device_sim_translate(j_.recv), bytes, error);
  }

  bool finish_avg(char* p, size_t n) {
    if (j_.op == SDK_CCL_AVG) divide(p, n, j_.dtype, c_.nranks);
    return true;
  }

  // Ring reduce-scatter over chunks [lo(i), lo(i+1)) of buf: rank r ends with chunk r reduced over all ranks.
  template <typename Lo>
  bool reduce_scatter_ring(char* buf, Lo lo, std::string* error) {
    const int n = c_.nranks, r = c_.rank;
    const size_t es = dtype_size(j_.dtype);
    size_t biggest = 0;
    for (int i = 0; i < n; ++i) biggest = std::max(biggest, lo(i + 1) - lo(i));
    char* tmp = scratch(0, biggest * es);
    for (int s = 0; s < n - 1; ++s) {
      const int out = ((r - s - 1) % n + n) % n, in = ((r - s - 2) % n + n) % n;
      const size_t in_n = lo(in + 1) - lo(in);
      if (!step((r + 1) % n, buf + lo(out) * es, (lo(out + 1) - lo(out)) * es, (r - 1 + n) % n, tmp, in_n * es,
                error))
        return false;
      reduce_into(buf + lo(in) * es, tmp, in_n, j_.dtype, j_.op);
    }
    return true;
  }

  // Ring all-gather: rank r holds chunk r of buf; every rank ends with every chunk.
  template <typename Lo>
  bool all_gather_ring(char* buf, Lo lo, std::string* error) {
    const int n = c_.nranks, r = c_.rank;
    const size_t es = dtype_size(j_.dtype);
    for (int s = 0; s < n - 1; ++s) {
      const int out = ((r - s) % n + n) % n, in = ((r - s - 1) % n + n) % n;
      if (!step((r + 1) % n, buf + lo(out) * es, (lo(out + 1) - lo(out)) * es, (r - 1 + n) % n, buf + lo(in) * es,
                (lo(in + 1) - lo(in)) * es, error))
        return false;
    }
    return true;
  }

  Job& j_;
  SimComm& c_;
};

void run_kernel(void* args) {
  Job* job = *static_cast<Job**>(args);
  std::string error;
  State state = take_link_down(job->comm->device) ? kLinkDown : kOk;
  if (!Runner(*job).run(state, &error)) device_sim_kernel_fail(error.c_str());
  delete job;
}

// The kernel did not run (Note [Simulated collectives]): take part in the handshake as "not run" so no
// peer waits; the device already holds the fault that dropped it.
void release_kernel(void* args) {
  Job* job = *static_cast<Job**>(args);
  std::string error;
  (void)Runner(*job).run(kNotRun, &error);
  delete job;
}

sdk_status bad_ctx(const void* ctx) {
  return record_call_error(SDK_ERROR_INVALID_HANDLE, "simccl: the context is not the one sdk_device_entry() returned");
}

#define CCL_ENTER(ctx)                                   \
  do {                                                   \
    if (!context_is_valid(ctx)) return bad_ctx(ctx);     \
    if (!simulator_started()) return SDK_ERROR_UNKNOWN;  \
  } while (0)

sdk_status enqueue(const char* what, Job job, sdk_stream_t stream) {
  const int sd = stream_device(stream);
  if (sd < 0)
    return record_call_error(SDK_ERROR_INVALID_HANDLE, std::string("simccl ") + what + ": not a live stream of device_sim");
  if (sd != job.comm->device)
    return record_call_error(SDK_ERROR_INVALID_VALUE, std::string("simccl ") + what + ": the stream is of device " +
                                                          std::to_string(sd) + ", the communicator of device " +
                                                          std::to_string(job.comm->device));
  if (dtype_size(job.dtype) == 0)
    return record_call_error(SDK_ERROR_NOT_SUPPORTED, std::string("simccl ") + what + ": dtype number " +
                                                          std::to_string(job.dtype) + " is not supported");
  if ((job.kind == kAllReduce || job.kind == kReduceScatter) &&
      (job.op < SDK_CCL_SUM || job.op > SDK_CCL_AVG || (job.dtype == SDK_DTYPE_BOOL && job.op == SDK_CCL_AVG)))
    return record_call_error(SDK_ERROR_INVALID_VALUE, std::string("simccl ") + what + ": reduction " +
                                                          std::to_string(job.op) + " is not valid for " +
                                                          dtype_name(job.dtype));
  const int n = job.comm->nranks;
  if ((job.kind == kBroadcast || job.kind == kSend || job.kind == kRecv) && (job.peer < 0 || job.peer >= n ||
                                                                             ((job.kind != kBroadcast) &&
                                                                              job.peer == job.comm->rank)))
    return record_call_error(SDK_ERROR_INVALID_VALUE, std::string("simccl ") + what + ": rank " +
                                                          std::to_string(job.peer) + " is not a valid peer of rank " +
                                                          std::to_string(job.comm->rank) + " in a communicator of " +
                                                          std::to_string(n) + " ranks");
  if (job.count > 0 && ((job.kind != kRecv && job.send == nullptr) || (job.kind != kSend && job.recv == nullptr)))
    return record_call_error(SDK_ERROR_INVALID_VALUE, std::string("simccl ") + what + ": a buffer is NULL");
  Job* heap = new Job(std::move(job));
  std::string name = std::string("simccl ") + what;
  sdk_status st = device_sim_launch_kernel_ex(stream, name.c_str(), &run_kernel, &release_kernel, &heap, sizeof(heap));
  if (st != SDK_SUCCESS) delete heap;  // the launch's own message stays the thread's last error
  return st;
}

// ---- the extension's functions ----
sdk_status ccl_get_unique_id(void* ctx, sdk_ccl_unique_id* id) {
  CCL_ENTER(ctx);
  if (id == nullptr) return record_call_error(SDK_ERROR_INVALID_VALUE, "simccl get_unique_id: id is NULL");
  std::memset(id, 0, sizeof(*id));
  std::random_device rd;
  uint64_t words[3] = {(uint64_t(rd()) << 32) | rd(), (uint64_t(rd()) << 32) | rd(), static_cast<uint64_t>(getpid())};
  std::memcpy(id->internal, "simccl", 6);
  std::memcpy(id->internal + 8, words, sizeof(words));
  return SDK_SUCCESS;
}

sdk_status ccl_comm_init_rank(void* ctx, sdk_ccl_comm_t* comm, int32_t device, const sdk_ccl_unique_id* id,
                              int32_t nranks, int32_t rank, const sdk_ccl_fabric* fabric) {
  CCL_ENTER(ctx);
  if (comm == nullptr || id == nullptr)
    return record_call_error(SDK_ERROR_INVALID_VALUE, "simccl comm_init_rank: comm or id is NULL");
  if (device < 0 || device >= device_count())
    return record_call_error(SDK_ERROR_INVALID_DEVICE, "simccl comm_init_rank: device " + std::to_string(device) +
                                                           " is out of range (device_sim has " +
                                                           std::to_string(device_count()) + " devices)");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return record_call_error(SDK_ERROR_INVALID_VALUE, "simccl comm_init_rank: rank " + std::to_string(rank) +
                                                          " is not in [0, " + std::to_string(nranks) + ")");
  if (std::memcmp(id->internal, "simccl", 6) != 0)
    return record_call_error(SDK_ERROR_INVALID_VALUE, "simccl comm_init_rank: the id was not made by get_unique_id");
  if (fabric != nullptr && (fabric->struct_size < sizeof(sdk_ccl_fabric) || fabric->sendrecv == nullptr))
    return record_call_error(SDK_ERROR_INVALID_VALUE, "simccl comm_init_rank: the fabric is too small or has no sendrecv");
  auto c = std::make_shared<SimComm>();
  c->device = device;
  c->nranks = nranks;
  c->rank = rank;
  if (fabric != nullptr) {
    c->transport = std::make_unique<FabricTransport>(*fabric);
  } else {
    std::string key(id->internal, sizeof(id->internal));
    std::shared_ptr<LocalGroup> g;
    {
      std::lock_guard<std::mutex> lock(g_groups_mutex);
      for (auto it = g_groups->begin(); it != g_groups->end();)  // forget the groups whose communicators are gone
        it = it->second.expired() ? g_groups->erase(it) : std::next(it);
      g = (*g_groups)[key].lock();
      if (!g) {
        g = std::make_shared<LocalGroup>();
        (*g_groups)[key] = g;
      }
    }
    c->transport = std::make_unique<LocalTransport>(std::move(g), rank);
  }
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  g_comms->insert(c.get());
  (*g_comm_refs)[c.get()] = c;
  *comm = reinterpret_cast<sdk_ccl_comm_t>(c.get());
  return SDK_SUCCESS;
}

sdk_status ccl_comm_destroy(void* ctx, sdk_ccl_comm_t comm) {
  if (!context_is_valid(ctx)) return bad_ctx(ctx);
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  auto* c = reinterpret_cast<SimComm*>(comm);
  if (!g_comms->erase(c))
    return record_call_error(SDK_ERROR_INVALID_HANDLE, "simccl comm_destroy: not a live communicator");
  g_comm_refs->erase(c);  // queued jobs keep it alive until they ran
  return SDK_SUCCESS;
}

Job make_job(sdk_ccl_comm_t comm, Kind kind, const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
             int32_t peer) {
  return Job{comm_of(comm), kind, send, recv, count, dtype, op, peer};
}

#define CCL_COMM(job, what)                                                                                       \
  do {                                                                                                            \
    if (!(job).comm) return record_call_error(SDK_ERROR_INVALID_HANDLE, "simccl " what ": not a live communicator"); \
  } while (0)

sdk_status ccl_all_reduce(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, sdk_ccl_op op,
                          sdk_ccl_comm_t comm, sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kAllReduce, send, recv, count, dtype, op, 0);
  CCL_COMM(job, "all_reduce");
  return enqueue("all_reduce", std::move(job), stream);
}

sdk_status ccl_all_gather(void* ctx, const void* send, void* recv, size_t send_count, int32_t dtype,
                          sdk_ccl_comm_t comm, sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kAllGather, send, recv, send_count, dtype, 0, 0);
  CCL_COMM(job, "all_gather");
  return enqueue("all_gather", std::move(job), stream);
}

sdk_status ccl_reduce_scatter(void* ctx, const void* send, void* recv, size_t recv_count, int32_t dtype, sdk_ccl_op op,
                              sdk_ccl_comm_t comm, sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kReduceScatter, send, recv, recv_count, dtype, op, 0);
  CCL_COMM(job, "reduce_scatter");
  return enqueue("reduce_scatter", std::move(job), stream);
}

sdk_status ccl_broadcast(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, int32_t root,
                         sdk_ccl_comm_t comm, sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kBroadcast, send, recv, count, dtype, 0, root);
  CCL_COMM(job, "broadcast");
  if (job.comm->rank != root) job.send = recv;  // read on the root only
  return enqueue("broadcast", std::move(job), stream);
}

sdk_status ccl_send(void* ctx, const void* buf, size_t count, int32_t dtype, int32_t peer, sdk_ccl_comm_t comm,
                    sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kSend, buf, nullptr, count, dtype, 0, peer);
  CCL_COMM(job, "send");
  return enqueue("send", std::move(job), stream);
}

sdk_status ccl_recv(void* ctx, void* buf, size_t count, int32_t dtype, int32_t peer, sdk_ccl_comm_t comm,
                    sdk_stream_t stream) {
  CCL_ENTER(ctx);
  Job job = make_job(comm, kRecv, nullptr, buf, count, dtype, 0, peer);
  CCL_COMM(job, "recv");
  return enqueue("recv", std::move(job), stream);
}

}  // namespace

const sdk_collectives_extension kCollectivesExtension = {
    {sizeof(sdk_collectives_extension), SDK_COLLECTIVES_EXTENSION_NAME, SDK_COLLECTIVES_EXTENSION_VERSION, 0, nullptr},
    "simccl", &ccl_get_unique_id, &ccl_comm_init_rank, &ccl_comm_destroy, &ccl_all_reduce, &ccl_all_gather,
    &ccl_reduce_scatter, &ccl_broadcast, &ccl_send, &ccl_recv,
};

}  // namespace device_sim

extern "C" {

// Note [Simulated collectives]: the link timing model (a value < 0 keeps the setting; 0 turns it off).
DEVICE_SIM_API sdk_status device_sim_set_link_timing(double latency_us, double bandwidth_gbps) {
  using namespace device_sim;
  read_link_env();  // explicit settings win over the environment
  if (latency_us != latency_us || bandwidth_gbps != bandwidth_gbps)
    return record_call_error(SDK_ERROR_INVALID_VALUE, "device_sim_set_link_timing: NaN is not a valid setting");
  if (latency_us >= 0.0) g_link_latency_ns.store(static_cast<int64_t>(latency_us * 1000.0), std::memory_order_relaxed);
  if (bandwidth_gbps >= 0.0)
    g_link_ns_per_byte.store(bandwidth_gbps > 0.0 ? 1.0 / bandwidth_gbps : 0.0, std::memory_order_relaxed);
  return SDK_SUCCESS;
}

DEVICE_SIM_API void device_sim_get_link_timing(double* latency_us, double* bandwidth_gbps) {
  using namespace device_sim;
  read_link_env();
  if (latency_us) *latency_us = static_cast<double>(g_link_latency_ns.load(std::memory_order_relaxed)) / 1000.0;
  if (bandwidth_gbps) {
    double per_byte = g_link_ns_per_byte.load(std::memory_order_relaxed);
    *bandwidth_gbps = per_byte > 0.0 ? 1.0 / per_byte : 0.0;
  }
}

// The next `count` collectives of `device` find its link down (Note [Simulated collectives]).
DEVICE_SIM_API sdk_status device_sim_inject_link_down(int32_t device, int64_t count) {
  using namespace device_sim;
  if (!simulator_started()) return SDK_ERROR_UNKNOWN;
  if (device < 0 || device >= device_count())
    return record_call_error(SDK_ERROR_INVALID_DEVICE, "device_sim_inject_link_down: device " + std::to_string(device) +
                                                           " is out of range");
  if (count < 0) return record_call_error(SDK_ERROR_INVALID_VALUE, "device_sim_inject_link_down: count must be >= 0");
  g_link_down[device].store(count, std::memory_order_release);
  return SDK_SUCCESS;
}

}  // extern "C"
