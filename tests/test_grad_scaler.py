"""amp.GradScaler (issue 19) and the operators behind it, aten::_amp_foreach_non_finite_check_and_unscale_ and
aten::_amp_update_scale_, on every backend: skipping a step with an inf/NaN gradient and backing off, growth after
growth_interval clean steps, the stage errors, state_dict, and an fp16 training loop under autocast."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import backend_sdk as sdk
import backend_sdk.nn.functional as F

aten = sdk.ops.aten


def _model(device: str) -> tuple:
    sdk.manual_seed(0)
    model = sdk.nn.Linear(4, 2).to(device)
    return model, sdk.optim.SGD(model.parameters(), lr=0.1)


def _backward(model, scaler, device, poison=None):
    x = sdk.ones(3, 4).to(device)
    loss = model(x).sum()
    scaler.scale(loss).backward()
    if poison is not None:
        g = model.weight.grad.cpu()
        g[0, 0] = poison
        model.weight.grad.copy_(g.to(device))


def test_scale_multiplies_on_the_losss_device(device):
    scaler = sdk.amp.GradScaler(device, init_scale=1024.0)
    loss = sdk.tensor(2.0).to(device)
    out = scaler.scale(loss)
    assert out.device.type == device and out.item() == 2048.0
    assert scaler._scale.device.type == device and scaler._scale.dtype == sdk.float32
    outs = scaler.scale([loss, (loss, loss * 2)])
    assert [outs[0].item(), outs[1][0].item(), outs[1][1].item()] == [2048.0, 2048.0, 4096.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([loss, 3])


@pytest.mark.parametrize("poison", [float("inf"), float("nan")])
def test_a_step_with_a_non_finite_gradient_is_skipped_and_the_scale_backs_off(device, poison):
    model, opt = _model(device)
    scaler = sdk.amp.GradScaler(device, init_scale=2.0**16)
    before = [p.detach().cpu().numpy().copy() for p in model.parameters()]
    _backward(model, scaler, device, poison=poison)
    assert scaler.step(opt) is None
    scaler.update()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().cpu().numpy(), b)  # not stepped
    assert scaler.get_scale() == 2.0**15
    assert scaler._get_growth_tracker() == 0
    # the next, clean, step runs and uses unscaled gradients
    opt.zero_grad()
    _backward(model, scaler, device)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(model.bias.detach().cpu().numpy(), before[1] - 0.1 * 3.0, rtol=1e-6)
    assert scaler.get_scale() == 2.0**15 and scaler._get_growth_tracker() == 1


def test_the_scale_grows_after_growth_interval_clean_steps(device):
    model, opt = _model(device)
    scaler = sdk.amp.GradScaler(device, init_scale=8.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=3)
    scales = []
    for i in range(7):
        opt.zero_grad()
        _backward(model, scaler, device, poison=float("inf") if i == 5 else None)
        scaler.step(opt)
        scaler.update()
        scales.append((scaler.get_scale(), scaler._get_growth_tracker()))
    assert scales == [(8.0, 1), (8.0, 2), (16.0, 0), (16.0, 1), (16.0, 2), (4.0, 0), (4.0, 1)]


def test_unscale_then_step_and_the_stage_errors(device):
    model, opt = _model(device)
    scaler = sdk.amp.GradScaler(device, init_scale=4.0)
    with pytest.raises(AssertionError, match=r"Attempted step but _scale is None.  This may indicate your script did "
                                             r"not use scaler.scale\(loss or outputs\) earlier in the iteration."):
        scaler.step(opt)
    _backward(model, scaler, device)
    scaler.unscale_(opt)
    np.testing.assert_allclose(model.bias.grad.cpu().numpy(), [3.0, 3.0])  # 4 * 3 / 4
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    scaler.step(opt)  # does not unscale a second time
    np.testing.assert_allclose(model.bias.grad.cpu().numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)."):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    half = sdk.nn.Linear(2, 2).to(device).half()
    half_opt = sdk.optim.SGD(half.parameters(), lr=0.1)
    for p in half.parameters():
        p.grad = sdk.ones_like(p)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(half_opt)


def test_update_with_a_new_scale_and_state_dict(device):
    model, opt = _model(device)
    scaler = sdk.amp.GradScaler(device, init_scale=16.0, growth_interval=5)
    _backward(model, scaler, device)
    scaler.step(opt)
    scaler.update(new_scale=128.0)
    assert scaler.get_scale() == 128.0
    _backward(model, scaler, device)
    scaler.step(opt)
    scaler.update(new_scale=sdk.tensor([32.0]).to(device))
    assert scaler.get_scale() == 32.0
    state = scaler.state_dict()
    assert state == {"scale": 32.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                     "_growth_tracker": 0}
    other = sdk.amp.GradScaler(device)
    other.load_state_dict(state)
    assert other.get_scale() == 32.0 and other.get_growth_interval() == 5
    restored = pickle.loads(pickle.dumps(scaler))
    assert restored.get_scale() == 32.0 and restored._scale is None
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler."):
        other.load_state_dict({})


def test_a_disabled_scaler_is_transparent(device):
    model, opt = _model(device)
    scaler = sdk.amp.GradScaler(device, enabled=False)
    loss = sdk.tensor(3.0).to(device)
    assert scaler.scale(loss) is loss
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()
    before = model.bias.detach().cpu().numpy().copy()
    model(sdk.ones(3, 4).to(device)).sum().backward()
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model.bias.detach().cpu().numpy(), before)


def test_bad_constructor_arguments():
    with pytest.raises(AssertionError, match=r"The growth factor must be > 1.0."):
        sdk.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match=r"The backoff factor must be < 1.0."):
        sdk.amp.GradScaler("cpu", backoff_factor=1.5)
    with pytest.raises(RuntimeError, match=r"device type at start of device string: tpu"):
        sdk.amp.GradScaler("tpu")
    with pytest.warns(UserWarning, match=r"GradScaler is enabled, but CUDA is not available.  Disabling."):
        assert not sdk.amp.GradScaler("cuda").is_enabled()
    with pytest.warns(FutureWarning, match=r"`backend_sdk.accel.amp.GradScaler\(args...\)` is deprecated. Please use "
                                           r"`backend_sdk.amp.GradScaler\('accel', args...\)` instead."):
        legacy = sdk.accel.amp.GradScaler(init_scale=4.0)
    assert isinstance(legacy, sdk.amp.GradScaler) and legacy.get_scale() == 4.0


# ---- the operators ----

def test_amp_foreach_non_finite_check_and_unscale(device):
    grads = [sdk.tensor([2.0, 4.0]).to(device), sdk.tensor([[8.0]]).to(device), sdk.tensor(6.0).to(device)]
    found = sdk.zeros(1).to(device)
    aten._amp_foreach_non_finite_check_and_unscale_(grads, found, sdk.tensor([0.5]).to(device))
    assert found.item() == 0.0
    assert [g.cpu().numpy().tolist() for g in grads] == [[1.0, 2.0], [[4.0]], 3.0]
    bad = [sdk.tensor([1.0, float("nan")]).to(device), sdk.tensor([2.0]).to(device)]
    aten._amp_foreach_non_finite_check_and_unscale_(bad, found, sdk.tensor([0.5]).to(device))
    assert found.item() == 1.0 and bad[1].item() == 1.0
    # found_inf stays set once set
    aten._amp_foreach_non_finite_check_and_unscale_([sdk.ones(2).to(device)], found, sdk.tensor([1.0]).to(device))
    assert found.item() == 1.0
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor."):
        aten._amp_foreach_non_finite_check_and_unscale_(grads, sdk.zeros(2).to(device), sdk.ones(1).to(device))
    with pytest.raises(RuntimeError, match="inv_scale must be a float tensor."):
        aten._amp_foreach_non_finite_check_and_unscale_(grads, found, sdk.ones(1).to(device).double())
    with pytest.raises(RuntimeError, match=r"self\[0\] must be a floating-point tensor"):
        aten._amp_foreach_non_finite_check_and_unscale_([sdk.ones(2, dtype=sdk.int64).to(device)], found,
                                                        sdk.ones(1).to(device))


@pytest.mark.parametrize("found, tracker, want_scale, want_tracker", [
    (1.0, 1, 4.0, 0),       # inf found: back off, reset
    (0.0, 0, 8.0, 1),       # clean: count
    (0.0, 2, 16.0, 0),      # clean, reaches growth_interval=3: grow, reset
])
def test_amp_update_scale(device, found, tracker, want_scale, want_tracker):
    scale = sdk.full((), 8.0).to(device)
    growth = sdk.full((), tracker, dtype=sdk.int32).to(device)
    out = aten._amp_update_scale_(scale, growth, sdk.full((), found).to(device), 2.0, 0.5, 3)
    assert out.item() == want_scale and scale.item() == want_scale and growth.item() == want_tracker


def test_amp_update_scale_keeps_a_finite_scale_and_checks_its_arguments(device):
    scale = sdk.full((), 3e38).to(device)
    growth = sdk.full((), 0, dtype=sdk.int32).to(device)
    aten._amp_update_scale_(scale, growth, sdk.zeros(()).to(device), 2.0, 0.5, 1)
    assert scale.item() == pytest.approx(3e38) and growth.item() == 0  # 6e38 overflows float32: not taken
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor."):
        aten._amp_update_scale_(scale, growth.float(), sdk.zeros(()).to(device), 2.0, 0.5, 1)
    with pytest.raises(RuntimeError, match="current_scale must be a 1-element tensor."):
        aten._amp_update_scale_(sdk.ones(2).to(device), growth, sdk.zeros(()).to(device), 2.0, 0.5, 1)
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor."):
        aten._amp_update_scale_(scale, growth, sdk.zeros((), dtype=sdk.int32).to(device), 2.0, 0.5, 1)


def test_an_fp16_training_loop_with_autocast_and_grad_scaler(device):
    rng = np.random.default_rng(0)
    x = sdk.from_numpy(rng.standard_normal((64, 8)).astype(np.float32)).to(device)
    y = sdk.from_numpy((rng.standard_normal((64, 8)).astype(np.float32) @ rng.standard_normal((8, 1)).astype(
        np.float32))).to(device)
    results = {}
    for mode in ("fp32", "amp"):
        sdk.manual_seed(1)
        model = sdk.nn.Sequential(sdk.nn.Linear(8, 16), sdk.nn.Tanh(), sdk.nn.Linear(16, 1)).to(device)
        opt = sdk.optim.SGD(model.parameters(), lr=0.1)
        scaler = sdk.amp.GradScaler(device, init_scale=2.0**16, growth_interval=4, enabled=(mode == "amp"))
        losses = []
        for _ in range(20):
            opt.zero_grad()
            with sdk.autocast(device, dtype=sdk.float16, enabled=(mode == "amp")):
                loss = F.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        results[mode] = (losses, scaler.get_scale())
    amp_losses, amp_scale = results["amp"]
    fp32_losses = results["fp32"][0]
    assert amp_losses[-1] < 0.85 * amp_losses[0]
    np.testing.assert_allclose(amp_losses[-1], fp32_losses[-1], rtol=0.05)
    # an overflowing step is skipped (its loss repeats) and the scale backs off; clean runs grow it
    skipped = sum(a == b for a, b in zip(amp_losses, amp_losses[1:]))
    assert 1 <= skipped <= 4
    assert 2.0**16 < amp_scale <= 2.0**20


def test_the_amp_operators_run_on_meta_tensors():
    """CompositeExplicitAutograd: meta (and fake) tensors go through the same composition."""
    grads = [sdk.empty(3, device="meta"), sdk.empty(2, 2, device="meta")]
    found, inv = sdk.empty((), device="meta"), sdk.empty((), device="meta")
    aten._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    scale = sdk.empty((), device="meta")
    tracker = sdk.empty((), dtype=sdk.int32, device="meta")
    out = aten._amp_update_scale_(scale, tracker, found, 2.0, 0.5, 10)
    assert out.device.type == "meta" and out.shape == () and tracker.dtype == sdk.int32


def test_grad_scaler_on_the_python_backend():
    from test_python_backend import run_python

    proc = run_python("""
        import backend_sdk as sdk
        import pyaccel
        model = sdk.nn.Linear(3, 1).to("pyaccel")
        opt = sdk.optim.SGD(model.parameters(), lr=0.1)
        scaler = sdk.amp.GradScaler("pyaccel", init_scale=8.0, growth_interval=1)
        x = sdk.ones(2, 3).to("pyaccel")
        scaler.scale(model(x).sum()).backward()
        g = model.weight.grad.cpu(); g[0, 0] = float("inf"); model.weight.grad.copy_(g.to("pyaccel"))
        before = model.weight.detach().cpu().tolist()
        scaler.step(opt); scaler.update()
        assert model.weight.detach().cpu().tolist() == before and scaler.get_scale() == 4.0
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt); scaler.update()
        assert model.weight.detach().cpu().tolist() != before and scaler.get_scale() == 8.0
        print("ok")
    """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
