// Portability macros of the header-only surface (Note [Header-only APIs]).
#pragma once

#define SDK_LIKELY(x) (__builtin_expect(static_cast<bool>(x), 1))
#define SDK_UNLIKELY(x) (__builtin_expect(static_cast<bool>(x), 0))

// Default visibility for header-only classes whose typeinfo must be one across
// libraries (an exception thrown in one and caught in another). Unlike SDK_API
// (core/Macros.h) it never means "exported by libbackend_sdk".
#define SDK_HEADERONLY_VISIBLE __attribute__((visibility("default")))
