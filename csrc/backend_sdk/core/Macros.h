// Small portability macros shared by every layer.
#pragma once

#include <backend_sdk/headeronly/Macros.h>  // SDK_LIKELY, SDK_UNLIKELY

// Symbols of libbackend_sdk that vendors may use are exported explicitly; the
// library itself is built with hidden visibility so its ABI surface stays small.
#if defined(_WIN32)
#define SDK_API __declspec(dllexport)
#else
#define SDK_API __attribute__((visibility("default")))
#endif
