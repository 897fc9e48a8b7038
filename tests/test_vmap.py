"""vmap (backend_sdk.vmap / backend_sdk.func.vmap): batched tensors at the FuncTorchBatched key (docs/vmap.md).

Every check compares vmap against a Python loop over the slices (the definition of vmap's result).
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _C
from backend_sdk.func import grad, grad_and_value, vmap
from backend_sdk.testing import assert_close


def rand(*shape, device="cpu", seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return sdk.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(device)


def loop(fn, *args, in_dims=0, out_dim=0):
    """Stacks fn over the slices of args along in_dims (the reference)."""
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    outs = [fn(*[a if d is None else a.select(d, b) for a, d in zip(args, dims)]) for b in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(sdk.stack([o[i] for o in outs], out_dim) for i in range(len(outs[0])))
    return sdk.stack(outs, out_dim)


@contextlib.contextmanager
def no_fallback():
    """Fails the block if the slow fallback's performance warning is raised (the operators have rules)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        yield


# ---------------------------------------------------------------------------------------------
# the API
# ---------------------------------------------------------------------------------------------
def test_names_and_keys():
    assert sdk.vmap is sdk.func.vmap
    assert "vmap" in sdk.__all__ and "func" in sdk.__all__
    names = [k.name for k in _C.DispatchKey.__members__.values()]
    # c10's order: above Autocast and Autograd, below PythonTLSSnapshot
    order = list(_C.DispatchKey.__members__)
    assert order.index("AutocastFunctionality") < order.index("FuncTorchBatched") < order.index(
        "FuncTorchVmapMode") < order.index("PythonTLSSnapshot")
    assert "FuncTorchBatched" in names


def test_batched_tensor_inside(device):
    x = rand(4, 3, device=device)
    seen = {}

    def f(t):
        seen["shape"] = tuple(t.shape)
        seen["batched"] = sdk._functorch.is_batchedtensor(t)
        seen["repr"] = repr(t)
        seen["device"] = t.device
        return t

    out = vmap(f)(x)
    assert seen["shape"] == (3,) and seen["batched"] and seen["repr"].startswith("BatchedTensor(lvl=1, bdim=0")
    assert seen["device"] == x.device
    assert not sdk._functorch.is_batchedtensor(out)
    assert_close(out, x)


def test_elementwise_broadcasting(device):
    x, y, z = rand(5, 3, device=device), rand(3, device=device, seed=1), rand(5, 2, 1, device=device, seed=2)
    with no_fallback():
        assert_close(vmap(lambda a: a.sin() * 2 + 1)(x), (x.sin() * 2 + 1))
        assert_close(vmap(lambda a, b: a + b, in_dims=(0, None))(x, y), x + y)
        # logical ranks 1 and 2: the batched operand of lower rank is padded after the batch dim
        assert_close(vmap(lambda a, c: a * c)(x, z), loop(lambda a, c: a * c, x, z))
        assert_close(vmap(lambda a: sdk.where(a > 0, a, a * 0.5))(x), sdk.where(x > 0, x, x * 0.5))
        # a batched 0-dim float64 with a float32 vector: 0-dim tensors rank lower in type promotion
        s = sdk.ones(5, dtype=sdk.float64, device=device)
        out = vmap(lambda a, b: a + b)(s, x)
        assert out.dtype == (s[0] + x[0]).dtype == sdk.float32


def test_in_dims_and_out_dims(device):
    x = rand(3, 5, device=device)  # batch along dim 1
    y = rand(5, 3, device=device, seed=1)
    with no_fallback():
        assert_close(vmap(lambda a, b: a * b, in_dims=(1, 0))(x, y), loop(lambda a, b: a * b, x, y, in_dims=(1, 0)))
        assert_close(vmap(lambda a: a.exp(), in_dims=-1)(x), loop(lambda a: a.exp(), x, in_dims=-1))
        out = vmap(lambda a: a.exp(), in_dims=1, out_dims=1)(x)
        assert_close(out, x.exp())
        # pytrees: a dict and a list in the inputs, tuples of in_dims/out_dims
        tree = {"a": x, "b": [y]}
        out = vmap(lambda t: (t["a"] + t["b"][0], t["b"][0].sum()), in_dims=({"a": 1, "b": [0]},),
                   out_dims=(0, None))
        with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
            out(tree)
        a, s = vmap(lambda t: (t["a"] + t["b"][0], t["b"][0]), in_dims=({"a": 1, "b": [0]},), out_dims=(1, 0))(tree)
        assert_close(a, (x.T + y).T)
        assert_close(s, y)
        # an output that does not depend on the batched input is expanded to the batch size
        w = rand(4, device=device, seed=2)
        assert_close(vmap(lambda a: w, in_dims=0)(x), w.unsqueeze(0).expand(3, 4))
        # non-tensor output with out_dims None, keyword arguments pass through
        assert vmap(lambda a, k=1: k, out_dims=None)(x, k=7) == 7
        assert_close(vmap(lambda a, scale=1.0: a * scale)(x, scale=3.0), x * 3.0)


def test_api_errors():
    x = rand(3, 4)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(lambda: 1)()
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        vmap(lambda a, b: a, in_dims=(0, 0, 0))(x, x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, b: a, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match=r"expected in_dim to satisfy -2 <= in_dim < 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="Expected all tensors to have the same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(x, rand(4, 4))
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
        vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of `outputs`"):
        vmap(lambda a: (a, a), out_dims=(0, 0, 0))(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', 'different', or 'same'"):
        vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(ValueError, match=r"chunk_size should be None or greater than 0. \(got 0\)"):
        vmap(lambda a: a, chunk_size=0)
    with pytest.raises(RuntimeError, match="calling .item\\(\\) on a Tensor"):
        vmap(lambda a: a.sum().item())(x)
    with pytest.raises(RuntimeError, match="numpy\\(\\) of a batched tensor"):
        vmap(lambda a: a.numpy())(x)
    # the level stack and the thread's keys are restored after an error
    assert sdk._functorch.vmap.current_level() is None
    assert "FuncTorchVmapMode" not in str(_C._dispatch_tls_local_include_set())


def test_reductions_views_and_indexing(device):
    x = rand(4, 3, 5, device=device)
    idx = sdk.tensor([2, 0, 1], device=device)
    cases = [
        lambda a: a.sum(), lambda a: a.sum(1), lambda a: a.mean((0, 1)), lambda a: a.amax(-1, keepdim=True),
        lambda a: a.max(), lambda a: a.argmax(), lambda a: a.argmax(0), lambda a: a.max(1)[1], lambda a: a.std(),
        lambda a: a.softmax(-1), lambda a: a.cumsum(0), lambda a: a.sort(1)[0], lambda a: a.logsumexp(1),
        lambda a: a.T, lambda a: a.transpose(0, 1).contiguous().view(15), lambda a: a.reshape(5, 3),
        lambda a: a[1], lambda a: a[:, 1:4:2], lambda a: a[..., None], lambda a: a.unsqueeze(0).expand(2, 3, 5),
        lambda a: a.flatten(), lambda a: a.permute(1, 0), lambda a: a[idx], lambda a: a[:, idx],
        lambda a: a.index_select(1, idx), lambda a: a.split(2, 1)[1], lambda a: a.chunk(3, 1)[2],
        lambda a: a.unbind(0)[2], lambda a: sdk.cat([a, a * 2], 1), lambda a: sdk.stack([a, a], 0),
        lambda a: a.flip(0), lambda a: a.tril(), lambda a: a.repeat(2, 1), lambda a: a.narrow(1, 1, 2),
        lambda a: a.diagonal(), lambda a: a.gather(1, sdk.zeros(3, 2, dtype=sdk.int64, device=device)),
    ]
    with no_fallback():
        for i, fn in enumerate(cases):
            assert_close(vmap(fn)(x), loop(fn, x), msg=lambda m, i=i: f"case {i}: {m}")
        # a 0-dim logical tensor reduced
        s = rand(6, device=device)
        for fn in (lambda a: a.sum(), lambda a: a.sum(0), lambda a: a.mean(), lambda a: a.amax()):
            assert_close(vmap(fn)(s), loop(fn, s))


def test_matmul_family(device):
    a, b = rand(4, 3, 5, device=device), rand(4, 5, 2, device=device, seed=1)
    w, v = rand(5, 2, device=device, seed=2), rand(4, 5, device=device, seed=3)
    c = rand(4, 6, 3, 5, device=device, seed=4)
    with no_fallback():
        assert_close(vmap(sdk.matmul)(a, b), a @ b)
        assert_close(vmap(lambda x: x @ w)(a), a @ w)
        assert_close(vmap(lambda x: w.T @ x, in_dims=0)(b), loop(lambda x: w.T @ x, b))
        assert_close(vmap(sdk.dot)(v, v), (v * v).sum(-1))
        assert_close(vmap(lambda x: x @ w)(v), v @ w)  # 1-D @ 2-D
        assert_close(vmap(lambda x, y: x @ y)(a, v), loop(lambda x, y: x @ y, a, v))  # 2-D @ batched 1-D
        assert_close(vmap(lambda x: x @ w)(c), loop(lambda x: x @ w, c))  # 3-D @ 2-D
        assert_close(vmap(lambda x, y: x @ y)(c, b), loop(lambda x, y: x @ y, c, b))  # 3-D @ batched 2-D
        assert_close(vmap(sdk.mm)(a, b), loop(sdk.mm, a, b))
        assert_close(vmap(lambda x: sdk.addmm(sdk.ones(2, device=device), x, w, beta=0.5, alpha=2.0))(a),
                     loop(lambda x: sdk.addmm(sdk.ones(2, device=device), x, w, beta=0.5, alpha=2.0), a))
        bias = rand(2, device=device, seed=5)
        assert_close(vmap(lambda x: sdk.nn.functional.linear(x, w.T, bias))(a),
                     loop(lambda x: sdk.nn.functional.linear(x, w.T, bias), a))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        vmap(sdk.mm)(v, b)


def test_nested_vmap(device):
    x, y = rand(2, 3, 5, device=device), rand(2, 3, 5, device=device, seed=1)
    with no_fallback():
        assert_close(vmap(vmap(sdk.dot))(x, y), (x * y).sum(-1))
        # the inner vmap maps a different dim, and one input only at the outer level
        w = rand(2, 5, device=device, seed=2)
        out = vmap(vmap(lambda a, b: (a * b).sum(), in_dims=(1, None)), in_dims=(0, 0))(x.transpose(1, 2), w)
        assert_close(out, (x * w.unsqueeze(1)).sum(-1))
        # a nested vmap with out_dims and a reduction across levels
        out = vmap(vmap(lambda a: a.softmax(0), out_dims=1))(x)
        assert_close(out, x.softmax(-1).transpose(1, 2))
        m = rand(4, 5, 2, device=device, seed=3)
        assert_close(vmap(vmap(lambda a, b: a @ b, in_dims=(0, None)), in_dims=(None, 0))(x[0], m),
                     sdk.stack([x[0] @ m[i] for i in range(4)]))


def test_in_place(device):
    x, y = rand(4, 3, device=device), rand(4, 3, device=device, seed=1)
    xc = x.clone()

    def f(a, b):
        a.add_(b)
        a.mul_(2)
        return a

    with no_fallback():
        out = vmap(f)(xc, y)
    assert_close(xc, (x + y) * 2)  # written through to the input
    assert_close(out, (x + y) * 2)
    # writing a batched value into an unbatched tensor is PyTorch's error
    with pytest.raises(RuntimeError, match=r"vmap: inplace arithmetic\(self, \*extra_args\) is not possible"):
        vmap(lambda a, b: a.add_(b), in_dims=(None, 0))(sdk.ones(3, device=device), y)
    # __setitem__ of a batched tensor writes its own slice
    z = sdk.zeros(4, 3, device=device)

    def g(t, v):
        t[1] = v.sum()
        return t

    vmap(g)(z, y)
    assert_close(z[:, 1], y.sum(1))


def test_like_factories(device):
    x = rand(4, 3, device=device)
    with no_fallback():
        out = vmap(lambda a: sdk.zeros_like(a) + a)(x)
        assert_close(out, x)
        out = vmap(lambda a: sdk.ones_like(a).add_(a))(x)  # in-place into the batched result: allowed
        assert_close(out, x + 1)
        out = vmap(lambda a: sdk.empty_like(a).copy_(a) * 2)(x)
        assert_close(out, x * 2)
        out = vmap(lambda a: sdk.full_like(a, 3.0))(x)
        assert_close(out, sdk.full((4, 3), 3.0, device=device))


def test_slow_fallback_warns_once(ns):
    lib = sdk.library.Library(ns, "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    calls = []

    def twice(x):
        calls.append(tuple(x.shape))
        return x * 2

    lib.impl("twice", twice, "CompositeExplicitAutograd")
    op = getattr(getattr(sdk.ops, ns), "twice")
    x = rand(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = vmap(op)(x)
        out2 = vmap(op)(x)
    msgs = [str(w.message) for w in caught if "performance drop" in str(w.message)]
    assert msgs == [f"There is a performance drop because we have not yet implemented the batching rule for "
                    f"{ns}::twice. Please file us an issue on GitHub so that we can prioritize its implementation."]
    assert calls == [(4,)] * 6  # once per element, on the slices
    assert_close(out, x * 2) and assert_close(out2, x * 2)
    with pytest.raises(RuntimeError, match=r"vmap: " + ns + r"::twice_\(self, \*extra_args\) is not possible because "
                       r".* at level 1"):
        lib.define("twice_(Tensor(a!) x, Tensor y) -> Tensor(a!)")
        lib.impl("twice_", lambda x, y: x.add_(y), "CompositeExplicitAutograd")
        vmap(getattr(sdk.ops, ns).twice_, in_dims=(None, 0))(sdk.zeros(4), x)


def test_custom_op_register_vmap(ns, device):
    @sdk.library.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: sdk.Tensor, k: float) -> sdk.Tensor:
        return x * k

    @sdk.library.custom_op(f"{ns}::norm_rows", mutates_args=())
    def norm_rows(x: sdk.Tensor) -> sdk.Tensor:
        return x / x.sum()

    seen = []

    def scale_vmap(info, in_dims, x, k):
        seen.append((info.batch_size, info.randomness, in_dims, tuple(x.shape)))
        return x * k, in_dims[0]

    scale.register_vmap(scale_vmap)
    @sdk.library.register_vmap(f"{ns}::norm_rows")
    def norm_rows_vmap(info, in_dims, x):
        x = x.movedim(in_dims[0], 0) if hasattr(x, "movedim") else (x if in_dims[0] == 0 else x.T)
        return x / x.sum(-1, keepdim=True), 0


    x = rand(3, 4, device=device)
    with no_fallback():
        out = vmap(lambda t: scale(t, 2.0), in_dims=1, randomness="same")(x)
    assert seen == [(4, "same", (1, None), (3, 4))]
    assert_close(out, (x * 2).T)
    with no_fallback():
        assert_close(vmap(norm_rows)(x.abs() + 1), loop(norm_rows, x.abs() + 1))
    # PyTorch's VmapInfo fields
    assert sdk._functorch.VmapInfo(3, "error").batch_size == 3


def test_custom_op_without_rule_loops(ns, device):
    @sdk.library.custom_op(f"{ns}::cube", mutates_args=())
    def cube(x: sdk.Tensor) -> sdk.Tensor:
        return x * x * x

    x = rand(5, 2, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = vmap(cube)(x)
    assert any(f"batching rule for {ns}::cube" in str(w.message) for w in caught)
    assert_close(out, x * x * x)


def test_randomness(device):
    x = sdk.zeros(4, 6, device=device)
    with pytest.raises(RuntimeError, match="vmap: called random operation while in randomness error mode"):
        vmap(lambda a: a + sdk.rand(6, device=device))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: sdk.randn_like(a))(x)
    different = vmap(lambda a: a + sdk.rand(6, device=device), randomness="different")(x)
    same = vmap(lambda a: a + sdk.rand(6, device=device), randomness="same")(x)
    assert not np.allclose(different[0].cpu().numpy(), different[1].cpu().numpy())
    assert all(np.array_equal(same[0].cpu().numpy(), same[i].cpu().numpy()) for i in range(4))
    like = vmap(lambda a: sdk.randn_like(a), randomness="different")(x)
    assert like.shape == (4, 6) and not np.allclose(like[0].cpu().numpy(), like[1].cpu().numpy())
    like = vmap(lambda a: sdk.rand_like(a), randomness="same")(x)
    assert np.array_equal(like[0].cpu().numpy(), like[3].cpu().numpy())
    # in-place draws into a batched tensor
    y = sdk.zeros(4, 6, device=device)
    vmap(lambda a: a.uniform_(), randomness="different")(y)
    assert not np.allclose(y[0].cpu().numpy(), y[1].cpu().numpy())
    vmap(lambda a: a.normal_(), randomness="same")(y)
    assert np.array_equal(y[0].cpu().numpy(), y[2].cpu().numpy())
    with pytest.raises(RuntimeError, match="Cannot ask for different inplace randomness on an unbatched tensor"):
        vmap(lambda a, b: b.uniform_(), in_dims=(0, None), randomness="different")(x, sdk.zeros(6, device=device))
    # dropout: train=True is random, eval is not
    ones = sdk.ones(4, 200, device=device)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: sdk.nn.functional.dropout(a, 0.5, training=True))(ones)
    assert_close(vmap(lambda a: sdk.nn.functional.dropout(a, 0.5, training=False))(ones), ones)
    d = vmap(lambda a: sdk.nn.functional.dropout(a, 0.5, training=True), randomness="different")(ones)
    assert not np.array_equal(d[0].cpu().numpy(), d[1].cpu().numpy())
    d = vmap(lambda a: sdk.nn.functional.dropout(a, 0.5, training=True), randomness="same")(ones)
    assert np.array_equal(d[0].cpu().numpy(), d[1].cpu().numpy())
    # reproducible under manual_seed
    sdk.manual_seed(7)
    r1 = vmap(lambda a: sdk.randn(6, device=device) + a, randomness="different")(x)
    sdk.manual_seed(7)
    r2 = vmap(lambda a: sdk.randn(6, device=device) + a, randomness="different")(x)
    assert_close(r1, r2)
    # nested: inner "same", outer "different": equal along the inner dim, different along the outer one
    z = sdk.zeros(3, 2, 5, device=device)
    n = vmap(vmap(lambda a: a + sdk.rand(5, device=device), randomness="same"), randomness="different")(z)
    n = n.cpu().numpy()
    assert np.array_equal(n[0, 0], n[0, 1]) and not np.allclose(n[0, 0], n[1, 0])


def test_chunk_size(device):
    x, w = rand(10, 4, device=device), rand(4, 3, device=device, seed=1)
    for chunk in (1, 3, 10, 20):
        assert_close(vmap(lambda a: a @ w, chunk_size=chunk)(x), x @ w)
        a, b = vmap(lambda t: (t.sum(), t * 2), chunk_size=chunk, out_dims=(0, 1))(x)
        assert_close(a, x.sum(1)) and assert_close(b, (x * 2).T)
    if device != "cpu":
        return  # "same" across chunks restores the cpu generator's state (docs/vmap.md)
    same = vmap(lambda a: a + sdk.rand(3), randomness="same", chunk_size=2)(sdk.zeros(5, 3))
    assert all(np.array_equal(same[0].cpu().numpy(), same[i].cpu().numpy()) for i in range(5))


# ---------------------------------------------------------------------------------------------
# autograd
# ---------------------------------------------------------------------------------------------
def _model(w, b, x, t):
    return ((x @ w + b - t) ** 2).mean()


def test_per_sample_grads_vmap_of_grad(device):
    """Per-sample gradients of a small linear model: vmap(grad(loss)) over the examples matches a loop."""
    w, b = rand(5, 3, device=device), rand(3, device=device, seed=1)
    x, t = rand(8, 5, device=device, seed=2), rand(8, 3, device=device, seed=3)
    with no_fallback():
        gw, gb = vmap(grad(_model, argnums=(0, 1)), in_dims=(None, None, 0, 0))(w, b, x, t)
    ref_w, ref_b = [], []
    for i in range(8):
        wi, bi = w.detach().requires_grad_(True), b.detach().requires_grad_(True)
        _model(wi, bi, x[i], t[i]).backward()
        ref_w.append(wi.grad)
        ref_b.append(bi.grad)
    assert_close(gw, sdk.stack(ref_w)) and assert_close(gb, sdk.stack(ref_b))
    assert not w.requires_grad  # the inputs are not changed
    g, value = grad_and_value(_model)(w, b, x[0], t[0])
    assert_close(g, ref_w[0]) and assert_close(value, _model(w, b, x[0], t[0]))
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        grad(lambda a: a * 2)(w)


def test_autograd_through_vmap(device):
    """Autograd records the batched computation on the values: backward through a vmapped function."""
    w = rand(5, 3, device=device).requires_grad_(True)
    x = rand(8, 5, device=device, seed=1)
    out = vmap(lambda xi: (xi @ w).tanh().sum())(x)
    out.sum().backward()
    w2 = w.detach().requires_grad_(True)
    sum((x[i] @ w2).tanh().sum() for i in range(8)).backward()
    assert_close(w.grad, w2.grad)


def test_vmap_of_vjp_batched_grad_outputs(device):
    """vmap over autograd.grad's grad_outputs: the Jacobian of a function, one row per element."""
    x = rand(4, device=device).requires_grad_(True)
    y = x.sin() * 3
    eye = sdk.eye(4, device=device)
    jac = vmap(lambda v: sdk.autograd.grad(y, x, v, retain_graph=True)[0])(eye)
    assert_close(jac, sdk.diag(x.detach().cos() * 3))


def test_vmap_on_pyaccel():
    """The Python backend (samples/python_backend): the rules run its kernels on the values (a subprocess:
    renaming a backend is once per process)."""
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    paths = [str(root), str(root / "samples" / "python_backend"), str(root / "samples" / "accel_sim")] + sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    code = textwrap.dedent("""
        import warnings
        import numpy as np
        import backend_sdk as sdk
        import pyaccel
        from backend_sdk.func import vmap, grad
        warnings.simplefilter("error", UserWarning)  # no slow fallback for these
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((6, 4, 5)).astype(np.float32)
        wn = rng.standard_normal((5, 3)).astype(np.float32)
        x, w = sdk.from_numpy(xn).to("pyaccel"), sdk.from_numpy(wn).to("pyaccel")
        out = vmap(lambda a: (a @ w).relu().sum(0))(x)
        assert out.device.type == "pyaccel"
        np.testing.assert_allclose(out.cpu().numpy(), np.maximum(xn @ wn, 0).sum(1), rtol=1e-5, atol=1e-5)
        g = vmap(grad(lambda w_, a: (a @ w_).sum()), in_dims=(None, 0))(w, x)
        np.testing.assert_allclose(g.cpu().numpy(), np.broadcast_to(xn.sum(1)[:, :, None], (6, 5, 3)),
                                   rtol=1e-5, atol=1e-5)
        r = vmap(lambda a: a + sdk.rand(5, device="pyaccel"), randomness="different")(sdk.zeros(3, 5, device="pyaccel"))
        assert not np.allclose(r[0].cpu().numpy(), r[1].cpu().numpy())
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=str(root), env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr
