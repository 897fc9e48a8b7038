"""Pickling and ``copy.deepcopy`` of tensors, with torch/_tensor.py's semantics (issue 19).

Note [Tensor pickling]
~~~~~~~~~~~~~~~~~~~~~~
``Tensor.__reduce_ex__`` follows torch.Tensor's: a plain tensor without Python state reduces to
``_rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype)``;
a subclass instance, or a tensor with attributes in its ``__dict__``, is wrapped in
``_rebuild_from_type_v2(func, type(self), args, state)`` that rebuilds the tensor, turns it into the
class (``as_subclass`` semantics: ``__class__`` set) and restores the state (``__setstate__`` when
the class defines one, else the ``__dict__`` and ``__slots__`` attributes). A ``__torch_dispatch__``
wrapper subclass (the Python key, a data-less meta storage) reduces to
``_rebuild_wrapper_subclass(cls, dtype, size, stride, storage_offset, layout, device,
requires_grad)`` plus its state, so its inner tensors (``__tensor_flatten__``'s attributes live in
``__dict__``) pickle as ordinary tensors, as PyTorch's do. A meta tensor pickles its metadata only
(``_rebuild_meta_tensor_no_storage``, as PyTorch: storage sharing is not kept there).

Views share their storage after a round trip, as in PyTorch where ``untyped_storage()`` returns one
Python object per StorageImpl and pickle's memo pickles it once. An SDK storage object is a new
Python object each time (Note [Storage objects]), so ``_storage_ref`` hands out one ``_PickledStorage``
per StorageImpl (keyed by ``_C._storage_id``) from a weak-value table: while one ``pickle.dumps`` runs
its memo holds the first one, so every view of that storage gets the same object and the memo writes
its bytes once; when the dump ends the table entry goes. The holder keeps the storage alive, so an id
cannot be reused while the entry exists. Its bytes are read when pickle reduces it (a device storage is
copied to the host), and the unpickled storage is made on the device recorded (``str(device)``).

``Tensor.__deepcopy__`` follows PyTorch's: only leaves (RuntimeError with PyTorch's text otherwise);
under no_grad the storage is copied once per StorageImpl per memo (so views of one storage stay views
of one new storage), ``requires_grad`` and ``grad`` (deep-copied through the memo) are kept, and
``__slots__`` and ``__dict__`` are deep-copied; a wrapper subclass is copied with ``clone()`` (its
handler's), which must return the same class (PyTorch's RuntimeError otherwise). ``backend_sdk.save``
does not go through any of this: its pickler's ``reducer_override`` runs before ``__reduce_ex__``
(backend_sdk/serialization.py).
"""
from __future__ import annotations

import collections
import copy
import copyreg
import threading
import weakref
from typing import Any, Callable

import numpy as np

from . import _C

__all__: list[str] = []  # internal: the rebuild functions are found by pickle through their qualified names


def _reduce_device(d: Any) -> tuple[Callable, tuple]:
    return (_C.device, (str(d),))


# torch.device pickles as its string, as PyTorch's does; the SDK's device type has no __reduce__ of its own.
copyreg.pickle(_C.device, _reduce_device)


class _PickledStorage:
    """One StorageImpl's bytes and device, as pickle writes them (Note [Tensor pickling])."""

    __slots__ = ("storage", "__weakref__")

    def __init__(self, storage: Any) -> None:
        self.storage = storage

    def __reduce__(self) -> tuple[Callable, tuple]:
        s = self.storage
        data = s._bytes()
        if not s.is_cpu:
            data = data.cpu()
        return (_rebuild_storage, (data.numpy().tobytes(), str(s.device)))


_storage_refs: "weakref.WeakValueDictionary[int, _PickledStorage]" = weakref.WeakValueDictionary()
_storage_refs_lock = threading.Lock()


def _storage_ref(tensor: Any) -> _PickledStorage:
    """The holder of ``tensor``'s storage shared by every view while one pickle runs."""
    storage = tensor.untyped_storage()
    if storage.nbytes() == 0:
        return _PickledStorage(storage)
    key = _C._storage_id(tensor)
    with _storage_refs_lock:
        ref = _storage_refs.get(key)
        if ref is None:
            ref = _PickledStorage(storage)
            _storage_refs[key] = ref
        return ref


def _rebuild_storage(data: bytes, device: str) -> Any:
    """An UntypedStorage with ``data`` on ``device``."""
    from ._factories import tensor as _tensor
    from ._storage import UntypedStorage

    byte_tensor = _tensor(np.frombuffer(data, dtype=np.uint8).copy(), dtype=_C.uint8)
    if device != "cpu":
        byte_tensor = byte_tensor.to(device)
    return UntypedStorage._wrap_bytes(byte_tensor)


def _rebuild_tensor_v2(storage: Any, storage_offset: int, size: Any, stride: Any, requires_grad: bool,
                       backward_hooks: Any, dtype: Any = None, metadata: Any = None) -> Any:
    """torch._utils._rebuild_tensor_v2: a tensor of ``dtype`` viewing ``storage`` with that geometry."""
    from ._factories import empty

    t = empty(0, dtype=dtype, device=storage.device)
    t.set_(storage, storage_offset, list(size), list(stride))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_meta_tensor_no_storage(dtype: Any, size: Any, stride: Any, requires_grad: bool) -> Any:
    """torch._utils._rebuild_meta_tensor_no_storage."""
    from ._factories import empty_strided

    return empty_strided(list(size), list(stride), dtype=dtype, device="meta", requires_grad=requires_grad)


def _rebuild_wrapper_subclass(cls: type, dtype: Any, size: Any, stride: Any, storage_offset: int, layout: Any,
                              device: Any, requires_grad: bool) -> Any:
    """torch._utils._rebuild_wrapper_subclass: a data-less instance of ``cls`` with that metadata."""
    from ._tensor import Tensor

    return Tensor._make_wrapper_subclass(cls, size, strides=stride, dtype=dtype, storage_offset=storage_offset,
                                         layout=layout, device=device, requires_grad=requires_grad)


def _get_obj_state(obj: Any) -> Any:
    """torch._utils._get_obj_state: ``__getstate__()`` (Python 3.11: the ``__dict__``, or (dict, slots))."""
    getstate = getattr(obj, "__getstate__", None)
    if getstate is not None:
        return getstate()
    slots = copyreg._slotnames(obj.__class__)  # type: ignore[attr-defined]
    state = getattr(obj, "__dict__", None)
    if slots:
        return (state, {name: getattr(obj, name) for name in slots if hasattr(obj, name)})
    return state


def _set_obj_state(obj: Any, state: Any) -> Any:
    """torch._utils._set_obj_state: the ``__dict__`` and ``__slots__`` attributes of ``state`` set on ``obj``."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for k, v in (dict_state or {}).items():
        setattr(obj, k, v)
    for k, v in (slots_state or {}).items():
        setattr(obj, k, v)
    return obj


def _rebuild_from_type_v2(func: Callable, new_type: type, args: tuple, state: Any) -> Any:
    """torch._tensor._rebuild_from_type_v2: ``func(*args)`` as an instance of ``new_type`` with ``state``."""
    from ._tensor import Tensor

    ret = func(*args)
    if type(ret) is not new_type:
        ret.__class__ = new_type
    # As PyTorch's: a class's own __setstate__ restores the state; Tensor defines none.
    if getattr(type(ret), "__setstate__", None) is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
    else:
        ret = _set_obj_state(ret, state)
    return ret


def _is_wrapper(t: Any) -> bool:
    return _C._has_python_key(t)


def _reduce_ex_internal(t: Any) -> tuple[Callable, tuple]:
    """torch.Tensor._reduce_ex_internal for the SDK's layouts: (rebuild function, its arguments)."""
    if _is_wrapper(t):
        return (_rebuild_wrapper_subclass, (type(t), t.dtype, tuple(t.shape), tuple(t.stride()),
                                            t.storage_offset(), t.layout, t.device, t.requires_grad))
    if t.device.type == "meta":
        return (_rebuild_meta_tensor_no_storage, (t.dtype, tuple(t.shape), tuple(t.stride()), t.requires_grad))
    return (_rebuild_tensor_v2, (_storage_ref(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()),
                                 t.requires_grad, collections.OrderedDict(), t.dtype))


def reduce_ex(t: Any, proto: int) -> tuple[Callable, tuple]:
    """``Tensor.__reduce_ex__``: plain tensors without state take the short form, anything else
    ``_rebuild_from_type_v2`` with the class and its state (Note [Tensor pickling])."""
    from ._tensor import Tensor

    if _C._batched_level(t):
        _refuse_batched("pickle")
    state = _get_obj_state(t)
    if type(t) is Tensor and not state:
        return _reduce_ex_internal(t)
    func, args = _reduce_ex_internal(t)
    return (_rebuild_from_type_v2, (func, type(t), args, state))


def _refuse_batched(what: str) -> None:
    raise RuntimeError(f"vmap: cannot {what} a batched tensor inside vmap (it stands for a batch of tensors)")


def deepcopy(t: Any, memo: dict) -> Any:
    """``Tensor.__deepcopy__`` (Note [Tensor pickling])."""
    from .autograd.grad_mode import no_grad
    from ._tensor import Tensor

    if not t.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
            "moment.  If you were attempting to deepcopy a module, this may be because of a "
            "torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
    if id(t) in memo:
        return memo[id(t)]
    if _C._batched_level(t):
        _refuse_batched("deepcopy")
    with no_grad():
        if _is_wrapper(t) or t.device.type == "meta":
            new = t.clone()
            if type(new) is not type(t):
                raise RuntimeError(
                    "The default implementation of __deepcopy__() for wrapper subclasses only works for subclass "
                    "types that implement clone() and for which cloning returns another instance of the same "
                    "subclass. You should either properly implement clone() for your subclass or override "
                    "__deepcopy__() if it is intended behavior for clone() to return an instance of a "
                    "different type.")
        else:
            key = ("backend_sdk.storage", _C._storage_id(t))
            storage = memo.get(key)
            if storage is None:
                storage = t.untyped_storage().clone()
                memo[key] = storage
                memo.setdefault(id(memo), []).append(t)  # copy's keep-alive list: the id stays the source's
            from ._factories import empty

            new = empty(0, dtype=t.dtype, device=t.device)
            new.set_(storage, t.storage_offset(), list(t.shape), list(t.stride()))
            if type(t) is not Tensor:
                new.__class__ = type(t)
        if t.requires_grad:
            new.requires_grad_(True)
        if t.grad is not None:
            new.grad = copy.deepcopy(t.grad, memo)
        if type(t) is not Tensor:
            for slot in copyreg._slotnames(type(t)):  # type: ignore[attr-defined]
                if hasattr(t, slot):
                    setattr(new, slot, copy.deepcopy(getattr(t, slot), memo))
        state = getattr(t, "__dict__", None)
        if state:
            new.__dict__.update(copy.deepcopy(state, memo))
    memo[id(t)] = new
    return new


def _rebuild_parameter(data: Any, requires_grad: bool, backward_hooks: Any) -> Any:
    """torch._utils._rebuild_parameter."""
    from .nn.parameter import Parameter

    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Any, requires_grad: bool, backward_hooks: Any, state: Any) -> Any:
    """torch._utils._rebuild_parameter_with_state: a Parameter with its ``__dict__``/``__slots__`` state."""
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def reduce_parameter(p: Any) -> tuple[Callable, tuple]:
    """``Parameter.__reduce_ex__``, as PyTorch's: its data (a plain tensor), requires_grad and any state."""
    from ._tensor import Tensor

    data = p.detach()
    if type(data) is not Tensor and not _is_wrapper(data):
        data.__class__ = Tensor
    state = _get_obj_state(p)
    if not state:
        return (_rebuild_parameter, (data, p.requires_grad, collections.OrderedDict()))
    return (_rebuild_parameter_with_state, (data, p.requires_grad, collections.OrderedDict(), state))
