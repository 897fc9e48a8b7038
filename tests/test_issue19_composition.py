"""Issue 19's four parts composed (vmap, autocast, __torch_dispatch__, the profiler) with autograd and with each
other, on cpu, accel, pyaccel and a scaffolded backend.

Every check is a function of the device name (``CHECKS``): the cpu and accel runs call them in this process; the
pyaccel and scaffolded-backend runs call the same functions in a subprocess (renaming a backend is once per
process), so the four backends are held to the same assertions. Each compares against the unbatched / unprofiled
/ unwrapped computation, so a part that silently did nothing (no cast, no batching, no events) fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk.func import grad, vmap
from backend_sdk.profiler import profile, record_function
from backend_sdk.testing import assert_close
from backend_sdk.utils._python_dispatch import TorchDispatchMode
from backend_sdk.utils._pytree import tree_map

F = sdk.nn.functional
ROOT = Path(__file__).resolve().parent.parent


def rand(*shape: int, device: str, seed: int = 0) -> sdk.Tensor:
    rng = np.random.default_rng(seed + 7 * sum(shape))
    return sdk.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(device)


def low_dtype(device: str) -> Any:
    """The autocast dtype the device type defaults to (cpu: bfloat16, the privateuse backends: float16)."""
    return sdk.get_autocast_dtype(device)


class LoggingMode(TorchDispatchMode):
    """Records (overload name, dtypes of the tensor arguments) of every call it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        dtypes = tuple(a.dtype for a in args if isinstance(a, sdk.Tensor))
        self.calls.append((func.name(), dtypes))
        return func(*args, **(kwargs or {}))


class LoggingTensor(sdk.Tensor):
    """A wrapper subclass that computes on its ``elem`` and records the operators it sees."""

    seen: list[tuple[str, tuple]] = []

    @staticmethod
    def __new__(cls, elem: sdk.Tensor) -> "LoggingTensor":
        r = sdk.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(), dtype=elem.dtype,
                                              device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(t):
            return t.elem if isinstance(t, LoggingTensor) else t

        plain = tree_map(unwrap, args)
        cls.seen.append((func.name(), tuple(a.dtype for a in plain if isinstance(a, sdk.Tensor))))
        out = func(*plain, **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: LoggingTensor(t) if isinstance(t, sdk.Tensor) else t, out)


def _mlp_loss(w1: sdk.Tensor, w2: sdk.Tensor, x: sdk.Tensor, t: sdk.Tensor) -> sdk.Tensor:
    """A two-layer model's loss for one example (x: [5], t: [2]) or a batch."""
    return ((x @ w1).tanh() @ w2 - t).pow(2).mean()


# ---------------------------------------------------------------------------------------------
# vmap and autograd
# ---------------------------------------------------------------------------------------------
def check_per_sample_grads(device: str) -> None:
    """autograd under vmap: vmap(grad(loss)) of a small model equals the per-example loop of backward()."""
    w1, w2 = rand(5, 4, device=device), rand(4, 2, device=device, seed=1)
    x, t = rand(6, 5, device=device, seed=2), rand(6, 2, device=device, seed=3)
    g1, g2 = vmap(grad(_mlp_loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(w1, w2, x, t)
    assert tuple(g1.shape) == (6, 5, 4) and tuple(g2.shape) == (6, 4, 2)
    for i in range(6):
        a, b = w1.detach().requires_grad_(True), w2.detach().requires_grad_(True)
        _mlp_loss(a, b, x[i], t[i]).backward()
        assert_close(g1[i], a.grad, rtol=1e-4, atol=1e-5)
        assert_close(g2[i], b.grad, rtol=1e-4, atol=1e-5)
    assert not w1.requires_grad and w1.grad is None  # the transform does not touch its inputs


def check_vmap_under_autograd(device: str) -> None:
    """vmap under autograd: backward() through a vmapped loss reaches the shared weights as the loop's does."""
    w1 = rand(5, 4, device=device).requires_grad_(True)
    w2 = rand(4, 2, device=device, seed=1).requires_grad_(True)
    x, t = rand(6, 5, device=device, seed=2), rand(6, 2, device=device, seed=3)
    losses = vmap(_mlp_loss, in_dims=(None, None, 0, 0))(w1, w2, x, t)
    assert tuple(losses.shape) == (6,) and losses.grad_fn is not None
    losses.sum().backward()
    a, b = w1.detach().requires_grad_(True), w2.detach().requires_grad_(True)
    sum(_mlp_loss(a, b, x[i], t[i]) for i in range(6)).backward()
    assert_close(w1.grad, a.grad, rtol=1e-4, atol=1e-5)
    assert_close(w2.grad, b.grad, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# vmap and autocast
# ---------------------------------------------------------------------------------------------
def check_vmap_inside_autocast(device: str) -> None:
    """Inside autocast the batching rules' operators are cast as the unbatched ones are: the same dtypes, and
    values equal to the loop run under the same autocast."""
    low = low_dtype(device)
    w = rand(5, 3, device=device)
    x, t = rand(6, 4, 5, device=device, seed=1), rand(6, 4, 3, device=device, seed=2)

    def f(xi, ti):
        h = xi @ w                      # lower precision list (cpu's and the devices')
        return h, F.mse_loss(h, ti)     # float32 list (both)

    with sdk.autocast(device):
        h, s = vmap(f)(x, t)
        loop = [f(x[i], t[i]) for i in range(6)]
    assert h.dtype == low and loop[0][0].dtype == low
    assert s.dtype == sdk.float32 and loop[0][1].dtype == sdk.float32
    assert_close(h, sdk.stack([o[0] for o in loop]))
    assert_close(s, sdk.stack([o[1] for o in loop]))
    # outside the region nothing is cast
    assert vmap(f)(x, t)[0].dtype == sdk.float32


def check_per_sample_grads_under_autocast(device: str) -> None:
    """vmap(grad) of a classifier's cross_entropy inside autocast: the matmul runs in the autocast dtype, the loss in
    float32, the per-sample gradients of the float32 weight are float32 and match the loop run under autocast."""
    w = rand(5, 3, device=device)
    x = rand(6, 4, 5, device=device, seed=1)
    t = sdk.from_numpy(np.random.default_rng(0).integers(0, 3, (6, 4))).to(device)

    def loss(w_, a, b):
        logits = a @ w_
        assert logits.dtype == low_dtype(device)
        return F.cross_entropy(logits, b)

    with sdk.autocast(device):
        g = vmap(grad(loss), in_dims=(None, 0, 0))(w, x, t)
        ref = []
        for i in range(6):
            wi = w.detach().requires_grad_(True)
            out = loss(wi, x[i], t[i])
            assert out.dtype == sdk.float32
            out.backward()
            ref.append(wi.grad)
    assert g.dtype == sdk.float32
    assert_close(g, sdk.stack(ref), rtol=1e-2, atol=1e-2)
    with sdk.autocast(device, enabled=False):
        g32 = vmap(grad(lambda w_, a, b: F.cross_entropy(a @ w_, b)), in_dims=(None, 0, 0))(w, x, t)
    assert_close(g, g32, rtol=5e-2, atol=5e-2) and bool((g - g32).abs().max() > 0)  # close, but cast


# ---------------------------------------------------------------------------------------------
# __torch_dispatch__ with vmap and autocast
# ---------------------------------------------------------------------------------------------
def check_mode_sees_vmap_and_autocast(device: str) -> None:
    """A TorchDispatchMode (below autograd, below the batching and autocast keys) sees the operators the batching
    rules run on the values and the casts autocast inserts, in the dtypes they run in."""
    w = rand(5, 3, device=device)
    x = rand(6, 4, 5, device=device, seed=1)
    with LoggingMode() as mode:
        out = vmap(lambda xi: (xi @ w).relu())(x)
    assert out.shape == (6, 4, 3)
    names = mode.names()
    # the batched matmul is one mm on the values folded to 2-D, not one per example
    assert names.count("aten::mm") == 1 and "aten::relu" in names, names
    mm_shapes = [c for c in mode.calls if c[0] == "aten::mm"]
    assert mm_shapes[0][1] == (sdk.float32, sdk.float32)

    low = low_dtype(device)
    with LoggingMode() as mode:
        with sdk.autocast(device):
            y = x[0] @ w
            z = y.float().softmax(-1)
    assert y.dtype == low and z.dtype == sdk.float32
    calls = mode.calls
    mm = calls.index(next(c for c in calls if c[0] == "aten::mm"))
    casts = [c for c in calls[:mm] if c[0] == "aten::_to_copy"]
    assert len(casts) == 2 and all(c[1] == (sdk.float32,) for c in casts), calls  # both inputs cast first
    assert calls[mm][1] == (low, low)

    # all three: the mode sees the batched matmul in the autocast dtype
    with sdk.autocast(device):
        with LoggingMode() as mode:
            vmap(lambda xi: xi @ w)(x)
    assert [c[1] for c in mode.calls if c[0] == "aten::mm"] == [(low, low)], mode.calls


def check_subclass_under_autocast(device: str) -> None:
    """A wrapper subclass under autocast: the casts and the operator reach its __torch_dispatch__, the result is in
    the autocast dtype and equals the plain computation; backward reaches the subclass too."""
    low = low_dtype(device)
    a, w = rand(4, 5, device=device), rand(5, 3, device=device, seed=1)
    LoggingTensor.seen = []
    la = LoggingTensor(a)
    with sdk.autocast(device):
        out = la @ w
        ref = a @ w
    assert isinstance(out, LoggingTensor) and out.dtype == low and out.elem.dtype == low
    assert_close(out.elem, ref)
    names = [n for n, _ in LoggingTensor.seen]
    assert "aten::_to_copy" in names and "aten::mm" in names, names
    assert next(d for n, d in LoggingTensor.seen if n == "aten::mm") == (low, low)

    # a subclass weight that requires grad trains under autocast: its gradient is float32, as the weight
    lw = LoggingTensor(w.detach().requires_grad_(True))
    with sdk.autocast(device):
        loss = (a @ lw).float().sum()
    loss.backward()
    assert lw.grad is not None and lw.grad.dtype == sdk.float32
    g = lw.grad.elem if isinstance(lw.grad, LoggingTensor) else lw.grad
    wr = w.detach().requires_grad_(True)
    with sdk.autocast(device):
        (a @ wr).float().sum().backward()
    assert_close(g, wr.grad)


# ---------------------------------------------------------------------------------------------
# the profiler over the others
# ---------------------------------------------------------------------------------------------
def _counts(prof: Any) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages()}


def check_profile_composed_steps(device: str) -> None:
    """Profiling a vmapped, an autocast and a mode-wrapped training step: the operators each one runs are
    recorded with their call counts (the casts included), under each step's record_function scope."""
    w = rand(5, 3, device=device).requires_grad_(True)
    x, t = rand(6, 5, device=device, seed=1), rand(6, 3, device=device, seed=2)
    with profile(record_shapes=True) as prof:
        with record_function("vmap_step"):
            vmap(lambda xi, ti: ((xi @ w) - ti).pow(2).sum())(x, t).sum().backward()
        with record_function("autocast_step"):
            with sdk.autocast(device):
                loss = (x @ w).float().sub(t).pow(2).sum()
            loss.backward()
        with record_function("mode_step"):
            with LoggingMode() as mode:
                (x @ w).sub(t).pow(2).sum().backward()
    events = prof.events()
    scopes = {e.name: e for e in events if e.name.endswith("_step")}
    assert set(scopes) == {"vmap_step", "autocast_step", "mode_step"}

    def inside(scope: str) -> list[Any]:
        lo, hi = scopes[scope].time_range.start, scopes[scope].time_range.end
        return [e for e in events if e.name != scope and lo <= e.time_range.start and e.time_range.end <= hi]

    def count(scope: str, name: str) -> int:
        return sum(1 for e in inside(scope) if e.name == name)

    # vmap: the batched x @ w is one mm on the values (a rule, not the loop); its backward one more mm (w's grad)
    assert count("vmap_step", "aten::mm") == 2, [e.name for e in inside("vmap_step")]
    # autocast: forward casts x and w (two _to_copy at least), one low-precision mm forward, one backward
    assert count("autocast_step", "aten::mm") == 2
    assert count("autocast_step", "aten::_to_copy") >= 2
    # x @ w landed on the Autocast key with float32 inputs; the mm it runs has the cast (lower precision) inputs
    matmul = next(e for e in inside("autocast_step") if e.name == "aten::matmul")
    assert matmul.dispatch_key.startswith("Autocast") and matmul.input_dtypes == ["float", "float"], \
        (matmul.dispatch_key, matmul.input_dtypes)
    fwd_mm = next(e for e in inside("autocast_step") if e.name == "aten::mm")
    assert fwd_mm.dispatch_key.startswith("Autograd") and "float" not in fwd_mm.input_dtypes, \
        (fwd_mm.dispatch_key, fwd_mm.input_dtypes)
    # the mode's step: the profiler records the same operators the mode saw (the mode runs them)
    assert count("mode_step", "aten::mm") == 2 and mode.names().count("aten::mm") == 2
    c = _counts(prof)
    assert c["aten::mm"] == 6, c


CHECKS: list[Callable[[str], None]] = [
    check_per_sample_grads,
    check_vmap_under_autograd,
    check_vmap_inside_autocast,
    check_per_sample_grads_under_autocast,
    check_mode_sees_vmap_and_autocast,
    check_subclass_under_autocast,
    check_profile_composed_steps,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_composition(check: Callable[[str], None], device: str) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")  # the rules, not the loop
        check(device)


def run_checks_in_subprocess(device: str, imports: str, extra_paths: list[str], cwd: Path) -> None:
    """Runs every check on ``device`` in a fresh interpreter after ``imports`` (which attaches the backend)."""
    paths = [str(ROOT), *extra_paths] + [p for p in sys.path if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    code = textwrap.dedent(f"""
        import warnings
        {imports}
        sys_path_tests = {str(ROOT / 'tests')!r}
        import sys; sys.path.insert(0, sys_path_tests)
        import test_issue19_composition as m
        warnings.filterwarnings("error", message="There is a performance drop")
        for check in m.CHECKS:
            check({device!r})
            print("passed", check.__name__)
        print("all ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=str(cwd), env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "all ok" in r.stdout, r.stdout + r.stderr


def test_composition_on_pyaccel() -> None:
    """The Python backend (samples/python_backend): the same checks with its kernels and its CPU fallback."""
    run_checks_in_subprocess("pyaccel", "import pyaccel", [str(ROOT / "samples" / "python_backend")], ROOT)


def test_composition_on_a_scaffolded_backend(tmp_path: Path) -> None:
    """A backend generated by ``python -m backend_sdk new NAME --python-only`` (the cheapest scaffold: no C++ build)
    gets the same composition without writing anything for it."""
    from backend_sdk._scaffold import create_project

    root = create_project("tcnpu_compose", tmp_path, python_only=True)
    run_checks_in_subprocess("tcnpu_compose", "import tcnpu_compose", [str(root)], tmp_path)
