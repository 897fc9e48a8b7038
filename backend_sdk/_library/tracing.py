"""Tracing at the dispatcher: our analogue of ``torch.export`` / ``make_fx``.

``trace(fn, *example_inputs)`` runs ``fn`` on fake versions of the inputs under
``FakeTensorMode`` with a tracer attached: every operator call that reaches the
Fake fallback from user code (not the calls inside fake kernels or
composites) becomes one node. A custom operator is one opaque node. The
result, a ``GraphModule``, prints as Python code and re-runs the recorded
operators on new real inputs. Real tensors the function captures (closures,
globals) become constants of the graph.

Limits: control flow is specialised to the example (a branch on data raises
DataDependentOutputException; a branch on shapes follows the example's
shapes); Python-level computation on non-tensor values is baked in as
constants; outputs must be tensors or (nested) tuples/lists of tensors and
Python values.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import _C
from .._tensor import Tensor

__all__ = ["Graph", "GraphModule", "Node", "trace"]


class Node:
    """One graph node: a placeholder (an input), a constant tensor, or an operator call."""

    def __init__(self, kind: str, name: str, target: Any = None, args: tuple = (), kwargs: dict | None = None,
                 meta: Any = None) -> None:
        self.kind = kind  # "placeholder" | "constant" | "call" | "output"
        self.name = name
        self.target = target
        self.args = args
        self.kwargs = kwargs or {}
        self.meta = meta  # the fake value(s) computed while tracing

    def __repr__(self) -> str:
        if self.kind == "call":
            return f"{self.name} = {_format_target(self.target)}({_format_args(self.args, self.kwargs)})"
        return f"{self.name}: {self.kind}"


class _Ref:
    """A reference to a node's value (or an element of it) inside node arguments."""

    __slots__ = ("node", "index")

    def __init__(self, node: Node, index: int | None = None) -> None:
        self.node, self.index = node, index

    def __repr__(self) -> str:
        return self.node.name if self.index is None else f"{self.node.name}[{self.index}]"


def _format_target(target: Any) -> str:
    name = target.__name__
    ns, rest = name.split("::", 1)
    if "." not in rest:
        rest += ".default"
    return f"ops.{ns}.{rest}"


def _format_value(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        inner = ", ".join(_format_value(x) for x in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else (f"({inner})" if isinstance(v, tuple) else f"[{inner}]")
    if isinstance(v, _C.dtype):
        return repr(v)
    if isinstance(v, _C.device):
        return f"device('{v}')"
    return repr(v)


def _format_args(args: tuple, kwargs: dict) -> str:
    parts = [_format_value(a) for a in args] + [f"{k}={_format_value(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


class Graph:
    """The nodes of a traced function, in execution order."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._names: dict[str, int] = {}

    def unique_name(self, base: str) -> str:
        base = base.replace(".", "_")
        count = self._names.get(base, 0)
        self._names[base] = count + 1
        return base if count == 0 else f"{base}_{count}"

    def __str__(self) -> str:
        lines = ["graph():"]
        for n in self.nodes:
            if n.kind == "placeholder":
                lines.append(f"    %{n.name} : placeholder")
            elif n.kind == "constant":
                lines.append(f"    %{n.name} : constant {tuple(n.meta.shape)} {n.meta.dtype} {n.meta.device}")
            elif n.kind == "call":
                lines.append(f"    %{n.name} : call {_format_target(n.target)}({_format_args(n.args, n.kwargs)})")
            else:
                lines.append(f"    return {_format_value(n.args)}")
        return "\n".join(lines)

    __repr__ = __str__


class _Tracer:
    """Attached to the FakeTensorMode while tracing; the Fake fallback calls record/constant."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.env: dict[int, tuple[Any, _Ref]] = {}  # id(fake tensor) -> (tensor kept alive, ref)
        self.constants: dict[str, Tensor] = {}

    def bind(self, fake: Tensor, ref: _Ref) -> None:
        self.env[id(fake)] = (fake, ref)

    def ref(self, t: Tensor) -> _Ref | None:
        hit = self.env.get(id(t))
        return hit[1] if hit is not None and hit[0] is t else None

    def constant(self, real: Tensor, fake: Tensor) -> None:
        if self.ref(fake) is not None:
            return
        name = self.graph.unique_name("_tensor_constant")
        node = Node("constant", name, meta=fake)
        self.graph.nodes.append(node)
        self.constants[name] = real
        self.bind(fake, _Ref(node))

    def _lift(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            r = self.ref(obj)
            if r is None:
                raise RuntimeError(
                    f"trace: a fake tensor of shape {tuple(obj.shape)} was used that the trace did not produce "
                    f"(made by another FakeTensorMode?)"
                )
            return r
        if isinstance(obj, tuple):
            return tuple(self._lift(o) for o in obj)
        if isinstance(obj, list):
            return [self._lift(o) for o in obj]
        return obj

    def record(self, op: Any, args: tuple, kwargs: dict, result: Any) -> None:
        short = op.__name__.split("::", 1)[1].split(".", 1)[0]
        node = Node("call", self.graph.unique_name(short), op, self._lift(tuple(args)),
                    {k: self._lift(v) for k, v in kwargs.items()}, meta=result)
        self.graph.nodes.append(node)
        if isinstance(result, Tensor):
            self.bind(result, _Ref(node))
        elif isinstance(result, (tuple, list)):
            for i, r in enumerate(result):
                if isinstance(r, Tensor):
                    self.bind(r, _Ref(node, i))


class GraphModule:
    """A traced function: call it with real inputs; ``print(gm)`` / ``gm.code`` show it as Python."""

    def __init__(self, graph: Graph, placeholders: list[Node], output: Any, constants: dict[str, Tensor],
                 name: str) -> None:
        self.graph = graph
        self._placeholders = placeholders
        self._output = output
        self._constants = constants
        self._name = name

    @property
    def code(self) -> str:
        """The graph as the body of a Python function."""
        params = ", ".join(["self"] + [p.name for p in self._placeholders])
        lines = [f"def forward({params}):"]
        for n in self.graph.nodes:
            if n.kind == "constant":
                lines.append(f"    {n.name} = self.{n.name}")
            elif n.kind == "call":
                lines.append(f"    {n.name} = {_format_target(n.target)}({_format_args(n.args, n.kwargs)})")
        lines.append(f"    return {_format_value(self._output)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"GraphModule({self._name})\n{self.code}"

    __repr__ = __str__

    def __getattr__(self, name: str) -> Any:
        constants = self.__dict__.get("_constants", {})
        if name in constants:
            return constants[name]
        raise AttributeError(name)

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != len(self._placeholders):
            raise TypeError(
                f"{self._name}: the traced function takes {len(self._placeholders)} inputs, got {len(inputs)}"
            )
        values: dict[int, Any] = {}
        for p, v in zip(self._placeholders, inputs):
            values[id(p)] = v
        for name, c in self._constants.items():
            pass
        for n in self.graph.nodes:
            if n.kind == "constant":
                values[id(n)] = self._constants[n.name]
            elif n.kind == "call":
                values[id(n)] = n.target(*self._load(n.args, values), **{k: self._load(v, values) for k, v in n.kwargs.items()})
        return self._load(self._output, values)

    def _load(self, obj: Any, values: dict[int, Any]) -> Any:
        if isinstance(obj, _Ref):
            v = values[id(obj.node)]
            return v if obj.index is None else v[obj.index]
        if isinstance(obj, tuple):
            return tuple(self._load(o, values) for o in obj)
        if isinstance(obj, list):
            return [self._load(o, values) for o in obj]
        return obj

    forward = __call__


def trace(fn: Callable, *example_inputs: Any) -> GraphModule:
    """Traces ``fn(*example_inputs)`` at the dispatcher on fake tensors into a GraphModule.

    Tensor inputs become placeholders (other inputs are baked in as constants and
    must be passed again, unchanged, when the module is called); the function never
    sees real data.
    """
    from .._subclasses.fake_tensor import FakeTensorMode

    graph = Graph()
    tracer = _Tracer(graph)
    mode = FakeTensorMode()
    mode.tracer = tracer
    placeholders: list[Node] = []
    fake_inputs: list[Any] = []
    params = _param_names(fn, len(example_inputs))
    for pname, x in zip(params, example_inputs):
        node = Node("placeholder", graph.unique_name(pname))
        graph.nodes.append(node)
        placeholders.append(node)
        if isinstance(x, Tensor):
            fake = mode.from_tensor(x)
            node.meta = fake
            tracer.bind(fake, _Ref(node))
            fake_inputs.append(fake)
        else:
            node.meta = x
            fake_inputs.append(x)
    with mode:
        out = fn(*fake_inputs)
    output = tracer._lift(out)
    graph.nodes.append(Node("output", "output", args=output))
    return GraphModule(graph, placeholders, output, tracer.constants, getattr(fn, "__name__", "fn"))


def _param_names(fn: Callable, n: int) -> list[str]:
    import inspect

    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = [nm if nm.isidentifier() else f"arg{i}" for i, nm in enumerate(names)]
    return (names + [f"arg{i}" for i in range(len(names), n)])[:n]
