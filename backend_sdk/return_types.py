"""``backend_sdk.return_types``: the named tuples that operators with named results return, as
``torch.return_types``.

``backend_sdk.topk(x, 2)`` (and ``x.topk(2)``, ``sort``, ``max(x, dim)``, ``min(x, dim)``) returns
``return_types.topk(values=..., indices=...)``: a tuple (it unpacks and indexes as one) whose fields
are named by the operator schema's results, ``-> (Tensor values, Tensor indices)``. As in PyTorch,
``backend_sdk.ops.aten.topk`` itself returns a plain tuple; the module functions and Tensor methods
wrap it. Like torch's structseq types, a class takes one sequence: ``return_types.topk((v, i))``.
"""
from __future__ import annotations

import builtins
import functools
from typing import Any, Callable, Dict, Sequence

from . import _C

__all__: list[str] = []  # filled by _install with the operators' classes


class _ReturnType(tuple):
    """Base of the named result tuples: fields by name and by position, torch.return_types' repr."""

    _fields: tuple = ()
    n_fields = 0
    n_sequence_fields = 0

    def __new__(cls, sequence: Sequence[Any]) -> "_ReturnType":
        values = tuple(sequence)
        if len(values) != len(cls._fields):
            raise TypeError(f"{cls.__module__}.{cls.__name__}() takes a {len(cls._fields)}-sequence "
                            f"({len(values)}-sequence given)")
        return super().__new__(cls, values)

    @classmethod
    def _make(cls, iterable: Any) -> "_ReturnType":
        """The result from its fields in order (namedtuple's name, which the pytree modules rebuild with)."""
        return cls(iterable)

    def __repr__(self) -> str:
        fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"{type(self).__module__}.{type(self).__name__}(\n{fields})"

    def __reduce__(self) -> Any:
        return (type(self), (tuple(self),))


def _make(name: str, fields: Sequence[str]) -> type:
    namespace: Dict[str, Any] = {"_fields": tuple(fields), "n_fields": len(fields), "n_sequence_fields": len(fields),
                                 "__module__": __name__, "__slots__": (),
                                 "__doc__": f"The named results of aten::{name}: ({', '.join(fields)})."}
    for i, field in enumerate(fields):
        namespace[field] = property(lambda self, i=i: tuple.__getitem__(self, i), doc=f"result {i}: {field}")
    return type(name, (_ReturnType,), namespace)


def _named_results(packet: Any) -> Dict[int, tuple]:
    """{number of results: their names} over the overloads of an operator whose results are all named."""
    out: Dict[int, tuple] = {}
    for overload in packet._overload_names:
        returns = _C._parse_schema(getattr(packet, overload)._schema).returns
        if len(returns) > 1 and all(r.name for r in returns):
            out.setdefault(len(returns), tuple(r.name for r in returns))
    return out


def _wrap(packet: Any, classes: Dict[int, type]) -> Callable[..., Any]:
    @functools.wraps(packet, assigned=("__doc__",))
    def call(*args: Any, **kwargs: Any) -> Any:
        out = packet(*args, **kwargs)
        if type(out) is tuple:
            cls = classes.get(len(out))
            if cls is not None:
                return cls(out)
        return out

    call.__name__ = call.__qualname__ = packet.__name__ if hasattr(packet, "__name__") else "call"
    return call


def _install(namespace: Dict[str, Any], tensor_type: type, names: Sequence[str]) -> None:
    """Defines a class per operator of ``names`` with named results and wraps the module function and Tensor
    method that still are the bare operator packet (explicitly written ones are left alone)."""
    from ._ops import ops

    for name in names:
        packet = getattr(ops.aten, name, None)
        if packet is None:
            continue
        named = _named_results(packet)
        if not named:
            continue
        fields = named[builtins.max(named)]
        cls = _make(name, fields)
        globals()[name] = cls
        __all__.append(name)
        classes = {n: (cls if f == fields else _make(name, f)) for n, f in named.items()}
        wrapped = _wrap(packet, classes)
        if namespace.get(name) is packet:
            namespace[name] = wrapped
        if tensor_type.__dict__.get(name) is packet:
            setattr(tensor_type, name, wrapped)
