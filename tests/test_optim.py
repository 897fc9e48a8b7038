"""optim: SGD/Adam/AdamW/RMSprop updates against numpy, param groups, state dicts, hooks, schedulers, and the
acceptance MLP trained on cpu and accel."""
from __future__ import annotations

import math

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn, optim
from backend_sdk.optim import lr_scheduler
from backend_sdk.utils.data import DataLoader, TensorDataset


def _np(t):
    return t.detach().cpu().numpy()


def _param(values, device="cpu"):
    return nn.Parameter(torch.tensor(values, dtype=torch.float32, device=device))


GRADS = [np.array([0.5, -1.0, 2.0], np.float32), np.array([-0.3, 0.2, 1.0], np.float32),
         np.array([1.0, 1.0, -1.0], np.float32)]
P0 = np.array([1.0, 2.0, -1.0], np.float32)


def _run(opt_cls, device, **kw):
    p = _param(P0.tolist(), device)
    opt = opt_cls([p], **kw)
    for g in GRADS:
        p.grad = torch.from_numpy(g.copy()).to(device)
        opt.step()
    return _np(p), opt


def test_sgd_momentum_nesterov_weight_decay_matches_numpy(device):
    lr, mom, wd = 0.1, 0.9, 0.01
    for nesterov in (False, True):
        got, _ = _run(optim.SGD, device, lr=lr, momentum=mom, weight_decay=wd, nesterov=nesterov)
        p, buf = P0.astype(np.float64), None
        for g in GRADS:
            d = g + wd * p
            buf = d.copy() if buf is None else mom * buf + d
            d = d + mom * buf if nesterov else buf
            p = p - lr * d
        assert np.allclose(got, p, atol=1e-6)
    got, _ = _run(optim.SGD, device, lr=0.1, maximize=True)
    assert np.allclose(got, P0 + 0.1 * sum(GRADS), atol=1e-6)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_and_adamw_match_numpy(device, amsgrad):
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    for cls, decoupled in ((optim.Adam, False), (optim.AdamW, True)):
        got, opt = _run(cls, device, lr=lr, weight_decay=wd, amsgrad=amsgrad)
        p = P0.astype(np.float64)
        m = v = vmax = np.zeros(3)
        for t, g in enumerate(GRADS, 1):
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - b2**t) + eps
            p = p - lr / (1 - b1**t) * m / denom
        assert np.allclose(got, p, atol=1e-5), cls.__name__
        state = next(iter(opt.state.values()))
        assert float(state["step"].item()) == 3.0 and state["step"].is_cpu
        assert ("max_exp_avg_sq" in state) == amsgrad


@pytest.mark.parametrize("centered,momentum", [(False, 0.0), (True, 0.5)])
def test_rmsprop_matches_numpy(device, centered, momentum):
    lr, alpha, eps = 0.01, 0.99, 1e-8
    got, _ = _run(optim.RMSprop, device, lr=lr, alpha=alpha, centered=centered, momentum=momentum)
    p = P0.astype(np.float64)
    sq = ga = buf = np.zeros(3)
    for g in GRADS:
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    assert np.allclose(got, p, atol=1e-5)


def test_defaults_and_validation_messages():
    p = [_param([1.0])]
    assert optim.SGD(p).defaults["lr"] == 1e-3
    assert optim.AdamW(p).defaults["weight_decay"] == 1e-2
    assert optim.RMSprop(p).defaults["lr"] == 1e-2 and optim.RMSprop(p).defaults["alpha"] == 0.99
    for call, msg in [
        (lambda: optim.SGD(p, lr=-1), "Invalid learning rate: -1"),
        (lambda: optim.SGD(p, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda: optim.SGD(p, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
        (lambda: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (lambda: optim.Adam(p, eps=-1), "Invalid epsilon value: -1"),
        (lambda: optim.AdamW(p, weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
        (lambda: optim.SGD([], lr=0.1), "optimizer got an empty parameter list"),
    ]:
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            call()
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors or "
                                        "dicts, but got backend_sdk.nn.Parameter"):
        optim.SGD(p[0])
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        optim.SGD([{"params": set(p)}])
    leaf = torch.ones(2).requires_grad_()
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([leaf * 2])
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        optim.SGD([3])
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": p}, {"params": p}])
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.Adam(p, foreach=True, fused=True)


def test_param_groups_zero_grad_and_state_dict_round_trip(device):
    a, b = _param([1.0, 2.0], device), _param([3.0], device)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    for p in (a, b):
        p.grad = torch.ones_like(p)
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["param_groups"][1]["params"] == [1]
    opt.zero_grad(set_to_none=False)
    assert float(a.grad.abs().sum().item()) == 0.0
    opt.zero_grad()
    assert a.grad is None
    a2, b2 = _param([1.0, 2.0]), _param([3.0])
    opt2 = optim.Adam([{"params": [a2]}, {"params": [b2]}], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[1]["lr"] == 0.5
    st = opt2.state[a2]
    assert st["exp_avg"].device.type == "cpu" and st["step"].is_cpu  # cast to the new parameter's device
    assert np.allclose(_np(st["exp_avg"]), _np(opt.state[a]["exp_avg"]))
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        optim.Adam([a2], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size"):
        optim.Adam([{"params": [a2, b2]}, {"params": [_param([0.0])]}]).load_state_dict(sd)


def test_step_hooks_and_closure():
    p = _param([1.0])
    opt = optim.SGD([p], lr=0.5)
    order = []
    opt.register_step_pre_hook(lambda o, args, kwargs: order.append("pre"))
    h = opt.register_step_post_hook(lambda o, args, kwargs: order.append("post"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        order.append("closure")
        return loss

    loss = opt.step(closure)
    assert order == ["pre", "closure", "post"] and float(loss.item()) == 1.0
    assert float(p.item()) == 0.0  # 1 - 0.5 * 2
    h.remove()
    opt.step(closure)
    assert order[-1] == "closure"


def _lrs(sched_fn, steps, lr=1.0):
    opt = optim.SGD([_param([0.0])], lr=lr, momentum=0.9)
    sched = sched_fn(opt)
    out = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out, opt


def test_schedulers_match_closed_forms():
    got, _ = _lrs(lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0.5), 5)
    assert got == pytest.approx([1, 1, 0.5, 0.5, 0.25, 0.25])
    got, _ = _lrs(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.1), 4)
    assert got == pytest.approx([0.1 + 0.9 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)])
    got, _ = _lrs(lambda o: lr_scheduler.LambdaLR(o, lambda e: 0.9**e), 3)
    assert got == pytest.approx([0.9**t for t in range(4)])
    got, _ = _lrs(lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=3), 4)
    assert got == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0])
    got, opt = _lrs(lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10), 9)
    assert got[0] == pytest.approx(1.0 / 25) and max(got) == pytest.approx(1.0, abs=0.05)
    assert got[-1] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    opt = optim.SGD([_param([0.0])], lr=1.0)
    sched = lr_scheduler.StepLR(opt, 1)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()


def _train_mlp(device, opt_name, steps_per_epoch_limit=None):
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 0.5).astype(np.int64)
    ds = TensorDataset(torch.from_numpy(x), torch.from_numpy(labels))
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9) if opt_name == "sgd" else \
        optim.AdamW(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator()
    g.manual_seed(0)
    losses = []
    for _ in range(6):
        for xb, yb in DataLoader(ds, batch_size=16, shuffle=True, generator=g):
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            losses.append(float(loss.item()))
    return losses, model


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_acceptance_mlp_trains_and_cpu_accel_agree(opt_name):
    cpu_losses, cpu_model = _train_mlp("cpu", opt_name)
    accel_losses, accel_model = _train_mlp("accel", opt_name)
    assert np.mean(cpu_losses[-4:]) < 0.6 * np.mean(cpu_losses[:4])
    # accel runs the same CPU kernels on the simulator's worker: the same numbers, step for step.
    assert np.allclose(cpu_losses, accel_losses, rtol=1e-5, atol=1e-6)
    for (n, a), (_, b) in zip(cpu_model.state_dict().items(), accel_model.state_dict().items()):
        assert np.allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6), n


def test_acceptance_mse_regression_with_state_dict_round_trip(tmp_path):
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).to("accel")
    opt = optim.Adam(model.parameters(), lr=0.05)
    xs, ys = torch.from_numpy(x).to("accel"), torch.from_numpy(y).to("accel")
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = nn.MSELoss()(model(xs), ys)
        loss.backward()
        opt.step()
        first = first if first is not None else float(loss.item())
    assert float(loss.item()) < 0.2 * first
    torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, tmp_path / "ckpt.pt")
    ckpt = torch.load(tmp_path / "ckpt.pt", map_location="cpu")
    fresh = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    fresh.load_state_dict(ckpt["model"])
    assert np.allclose(_np(fresh(torch.from_numpy(x))), _np(model(xs)), atol=1e-6)
    opt2 = optim.Adam(fresh.parameters(), lr=0.05)
    opt2.load_state_dict(ckpt["optim"])
    assert float(opt2.state[fresh[0].weight]["step"].item()) == 60.0
