"""Recording operators into the graph: the hook the C++ autograd fallback calls.

See Note [Autograd fallback fast path] (csrc/backend_sdk/ops/detail/Autograd.h): the fallback
calls ``record(op, keyset, args, kwargs)`` only when grad mode is on and a
tensor argument requires grad. ``record`` runs the operator below Autograd with
grad mode off and, for its differentiable outputs, records a FormulaNode whose
backward is the operator's derivative formula (``_formulas.FORMULAS``).
"""
from __future__ import annotations

import ast
import weakref
from typing import Any, Callable

from .. import _C
from ._graph_api import saved_version
from .graph import Node, edge_of, _SECOND_BACKWARD

_FLOATING = None  # set lazily: dtypes that can require grad


def _floating() -> frozenset:
    global _FLOATING
    if _FLOATING is None:
        _FLOATING = frozenset([_C.float16, _C.bfloat16, _C.float32, _C.float64])
    return _FLOATING


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


_ENUM_DEFAULTS = {"Mean": 1, "Sum": 2, "None": None, "long": _C.int64, "contiguous_format": None}


def _parse_default(text: str | None) -> Any:
    if text is None:
        return None
    if text in _ENUM_DEFAULTS:
        return _ENUM_DEFAULTS[text]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class OpInfo:
    """What recording needs to know about one operator overload (cached per overload)."""

    __slots__ = ("qualname", "key", "names", "kwonly", "defaults", "tensor_args", "is_inplace", "is_out",
                 "mutable", "view_of", "returns_list", "num_returns", "formula", "node_name", "base")

    def __init__(self, op: Any) -> None:
        from ._formulas import FORMULAS

        self.qualname: str = op.__name__
        schema = _C._parse_schema(op._schema)
        ns, rest = self.qualname.split("::", 1)
        name, _, overload = rest.partition(".")
        self.base = f"{ns}::{name}"
        args = schema.arguments
        self.names = [a.name for a in args]
        self.kwonly = [a.kwarg_only for a in args]
        self.defaults = {a.name: _parse_default(a.default) for a in args if a.default is not None}
        self.tensor_args = [a.name for a in args if a.type in ("Tensor", "Tensor?", "Tensor[]", "Tensor?[]")]
        self.mutable = [a.name for a in args if a.is_write]
        self.is_out = any(a.is_write and a.kwarg_only for a in args)
        self.is_inplace = bool(self.mutable) and not self.is_out
        # A view operator: an input alias set that a return shares without writing ("Tensor(a) self -> Tensor(a)").
        self.view_of = None
        for r in schema.returns:
            if r.alias_info and not r.is_write:
                for a in args:
                    if a.alias_info and str(a.alias_info).split(" ")[0] == str(r.alias_info).split(" ")[0]:
                        self.view_of = a.name
        self.returns_list = len(schema.returns) == 1 and schema.returns[0].type == "Tensor[]"
        self.num_returns = len(schema.returns)
        functional = name[:-1] if self.is_inplace and name.endswith("_") else name
        key = f"{ns}::{functional}" + (f".{overload}" if overload else "")
        from ._formulas import INPLACE_KEYS

        key = INPLACE_KEYS.get(self.qualname, key)
        self.key = key
        self.formula = FORMULAS.get(key) or _cpp_formula(key)
        if self.formula is None and self.is_inplace:
            # The in-place overload's own entry (Note [In-place entries in the formula table]: the samplers,
            # bernoulli_.float is BernoulliBackward2), else the functional operator's.
            self.formula = (_cpp_formula(self.qualname) or FORMULAS.get(f"{ns}::{functional}")
                            or _cpp_formula(f"{ns}::{functional}"))
        stem = functional[: -len("_forward")] if functional.endswith("_forward") else functional  # NllLossBackward0
        camel = "".join(p[:1].upper() + p[1:] for p in stem.split("_") if p)
        from ._formulas import INPLACE_NODE_NAMES

        self.node_name = (INPLACE_NODE_NAMES.get(self.qualname)
                          or (self.formula.node_name if self.formula is not None else None) or f"{camel}Backward0")


def _cpp_formula(key: str) -> "Formula | None":
    """The functional overload's C++ formula (derivatives.def) as a Python Formula, or None.

    Operators with a C++ formula are recorded in C++ (Note [Derivative formula table]); their
    in-place variants come here (the leaf / view checks and CopySlices are Python's), and the node
    runs the C++ formula through _C._autograd_run_formula: a formula is written once.
    """
    spec = _C._autograd_formula_saves(key)
    if spec is None:
        return None
    from ._formulas import Formula

    names, tensor_names, saves, node_name = spec

    def run(c: "FormulaCtx") -> dict:
        args: list = []
        metas: list = []
        for n in names:
            v = c[n] if n in c._saved else c.args.get(n)
            if isinstance(v, TensorMeta):
                args.append(None)
                metas.append((list(v.shape), v.dtype, v.device))
            elif _is_tensor(v):
                args.append(v)
                metas.append((list(v.shape), v.dtype, v.device))
            else:
                args.append(v)
                metas.append(None)
        results = [o.unpack() if isinstance(o, SavedTensor) else None for o in c._outputs] if "result" in saves else []
        needs = [n in c.needs for n in tensor_names]
        return dict(zip(tensor_names, _C._autograd_run_formula(key, args, metas, c.grads, results, needs)))

    return Formula(run, saves, node_name)


_infos: dict[str, OpInfo] = {}


def op_info(op: Any) -> OpInfo:
    info = _infos.get(op.__name__)
    if info is None or info.qualname != op.__name__:
        info = _infos[op.__name__] = OpInfo(op)
    return info


class TensorMeta:
    """Shape, dtype and device of a tensor that a node does not keep."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, t: Any) -> None:
        self.shape, self.dtype, self.device = t.shape, t.dtype, t.device

    def dim(self) -> int:
        return len(self.shape)

    def size(self, d: int | None = None) -> Any:
        return self.shape if d is None else self.shape[d]

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def _type_name(t: Any) -> str:
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor"}
    dt = str(t.dtype).replace("backend_sdk.", "")
    dev = t.device.type
    prefix = "backend_sdk." if dev == "cpu" else f"backend_sdk.{dev}."
    return f"{prefix}{names.get(dt, dt)} [{', '.join(str(s) for s in t.shape)}]"


class SavedTensor:
    """A tensor a node keeps for backward, with the version it had when saved.

    A saved *output* of the node is kept as a detached alias (same storage and version counter)
    plus a weak reference to the node, so that output -> node -> saved output is no reference
    cycle: graphs are freed by reference counting, which frees device memory promptly. When
    unpacked with grad mode on (create_graph), a fresh alias is reconnected to the node.
    """

    __slots__ = ("tensor", "version", "output_of", "node_ref")

    def __init__(self, t: Any, output_of: Any = None, node: Any = None) -> None:
        self.version = saved_version(t)  # Note [Inference tensors]: refuses one
        if output_of is None and t._ag_fn is not None:
            output_of = (t._ag_fn.name(), t._ag_nr)
        self.output_of = output_of  # (node name, output_nr) of a non-leaf, for the error message
        self.node_ref = None
        if node is not None:
            from . import _detach_tensor

            t = _detach_tensor(t)
            self.node_ref = weakref.ref(node)
        self.tensor = t

    def unpack(self) -> Any:
        t = self.tensor
        if t._version != self.version:
            where = f", which is output {self.output_of[1]} of {self.output_of[0]}," if self.output_of else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{_type_name(t)}]{where} is at version {t._version}; expected version "
                f"{self.version} instead. Hint: the tensor was changed in place after it was saved for backward "
                "(e.g. by x.add_(...) or an out= operation); clone it before modifying it."
            )
        if self.node_ref is not None and _C._is_grad_enabled():
            node = self.node_ref()
            if node is not None:
                from . import _detach_tensor

                t = _detach_tensor(t)
                _C._set_history(t, node, self.output_of[1])
        return t


class FormulaCtx:
    """What a derivative formula sees: the forward arguments by name, the outputs and the output grads."""

    __slots__ = ("args", "_saved", "_outputs", "needs", "grads", "op")  # no back-reference to the node: no cycle

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    def __getitem__(self, name: str) -> Any:
        saved = self._saved.get(name)
        if saved is not None:
            if isinstance(saved, list):
                return [s.unpack() if s is not None else None for s in saved]
            return saved.unpack()
        return self.args[name]

    @property
    def result(self) -> Any:
        outs = [s.unpack() if isinstance(s, SavedTensor) else s for s in self._outputs]
        return outs[0] if len(outs) == 1 else outs

    @property
    def g(self) -> Any:
        return self.grads[0]


class _FreedTensor(SavedTensor):
    """What a released node keeps in place of a saved tensor: reading it is the second-backward error."""

    __slots__ = ()

    def __init__(self) -> None:  # noqa: D107 (nothing is kept)
        pass

    def unpack(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(_SECOND_BACKWARD)


_FREED = _FreedTensor()


class FormulaNode(Node):
    """A node whose backward is a derivative formula of the operator it recorded."""

    __slots__ = ("_name", "_op", "_formula", "_ctx", "_inputs", "_in_meta", "_out_meta", "_released")

    def name(self) -> str:
        return self._name

    @property
    def num_outputs(self) -> int:
        return len(self._out_meta)

    def release(self) -> None:
        # As PyTorch's: freeing marks what was saved, and only reading a freed tensor is the second-backward
        # error; a node that saved nothing can run again (a graph of such nodes backpropagates twice).
        self._released = True
        ctx = self._ctx
        if ctx is not None:
            ctx._saved = {k: [_FREED if isinstance(e, SavedTensor) else e for e in v] if isinstance(v, list)
                          else _FREED if isinstance(v, SavedTensor) else v for k, v in ctx._saved.items()}
            ctx._outputs = [_FREED if isinstance(o, SavedTensor) else o for o in ctx._outputs]

    def apply(self, grads: list[Any]) -> list[Any]:
        if self._formula is None:
            raise RuntimeError(
                f"the derivative for '{self._op}' is not implemented. It has no derivative formula in "
                "backend_sdk.autograd and is not a composite operator; register one with "
                "backend_sdk.library.register_autograd or wrap the computation in an autograd.Function."
            )
        ctx = self._ctx
        from .. import zeros

        ctx.grads = [
            g if g is not None else zeros(m.shape, dtype=m.dtype, device=m.device)
            for g, m in zip(grads, self._out_meta)
        ]
        result = self._formula(ctx)
        outs: list[Any] = []
        for (name, idx), meta, (nxt, _) in zip(self._inputs, self._in_meta, self.next_functions):
            if nxt is None:
                outs.append(None)
                continue
            g = result.get(name) if isinstance(result, dict) else None
            if g is not None and idx is not None:
                g = g[idx]
            if g is not None:
                g = _conform(g, meta)
            outs.append(g)
        return outs


def _conform(g: Any, meta: TensorMeta) -> Any:
    """Reduces a gradient to the input's shape (broadcasting) and casts it to its dtype and device."""
    from ._formulas import sum_to

    if not _is_tensor(g):
        return None
    if tuple(g.shape) != tuple(meta.shape):
        g = sum_to(g, meta.shape)
    if g.dtype != meta.dtype or g.device != meta.device:
        g = g.to(dtype=meta.dtype, device=meta.device)
    return g


_below_autograd: dict[int, Any] = {}  # key set (raw) -> its keys below Autograd

_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_AMBIGUOUS = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
              "moving both the view and the inplace either both inside the {0} block (if you don't want the inplace "
              "to be tracked) or both outside (if you want the inplace to be tracked).")
# By creation meta (Note [View creation meta]): 1 no_grad, 2 inference mode.
_VIEW_INPLACE = {
    1: "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
       + _AMBIGUOUS.format("no_grad"),
    2: "A view was created in inference mode and is being modified inplace in normal mode."
       + _AMBIGUOUS.format("inference_mode"),
}


# PyTorch's CreationMeta::MULTI_OUTPUT_NODE: the views unbind/split/chunk return share one node, which
# cannot be rebased for one of them.
_MULTI_VIEW_INPLACE = ("Output {0} of {1} is a view and is being modified inplace. This view is the output of a "
                       "function that returns multiple views. Such functions do not allow the output views to be "
                       "modified inplace. You should replace the inplace operation by an out-of-place one.")


_MULTI_OUTPUT_NODE = 3  # CreationMeta::MultiOutputNode (Note [Tensor lists in the formula table])


def _multi_view_message(view: Any) -> str:
    name = view._ag_fn.name()  # PyTorch names the function: "Unbind" for UnbindBackward0
    return _MULTI_VIEW_INPLACE.format(view._ag_nr, name[: name.rfind("Backward")] or name)


def _flat_tensors(value: Any) -> list:
    if _is_tensor(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if _is_tensor(v)]
    return []


def record(op: Any, keyset: Any, args: tuple, kwargs: dict) -> Any:
    """The autograd hook: runs `op` below Autograd and records its node (see the module docstring)."""
    info = op_info(op)  # not-differentiable operators run in C++ (Note [Operators that are not differentiable])
    bound: dict[str, Any] = dict(info.defaults)
    for name, v in zip(info.names, args):
        bound[name] = v
    bound.update(kwargs)
    if info.is_out:
        raise RuntimeError(
            f"{info.base.split('::', 1)[1]}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    # Differentiable inputs that require grad: (name, index-in-list or None).
    inputs: list[tuple[str, int | None]] = []
    in_tensors: list[Any] = []
    # Every floating-point tensor argument is an edge, (None, 0) when it does not require grad (as
    # PyTorch's next_functions); `needs` are the ones that do.
    floating = _floating()
    needs: set = set()
    for name in info.tensor_args:
        v = bound.get(name)
        if _is_tensor(v):
            if v.dtype in floating:
                inputs.append((name, None))
                in_tensors.append(v)
                if _C._requires_grad_flag(v):
                    needs.add(name)
        elif isinstance(v, (list, tuple)):
            for i, e in enumerate(v):
                if _is_tensor(e) and e.dtype in floating:
                    inputs.append((name, i))
                    in_tensors.append(e)
                    if _C._requires_grad_flag(e):
                        needs.add(name)
    formula = info.formula
    saves = formula.saves if formula is not None else ()
    self_t = bound.get(info.mutable[0]) if info.is_inplace else None
    pre_saved: dict[str, Any] = {}
    if info.is_inplace and _is_tensor(self_t):
        # PyTorch's check_inplace: the view checks first (Note [View creation meta]), then the leaf check.
        base = self_t._ag_base
        if base is None:
            base = _C._view_base(self_t)  # a view taken while its base took no part in autograd
            if base is not None:
                creation = _C._view_creation_meta(self_t)
                if creation == _MULTI_OUTPUT_NODE and self_t._ag_fn is not None:
                    raise RuntimeError(_multi_view_message(self_t))
                if creation in _VIEW_INPLACE and _C._requires_grad_flag(self_t):
                    try:
                        recorded = self_t._ag_fn is not None
                    except RuntimeError:  # its base was written since (Note [View grad_fn regeneration])
                        recorded = False
                    if recorded:  # a recorded view of such a view (PyTorch's wording)
                        name = self_t._ag_fn.name()
                        raise RuntimeError(f"Output {self_t._ag_nr} of {name[: name.rfind('Backward')] or name} is a "
                                           "view of a view which was created"
                                           + _VIEW_INPLACE[creation][len("A view was created"):])
                    raise RuntimeError(_VIEW_INPLACE[creation])
                self_t.__dict__["_ag_base"] = base
        if self_t.__dict__.get("_ag_multi_view") and self_t._ag_fn is not None:
            raise RuntimeError(_multi_view_message(self_t))
        if base is not None and base._ag_fn is None and _C._requires_grad_flag(base):
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        if base is None and _C._requires_grad_flag(self_t) and self_t._ag_fn is None:
            raise RuntimeError(_LEAF_INPLACE)
        # The formula sees self as it was before the write. Saved arguments that are the tensor written
        # (self, or `other` in x.mul_(x)) are cloned first, recorded as PyTorch's original_self is: the
        # clone carries the pre-write history, so double backward reaches it.
        clone = None
        for name in saves:
            v = bound.get(name)
            if _is_tensor(v) and v.data_ptr() == self_t.data_ptr() and v.shape == self_t.shape:
                if clone is None:
                    clone = self_t.clone()
                pre_saved[name] = clone if v is self_t else v.clone()
    # Edges before the forward: an in-place op replaces self's grad_fn.
    edges = [edge_of(t) for t in in_tensors]
    in_meta = [TensorMeta(t) for t in in_tensors]
    # self's geometry before the write: the in-place view operators (t_, squeeze_, ...) change it.
    self_meta = TensorMeta(self_t) if info.is_inplace and _is_tensor(self_t) else None
    prev = _C._exclude_autograd(True)  # below Autograd, grad mode unchanged (Note [Grad mode and the Autograd keys])
    try:
        raw = keyset.raw_repr
        below = _below_autograd.get(raw)
        if below is None:
            below = _below_autograd[raw] = keyset.keys_after("AutogradFunctionality")
        out = _C._redispatch(info.qualname, below, *args, **kwargs)
    finally:
        _C._exclude_autograd(prev)
    outs = list(out) if (info.num_returns > 1 or info.returns_list) else [out]
    inputs_ids = {id(t) for t in _flat_tensors(list(args) + list(kwargs.values()))}
    diff_outs: list[tuple[int, Any]] = []
    for i, o in enumerate(outs):
        if not _is_tensor(o) or o.dtype not in _floating():
            continue
        if id(o) in inputs_ids and not (info.is_inplace and o is self_t):
            continue  # an input returned unchanged keeps its own history
        diff_outs.append((i, o))
    if not diff_outs:
        return out
    node = FormulaNode(edges)
    node._name = info.node_name
    node._op = info.qualname
    node._formula = formula
    node._inputs = inputs
    node._in_meta = in_meta
    node._released = False
    node._out_meta = [TensorMeta(o) if _is_tensor(o) else None for o in outs]
    ctx = FormulaCtx()
    ctx.op = info.qualname
    ctx.needs = needs
    saved: dict[str, Any] = {}
    plain: dict[str, Any] = {}
    for name, v in bound.items():
        if name in pre_saved:
            saved[name] = SavedTensor(pre_saved[name])
        elif _is_tensor(v):
            if name in saves:
                saved[name] = SavedTensor(v)
            else:
                plain[name] = self_meta if v is self_t and self_meta is not None else TensorMeta(v)
        elif isinstance(v, (list, tuple)) and v and any(_is_tensor(e) for e in v):
            if name in saves:
                saved[name] = [SavedTensor(e) if _is_tensor(e) else None for e in v]
            else:
                plain[name] = [TensorMeta(e) if _is_tensor(e) else e for e in v]
        else:
            plain[name] = v
    ctx.args = plain
    ctx._saved = saved
    ctx._outputs = []
    node._ctx = ctx
    if "result" in saves:
        ctx._outputs = [SavedTensor(o, (info.node_name, i), node) if _is_tensor(o) else o for i, o in enumerate(outs)]
    if info.is_inplace and _is_tensor(self_t) and self_t._ag_base is not None:
        _rebase_view(self_t, node, inputs, info.mutable[0])
        return out
    for i, o in diff_outs:
        _C._set_history(o, node, i)
        if info.view_of is not None:
            src = bound.get(info.view_of)
            if _is_tensor(src):
                # The root base (PyTorch's): a view recorded in C++ keeps it in its AutogradMeta.
                root = src._ag_base if src._ag_base is not None else _C._view_base(src)
                o.__dict__["_ag_base"] = root if root is not None else src
                if len(diff_outs) > 1 or info.returns_list:
                    o.__dict__["_ag_multi_view"] = True
    return out


def _rebase_view(view: Any, node: Any, inputs: list, self_name: str) -> None:
    """An in-place op wrote into `view` of a base: the base's history becomes CopySlices (as in PyTorch).

    CopySlices receives the base's gradient, runs the op's node on the viewed region, writes the
    op's gradient for the old view value back into that region, and sends the rest to the base's
    previous history; the view's new grad_fn takes its region from the base's gradient.
    """
    from .. import empty_strided, zeros

    base = view._ag_base
    base_edge = edge_of(base)
    self_pos = next((k for k, (n, idx) in enumerate(inputs) if n == self_name and idx is None), None)
    others = [k for k in range(len(inputs)) if k != self_pos]
    vshape, vstride = list(view.shape), list(view.stride())
    voff = view.storage_offset() - base.storage_offset()
    bshape, bstride, bdtype, bdevice = list(base.shape), list(base.stride()), base.dtype, base.device

    def copy_slices(grads: list) -> list:
        g = grads[0]
        res = empty_strided(bshape, bstride, dtype=bdtype, device=bdevice)
        res.copy_(g)
        region = res.as_strided(vshape, vstride, voff)
        if _C._is_grad_enabled() and g.requires_grad:
            # create_graph: the region the op's node reads is taken from a buffer of its own. res is written
            # below, and the as_strided node of a region of res saved res: reading res through it in double
            # backward would be the version error.
            src = empty_strided(bshape, bstride, dtype=bdtype, device=bdevice)
            src.copy_(g)
            fn_grads = node.apply([src.as_strided(vshape, vstride, voff).clone()])
        else:
            fn_grads = node.apply([region.clone()])
        gs = fn_grads[self_pos] if self_pos is not None else None
        if gs is None:
            region.fill_(0)
        else:
            region.copy_(gs)
        return [res] + [fn_grads[k] for k in others]

    # Named as PyTorch's torch::autograd::CopySlices (and our backend_sdk::autograd::AccumulateGrad).
    cs = make_node("backend_sdk::autograd::CopySlices", [base_edge] + [node.next_functions[k] for k in others],
                   copy_slices, 1, node.release)

    def view_backward(grads: list) -> list:
        z = zeros(bshape, dtype=bdtype, device=bdevice)
        if list(z.stride()) != bstride:
            z = empty_strided(bshape, bstride, dtype=bdtype, device=bdevice).fill_(0)
        if _C._is_grad_enabled() and grads[0].requires_grad:  # create_graph: the write below must be recorded
            z = z + grads[0].sum() * 0
        z.as_strided(vshape, vstride, voff).copy_(grads[0])
        return [z]

    _C._set_history(base, cs, 0)
    _C._set_history(view, make_node("AsStridedBackward0", [(cs, 0)], view_backward, 1), 0)


def make_node(name: str, edges: list, fn: Callable, num_outputs: int, on_release: Callable | None = None) -> Node:
    """A node whose backward is fn(grads) -> one gradient per edge (autograd.Function, CopySlices).

    ``on_release`` runs when a backward without retain_graph is done with the node; it must not
    reference the node (that would be a reference cycle).
    """
    node = _CustomNode(edges)
    node._name, node._fn, node._n, node._on_release = name, fn, num_outputs, on_release
    return node


class _CustomNode(Node):
    __slots__ = ("_name", "_fn", "_n", "_on_release")

    def name(self) -> str:
        return self._name

    @property
    def num_outputs(self) -> int:
        return self._n

    def release(self) -> None:
        if self._on_release is not None:
            self._on_release()

    def apply(self, grads: list[Any]) -> list[Any]:
        return self._fn(grads)


_hook_installed = False


def install() -> None:
    """Installs ``record`` as the C++ fallback's hook (once per process)."""
    global _hook_installed
    if not _hook_installed:
        _C._set_autograd_hook(record)
        _hook_installed = True


__all__ = ["record", "install", "TensorMeta", "SavedTensor", "FormulaNode", "op_info", "make_node"]
_ = weakref  # kept for type checkers
