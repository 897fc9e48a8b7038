"""Devices, dtypes, type promotion, dispatch keys and backend renaming."""
from __future__ import annotations

import pytest

import backend_sdk
from backend_sdk import _C

from _helpers import run_python


# ---- devices -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, type_, index",
    [("cpu", "cpu", None), ("cpu:0", "cpu", 0), ("meta", "meta", None), ("privateusetwo:1", "privateusetwo", 1)],
)
def test_device_parsing(spec, type_, index):
    d = backend_sdk.device(spec)
    assert d.type == type_ and d.index == index
    assert str(d) == spec
    assert d == backend_sdk.device(spec) and hash(d) == hash(backend_sdk.device(spec))


def test_device_with_explicit_index():
    assert backend_sdk.device("privateusetwo", 3) == backend_sdk.device("privateusetwo:3")
    assert repr(backend_sdk.device("cpu")) == "device(type='cpu')"
    assert repr(backend_sdk.device("meta", 0)) == "device(type='meta', index=0)"


@pytest.mark.parametrize("spec", ["cuda", "gpu:0", "", "cpu:", "cpu:x", "cpu:-1", "cpu:0:1", "CPU"])
def test_bad_device_strings_list_valid_types(spec):
    with pytest.raises(ValueError) as info:
        backend_sdk.device(spec)
    msg = str(info.value)
    assert "cpu" in msg and ("Expected one of" in msg or "Invalid device string" in msg)


def test_bad_device_argument_types():
    with pytest.raises(TypeError, match="expected a string, a device or an int"):
        backend_sdk.device(1.5)
    with pytest.raises(ValueError, match="must not include an index"):
        backend_sdk.device("cpu:0", 1)


# ---- dtypes and promotion ------------------------------------------------------------------
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
ITEMSIZE = dict(bool=1, uint8=1, int8=1, int16=2, int32=4, int64=8, float16=2, bfloat16=2, float32=4, float64=8)


@pytest.mark.parametrize("name", DTYPES)
def test_dtype_objects(name):
    d = getattr(backend_sdk, name)
    assert d.itemsize == ITEMSIZE[name]
    assert d.is_floating_point == (name in ("float16", "bfloat16", "float32", "float64"))
    assert repr(d) == f"backend_sdk.{name}"


# PyTorch's promote_types, restricted to these dtypes (checked against torch 2.13).
PROMOTE = {
    ("bool", "uint8"): "uint8", ("bool", "float16"): "float16", ("uint8", "int8"): "int16",
    ("uint8", "int16"): "int16", ("int8", "int32"): "int32", ("int32", "int64"): "int64",
    ("int64", "float16"): "float16", ("int64", "bfloat16"): "bfloat16", ("float16", "bfloat16"): "float32",
    ("bfloat16", "float32"): "float32", ("float32", "float64"): "float64", ("uint8", "bfloat16"): "bfloat16",
    ("bool", "bool"): "bool", ("int16", "uint8"): "int16",
}


@pytest.mark.parametrize("pair, expected", sorted(PROMOTE.items()))
def test_promote_types_matches_pytorch(pair, expected):
    a, b = (getattr(backend_sdk, n) for n in pair)
    assert backend_sdk.promote_types(a, b) == getattr(backend_sdk, expected)
    assert backend_sdk.promote_types(b, a) == getattr(backend_sdk, expected)


def test_promote_types_against_torch_when_installed():
    torch = pytest.importorskip("torch")
    for a in DTYPES:
        for b in DTYPES:
            ours = backend_sdk.promote_types(getattr(backend_sdk, a), getattr(backend_sdk, b)).name
            theirs = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
            assert ours == theirs, (a, b)


def test_default_dtype_round_trip_and_validation():
    assert backend_sdk.get_default_dtype() == backend_sdk.float32
    backend_sdk.set_default_dtype(backend_sdk.float64)
    try:
        assert backend_sdk.get_default_dtype() == backend_sdk.float64
    finally:
        backend_sdk.set_default_dtype(backend_sdk.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        backend_sdk.set_default_dtype(backend_sdk.int32)


# ---- dispatch keys ---------------------------------------------------------------------------
def test_key_set_highest_priority_and_table_index():
    ks = _C.DispatchKeySet(["CPU", "AutogradCPU", "ADInplaceOrView"])
    assert ks.highest_priority_key() == "AutogradCPU"
    assert ks.remove("AutogradCPU").highest_priority_key() == "ADInplaceOrView"
    assert ks.keys_after("ADInplaceOrView").highest_priority_key() == "CPU"
    both = _C.DispatchKeySet(["CPU", "PrivateUse2"])
    assert both.highest_priority_key() == "PrivateUse2"  # the higher backend bit wins
    indices = {_C.DispatchKeySet([k]).dispatch_table_index() for k in
               ("CPU", "Meta", "PrivateUse1", "AutogradCPU", "AutogradPrivateUse1", "BackendSelect", "Python")}
    assert len(indices) == 7


def test_alias_keys_expand_to_runtime_keys():
    autograd = _C._dispatch_runtime_keys("Autograd")
    assert autograd.has("AutogradCPU") and autograd.has("AutogradPrivateUse3") and not autograd.has("CPU")
    implicit = _C._dispatch_runtime_keys("CompositeImplicitAutograd")
    assert implicit.has("CPU") and implicit.has("AutogradMeta")
    explicit = _C._dispatch_runtime_keys("CompositeExplicitAutograd")
    assert explicit.has("PrivateUse2") and not explicit.has("AutogradCPU")


def test_key_names_parse_device_type_names():
    assert _C._dispatch_key_name("cpu") == "CPU"
    assert _C._dispatch_key_name("privateusetwo") == "PrivateUse2"
    assert _C._dispatch_key_name("AutogradPrivateUse2") == "AutogradPrivateUse2"
    with pytest.raises(ValueError, match="Unknown dispatch key 'Bogus'"):
        _C._dispatch_key_name("Bogus")


# ---- renaming (once per process: run in a subprocess) -------------------------------------
def test_rename_privateuse1_backend_everywhere():
    result = run_python(
        """
        import backend_sdk
        from backend_sdk import _C
        from backend_sdk.utils import rename_privateuse1_backend, get_privateuse1_backend_name
        rename_privateuse1_backend("accel")
        rename_privateuse1_backend("accel")  # same name again: allowed
        assert get_privateuse1_backend_name() == "accel"
        d = backend_sdk.device("accel:1")
        assert d.type == "accel" and d.index == 1 and str(d) == "accel:1"
        assert backend_sdk.device("privateuseone:0") == backend_sdk.device("accel:0")
        assert _C._dispatch_key_name("accel") == "Accel"
        assert _C._dispatch_key_name("PrivateUse1") == "Accel"
        assert _C._dispatch_key_name("AutogradAccel") == "AutogradAccel"
        assert _C._dispatch_key_name("AutogradPrivateUse1") == "AutogradAccel"
        assert "accel" in _C._valid_device_types()
        try:
            rename_privateuse1_backend("other")
        except RuntimeError as e:
            assert "already been renamed to 'accel'" in str(e), e
        else:
            raise AssertionError("second rename accepted")
        for bad in ("cuda", "cpu", "meta"):
            try:
                backend_sdk.utils.rename_privateuse2_backend(bad)
            except ValueError as e:
                assert "built-in device name" in str(e), e
            else:
                raise AssertionError(bad)
        try:
            backend_sdk.utils.rename_privateuse2_backend("accel")
        except ValueError as e:
            assert "another backend already has that name" in str(e)
        else:
            raise AssertionError("duplicate name accepted")
        backend_sdk.utils.rename_privateuse2_backend("npu2")
        assert backend_sdk.device("npu2:0").type == "npu2"
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_rename_rejects_invalid_names():
    for bad in ("", "Accel", "has space", "9lives"):
        with pytest.raises(ValueError):
            backend_sdk.utils.rename_privateuse3_backend(bad)
