#!/usr/bin/env bash
# Test (c) of the ABI-stable surface (docs/architecture.md, "The ABI-stable surface"): a kernel library
# built against the stable surface of the normal SDK runs unchanged on an SDK whose internal TensorImpl
# layout changed (CMake option SDK_TEST_TENSORIMPL_PADDING adds a field).
#
#   tools/stable_abi_check.sh            build build-abi-padding/ (ccache when present), then check
#
# 1. samples/stable_ops is built with cpp_extension.load(stable=True) against the checkout's SDK
#    (its in-place build must exist: the README's build), into build-abi-padding/prebuilt/.
# 2. The SDK, _C, device_sim and the accel sample are built with SDK_TEST_TENSORIMPL_PADDING=ON.
# 3. A package tree (backend_sdk, device_sim, accel) is assembled from the checkout's Python files
#    and the padded binaries, and samples/stable_ops/check.py runs the prebuilt library on it, on cpu
#    and accel. From a warm ccache step 2 takes about a minute; a cold one is a full SDK build at -O0.
# 4. The negative control: tests/data/stable/cpp_layout_probe.cpp, a library built against the
#    SDK's C++ API (its kernel reads TensorImpl through inline accessors), reads the right values
#    on the normal SDK and must read wrong ones (or crash) on the padded SDK. If it did not, the
#    padding would not change the layout a C++ library sees, and step 3 would prove nothing: the
#    script fails then.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${SDK_ABI_BUILD_DIR:-$root/build-abi-padding}
mkdir -p "$build"

echo "== 1. the stable library, built against the normal SDK"
prebuilt=$(PYTHONPATH="$root" python - "$build/prebuilt" <<'PY'
import sys
from backend_sdk.utils import cpp_extension
print(cpp_extension.load("stable_ops_abi", ["samples/stable_ops/csrc/stable_ops.cpp"], stable=True,
                         is_python_module=False,
                         build_directory=sys.argv[1], is_standalone=True))
PY
)
echo "$prebuilt"
# The negative control's library (step 4), built and checked on the normal SDK: dim 2, numel 15.
probe=$(PYTHONPATH="$root" python - "$build/prebuilt_cpp" <<'PY'
import sys
import backend_sdk
from backend_sdk.utils import cpp_extension
path = cpp_extension.load("cpp_layout_probe", ["tests/data/stable/cpp_layout_probe.cpp"], is_python_module=False,
                          build_directory=sys.argv[1])
value = backend_sdk.ops.cpp_layout_probe.probe(backend_sdk.ones(3, 5))
assert value == 2015, f"the probe misreads the normal SDK's layout: {value}"
print(path)
PY
)
echo "$probe (reads 1000 * dim + numel = 2015 on the normal SDK)"

echo "== 2. the SDK with a changed TensorImpl layout ($build)"
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O0: the check is about layouts, not speed, and unoptimised kernels compile ~3.5x faster (a cold
# padded build is a full SDK build: at -O3 10-15 min on the loaded 2-core machine).
cmake -S . -B "$build" -G Ninja -DSDK_TEST_TENSORIMPL_PADDING=ON -DSDK_INPLACE=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" "${launcher[@]}" >/dev/null
ninja -C "$build" backend_sdk _C device_sim accel_sim

echo "== 3. the prebuilt stable library on the padded SDK"
pkg="$build/pkg"
rm -rf "$pkg" && mkdir -p "$pkg"
python - "$pkg" <<'PY'
import shutil, sys
ignore = shutil.ignore_patterns("*.so", "__pycache__", "include")
for src, dst in [("backend_sdk", "backend_sdk"), ("samples/accel_sim/accel", "accel")]:
    shutil.copytree(src, f"{sys.argv[1]}/{dst}", ignore=ignore)
shutil.os.makedirs(f"{sys.argv[1]}/device_sim")
shutil.copy("device_sim/__init__.py", f"{sys.argv[1]}/device_sim/")
PY
mkdir -p "$pkg/backend_sdk/lib"
cp "$build"/libbackend_sdk.so "$pkg/backend_sdk/lib/"
cp "$build"/_C*.so "$pkg/backend_sdk/"
cp "$build"/libdevice_sim.so "$pkg/device_sim/"
cp "$(find "$build" -name libaccel_sim.so | head -1)" "$pkg/accel/"
grep -q "SDK_TEST_TENSORIMPL_PADDING:BOOL=ON" "$build/CMakeCache.txt"
(cd "$pkg" && PYTHONPATH="$pkg:$root/samples/stable_ops" python "$root/samples/stable_ops/check.py" "$prebuilt" accel)

echo "== 4. negative control: the C++-API library on the padded SDK"
status=0
read_back=$(cd "$pkg" && PYTHONPATH="$pkg" python - "$probe" 2>&1 <<'PY'
import ctypes, sys
import backend_sdk
backend_sdk._C._take_static_registration_errors()
ctypes.CDLL(sys.argv[1])
errors = backend_sdk._C._take_static_registration_errors()
assert not errors, errors
print(backend_sdk.ops.cpp_layout_probe.probe(backend_sdk.ones(3, 5)))
PY
) || status=$?
if [[ $status == 0 && $(echo "$read_back" | tail -1) == 2015 ]]; then
  echo "stable_abi_check: FAILED: the C++-API library still reads the right TensorImpl fields on the padded SDK," >&2
  echo "so the padded build does not change the layout and step 3 proves nothing" >&2
  exit 1
fi
if [[ $status == 0 ]]; then
  echo "the C++-API library read $(echo "$read_back" | tail -1) instead of 2015: it breaks on the padded SDK, as expected"
else
  echo "the C++-API library crashed or failed on the padded SDK (exit status $status), as expected:"
  echo "$read_back" | tail -3
fi
echo "stable_abi_check: OK (the stable library runs on the padded SDK; a C++-API library does not)"
