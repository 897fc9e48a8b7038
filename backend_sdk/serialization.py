"""``backend_sdk.save`` / ``backend_sdk.load`` in PyTorch's checkpoint format.

Note [Checkpoint format]
The file is PyTorch's (``torch.save`` since 1.6, read and written the same way): an
uncompressed zip archive whose records sit under one folder (``<stem>/`` for a file
named ``<stem>.pt``, ``archive/`` for a buffer) and hold
  - ``data.pkl``: the object, pickled with protocol 2. A tensor pickles as
    ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
    OrderedDict())``, a Parameter as ``torch._utils._rebuild_parameter(tensor,
    requires_grad, OrderedDict())``; a storage is a persistent id ``('storage',
    torch.<Dtype>Storage, key, location, numel)`` (location "cpu", "accel:0", ...);
  - ``data/<key>``: the storage's bytes, little-endian, each record's data aligned to 64
    bytes (padding in the local header's extra field, as PyTorch's writer does);
  - ``byteorder`` ("little"), ``version`` ("3\\n"), ``.format_version`` ("1"),
    ``.storage_alignment`` ("64"), ``.data/serialization_id``.
The globals are written with torch's module names (``torch._utils``, ``torch``,
``collections``), so ``torch.load`` reads our files, and this module maps those names to
its own functions when reading, so we read torch's files; neither side needs the other
installed. Tensors viewing one storage share it in the file and again after loading.

Note [Safe unpickling]
``load(weights_only=True)`` (the default, as PyTorch 2.6+) unpickles with a restricted
``find_class``: only the globals of the allowlist (tensor/parameter rebuilders, storage
types, dtypes, ``torch.Size``, ``torch.device``, ``collections.OrderedDict``/``Counter``,
``builtins.set``/``complex``/``bytearray``, ``_codecs.encode``) plus those given to
``add_safe_globals``/``safe_globals`` resolve; any other global raises
``pickle.UnpicklingError`` with PyTorch's message before anything runs, so a file that
tries to call ``os.system`` or import a class is refused. Only allowlisted callables are
ever called by REDUCE, and BUILD only reaches objects they made.
"""
from __future__ import annotations

import collections
import contextlib
import io
import os
import pickle
import re
import struct
import sys
import zipfile
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from . import _C

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2
_ALIGNMENT = 64

_DTYPE_STORAGE = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage",
}
_STORAGE_DTYPE = {v: k for k, v in _DTYPE_STORAGE.items()}
_NUMPY_DTYPE = {
    "float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64, "int32": np.int32,
    "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_,
}

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a "
    "trusted source."
)
DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
                "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
_BLOCKLISTED_MODULES = ["sys", "os", "posix", "nt"]


def _dtype_name(dtype: _C.dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _sdk() -> Any:
    import backend_sdk

    return backend_sdk


# ---- the objects pickles refer to ------------------------------------------------------------------


class _TorchGlobal:
    """A global written into the pickle under torch's name (``GLOBAL module\\nname``)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle requires a callable reduce function
        raise RuntimeError(f"{self.module}.{self.name} is a name written into checkpoints, not a function")


class _StorageType:
    """What ``torch.FloatStorage`` & co. load as: the storage's dtype."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype_name = _STORAGE_DTYPE[name]

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _LoadedStorage:
    """A storage read from a checkpoint: a 1-D tensor of its elements on the target device."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor


def _rebuild_tensor_v2(storage: _LoadedStorage, storage_offset: int, size: Any, stride: Any, requires_grad: bool,
                       backward_hooks: Any, metadata: Any = None) -> Any:
    """torch._utils._rebuild_tensor_v2: a view of the storage."""
    base = storage.tensor
    t = base.as_strided(list(size), list(stride), int(storage_offset))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage: _LoadedStorage, storage_offset: int, size: Any, stride: Any) -> Any:
    """torch._utils._rebuild_tensor."""
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, False, None)


def _rebuild_parameter(data: Any, requires_grad: bool, backward_hooks: Any) -> Any:
    """torch._utils._rebuild_parameter."""
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Any, requires_grad: bool, backward_hooks: Any, state: Any) -> Any:
    """torch._utils._rebuild_parameter_with_state: a Parameter with extra attributes."""
    param = _rebuild_parameter(data, requires_grad, backward_hooks)
    if isinstance(state, tuple) and len(state) == 2:
        state = state[1] or state[0]
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(param, k, v)
    return param


def _rebuild_from_type_v2(func: Callable, new_type: Any, args: Tuple[Any, ...], state: Any) -> Any:
    """torch._tensor._rebuild_from_type_v2: the tensor func(*args) makes (subclass types other than
    Parameter and Tensor are not restored)."""
    ret = func(*args)
    if isinstance(state, dict) and state and not isinstance(state, tuple):
        for k, v in state.items():
            try:
                setattr(ret, k, v)
            except AttributeError:
                pass
    return ret


def _size(*args: Any) -> Any:
    from ._size import Size

    return Size(*args)


def _torch_device(*args: Any) -> Any:
    return _C.device(*args)


def _tensor_type(*args: Any) -> Any:
    raise pickle.UnpicklingError("legacy torch.*Tensor type objects cannot be constructed by backend_sdk.load")


def _torch_globals() -> Dict[str, Any]:
    """torch's global names in a pickle -> what they are here."""
    sdk = _sdk()
    table: Dict[str, Any] = {
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.Size": _size,
        "torch.device": _torch_device,
        "torch.Tensor": sdk.Tensor,
        "torch.nn.parameter.Parameter": sdk.nn.Parameter,
    }
    for name in _STORAGE_DTYPE:
        table[f"torch.{name}"] = _StorageType(name)
    for name in _DTYPE_STORAGE:
        table[f"torch.{name}"] = getattr(sdk, name)
    return table


_SAFE_BUILTINS: Dict[str, Any] = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.complex": complex,
    "builtins.bytearray": bytearray,
    "_codecs.encode": __import__("codecs").encode,
}

_marked_safe_globals: List[Any] = []


def add_safe_globals(safe_globals: List[Any]) -> None:
    """Allowlists globals (classes, functions, or (obj, "module.name") pairs) for weights_only loads."""
    for g in safe_globals:
        if g not in _marked_safe_globals:
            _marked_safe_globals.append(g)


def get_safe_globals() -> List[Any]:
    """The globals add_safe_globals allowlisted."""
    return list(_marked_safe_globals)


def clear_safe_globals() -> None:
    """Forgets every global add_safe_globals allowlisted."""
    _marked_safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: List[Any]) -> Any:
    """Context manager: the globals are allowlisted for weights_only loads inside it."""
    before = list(_marked_safe_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _marked_safe_globals[:] = before


def _user_safe_globals() -> Dict[str, Any]:
    out = {}
    for g in _marked_safe_globals:
        if isinstance(g, tuple) and len(g) == 2:
            out[g[1]] = g[0]
        else:
            out[f"{g.__module__}.{g.__qualname__}"] = g
    return out


# ---- save ------------------------------------------------------------------------------------------


class _Pickler(pickle._Pickler):  # type: ignore[name-defined,misc]
    """Pure-Python pickler that writes torch's globals by name and storages as persistent ids."""

    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def __init__(self, file: Any, protocol: int, storages: "_StorageTable") -> None:
        super().__init__(file, protocol)
        self._storages = storages

    def _save_torch_global(self, obj: _TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_TorchGlobal] = _save_torch_global

    def _save_dtype(self, obj: _C.dtype) -> None:
        self._save_torch_global(_TorchGlobal("torch", _dtype_name(obj)))

    dispatch[_C.dtype] = _save_dtype

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRef):
            return ("storage", _TorchGlobal("torch", _DTYPE_STORAGE[obj.dtype_name]), obj.key, obj.location,
                    obj.numel)
        return None

    def reducer_override(self, obj: Any) -> Any:
        from .nn.parameter import Parameter

        if isinstance(obj, Parameter):
            return (_TorchGlobal("torch._utils", "_rebuild_parameter"),
                    (obj.detach(), obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, _C.TensorBase):
            ref = self._storages.add(obj)
            return (_TorchGlobal("torch._utils", "_rebuild_tensor_v2"),
                    (ref, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()), obj.requires_grad,
                     collections.OrderedDict()))
        if isinstance(obj, _C.device):
            return (_TorchGlobal("torch", "device"), (str(obj),))
        from ._size import Size

        if isinstance(obj, Size):
            return (_TorchGlobal("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        # The pure-Python pickler consults reducer_override only for objects without a dispatch entry
        # of their own; tensors, dtypes and Size have none, _TorchGlobal has one (above).
        super().save(obj, save_persistent_id)


class _StorageRef:
    __slots__ = ("key", "dtype_name", "location", "numel", "tensor")

    def __init__(self, key: str, dtype_name: str, location: str, numel: int, tensor: Any) -> None:
        self.key, self.dtype_name, self.location, self.numel, self.tensor = key, dtype_name, location, numel, tensor


class _StorageTable:
    """The storages of the tensors being saved, one record each (tensors of one storage share it)."""

    def __init__(self) -> None:
        self.by_identity: Dict[Tuple[str, int], _StorageRef] = {}
        self.ordered: List[_StorageRef] = []

    def add(self, t: Any) -> _StorageRef:
        dtype_name = _dtype_name(t.dtype)
        if dtype_name not in _DTYPE_STORAGE:
            raise RuntimeError(f"backend_sdk.save: tensors of dtype {t.dtype} cannot be saved")
        storage = t.untyped_storage()
        identity = (str(t.device), storage.data_ptr())
        ref = self.by_identity.get(identity)
        if ref is not None and storage.nbytes() > 0:
            if ref.dtype_name != dtype_name:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different "
                                   "types")
            return ref
        itemsize = t.element_size()
        numel = storage.nbytes() // itemsize
        full = t.detach().as_strided([numel], [1], 0) if numel else t.detach().as_strided([0], [1], 0)
        ref = _StorageRef(str(len(self.ordered)), dtype_name, str(t.device), numel, full)
        self.by_identity[identity] = ref
        self.ordered.append(ref)
        return ref


def _archive_name(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        base = os.path.basename(os.fspath(f))
        stem = base.split(".", 1)[0]
        return stem or "archive"
    return "archive"


def _write_record(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    # Align the data to _ALIGNMENT bytes: local header (30) + name + extra field ("FB", size, padding).
    offset = zf.fp.tell() + 30 + len(name.encode("utf-8")) + 4  # type: ignore[union-attr]
    pad = (-offset) % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    info.external_attr = 0o600 << 16
    zf.writestr(info, data)


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Saves obj (tensors, state dicts, nested containers of them, numbers, strings) to f (a path or a
    writable binary file object) in PyTorch's zip format (Note [Checkpoint format]); ``torch.load`` reads
    the file. Tensors on a device are copied to the host for writing and keep their location."""
    if not _use_new_zipfile_serialization:
        raise RuntimeError("backend_sdk.save writes only the zip format (_use_new_zipfile_serialization=True)")
    storages = _StorageTable()
    buf = io.BytesIO()
    _Pickler(buf, pickle_protocol, storages).dump(obj)
    prefix = _archive_name(f) + "/"
    own = isinstance(f, (str, os.PathLike))
    fh = open(f, "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_record(zf, prefix + "data.pkl", buf.getvalue())
            _write_record(zf, prefix + ".format_version", b"1")
            _write_record(zf, prefix + ".storage_alignment", str(_ALIGNMENT).encode())
            if not _disable_byteorder_record:
                _write_record(zf, prefix + "byteorder", sys.byteorder.encode())
            for ref in storages.ordered:
                host = ref.tensor.cpu() if not ref.tensor.is_cpu else ref.tensor
                array = np.ascontiguousarray(host.numpy())
                _write_record(zf, prefix + "data/" + ref.key, array.tobytes())
            _write_record(zf, prefix + "version", b"3\n")
            serialization_id = "".join(str(int(b)) for b in os.urandom(20))[:40].ljust(40, "0")
            _write_record(zf, prefix + ".data/serialization_id", serialization_id.encode())
    finally:
        if own:
            fh.close()


# ---- load ------------------------------------------------------------------------------------------


class _CheckpointError(RuntimeError):
    pass


def _describe(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        return f"'{os.fspath(f)}'"
    name = getattr(f, "name", None)
    return f"'{name}'" if isinstance(name, str) else "the file object"


def _map_location(location: str, map_location: Any) -> Any:
    """The device a storage saved at ``location`` loads to."""
    if map_location is None:
        return location
    if isinstance(map_location, (str, _C.device)):
        return str(map_location)
    if isinstance(map_location, dict):
        return map_location.get(location, location)
    if callable(map_location):
        return map_location  # applied to the loaded CPU storage
    raise TypeError(f"map_location should be a string, a device, a dict or a callable, not "
                    f"{type(map_location).__name__}")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, weights_only: bool, persistent_load: Callable[[Any], Any]) -> None:
        super().__init__(file)
        self._weights_only = weights_only
        self._persistent = persistent_load
        self._torch = _torch_globals()

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent(pid)

    def find_class(self, module: str, name: str) -> Any:
        # Protocol-2 pickles name Python 2's modules (__builtin__.set): map them as pickle's fix_imports does.
        import _compat_pickle

        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full_path = f"{module}.{name}"
        if full_path in self._torch:
            return self._torch[full_path]
        if full_path in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[full_path]
        user = _user_safe_globals()
        if full_path in user:
            return user[full_path]
        if self._weights_only:
            if module in _BLOCKLISTED_MODULES:
                raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full_path} whose module {module} "
                                             "is blocked.")
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {full_path} was not an allowed global by default. Please use "
                f"`torch.serialization.add_safe_globals([{full_path}])` or the "
                f"`torch.serialization.safe_globals([{full_path}])` context manager to allowlist this global if you "
                "trust this class/function.")
        if module == "torch" or module.startswith("torch."):
            raise pickle.UnpicklingError(f"backend_sdk.load: the checkpoint refers to {full_path}, which has no "
                                         "backend_sdk equivalent")
        return super().find_class(module, name)


def _wo_message(message: str) -> str:
    """PyTorch's _get_wo_message: the text of a weights_only refusal."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        updated = ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                   "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                   f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                   "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message)
    else:
        updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
        if not re.search(r"whose module (\S+) is blocked", message):
            updated += ("Please file an issue with the following so that we can make `weights_only=True` "
                        "compatible with your use case: WeightsUnpickler error: ")
        updated += "\n\n" + message
    return updated + DOCS_MESSAGE


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: Optional[bool] = None,
         mmap: Optional[bool] = None, **pickle_load_args: Any) -> Any:
    """Loads an object saved by ``save`` or by ``torch.save`` (zip format).

    map_location: None (each storage goes back where it was saved), a device or device string, a dict
    {saved location: new location}, or a callable ``(storage, location) -> storage`` (storage is a 1-D
    CPU tensor). weights_only=True (the default) refuses any pickled global outside the allowlist
    (Note [Safe unpickling]). A truncated or corrupted file raises RuntimeError naming the file and,
    for a damaged record, the record and its offset.
    """
    if weights_only is None:
        weights_only = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0") not in ("1", "y", "yes", "true")
    if pickle_module is not None and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    what = _describe(f)
    own = isinstance(f, (str, os.PathLike))
    fh = open(f, "rb") if own else f
    try:
        start = fh.tell() if hasattr(fh, "tell") else 0
        head = fh.read(4)
        fh.seek(start)
        if head[:2] == b"\x80\x02" or head[:1] == b"\x80":
            raise RuntimeError(f"backend_sdk.load: {what} is in PyTorch's legacy (pre-1.6) format, which is not "
                               "supported; re-save it with torch.save (zip format)")
        try:
            zf = zipfile.ZipFile(fh, "r")
        except zipfile.BadZipFile as e:
            size = _file_size(fh)
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: failed finding central directory "
                               f"(backend_sdk.load: {what}, {size} bytes, is not a complete checkpoint: {e}; the file "
                               "is truncated, corrupted or not a checkpoint)") from None
        with zf:
            return _load_zip(zf, what, map_location, weights_only)
    finally:
        if own:
            fh.close()


def _file_size(fh: Any) -> int:
    try:
        pos = fh.tell()
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(pos)
        return size
    except Exception:
        return -1


def _read_record(zf: zipfile.ZipFile, name: str, what: str) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise RuntimeError(f"backend_sdk.load: {what} has no record '{name}' (not a checkpoint, or damaged)") from None
    try:
        return zf.read(info)
    except (zipfile.BadZipFile, EOFError, OSError, struct.error, ValueError) as e:
        raise RuntimeError(f"backend_sdk.load: {what}: record '{name}' at offset {info.header_offset} "
                           f"({info.file_size} bytes) is corrupted or truncated: {e}") from None


def _load_zip(zf: zipfile.ZipFile, what: str, map_location: Any, weights_only: bool) -> Any:
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1] or \
        [n for n in names if n == "data.pkl"]
    if not pkl:
        raise RuntimeError(f"backend_sdk.load: {what} is a zip file without a data.pkl record: not a checkpoint")
    prefix = pkl[0][: -len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = _read_record(zf, prefix + "byteorder", what).decode()
        if byteorder not in ("little", "big"):
            raise RuntimeError(f"backend_sdk.load: {what}: unknown byteorder '{byteorder}'")
    loaded: Dict[str, _LoadedStorage] = {}
    sdk = _sdk()

    def persistent_load(pid: Any) -> Any:
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"backend_sdk.load: {what}: unknown persistent id {pid!r}")
        _, storage_type, key, location, numel = pid[:5]
        if key in loaded:
            return loaded[key]
        if isinstance(storage_type, _StorageType):
            dtype_name = storage_type.dtype_name
        elif isinstance(storage_type, _C.dtype):
            dtype_name = _dtype_name(storage_type)
        else:
            raise pickle.UnpicklingError(f"backend_sdk.load: {what}: storage '{key}' has unknown type {storage_type!r}")
        record = prefix + "data/" + str(key)
        data = _read_record(zf, record, what)
        dtype = getattr(sdk, dtype_name)
        itemsize = dtype.itemsize
        if len(data) != numel * itemsize:
            info = zf.getinfo(record)
            raise RuntimeError(f"backend_sdk.load: {what}: record '{record}' at offset {info.header_offset} holds "
                               f"{len(data)} bytes, but storage '{key}' needs {numel} x {itemsize} bytes")
        array = np.frombuffer(data, dtype=np.uint16 if dtype_name == "bfloat16" else _NUMPY_DTYPE[dtype_name]).copy()
        if byteorder != sys.byteorder:
            array = array.byteswap()
        t = _bits_as(array) if dtype_name == "bfloat16" else sdk.from_numpy(array)
        target = _map_location(str(location), map_location)
        if callable(target):
            result = target(t, str(location))
            t = result.tensor if isinstance(result, _LoadedStorage) else (t if result is None else result)
        elif target != "cpu":
            try:
                t = t.to(target)
            except Exception as e:
                raise RuntimeError(f"backend_sdk.load: storage '{key}' of {what} was saved on '{location}' and cannot "
                                   f"be restored to '{target}' ({e}); pass map_location (e.g. map_location='cpu')") \
                    from None
        storage = _LoadedStorage(t)
        loaded[key] = storage
        return storage

    data = _read_record(zf, prefix + "data.pkl", what)
    unpickler = _Unpickler(io.BytesIO(data), weights_only, persistent_load)
    try:
        return unpickler.load()
    except pickle.UnpicklingError as e:
        if weights_only:
            raise pickle.UnpicklingError(_wo_message(str(e))) from None
        raise
    except (EOFError, struct.error) as e:
        info = zf.getinfo(prefix + "data.pkl")
        raise RuntimeError(f"backend_sdk.load: {what}: record '{prefix}data.pkl' at offset {info.header_offset} is "
                           f"not a valid pickle: {e!r}") from None


def _bits_as(array: np.ndarray) -> Any:
    """A bfloat16 tensor of the uint16 bit patterns in array."""
    import ml_dtypes

    return _sdk().from_numpy(array.view(ml_dtypes.bfloat16))
