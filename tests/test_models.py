"""Issue 20 acceptance models (backend_sdk/testing/models.py): the nanoGPT-shaped GPT and the small CNN
train on cpu and on accel from the same seed, the loss goes down, and the two devices agree bit for
bit at every step (accel runs the CPU's kernels, simulated or through the fallback, so every value is
the same). The 100-step figures come from benchmarks/bench_models.py; here a few steps keep it short.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.testing import models as M

pytestmark = pytest.mark.filterwarnings("ignore:The operator .* is not currently supported on the accel backend")


def _accel() -> str:
    pytest.importorskip("accel")
    return "accel"


def test_gpt_has_the_acceptance_shape_and_nanogpts_names():
    model = M.GPT(M.GPTConfig(vocab_size=65))
    cfg = model.config
    assert (cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.block_size) == (4, 4, 128, 64) and cfg.dropout > 0
    keys = list(model.state_dict())
    assert keys[:4] == ["transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                        "transformer.h.0.ln_1.bias"]
    assert "transformer.h.3.mlp.c_proj.weight" in keys and keys[-1] == "lm_head.weight"
    # Weight tying: one Parameter under two names, counted once.
    assert model.lm_head.weight is model.transformer.wte.weight
    per_block = 2 * 128 * 2 + (128 * 384 + 384) + (128 * 128 + 128) + (128 * 512 + 512) + (512 * 128 + 128)
    assert model.get_num_params() == 65 * 128 + 4 * per_block + 2 * 128
    # nanoGPT's scaled initialisation of the residual projections.
    std = float(model.transformer.h[0].mlp.c_proj.weight.std().item())
    assert abs(std - 0.02 / np.sqrt(8)) < 0.002


def test_weight_tying_survives_to_device():
    device = _accel()
    torch.manual_seed(0)
    model = M.GPT(M.GPTConfig(vocab_size=11, n_layer=1, n_embd=16, n_head=2, block_size=8)).to(device)
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.weight.device.type == device
    assert len(list(model.parameters())) == len({id(p) for p in model.parameters()})
    idx = torch.tensor([[1, 2, 3]]).to(device)
    _, loss = model(idx, idx)
    loss.backward()
    # Both uses (embedding and head) accumulate into the one gradient.
    assert model.transformer.wte.weight.grad is not None and model.lm_head.weight.grad is not None


def test_shared_buffer_stays_shared_on_conversion():
    a, b = torch.nn.Module(), torch.nn.Module()
    shared = torch.zeros(3)
    a.register_buffer("s", shared)
    b.register_buffer("s", shared)
    parent = torch.nn.Sequential(a, b).double()
    assert parent[0].s is parent[1].s and parent[0].s.dtype == torch.float64


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_model_trains_bit_for_bit_on_cpu_and_accel(name):
    device = _accel()
    make_run, steps = (M.make_gpt_run, 3) if name == "gpt" else (M.make_cnn_run, 6)
    # atol=rtol=0: every activation, the loss, every gradient and every parameter after the step are equal.
    divergence, losses = M.compare_training(make_run, device, steps, atol=0.0, rtol=0.0)
    assert divergence is None, str(divergence)
    assert losses["cpu"] == losses[device]
    assert len(losses["cpu"]) == steps
    assert min(losses["cpu"][1:]) < losses["cpu"][0] * 0.95, losses["cpu"]
    assert all(np.isfinite(losses["cpu"]))


def test_gpt_dropout_is_active_and_reproducible():
    # Same seed, same losses (dropout masks from the seeded generator); without dropout, other losses.
    a = M.train_gpt("cpu", 1, config=M.GPTConfig(n_layer=1))
    b = M.train_gpt("cpu", 1, config=M.GPTConfig(n_layer=1))
    c = M.train_gpt("cpu", 1, config=M.GPTConfig(n_layer=1, dropout=0.0))
    assert a == b and a != c


def test_cnn_loss_goes_down_over_more_steps():
    losses = M.train_cnn("cpu", 15)
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:3]), losses


def _perturbed(make_run, layer: str, scale: float):
    """A make_run whose non-CPU model scales one module's output: a stand-in for a wrong kernel."""
    def make(device: str, **kwargs):
        run = make_run(device, **kwargs)
        if device != "cpu":
            module = dict(run.model.named_modules())[layer]
            module.register_forward_hook(lambda mod, args, out: out * scale)
        return run
    return make


def test_compare_training_names_the_first_diverging_layer_and_step():
    device = _accel()
    divergence, _ = M.compare_training(_perturbed(M.make_cnn_run, "features.4", 1.01), device, 2)
    assert divergence is not None
    assert (divergence.step, divergence.kind, divergence.name) == (0, "activation", "features.4"), divergence
    assert "first mismatching element at index" in divergence.detail
    assert str(divergence).startswith("step 0: activation 'features.4' differs")


def test_compare_training_reports_a_gradient_divergence():
    # A wrong gradient (the forward is right): reported as the parameter's gradient, at step 0.
    device = _accel()

    def make(dev: str, **kwargs):
        run = M.make_cnn_run(dev, **kwargs)
        if dev != "cpu":
            run.model.classifier.weight.register_hook(lambda g: g * 2)
        return run

    divergence, _ = M.compare_training(make, device, 2)
    assert divergence is not None
    assert (divergence.step, divergence.kind, divergence.name) == (0, "gradient", "classifier.weight"), divergence


def test_gpt_generate_samples_from_the_model():
    torch.manual_seed(0)
    data = M.CharDataset()
    model = M.GPT(M.GPTConfig(vocab_size=data.vocab_size, n_layer=1)).eval()
    start = torch.tensor([[data.stoi["F"]]])
    out = model.generate(start, 5, top_k=5, generator=torch.Generator().manual_seed(0))
    assert out.shape == (1, 6) and int(out[0, 0].item()) == data.stoi["F"]
    assert len(data.decode(out[0].tolist())) == 6
