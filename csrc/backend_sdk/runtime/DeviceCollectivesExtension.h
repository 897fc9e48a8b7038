/* The "sdk.collectives" device extension: a device's collective library
 * (NCCL's role for CUDA, HCCL's for Ascend), enqueued on the device's streams
 * (Note [Device API extensions] in runtime/DeviceApi.h). The SDK turns a
 * device that offers it into the process-group backend "<device>:<name>ccl"
 * of backend_sdk.distributed with no vendor Python code (Note [Device
 * collectives backend] in backend_sdk/distributed/_ccl_backend.py).
 *
 * Note [Device collectives extension]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Communicators are made as NCCL makes them: one rank calls
 * get_unique_id(ctx, &id), the SDK carries the id's bytes to every rank (over
 * MPI), and every rank calls comm_init_rank(ctx, &comm, device, &id, nranks,
 * rank, fabric). comm_init_rank does not wait for the other ranks (the first
 * collective does). comm_destroy(ctx, comm) releases a communicator once the
 * work queued on it has run (it waits for nothing itself).
 *
 * Every collective is ASYNCHRONOUS and enqueued on `stream` (an sdk_stream_t
 * of the communicator's device), ordered with the stream's other work like a
 * kernel: it reads its input after the work queued before it and the work
 * queued after it sees its output. Buffers are device pointers of the
 * communicator's device; counts are elements of `dtype` (Note [Device dtype
 * numbers]); `op` is an SDK_CCL_* reduction. In-place is allowed (send ==
 * recv for all_reduce and broadcast; send == recv + rank * count for
 * all_gather; recv == send + rank * count for reduce_scatter).
 *  - all_reduce(send, recv, count): recv = op over ranks of send (AVG: the
 *    sum divided by nranks; integers truncate toward zero).
 *  - all_gather(send, recv, send_count): recv[r * send_count ...] = rank r's send.
 *  - reduce_scatter(send, recv, recv_count): send holds nranks * recv_count
 *    elements; rank r gets op over ranks of their chunk r.
 *  - broadcast(send, recv, count, root): recv = root's send (send is read on
 *    the root only).
 *  - send(buf, count, peer) / recv(buf, count, peer): point to point, matched
 *    in issue order per pair of ranks.
 * The results are the same on every rank (a reduction is computed in one
 * order for all ranks), which data-parallel training relies on.
 *
 * Errors: a call returns a status for what it can see at once (a bad handle,
 * dtype, op or count: INVALID_VALUE / INVALID_HANDLE / NOT_SUPPORTED) and
 * enqueues nothing. What only the ranks together can see (a peer's
 * mismatched count, dtype or collective, a rank whose link is down, the
 * fabric failing) is an ASYNCHRONOUS error of the device: the next
 * synchronising call returns SDK_ERROR_KERNEL_FAULT and
 * get_last_error_message names the collective and the rank concerned, on
 * EVERY rank of the collective (the ranks agree on the outcome before moving
 * data, so no rank waits for a peer that gave up). A device must never let a
 * collective hang because a peer detected an error.
 *
 * The fabric (sdk_ccl_fabric) is a transport the SDK offers for devices that
 * have none of their own between processes (device_sim carries its bytes
 * over it; the SDK implements it on MPI). NULL means every rank of the
 * communicator lives in this process (several devices of one process).
 * Ownership: the fabric struct and its context are the SDK's and stay valid
 * until comm_destroy of every communicator made with it has returned; the
 * device may call it from any thread (its stream workers), concurrently for
 * different communicators. A device with its own interconnect may ignore it.
 *
 * Ownership: the unique id is plain bytes (copyable, the caller's). The
 * communicator handle is the SDK's from comm_init_rank until comm_destroy;
 * what it points to is the device's. Every function is thread-safe.
 *
 * Version 1: backend_name, get_unique_id, comm_init_rank, comm_destroy, all_reduce,
 * all_gather, reduce_scatter, broadcast, send, recv (all required). Fields are
 * only appended; an appended function is optional (NULL: the SDK reports
 * NotImplementedError naming it).
 */
#ifndef SDK_RUNTIME_DEVICE_COLLECTIVES_EXTENSION_H_
#define SDK_RUNTIME_DEVICE_COLLECTIVES_EXTENSION_H_

#include <backend_sdk/runtime/DeviceApi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_COLLECTIVES_EXTENSION_NAME "sdk.collectives"
#define SDK_COLLECTIVES_EXTENSION_VERSION 1u

/* Reductions (fixed numbers; only ever added). */
typedef int32_t sdk_ccl_op;
#define SDK_CCL_SUM 0
#define SDK_CCL_PROD 1
#define SDK_CCL_MIN 2
#define SDK_CCL_MAX 3
#define SDK_CCL_AVG 4

#define SDK_CCL_UNIQUE_ID_BYTES 128
typedef struct sdk_ccl_unique_id {
  char internal[SDK_CCL_UNIQUE_ID_BYTES];
} sdk_ccl_unique_id;

typedef struct sdk_ccl_comm_st* sdk_ccl_comm_t;

/* The SDK's transport between the ranks of a communicator (see the Note).
 * sendrecv sends send_bytes of sendbuf to rank `dst` and receives recv_bytes
 * into recvbuf from rank `src`, both at once (MPI_Sendrecv: two ranks may
 * exchange without deadlock), and returns when both are done; dst < 0 or
 * src < 0 leaves that half out. Host memory only. Messages between one pair
 * of ranks arrive in order. A failure returns a status and last_error(ctx)
 * tells why (thread-local, valid until the next call on this thread). */
typedef struct sdk_ccl_fabric {
  size_t struct_size; /* sizeof(sdk_ccl_fabric) of the SDK */
  void* context;      /* passed to every function */
  sdk_status (*sendrecv)(void* context, int32_t dst, const void* sendbuf, size_t send_bytes, int32_t src,
                         void* recvbuf, size_t recv_bytes);
  const char* (*last_error)(void* context);
} sdk_ccl_fabric;

typedef struct sdk_collectives_extension {
  sdk_device_extension_base base; /* name SDK_COLLECTIVES_EXTENSION_NAME */
  /* The library's name, the process-group backend's ("simccl", "hccl"): static,
   * NUL-terminated, lower case letters, digits and '_' (at most 63). */
  const char* backend_name;
  sdk_status (*get_unique_id)(void* context, sdk_ccl_unique_id* id);
  sdk_status (*comm_init_rank)(void* context, sdk_ccl_comm_t* comm, int32_t device, const sdk_ccl_unique_id* id,
                               int32_t nranks, int32_t rank, const sdk_ccl_fabric* fabric);
  sdk_status (*comm_destroy)(void* context, sdk_ccl_comm_t comm);
  sdk_status (*all_reduce)(void* context, const void* send, void* recv, size_t count, int32_t dtype, sdk_ccl_op op,
                           sdk_ccl_comm_t comm, sdk_stream_t stream);
  sdk_status (*all_gather)(void* context, const void* send, void* recv, size_t send_count, int32_t dtype,
                           sdk_ccl_comm_t comm, sdk_stream_t stream);
  sdk_status (*reduce_scatter)(void* context, const void* send, void* recv, size_t recv_count, int32_t dtype,
                               sdk_ccl_op op, sdk_ccl_comm_t comm, sdk_stream_t stream);
  sdk_status (*broadcast)(void* context, const void* send, void* recv, size_t count, int32_t dtype, int32_t root,
                          sdk_ccl_comm_t comm, sdk_stream_t stream);
  sdk_status (*send)(void* context, const void* buf, size_t count, int32_t dtype, int32_t peer,
                     sdk_ccl_comm_t comm, sdk_stream_t stream);
  sdk_status (*recv)(void* context, void* buf, size_t count, int32_t dtype, int32_t peer, sdk_ccl_comm_t comm,
                     sdk_stream_t stream);
} sdk_collectives_extension;

#define SDK_COLLECTIVES_EXTENSION_SIZE_1 (offsetof(sdk_collectives_extension, recv) + sizeof(void*))

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_COLLECTIVES_EXTENSION_H_ */
