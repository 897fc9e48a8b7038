"""``backend_sdk.norm`` / ``Tensor.norm``: torch.norm's Python signature over the aten norm operators."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ._ops import ops

__all__ = ["norm"]


def norm(input: Any, p: Union[float, int, str, None] = "fro", dim: Union[int, Sequence[int], None] = None,
         keepdim: bool = False, out: Any = None, dtype: Any = None) -> Any:
    """The vector norm of input over dim (all dims when None), like torch.norm.

    p: a number (2, 1, inf, -inf, 0 or any other p) or 'fro' (the 2-norm of the
    flattened dims); 'nuc' (a matrix norm) is not supported.
    """
    if isinstance(p, str):
        if p != "fro":
            raise ValueError(f"norm(): p='{p}' is not supported; use 'fro' or a number")
        p = 2
    if p is None:
        p = 2
    dims = [] if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if out is not None:
        if dtype is not None:
            return ops.aten.norm.dtype_out(input, p, dims, keepdim, dtype=dtype, out=out)
        return ops.aten.norm.out(input, p, dims, keepdim, out=out)
    if dtype is not None:
        return ops.aten.norm.ScalarOpt_dim_dtype(input, p, dims, keepdim, dtype=dtype)
    if dim is None and not keepdim:
        return ops.aten.norm.Scalar(input, p)
    return ops.aten.norm.ScalarOpt_dim(input, p, dims, keepdim)
