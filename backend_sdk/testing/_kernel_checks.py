"""The kernel checker's Python switch (Note [Kernel checker], csrc/backend_sdk/dispatch/detail/KernelChecker.h)."""
from __future__ import annotations

__all__ = ["check_kernels", "kernel_checks_enabled", "kernel_checks_run"]


def check_kernels(enabled: bool = True) -> None:
    """Turns the kernel checker on (or off), as ``BACKEND_SDK_CHECK_KERNELS=1`` does.

    While it is on, every kernel registered for a backend's key (a vendor's native kernels) is wrapped:
    each call compares the returned tensors with the operator's Meta kernel (sizes, dtype, device, an
    in-place/out= kernel returning its argument, a functional one returning fresh storage) and raises a
    RuntimeError naming the backend, the operator and the mismatch. Kernels registered before it was turned
    on are not wrapped: call it before importing the backend. Turning it off stops the checks of wrapped
    kernels.
    """
    from .. import _C

    if not isinstance(enabled, bool):
        raise TypeError(f"check_kernels(): enabled must be a bool, got {type(enabled).__name__}")
    _C._set_kernel_checks(enabled)


def kernel_checks_enabled() -> bool:
    """True while the kernel checker is on (the switch, else ``BACKEND_SDK_CHECK_KERNELS``)."""
    from .. import _C

    return bool(_C._kernel_checks_enabled())


def kernel_checks_run() -> int:
    """How many kernel calls the checker has checked in this process."""
    from .. import _C

    return int(_C._kernel_checks_run())
