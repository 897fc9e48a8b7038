"""``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d`` (``torch.nn.modules.conv``) over
``aten::convolution``."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from ..._factories import empty
from ..._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]


def _tuple(v: Any, n: int) -> Tuple[int, ...]:
    return tuple(int(x) for x in v) if isinstance(v, (list, tuple)) else (int(v),) * n


class _ConvNd(Module):
    """Shared body: weight (out, in / groups, *kernel), bias (out); PyTorch's initialisation
    (kaiming_uniform_ with a=sqrt(5), bias uniform in +-1/sqrt(fan_in)) and padding modes."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str) and not self._transposed:
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in {"zeros", "reflect", "replicate", "circular"}:
            raise ValueError(f"padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], "
                             f"but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.groups = groups
        self.padding_mode = padding_mode
        self.transposed = self._transposed
        self.output_padding = (0,) * n
        # (out, in / groups, *kernel); transposed: (in, out / groups, *kernel), as PyTorch's
        channels = (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty((*channels, *self.kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws weight and bias from the default generator: Linear's scheme (as PyTorch's)."""
        Linear.reset_parameters(self)  # type: ignore[arg-type]

    def _conv(self, input: Tensor) -> Tensor:
        fn = F.conv1d if self._dims == 1 else F.conv2d
        if self.padding_mode != "zeros":
            if isinstance(self.padding, str):
                raise NotImplementedError(f"padding_mode='{self.padding_mode}' with padding='{self.padding}'")
            pads = []
            for p in reversed(self.padding):
                pads += [p, p]
            return fn(F.pad(input, pads, mode=self.padding_mode), self.weight, self.bias, self.stride, 0,
                      self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) input."""

    _dims = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) input."""

    _dims = 2


class _ConvTransposeNd(_ConvNd):
    """Shared body of the transposed convolutions: PyTorch's signature (output_padding before groups, dilation
    after bias), weight (in, out / groups, *kernel), only padding_mode='zeros', and forward's output_size."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.output_padding = _tuple(output_padding, self._dims)

    def _output_padding(self, input: Tensor, output_size: Optional[Sequence[int]]) -> List[int]:
        """output_padding, or the one that makes the output ``output_size`` (its spatial sizes, or all of the
        output's sizes): each spatial size may exceed the smallest output by less than the stride."""
        n = self._dims
        if output_size is None:
            return list(self.output_padding)
        lead = 2 if input.dim() == n + 2 else 1
        sizes = [int(v) for v in output_size]
        if len(sizes) == lead + n:
            sizes = sizes[lead:]
        if len(sizes) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{lead + n} elements (got {len(sizes)})")
        padding = F._transpose_padding(self.padding, n)
        smallest = [(int(input.shape[lead + d]) - 1) * self.stride[d] - 2 * padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        largest = [m + self.stride[d] - 1 for d, m in enumerate(smallest)]
        if any(not lo <= v <= hi for v, lo, hi in zip(sizes, smallest, largest)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} to "
                             f"{largest} (for an input of {input.size()[2:]})")
        return [v - lo for v, lo in zip(sizes, smallest)]

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        fn = F.conv_transpose1d if self._dims == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                  self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) input (the adjoint of Conv1d)."""

    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W) input (the adjoint of Conv2d)."""

    _dims = 2
