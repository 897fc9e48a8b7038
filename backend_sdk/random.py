"""``backend_sdk.random``: seeding and the state of the default generators (like ``torch.random``).

Random numbers come from Philox4x32-10 (see Note [Philox random numbers] in
``csrc/backend_sdk/core/Philox.h``): a generator is a (seed, offset) pair, so one seed
gives the same numbers on every device.
"""
from __future__ import annotations

from typing import Any

from . import _C
from ._C import Generator

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]

#: The default CPU generator (``torch.default_generator``).
default_generator: Generator = _C._default_generator("cpu")


def manual_seed(seed: int) -> Generator:
    """Seeds the CPU generator and every device's default generator (also those created later).

    Accepts any int in [-2**63, 2**64); negative seeds wrap to uint64 as in PyTorch.
    Returns the default CPU generator.
    """
    _C._manual_seed_all(seed)
    return default_generator


def seed() -> int:
    """Seeds every default generator with a non-deterministic seed and returns it."""
    s = default_generator.seed()
    _C._manual_seed_all(s)
    return s


def initial_seed() -> int:
    """The seed of the default CPU generator."""
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The state of the default CPU generator, as a uint8 tensor (16 bytes: seed, offset)."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restores the default CPU generator's state from get_rng_state()."""
    default_generator.set_state(new_state)


def default_generator_for(device: Any) -> Generator:
    """The default generator of a device ("cpu", "accel:1"; no index: the current device)."""
    return _C._default_generator(device)
