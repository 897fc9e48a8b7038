"""Schema inference from type hints, as ``torch.library.infer_schema``."""
from __future__ import annotations

import collections.abc
import inspect
import typing
from typing import Any, Callable, Iterable, Optional, Sequence

__all__ = ["infer_schema"]


class _TestTensor:
    """A name that exists in this module only: annotations are evaluated in the function's own globals, so one
    naming ``_TestTensor`` is "not a type" there (PyTorch keeps the same negative-test hook)."""


def _param_types() -> dict[Any, str]:
    """Python annotation -> schema type, PyTorch's table (Tensor, int, float, bool, str, Number, dtype, device)."""
    from .. import Tensor, _C
    from ..types import Number

    table: dict[Any, str] = {}
    # (python type, schema type, list variant, list of optional variant, optional list variant)
    rows = [
        (Tensor, "Tensor", True, True, False),
        (int, "SymInt", True, False, True),
        (float, "float", True, False, True),
        (bool, "bool", True, False, True),
        (str, "str", False, False, False),
        (Number, "Scalar", True, False, False),
        (_C.dtype, "ScalarType", False, False, False),
        (_C.device, "Device", False, False, False),
    ]
    for py_type, schema_type, has_list, has_list_of_optional, has_optional_list in rows:
        table[py_type] = schema_type
        table[Optional[py_type]] = f"{schema_type}?"
        sequences = (typing.Sequence, typing.List, list, Sequence, collections.abc.Sequence)
        if has_list:
            for seq in sequences:
                table[seq[py_type]] = f"{schema_type}[]"
        if has_list_of_optional:
            for seq in sequences:
                table[seq[Optional[py_type]]] = f"{schema_type}?[]"
        if has_optional_list:
            for seq in sequences:
                table[Optional[seq[py_type]]] = f"{schema_type}[]?"
    return table


def _return_types() -> dict[Any, str]:
    from .. import Tensor
    from ..types import Number

    table: dict[Any, str] = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", Number: "Scalar"}
    for seq in (typing.List, list, typing.Sequence, Sequence, collections.abc.Sequence):
        table[seq[Tensor]] = "Tensor[]"
    # Tuple[Tensor, ...] is refused, as PyTorch 2.13 refuses it (a list of tensors is List[Tensor]).
    return table


def _resolve(annotation: Any, fn: Callable) -> Any:
    """Evaluates string annotations (``from __future__ import annotations``) in the function's globals."""
    if not isinstance(annotation, str):
        return _resolve_args(annotation, fn)
    import backend_sdk

    namespace = dict(getattr(fn, "__globals__", {}))
    namespace.setdefault("backend_sdk", backend_sdk)
    namespace.setdefault("typing", typing)
    for name in ("Optional", "Sequence", "List", "Tuple", "Union"):
        namespace.setdefault(name, getattr(typing, name))
    namespace.setdefault("Tensor", backend_sdk.Tensor)
    try:
        value = eval(annotation, namespace)  # noqa: S307 (annotations are code by definition)
        # A quoted annotation under `from __future__ import annotations` is a string of a string.
        return _resolve(value, fn) if isinstance(value, str) else _resolve_args(value, fn)
    except NameError as e:
        raise ValueError(
            f"infer_schema(func): Unsupported type annotation {annotation}. It is not a type. ({e})."
        ) from None
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"infer_schema: could not evaluate the annotation {annotation!r}: {e}") from None


def _resolve_args(annotation: Any, fn: Callable) -> Any:
    """Resolves string arguments inside a generic (``list["MyTensor"]``, ``Optional["Tensor"]``), as PyTorch does."""
    args = typing.get_args(annotation)
    if not args or not any(isinstance(a, (str, typing.ForwardRef)) for a in args):
        return annotation
    resolved = tuple(_resolve(a.__forward_arg__ if isinstance(a, typing.ForwardRef) else a, fn) for a in args)
    if hasattr(annotation, "copy_with"):  # typing.List[...], typing.Optional[...]
        return annotation.copy_with(resolved)
    import types

    return types.GenericAlias(typing.get_origin(annotation), resolved)


def _default_text(value: Any) -> str:
    from .. import _C

    if value is None:
        return "None"
    if isinstance(value, _C.dtype):  # backend_sdk.float32 -> float32, as PyTorch writes torch.float32
        text = str(value)
        return text.split(".", 1)[1] if "." in text else text
    if isinstance(value, _C.device):
        return '"' + str(value) + '"'
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def infer_schema(
    prototype_function: Callable,
    /,
    *,
    mutates_args: str | Iterable[str],
    op_name: str | None = None,
    tags: Any = None,
) -> str:
    """The schema of ``prototype_function`` from its type hints, e.g. ``(Tensor x) -> Tensor``.

    Parameters annotated Tensor, int, float, bool, str, ``backend_sdk.types.Number``, dtype,
    device, sequences of these and Optional of these become schema arguments (int is SymInt,
    Number is Scalar, as in PyTorch); the return may be None, Tensor, int, float, bool, Number,
    a list of Tensors or a tuple of those (not ``Tuple[Tensor, ...]``, as PyTorch). Parameters named in
    ``mutates_args`` become ``Tensor(aN!)``; ``"unknown"`` marks every Tensor parameter
    mutable. With ``op_name`` the schema is prefixed with it. ``tags`` (``Tag.inplace`` or
    ``Tag.out``): the returns alias the first argument (``(Tensor(a!) x, ...) -> Tensor(a!)``)
    or the keyword-only mutated tensors in order (``(..., *, Tensor(a!) out) -> Tensor(a!)``).
    """
    from .._tags import Tag, normalize_tags

    sig = inspect.signature(prototype_function)
    tag_set = normalize_tags(tags, "infer_schema")
    inplace, out_tag = Tag.inplace in tag_set, Tag.out in tag_set

    def error_fn(what: str) -> typing.NoReturn:
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if inplace and out_tag:
        raise AssertionError("backend_sdk.Tag.inplace and backend_sdk.Tag.out are mutually exclusive")
    params_table = _param_types()
    if isinstance(mutates_args, str):
        if mutates_args != "unknown":
            raise ValueError(
                "mutates_args must be 'unknown' or an iterable of parameter names; got the string "
                f"{mutates_args!r} (did you mean ({mutates_args!r},)?)"
            )
    else:
        mutates_args = tuple(mutates_args)
    params: list[str] = []
    seen: set[str] = set()
    seen_kwarg_only = False
    returned_aliases: list[str] = []  # alias sets of the arguments a tagged operator returns, in order
    out_names: list[str] = []
    first_positional: tuple[str, str, str] | None = None  # (name, schema type, alias) of the first positional
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            error_fn(f"Parameter {name}: we do not support positional-only args, varargs, or varkwargs.")
        if param.annotation is inspect.Parameter.empty:
            error_fn(f"Parameter {name} must have a type annotation.")
        annotation = _resolve(param.annotation, prototype_function)
        try:
            schema_type = params_table.get(annotation)
        except TypeError:  # unhashable annotation
            schema_type = None
        if schema_type is None:
            error_fn(
                f"Parameter {name} has unsupported type {annotation}. The valid types are: "
                f"Tensor, int, float, bool, str, Number, dtype, device, Sequence/List of Tensor/int/float/bool/Number, "
                f"and Optional of these."
            )
        kwarg_only = param.kind == inspect.Parameter.KEYWORD_ONLY
        mutated = mutates_args == "unknown" or name in mutates_args
        if first_positional is None and not kwarg_only:
            first_positional = (name, schema_type, f"a{idx}")
        if mutated:
            if not schema_type.startswith("Tensor"):
                if mutates_args != "unknown":
                    error_fn(
                        f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors "
                        f"can be mutated"
                    )
            else:
                alias = f"a{idx}"
                if out_tag:
                    # PyTorch's rules for Tag.out (torch/_library/infer_schema.py, 2.13), in its words.
                    if not kwarg_only:
                        error_fn("backend_sdk.Tag.out requires mutable arguments to be keyword-only.")
                    if schema_type != "Tensor":
                        error_fn("backend_sdk.Tag.out only supports mutable keyword-only Tensor arguments.")
                    returned_aliases.append(alias)
                    out_names.append(name)
                schema_type = f"Tensor({alias}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        if kwarg_only and not seen_kwarg_only:
            params.append("*")
            seen_kwarg_only = True
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            from .. import _C

            if param.default is None and not schema_type.endswith("?"):
                error_fn(f"Parameter {name} defaults to None but its type is not Optional[...]: annotate it Optional.")
            if param.default is not None and not isinstance(param.default, (int, float, bool, str, _C.dtype, _C.device)):
                error_fn(
                    f"Parameter {name} has an unsupported default value {param.default!r} (we only support "
                    f"int, float, bool, str, dtype, device, None)."
                )
            params.append(f"{schema_type} {name}={_default_text(param.default)}")
    if mutates_args != "unknown":
        not_seen = [a for a in mutates_args if a not in seen]
        if not_seen:
            error_fn(
                f"{set(not_seen)} in mutates_args were not found in the custom op's signature. "
                f"mutates_args should contain the names of all args that the custom op mutates."
            )
    if inplace:
        if first_positional is None:
            error_fn("backend_sdk.Tag.inplace requires a positional Tensor argument.")
        first_name, first_type, first_alias = first_positional
        if first_type != "Tensor":
            error_fn("backend_sdk.Tag.inplace requires the first positional argument to be a Tensor.")
        if isinstance(mutates_args, str) or set(mutates_args) != {first_name}:
            error_fn(
                "backend_sdk.Tag.inplace requires mutates_args to contain exactly "
                f"the first positional argument, got {mutates_args}."
            )
    if out_tag and not returned_aliases:
        error_fn("backend_sdk.Tag.out requires at least one mutable keyword-only Tensor argument.")
    ret = _parse_return(_resolve(sig.return_annotation, prototype_function), error_fn)
    if out_tag:
        expected = "(" + ", ".join(["Tensor"] * len(returned_aliases)) + ")" if len(returned_aliases) > 1 else "Tensor"
        if ret != expected:
            error_fn(
                "backend_sdk.Tag.out requires the return annotation to match the "
                f"mutable keyword-only Tensor arguments {tuple(out_names)}."
            )
        rets = [f"Tensor({a}!)" for a in returned_aliases]
        ret = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
    elif inplace:
        if ret != "Tensor":
            error_fn("backend_sdk.Tag.inplace requires the return annotation to be backend_sdk.Tensor.")
        ret = f"Tensor({first_alias}!)"
    prefix = op_name or ""
    return f"{prefix}({', '.join(params)}) -> {ret}"


def _parse_return(annotation: Any, error_fn: Callable[[str], typing.NoReturn]) -> str:
    if annotation is None or annotation is type(None):
        return "()"
    if annotation is inspect.Signature.empty:
        error_fn("No return type annotation was provided. Please add one (use None if nothing is returned).")
    table = _return_types()
    valid = ("None, Tensor, int, float, bool, Number, List[Tensor], or a tuple of "
             "Tensor/int/float/bool/Number/List[Tensor] (Tuple[Tensor, ...] is not one: use List[Tensor]).")
    origin = typing.get_origin(annotation)
    if origin is not tuple:
        try:
            ret = table.get(annotation)
        except TypeError:
            ret = None
        if ret is None:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: {valid}")
        return ret
    parts = []
    for arg in typing.get_args(annotation):
        try:
            ret = table.get(arg)
        except TypeError:
            ret = None
        if ret is None or arg is Ellipsis:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: {valid}")
        parts.append(ret)
    return "(" + ", ".join(parts) + ")"


def tuple_to_list(tuple_type: Any) -> Any:
    """The ``list[...]`` annotation to suggest for a ``Tuple[...]`` one, as PyTorch's (``Tuple[int, float]`` ->
    ``list[int | float]``, ``Tuple[T, ...]`` -> ``list[T]``, a bare ``Tuple`` -> ``list``)."""
    args = [a for a in getattr(tuple_type, "__args__", None) or () if a is not Ellipsis]
    if not args:
        return list
    if all(a == args[0] for a in args):
        return list[args[0]]
    return list[typing.Union[tuple(args)]]
