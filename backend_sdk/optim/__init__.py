"""``backend_sdk.optim``: optimizers and learning-rate schedulers, as ``torch.optim``.

Updates are in-place operators under no_grad, one parameter at a time (Note [Optimizer step cost],
optimizer.py); ``foreach``/``fused`` come with the multi-tensor operators.
"""
from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
