#!/usr/bin/env bash
# One command for the sanitizer build and run (README, "Development"; docs/architecture.md,
# "Sanitizers and fuzzing").
#
#   tools/sanitize.sh                      build (ASan+UBSan) and run the C++-heavy test selection
#   tools/sanitize.sh tests/test_x.py -k y build and run pytest with these arguments instead
#   tools/sanitize.sh -x -k stress         options only: added to the default selection
#   tools/sanitize.sh --fuzz SECONDS       build and run every fuzzer for SECONDS each under ASan
#   tools/sanitize.sh --build-only         only build
#   tools/sanitize.sh --env                print the environment (eval "$(tools/sanitize.sh --env)")
#   SDK_SANITIZER=thread tools/sanitize.sh build with TSan instead (build-tsan/; the concurrency tests)
#
# The build lives in build-asan/ (build-tsan/), configured with SDK_INPLACE=OFF so it never
# overwrites the in-place libraries of build-dev/, and is installed into build-asan/py/ next to
# symbolic links to the Python sources: PYTHONPATH=build-asan/py imports the instrumented
# libraries with the checkout's Python code. PYTHONSAFEPATH=1 keeps the current directory (the
# checkout, whose backend_sdk/ may hold an uninstrumented in-place build) off sys.path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sanitizer=${SDK_SANITIZER:-address}
case "$sanitizer" in
  address) short=asan; flags="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
  thread) short=tsan; flags="-fsanitize=thread" ;;
  *) echo "tools/sanitize.sh: SDK_SANITIZER must be 'address' or 'thread', not '$sanitizer'" >&2; exit 2 ;;
esac
build=${SDK_SANITIZE_BUILD_DIR:-$root/build-$short}
stage=$build/py
# Reports go to files (one per process, <kind>.<pid>): pytest captures a test's stderr and a report
# written there is lost when the sanitizer aborts the process; subprocesses of tests report too.
reports=$build/reports

# The C++-heavy tests CI runs under ASan (kept to a few minutes at -O1; see the docs for why these).
default_tests=(
  tests/test_dispatcher.py tests/test_schema.py tests/test_library_api.py tests/test_core_types.py
  tests/test_runtime_allocator.py tests/test_runtime_streams.py tests/test_runtime_faults.py
  tests/test_runtime_bad_input.py tests/test_runtime_pinned.py tests/test_runtime_stress.py
  tests/test_stress_concurrency.py tests/test_device_sim_contract.py
  tests/test_ops_indexing.py tests/test_cpp_indexing.py tests/test_tensor.py
  tests/test_fuzz_regressions.py tests/test_accel_backend.py
  tests/test_robustness_dispatch.py tests/test_robustness_sim.py tests/test_robustness_sizes.py
  tests/test_robustness_runtime.py
)
tsan_tests=(tests/test_runtime_stress.py tests/test_stress_concurrency.py tests/test_runtime_streams.py)

runtime_lib() { "${CXX:-c++}" -print-file-name="lib$1.so"; }

sanitizer_env() {
  local preload
  if [[ $short == asan ]]; then
    preload=$(runtime_lib asan)
    # detect_leaks=0: CPython does not free its interned objects and arenas at exit, so LSan would
    # report thousands of "leaks" that are not ours; tests/test_leaks.py measures our leaks instead.
    # halt_on_error/abort_on_error: the first report fails the run (a crash pytest cannot swallow).
    # allocator_may_return_null: a huge request (empty(2**40)) fails as malloc does in production, so
    # the SDK's out-of-memory path runs instead of ASan aborting on the size.
    # allow_user_segv_handler: device_sim's SIGSEGV handler (Note [Simulated device memory]) must
    # stay installed; it chains to ASan's handler for addresses that are not device memory.
    echo "export ASAN_OPTIONS='detect_leaks=0:halt_on_error=1:abort_on_error=1:allow_user_segv_handler=1:allocator_may_return_null=1:log_path=$reports/asan:detect_stack_use_after_return=0:strict_string_checks=0:check_initialization_order=1:print_summary=1'"
    echo "export UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan:suppressions=$root/tools/ubsan.supp'"
  else
    preload=$(runtime_lib tsan)
    echo "export TSAN_OPTIONS='halt_on_error=1:second_deadlock_stack=1:log_path=$reports/tsan:suppressions=$root/tools/tsan.supp'"
  fi
  # Python is not instrumented: the sanitizer runtime must be the first library loaded. libstdc++
  # right after it: Python does not link it, and the runtime's __cxa_throw interceptor, resolved
  # when the runtime starts, would otherwise find no real __cxa_throw ("CHECK failed:
  # asan_interceptors.cpp:320") at the SDK's first C++ exception.
  echo "export LD_PRELOAD='$preload $(runtime_lib stdc++)'"
  # Python objects through malloc, so ASan sees use-after-free of objects the SDK holds.
  echo "export PYTHONMALLOC=malloc"
  echo "export PYTHONSAFEPATH=1"
  echo "export PYTHONPATH='$stage:$root/samples/python_backend:$root${PYTHONPATH:+:$PYTHONPATH}'"
}

build_it() {
  # ccache hits across checkouts (a worktree, CI's fresh clone): paths relative to the checkout, and
  # the build directory left out of the hash (-g1 would otherwise put it in every object's key).
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  local launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$root/tools/sanitize_launcher.sh")
  local generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  if [[ ! -f $build/CMakeCache.txt ]]; then
    # Debug: no -O2 for vendor libraries and no LTO from pybind11 (both only in Release builds);
    # the launcher turns any -O2/-O3 of projects built against it into -O1. -g1: line tables for the reports, cheap to build.
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DSDK_INPLACE=OFF \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1 -fno-omit-frame-pointer $flags" \
      -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
      "${launcher[@]}" -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" >/dev/null
  fi
  cmake --build "$build" -j "${SDK_SANITIZE_JOBS:-$(nproc)}"
  # The stage is an installed SDK: what `cmake --install` writes (the libraries, include/, and
  # share/, the CMake package with its generated backend_sdkTargets*.cmake) are real files of the
  # stage, never links into the checkout. Stages made before this rule linked share/ to the
  # checkout's backend_sdk/share, so the install wrote the targets files through the link into the
  # checkout (untracked files there): such a link is removed first.
  if [[ -L $stage/backend_sdk/share ]]; then rm "$stage/backend_sdk/share"; fi
  cmake --install "$build" --prefix "$stage" >/dev/null
  # The Python sources, linked (not copied) so edits need no rebuild.
  local pkg src entry
  for pkg in backend_sdk device_sim samples/accel_sim/accel; do
    src=$root/$pkg
    mkdir -p "$stage/$(basename "$pkg")"
    for entry in "$src"/*; do
      case "$(basename "$entry")" in
        lib | include | share | *.so | __pycache__) continue ;;  # installed, see above
      esac
      ln -sfn "$entry" "$stage/$(basename "$pkg")/$(basename "$entry")"
    done
  done
}

mode=test
case "${1:-}" in
  --env) sanitizer_env; exit 0 ;;
  --build-only) mode=build; shift ;;
  --fuzz) mode=fuzz; shift; fuzz_seconds=${1:?--fuzz SECONDS}; shift ;;
esac

start=$(date +%s)
build_it
echo "tools/sanitize.sh: $sanitizer build ready in $build ($(( $(date +%s) - start )) s)"
[[ $mode == build ]] && exit 0

# The interpreter itself, not a wrapper script (pyenv's shim is bash, which crashes under TSan's preload).
python=$(python -c 'import sys; print(sys.executable)')
eval "$(sanitizer_env)"
rm -rf "$reports" && mkdir -p "$reports"
# Prints every report the run produced; a report fails the run even if pytest passed (a subprocess's).
show_reports() {
  local status=$1 f found=0
  for f in "$reports"/*; do
    [[ -e $f ]] || continue
    # allocator_may_return_null=1 makes ASan warn for each refused huge request (a fuzzer asking
    # for 4 TiB, the out-of-memory tests): that is the behaviour under test, not a finding. A file
    # with anything else in it is one.
    if ! grep -qvE '^==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$|^$' "$f"; then
      echo "tools/sanitize.sh: $f: only refused huge allocations ($(wc -l < "$f") warnings), not a finding" >&2
      continue
    fi
    found=1
    echo "==================== sanitizer report $f ====================" >&2
    cat "$f" >&2
  done
  if [[ $found == 1 ]]; then
    echo "tools/sanitize.sh: sanitizer reports above (also in $reports)" >&2
    [[ $status == 0 ]] && status=1
  fi
  exit "$status"
}
# Check the layout before running anything: the tests must import the instrumented libraries.
"$python" -c "import backend_sdk, sys; f = backend_sdk._C.__file__; sys.exit(0 if f.startswith('$stage') else 'tools/sanitize.sh: backend_sdk._C came from ' + f)"

if [[ $mode == fuzz ]]; then
  status=0
  for target in $("$python" -m tests.fuzz.run --list); do
    "$python" -m tests.fuzz.run "$target" --seconds "$fuzz_seconds" || status=$?
  done
  show_reports $status
fi

# No arguments, or options only (tools/sanitize.sh -x -k stress): the default selection.
if [[ $# -eq 0 || ${1:0:1} == - ]]; then
  if [[ $short == asan ]]; then set -- "${default_tests[@]}" "$@"; else set -- "${tsan_tests[@]}" "$@"; fi
fi
status=0
"$python" -m pytest -q -p no:cacheprovider "$@" || status=$?
show_reports $status
