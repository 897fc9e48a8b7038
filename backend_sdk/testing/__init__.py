"""``backend_sdk.testing``: assert_close, gradcheck and gradgradcheck (as ``torch.testing`` /
``torch.autograd``), opcheck for operators, and the kernel checker's switch (check_kernels)."""
from ._comparison import assert_close
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck
from ._kernel_checks import check_kernels, kernel_checks_enabled, kernel_checks_run
from ._opcheck import OpCheckError, opcheck

__all__ = ["assert_close", "gradcheck", "gradgradcheck", "GradcheckError", "opcheck", "OpCheckError", "check_kernels",
           "kernel_checks_enabled", "kernel_checks_run"]
