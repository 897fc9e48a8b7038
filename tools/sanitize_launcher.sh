#!/usr/bin/env bash
# CMAKE_CXX_COMPILER_LAUNCHER of the sanitizer builds (tools/sanitize.sh): runs the compiler
# through ccache when it is installed, and compiles every file at -O1.
#
# Why rewrite -O: CMakeLists.txt compiles the SDK's sources with a per-file -O3 and device_sim at
# -O3, and backend_sdk_add_backend gives vendor libraries -O2; those flags come after
# CMAKE_CXX_FLAGS on the command line, so a build type cannot lower them. -O3 under ASan+UBSan is
# what made a sanitizer build take ~22 minutes on the 2-core machine; -O1 keeps the reports exact
# (the inliner still runs, stack traces stay readable) and builds several times faster.
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
