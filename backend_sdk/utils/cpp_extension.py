"""``backend_sdk.utils.cpp_extension``: build vendor C++ against the SDK, just in time or with setuptools.

PyTorch's ``torch.utils.cpp_extension`` with the SDK's headers and library::

    from backend_sdk.utils import cpp_extension
    ext = cpp_extension.load("my_ext", ["csrc/my_ext.cpp"])          # a Python module (PYBIND11_MODULE)
    cpp_extension.load("my_kernels", ["csrc/MyKernels.cpp"], is_python_module=False)  # kernels only
    # the SDK_LIBRARY* blocks of either are registered: backend_sdk calls reach their kernels

    # setup.py
    from setuptools import setup
    from backend_sdk.utils.cpp_extension import BuildExtension, CppExtension
    setup(name="my_ext", ext_modules=[CppExtension("my_ext", ["my_ext.cpp"])],
          cmdclass={"build_ext": BuildExtension})

``load`` returns, as PyTorch's: with ``is_python_module=True`` (the default) the imported module,
which the library must define (``PYBIND11_MODULE(SDK_EXTENSION_NAME, m)``; ``TORCH_EXTENSION_NAME``
is defined too, so code written for PyTorch builds unchanged; or a hand-written
``PyInit_<name>``); with ``is_python_module=False`` it loads the library as a plain shared library
(what PyTorch does through ``torch.ops.load_library``), which is how a library that only registers
kernels and operators is loaded, and returns its path; with ``is_standalone=True`` it builds the
library without loading it and returns its path (PyTorch builds an executable there: the SDK has
no use for one).

Note [JIT extension cache]
~~~~~~~~~~~~~~~~~~~~~~~~~~
An extension named NAME is built in ``<root>/<python tag>/NAME/`` (root: ``$BACKEND_SDK_EXTENSIONS_DIR``
or ``~/.cache/backend_sdk_extensions``; ``build_directory=`` replaces the whole path). The library is
``NAME_<key>.so`` where ``key`` hashes everything the result depends on: the sources' contents, the
headers next to them and in ``extra_include_paths`` (size and mtime), the flags (among them the
module name ``-DSDK_EXTENSION_NAME``, see Note [JIT extension versions]), the compiler, the SDK
version and its library (size and mtime), and the Python module flag. So a load whose library exists
is a hash plus a dlopen, in any process, and a changed input builds a new file (a process that
already loaded the old one keeps it: the dynamic loader would hand back the old handle for the same
file name).

Builds of one NAME are serialised across processes by ``fcntl.flock`` on ``<dir>/lock``; the library
is linked under a temporary name and renamed into place, so a reader never sees half a file and a
crashed build leaves nothing that looks finished. Sources compile in parallel: through ninja (with
compiler depfiles, so a rebuild recompiles only what changed) when it is on PATH, else one compiler
process per source.

Several processes may build the same NAME from different inputs at once (two ``load_inline`` calls
with different sources): each must load its own code. So ``load_inline`` writes ``main.cpp`` only with
the build lock held, right before compiling it (its key hashes the text, not the file), and a builder
loads what it built before it releases the lock. After a build the libraries of NAME's other keys are
deleted (they would pile up with every edit), but only by a builder (under the build lock) that also
gets ``<dir>/load.lock`` exclusively without waiting: a cached load holds that file shared from the
existence check to the dlopen, so no library is deleted between the two; when one is held the clean-up
is left to the next build. Deleting a library that a process has loaded is harmless (its mapping stays).
A path returned by ``is_standalone=True`` is only guaranteed until another build of NAME.

Note [JIT extension versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
As PyTorch's JIT does, a process that loads NAME again with other inputs (sources, flags, build
directory, ``is_python_module``) builds and loads version 1, 2, ... of it: the module is then named
``NAME_v1`` (``SDK_EXTENSION_NAME`` and ``TORCH_EXTENSION_NAME`` are defined to it, so
``PYBIND11_MODULE(SDK_EXTENSION_NAME, m)`` exports ``PyInit_NAME_v1``: a Python module of one name
can be imported only once per process). The same inputs as the loaded version return what that load
returned (the same module object, or the path) without building; inputs that differ from the loaded
version's bump the number even when an older version had them (PyTorch's rule).

The loaded versions' registrations are a deliberate difference from PyTorch, where the second
version's ``TORCH_LIBRARY`` block fails ("Only a single TORCH_LIBRARY can be used to register the
namespace"): here the new version replaces the old one. Loading version N first undoes every
registration that the SDK_LIBRARY* blocks of version N-1 made (Note [Extension library groups],
csrc/backend_sdk/dispatch/detail/LibraryGroups.h: the blocks a library runs while it is loaded are
recorded in a group that can be reset without unloading it), then loads version N. So its operators
are defined afresh and its kernels are the ones called (an operator handle fetched before, such as
``op = backend_sdk.ops.ns.f``, names the old definition and raises a RuntimeError saying to look the
operator up again: Note [Schema lifetime]); code of the old version stays mapped (a
Python module of the old version still works, and its functions reach the new kernels through the
dispatcher). The old version is undone only after the new one compiled: a compile error leaves it
in place. A new version that then fails to load (a registration error, an undefined symbol) leaves
neither registered; loading any inputs of NAME again builds the next version.

Errors when loading: a library with an unresolved symbol raises ``ExtensionLoadError`` (an ``OSError``,
what PyTorch's ``load`` raises through ctypes) naming the extension, the library and the symbol
(demangled when ``c++filt`` is available); with ``is_python_module=True`` it is an ``ImportError``, as
PyTorch's, with the same message, and a library without ``PyInit_<name>`` is an ``ImportError`` saying
how to define the module or load it as a library. Registration errors of its SDK_LIBRARY blocks are a
ValueError; nothing of that library stays registered.
"""
from __future__ import annotations

import ctypes
import fcntl
import glob
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import types
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable

__all__ = ["load", "load_inline", "include_paths", "library_paths", "get_default_build_root",
           "verify_ninja_availability", "is_ninja_available", "ExtensionLoadError", "CppExtension",
           "BuildExtension"]

_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl", ".cuh")
_COMMON_CFLAGS = ["-std=c++17", "-O2", "-fPIC"]
#: Libraries loaded by this process: path -> ctypes handle (kept so they are never unloaded).
_loaded: dict[str, ctypes.CDLL] = {}


def _check_device_type(device_type: object) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"cpp_extension: device_type must be a str (a device type such as 'cpu' or a renamed "
                        f"backend's name), got {type(device_type).__name__}")
    return device_type


def _backend_paths(device_type: str, what: str) -> list[str]:
    """The directories a renamed backend's device module adds: ``backend_sdk.<device_type>.<what>()``
    when that module defines it (the accel sample adds the simulator's header and library)."""
    if device_type in ("cpu", "meta"):
        return []
    module = sys.modules.get(f"backend_sdk.{device_type}")
    fn = getattr(module, what, None) if module is not None else None
    if not callable(fn):
        return []
    paths = [os.fspath(p) for p in fn()]
    for p in paths:
        if not isinstance(p, str):
            raise TypeError(f"cpp_extension: backend_sdk.{device_type}.{what}() must return strings")
    return paths


def include_paths(device_type: str = "cpu") -> list[str]:
    """The include directories to build an extension for ``device_type`` against (PyTorch's
    ``include_paths(device_type="cpu")``): the SDK's headers (``<backend_sdk/...>``), plus those of a
    renamed backend whose device module ``backend_sdk.<device_type>`` defines ``include_paths()``.
    Any other device type gets the cpu paths, as in PyTorch; a non-string is a TypeError.
    """
    from . import include_paths as _include_paths

    device_type = _check_device_type(device_type)
    return list(_include_paths()) + [p for p in _backend_paths(device_type, "include_paths")]


def library_paths(device_type: str = "cpu") -> list[str]:
    """The library directories to link an extension for ``device_type`` (PyTorch's
    ``library_paths(device_type="cpu")``): the directory of libbackend_sdk.so (also the RPATH of what
    ``load`` and ``CppExtension`` build), plus those of a renamed backend whose device module defines
    ``library_paths()``. Any other device type gets the cpu paths; a non-string is a TypeError.
    """
    from . import library_paths as _library_paths

    device_type = _check_device_type(device_type)
    return list(_library_paths()) + [p for p in _backend_paths(device_type, "library_paths")]


def get_default_build_root() -> str:
    """``$BACKEND_SDK_EXTENSIONS_DIR`` if set, else ``~/.cache/backend_sdk_extensions``."""
    root = os.environ.get("BACKEND_SDK_EXTENSIONS_DIR")
    if root:
        return os.path.realpath(os.path.expanduser(root))
    return os.path.realpath(os.path.join(os.path.expanduser("~"), ".cache", "backend_sdk_extensions"))


def _python_tag() -> str:
    return f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"


def _get_build_directory(name: str, verbose: bool) -> str:
    """The default build directory of extension ``name`` (created): ``<root>/<python tag>/<name>``."""
    path = os.path.join(get_default_build_root(), _python_tag(), name)
    if verbose:
        print(f"Using {path} as the build directory of extension '{name}'", file=sys.stderr)
    os.makedirs(path, exist_ok=True)
    return path


def is_ninja_available() -> bool:
    """True if the ``ninja`` build tool is on PATH."""
    return shutil.which("ninja") is not None


def verify_ninja_availability() -> None:
    """RuntimeError if ninja is not available (``load`` works without it, compiling source by source)."""
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions with ninja")


def _compiler() -> str:
    return os.environ.get("CXX", "c++")


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"cpp_extension: the extension name must be a valid identifier (letters, digits, _), "
                         f"got {name!r}")


def _as_list(value: str | Iterable[str] | None, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    items = [os.fspath(v) for v in value]
    for v in items:
        if not isinstance(v, str):
            raise TypeError(f"cpp_extension: {what} must be strings, got {type(v).__name__}")
    return items


def _checked_sources(name: str, sources: str | Iterable[str]) -> list[str]:
    paths = _as_list(sources, "sources")
    if not paths:
        raise ValueError(f"Extension '{name}': sources is empty")
    out = []
    for p in paths:
        full = os.path.abspath(p)
        if not os.path.isfile(full):
            raise FileNotFoundError(f"Extension '{name}': source file '{p}' does not exist")
        if not full.endswith(_CXX_SUFFIXES):
            raise ValueError(f"Extension '{name}': source file '{p}' is not C++ (expected one of "
                             f"{', '.join(_CXX_SUFFIXES)})")
        out.append(full)
    return out


def _python_module_flags() -> tuple[list[str], list[str]]:
    """Include directories for a pybind11 module, and its link flags."""
    try:
        import pybind11
    except ImportError as e:  # pragma: no cover - pybind11 is a build requirement of the SDK
        raise RuntimeError("cpp_extension: is_python_module=True needs pybind11 (pip install pybind11)") from e
    includes = [pybind11.get_include(), sysconfig.get_paths()["include"]]
    return includes, []


def _sdk_fingerprint() -> str:
    """The SDK version and its library's identity: a rebuilt SDK invalidates cached extensions."""
    import backend_sdk

    parts = [getattr(backend_sdk, "__version__", "?")]
    for d in library_paths():
        lib = os.path.join(d, "libbackend_sdk.so")
        try:
            st = os.stat(lib)
            parts.append(f"{lib}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{lib}:missing")
    return "|".join(parts)


def _headers_fingerprint(directories: Iterable[str]) -> list[str]:
    """Size and mtime of the headers directly inside ``directories`` (not recursive)."""
    out = []
    for d in sorted(set(directories)):
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.name.endswith(_HEADER_SUFFIXES) and e.is_file():
                st = e.stat()
                out.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
    return out


def _build_key(sources: list[str], cflags: list[str], ldflags: list[str], extra_include_paths: list[str],
               is_python_module: bool, contents: dict[str, str] | None = None) -> str:
    h = hashlib.sha256()

    def feed(s: str) -> None:
        h.update(s.encode())
        h.update(b"\0")

    feed("backend_sdk-jit-1")
    feed(_sdk_fingerprint())
    compiler = shutil.which(_compiler()) or _compiler()
    feed(compiler)
    try:
        feed(str(os.stat(compiler).st_mtime_ns))
    except OSError:
        pass
    feed(repr(cflags))
    feed(repr(ldflags))
    feed(repr(is_python_module))
    for src in sources:
        feed(src)
        if contents is not None and src in contents:  # load_inline: the text, not what the file holds now
            h.update(hashlib.sha256(contents[src].encode()).digest())
            continue
        with open(src, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    for line in _headers_fingerprint([os.path.dirname(s) for s in sources] + extra_include_paths):
        feed(line)
    return h.hexdigest()[:16]


def _object_name(src: str) -> str:
    stem = os.path.splitext(os.path.basename(src))[0]
    return f"{stem}.{hashlib.sha1(src.encode()).hexdigest()[:8]}.o"


def _ninja_escape(s: str) -> str:
    return s.replace("$", "$$").replace(" ", "$ ").replace(":", "$:").replace("\n", "$\n")


def _compile_with_ninja(build_dir: str, sources: list[str], cflags: list[str], verbose: bool) -> tuple[int, str]:
    cxx = shlex.quote(_compiler())
    flags = " ".join(shlex.quote(f) for f in cflags).replace("$", "$$")
    lines = [
        "ninja_required_version = 1.3",
        f"cxx = {cxx.replace('$', '$$')}",
        f"cflags = {flags}",
        "rule compile",
        "  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = CXX $out",
    ]
    for src in sources:
        lines.append(f"build {_ninja_escape(_object_name(src))}: compile {_ninja_escape(src)}")
    content = "\n".join(lines) + "\n"
    ninja_file = os.path.join(build_dir, "build.ninja")
    old = Path(ninja_file).read_text() if os.path.exists(ninja_file) else None
    if old != content:
        with open(ninja_file + ".tmp", "w") as f:
            f.write(content)
        os.replace(ninja_file + ".tmp", ninja_file)
    cmd = ["ninja", "-C", build_dir] + (["-v"] if verbose else [])
    jobs = os.environ.get("MAX_JOBS")
    if jobs:
        cmd += ["-j", jobs]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return result.returncode, result.stdout


def _compile_directly(build_dir: str, sources: list[str], cflags: list[str], verbose: bool) -> tuple[int, str]:
    def one(src: str) -> tuple[int, str]:
        cmd = [_compiler()] + cflags + ["-c", src, "-o", os.path.join(build_dir, _object_name(src))]
        if verbose:
            print(shlex.join(cmd), file=sys.stderr)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return r.returncode, r.stdout

    workers = int(os.environ.get("MAX_JOBS") or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(sources)))) as pool:
        results = list(pool.map(one, sources))
    code = next((c for c, _ in results if c != 0), 0)
    return code, "".join(out for _, out in results)


def _build(name: str, sources: list[str], cflags: list[str], ldflags: list[str], build_dir: str, target: str,
           verbose: bool, use_ninja: bool) -> None:
    """Compiles and links ``target`` (called with the build lock held)."""
    compile_fn = _compile_with_ninja if use_ninja else _compile_directly
    code, output = compile_fn(build_dir, sources, cflags, verbose)
    if verbose and output:
        print(output, file=sys.stderr, end="" if output.endswith("\n") else "\n")
    if code != 0:
        raise RuntimeError(f"Error building extension '{name}':\n{output}")
    fd, tmp = tempfile.mkstemp(dir=build_dir, prefix=f".{name}.", suffix=".so.tmp")
    os.close(fd)
    try:
        objects = [os.path.join(build_dir, _object_name(s)) for s in sources]
        cmd = [_compiler(), "-shared"] + objects + ldflags + ["-o", tmp]
        if verbose:
            print(shlex.join(cmd), file=sys.stderr)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"Error building extension '{name}':\n{r.stdout}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class _FileLock:
    """``fcntl.flock`` on ``path`` (created), held for a ``with`` block; released by the kernel if the
    process dies."""

    def __init__(self, path: str, mode: int) -> None:
        self._path, self._mode = path, mode

    def __enter__(self) -> "_FileLock":
        self._file = open(self._path, "a+")
        try:
            fcntl.flock(self._file.fileno(), self._mode)
        except BaseException:
            self._file.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
        finally:
            self._file.close()


def _remove_stale_libraries(name: str, build_dir: str, keep: str) -> None:
    """Deletes NAME's libraries other than ``keep``, unless a cached load is in progress (called with the
    build lock held; Note [JIT extension cache])."""
    try:
        guard = _FileLock(os.path.join(build_dir, "load.lock"), fcntl.LOCK_EX | fcntl.LOCK_NB)
        guard.__enter__()
    except BlockingIOError:
        return  # a process is between its existence check and its dlopen: the next build cleans up
    try:
        for stale in glob.glob(os.path.join(build_dir, f"{glob.escape(name)}_*.so")):
            if stale != keep and re.fullmatch(re.escape(name) + r"_[0-9a-f]{16}\.so", os.path.basename(stale)):
                try:
                    os.unlink(stale)  # a process that loaded it keeps its mapping
                except OSError:
                    pass
    finally:
        guard.__exit__()


class ExtensionLoadError(OSError):
    """A built extension library could not be loaded (an unresolved symbol, ...). An ``OSError``, as
    what PyTorch's ``cpp_extension.load`` raises from ctypes, so code written for PyTorch catches it."""


def _demangle(symbol: str) -> str | None:
    if not symbol.startswith("_Z") or shutil.which("c++filt") is None:
        return None
    try:
        r = subprocess.run(["c++filt", symbol], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    out = r.stdout.strip()
    return out if r.returncode == 0 and out and out != symbol else None


def _load_failure_message(name: str, path: str, error: BaseException) -> str:
    """The message of a failed dlopen: the extension, the library and, for an unresolved symbol, which."""
    text = str(error)
    m = re.search(r"undefined symbol: (\S+)", text)
    if m is None:
        return f"Error loading extension '{name}' ({path}): {text}"
    symbol = m.group(1).rstrip(",")
    demangled = _demangle(symbol)
    shown = f"{symbol} ({demangled})" if demangled else symbol
    return (f"Error loading extension '{name}': the library {path} has an undefined symbol: {shown}. It is "
            "used by the extension's sources but defined neither in them nor in the libraries it links "
            "(libbackend_sdk and extra_ldflags): define it, or add the library that defines it to extra_ldflags.")


def _registration_failure(name: str, path: str, errors: list[str]) -> ValueError:
    return ValueError(f"Error loading extension '{name}' ({path}): registering its operators failed:\n"
                      + "\n".join(errors))


def _load_library(name: str, path: str) -> int:
    """dlopens ``path`` as a plain library and returns the group of its SDK_LIBRARY blocks (Note
    [Extension library groups]); registration errors of those blocks are raised here (ValueError)."""
    from .. import _C
    from .._ops import _dlopen_in_group  # the one loader; this function words its errors

    try:
        handle, group, errors = _dlopen_in_group(path)
    except OSError as e:
        raise ExtensionLoadError(_load_failure_message(name, path, e)) from e
    if errors:
        # Undone through the group (the library may stay mapped, Note [Extension library groups]),
        # then closed: the group is reset before the close, never after.
        _C._reset_static_library_group(group)
        import _ctypes

        _ctypes.dlclose(handle._handle)
        raise _registration_failure(name, path, errors)
    _loaded[path] = handle
    return group


def _import_module(name: str, path: str) -> tuple[types.ModuleType, int]:
    """Imports the extension module ``name`` from ``path``; returns it and the group of its
    SDK_LIBRARY blocks."""
    from .. import _C

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    _C._take_static_registration_errors()
    _C._begin_static_library_group()
    try:
        module = importlib.util.module_from_spec(spec)  # dlopen and PyInit_<name>
        spec.loader.exec_module(module)
    except BaseException as e:
        _C._reset_static_library_group(_C._end_static_library_group())
        _C._take_static_registration_errors()
        if isinstance(e, ImportError) and "undefined symbol" in str(e):
            raise ImportError(_load_failure_message(name, path, e), name=name, path=path) from e
        if isinstance(e, ImportError) and f"PyInit_{name}" in str(e):
            raise ImportError(
                f"Error loading extension '{name}' ({path}): it defines no Python module named '{name}' "
                f"(PyInit_{name}). Define one with PYBIND11_MODULE(SDK_EXTENSION_NAME, m) (SDK_EXTENSION_NAME is "
                f"'{name}'), or load a library that only registers kernels and operators with "
                "is_python_module=False.", name=name, path=path) from e
        raise
    group = _C._end_static_library_group()
    errors = _C._take_static_registration_errors()
    if errors:
        _C._reset_static_library_group(group)  # a Python extension module is never unloaded
        raise _registration_failure(name, path, errors)
    return module, group


class _LoadedExtension:
    """What this process loaded for one extension name (Note [JIT extension versions])."""

    def __init__(self, inputs: str, result: str | types.ModuleType, group: int) -> None:
        self.inputs, self.result, self.group = inputs, result, group


#: name -> (version, inputs) of the latest version that this process built to load.
_versions: dict[str, tuple[int, str]] = {}
#: name -> the loaded version (absent after a failed load).
_loaded_extensions: dict[str, _LoadedExtension] = {}
_name_locks: dict[str, threading.Lock] = {}
_name_locks_guard = threading.Lock()


def _name_lock(name: str) -> threading.Lock:
    """Serialises this process's loads of one name (the version record and the replacement)."""
    with _name_locks_guard:
        return _name_locks.setdefault(name, threading.Lock())


def _check_unsupported(name: str, with_cuda: bool | None, with_sycl: bool | None = None) -> None:
    for flag, what in ((with_cuda, "CUDA"), (with_sycl, "SYCL")):
        if flag:
            raise ValueError(f"Extension '{name}': with_{what.lower()}=True, but backend_sdk builds C++ only "
                             f"(no {what} toolchain); a vendor's device code is built by its own toolchain and "
                             "linked with extra_ldflags")


def load(name: str, sources: str | list[str], extra_cflags: list[str] | None = None,
         extra_cuda_cflags: list[str] | None = None, extra_sycl_cflags: list[str] | None = None,
         extra_ldflags: list[str] | None = None, extra_include_paths: list[str] | None = None,
         build_directory: str | None = None, verbose: bool = False, with_cuda: bool | None = None,
         with_sycl: bool | None = None, is_python_module: bool = True, is_standalone: bool = False,
         keep_intermediates: bool = True, *, stable: bool = False) -> str | types.ModuleType:
    """Compiles ``sources`` against the SDK into a shared library, caches it, loads it (PyTorch's
    ``torch.utils.cpp_extension.load``, same signature and defaults).

    The library is compiled with ``-std=c++17 -O2 -fPIC``, ``-DSDK_EXTENSION_NAME=<name>`` (and
    ``-DTORCH_EXTENSION_NAME``), plus ``extra_cflags``, against the SDK's headers (``include_paths()``),
    pybind11's and Python's when ``is_python_module``, and ``extra_include_paths``; it is linked with
    ``-shared`` against libbackend_sdk with an RPATH to it, plus ``extra_ldflags``. Loading it runs
    its ``SDK_LIBRARY*`` blocks: its operators and kernels are registered.

    Returns, with ``is_python_module=True`` (default), the imported module, which the sources define
    with ``PYBIND11_MODULE(SDK_EXTENSION_NAME, m)``; with ``is_python_module=False`` the library is
    loaded as a plain shared library (a kernel library with no Python module; PyTorch's
    ``torch.ops.load_library``) and its path is returned; ``is_standalone=True`` (with
    ``is_python_module=False``) builds without loading and returns the path. ``verbose=True`` prints
    the steps and every compile and link command. Loading NAME again with changed sources builds
    ``NAME_v1``, whose registrations replace the old version's (Note [JIT extension versions]).

    The SDK builds C++ only: ``.cu``/``.sycl`` sources and ``with_cuda=True``/``with_sycl=True`` are
    a ValueError; ``extra_cuda_cflags``/``extra_sycl_cflags`` apply to no source (as in PyTorch when
    there are none) and ``keep_intermediates`` (hipify's) has nothing to keep.

    Raises FileNotFoundError for a missing source, ValueError for a bad name, a non-C++ source or
    ``is_python_module`` with ``is_standalone``, RuntimeError("Error building extension
    'NAME':\\n<compiler output>") when compiling or linking fails, ExtensionLoadError/ImportError
    when the library does not load, and ValueError with the dispatcher's message when its
    registrations fail (nothing of that library stays registered). See Note [JIT extension cache].

    ``stable=True`` (ours, keyword-only after PyTorch's parameters; PyTorch has no such flag) builds against the ABI-stable surface only
    (``backend_sdk/utils/_stable_extension.py``): only ``<backend_sdk/stable/...>`` and
    ``<backend_sdk/headeronly/...>`` of the SDK's headers are on the include path, and a library that
    uses a C++ symbol of libbackend_sdk (anything but the C shim) is a RuntimeError.
    """
    del extra_cuda_cflags, extra_sycl_cflags, keep_intermediates  # no CUDA/SYCL sources: see the docstring
    _check_name(name)
    if is_python_module and is_standalone:
        raise ValueError("`is_python_module` and `is_standalone` are mutually exclusive.")
    _check_unsupported(name, with_cuda, with_sycl)
    return _load(name, _checked_sources(name, sources), None, extra_cflags, extra_ldflags, extra_include_paths,
                 build_directory, verbose, is_python_module, is_standalone, stable=stable)


def _write_if_changed(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` atomically, unless it already holds it (its mtime then stays, so
    ninja does not recompile it)."""
    try:
        if Path(path).read_text() == text:
            return
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".src.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _load(name: str, srcs: list[str], inline: dict[str, str] | None, extra_cflags: list[str] | None,
          extra_ldflags: list[str] | None, extra_include_paths: list[str] | None, build_directory: str | None,
          verbose: bool, is_python_module: bool, is_standalone: bool,
          stable: bool = False) -> str | types.ModuleType:
    """``load``; ``inline`` maps source paths to the text ``load_inline`` writes there (with the build
    lock held, Note [JIT extension cache])."""
    user_cflags = _as_list(extra_cflags, "extra_cflags")
    user_ldflags = _as_list(extra_ldflags, "extra_ldflags")
    user_includes = [os.path.abspath(p) for p in _as_list(extra_include_paths, "extra_include_paths")]
    includes = list(include_paths()) + user_includes
    if stable:  # the ABI-stable surface only (_stable_extension.py)
        from ._stable_extension import stable_cflags, stable_include_paths

        includes = stable_include_paths() + user_includes
        user_cflags = stable_cflags() + user_cflags
    ldflags: list[str] = []
    if is_python_module:
        py_includes, py_ldflags = _python_module_flags()
        includes += py_includes
        ldflags += py_ldflags
    base_cflags = _COMMON_CFLAGS + [f"-I{p}" for p in includes] + user_cflags
    for d in library_paths():
        ldflags += [f"-L{d}", f"-Wl,-rpath,{d}"]
    ldflags += ["-lbackend_sdk"] + user_ldflags
    build_dir = os.path.abspath(build_directory) if build_directory else _get_build_directory(name, verbose)
    os.makedirs(build_dir, exist_ok=True)

    with _name_lock(name):
        # Note [JIT extension versions]: the inputs without the module name decide the version.
        inputs = _build_key(srcs, base_cflags + [f"build_directory={build_dir}"], ldflags, user_includes,
                            is_python_module, contents=inline)
        current = _loaded_extensions.get(name)
        if not is_standalone and current is not None and current.inputs == inputs:
            if verbose:
                print(f"No modifications detected for re-loaded extension module {name}, skipping build step...",
                      file=sys.stderr)
            return current.result
        version = 0
        if not is_standalone and name in _versions:
            last_version, last_inputs = _versions[name]
            version = last_version if last_inputs == inputs else last_version + 1
        ext_name = name if version == 0 else f"{name}_v{version}"
        if verbose and ext_name != name:
            print(f"The input conditions for extension module {name} have changed. Bumping to version {version} "
                  f"and re-building as {ext_name}...", file=sys.stderr)
        cflags = base_cflags + [f"-DSDK_EXTENSION_NAME={ext_name}", f"-DTORCH_EXTENSION_NAME={ext_name}"]
        key = _build_key(srcs, cflags, ldflags, user_includes, is_python_module, contents=inline)
        target = os.path.join(build_dir, f"{name}_{key}.so")

        def finish() -> str | types.ModuleType:
            if is_standalone:
                return target
            _versions[name] = (version, inputs)
            old = _loaded_extensions.pop(name, None)
            if old is not None:
                from .. import _C

                if verbose:
                    print(f"Replacing the registrations of the loaded version of extension module {name}",
                          file=sys.stderr)
                _C._reset_static_library_group(old.group)  # Note [JIT extension versions]
            if verbose:
                print(f"Loading extension module {ext_name}...", file=sys.stderr)
            result: str | types.ModuleType
            if is_python_module:
                result, group = _import_module(ext_name, target)
            else:
                group = _load_library(ext_name, target)
                result = target
            _loaded_extensions[name] = _LoadedExtension(inputs, result, group)
            return result

        # Cached: the shared hold keeps another builder's clean-up from deleting target until it is loaded.
        with _FileLock(os.path.join(build_dir, "load.lock"), fcntl.LOCK_SH):
            if os.path.exists(target):
                if verbose:
                    print(f"Extension '{name}' is up to date: {target}", file=sys.stderr)
                return finish()
        with _FileLock(os.path.join(build_dir, "lock"), fcntl.LOCK_EX):
            if not os.path.exists(target):  # another process may have built it meanwhile
                if verbose:
                    print(f"Building extension module {ext_name} in {build_dir}...", file=sys.stderr)
                for path, text in (inline or {}).items():
                    _write_if_changed(path, text)
                _build(name, srcs, cflags, ldflags, build_dir, target, verbose,
                       use_ninja=is_ninja_available() and os.environ.get("BACKEND_SDK_JIT_NO_NINJA") != "1")
                if stable:
                    from ._stable_extension import check_stable_symbols

                    try:
                        check_stable_symbols(name, target)
                    except RuntimeError:
                        os.remove(target)
                        raise
                _remove_stale_libraries(name, build_dir, keep=target)
            # Loaded before the lock is released: only a builder holding it deletes libraries.
            return finish()


_INLINE_PRELUDE = '#include <backend_sdk/dispatch/Library.h>\n#include <backend_sdk/ops/Functions.h>\n'
_ERROR_HANDLING_HELPER = """
#include <exception>
#include <utility>
namespace backend_sdk_inline_detail {
// with_pytorch_error_handling=True: an SDK error leaves a bound function as the SDK's Python type
// (ValueError, IndexError, backend_sdk.OutOfMemoryError, ...), as torch::wrap_pybind_function does.
[[noreturn]] inline void raise_sdk_error(const sdk::Error& e) {
  pybind11::object type = pybind11::module_::import("backend_sdk.utils.cpp_extension")
                              .attr("_sdk_error_type")(static_cast<int>(e.kind()));
  PyErr_SetString(type.ptr(), e.what());
  throw pybind11::error_already_set();
}
template <typename Ret, typename... Args>
auto wrap(Ret (*fn)(Args...)) {
  return [fn](Args... args) -> Ret {
    try {
      return fn(std::forward<Args>(args)...);
    } catch (const sdk::Error& e) {
      raise_sdk_error(e);
    }
  };
}
}  // namespace backend_sdk_inline_detail
"""


def load_inline(name: str, cpp_sources: str | list[str], cuda_sources: str | list[str] | None = None,
                sycl_sources: str | list[str] | None = None,
                functions: str | list[str] | dict[str, str] | None = None, extra_cflags: list[str] | None = None,
                extra_cuda_cflags: list[str] | None = None, extra_sycl_cflags: list[str] | None = None,
                extra_ldflags: list[str] | None = None, extra_include_paths: list[str] | None = None,
                build_directory: str | None = None, verbose: bool = False, with_cuda: bool | None = None,
                with_sycl: bool | None = None, is_python_module: bool = True,
                with_pytorch_error_handling: bool = True, keep_intermediates: bool = True, use_pch: bool = False,
                no_implicit_headers: bool = False) -> str | types.ModuleType:
    """``load`` from source strings (PyTorch's ``load_inline``, same signature and defaults): they are
    joined into ``<build dir>/main.cpp`` after ``#include <backend_sdk/dispatch/Library.h>`` and
    ``#include <backend_sdk/ops/Functions.h>`` (``no_implicit_headers=True`` leaves them out).

    ``functions`` (with ``is_python_module=True``) names C++ functions to bind in a generated
    ``PYBIND11_MODULE(SDK_EXTENSION_NAME, m)``: a name, a list of names, or a dict name -> docstring.
    With ``with_pytorch_error_handling=True`` (default) an SDK error thrown by a bound function is
    raised as the SDK's Python type for it (ValueError, IndexError, ...), as PyTorch's
    ``torch::wrap_pybind_function``; with False pybind11 translates it. ``cuda_sources`` and
    ``sycl_sources`` are a ValueError (C++ only, see ``load``); ``use_pch`` is accepted and builds no
    precompiled header.
    """
    del extra_cuda_cflags, extra_sycl_cflags, keep_intermediates, use_pch
    _check_name(name)
    if cuda_sources or sycl_sources:
        raise ValueError(f"load_inline('{name}'): cuda_sources/sycl_sources given, but backend_sdk builds C++ "
                         "only (no CUDA or SYCL toolchain)")
    _check_unsupported(name, with_cuda, with_sycl)
    sources = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
    text = ""
    if not no_implicit_headers:
        text = _INLINE_PRELUDE
        if is_python_module:
            text = "#include <pybind11/pybind11.h>\n" + text
    text += "\n".join(sources) + "\n"
    if functions is not None:
        if not is_python_module:
            raise ValueError(f"load_inline('{name}'): functions= binds Python functions and needs "
                             "is_python_module=True; kernels and operators are registered with SDK_LIBRARY blocks")
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            docs = {f: f for f in functions}
        elif isinstance(functions, dict):
            docs = dict(functions)
        else:
            raise ValueError(f"Expected 'functions' to be a list or dict, but was {type(functions)}")
        if with_pytorch_error_handling:
            text += "#include <pybind11/pybind11.h>\n#include <backend_sdk/core/Exception.h>\n"
            text += _ERROR_HANDLING_HELPER
        text += "\nPYBIND11_MODULE(SDK_EXTENSION_NAME, m) {\n"
        for fn, doc in docs.items():
            bound = f"backend_sdk_inline_detail::wrap(&{fn})" if with_pytorch_error_handling else fn
            text += f'  m.def("{fn}", {bound}, {_cxx_string(doc)});\n'
        text += "}\n"
    build_dir = os.path.abspath(build_directory) if build_directory else _get_build_directory(name, verbose)
    os.makedirs(build_dir, exist_ok=True)
    main = os.path.join(build_dir, "main.cpp")
    # Written by _load with the build lock held: a concurrent load_inline of the same name with other
    # sources cannot overwrite it between our write and our compile (Note [JIT extension cache]).
    return _load(name, [main], {main: text}, extra_cflags, extra_ldflags, extra_include_paths, build_dir, verbose,
                 is_python_module, False)


def _sdk_error_type(kind: int) -> type[BaseException]:
    """The Python type of an ``sdk::ErrorKind`` (csrc/backend_sdk/core/Exception.h, in its order), for the
    bindings ``load_inline`` generates with ``with_pytorch_error_handling=True``."""
    import backend_sdk

    types_by_kind: list[type[BaseException]] = [RuntimeError, ValueError, TypeError, IndexError,
                                                 NotImplementedError, backend_sdk.OutOfMemoryError,
                                                 backend_sdk.AcceleratorError]
    return types_by_kind[kind] if 0 <= kind < len(types_by_kind) else RuntimeError


def _cxx_string(text: str) -> str:
    """``text`` as a C++ string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# ---- setuptools: CppExtension and BuildExtension -------------------------------------------------------------

def CppExtension(name: str, sources: list[str], *args: Any, **kwargs: Any) -> Any:
    """A ``setuptools.Extension`` for C++ built against the SDK (PyTorch's ``CppExtension``): the
    SDK's include directories (and pybind11's, for a module that binds Python functions), its library
    directory as a link directory and as the RPATH, ``libraries=[..., "backend_sdk"]`` and
    ``language="c++"``. Every argument is forwarded to ``setuptools.Extension``; lists given for
    ``include_dirs``, ``library_dirs``, ``runtime_library_dirs`` and ``libraries`` are extended.
    Build it with ``BuildExtension`` (which adds ``-std=c++17`` and ``-DSDK_EXTENSION_NAME``)::

        setup(name="my_ext", ext_modules=[CppExtension("my_ext", ["my_ext.cpp"])],
              cmdclass={"build_ext": BuildExtension})
    """
    import setuptools

    include_dirs = list(kwargs.get("include_dirs", [])) + include_paths()
    try:
        import pybind11

        include_dirs.append(pybind11.get_include())
    except ImportError:  # pragma: no cover - pybind11 is a build requirement of the SDK
        pass
    kwargs["include_dirs"] = include_dirs
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + library_paths()
    kwargs["runtime_library_dirs"] = list(kwargs.get("runtime_library_dirs", [])) + library_paths()
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["backend_sdk"]
    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


def _cxx_post_flags(extra_postargs: Any) -> list[str]:
    """The C++ flags of an extension's ``extra_compile_args`` (a list, or PyTorch's dict with a
    ``"cxx"`` entry), with ``-std=c++17`` unless a standard is given."""
    if isinstance(extra_postargs, dict):
        flags = list(extra_postargs.get("cxx", []))
    else:
        flags = list(extra_postargs or [])
    if not any(f.startswith("-std=") for f in flags):
        flags.append("-std=c++17")
    return flags


def _max_jobs() -> int:
    return max(1, int(os.environ.get("MAX_JOBS") or (os.cpu_count() or 1)))


def _make_build_extension() -> type:
    from setuptools.command.build_ext import build_ext

    class BuildExtension(build_ext):  # type: ignore[misc, valid-type]
        """A setuptools ``build_ext`` for ``CppExtension``s (PyTorch's ``BuildExtension``).

        It adds ``-std=c++17`` (unless a standard is given) and ``-DSDK_EXTENSION_NAME=<name>``
        (and ``-DTORCH_EXTENSION_NAME``; the last component of a dotted name), accepts
        ``extra_compile_args`` as a list or as ``{"cxx": [...]}``, and compiles an extension's sources
        in parallel: through ninja (``use_ninja=True``, the default, when ninja is on PATH; its
        depfiles make a rebuild recompile only what changed, and every command is printed), else one
        compiler process per source. ``MAX_JOBS`` bounds the parallelism. ``no_python_abi_suffix=True``
        names the library ``name.so`` rather than ``name.cpython-311-x86_64-linux-gnu.so`` (for
        kernel libraries that are not Python modules). Options are passed with ``with_options``::

            cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)}
        """

        @classmethod
        def with_options(cls, **options: Any) -> type:
            """A subclass whose constructor adds ``options`` (``use_ninja``, ``no_python_abi_suffix``)."""

            class cls_with_options(cls):  # type: ignore[misc, valid-type]
                def __init__(self, *args: Any, **kwargs: Any) -> None:
                    kwargs.update(options)
                    super().__init__(*args, **kwargs)

            return cls_with_options

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            no_python_abi_suffix = bool(kwargs.pop("no_python_abi_suffix", False))
            use_ninja = bool(kwargs.pop("use_ninja", True))
            super().__init__(*args, **kwargs)
            self.no_python_abi_suffix = no_python_abi_suffix
            self.use_ninja = use_ninja
            if self.use_ninja and not is_ninja_available():
                warnings.warn("Attempted to use ninja as the BuildExtension backend but we could not find ninja. "
                              "Falling back to compiling each source with the compiler, in parallel.",
                              stacklevel=2)
                self.use_ninja = False

        def finalize_options(self) -> None:
            super().finalize_options()
            if self.use_ninja:
                self.force = True  # ninja decides what is up to date

        def build_extensions(self) -> None:
            for ext in self.extensions:
                for src in ext.sources:
                    if src.endswith((".cu", ".cuh", ".sycl")):
                        raise ValueError(f"Extension '{ext.name}': source file '{src}' is not C++; backend_sdk "
                                         "builds C++ only (no CUDA or SYCL toolchain)")
                short = ext.name.split(".")[-1]
                defines = [f"-DSDK_EXTENSION_NAME={short}", f"-DTORCH_EXTENSION_NAME={short}"]
                if isinstance(ext.extra_compile_args, dict):
                    args = {k: list(v) for k, v in ext.extra_compile_args.items()}
                    args["cxx"] = args.get("cxx", []) + defines
                    ext.extra_compile_args = args
                else:
                    ext.extra_compile_args = list(ext.extra_compile_args or []) + defines
            compiler = self.compiler
            if self.use_ninja:
                compiler.compile = self._make_ninja_compile(compiler)
            else:
                compiler.compile = self._make_parallel_compile(compiler)
            super().build_extensions()

        def _make_parallel_compile(self, compiler: Any) -> Any:
            def parallel_compile(sources: list[str], output_dir: str | None = None, macros: Any = None,
                                 include_dirs: Any = None, debug: int = 0, extra_preargs: Any = None,
                                 extra_postargs: Any = None, depends: Any = None) -> list[str]:
                macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                    output_dir, macros, include_dirs, sources, depends, extra_postargs)
                cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
                post = _cxx_post_flags(extra_postargs)

                def one(obj: str) -> None:
                    src, ext = build[obj]
                    compiler._compile(obj, src, ext, cc_args, post, pp_opts)

                with ThreadPoolExecutor(max_workers=max(1, min(_max_jobs(), len(build)))) as pool:
                    for future in [pool.submit(one, obj) for obj in build]:
                        future.result()  # the first failure (a CompileError with the compiler's message)
                return objects

            return parallel_compile

        def _make_ninja_compile(self, compiler: Any) -> Any:
            def ninja_compile(sources: list[str], output_dir: str | None = None, macros: Any = None,
                              include_dirs: Any = None, debug: int = 0, extra_preargs: Any = None,
                              extra_postargs: Any = None, depends: Any = None) -> list[str]:
                macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
                    output_dir, macros, include_dirs, sources, depends, extra_postargs)
                cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)
                post = _cxx_post_flags(extra_postargs)
                out_dir = os.path.abspath(output_dir or ".")
                os.makedirs(out_dir, exist_ok=True)

                def q(args: list[str]) -> str:
                    return " ".join(shlex.quote(a) for a in args).replace("$", "$$")

                # Run from the current directory (setup.py's): relative sources and include
                # directories stay valid; ninja's log and depfile database go to out_dir.
                lines = [
                    "ninja_required_version = 1.3",
                    f"builddir = {_ninja_escape(out_dir)}",
                    f"cxx = {q(list(compiler.compiler_so))}",
                    f"cflags = {q(cc_args)}",
                    f"post_cflags = {q(post)}",
                    "rule compile",
                    "  command = $cxx -MMD -MF $out.d $cflags $in -o $out $post_cflags",  # cflags end in -c
                    "  depfile = $out.d",
                    "  deps = gcc",
                    "  description = CXX $out",
                ]
                for obj in objects:
                    src, _ = build[obj]
                    lines.append(f"build {_ninja_escape(obj)}: compile {_ninja_escape(src)}")
                ninja_file = os.path.join(out_dir, "build.ninja")
                _write_if_changed(ninja_file, "\n".join(lines) + "\n")
                cmd = ["ninja", "-v", "-f", ninja_file, "-j", str(_max_jobs() + (0 if "MAX_JOBS" in os.environ else 2))]
                print(shlex.join(cmd), flush=True)
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                print(r.stdout, end="", flush=True)
                if r.returncode != 0:
                    raise RuntimeError(f"Error compiling objects for extension:\n{r.stdout}")
                return objects

            return ninja_compile

        def get_ext_filename(self, ext_name: str) -> str:
            filename = super().get_ext_filename(ext_name)
            if self.no_python_abi_suffix:
                parts = filename.split(".")
                if len(parts) > 2:  # name.cpython-311-x86_64-linux-gnu.so -> name.so
                    filename = ".".join(parts[:-2] + parts[-1:])
            return filename

    BuildExtension.__module__ = __name__
    return BuildExtension


def __getattr__(name: str) -> Any:
    # BuildExtension subclasses setuptools' build_ext: made on first use, so that importing this module
    # (for load) does not import setuptools.
    if name == "BuildExtension":
        try:
            cls = _make_build_extension()
        except ImportError as e:
            raise ImportError("backend_sdk.utils.cpp_extension.BuildExtension needs setuptools "
                              "(pip install setuptools)") from e
        globals()["BuildExtension"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
