"""Tests for the function-schema parser (csrc/backend_sdk/dispatch/FunctionSchema.cpp),
exposed as backend_sdk._C._parse_schema / FunctionSchema / Argument.

The grammar and the canonical printed form are PyTorch's (native_functions.yaml
`func:` lines); see Note [Schema text is canonical] in FunctionSchema.h.
"""

import pytest

from backend_sdk import _C

parse = _C._parse_schema


# Real schemas from PyTorch's aten/src/ATen/native/native_functions.yaml, in the
# canonical spacing PyTorch prints. Each must round-trip exactly.
NATIVE_SCHEMAS = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "sum.dim_DimnameList(Tensor self, Dimname[1] dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values)"
    " -> (Tensor(a!) values, Tensor(b!) indices)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,"
    " bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None,"
    " Device? device=None, bool? pin_memory=None) -> Tensor",
    "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,"
    " bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "alias(Tensor(a) self) -> Tensor(a)",
    "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
    "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var,"
    " bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean,"
    " Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps,"
    " bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)"
    " -> (Tensor, Tensor)",
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "_foreach_add.List(Tensor[] self, Tensor[] other, *, Scalar alpha=1) -> Tensor[]",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    "_foreach_add.List_out(Tensor[] self, Tensor[] other, *, Scalar alpha=1, Tensor(a!)[] out) -> ()",
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0,"
    " SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
    "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,"
    " int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None,"
    " float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps)"
    " -> (Tensor, Tensor, Tensor)",
    "mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor",
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False,"
    " MemoryFormat? memory_format=None) -> Tensor(a)",
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None,"
    " bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
    "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
    "normal.Tensor_float(Tensor mean, float std=1, *, Generator? generator=None) -> Tensor",
    "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None,"
    " Device? device=None, bool? pin_memory=None) -> Tensor",
    "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None,"
    " Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True)"
    " -> (Tensor values, Tensor indices)",
    "aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max)"
    " -> (Tensor(a!) min, Tensor(b!) max)",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
    "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
    "cdist(Tensor x1, Tensor x2, float p=2, int? compute_mode=None) -> Tensor",
    "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool",
    "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,"
    " ScalarType? dtype=None) -> Tensor",
    "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *,"
    " bool include_self=True) -> Tensor",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners,"
    " float[]? scale_factors) -> Tensor",
    "set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)",
    "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
    "resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)",
    "rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!)",
    "_unpack_dual(Tensor(a) dual, int level) -> (Tensor(a) primal, Tensor tangent)",
    "_backward(Tensor self, Tensor[] inputs, Tensor? gradient=None, bool? retain_graph=None,"
    " bool create_graph=False) -> ()",
    "_cudnn_init_dropout_state(float dropout, bool train, int dropout_seed, *, ScalarType? dtype=None,"
    " Layout? layout=None, Device? device=None, bool? pin_memory=False) -> Tensor",
    "_assert_async.msg(Tensor self, str assert_msg) -> ()",
    "_local_scalar_dense(Tensor self) -> Scalar",
    "is_nonzero(Tensor self) -> bool",
    "size.int(Tensor self, int dim) -> int",
]


def _ids(schemas):
    return [s.split("(", 1)[0] for s in schemas]


def _spaced_out(text):
    """The same schema with extra whitespace (incl. newlines) around punctuation."""
    out = []
    quote = None  # inside a string literal: its quote character
    escaped = False
    for ch in text:
        if quote is not None:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch in "()[],?*=!|":
            out.append(f" \n {ch}\t ")
        else:
            out.append(ch)
    return "".join(out)


def _squeezed(text):
    """The same schema with the optional whitespace removed."""
    return text.replace(", ", ",").replace(" -> ", "->")


# ---------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", NATIVE_SCHEMAS, ids=_ids(NATIVE_SCHEMAS))
def test_native_schema_round_trips(text):
    s = parse(text)
    assert str(s) == text
    assert str(parse(str(s))) == text
    assert parse(str(s)) == s


@pytest.mark.parametrize("text", NATIVE_SCHEMAS, ids=_ids(NATIVE_SCHEMAS))
def test_native_schema_with_namespace(text):
    s = parse("aten::" + text)
    assert s.ns == "aten"
    assert str(s) == "aten::" + text
    assert s.qualified_name == "aten::" + text.split("(", 1)[0]
    assert s != parse(text)  # the namespace is part of the identity


@pytest.mark.parametrize("text", NATIVE_SCHEMAS, ids=_ids(NATIVE_SCHEMAS))
def test_native_schema_is_whitespace_insensitive(text):
    assert str(parse(_spaced_out(text))) == text
    assert str(parse(_squeezed(text))) == text


@pytest.mark.parametrize("text", NATIVE_SCHEMAS, ids=_ids(NATIVE_SCHEMAS))
def test_native_schema_structure(text):
    s = parse(text)
    head, _, rest = text.partition("(")
    arg_text = rest.rsplit(") -> ", 1)[0]
    items = [a for a in arg_text.split(", ") if a] if arg_text else []
    declared = [a for a in items if a != "*"]
    assert len(s.arguments) == len(declared)
    assert [a.name for a in s.arguments] == [d.rsplit("=", 1)[0].split(" ")[-1] for d in declared]
    n_pos = items.index("*") if "*" in items else len(items)
    assert s.num_positional == n_pos
    assert [a.kwarg_only for a in s.arguments] == [i >= n_pos for i in range(len(s.arguments))]
    assert s.is_mutable == ("!)" in arg_text)


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix, ns, name, overload, qualified",
    [
        ("aten::add.Tensor", "aten", "add", "Tensor", "aten::add.Tensor"),
        ("add.Tensor", "", "add", "Tensor", "add.Tensor"),
        ("aten::add", "aten", "add", "", "aten::add"),
        ("add", "", "add", "", "add"),
        ("my_ns::__and__.Scalar_out", "my_ns", "__and__", "Scalar_out", "my_ns::__and__.Scalar_out"),
        ("  aten :: add . Tensor ", "aten", "add", "Tensor", "aten::add.Tensor"),
    ],
)
def test_names(prefix, ns, name, overload, qualified):
    s = parse(prefix + "(Tensor self) -> Tensor")
    assert (s.ns, s.name, s.overload_name, s.qualified_name) == (ns, name, overload, qualified)
    assert str(s) == qualified + "(Tensor self) -> Tensor"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("aten::add.Tensor", ("aten", "add", "Tensor")),
        ("add.out", ("", "add", "out")),
        ("aten::relu", ("aten", "relu", "")),
        ("relu", ("", "relu", "")),
    ],
)
def test_parse_operator_name(text, expected):
    assert tuple(_C._parse_operator_name(text)) == expected


@pytest.mark.parametrize(
    "text, phrase, pos",
    [
        ("", "expected an operator name", 0),
        ("aten::", "expected an operator name after '::'", 6),
        ("aten::add.", "expected an overload name after '.'", 10),
        ("aten::add(Tensor x) -> Tensor", "unexpected trailing text", 9),
    ],
)
def test_parse_operator_name_errors(text, phrase, pos):
    with pytest.raises(ValueError) as info:
        _C._parse_operator_name(text)
    lines = str(info.value).split("\n")
    assert lines[0] == f"Invalid operator name '{text}': {phrase} at position {pos}"
    assert lines[2] == " " * (4 + pos) + "^"


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------

TYPES = [
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout", "Device",
    "MemoryFormat", "Generator", "Storage", "Dimname", "Any", "NoneType",
    "int[]", "int[2]", "Tensor?", "Tensor?[]", "int[]?", "SymInt[1]?", "float[]", "bool[3]", "str[]",
    "Tensor[]", "SymInt[]", "Scalar[]", "Dimname[]?", "int?[]", "int[0]", "int[][]",
]


@pytest.mark.parametrize("type_text", TYPES)
def test_type_strings(type_text):
    s = parse(f"foo({type_text} x) -> {type_text}")
    assert s.arguments[0].type == type_text
    assert s.returns[0].type == type_text
    assert s.returns[0].name == ""
    assert str(s) == f"foo({type_text} x) -> {type_text}"


@pytest.mark.parametrize(
    "written, canonical",
    [("int [ 2 ] ?", "int[2]?"), ("Tensor ? [ ]", "Tensor?[]"), ("SymInt[ 1 ]", "SymInt[1]")],
)
def test_type_suffix_spacing(written, canonical):
    assert parse(f"foo({written} x) -> ()").arguments[0].type == canonical


def test_fixed_size():
    args = parse("foo(int[2] a, int[3]? b, int[] c, int d) -> ()").arguments
    assert [a.fixed_size for a in args] == [2, 3, None, None]


# ---------------------------------------------------------------------------
# Alias annotations
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decl, type_text, alias, is_write",
    [
        ("Tensor(a) x", "Tensor", "a", False),
        ("Tensor(a!) x", "Tensor", "a!", True),
        ("Tensor(a -> *) x", "Tensor", "a -> *", False),
        ("Tensor(a!)[] x", "Tensor[]", "a!", True),
        ("Tensor(b!)? x", "Tensor?", "b!", True),
        ("Tensor(a|b) x", "Tensor", "a|b", False),
        ("Tensor(a! -> a|b) x", "Tensor", "a! -> a|b", True),
        ("Tensor x", "Tensor", None, False),
    ],
)
def test_alias_annotations(decl, type_text, alias, is_write):
    s = parse(f"foo({decl}) -> ()")
    arg = s.arguments[0]
    assert arg.type == type_text
    assert arg.alias_info == alias
    assert arg.is_write is is_write
    assert str(arg) == decl
    assert str(s) == f"foo({decl}) -> ()"
    assert s.is_mutable is is_write


def test_alias_annotation_spacing_is_canonicalised():
    s = parse("foo(Tensor ( a ! ) x, Tensor(b->*) y) -> Tensor ( a ! )")
    assert str(s) == "foo(Tensor(a!) x, Tensor(b -> *) y) -> Tensor(a!)"
    assert s.returns[0].alias_info == "a!"


# ---------------------------------------------------------------------------
# Defaults
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "decl, default",
    [
        ("int x=1", "1"),
        ("int x=-1", "-1"),
        ("SymInt x=0", "0"),
        ("float x=1e-05", "1e-05"),
        ("float x=1e-5", "1e-5"),  # kept as written
        ("float x=0.5", "0.5"),
        ("float x=2", "2"),
        ("float x=inf", "inf"),
        ("float x=-inf", "-inf"),
        ("float? x=None", "None"),
        ("bool x=True", "True"),
        ("bool x=False", "False"),
        ("Tensor? x=None", "None"),
        ("int[] x=[0,1]", "[0, 1]"),
        ("int[] x=[ 0 , 1 , -2 ]", "[0, 1, -2]"),
        ("int[] x=[]", "[]"),
        ("int[2] x=1", "1"),
        ("float[] x=[0.5, 1]", "[0.5, 1]"),
        ("int[1]? x=None", "None"),
        ("str x=\"mean\"", "\"mean\""),
        ("str x='mean'", "\"mean\""),
        ("str x='a\"b'", "\"a\\\"b\""),
        ("str? x=None", "None"),
        ("Scalar x=1", "1"),
        ("Scalar x=0.5", "0.5"),
        ("Scalar x=True", "True"),
        ("MemoryFormat x=contiguous_format", "contiguous_format"),
        ("MemoryFormat? x=channels_last", "channels_last"),
        ("ScalarType x=long", "long"),
        ("ScalarType? x=float", "float"),
        ("Layout x=strided", "strided"),
        ("int x=Mean", "Mean"),
        ("Device? x=\"cpu\"", "\"cpu\""),
        ("Generator? x=None", "None"),
        ("Tensor[] x=[]", "[]"),
        ("Tensor?[] x=[None, None]", "[None, None]"),
        ("Any x=1", "1"),
    ],
)
def test_defaults(decl, default):
    s = parse(f"foo({decl}) -> ()")
    arg = s.arguments[0]
    assert arg.name == "x"
    assert arg.default == default
    expected = decl.split("=", 1)[0] + "=" + default
    assert str(arg) == expected
    assert str(s) == f"foo({expected}) -> ()"
    assert str(parse(str(s))) == str(s)


def test_no_default_is_none():
    args = parse("foo(Tensor a, int b=0) -> ()").arguments
    assert args[0].default is None
    assert args[1].default == "0"


def test_string_default_is_requoted_like_pytorch():
    s = parse("gelu(Tensor self, *, str approximate='none') -> Tensor")
    assert s.arguments[1].default == '"none"'
    assert str(s) == 'gelu(Tensor self, *, str approximate="none") -> Tensor'
    assert str(parse(str(s))) == str(s)


# ---------------------------------------------------------------------------
# Returns, kwarg-only, varargs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written, canonical, names, types",
    [
        ("Tensor", "Tensor", [""], ["Tensor"]),
        ("(Tensor, Tensor)", "(Tensor, Tensor)", ["", ""], ["Tensor", "Tensor"]),
        ("(Tensor values, Tensor indices)", "(Tensor values, Tensor indices)", ["values", "indices"],
         ["Tensor", "Tensor"]),
        ("()", "()", [], []),
        ("( )", "()", [], []),
        ("(Tensor)", "Tensor", [""], ["Tensor"]),  # one return prints without parentheses
        ("(Tensor out)", "Tensor out", ["out"], ["Tensor"]),
        ("Tensor out", "Tensor out", ["out"], ["Tensor"]),
        ("int[]", "int[]", [""], ["int[]"]),
        ("(Tensor(a!) a, Tensor(b!)[] b)", "(Tensor(a!) a, Tensor(b!)[] b)", ["a", "b"],
         ["Tensor", "Tensor[]"]),
    ],
)
def test_returns(written, canonical, names, types):
    s = parse(f"foo(Tensor(a!) a, Tensor(b!)[] b) -> {written}")
    assert [r.name for r in s.returns] == names
    assert [r.type for r in s.returns] == types
    assert all(r.default is None and not r.kwarg_only for r in s.returns)
    assert str(s) == f"foo(Tensor(a!) a, Tensor(b!)[] b) -> {canonical}"


def test_kwarg_only_and_positional():
    s = parse("foo(Tensor a, int b=1, *, int c, bool d=False) -> ()")
    assert [a.kwarg_only for a in s.arguments] == [False, False, True, True]
    assert s.num_positional == 2
    # A kwarg-only argument without default may follow one with a default.
    assert str(s) == "foo(Tensor a, int b=1, *, int c, bool d=False) -> ()"


def test_only_kwarg_only():
    s = parse("foo(*, Tensor(a!) out) -> Tensor(a!)")
    assert s.num_positional == 0
    assert s.arguments[0].kwarg_only
    assert str(s) == "foo(*, Tensor(a!) out) -> Tensor(a!)"


def test_empty_arguments():
    s = parse("aten::_use_cudnn_rnn_flatten_weight() -> bool")
    assert s.arguments == []
    assert s.num_positional == 0
    assert str(s) == "aten::_use_cudnn_rnn_flatten_weight() -> bool"


@pytest.mark.parametrize(
    "text, vararg, varret",
    [
        ("prim::foo(Tensor x, ...) -> ...", True, True),
        ("prim::foo(...) -> (Tensor, ...)", True, True),
        ("prim::foo(Tensor x) -> (Tensor, ...)", False, True),
        ("prim::foo(...) -> Tensor", True, False),
    ],
)
def test_varargs(text, vararg, varret):
    s = parse(text)
    assert (s.is_vararg, s.is_varret) == (vararg, varret)
    assert str(s) == text


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, is_mutable, is_out_fn, is_inplace, mutable_indices",
    [
        ("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", False, False, False, []),
        ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", True, False, True, [0]),
        ("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
         True, True, False, [3]),
        ("aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max)"
         " -> (Tensor(a!) min, Tensor(b!) max)", True, True, False, [3, 4]),
        ("_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()", True, False, False, [0]),
        ("_foreach_add.List_out(Tensor[] self, Tensor[] other, *, Scalar alpha=1, Tensor(a!)[] out) -> ()",
         True, True, False, [3]),
        ("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", False, False, False, []),
        # mutable first argument, but returns nothing: not the in-place convention
        ("set_data(Tensor(a!) self, Tensor new_data) -> ()", True, False, False, [0]),
        # mutable, positional: not an out= function
        ("_sobol_engine_ff_(Tensor(a!) self, int n, Tensor sobolstate, int dimension, int num_generated)"
         " -> Tensor(a!)", True, False, True, [0]),
        # the return aliases a different set than self
        ("foo_(Tensor(a!) self, Tensor(b!) other) -> Tensor(b!)", True, False, False, [0, 1]),
        # first argument not named self
        ("foo_(Tensor(a!) x) -> Tensor(a!)", True, False, False, [0]),
    ],
)
def test_mutability_queries(text, is_mutable, is_out_fn, is_inplace, mutable_indices):
    s = parse(text)
    assert s.is_mutable is is_mutable
    assert s.is_out_fn is is_out_fn
    assert s.is_inplace is is_inplace
    assert s.mutable_argument_indices == mutable_indices
    assert [s.is_mutable_arg(i) for i in range(len(s.arguments))] == [
        i in mutable_indices for i in range(len(s.arguments))
    ]


def test_is_mutable_arg_out_of_range():
    s = parse("view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
    with pytest.raises(IndexError):
        s.is_mutable_arg(2)


def test_argument_index():
    s = parse("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert s.argument_index("self") == 0
    assert s.argument_index("alpha") == 2
    assert s.argument_index("out") == 3
    assert s.argument_index("missing") is None


def test_argument_accessors():
    s = parse("aten::foo(Tensor(a!) self, int[2] k=1, *, ScalarType? dtype=None) -> Tensor(a!)")
    a, k, d = s.arguments
    assert (a.name, a.type, a.default, a.kwarg_only, a.alias_info, a.is_write) == (
        "self", "Tensor", None, False, "a!", True)
    assert (k.name, k.type, k.default, k.kwarg_only, k.alias_info, k.is_write) == (
        "k", "int[2]", "1", False, None, False)
    assert (d.name, d.type, d.default, d.kwarg_only, d.alias_info, d.is_write) == (
        "dtype", "ScalarType?", "None", True, None, False)
    (r,) = s.returns
    assert (r.name, r.type, r.alias_info, r.is_write) == ("", "Tensor", "a!", True)
    assert str(k) == "int[2] k=1"
    assert repr(k) == "Argument('int[2] k=1')"


def test_repr_eq_hash():
    text = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    a, b = parse(text), parse(text.replace(", ", " ,  "))
    assert repr(a) == f"FunctionSchema('{text}')"
    assert a == b and hash(a) == hash(b)
    assert a != parse("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=2) -> Tensor")
    assert a != parse("aten::add.Tensor(Tensor self, Tensor other, Scalar alpha=1) -> Tensor")
    assert len({a, b}) == 1
    assert _C.FunctionSchema(text) == a


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def check_error(text, phrase, pos):
    with pytest.raises(ValueError) as info:
        parse(text)
    msg = str(info.value)
    lines = msg.split("\n")
    shown = text.replace("\n", " ").replace("\t", " ")
    assert lines[0].startswith(f"Invalid schema '{shown}': ")
    assert phrase in lines[0]
    assert lines[0].endswith(f" at position {pos}")
    assert lines[1] == "    " + shown
    assert lines[2] == " " * (4 + pos) + "^"
    return lines[0]


def test_error_format_exact():
    text = "aten::foo(Tensor x, int) -> Tensor"
    with pytest.raises(ValueError) as info:
        parse(text)
    assert str(info.value) == (
        "Invalid schema 'aten::foo(Tensor x, int) -> Tensor': expected an argument name at position 23\n"
        "    aten::foo(Tensor x, int) -> Tensor\n"
        "                           ^"
    )


def _at(text, needle, nth=0):
    """Position of the nth occurrence of needle in text."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    return pos


ERROR_CASES = [
    # (schema, key phrase, position)
    ("", "expected an operator name", 0),
    ("   ", "expected an operator name", 3),
    ("foo(Tensr x) -> Tensor", "unknown type 'Tensr'", 4),
    ("foo(Tensor x) -> Tensr", "unknown type 'Tensr'", 17),
    ("foo(Tensor x, int[] y, Foo z) -> ()", "unknown type 'Foo'", 23),
    ("aten::foo(Tensor x, int) -> Tensor", "expected an argument name", 23),
    ("foo(Tensor) -> Tensor", "expected an argument name", 10),
    ("foo(Tensor x -> Tensor", "expected ',' or ')' after an argument", 13),
    ("foo(Tensor x", "expected ',' or ')' after an argument", 12),
    ("foo(Tensor x) Tensor", "expected '->' after the argument list", 14),
    ("foo(Tensor x)", "expected '->' after the argument list", 13),
    ("foo -> Tensor", "expected '(' to begin the argument list", 4),
    ("foo(Tensor x) ->", "expected a type", 16),
    ("foo(Tensor x, int x) -> ()", "duplicate argument name 'x'", 18),
    ("foo(Tensor x) -> (Tensor a, Tensor a)", "duplicate return name 'a'", 35),
    ("foo(int x=1.5) -> ()", "invalid default value '1.5' for argument 'x' of type 'int'", 10),
    ("foo(bool b=3) -> ()", "invalid default value '3' for argument 'b' of type 'bool'", 11),
    ("foo(Tensor t=1) -> ()", "invalid default value '1' for argument 't' of type 'Tensor'", 13),
    ("foo(Tensor t=None) -> ()", "only optional types may default to None", 13),
    ("foo(Tensor? t=0) -> ()", "invalid default value '0' for argument 't' of type 'Tensor?'", 14),
    ("foo(int[] x=[1, 2.5]) -> ()", "invalid element '2.5' in default value '[1, 2.5]'", 16),
    ("foo(int[] x=1) -> ()", "only a fixed-size list may default to a single value", 12),
    ("foo(str s=1) -> ()", "invalid default value '1' for argument 's' of type 'str'", 10),
    ("foo(int x='a') -> ()", "invalid default value '\"a\"' for argument 'x' of type 'int'", 10),
    ("foo(ScalarType? d=flaot) -> ()", "invalid default value 'flaot'", 18),
    ("foo(MemoryFormat m=strided) -> ()", "invalid default value 'strided'", 19),
    ("foo(float f=True) -> ()", "invalid default value 'True'", 12),
    ("foo(int x=99999999999999999999) -> ()", "out of range", 10),
    ("foo(int x=) -> ()", "expected a default value", 10),
    ("foo(int x=-) -> ()", "expected a number after '-'", 11),
    ("foo(int[] x=[1, 2) -> ()", "expected ',' or ']' in the list default", 17),
    ("foo(Tensor a, int b=1, int x) -> ()", "non-default argument 'x' follows default argument", 23),
    ("foo(Tensor a, *, int b, *, int c) -> ()", "'*' may appear only once", 24),
    ("foo(Tensor a, *) -> ()", "named arguments must follow bare '*'", 14),
    ("foo(*) -> ()", "named arguments must follow bare '*'", 4),
    ("foo(Tensor a, * int b) -> ()", "expected ',' after '*'", 16),
    ("foo(int(a) x) -> ()", "alias annotations are only allowed on Tensor types, not 'int'", 7),
    ("foo(Tensor x) -> int(a!)", "alias annotations are only allowed on Tensor types, not 'int'", 20),
    ("foo(Scalar(a!) x) -> ()", "alias annotations are only allowed on Tensor types, not 'Scalar'", 10),
    ("foo(int[](a) x) -> ()", "alias annotations are only allowed on Tensor types, not 'int[]'", 9),
    ("foo(Tensor[](a) x) -> ()", "an alias annotation must directly follow 'Tensor'", 12),
    ("foo(Tensor(a)(b) x) -> ()", "only one alias annotation", 13),
    ("foo(Tensor(a x) -> ()", "expected ')' to close the alias annotation", 13),
    ("foo(Tensor() x) -> ()", "expected an alias set name", 11),
    ("foo(Tensor x) -> Tensor y z", "unexpected trailing text", 26),
    ("foo(Tensor x) -> Tensor)", "unexpected trailing text", 23),
    ("foo(Tensor x) -> () garbage", "unexpected trailing text", 20),
    ("foo(Tensor x) -> Tensor, Tensor", "several returns must be enclosed in parentheses", 23),
    ("foo(Tensor x) -> Tensor y=1", "return values cannot have default values", 25),
    ("foo(Tensor x,) -> ()", "expected a type", 13),
    ("foo(int?? x) -> ()", "already optional", 8),
    ("foo(int[1.5] x) -> ()", "list size must be a non-negative integer", 8),
    ("foo(int[-1] x) -> ()", "expected a list size or ']'", 8),
    ("foo(str s='abc) -> ()", "unterminated string literal", 10),
    ("foo(str s='a\\q') -> ()", "invalid escape sequence", 12),
    ("foo(Tensor x) -> Tensor;", "unexpected character ';'", 23),
    ("aten:foo(Tensor x) -> ()", "unexpected character ':'", 4),
    ("aten::(Tensor x) -> ()", "expected an operator name after '::'", 6),
    ("aten::foo.(Tensor x) -> ()", "expected an overload name after '.'", 10),
    ("foo(..., Tensor x) -> ()", "expected ')' after '...'", 7),
    ("foo(Tensor x) -> (..., Tensor)", "expected ')' after '...'", 21),
]


@pytest.mark.parametrize("text, phrase, pos", ERROR_CASES)
def test_errors(text, phrase, pos):
    check_error(text, phrase, pos)


def test_error_positions_match_the_offending_token():
    # Guard the hand-computed positions above against typos in the table.
    assert _at("foo(Tensor x, int x) -> ()", "x", 1) == 18
    assert _at("foo(Tensor a, int b=1, int x) -> ()", "int x") == 23
    assert _at("foo(Tensor a, *, int b, *, int c) -> ()", "*", 1) == 24
    assert _at("foo(Tensor x) -> (Tensor a, Tensor a)", "a", 1) == 35
    assert _at("foo(int[] x=[1, 2.5]) -> ()", "2.5") == 16


def test_error_in_multiline_schema_flattens_whitespace():
    text = "aten::foo(\n    Tensor x,\n    Tensr y) -> Tensor"
    line = check_error(text, "unknown type 'Tensr'", text.index("Tensr"))
    assert "\n" not in line


def test_error_is_raised_at_first_problem():
    # The unknown type comes before the bad character; lexing is lazy.
    check_error("foo(Tensr x) -> Tensor @", "unknown type 'Tensr'", 4)


# ---------------------------------------------------------------------------
# Property: generated schemas round-trip and expose what they were built from
# ---------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_INTS = st.integers(-(2**40), 2**40).map(str)
_FLOATS = st.sampled_from(["0.5", "1e-05", "2", "-1.5", "inf", "-inf", "3.25e+10", "0.0"])
_STRS = st.text(alphabet="abc xyz_-.:,()[]'", max_size=6).map(
    lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
)

# base type -> strategy for its canonical default text (None: no default possible)
_BASES = {
    "Tensor": None,
    "int": _INTS,
    "SymInt": _INTS,
    "float": _FLOATS,
    "bool": st.sampled_from(["True", "False"]),
    "str": _STRS,
    "Scalar": st.one_of(_INTS, _FLOATS, st.sampled_from(["True", "False"])),
    "ScalarType": st.sampled_from(["long", "float", "int32", "bfloat16", "Half"]),
    "Layout": st.just("strided"),
    "MemoryFormat": st.sampled_from(["contiguous_format", "preserve_format", "channels_last"]),
    "Device": st.just('"cpu"'),
    "Generator": None,
    "Storage": None,
    "Dimname": None,
}


@st.composite
def _typed_default(draw, allow_default=True):
    """(type text, alias text or None, default text or None)."""
    base = draw(st.sampled_from(sorted(_BASES)))
    elem_default = _BASES[base]
    alias = draw(st.sampled_from([None, "a", "a!", "b!", "a -> *", "a|b"])) if base == "Tensor" else None
    type_text = base
    default_st = elem_default
    if draw(st.booleans()):  # list
        size = draw(st.sampled_from(["", "1", "2", "3"]))
        if elem_default is not None:
            inner = elem_default
            lists = st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
            default_st = st.one_of(lists, inner) if size else lists
        else:
            default_st = st.just("[]")
        type_text += f"[{size}]"
    if draw(st.booleans()):  # optional
        type_text += "?"
        default_st = st.just("None") if default_st is None else st.one_of(st.just("None"), default_st)
    default = None
    if allow_default and default_st is not None and draw(st.booleans()):
        default = draw(default_st)
    return type_text, alias, default


def _decl(type_text, alias, name, default):
    if alias is not None:
        type_text = type_text.replace("Tensor", f"Tensor({alias})", 1)
    text = type_text + (f" {name}" if name else "")
    return text + (f"={default}" if default is not None else "")


@st.composite
def _schemas(draw):
    ns = draw(st.sampled_from(["", "aten::", "my_ns::"]))
    name = draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True))
    overload = draw(st.sampled_from(["", ".Tensor", ".out", ".dim_IntList", ".int"]))
    n_pos = draw(st.integers(0, 4))
    n_kw = draw(st.integers(0, 3))
    args = []
    seen_default = False
    for i in range(n_pos + n_kw):
        kw = i >= n_pos
        t, alias, default = draw(_typed_default())
        if not kw and seen_default and default is None:
            if not t.endswith("?"):
                continue  # would be a non-default positional argument after a default one
            default = "None"
        seen_default |= default is not None and not kw
        args.append((t, alias, f"arg{i}", default, kw))
    rets = []
    for i in range(draw(st.integers(0, 3))):
        t, alias, _ = draw(_typed_default(allow_default=False))
        rets.append((t, alias, draw(st.sampled_from(["", f"r{i}"]))))
    items = []
    starred = False
    for t, alias, n, d, kw in args:
        if kw and not starred:
            items.append("*")
            starred = True
        items.append(_decl(t, alias, n, d))
    ret_items = [_decl(t, alias, n, None) for t, alias, n in rets]
    if len(rets) == 1:
        ret_text = ret_items[0]
    else:
        ret_text = "(" + ", ".join(ret_items) + ")"
    text = f"{ns}{name}{overload}(" + ", ".join(items) + f") -> {ret_text}"
    return text, args, rets


@settings(max_examples=300, deadline=None)
@given(_schemas())
def test_generated_schemas_round_trip(case):
    text, args, rets = case
    s = parse(text)
    assert str(s) == text
    assert str(parse(_spaced_out(text))) == text
    assert [(a.type, a.alias_info, a.name, a.default, a.kwarg_only) for a in s.arguments] == list(args)
    assert [(r.type, r.alias_info, r.name) for r in s.returns] == list(rets)
    assert s.is_mutable == any(alias is not None and "!" in alias for _, alias, _, _, _ in args)
    assert s.is_out_fn == any(kw and alias is not None and "!" in alias for _, alias, _, _, kw in args)
