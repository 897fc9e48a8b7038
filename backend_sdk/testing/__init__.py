"""``backend_sdk.testing``: assert_close, gradcheck and gradgradcheck (as ``torch.testing`` / ``torch.autograd``)."""
from ._comparison import assert_close
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["assert_close", "gradcheck", "gradgradcheck", "GradcheckError"]
