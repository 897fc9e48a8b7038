"""``backend_sdk.nn``: neural-network helpers (for now ``functional``), like ``torch.nn``."""
from . import functional

__all__ = ["functional"]
