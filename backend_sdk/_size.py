"""``backend_sdk.Size``: the type of ``Tensor.shape``, a tuple of ints."""
from __future__ import annotations


class Size(tuple):
    """A tuple of dimension sizes, like ``torch.Size``."""

    def numel(self) -> int:
        """The number of elements a tensor of this shape has."""
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"backend_sdk.Size({list(self)})"

    def __getitem__(self, item):  # type: ignore[override]
        result = super().__getitem__(item)
        return Size(result) if isinstance(item, slice) else result
