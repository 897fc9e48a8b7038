"""``backend_sdk.nn``: modules, parameters, initialisers and functional forms, as ``torch.nn``.

Layers: linear, convolution, pooling, normalization, embedding, activations, dropout and
the losses, each over the aten operators of backend_sdk.nn.functional.
"""
from .parameter import Buffer, Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import functional, init, utils
from . import parallel  # DistributedDataParallel (needs the distributed extra only when constructed)

__all__ = ["Parameter", "Buffer", "functional", "init", "parallel", "utils"] + list(_modules_all)
