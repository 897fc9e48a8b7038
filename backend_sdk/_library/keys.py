"""Dispatch keys and device types named in registrations, including backends this process lacks.

Note [Registrations for absent backends]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Libraries written for GPUs register kernels for "CUDA", "XPU", "MPS" or device type
"cuda". This SDK has no such backends (only CPU, Meta and the PrivateUse ones), so
such a registration is accepted and recorded on the Library (``_absent_kernels``),
never put in a dispatch table and never called, and the library loads as it does
under PyTorch without those devices. A name that is no dispatch key or device type
of any PyTorch version is an error listing the valid names.
"""
from __future__ import annotations

from .. import _C

__all__ = ["ABSENT_DEVICE_TYPES", "ABSENT_KEYS", "resolve_device_type", "resolve_key"]

# PyTorch's device types without a backend here -> their dense dispatch key.
ABSENT_DEVICE_TYPES = {
    "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "hip": "HIP", "xla": "XLA", "lazy": "Lazy", "ipu": "IPU",
    "mtia": "MTIA", "hpu": "HPU", "ve": "VE", "maia": "MAIA", "vulkan": "Vulkan", "metal": "Metal", "fpga": "FPGA",
    "mkldnn": "MkldnnCPU", "opengl": "OpenGL", "opencl": "OpenCL", "ideep": "IDEEP",
}
_BACKENDS = ["CUDA", "XPU", "MPS", "HIP", "XLA", "Lazy", "IPU", "MTIA", "HPU", "VE", "MAIA"]
ABSENT_KEYS = frozenset(
    [*ABSENT_DEVICE_TYPES.values()]
    + [f"Autograd{b}" for b in _BACKENDS]
    + [f"Autocast{b}" for b in ("CUDA", "XPU", "MPS", "HPU", "XLA", "MTIA", "MAIA")]
    + [f"Sparse{b}" for b in ("CPU", "CUDA", "XPU", "Meta", "HIP", "MPS", "PrivateUse1")]
    + [f"SparseCsr{b}" for b in ("CPU", "CUDA", "XPU", "Meta", "MPS")]
    + [f"Quantized{b}" for b in ("CPU", "CUDA", "XPU", "Meta", "PrivateUse1")]
    + [f"NestedTensor{b}" for b in ("CPU", "CUDA", "XPU", "Meta", "HPU", "PrivateUse1")]
    + ["AutogradOther", "AutogradNestedTensor", "AutogradFunctionality", "CompositeExplicitAutogradNonFunctional",
       "CompositeImplicitAutogradNestedTensor", "Functionalize", "FuncTorchBatched", "FuncTorchVmapMode",
       "FuncTorchGradWrapper", "FuncTorchDynamicLayerFrontMode", "FuncTorchDynamicLayerBackMode", "Batched",
       "BatchedNestedTensor", "VmapMode", "ZeroTensor", "Conjugate", "Negative", "PythonDispatcher", "PreDispatch",
       "Sparse", "SparseCsr", "Quantized", "NestedTensor", "MkldnnCPU"]
)


def _valid_keys_text() -> str:
    try:
        _C._dispatch_key_name("__definitely_not_a_key__")
    except Exception as e:  # noqa: BLE001 (the C++ error lists this process's keys)
        text = str(e)
        return text.split("Valid keys are: ", 1)[1] if "Valid keys are: " in text else text
    return ""


def resolve_key(name: object, what: str) -> str | None:
    """The canonical name of dispatch key ``name``; None for a PyTorch key of an absent backend."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: the dispatch key must be a string, got {type(name).__name__}")
    try:
        return _C._dispatch_key_name(name)
    except ValueError:
        if name in ABSENT_KEYS:
            return None
    raise _C.ValueRuntimeError(
        f"{what}: Unknown dispatch key '{name}'. Valid keys are: {_valid_keys_text()}; keys of backends this "
        f"process does not have (accepted, never dispatched): {', '.join(sorted(ABSENT_KEYS))}"
    )


def resolve_device_type(device_type: object, what: str) -> str | None:
    """The dispatch key of a device type ("cpu" -> "CPU", "accel" -> "PrivateUse1"); None for an absent one."""
    if not isinstance(device_type, str):
        raise TypeError(f"{what}: device_types must be strings, got {type(device_type).__name__}")
    base = device_type.split(":", 1)[0]
    try:
        return _C._dispatch_key_name(base)
    except ValueError:
        if base.lower() in ABSENT_DEVICE_TYPES:
            return None
    # PyTorch's words (its list starts "cpu, cuda": ours names cpu, then the PrivateUse backends, then meta).
    valid = [t.strip() for t in _C._valid_device_types().split(",")]
    ordered = [t for t in valid if t == "cpu"] + [t for t in valid if t not in ("cpu", "meta")] + \
        [t for t in valid if t == "meta"]
    raise _C.ValueRuntimeError(
        f"{what}: Expected one of {', '.join(ordered)} device type at start of device string: {device_type} "
        f"(a PyTorch device type this process does not have, {', '.join(sorted(ABSENT_DEVICE_TYPES))}, is "
        f"recorded and never dispatched)"
    )
