// Small portability macros shared by every layer.
#pragma once

#define SDK_LIKELY(x) (__builtin_expect(static_cast<bool>(x), 1))
#define SDK_UNLIKELY(x) (__builtin_expect(static_cast<bool>(x), 0))

// Symbols of libbackend_sdk that vendors may use are exported explicitly; the
// library itself is built with hidden visibility so its ABI surface stays small.
#if defined(_WIN32)
#define SDK_API __declspec(dllexport)
#else
#define SDK_API __attribute__((visibility("default")))
#endif
