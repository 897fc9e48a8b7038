"""``backend_sdk.amp``: automatic mixed precision (torch.amp): autocast regions and GradScaler.

See docs/autocast.md, Note [Autocast regions] (autocast_mode.py) and Note [GradScaler] (grad_scaler.py).
"""

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
