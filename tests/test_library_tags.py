"""backend_sdk.Tag and OpOverload.tags (issue 16)."""
from __future__ import annotations

import pytest

import backend_sdk
from backend_sdk import Tag, Tensor, library
from backend_sdk.library import Library, custom_op


def test_tag_has_pytorchs_members() -> None:
    for name in ("core", "pointwise", "reduction", "inplace", "out", "inplace_view", "view_copy",
                 "data_dependent_output", "dynamic_output_shape", "nondeterministic_seeded",
                 "nondeterministic_bitwise", "needs_fixed_stride_order", "needs_exact_strides", "flexible_layout",
                 "pt2_compliant_tag", "maybe_aliasing_or_mutating", "generated"):
        assert getattr(Tag, name).name == name
    assert library.Tag is Tag


def test_tag_values_and_order_are_torchs() -> None:
    # torch.Tag 2.13: members in this order, values 0..19 (out_variant is new in 2.13).
    names = ["core", "cudagraph_unsafe", "data_dependent_output", "dynamic_output_shape", "flexible_layout",
             "generated", "inplace", "inplace_view", "maybe_aliasing_or_mutating", "needs_contiguous_strides",
             "needs_exact_strides", "needs_fixed_stride_order", "nondeterministic_bitwise",
             "nondeterministic_seeded", "out", "out_variant", "pointwise", "pt2_compliant_tag", "reduction",
             "view_copy"]
    assert [(t.name, t.value) for t in Tag] == [(n, i) for i, n in enumerate(names)]
    assert int(Tag.out) == 14 and Tag.out.__index__() == 14 and Tag(16) is Tag.pointwise
    assert repr(Tag.core) == "<Tag.core: 0>" and str(Tag.core) == "Tag.core"


def test_aten_operators_carry_pytorchs_tags() -> None:
    # Facts read from torch 2.13's torch.ops.aten.<op>.<overload>.tags (tools/gen_aten_tags.py).
    aten = backend_sdk.ops.aten
    pt2 = Tag.pt2_compliant_tag
    assert aten.sin.default.tags == [Tag.core, Tag.pointwise, pt2]
    assert aten.sin_.default.tags == [Tag.inplace, Tag.pointwise, pt2]  # in-place: inplace, not core
    assert aten.add.out.tags == [Tag.out, Tag.pointwise, pt2]
    assert aten.sum.dim_IntList.tags == [Tag.core, pt2, Tag.reduction]
    assert aten.rand.default.tags == [Tag.core, Tag.nondeterministic_seeded, pt2]
    assert aten.uniform_.default.tags == [Tag.inplace, Tag.nondeterministic_seeded, pt2]
    assert aten.nonzero.default.tags == [Tag.core, Tag.dynamic_output_shape, pt2]
    assert aten._local_scalar_dense.default.tags == [Tag.core, Tag.data_dependent_output, pt2]
    assert aten.index.Tensor.tags == [Tag.core, Tag.dynamic_output_shape, pt2]
    assert aten.masked_fill.Scalar.tags == [Tag.pointwise, pt2]
    assert aten.masked_fill.Tensor.tags == [pt2]
    assert aten.bernoulli.default.tags == [Tag.nondeterministic_seeded, pt2]
    assert aten.mm.default.tags == [Tag.core, pt2]
    assert aten.copy_.default.tags == [Tag.inplace, pt2]
    tags = aten.sin.default.tags
    tags.append(Tag.out)  # a fresh list each time
    assert Tag.out not in aten.sin.default.tags


def test_define_tags_one_or_a_sequence(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("a(Tensor x) -> Tensor", tags=Tag.pointwise)
    lib.define("b(Tensor x) -> Tensor", tags=(Tag.pointwise, Tag.needs_fixed_stride_order))
    lib.define("c(Tensor x) -> Tensor")
    library.define(f"{ns}::d", "(Tensor x) -> Tensor", lib=lib, tags=[Tag.reduction])
    ops = getattr(backend_sdk.ops, ns)
    assert ops.a.default.tags == [Tag.pointwise]
    assert ops.b.default.tags == [Tag.pointwise, Tag.needs_fixed_stride_order]
    assert ops.c.default.tags == []
    assert ops.d.default.tags == [Tag.reduction]
    lib._destroy()
    lib2 = Library(ns, "FRAGMENT")
    lib2.define("a(Tensor x) -> Tensor")  # a new definition starts with its own tags
    assert getattr(backend_sdk.ops, ns).a.default.tags == []
    lib2._destroy()


def test_custom_op_tags(ns: str) -> None:
    @custom_op(f"{ns}::f", mutates_args=(), tags=Tag.pointwise)
    def f(x: Tensor) -> Tensor:
        return x.clone()

    assert f.tags == [Tag.pt2_compliant_tag, Tag.pointwise]
    assert getattr(backend_sdk.ops, ns).f.default.tags == [Tag.pt2_compliant_tag, Tag.pointwise]
    f._destroy()


def test_bad_tags_are_type_errors_naming_the_operator(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    with pytest.raises(TypeError, match=r"define.*tags must be backend_sdk.Tag values.*str 'pointwise'"):
        lib.define("a(Tensor x) -> Tensor", tags=["pointwise"])
    with pytest.raises(TypeError, match="tags must be a backend_sdk.Tag or a sequence"):
        lib.define("a(Tensor x) -> Tensor", tags="pointwise")
    with pytest.raises(TypeError, match=f"custom_op\\('{ns}::g'\\)"):
        custom_op(f"{ns}::g", lambda x: x, mutates_args=(), tags=[1])
    with pytest.raises(TypeError, match=f"define\\('{ns}::h'\\)"):
        library.define(f"{ns}::h", "(Tensor x) -> Tensor", lib=lib, tags=3)
    lib._destroy()
