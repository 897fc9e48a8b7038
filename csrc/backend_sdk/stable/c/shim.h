/* The ABI-stable C shim of backend_sdk: what an extension built with the stable surface
 * links (libbackend_sdk implements it). C, so that any compiler and any C++ standard library
 * can call it; the header-only C++ wrappers in <backend_sdk/stable/...> are built on it.
 *
 * Note [Stable ABI compatibility rule]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * This header is only ever added to. A function, once released, keeps its name, its
 * parameters and its meaning for the life of the SDK's major version; a constant keeps its
 * number; a struct keeps its size and its fields' offsets. New functions, new constants
 * (new dtypes, tags, statuses) and new structs may be added; each addition bumps
 * SDK_STABLE_ABI_VERSION, so an extension that needs one can check
 * sdk_stable_abi_version() >= N at load time. Nothing in this header exposes the layout of
 * an SDK C++ type: tensors and libraries are opaque handles, values cross as
 * sdk_stable_ivalue, so the SDK may change TensorImpl, IValue, the dispatcher or the C++
 * standard library it uses without breaking an extension built against an older release
 * (tests/test_stable_abi.py checks it against an SDK built with a changed TensorImpl).
 *
 * Note [Stable status codes]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Every function that can fail returns an sdk_stable_status; SDK_STABLE_OK is 0 and the
 * others are the SDK's error kinds (Note [Error kinds], headeronly/Exception.h) plus one,
 * so a status names the Python exception type the failure becomes. The message of the last
 * failure on the calling thread is sdk_stable_last_error_message(): a thread-local string
 * that stays valid until the thread's next failing call. No C++ exception ever crosses this
 * boundary in either direction: the shim catches everything, and a kernel an extension
 * registers must return a status (the C++ adapters, stable/library.h, catch for it).
 *
 * Note [Stable handle ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * - sdk_stable_tensor is an owning reference to one SDK tensor. Whoever receives a handle
 *   from a function of this header (an out parameter, a return in a call's stack) owns it
 *   and frees it with sdk_stable_tensor_free exactly once; sdk_stable_tensor_new_reference
 *   makes a second owning handle to the same tensor.
 * - Values passed *into* a call are borrowed: sdk_stable_call_op does not take over the
 *   tensor handles, int lists or strings of its arguments, and a kernel does not own the
 *   argument handles the SDK passes it (they are valid until the kernel returns).
 * - Values passed *out* are transferred: the returns sdk_stable_call_op writes into the
 *   stack belong to the caller; the tensor handles a kernel writes as its returns belong
 *   to the SDK afterwards, so a kernel returns a new reference (never one of its argument
 *   handles) and writes its returns only when it succeeds.
 * - sdk_stable_tensor_sizes/strides return pointers into the tensor, valid while a handle
 *   to it lives and it is not resized. Strings returned (error messages) are owned by the
 *   SDK. sdk_stable_library is owned by its creator; freeing it undoes its registrations.
 */
#ifndef BACKEND_SDK_STABLE_C_SHIM_H_
#define BACKEND_SDK_STABLE_C_SHIM_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define SDK_STABLE_C_API __attribute__((visibility("default")))
#else
#define SDK_STABLE_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* 1: tensors, operator calls, registration (backend_sdk 0.1).
 * 2: a device backend's SDK-provided kernels: sdk_stable_library_impl_device_kernels,
 *    sdk_stable_library_fallback_cpu; sdk_stable_current_stream; sdk_stable_from_blob. */
#define SDK_STABLE_ABI_VERSION 2

typedef int32_t sdk_stable_status;
/* Note [Stable status codes] */
#define SDK_STABLE_OK 0
#define SDK_STABLE_ERROR_RUNTIME 1         /* RuntimeError */
#define SDK_STABLE_ERROR_VALUE 2           /* ValueError */
#define SDK_STABLE_ERROR_TYPE 3            /* TypeError */
#define SDK_STABLE_ERROR_INDEX 4           /* IndexError */
#define SDK_STABLE_ERROR_NOT_IMPLEMENTED 5 /* NotImplementedError */
#define SDK_STABLE_ERROR_OUT_OF_MEMORY 6   /* backend_sdk.OutOfMemoryError */
#define SDK_STABLE_ERROR_ACCELERATOR 7     /* backend_sdk.AcceleratorError */

/* dtypes: sdk::ScalarType's numbers (headeronly/ScalarType.h), fixed forever. */
#define SDK_STABLE_DTYPE_BOOL 0
#define SDK_STABLE_DTYPE_UINT8 1
#define SDK_STABLE_DTYPE_INT8 2
#define SDK_STABLE_DTYPE_INT16 3
#define SDK_STABLE_DTYPE_INT32 4
#define SDK_STABLE_DTYPE_INT64 5
#define SDK_STABLE_DTYPE_FLOAT16 6
#define SDK_STABLE_DTYPE_BFLOAT16 7
#define SDK_STABLE_DTYPE_FLOAT32 8
#define SDK_STABLE_DTYPE_FLOAT64 9

/* device types: sdk::DeviceType's numbers (headeronly/DeviceType.h), fixed forever. A
 * device index of -1 means the current device of that type. */
#define SDK_STABLE_DEVICE_CPU 0
#define SDK_STABLE_DEVICE_META 1
#define SDK_STABLE_DEVICE_PRIVATEUSE1 2
#define SDK_STABLE_DEVICE_PRIVATEUSE2 3
#define SDK_STABLE_DEVICE_PRIVATEUSE3 4

/* Opaque handles (Note [Stable handle ownership]). */
typedef struct sdk_stable_tensor_opaque* sdk_stable_tensor;
typedef struct sdk_stable_library_opaque* sdk_stable_library;

/* Note [StableIValue]
 * ~~~~~~~~~~~~~~~~~~~
 * One boxed operator argument or return: a 64-bit payload and a tag saying how to read it.
 *   NONE      payload unused (an absent optional, a None return)
 *   TENSOR    payload = (uintptr_t) sdk_stable_tensor, never NULL
 *   INT       payload = the int64_t's bits (also ScalarType, Layout, MemoryFormat: as in c10)
 *   DOUBLE    payload = the double's bits
 *   BOOL      payload = 0 or 1
 *   INT_LIST  payload = (uintptr_t) const sdk_stable_int_list*   (arguments only)
 *   DEVICE    payload = device type in bits 0-7, device index (int8_t) in bits 8-15
 *   STRING    payload = (uintptr_t) const char*, NUL-terminated   (arguments only)
 * An optional argument is NONE or its value's own tag; a Scalar argument is INT, DOUBLE or
 * BOOL. The struct is 16 bytes, fields at fixed offsets. */
#define SDK_STABLE_TAG_NONE 0
#define SDK_STABLE_TAG_TENSOR 1
#define SDK_STABLE_TAG_INT 2
#define SDK_STABLE_TAG_DOUBLE 3
#define SDK_STABLE_TAG_BOOL 4
#define SDK_STABLE_TAG_INT_LIST 5
#define SDK_STABLE_TAG_DEVICE 6
#define SDK_STABLE_TAG_STRING 7

typedef struct sdk_stable_ivalue {
  uint64_t payload;
  int32_t tag;
  int32_t reserved; /* 0 */
} sdk_stable_ivalue;

typedef struct sdk_stable_int_list {
  const int64_t* data;
  int64_t size;
} sdk_stable_int_list;

/* ---- version and errors ---- */
SDK_STABLE_C_API uint32_t sdk_stable_abi_version(void);
/* The message of the calling thread's last failure ("" if none). */
SDK_STABLE_C_API const char* sdk_stable_last_error_message(void);
/* Sets the calling thread's last error message: what a failing kernel does before it
 * returns its status. */
SDK_STABLE_C_API void sdk_stable_set_last_error_message(const char* message);

/* ---- tensors ---- */
/* A new uninitialised tensor. strides may be NULL (contiguous). */
SDK_STABLE_C_API sdk_stable_status sdk_stable_empty_strided(const int64_t* sizes, const int64_t* strides,
                                                            int64_t ndim, int32_t dtype, int32_t device_type,
                                                            int32_t device_index, sdk_stable_tensor* out);
/* Frees one owning handle; NULL is ignored. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_free(sdk_stable_tensor tensor);
/* (SDK_STABLE_ABI_VERSION >= 2) A tensor over memory the caller owns and keeps alive while the
 * tensor lives (nothing is freed; the storage cannot be resized), as PyTorch's from_blob: data is
 * the address of element 0 (the storage offset is 0), viewed with sizes and strides (strides
 * NULL: contiguous) on the given device. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_from_blob(void* data, const int64_t* sizes, const int64_t* strides,
                                                       int64_t ndim, int32_t dtype, int32_t device_type,
                                                       int32_t device_index, sdk_stable_tensor* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_new_reference(sdk_stable_tensor tensor, sdk_stable_tensor* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_dim(sdk_stable_tensor tensor, int64_t* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_sizes(sdk_stable_tensor tensor, const int64_t** out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_strides(sdk_stable_tensor tensor, const int64_t** out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_numel(sdk_stable_tensor tensor, int64_t* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_storage_offset(sdk_stable_tensor tensor, int64_t* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_dtype(sdk_stable_tensor tensor, int32_t* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_device(sdk_stable_tensor tensor, int32_t* out_type,
                                                           int32_t* out_index);
/* The address of the tensor's first element (storage offset applied); device memory for a
 * device tensor. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_data_ptr(sdk_stable_tensor tensor, void** out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_tensor_is_contiguous(sdk_stable_tensor tensor, int32_t* out);

/* ---- operators ---- */
/* Calls "name.overload" ("aten::add", "Tensor"; overload "" or NULL for the default) through
 * the dispatcher, as a Python call would. stack[0, num_args) holds the arguments in schema
 * order; trailing arguments with defaults may be left out. On success the returns are in
 * stack[0, *num_returns) (owned by the caller); the stack must have room for them:
 * capacity >= the schema's number of returns. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_call_op(const char* name, const char* overload,
                                                     sdk_stable_ivalue* stack, int64_t num_args, int64_t capacity,
                                                     int64_t* num_returns);

/* ---- registration ---- */
#define SDK_STABLE_LIBRARY_DEF 0      /* STABLE_SDK_LIBRARY: owns the namespace */
#define SDK_STABLE_LIBRARY_FRAGMENT 1 /* STABLE_SDK_LIBRARY_FRAGMENT */
#define SDK_STABLE_LIBRARY_IMPL 2     /* STABLE_SDK_LIBRARY_IMPL */

/* A kernel: reads its num_args arguments from stack[0, num_args) (borrowed), writes its
 * num_returns returns into stack[0, num_returns) (transferred to the SDK) and returns
 * SDK_STABLE_OK, or sets the thread's message and returns an error status. The stack has
 * max(num_args, num_returns) entries. ctx is the pointer given to sdk_stable_library_impl. */
typedef sdk_stable_status (*sdk_stable_boxed_kernel)(void* ctx, sdk_stable_ivalue* stack, int64_t num_args,
                                                     int64_t num_returns);

/* kind: SDK_STABLE_LIBRARY_*; dispatch_key: a dispatch key name ("CPU", "Meta",
 * "PrivateUse1" or the renamed "Accel" form, "CompositeExplicitAutograd", ...) for IMPL
 * libraries, NULL otherwise; file/line name the registration in error messages. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_create(int32_t kind, const char* ns, const char* dispatch_key,
                                                            const char* file, uint32_t line,
                                                            sdk_stable_library* out);
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_def(sdk_stable_library library, const char* schema);
/* Registers fn for the operator "name" (or "name.overload") at the library's key (IMPL) or
 * as its CompositeImplicitAutograd kernel (DEF/FRAGMENT). */
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_impl(sdk_stable_library library, const char* name,
                                                          sdk_stable_boxed_kernel fn, void* ctx);
/* Undoes every registration of the library and frees it; NULL is ignored. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_free(sdk_stable_library library);
/* Records an error raised while a library registers during static initialisation, so that
 * whoever loads the extension reports it (cpp_extension.load raises it as ValueError). */
SDK_STABLE_C_API void sdk_stable_report_registration_error(const char* message);

/* ---- a device backend's SDK-provided kernels (SDK_STABLE_ABI_VERSION >= 2) ----
 * Note [Stable device backends]
 * A backend whose kernel library is built on this shim gets the SDK's contract-backed kernels
 * (allocation, transfers, resize_, item(): they need only the device runtime contract,
 * runtime/DeviceApi.h, which is C and versioned on its own) and the SDK's CPU fallback, as
 * the C++ API's ops/DeviceOps.h gives them to a C++ backend. The one thing the SDK cannot do
 * for a device is a copy within it (any strides and dtypes): the backend supplies it. */

/* Copies src into dst, two tensors on the same device of the backend (borrowed handles; the
 * shapes match, strides and dtypes may differ). Returns SDK_STABLE_OK or an error status with
 * the thread's message set. ctx is the pointer given to sdk_stable_library_impl_device_kernels. */
typedef sdk_stable_status (*sdk_stable_local_copy_fn)(void* ctx, sdk_stable_tensor dst, sdk_stable_tensor src);

/* Registers, in an IMPL library of namespace "aten" whose key is a device's dense key
 * ("PrivateUse1" or its renamed form), the SDK's contract-backed kernels: empty.memory_format,
 * empty_strided, resize_, _local_scalar_dense and copy_ (host to device, device to host,
 * between devices; a copy within one device calls local_copy). */
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_impl_device_kernels(sdk_stable_library library,
                                                                         sdk_stable_local_copy_fn local_copy,
                                                                         void* ctx);
/* Registers the SDK's CPU fallback (inputs copied to the CPU, the CPU kernel, results copied
 * back) as the backend fallback of an IMPL library of namespace "_": every operator without a
 * kernel of that key runs on the CPU. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_library_fallback_cpu(sdk_stable_library library);
/* The native handle (the device contract's sdk_stream_t, runtime/DeviceApi.h) of the current
 * stream of a device (device_index -1: the current device), so that a kernel launches its work
 * in stream order, as PyTorch's stable accelerator API gives the current stream. */
SDK_STABLE_C_API sdk_stable_status sdk_stable_current_stream(int32_t device_type, int32_t device_index,
                                                            void** out_native_stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BACKEND_SDK_STABLE_C_SHIM_H_ */
