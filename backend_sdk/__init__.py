"""backend_sdk: an SDK for bringing up a new accelerator with PyTorch's extension APIs.

Tensors, the dispatcher and the operator library live in the C++ core
(``backend_sdk._C``); this package is their Python face.
"""
from . import _C


def _register_blas() -> None:
    """Points the matrix kernels at scipy-openblas32's OpenBLAS (see Note [BLAS loading])."""
    try:
        import os

        import scipy_openblas32
    except ImportError:  # the kernels fall back to a portable loop
        return
    lib_dir = scipy_openblas32.get_lib_dir()
    name = f"lib{scipy_openblas32.get_library()}.so"
    if os.path.exists(os.path.join(lib_dir, name)):
        _C._set_blas_library_path(os.path.join(lib_dir, name))


_register_blas()

from ._C import (  # dtypes
    bfloat16, bool, dtype, float16, float32, float64, int8, int16, int32, int64, uint8,
)
from ._C import AcceleratorError, DispatchKeySet, OutOfMemoryError, TypeRuntimeError, ValueRuntimeError, device
from ._factories import (
    allclose, arange, empty, empty_like, empty_strided, from_dlpack, from_numpy, frombuffer, full, full_like, ones,
    ones_like, rand, randn, tensor, zeros, zeros_like,
)
from ._factories import normal, randint
from ._ops import ops
from ._C import Generator
from ._size import Size
from ._tensor import Tensor
from ._storage import TypedStorage, UntypedStorage
from ._formats import (
    channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided,
)
from . import library, utils
from ._library.tracing import GraphModule, trace
from . import nn, random
from . import optim
from .utils import data as _data  # noqa: F401  (backend_sdk.utils.data)
from . import serialization
from .serialization import load, save
from . import autograd
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.grad_mode import (inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled, is_inference,
                                 is_inference_mode_enabled, set_anomaly_enabled)
from ._norm import norm
from ._functions import get_default_dtype, nonzero, promote_types, set_default_dtype, where
from ._streams import Event, Stream
from . import accelerator
from .random import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

#: The SDK's version (pyproject.toml's, compiled into _C: Note [SDK version] in CMakeLists.txt).
__version__: str = _C.__version__
#: For plain CMake: -DCMAKE_PREFIX_PATH=<this> finds the backend_sdk CMake package (as torch's
#: torch.utils.cmake_prefix_path); scikit-build-core projects find it through the cmake.root entry point.
cmake_prefix_path: str = utils.cmake_prefix_path

_C._set_tensor_class(Tensor)
_C._set_size_class(Size)

_registration_errors = _C._take_static_registration_errors()
if _registration_errors:  # a bug in the SDK's own operator registrations
    raise ImportError("backend_sdk: registering the built-in operators failed:\n" + "\n".join(_registration_errors))

# Aliases PyTorch users know.
half, bfloat16_ = float16, bfloat16
float, double, long, int, short = float32, float64, int64, int32, int16  # noqa: A001 (torch's names)


class _UnknownBackendError(RuntimeError, ValueError):
    """_register_device_module of a name no PrivateUse backend carries (PyTorch: RuntimeError)."""


def _register_device_module(device_type: str, module: object) -> None:
    """Makes ``module`` available as ``backend_sdk.<device_type>`` (as torch._register_device_module).

    ``device_type`` must be the name of a renamed PrivateUse backend; registering
    a second module for it is an error.
    """
    import sys

    try:
        utils._privateuse_of(device_type)
    except ValueError as e:  # PyTorch raises RuntimeError for an unknown device type: this is both
        raise _UnknownBackendError(f"{e}. Expected one of {_C._valid_device_types()} device type at start of "
                                   f"device string: {device_type}") from None
    existing = globals().get(device_type)
    if existing is not None and existing is not module:
        raise RuntimeError(f"The runtime module of '{device_type}' has already been registered with '{existing}'")
    globals()[device_type] = module
    sys.modules[f"backend_sdk.{device_type}"] = module  # type: ignore[assignment]


def _install_operator_functions() -> list[str]:
    """Exposes aten operators as Tensor methods (first argument `self`) and module functions.

    Like torch, the module functions may share a builtin's name (backend_sdk.sum,
    backend_sdk.max); names this module already defines are kept.
    """
    namespace = globals()
    installed: list[str] = []
    seen: set[str] = set()
    for qualified in _C._registered_operators():
        ns, rest = qualified.split("::", 1)
        name = rest.split(".", 1)[0]
        if ns != "aten" or name.startswith("_") or name in seen:
            continue
        seen.add(name)
        packet = getattr(ops.aten, name)
        first_args = set()
        for overload in packet._overload_names:
            schema = _C._parse_schema(getattr(packet, overload)._schema)
            if schema.arguments:
                first_args.add((schema.arguments[0].name, schema.arguments[0].type))
        if ("self", "Tensor") in first_args and not hasattr(Tensor, name):
            setattr(Tensor, name, packet)
        if not name.endswith("_") and name not in namespace:
            namespace[name] = packet
            installed.append(name)
    return installed


Tensor.norm = norm  # torch.norm's signature (p='fro', dim as int or list)
from ._tensor_methods import install as _install_tensor_methods, is_tensor, numel  # noqa: E402

_install_tensor_methods()
__all__ = [
    # dtypes and their PyTorch aliases
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
    "half", "float", "double", "long", "int", "short",
    # core types and errors
    "device", "Size", "Tensor", "UntypedStorage", "TypedStorage", "Generator", "DispatchKeySet", "Stream", "Event",
    "AcceleratorError", "OutOfMemoryError", "TypeRuntimeError", "ValueRuntimeError", "Tag",
    # layouts and memory formats
    "layout", "strided", "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
    # factories
    "arange", "empty", "empty_like", "empty_strided", "from_dlpack", "from_numpy", "frombuffer", "full",
    "full_like", "ones", "ones_like", "tensor", "zeros", "zeros_like", "rand", "randn", "randint", "normal",
    # functions and modes
    "save", "load", "is_tensor", "numel", "get_default_dtype", "set_default_dtype", "promote_types", "nonzero", "where", "norm", "trace",
    "GraphModule", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled",
    "inference_mode", "is_inference_mode_enabled", "is_inference", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "default_generator", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state",
    # submodules
    "accelerator", "autograd", "library", "nn", "ops", "optim", "random", "serialization", "testing", "types", "utils",
    "cmake_prefix_path",
]
__all__ += sorted(set(_install_operator_functions()) - set(__all__))

# Operator tags (Note [Operator tags], backend_sdk/_tags.py), torch.types' aliases, and backend_sdk.testing
# as an attribute of the package after `import backend_sdk`, as torch.testing is.
from ._tags import Tag, _install as _install_tags  # noqa: E402

_install_tags()
from . import testing, types  # noqa: E402,F401

# Autocast and GradScaler (issue 19; docs/autocast.md): backend_sdk.autocast, backend_sdk.amp and torch's state functions.
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402
from ._autocast import (  # noqa: E402
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_dtype,
    is_autocast_cache_enabled, is_autocast_enabled, set_autocast_cache_enabled, set_autocast_dtype,
    set_autocast_enabled)

__all__ += ["amp", "autocast", "autocast_decrement_nesting", "autocast_increment_nesting", "clear_autocast_cache",
            "get_autocast_dtype", "is_autocast_cache_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
            "set_autocast_dtype", "set_autocast_enabled"]
# vmap and the function transforms (docs/vmap.md)
from . import func  # noqa: E402
from .func import vmap  # noqa: E402

__all__ += ["func", "vmap"]
from . import profiler  # noqa: E402,F401  (backend_sdk.profiler, as torch.profiler; docs/profiler.md)
# torch.return_types (named results of topk/sort/max.dim/...) and torch._check* (issue 20: real programs use them)
from . import return_types  # noqa: E402
from ._checks import (  # noqa: E402,F401
    _check, _check_index, _check_is_size, _check_not_implemented, _check_type, _check_value, _check_with)

return_types._install(globals(), Tensor, [n for n in list(globals()) if not n.startswith("_")])
__all__ += ["return_types"]
# aten::sym_size/sym_stride/sym_numel/sym_storage_offset/dim/is_contiguous, prim::device/layout (Note [Python
# metadata policies])
from . import _python_dispatch_policies  # noqa: E402,F401
