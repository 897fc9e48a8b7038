// SDK_COLD_CHECK: SDK_CHECK_KIND for hot paths. Internal to csrc/ops.
//
// Note [Cold checks]
// ~~~~~~~~~~~~~~~~~~
// SDK_CHECK_KIND expands its message formatting (an ostringstream) inline,
// and the compiler prepares part of it (stream vtables, a large stack frame)
// even when the check passes: ~20 instructions per check, which matters on
// the path of `a + b` on small tensors. This variant moves the formatting
// into a noinline, cold lambda so a passing check costs a compare and a
// branch. Same arguments and error kinds as SDK_CHECK_KIND. (If core's
// SDK_CHECK_KIND adopts the same shape, this header can go.)
#pragma once

#include "core/Exception.h"

#define SDK_COLD_CHECK(kind, cond, ...)                                                            \
  do {                                                                                             \
    if (SDK_UNLIKELY(!(cond))) {                                                                   \
      [&]() __attribute__((noinline, cold)) {                                                      \
        ::sdk::detail::throw_error(::sdk::ErrorKind::kind, #cond,                                  \
                                   ::sdk::detail::str("" __VA_OPT__(, ) __VA_ARGS__));             \
      }();                                                                                         \
    }                                                                                              \
  } while (0)
