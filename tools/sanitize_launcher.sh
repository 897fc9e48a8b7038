#!/usr/bin/env bash
# CMAKE_CXX_COMPILER_LAUNCHER of the sanitizer builds (tools/sanitize.sh): runs the compiler
# through ccache when it is installed, and compiles every file at -O1.
#
# Why rewrite -O: the SDK's own sources take their optimisation level from the build type (Debug
# here, see tools/sanitize.sh), but projects built against the sanitizer build in the tests (the
# consumer CMake projects, samples, JIT extensions) may build Release, where
# backend_sdk_add_backend adds -O2 after CMAKE_CXX_FLAGS, so a flag cannot lower it. -O2/-O3 under
# ASan+UBSan build several times slower; -O1 keeps the reports exact (the inliner still runs, stack
# traces stay readable).
set -euo pipefail
args=()
for a in "$@"; do
  case "$a" in
    -O2 | -O3 | -Ofast) args+=("-O1") ;;
    *) args+=("$a") ;;
  esac
done
if [[ -z "${SDK_SANITIZE_NO_CCACHE:-}" ]] && command -v ccache >/dev/null 2>&1; then
  exec ccache "${args[@]}"
fi
exec "${args[@]}"
