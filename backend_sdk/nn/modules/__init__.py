"""The module classes of ``backend_sdk.nn``."""
from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, Linear
from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .flatten import Flatten, Unflatten
from .dropout import Dropout
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .sparse import Embedding
from .attention import MultiheadAttention
from .transformer import TransformerEncoder, TransformerEncoderLayer
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "LeakyReLU", "Flatten", "Unflatten", "Dropout",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "LayerNorm", "RMSNorm", "GroupNorm",
    "BatchNorm1d", "BatchNorm2d", "Embedding", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "BCELoss", "SmoothL1Loss", "HuberLoss",
]
