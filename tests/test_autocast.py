"""Autocast (issue 19): PyTorch 2.13's per-device-type operator lists at the Autocast<backend> keys, the
weight-cast cache, nesting and enabled=False regions, custom ops (register_autocast, custom_fwd/custom_bwd),
a bf16 training step against float32, and PyTorch's errors and warnings for bad input."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import backend_sdk as sdk
import backend_sdk.nn.functional as F
from backend_sdk import _C, library

from test_python_backend import run_python

aten = sdk.ops.aten


def lower(device: str) -> sdk.dtype:
    return sdk.bfloat16 if device == "cpu" else sdk.float16


def rand(*shape: int, device: str, dtype=sdk.float32, requires_grad: bool = False) -> sdk.Tensor:
    t = sdk.from_numpy(np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)).to(device)
    t = t.to(dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---- the lists ----

def test_lower_precision_ops_run_in_the_autocast_dtype(device):
    a, b = rand(4, 4, device=device), rand(4, 4, device=device)
    b3 = rand(2, 4, 4, device=device)
    w, bias = rand(3, 4, device=device), rand(3, device=device)
    img, k = rand(1, 2, 5, 5, device=device), rand(3, 2, 3, 3, device=device)
    with sdk.autocast(device):
        assert sdk.mm(a, b).dtype == lower(device)
        assert sdk.matmul(a, b).dtype == lower(device)
        assert sdk.bmm(b3, b3).dtype == lower(device)
        assert aten.addmm.default(a, a, b).dtype == lower(device)
        assert aten.baddbmm.default(b3, b3, b3).dtype == lower(device)
        assert F.linear(a, w, bias).dtype == lower(device)
        assert F.conv2d(img, k).dtype == lower(device)
        # an input already in the lower precision mixes with float32 without a manual cast
        assert sdk.mm(sdk.mm(a, b), a).dtype == lower(device)
    assert sdk.mm(a, b).dtype == sdk.float32


def test_cpu_fp32_and_promote_lists():
    x = rand(4, 4, device="cpu", dtype=sdk.bfloat16)
    y = rand(4, 4, device="cpu")
    target = sdk.tensor([0, 1, 2, 3])
    with sdk.autocast("cpu"):
        assert F.mse_loss(x, x).dtype == sdk.float32
        assert aten.nll_loss.default(x, target).dtype == sdk.float32
        assert aten.prod.default(x).dtype == sdk.float32
        # not on the CPU lists: runs in the input's dtype, as PyTorch's CPU autocast
        assert F.softmax(x, 1).dtype == sdk.bfloat16
        assert sdk.exp(x).dtype == sdk.bfloat16
        # promote: the widest floating input wins
        assert sdk.cat([x, y]).dtype == sdk.float32
        assert sdk.stack([x, x]).dtype == sdk.bfloat16
        # ineligible inputs are left alone: float64 and integers
        assert sdk.cat([x.double(), x.double()]).dtype == sdk.float64


def test_device_fp32_set_opt_dtype_append_dtype_and_promote_lists():
    x = rand(4, 4, device="accel", dtype=sdk.float16)
    y = rand(4, 4, device="accel")
    with sdk.autocast("accel"):
        for out in (sdk.exp(x), sdk.log(x.abs() + 1), aten.pow.Tensor_Scalar(x, 2), aten.rsqrt.default(x.abs() + 1),
                    F.layer_norm(x, [4]), F.mse_loss(x, x), aten.logsumexp.default(x, [1])):
            assert out.dtype == sdk.float32
        # fp32_set_opt_dtype: an unset dtype becomes float32, an explicit one is kept
        assert F.softmax(x, 1).dtype == sdk.float32
        assert F.log_softmax(x, 1).dtype == sdk.float32
        assert aten.sum.default(x).dtype == sdk.float32
        assert aten.sum.default(x, dtype=sdk.float64).dtype == sdk.float64
        assert aten.cumsum.default(x, 0).dtype == sdk.float32
        # fp32_append_dtype: norm runs as norm.ScalarOpt_dtype(dtype=float32)
        assert aten.norm.Scalar(x).dtype == sdk.float32
        assert aten.norm.ScalarOpt_dim(x, 2, [1]).dtype == sdk.float32
        # promote
        assert aten.addcmul.default(x, x, y).dtype == sdk.float32
        assert aten.addcmul.default(x, x, x).dtype == sdk.float16
        assert aten.dot.default(x[0], y[0]).dtype == sdk.float32
        # an operator on no list: ordinary type promotion
        assert (x + x).dtype == sdk.float16 and (x + y).dtype == sdk.float32
    np.testing.assert_allclose(aten.sum.default(x).cpu().numpy(), x.float().sum().cpu().numpy(), rtol=1e-3)


def test_values_match_the_cast_inputs(device):
    a, b = rand(5, 3, device=device), rand(3, 4, device=device)
    with sdk.autocast(device):
        got = sdk.mm(a, b)
    want = sdk.mm(a.to(lower(device)), b.to(lower(device)))
    np.testing.assert_array_equal(got.float().cpu().numpy(), want.float().cpu().numpy())


def test_each_device_type_has_its_own_state():
    c, x = rand(4, 4, device="cpu"), rand(4, 4, device="accel")
    with sdk.autocast("cpu"):
        assert sdk.is_autocast_enabled("cpu") and not sdk.is_autocast_enabled("accel")
        assert sdk.mm(c, c).dtype == sdk.bfloat16
        assert sdk.mm(x, x).dtype == sdk.float32  # accel's autocast is off
    with sdk.autocast("accel"):
        assert sdk.mm(x, x).dtype == sdk.float16
        assert sdk.mm(c, c).dtype == sdk.float32
    assert not sdk.is_autocast_enabled("cpu") and not sdk.is_autocast_enabled("accel")
    assert sdk.get_autocast_dtype("cpu") == sdk.bfloat16 and sdk.get_autocast_dtype("accel") == sdk.float16


def test_the_table_covers_pytorchs_lists_for_the_defined_operators():
    """Each entry of PyTorch 2.13's lists has a kernel at the Autocast key, or the SDK does not define it yet."""
    cpu = ("conv1d conv2d conv_transpose1d conv_transpose2d.input bmm mm baddbmm addmm linear matmul scaled_dot_product_attention prod prod.dim_int trace "
           "reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d mse_loss nll_loss nll_loss2d "
           "cross_entropy_loss stack cat index_copy").split()
    device = ("conv1d conv2d conv_transpose1d conv_transpose2d.input convolution addmm matmul einsum mm linear baddbmm bmm scaled_dot_product_attention "
              "erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt tan pow.Tensor_Scalar pow.Tensor_Tensor "
              "pow.Scalar layer_norm native_layer_norm group_norm nll_loss nll_loss2d mse_loss logsumexp "
              "upsample_nearest2d upsample_bilinear2d prod prod.dim_int softmax.int log_softmax.int cumprod cumsum "
              "linalg_vector_norm sum sum.dim_IntList norm.Scalar norm.ScalarOpt_dim addcdiv addcmul dot index_put "
              "scatter_add acos asin cosh sinh atan2").split()
    # PyTorch's entries the SDK does not define yet (ops/detail/AutocastPolicies.def): when one is added to the
    # operator library it must get its table entry, and this list loses it.
    not_defined_yet = ("conv3d conv_tbc prelu addmv addr mv linalg_vecdot addbmm chain_matmul "
                       "softplus cosine_similarity kl_div l1_loss smooth_l1_loss huber_loss "
                       "binary_cross_entropy_with_logits cdist dist pdist renorm cross vdot tensordot "
                       "grid_sampler polar quantile inverse cholesky").split()
    defined = set(_C._registered_operators())
    assert [name for name in not_defined_yet if f"aten::{name}" in defined] == []
    for key, names in (("AutocastCPU", cpu), ("AutocastPrivateUse1", device), ("AutocastPrivateUse2", device)):
        for name in names:
            qualname = f"aten::{name}"
            assert _C._dispatch_has_kernel_for_key(qualname, key), (qualname, key)
    # fallthrough for the rest: add has no autocast kernel
    assert not _C._dispatch_has_kernel_for_key("aten::add.Tensor", "AutocastCPU")


# ---- regions ----

def test_nesting_and_enabled_false_regions(device):
    a = rand(4, 4, device=device)
    with sdk.autocast(device):
        assert sdk.mm(a, a).dtype == lower(device)
        with sdk.autocast(device, enabled=False):
            assert not sdk.is_autocast_enabled(device)
            assert sdk.mm(a, a).dtype == sdk.float32
            with sdk.autocast(device, dtype=sdk.float16):
                assert sdk.mm(a, a).dtype == sdk.float16
                assert sdk.get_autocast_dtype(device) == sdk.float16
            assert not sdk.is_autocast_enabled(device)
        assert sdk.is_autocast_enabled(device)
        assert sdk.get_autocast_dtype(device) == lower(device)
        assert sdk.mm(a, a).dtype == lower(device)
    assert not sdk.is_autocast_enabled(device)


def test_decorator_and_amp_spellings(device):
    a = rand(4, 4, device=device)

    @sdk.autocast(device)
    def f(x):
        return sdk.mm(x, x)

    assert f(a).dtype == lower(device) and not sdk.is_autocast_enabled(device)
    with sdk.amp.autocast(device_type=device):
        assert sdk.mm(a, a).dtype == lower(device)
    if device != "cpu":
        mod = getattr(sdk, device)
        with pytest.warns(FutureWarning, match=rf"`backend_sdk.{device}.amp.autocast\(args...\)` is deprecated"):
            region = mod.amp.autocast()
        with region:
            assert sdk.mm(a, a).dtype == sdk.float16
        assert isinstance(region, sdk.amp.autocast)


def test_exceptions_leave_the_state_restored(device):
    with pytest.raises(KeyError):
        with sdk.autocast(device):
            raise KeyError("x")
    assert not sdk.is_autocast_enabled(device)
    assert _C.autocast_increment_nesting() == 1 and _C.autocast_decrement_nesting() == 0


def test_the_state_is_per_thread():
    seen = {}

    def other():
        seen["enabled"] = sdk.is_autocast_enabled("cpu")
        a = rand(2, 2, device="cpu")
        seen["dtype"] = sdk.mm(a, a).dtype

    with sdk.autocast("cpu"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == {"enabled": False, "dtype": sdk.float32}


# ---- the weight cache ----

def test_a_weight_is_cast_once_per_region(device):
    w = rand(4, 4, device=device, requires_grad=True)
    x = rand(4, 4, device=device)
    assert _C._autocast_cache_size() == 0
    with sdk.autocast(device):
        y1 = sdk.mm(x, w)
        y2 = sdk.mm(y1, w)
        y3 = F.linear(x, w)
        assert _C._autocast_cache_size() == 1  # one entry: w's cast, reused by the three calls
        with sdk.autocast(device):
            sdk.mm(x, w)
        assert _C._autocast_cache_size() == 1  # an inner region's exit does not clear it
        # not cached: inputs that do not require grad, non-leaves, views
        sdk.mm(x, x)
        sdk.mm(x, w * 2)
        sdk.mm(x[:, :2], w[:2])
        assert _C._autocast_cache_size() == 1
    assert _C._autocast_cache_size() == 0  # the outermost region's exit clears it
    (y2.float().sum() + y3.float().sum()).backward()
    assert w.grad is not None and w.grad.dtype == sdk.float32
    with sdk.autocast(device, cache_enabled=False):
        sdk.mm(x, w)
        assert _C._autocast_cache_size() == 0
    assert sdk.is_autocast_cache_enabled()


def test_gradients_reach_float32_leaves(device):
    w = rand(4, 3, device=device, requires_grad=True)
    x = rand(5, 4, device=device)
    with sdk.autocast(device):
        out = sdk.mm(x, w)
    assert out.dtype == lower(device)
    out.float().sum().backward()
    assert w.grad.dtype == sdk.float32
    want = x.cpu().numpy().T @ np.ones((5, 3), dtype=np.float32)
    np.testing.assert_allclose(w.grad.cpu().numpy(), want, rtol=2e-2, atol=2e-2)


# ---- custom operators ----

def test_register_autocast_for_a_custom_op(device, ns):
    @library.custom_op(f"{ns}::scaled", mutates_args=())
    def scaled(x: sdk.Tensor, y: sdk.Tensor) -> sdk.Tensor:
        seen.append((x.dtype, y.dtype, sdk.is_autocast_enabled(device)))
        return x * y

    seen: list = []
    x = rand(3, device=device)
    n = sdk.tensor([1, 2, 3]).to(device)
    with sdk.autocast(device):
        assert scaled(x, x).dtype == sdk.float32  # no registration: runs as called
    library.register_autocast(f"{ns}::scaled", device, sdk.float16)
    with sdk.autocast(device):
        assert scaled(x, x).dtype == sdk.float16
        assert scaled(x, n).dtype == sdk.float16  # integer inputs are not cast
    assert seen[-1] == (sdk.float16, sdk.int64, True)
    assert scaled(x, x).dtype == sdk.float32  # outside a region: unchanged
    # CustomOpDef.register_autocast replaces it
    scaled.register_autocast(device, sdk.bfloat16)
    with sdk.autocast(device):
        assert scaled(x, x).dtype == sdk.bfloat16
    other = "accel" if device == "cpu" else "cpu"
    with sdk.autocast(other):  # the other device type's autocast does not cast this one's call
        assert scaled(x, x).dtype == sdk.float32


def test_a_custom_op_without_a_rule_still_autocasts_its_inner_ops(device, ns):
    @library.custom_op(f"{ns}::mm_twice", mutates_args=())
    def mm_twice(x: sdk.Tensor) -> sdk.Tensor:
        return sdk.mm(sdk.mm(x, x), x)

    x = rand(4, 4, device=device)
    with sdk.autocast(device):
        assert mm_twice(x).dtype == lower(device)


def test_custom_fwd_and_custom_bwd(device):
    record = {}

    class MyMM(sdk.autograd.Function):
        @staticmethod
        @sdk.amp.custom_fwd(device_type=device, cast_inputs=sdk.float32)
        def forward(ctx, a, b):
            record["fwd"] = (a.dtype, b.dtype, sdk.is_autocast_enabled(device))
            ctx.save_for_backward(a, b)
            return sdk.mm(a, b)

        @staticmethod
        @sdk.amp.custom_bwd(device_type=device)
        def backward(ctx, grad):
            record["bwd"] = sdk.is_autocast_enabled(device)
            a, b = ctx.saved_tensors
            return sdk.mm(grad, b.t()), sdk.mm(a.t(), grad)

    a = rand(3, 3, device=device, dtype=lower(device), requires_grad=True)
    b = rand(3, 3, device=device, requires_grad=True)
    with sdk.autocast(device):
        out = MyMM.apply(a, b)
    assert record["fwd"] == (sdk.float32, sdk.float32, False) and out.dtype == sdk.float32
    out.sum().backward()
    assert record["bwd"] is False  # forward ran with autocast off (cast_inputs), so backward does too

    class Plain(sdk.autograd.Function):
        @staticmethod
        @sdk.amp.custom_fwd(device_type=device)
        def forward(ctx, a):
            return sdk.mm(a, a)

        @staticmethod
        @sdk.amp.custom_bwd(device_type=device)
        def backward(ctx, grad):
            record["plain_bwd"] = (sdk.is_autocast_enabled(device), sdk.get_autocast_dtype(device))
            return grad

    c = rand(3, 3, device=device, requires_grad=True)
    with sdk.autocast(device):
        out = Plain.apply(c)
    assert out.dtype == lower(device)
    out.float().sum().backward()
    assert record["plain_bwd"] == (True, lower(device))


# ---- training ----

def _mlp(device: str, seed: int = 0) -> sdk.nn.Module:
    sdk.manual_seed(seed)
    return sdk.nn.Sequential(sdk.nn.Linear(8, 16), sdk.nn.ReLU(), sdk.nn.Linear(16, 4)).to(device)


@pytest.mark.parametrize("dtype", [sdk.bfloat16, sdk.float16])
def test_an_autocast_training_step_matches_float32(device, dtype):
    x = rand(32, 8, device=device)
    target = sdk.from_numpy(np.random.default_rng(1).integers(0, 4, 32)).to(device)
    losses = {}
    for mode in ("fp32", "amp"):
        model = _mlp(device)
        opt = sdk.optim.SGD(model.parameters(), lr=0.1)
        history = []
        for _ in range(5):
            opt.zero_grad()
            with sdk.autocast(device, dtype=dtype, enabled=(mode == "amp")):
                out = model(x)
                assert out.dtype == (dtype if mode == "amp" else sdk.float32)
                loss = F.cross_entropy(out, target)
                assert loss.dtype == sdk.float32  # the loss is on the fp32 lists (cpu and device)
            loss.backward()
            assert all(p.grad.dtype == sdk.float32 for p in model.parameters())
            opt.step()
            history.append(loss.item())
        losses[mode] = history
    np.testing.assert_allclose(losses["amp"], losses["fp32"], rtol=3e-2, atol=3e-2)
    assert losses["amp"][-1] < losses["amp"][0]


# ---- bad input: PyTorch's types and texts ----

def test_bad_device_types():
    with pytest.raises(ValueError, match=r"Expected `device_type` of type `str`, got: `<class 'int'>`"):
        sdk.autocast(1)
    with pytest.raises(RuntimeError, match=r"device type at start of device string: tpu0"):
        sdk.autocast("tpu0")
    with pytest.raises(RuntimeError, match=r"User specified an unsupported autocast device_type 'meta'"):
        sdk.autocast("meta", dtype=sdk.bfloat16)
    with pytest.raises(ValueError, match=r"Expected `device_type` of type `str`"):
        sdk.amp.custom_fwd(device_type=None)
    with pytest.raises(ValueError, match=r"Expected `device_type` of type `str`"):
        sdk.amp.custom_bwd(device_type=0)
    with pytest.warns(UserWarning, match=r"User provided device_type of 'cuda', but CUDA is not available. Disabling"):
        region = sdk.autocast("cuda")
    a = rand(2, 2, device="cpu")
    with region:
        assert sdk.mm(a, a).dtype == sdk.float32
    assert sdk.amp.is_autocast_available("cpu") and sdk.amp.is_autocast_available("accel")
    assert not sdk.amp.is_autocast_available("meta")


def test_unsupported_dtypes_warn_and_disable(device, monkeypatch):
    a = rand(2, 2, device=device)
    if device == "cpu":
        msg = (r"In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
               r"CPU Autocast only supports dtype of backend_sdk.bfloat16, backend_sdk.float16 currently.")
    else:
        msg = (rf"In {device} autocast, but the target dtype is not supported. Disabling autocast.\n "
               rf"{device} Autocast only supports dtypes of backend_sdk.float16, backend_sdk.bfloat16 currently.")
    with pytest.warns(UserWarning, match=msg):
        region = sdk.autocast(device, dtype=sdk.float64)
    with region:
        assert not sdk.is_autocast_enabled(device)
        assert sdk.mm(a, a).dtype == sdk.float32
    if device != "cpu":
        # the backend's get_amp_supported_dtype decides
        mod = getattr(sdk, device)
        monkeypatch.setattr(mod, "get_amp_supported_dtype", lambda: [sdk.bfloat16])
        with pytest.warns(UserWarning, match=r"only supports dtypes of backend_sdk.bfloat16 currently"):
            sdk.autocast(device)  # its default, float16, is not supported any more
        monkeypatch.delattr(mod, "get_amp_supported_dtype")
        with pytest.raises(AssertionError, match=r"But the func `get_amp_supported_dtype` is missing"):
            sdk.autocast(device)


def test_bad_register_autocast_and_state_arguments(ns):
    @library.custom_op(f"{ns}::ident", mutates_args=())
    def ident(x: sdk.Tensor) -> sdk.Tensor:
        return x.clone()

    with pytest.raises(ValueError, match=r"Unknown device type: meta"):
        library.register_autocast(f"{ns}::ident", "meta", sdk.float16)
    with pytest.raises(ValueError, match=r"Unknown device type: tpu"):
        ident.register_autocast("tpu", sdk.float16)
    with pytest.raises(ValueError, match=r"register_autocast\(3\): got unexpected type for op"):
        library.register_autocast(3, "cpu", sdk.float16)
    with pytest.raises(TypeError, match=r"set_autocast_dtype\(\): argument 'dtype' must be backend_sdk.dtype, not str"):
        sdk.set_autocast_dtype("cpu", "float16")
    with pytest.raises(ValueError, match=r"device type at start of device string: nope"):
        sdk.is_autocast_enabled("nope")
    # "cuda" (code written for PyTorch): recorded, never dispatched
    library.register_autocast(f"{ns}::ident", "cuda", sdk.float16)


def test_pyaccel_python_backend_autocasts():
    proc = run_python("""
        import backend_sdk as sdk
        import pyaccel
        a = sdk.ones(3, 3).to("pyaccel")
        with sdk.autocast("pyaccel"):
            assert sdk.is_autocast_enabled("pyaccel")
            out = sdk.mm(a, a)
            assert out.dtype == sdk.float16, out.dtype
            assert sdk.exp(out).dtype == sdk.float32
        assert sdk.mm(a, a).dtype == sdk.float32
        print("ok")
    """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


def test_a_backend_replaces_an_entry_at_its_autocast_key():
    """A vendor's kernel at its Autocast key replaces the SDK's entry; closing it brings the entry back."""
    x = rand(4, 4, device="accel")
    lib = library.Library("aten", "IMPL")
    try:
        def fp32_mm(keyset, a, b):
            with _C._ExcludeDispatchKeyGuard(_C.DispatchKeySet(_C.DispatchKey.AutocastFunctionality)):
                return aten.mm.default(a.float(), b.float())

        with pytest.warns(UserWarning, match="Overriding a previously registered kernel"):
            lib.impl("mm", fp32_mm, "AutocastAccel", with_keyset=True)
        with sdk.autocast("accel"):
            assert sdk.mm(x, x).dtype == sdk.float32
    finally:
        lib._destroy()
    with sdk.autocast("accel"):
        assert sdk.mm(x, x).dtype == sdk.float16


# ---- F.nll_loss / F.cross_entropy reach the nll_loss entries (through nll_loss_nd, as in PyTorch) ----

@pytest.mark.parametrize("shape", [(3,), (4, 3), (2, 3, 4), (2, 3, 2, 2), (2, 3, 2, 1, 2)])
def test_nll_loss_and_cross_entropy_policies(device, shape):
    """nll_loss_nd calls aten::nll_loss (rank 1-2) or aten::nll_loss2d (other ranks), so their float32 policy
    applies to F.nll_loss of a lower-precision input; cross_entropy is float32 too (cpu: cross_entropy_loss's
    entry; the devices: log_softmax's). Values: those of the float32 computation on the cast input."""
    rng = np.random.default_rng(len(shape))
    x = rand(*shape, device=device, dtype=lower(device))
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    target = sdk.from_numpy(rng.integers(0, 3, tshape)).to(device)
    for reduction in ("mean", "none"):
        with sdk.autocast(device):
            nll = F.nll_loss(x, target, reduction=reduction)
            ce = F.cross_entropy(x, target, reduction=reduction)
        assert nll.dtype == sdk.float32 and ce.dtype == sdk.float32
        assert tuple(nll.shape) == (tuple(tshape) if reduction == "none" else ())
        np.testing.assert_allclose(nll.cpu().numpy(), F.nll_loss(x.float(), target, reduction=reduction).cpu().numpy(),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(ce.cpu().numpy(),
                                   F.cross_entropy(x.float(), target, reduction=reduction).cpu().numpy(),
                                   rtol=1e-5, atol=1e-5)
    # outside autocast nothing is cast
    assert F.nll_loss(x, target).dtype == lower(device)


# ---- the cache does not keep a dropped weight (or its cast) alive ----

def test_a_dropped_weight_frees_its_cached_cast(device):
    import gc

    x = rand(64, 64, device=device)
    w2 = rand(64, 64, device=device, requires_grad=True)
    memory = (lambda: sdk.accel.memory_allocated()) if device == "accel" else None
    with sdk.autocast(device):
        w1 = rand(64, 64, device=device, requires_grad=True)
        with sdk.no_grad():  # no graph holds w1
            sdk.mm(x, w1)
        assert _C._autocast_cache_size() == 1
        before = memory() if memory else None
        del w1
        gc.collect()
        with sdk.no_grad():
            y = sdk.mm(x, w2)  # the next cached cast sweeps w1's entry
            assert _C._autocast_cache_size() == 1
            sdk.mm(y.float(), w2)  # a live weight stays cached: one entry, reused
            assert _C._autocast_cache_size() == 1
        if memory:
            # w1 (float32) and its float16 cast were freed; w2's cast and y (float16) were made
            assert memory() == before - 64 * 64 * (4 + 2) + 2 * 64 * 64 * 2
        # a weight some graph still holds is not dropped
        w3 = rand(8, 8, device=device, requires_grad=True)
        out = sdk.mm(rand(8, 8, device=device), w3)
        del w3
        gc.collect()
        with sdk.no_grad():
            sdk.mm(x, w2)
        assert _C._autocast_cache_size() == 2  # w2 and w3 (held by out's graph)
        out.float().sum().backward()
    assert _C._autocast_cache_size() == 0


def test_transposed_convolutions_run_in_lower_precision(device: str) -> None:
    """conv_transpose1d / conv_transpose2d.input are on PyTorch's lower-precision lists (CPU and device)."""
    import backend_sdk as bs

    x, w = bs.randn(1, 2, 5, device=device), bs.randn(2, 3, 3, device=device)
    with bs.autocast(device, dtype=bs.bfloat16):
        assert bs.nn.functional.conv_transpose1d(x, w).dtype == bs.bfloat16
        assert bs.nn.functional.conv_transpose2d(x[..., None], w[..., None]).dtype == bs.bfloat16
    assert bs.nn.functional.conv_transpose1d(x, w).dtype == bs.float32
