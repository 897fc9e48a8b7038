"""The module classes of ``backend_sdk.nn``."""
from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, Linear
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .flatten import Flatten, Unflatten
from .dropout import Dropout
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "LeakyReLU", "Flatten", "Unflatten", "Dropout",
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "BCELoss", "SmoothL1Loss", "HuberLoss",
]
