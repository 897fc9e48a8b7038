"""``backend_sdk.utils``: backend renaming and other helpers for vendors."""
from __future__ import annotations

import types

from .. import _C

__all__ = [
    "rename_privateuse1_backend", "rename_privateuse2_backend", "rename_privateuse3_backend",
    "get_privateuse1_backend_name", "include_paths", "library_paths", "cmake_prefix_path",
    "generate_methods_for_privateuse1_backend", "generate_methods_for_privateuse2_backend",
    "generate_methods_for_privateuse3_backend", "generate_device_module", "write_device_module_stub",
    "backend_registration", "register_backend",
]

import os as _os
from pathlib import Path as _Path

_PACKAGE_DIR = _Path(__file__).resolve().parent.parent


#: The directory to put on CMAKE_PREFIX_PATH for find_package(backend_sdk) (= backend_sdk.cmake_prefix_path).
cmake_prefix_path: str = str(_PACKAGE_DIR / "share" / "cmake")


def include_paths() -> list[str]:
    """Directories to put on the include path to compile code against the SDK's C++ headers."""
    installed = _PACKAGE_DIR / "include"
    if installed.is_dir():
        return [str(installed)]
    source = _PACKAGE_DIR.parent / "csrc"  # a development checkout
    return [str(source)]


def library_paths() -> list[str]:
    """Directories holding libbackend_sdk.so, to link vendor code against."""
    return [str(_PACKAGE_DIR / "lib")]


def rename_privateuse1_backend(backend_name: str) -> None:
    """Renames PrivateUse1 to ``backend_name`` (e.g. "accel"), once per process.

    Afterwards "accel:0" parses as a device, "accel" is accepted wherever a
    dispatch key or device type is, and messages print the new name. Renaming
    again to the same name is a no-op; to another name, or to a built-in name
    (cpu, cuda, meta, ...), is an error.
    """
    _C._rename_privateuse_backend(1, backend_name)


def rename_privateuse2_backend(backend_name: str) -> None:
    """As rename_privateuse1_backend, for PrivateUse2."""
    _C._rename_privateuse_backend(2, backend_name)


def rename_privateuse3_backend(backend_name: str) -> None:
    """As rename_privateuse1_backend, for PrivateUse3."""
    _C._rename_privateuse_backend(3, backend_name)


def get_privateuse1_backend_name() -> str:
    """The current name of PrivateUse1 ("privateuseone" until renamed)."""
    return _C._get_privateuse_backend_name(1)


def rename_privateuse_backend(which: int, backend_name: str) -> None:
    """Renames PrivateUse<which> (1, 2 or 3) to ``backend_name``."""
    _C._rename_privateuse_backend(which, backend_name)


def _privateuse_of(backend_name: str) -> int:
    """Which PrivateUse backend (1, 2, 3) carries ``backend_name``; ValueError if none was renamed to it."""
    for which in (1, 2, 3):
        if _C._get_privateuse_backend_name(which) == backend_name:
            return which
    raise ValueError(f"'{backend_name}' is not the name of a renamed backend: call "
                     f"backend_sdk.utils.rename_privateuse1_backend('{backend_name}') first")


_generated_attributes: set[tuple[type, str]] = set()


def _add_attribute(cls: type, name: str, value: object, backend_name: str) -> None:
    if (cls, name) in _generated_attributes or hasattr(cls, name):
        raise RuntimeError(f"The custom device module of {cls.__name__} has already been registered with "
                           f"'{name}' (generate_methods_for_privateuse1_backend was called twice for "
                           f"'{backend_name}')")
    setattr(cls, name, value)
    _generated_attributes.add((cls, name))


def _generate_methods(which: int, for_tensor: bool, for_storage: bool, for_module: bool = True) -> None:
    from .._storage import TypedStorage, UntypedStorage
    from .._tensor import Tensor

    name = _C._get_privateuse_backend_name(which)
    if name.startswith("privateuse"):
        raise RuntimeError(f"generate_methods_for_privateuse{which}_backend: rename PrivateUse{which} first "
                           f"(backend_sdk.utils.rename_privateuse{which}_backend)")

    def is_on_backend(self: Tensor) -> bool:
        return self.device.type == name

    def to_backend(self: Tensor, device: int | str | None = None, non_blocking: bool = False) -> Tensor:
        target = name if device is None else (f"{name}:{device}" if isinstance(device, int) else device)
        return self.to(target, non_blocking=non_blocking)

    is_on_backend.__doc__ = f"True if the tensor is on a {name} device."
    to_backend.__doc__ = (f"A copy of this tensor on {name} (the current {name} device unless ``device`` is "
                          "given); self if it is already there.")
    if for_tensor:
        _add_attribute(Tensor, f"is_{name}", property(is_on_backend), name)
        _add_attribute(Tensor, name, to_backend, name)
    if for_module:
        from ..nn import Module

        def module_to_backend(self: Module, device: int | str | None = None) -> Module:
            return self._apply(lambda t: getattr(t, name)(device))

        module_to_backend.__doc__ = (f"Moves every parameter and buffer to {name} (the current {name} device unless "
                                     "``device`` is given); see Note [Module conversions replace parameters].")
        _add_attribute(Module, name, module_to_backend, name)
    if for_storage:
        def storage_is_on_backend(self: UntypedStorage) -> bool:
            return self.device.type == name

        def storage_to_backend(self: UntypedStorage, device: int | str | None = None,
                               non_blocking: bool = False) -> UntypedStorage:
            target = name if device is None else (f"{name}:{device}" if isinstance(device, int) else device)
            return self.to(device=target, non_blocking=non_blocking)

        storage_to_backend.__doc__ = f"A copy of this storage on {name} (self if it is already there)."
        for cls in (UntypedStorage, TypedStorage):
            _add_attribute(cls, f"is_{name}", property(storage_is_on_backend), name)
            _add_attribute(cls, name, storage_to_backend, name)


def generate_methods_for_privateuse1_backend(for_tensor: bool = True, for_module: bool = True,
                                             for_packed_sequence: bool = True, for_storage: bool = True,
                                             unsupported_dtype: list | None = None) -> None:
    """Adds ``Tensor.is_<name>``, ``Tensor.<name>(device=None, non_blocking=False)``,
    ``nn.Module.<name>(device=None)`` and ``UntypedStorage.is_<name>`` for the renamed PrivateUse1
    backend, as PyTorch does.

    Each attribute is registered once; a second call is a RuntimeError.
    ``for_packed_sequence`` is accepted for PyTorch compatibility (the SDK has no PackedSequence).
    """
    _generate_methods(1, for_tensor, for_storage, for_module)


def generate_methods_for_privateuse2_backend(for_tensor: bool = True, for_storage: bool = True,
                                             for_module: bool = True) -> None:
    """As generate_methods_for_privateuse1_backend, for PrivateUse2."""
    _generate_methods(2, for_tensor, for_storage, for_module)


def generate_methods_for_privateuse3_backend(for_tensor: bool = True, for_storage: bool = True,
                                             for_module: bool = True) -> None:
    """As generate_methods_for_privateuse1_backend, for PrivateUse3."""
    _generate_methods(3, for_tensor, for_storage, for_module)


def generate_device_module(backend_name: str) -> "types.ModuleType":
    """Builds the cuda-style device module of a renamed backend and registers it as
    ``backend_sdk.<backend_name>`` (see ``backend_sdk/utils/_device_module.py`` for its API).

    Calling it again for the same backend returns the registered module.
    """
    import importlib.util
    import sys

    import backend_sdk

    _privateuse_of(backend_name)
    existing = sys.modules.get(f"backend_sdk.{backend_name}")
    if existing is not None and getattr(existing, "_BACKEND", None) == backend_name:
        return existing
    template = _Path(__file__).with_name("_device_module.py")
    spec = importlib.util.spec_from_file_location(f"backend_sdk.{backend_name}", template)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._BACKEND = backend_name
    module.__doc__ = f"The {backend_name} device module (generated by backend_sdk.utils.generate_device_module)."
    for cls in (module.Stream, module.Event, module.StreamContext, module.device_of):
        cls.__module__ = module.__name__
        cls.__qualname__ = cls.__name__
    backend_sdk._register_device_module(backend_name, module)
    return module


def write_device_module_stub(path: str, header: str = "") -> None:
    """Writes the type stub (.pyi) of a generated device module to ``path``, for IDEs.

    A vendor package that re-exports its device module (``from backend_sdk.<name> import *``)
    ships this file as its ``__init__.pyi``.
    """
    template = _Path(__file__).with_name("_device_module.py").read_text()
    _Path(path).write_text(header + _stub_of(template))


# What the stub says instead of the SDK's private names the template uses (a vendor's stub names only
# the public API: tests/test_no_private_names.py).
_STUB_PUBLIC_NAMES = {
    "_C.device": "backend_sdk.device", "_C.dtype": "backend_sdk.dtype", "_C._runtime.Stream": "backend_sdk.Stream",
    "_streams.Stream": "backend_sdk.Stream", "_streams.Event": "backend_sdk.Event",
    "_graphs.Graph": "backend_sdk.accelerator.Graph",
}
_STUB_IMPORTS = "import backend_sdk\nimport backend_sdk.accelerator\nfrom backend_sdk import OutOfMemoryError\n"


def _stub_of(source: str) -> str:
    """The source with function bodies replaced by docstrings and ``...`` (a .pyi), its imports of the SDK's
    private modules replaced by the public names (_STUB_PUBLIC_NAMES)."""
    import ast

    tree = ast.parse(source)

    def dotted(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    class _Strip(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
            self.generic_visit(node)  # the annotations
            doc = ast.get_docstring(node)
            body: list[ast.stmt] = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body = body + [ast.Expr(ast.Constant(...))]
            return node

        def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
            public = _STUB_PUBLIC_NAMES.get(dotted(node) or "")
            return ast.parse(public, mode="eval").body if public else self.generic_visit(node)

        def visit_Constant(self, node: ast.Constant) -> ast.Constant:
            if isinstance(node.value, str) and node.value in _STUB_PUBLIC_NAMES:
                return ast.Constant(_STUB_PUBLIC_NAMES[node.value])
            return node

    def private_import(stmt: ast.stmt) -> bool:
        return isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith("backend_sdk") and (
            "._" in (stmt.module or "") or any(a.name.startswith("_") for a in stmt.names))

    kept = [s for s in tree.body if not private_import(s)]
    first_import = next(i for i, s in enumerate(kept) if isinstance(s, (ast.Import, ast.ImportFrom))
                        and not (isinstance(s, ast.ImportFrom) and s.module == "__future__"))
    tree.body = kept[:first_import] + ast.parse(_STUB_IMPORTS).body + kept[first_import:]
    return ast.unparse(_Strip().visit(tree)) + "\n"


from . import backend_registration  # noqa: E402 (PyTorch's module path for the functions above)
from ._register_backend import register_backend  # noqa: E402 (rename + load + attach + methods + module)
from . import dlpack  # noqa: E402,F401 (backend_sdk.utils.dlpack, as torch.utils.dlpack)
