"""Autograd on the accel sample backend (AutogradPrivateUse1): a small MLP trained on accel matches the CPU.

Renaming PrivateUse1 is once per process, so the scenario runs in a subprocess.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCEL = os.path.join(ROOT, "samples", "accel_sim", "accel", "libaccel_sim.so")

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import backend_sdk as B
    import accel
    from backend_sdk.testing import assert_close

    ops = B.ops.aten
    rng = np.random.default_rng(0)
    X = rng.standard_normal((16, 4))
    Y = rng.standard_normal((16, 2))
    labels = rng.integers(0, 3, size=16)
    params0 = [rng.standard_normal((4, 8)) * 0.5, np.zeros(8), rng.standard_normal((8, 3)) * 0.5, np.zeros(3)]

    def train(device, loss_kind):
        params = [B.tensor(p, dtype=B.float32, device=device).requires_grad_() for p in params0]
        x = B.tensor(X, dtype=B.float32, device=device)
        y = B.tensor(Y, dtype=B.float32, device=device)
        t = B.tensor(labels, device=device)
        losses, grads = [], []
        for step in range(4):
            w1, b1, w2, b2 = params
            h = (x.matmul(w1) + b1).relu()
            out = h.matmul(w2) + b2
            if loss_kind == "mse":
                loss = ops.mse_loss(out[:, :2], y)
            else:
                loss = ops.cross_entropy_loss(out, t)
            loss = loss + 0.01 * (w1 * w1).sum()
            assert loss.device.type == device, loss.device
            assert loss.grad_fn is not None
            loss.backward()
            grads.append([p.grad.cpu() for p in params])
            with B.no_grad():
                for p in params:
                    assert p.grad.device.type == device
                    p -= 0.1 * p.grad
                    p.grad = None
            losses.append(loss.item())
        return losses, grads

    for kind in ("mse", "ce"):
        cpu_losses, cpu_grads = train("cpu", kind)
        acc_losses, acc_grads = train("accel", kind)
        assert cpu_losses[-1] < cpu_losses[0], cpu_losses
        assert_close(acc_losses, cpu_losses, rtol=1e-5, atol=1e-6)
        for gc, ga in zip(cpu_grads, acc_grads):
            assert_close(ga, gc, rtol=1e-5, atol=1e-6)
    print("OK")
    """
)


@pytest.mark.skipif(not os.path.exists(ACCEL), reason="the accel sample backend is not built")
def test_mlp_training_on_accel_matches_cpu():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


CASES_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    sys.path.insert(0, "tests")
    import backend_sdk as B
    import accel
    import test_autograd_formulas as F

    ok = []
    for name, (fn, make) in sorted(F.CASES.items()):
        ins = make()
        out_c = fn(*ins)
        gc = B.autograd.grad(out_c.sum(), [i for i in ins if i.requires_grad])
        ins_a = [i.detach().to("accel").requires_grad_(i.requires_grad) for i in ins]
        try:
            out_a = fn(*ins_a)
        except ValueError as e:  # the case builds constant index tensors on the CPU
            assert "same device" in str(e), (name, e)
            continue
        assert out_a.grad_fn is not None and out_a.device.type == "accel", name
        ga = B.autograd.grad(out_a.sum(), [i for i in ins_a if i.requires_grad])
        for x, y in zip(gc, ga):
            assert y.device.type == "accel", (name, y.device)
            np.testing.assert_allclose(x.numpy(), y.cpu().numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
        ok.append(name)
    assert len(ok) >= 90, ok
    print("OK", len(ok))
    """
)


@pytest.mark.skipif(not os.path.exists(ACCEL), reason="the accel sample backend is not built")
def test_every_formula_gives_the_cpu_gradient_on_accel():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", CASES_SCRIPT], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr[-4000:]
