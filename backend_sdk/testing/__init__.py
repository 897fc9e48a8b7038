"""``backend_sdk.testing``: assert_close, gradcheck and gradgradcheck (as ``torch.testing`` /
``torch.autograd``), and opcheck for operators."""
from ._comparison import assert_close
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck
from ._opcheck import OpCheckError, opcheck

__all__ = ["assert_close", "gradcheck", "gradgradcheck", "GradcheckError", "opcheck", "OpCheckError"]
