"""``backend_sdk.utils.cpp_extension``: build vendor C++ against the SDK and load it, just in time.

PyTorch's ``torch.utils.cpp_extension.load`` / ``load_inline`` with the SDK's headers and library::

    from backend_sdk.utils import cpp_extension
    path = cpp_extension.load("my_kernels", ["csrc/MyKernels.cpp"])   # compiles once, then cached
    # the kernels (SDK_LIBRARY_IMPL blocks) are registered: backend_sdk calls reach them

Note [JIT extension cache]
~~~~~~~~~~~~~~~~~~~~~~~~~~
An extension named NAME is built in ``<root>/<python tag>/NAME/`` (root: ``$BACKEND_SDK_EXTENSIONS_DIR``
or ``~/.cache/backend_sdk_extensions``; ``build_directory=`` replaces the whole path). The library is
``NAME_<key>.so`` where ``key`` hashes everything the result depends on: the sources' contents, the
headers next to them and in ``extra_include_paths`` (size and mtime), the flags, the compiler, the SDK
version and its library (size and mtime), and the Python module flag. So a load whose library exists is
a hash plus a dlopen, in any process, and a changed input builds a new file (a process that already
loaded the old one keeps it: the dynamic loader would hand back the old handle for the same file name).

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

Errors when loading: a library with an unresolved symbol raises ``ExtensionLoadError`` (an ``OSError``,
what PyTorch's ``load`` raises through ctypes) naming the extension, the library and the symbol
(demangled when ``c++filt`` is available); with ``is_python_module=True`` it is an ``ImportError``, as
PyTorch's, with the same message.

Differences from PyTorch: ``is_python_module`` defaults to False, because vendor code registers its
kernels and operators with ``SDK_LIBRARY*`` blocks when the library is loaded and has no Python
module; ``load`` then returns the library's path (what PyTorch returns with
``is_python_module=False``). With ``is_python_module=True`` the library is a pybind11 module named
NAME and ``load`` returns the imported module.
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
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable

__all__ = ["load", "load_inline", "include_paths", "library_paths", "get_default_build_root",
           "verify_ninja_availability", "is_ninja_available", "ExtensionLoadError"]

_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl", ".cuh")
_COMMON_CFLAGS = ["-std=c++17", "-O2", "-fPIC"]
#: Libraries loaded by this process: path -> ctypes handle (kept so they are never unloaded).
_loaded: dict[str, ctypes.CDLL] = {}


def include_paths() -> list[str]:
    """The SDK's header directories (what ``load`` compiles against)."""
    from . import include_paths as _include_paths

    return _include_paths()


def library_paths() -> list[str]:
    """The directories holding libbackend_sdk.so (what ``load`` links against, and its RPATH)."""
    from . import library_paths as _library_paths

    return _library_paths()


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


def _load_library(name: str, path: str) -> None:
    """dlopens ``path``; registration errors of its SDK_LIBRARY blocks are raised here (ValueError)."""
    from .. import _C

    if path in _loaded:
        return
    _C._take_static_registration_errors()  # start from a clean slate: only this library's errors below
    try:
        handle = ctypes.CDLL(path)
    except OSError as e:
        raise ExtensionLoadError(_load_failure_message(name, path, e)) from e
    errors = _C._take_static_registration_errors()
    if errors:
        # Unloading runs the library's static destructors, which undo what it did register.
        import _ctypes

        _ctypes.dlclose(handle._handle)
        raise ValueError(f"Error loading extension '{name}' ({path}): registering its operators failed:\n"
                         + "\n".join(errors))
    _loaded[path] = handle


def _import_module(name: str, path: str) -> types.ModuleType:
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == path:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    try:
        module = importlib.util.module_from_spec(spec)
    except ImportError as e:
        if "undefined symbol" not in str(e):
            raise
        raise ImportError(_load_failure_message(name, path, e), name=name, path=path) from e
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def load(name: str, sources: str | list[str], extra_cflags: list[str] | None = None,
         extra_ldflags: list[str] | None = None, extra_include_paths: list[str] | None = None,
         build_directory: str | None = None, verbose: bool = False, is_python_module: bool = False,
         is_standalone: bool = False, stable: bool = False) -> str | types.ModuleType:
    """Compiles ``sources`` against the SDK into a shared library, caches it, loads it.

    The library is compiled with ``-std=c++17 -O2 -fPIC`` plus ``extra_cflags``, against the SDK's
    headers (``include_paths()``) and ``extra_include_paths``, and linked with ``-shared`` against
    libbackend_sdk with an RPATH to it, plus ``extra_ldflags``. Loading it runs its ``SDK_LIBRARY*``
    blocks: its operators and kernels are registered.

    Returns the library's path, or with ``is_python_module=True`` the imported pybind11 module
    ``name``. ``is_standalone=True`` builds without loading and returns the path.

    Raises FileNotFoundError for a missing source, ValueError for a bad name or a non-C++ source,
    RuntimeError("Error building extension 'NAME':\\n<compiler output>") when compiling or linking
    fails, and ValueError with the dispatcher's message when the library's registrations fail (an
    operator defined twice, ...): nothing of that library stays registered. See Note [JIT extension
    cache] for caching and concurrent builds.

    ``stable=True`` (ours; PyTorch has no such flag) builds against the ABI-stable surface only
    (``backend_sdk/utils/_stable_extension.py``): only ``<backend_sdk/stable/...>`` and
    ``<backend_sdk/headeronly/...>`` are on the include path, and a library that uses a C++ symbol
    of libbackend_sdk (anything but the C shim) is a RuntimeError.
    """
    _check_name(name)
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
    cflags = _COMMON_CFLAGS + [f"-I{p}" for p in includes] + user_cflags
    for d in library_paths():
        ldflags += [f"-L{d}", f"-Wl,-rpath,{d}"]
    ldflags += ["-lbackend_sdk"] + user_ldflags

    key = _build_key(srcs, cflags, ldflags, user_includes, is_python_module, contents=inline)
    build_dir = os.path.abspath(build_directory) if build_directory else _get_build_directory(name, verbose)
    os.makedirs(build_dir, exist_ok=True)
    target = os.path.join(build_dir, f"{name}_{key}.so")

    def finish() -> str | types.ModuleType:
        if is_standalone:
            return target
        if is_python_module:
            return _import_module(name, target)
        _load_library(name, target)
        return target

    if target in _loaded and not is_standalone and not is_python_module:
        return target
    # Cached: the shared hold keeps another builder's clean-up from deleting target until it is loaded.
    with _FileLock(os.path.join(build_dir, "load.lock"), fcntl.LOCK_SH):
        if os.path.exists(target):
            if verbose:
                print(f"Extension '{name}' is up to date: {target}", file=sys.stderr)
            return finish()
    with _FileLock(os.path.join(build_dir, "lock"), fcntl.LOCK_EX):
        if not os.path.exists(target):  # another process may have built it meanwhile
            if verbose:
                print(f"Building extension '{name}' in {build_dir}", file=sys.stderr)
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


def load_inline(name: str, cpp_sources: str | list[str], functions: str | list[str] | dict[str, str] | None = None,
                extra_cflags: list[str] | None = None, extra_ldflags: list[str] | None = None,
                extra_include_paths: list[str] | None = None, build_directory: str | None = None,
                verbose: bool = False, is_python_module: bool = False,
                is_standalone: bool = False) -> str | types.ModuleType:
    """``load`` from source strings: they are joined into ``<build dir>/main.cpp`` after
    ``#include <backend_sdk/dispatch/Library.h>`` and ``#include <backend_sdk/ops/Functions.h>``.

    ``functions`` (with ``is_python_module=True`` only, as in PyTorch) names C++ functions to bind
    in a generated pybind11 module: a name, a list of names, or a dict name -> docstring.
    """
    _check_name(name)
    sources = [cpp_sources] if isinstance(cpp_sources, str) else list(cpp_sources)
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
        docs = functions if isinstance(functions, dict) else {f: f for f in functions}
        text += f"\nPYBIND11_MODULE({name}, m) {{\n"
        for fn, doc in docs.items():
            text += f'  m.def("{fn}", {fn}, "{doc}");\n'
        text += "}\n"
    build_dir = os.path.abspath(build_directory) if build_directory else _get_build_directory(name, verbose)
    os.makedirs(build_dir, exist_ok=True)
    main = os.path.join(build_dir, "main.cpp")
    # Written by _load with the build lock held: a concurrent load_inline of the same name with other
    # sources cannot overwrite it between our write and our compile (Note [JIT extension cache]).
    return _load(name, [main], {main: text}, extra_cflags, extra_ldflags, extra_include_paths, build_dir, verbose,
                 is_python_module, is_standalone)
