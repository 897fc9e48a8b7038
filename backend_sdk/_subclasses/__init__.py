"""Tensor subclasses: ``FakeTensor`` and ``FakeTensorMode`` (as ``torch._subclasses``)."""
from .fake_tensor import DataDependentOutputException, FakeTensor, FakeTensorMode, UnsupportedFakeTensorException

__all__ = ["DataDependentOutputException", "FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException"]
