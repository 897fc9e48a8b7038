"""``Flatten`` and ``Unflatten`` (``torch.nn.modules.flatten``)."""
from __future__ import annotations

from typing import Sequence, Union

from ..._tensor import Tensor
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one (a view when the strides allow)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim into the shape unflattened_size (one entry may be -1)."""

    def __init__(self, dim: Union[int, str], unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if isinstance(dim, int):
            self._require_tuple_int(unflattened_size)
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input: Sequence[int]) -> None:
        if isinstance(input, (tuple, list)):
            for idx, elem in enumerate(input):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, " +
                                    f"but found element of type {type(elem).__name__} at pos {idx}")
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(input).__name__}")

    def forward(self, input: Tensor) -> Tensor:
        ndim = input.dim()
        dim = self.dim + ndim if self.dim < 0 else self.dim
        if not 0 <= dim < max(ndim, 1):
            raise IndexError(f"unflatten: Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                             f"but got {self.dim})")
        sizes = list(self.unflattened_size)
        size = input.shape[dim]
        if sizes.count(-1) > 1:
            raise RuntimeError("unflatten: only one dimension can be inferred")
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if -1 in sizes:
            if known == 0 or size % known:
                raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't multiply up to the "
                                   f"size of dim {self.dim} ({size}) in the input tensor")
            sizes[sizes.index(-1)] = size // known
        elif known != size:
            raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't multiply up to the size "
                               f"of dim {self.dim} ({size}) in the input tensor")
        shape = list(input.shape)
        return input.reshape(shape[:dim] + sizes + shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
