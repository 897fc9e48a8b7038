"""``python -m backend_sdk new NAME``: writes a complete vendor backend project.

The templates live in ``templates/``: ``common/`` (README, tests) plus ``cpp/`` (the default: a
scikit-build-core project with a device contract implementation and kernels in C++) or
``python/`` (``--python-only``: the device and the kernels in Python). ``--stable`` is ``cpp/``
with the files of ``stable/`` in place of its own: kernels written only against the ABI-stable
surface (``<backend_sdk/stable/...>``), built with ``backend_sdk_add_backend(... STABLE)``. ``__NAME__`` in file names
and contents becomes the backend's name; ``__SDK_CMAKE_DIR__`` the directory of the generating
SDK's CMake package (pip builds in isolation and cannot import the SDK to find it).
"""
from __future__ import annotations

import importlib.util
import keyword
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["create_project", "check_name", "BUILTIN_DEVICE_NAMES"]

_TEMPLATES = Path(__file__).resolve().parent / "templates"

#: Device names a backend may not take: the SDK's own and other frameworks' (the SDK's rename refuses
#: them too), and the PrivateUse keys' default names.
BUILTIN_DEVICE_NAMES = frozenset({
    "cpu", "cuda", "meta", "mps", "xpu", "xla", "hip", "ipu", "mtia", "hpu", "ve", "lazy", "vulkan", "fpga",
    "maia", "mkldnn", "opengl", "opencl", "ideep", "privateuseone", "privateusetwo", "privateusethree",
    "privateuse1", "privateuse2", "privateuse3",
})

_LAYOUT_CPP = """- `CMakeLists.txt` — finds the SDK's CMake package and builds `lib__NAME___backend.so` with
  `backend_sdk_add_backend` (installed into the `__NAME__` package).
- `csrc/Device.cpp` — the device runtime contract, delegating to the simulator (`device_sim`).
- `csrc/Kernels.cpp` — kernels registered under PrivateUse1: the SDK's contract-backed kernels,
  add / mul / relu / sum on the device, the SDK's CPU fallback for the rest.
- `__NAME__/__init__.py` — renames PrivateUse1 to `__NAME__`, loads the library, attaches the device,
  generates `Tensor.__NAME__()` / `Tensor.is___NAME__` and the device module.
- `device_sim.hpp` (the SDK's, next to `device_sim.h`) — the simulator's C++ helpers both C++ files
  use until the hardware exists: `device_sim::contract()` (the simulator's contract table, which every
  `dev_*` slot forwards to), `device_sim::launch` (a C++ callable run as a kernel on a stream),
  `device_sim::host_data` / `host_alias` (a device tensor's memory as a kernel reaches it),
  `device_sim::local_copy` and `device_sim::elementwise`. Bring-up replaces each use with a driver call."""

_LAYOUT_PY = """- `__NAME__/__init__.py` — the device (a `backend_sdk.utils.python_device.PythonDevice`), numpy
  kernels for add / mul / relu / sum registered with `backend_sdk.library`, the SDK's contract-backed
  kernels and CPU fallback; renames PrivateUse1 to `__NAME__` and generates the device module."""

_LAYOUT_STABLE = """- `CMakeLists.txt` — finds the SDK's CMake package and builds `lib__NAME___backend.so` with
  `backend_sdk_add_backend(... STABLE)`: only the ABI-stable headers are on the include path and the
  link is checked to use nothing of libbackend_sdk but its C shim, so the binary keeps working
  with later SDK releases of the same major version (installed into the `__NAME__` package).
- `csrc/Device.cpp` — the device runtime contract (a C ABI), delegating to the simulator (`device_sim`).
- `csrc/Kernels.cpp` — kernels on the stable surface (`STABLE_SDK_LIBRARY_IMPL`): the SDK's
  contract-backed kernels, add / mul / relu / sum on the device, the SDK's CPU fallback for the rest.
- `__NAME__/__init__.py` — renames PrivateUse1 to `__NAME__`, loads the library, attaches the device,
  generates `Tensor.__NAME__()` / `Tensor.is___NAME__` and the device module."""

_FIRST_KERNEL_STABLE = """In `csrc/Kernels.cpp`, write a kernel on `sdk::stable::Tensor` (the schema's
   arguments as C++ parameters) and register it in the `STABLE_SDK_LIBRARY_IMPL(aten, PrivateUse1, m)`
   block:

       // neg(Tensor self) -> Tensor
       Tensor neg(Tensor self) {
         if (!is_native(self, self)) {
           return run_on_cpu(self.device(), [&] {
             return sdk::stable::call_op("aten::neg", "", {sdk::stable::from(to_cpu(self))}).take<Tensor>(0);
           });
         }
         Tensor out = sdk::stable::empty_like(self);
         ...  // launch(self.device(), "neg_f32", [=] { ... }) as relu does
         return out;
       }
       ...
       m.impl("neg", &neg);

   Only `<backend_sdk/stable/...>` and `<backend_sdk/headeronly/...>` compile here; the build
   fails if the library uses any other symbol of libbackend_sdk."""

_FIRST_KERNEL_CPP = """In `csrc/Kernels.cpp`, write a typed kernel (the schema's arguments as C++
   parameters) and register it in the `SDK_LIBRARY_IMPL(aten, PrivateUse1, m)` block. An
   elementwise one is its arithmetic given to `device_sim::elementwise<float>` (`device_sim.hpp`,
   the simulator's C++ helpers: it declines a case the device does not serve, such as another
   dtype or broadcasting, to the CPU fallback, allocates the result and launches the loop on the
   current stream):

       // neg(Tensor self) -> Tensor
       Tensor neg(const Tensor& self) { return device_sim::elementwise<float>("neg_f32", [](float x) { return -x; }, self); }

       m.impl("neg", sdk::declinable(&neg));  // in the SDK_LIBRARY_IMPL block

   Any other kernel launches its own loop with `device_sim::launch(device, name, [=] { ... })` over
   `device_sim::host_data<float>(t)` (the address a kernel reaches a device tensor's memory at), as
   `sum` does; on the hardware each of these becomes your driver's kernel launch. Kernels call any
   aten operator through the SDK's generated C++ API (`sdk::ops::sum(x)`,
   `sdk::ops::sum_out(out, x, dims)`, `<backend_sdk/ops/Operators.h>`) and the Tensor methods
   (`x.contiguous()`, `x.to(dtype)`, `x.view(sizes)`, `x.transpose(0, 1)`, ...)."""

_FIRST_KERNEL_PY = """In `__NAME__/__init__.py`, add a numpy kernel to `KERNELS`, e.g.
   `"neg": _pd.numpy_kernel(_aten.neg.default, lambda a: -a)`; the operator's schema gives its
   arguments."""

_BUILD_NOTES_CPP = """
## Finding the SDK when building

`pip install .` builds in an isolated environment, which does not contain the installed
backend_sdk. `CMakeLists.txt` therefore remembers where the SDK that generated the project keeps
its CMake package (`__SDK_CMAKE_DIR__`). To build against another SDK (a new virtual
environment, a new SDK version), set `BACKEND_SDK_CMAKE_DIR` to its directory:

    export BACKEND_SDK_CMAKE_DIR=$(python -c "import backend_sdk, os; print(os.path.join(backend_sdk.cmake_prefix_path, 'backend_sdk'))")
    pip install .

(`pip install --no-build-isolation .` finds the installed SDK by itself, through its `cmake.root`
entry point.) The library links the SDK with an RPATH to `site-packages/backend_sdk/lib`: install
the backend into the same environment as the SDK.
"""


def check_name(name: str) -> None:
    """ValueError unless ``name`` can name a new backend: a lowercase Python identifier that is not a
    keyword, a built-in device name, or a module that Python already finds (stdlib or installed)."""
    if not isinstance(name, str) or not name.isidentifier() or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"backend name {name!r} is not valid: use a lowercase Python identifier "
                         "(letters, digits and _, not starting with a digit), e.g. 'npu'")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise ValueError(f"backend name '{name}' is a Python keyword")
    if name in BUILTIN_DEVICE_NAMES:
        raise ValueError(f"backend name '{name}' collides with the built-in device name '{name}': choose "
                         "another name")
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        raise ValueError(f"backend name '{name}' collides with the Python standard library module '{name}'")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin or (list(spec.submodule_search_locations or []) or ["?"])[0]
        raise ValueError(f"backend name '{name}' collides with the installed module '{name}' ({where}): "
                         "`import {name}` must import the backend")


def _sdk_cmake_dir() -> str:
    import backend_sdk

    return str(Path(backend_sdk.cmake_prefix_path).resolve() / "backend_sdk")


def create_project(name: str, directory: str | os.PathLike[str] | None = None, python_only: bool = False,
                   stable: bool = False) -> Path:
    """Writes the project of backend ``name`` into ``<directory>/<name>/`` (directory: the current one)
    and returns its path. ``stable=True``: the kernels are written against the ABI-stable surface
    only (the library links nothing of libbackend_sdk but its C shim).

    Raises ValueError for a bad name (see :func:`check_name`) or for ``python_only`` with ``stable``,
    and FileExistsError if the target exists; in all cases nothing is written. The project is assembled in a temporary folder next to
    the target and renamed into place, so a failure leaves nothing behind either.
    """
    import backend_sdk

    check_name(name)
    if python_only and stable:
        raise ValueError("--python-only and --stable exclude each other: a stable backend is a C++ library "
                         "built on the ABI-stable surface")
    parent = Path(directory if directory is not None else os.getcwd()).resolve()
    target = parent / name
    if target.exists() or target.is_symlink():
        raise FileExistsError(f"{target} already exists: choose another directory (--dir) or remove it; "
                              "nothing was written")
    parent.mkdir(parents=True, exist_ok=True)
    # Later roots replace earlier ones' files of the same path (stable/ overrides cpp/).
    flavours = ["python"] if python_only else ["cpp", "stable"] if stable else ["cpp"]
    cmake_dir = "" if python_only else _sdk_cmake_dir()
    replacements = {
        "__LAYOUT__": _LAYOUT_PY if python_only else _LAYOUT_STABLE if stable else _LAYOUT_CPP,
        "__FIRST_KERNEL__": _FIRST_KERNEL_PY if python_only else _FIRST_KERNEL_STABLE if stable else _FIRST_KERNEL_CPP,
        "__BUILD_NOTES__": "" if python_only else _BUILD_NOTES_CPP,
        "__FLAVOUR_FLAG__": " --python-only" if python_only else " --stable" if stable else "",
        "__STANDIN__": ("a Python device whose memory is numpy arrays" if python_only
                        else "the SDK's simulated device, `device_sim`"),
        "__SDK_CMAKE_DIR__": cmake_dir,
        "__SDK_VERSION__": backend_sdk.__version__,
        "__NAME__": name,
    }

    def render(text: str) -> str:
        for key, value in replacements.items():  # the snippets above contain __NAME__: it goes last
            text = text.replace(key, value)
        return text

    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=parent))
    try:
        for root in [_TEMPLATES / "common", *(_TEMPLATES / f for f in flavours)]:
            for src in sorted(root.rglob("*")):
                if src.is_dir() or "__pycache__" in src.parts:
                    continue
                relative = str(src.relative_to(root))
                if src.name == "gitignore":  # shipped without the dot (package data keeps it)
                    relative = relative[: -len("gitignore")] + ".gitignore"
                dst = staging / render(relative)
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_text(render(src.read_text()))
        staging.chmod(0o755)
        try:
            os.rename(staging, target)  # fails if the target appeared meanwhile (a non-empty directory)
        except OSError as e:
            raise FileExistsError(f"{target} already exists: nothing was written") from e
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
