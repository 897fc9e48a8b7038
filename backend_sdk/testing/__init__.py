"""``backend_sdk.testing``: assert_close, gradcheck and gradgradcheck (as ``torch.testing`` /
``torch.autograd``), opcheck for operators, the kernel checker's switch (check_kernels), and device-generic
tests (instantiate_device_type_tests and its decorators, as ``common_device_type`` in PyTorch)."""
from ._comparison import assert_close
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck
from ._kernel_checks import check_kernels, kernel_checks_enabled, kernel_checks_run
from ._opcheck import OpCheckError, opcheck
from ._device_type import (DeviceTypeTestBase, available_device_types, deviceCountAtLeast, dtypes, dtypesIfCPU,
                           expectedFailure, get_device_type_test_bases, instantiate_device_type_tests, onlyCPU,
                           onlyNativeDeviceTypes, onlyOn, skipCPUIf, skipIf, skipMeta)

__all__ = ["assert_close", "gradcheck", "gradgradcheck", "GradcheckError", "opcheck", "OpCheckError", "check_kernels",
           "kernel_checks_enabled", "kernel_checks_run"]
__all__ += ["instantiate_device_type_tests", "get_device_type_test_bases", "DeviceTypeTestBase", "available_device_types",
            "dtypes", "dtypesIfCPU", "onlyOn", "onlyCPU", "onlyNativeDeviceTypes", "skipIf", "skipCPUIf", "skipMeta",
            "deviceCountAtLeast", "expectedFailure"]
