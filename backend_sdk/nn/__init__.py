"""``backend_sdk.nn``: modules, parameters, initialisers and functional forms, as ``torch.nn``.

What exists is what today's operators express (linear layers, activations, dropout,
the losses); layers that need operators the SDK does not have yet (convolution,
pooling, normalisation, embedding, attention) are absent rather than faked.
"""
from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import functional, init, utils
from . import parallel  # DistributedDataParallel (needs the distributed extra only when constructed)

__all__ = ["Parameter", "Buffer", "functional", "init", "parallel", "utils"] + list(_modules_all)
