"""vmap's gaps closed in issue 19's second round: batching rules for nll_loss / cross_entropy (Note [Batched
nll_loss]), batched index tensors (Note [Batched indices]), a batched conv weight, "same" randomness with
chunk_size on every device, and the lifetime of register_vmap rules (Note [register_vmap lifetime]).

Each result is compared with the loop over the slices, and the rules must not reach the slow fallback."""
from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk.func import grad, vmap
from backend_sdk.testing import assert_close

F = sdk.nn.functional


def rand(*shape: int, device: str, seed: int = 0) -> sdk.Tensor:
    rng = np.random.default_rng(seed + 11 * sum(shape))
    return sdk.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(device)


def randint(high: int, *shape: int, device: str, seed: int = 0) -> sdk.Tensor:
    rng = np.random.default_rng(seed + 13 * sum(shape))
    return sdk.from_numpy(rng.integers(0, high, shape)).to(device)


@contextlib.contextmanager
def no_fallback():
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        yield


def stack_loop(fn, *args):
    return sdk.stack([fn(*[a[i] for a in args]) for i in range(args[0].shape[0])])


# ---------------------------------------------------------------------------------------------
# nll_loss / cross_entropy
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll_loss_rules(device, reduction):
    x = rand(5, 4, 3, device=device)
    t = randint(3, 5, 4, device=device)
    t[1, 2] = -100  # ignored: excluded from element 1's mean
    w = rand(3, device=device, seed=1).abs() + 0.1
    for weight in (None, w):
        ref = stack_loop(lambda a, b: F.cross_entropy(a, b, weight=weight, reduction=reduction), x, t)
        with no_fallback():
            got = vmap(lambda a, b: F.cross_entropy(a, b, weight=weight, reduction=reduction))(x, t)
            nll = vmap(lambda a, b: F.nll_loss(a.log_softmax(-1), b, weight=weight, reduction=reduction))(x, t)
        assert_close(got, ref) and assert_close(nll, ref)
    # a batched class weight: each element its own weights
    ws = rand(5, 3, device=device, seed=2).abs() + 0.1
    with no_fallback():
        got = vmap(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction))(x, t, ws)
    assert_close(got, stack_loop(lambda a, b, c: F.cross_entropy(a, b, weight=c, reduction=reduction), x, t, ws))
    # an unbatched target, a 1-D input with a 0-dim target, spatial inputs (N, C, d1, d2)
    with no_fallback():
        got = vmap(lambda a: F.cross_entropy(a, t[0], reduction=reduction))(x)
    assert_close(got, stack_loop(lambda a: F.cross_entropy(a, t[0], reduction=reduction), x))
    with no_fallback():
        got = vmap(lambda a, b: F.nll_loss(a, b, reduction=reduction))(x[:, 0], t[:, 0].abs())
    assert_close(got, stack_loop(lambda a, b: F.nll_loss(a, b, reduction=reduction), x[:, 0], t[:, 0].abs()))
    x4, t4 = rand(3, 2, 3, 4, 2, device=device), randint(3, 3, 2, 4, 2, device=device)
    with no_fallback():
        got = vmap(lambda a, b: F.cross_entropy(a, b, weight=w, reduction=reduction))(x4, t4)
    assert_close(got, stack_loop(lambda a, b: F.cross_entropy(a, b, weight=w, reduction=reduction), x4, t4))


def test_per_sample_grads_of_a_classifier(device):
    """vmap(grad) of cross_entropy: the rules are recorded by autograd and match the per-example backward."""
    w = rand(4, 3, device=device)
    x, t = rand(6, 2, 4, device=device, seed=1), randint(3, 6, 2, device=device)
    with no_fallback():
        g = vmap(grad(lambda w_, a, b: F.cross_entropy(a @ w_, b)), in_dims=(None, 0, 0))(w, x, t)
    for i in range(6):
        wi = w.detach().requires_grad_(True)
        F.cross_entropy(x[i] @ wi, t[i]).backward()
        assert_close(g[i], wi.grad)


def test_nll_loss_errors_under_vmap_are_the_kernels():
    x, t = rand(2, 4, 3, device="cpu"), sdk.tensor([[0, 1, 2, 3], [0, 0, 0, 0]])
    with pytest.raises(IndexError, match="out of bounds"):
        vmap(F.cross_entropy)(x, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a wrong-size weight goes to the loop, whose kernel raises
        with pytest.raises(ValueError, match="weight tensor should be defined either for all 3 classes"):
            vmap(lambda a, b: F.cross_entropy(a, b, weight=sdk.ones(4)))(x, t.clamp(max=2))


# ---------------------------------------------------------------------------------------------
# batched index tensors
# ---------------------------------------------------------------------------------------------
def test_batched_indices(device):
    x = rand(3, 4, 5, device=device)
    idx = randint(4, 3, 2, device=device)
    src = rand(3, 2, 5, device=device, seed=1)
    with no_fallback():
        assert_close(vmap(lambda a, i: a.index_select(0, i))(x, idx), stack_loop(lambda a, i: a.index_select(0, i),
                                                                                  x, idx))
        # an unbatched self with a batched index, along dim 1
        i5 = randint(5, 3, 3, device=device, seed=2)
        assert_close(vmap(lambda i: x[0].index_select(1, i))(i5), sdk.stack([x[0].index_select(1, i5[b])
                                                                            for b in range(3)]))
        got = vmap(lambda a, i, s: a.index_add(0, i, s, alpha=2))(x, idx, src)
        assert_close(got, stack_loop(lambda a, i, s: a.index_add(0, i, s, alpha=2), x, idx, src))
        got = vmap(lambda a, i, s: a.index_copy(0, i, s))(x, randint(4, 3, 2, device=device, seed=5) * 0 +
                                                           sdk.tensor([0, 3], device=device), src)
        assert_close(got, sdk.stack([x[b].index_copy(0, sdk.tensor([0, 3], device=device), src[b])
                                     for b in range(3)]))
        vals = rand(3, device=device, seed=3)
        got = vmap(lambda a, i, v: a.index_fill(1, i, v))(x, i5, vals)
        assert_close(got, sdk.stack([x[b].index_fill(1, i5[b], vals[b]) for b in range(3)]))
        # in place into the batched input writes through
        y = x.clone()
        vmap(lambda a, i, s: a.index_add_(0, i, s))(y, idx, src)
        assert_close(y, stack_loop(lambda a, i, s: a.index_add(0, i, s), x, idx, src))
    # an index out of range of its own element fails (it does not read the neighbour's rows), as the loop's does:
    # an IndexError on cpu, the kernel's fault at the next synchronisation on a device
    errors = IndexError if device == "cpu" else (IndexError, sdk.AcceleratorError)
    for bad in ([[0, 1], [2, 4], [0, 0]], [[0], [-1], [0]]):
        with pytest.raises(errors, match="out of bounds"):
            vmap(lambda a, i: a.index_select(0, i))(x, sdk.tensor(bad, device=device))
            if device != "cpu":
                sdk.accelerator.synchronize()


def test_batched_advanced_indices(device):
    """x[idx] with batched integer indices (aten::index): adjacent and separated advanced indices, mixed with
    unbatched ones, and an unbatched self."""
    x = rand(3, 4, 5, 6, device=device)
    i, j = randint(4, 3, 2, device=device), randint(5, 3, 2, device=device, seed=1)
    k, u = randint(6, 3, 7, 2, device=device, seed=2), randint(5, 2, device=device, seed=3)
    s = randint(4, 3, device=device, seed=4)  # a 0-dim index per element
    cases = [(lambda a, b: a[b], (x, i)), (lambda a, b: a[:, b], (x, j)), (lambda a, b, c: a[b, c], (x, i, j)),
             (lambda a, b: a[b, u], (x, i)), (lambda a, b: a[:, :, b], (x, k)), (lambda a, b, c: a[b, :, c], (x, i, k)),
             (lambda a, c: a[:, u, c], (x, k)), (lambda b: x[0][b], (i,)), (lambda b: x[0][:, b], (j,)),
             # a 0-dim index per element (through aten::index: Tensor.__getitem__ reads a 0-dim index as an int)
             (lambda a, b: sdk.ops.aten.index.Tensor(a, [b]), (x, s))]
    for fn, args in cases:
        with no_fallback():
            got = vmap(fn)(*args)
        assert_close(got, stack_loop(fn, *args))


# ---------------------------------------------------------------------------------------------
# a batched conv weight
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("groups", [1, 2])
def test_conv_with_batched_weight(device, groups):
    x = rand(3, 2, 4, 5, 5, device=device)
    w = rand(3, 6, 4 // groups, 3, 3, device=device, seed=1)
    b = rand(3, 6, device=device, seed=2)
    tol = dict(rtol=1e-4, atol=1e-4)
    with no_fallback():
        got = vmap(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1, groups=groups))(x, w, b)
        assert_close(got, stack_loop(lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1, groups=groups), x, w, b), **tol)
        # unbatched input, batched weight; a logical input without a conv batch dim
        got = vmap(lambda ww: F.conv2d(x[0], ww, stride=2, groups=groups))(w)
        assert_close(got, sdk.stack([F.conv2d(x[0], w[i], stride=2, groups=groups) for i in range(3)]), **tol)
        assert_close(vmap(lambda a, ww: F.conv2d(a, ww, groups=groups))(x[:, 0], w),
                     stack_loop(lambda a, ww: F.conv2d(a, ww, groups=groups), x[:, 0], w), **tol)
        # conv1d with an unbatched weight and a batched bias
        x1, w1, b1 = rand(3, 2, 4, 7, device=device), rand(5, 4, 3, device=device), rand(3, 5, device=device)
        assert_close(vmap(lambda a, bb: F.conv1d(a, w1, bb))(x1, b1),
                     stack_loop(lambda a, bb: F.conv1d(a, w1, bb), x1, b1), **tol)
        # per-sample gradients of a conv weight: grad batches the shared weight along the vmap level
        wc = rand(6, 4, 3, 3, device=device, seed=4)
        gs = vmap(grad(lambda ww, a: F.conv2d(a, ww).tanh().sum()), in_dims=(None, 0))(wc, x)
    for i in range(3):
        wi = wc.detach().requires_grad_(True)
        F.conv2d(x[i], wi).tanh().sum().backward()
        assert_close(gs[i], wi.grad, **tol)


# ---------------------------------------------------------------------------------------------
# "same" randomness with chunk_size, on every device's generator
# ---------------------------------------------------------------------------------------------
def test_same_randomness_with_chunks_on_every_device(device):
    x = sdk.zeros(8, 5, device=device)

    def f(t):
        return t + sdk.rand(5, device=device)

    sdk.manual_seed(3)
    whole = vmap(f, randomness="same")(x)
    sdk.manual_seed(3)
    chunked = vmap(f, randomness="same", chunk_size=3)(x)
    assert_close(chunked, whole)  # every chunk started from the same state of this device's generator
    assert_close(chunked, chunked[0].expand(8, 5))
    # "different" chunks draw on: the elements differ
    diff = vmap(f, randomness="different", chunk_size=3)(x)
    assert not bool((diff[0] == diff[5]).all())


# ---------------------------------------------------------------------------------------------
# register_vmap's lib= lifetime
# ---------------------------------------------------------------------------------------------
def test_register_vmap_rule_goes_with_its_library(ns):
    @sdk.library.custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: sdk.Tensor) -> sdk.Tensor:
        return x * 2

    calls = []

    def rule_a(info, in_dims, x):
        calls.append("a")
        return x * 2, in_dims[0]

    def rule_b(info, in_dims, x):
        calls.append("b")
        return x * 2, in_dims[0]

    x = rand(3, 2, device="cpu")
    lib_a = sdk.library.Library(ns, "FRAGMENT")
    sdk.library.register_vmap(f"{ns}::twice", rule_a, lib=lib_a)
    with no_fallback():
        assert_close(vmap(twice)(x), x * 2)
    with sdk.library._scoped_library(ns, "FRAGMENT") as lib_b:
        sdk.library.register_vmap(f"{ns}::twice", rule_b, lib=lib_b)  # the newest wins while it lives
        with no_fallback():
            vmap(twice)(x)
    with no_fallback():
        vmap(twice)(x)  # lib_b destroyed: rule_a again
    assert calls == ["a", "b", "a"]
    lib_a._destroy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_close(vmap(twice)(x), x * 2)  # no rule: the slow fallback
    assert calls == ["a", "b", "a"] and any("performance drop" in str(w.message) for w in caught)
    with pytest.raises(RuntimeError, match="is closed"):
        sdk.library.register_vmap(f"{ns}::twice", rule_a, lib=lib_a)


def test_register_vmap_rules_go_with_the_operator(ns):
    lib = sdk.library.Library(ns, "DEF")
    lib.define("neg2(Tensor x) -> Tensor")
    lib.impl("neg2", lambda x: -x, "CompositeExplicitAutograd")
    sdk.library.register_vmap(f"{ns}::neg2", lambda info, in_dims, x: (-x, in_dims[0]))
    from backend_sdk._functorch import _rules

    assert f"{ns}::neg2" in _rules.vmap_rules
    lib._destroy()
    assert f"{ns}::neg2" not in _rules.vmap_rules
