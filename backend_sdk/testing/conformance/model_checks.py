"""Conformance area "models": the acceptance models of backend_sdk.testing.models trained a few steps on
the backend under test and on the CPU from the same seed, every step compared in execution order (each
module's output, the loss, each parameter's gradient, each parameter after the optimizer step). A
failure names the first step and the first layer (module or parameter name) where the backend diverges,
with its first mismatching element: a wrong kernel shows up as the layer that uses it.

* ``gpt``: the nanoGPT-shaped character model (4 layers, 4 heads, 128 wide, context 64, dropout, AdamW,
  gradient clipping): embedding, layer_norm, linear, scaled_dot_product_attention, gelu, dropout,
  cross_entropy and their backward operators, the optimizer's in-place updates.
* ``cnn``: conv-batchnorm-relu-pool twice, then linear (SGD with momentum).

The models run on the backend's last device (as the operators area), so a kernel allocating on the
current device instead of its inputs' device is caught too. The tolerances are float32 rounding's for
kernels that sum in another order, compounded over a few steps (ATOL, RTOL); a backend computing exactly
as the CPU agrees bit for bit.
"""
from __future__ import annotations

import warnings
from typing import Any

import pytest

from backend_sdk.testing import models

#: model -> (the run's constructor, steps). Few steps: each is a full forward, backward and update.
MODELS = {"gpt": (models.make_gpt_run, 3), "cnn": (models.make_cnn_run, 4)}
ATOL, RTOL = 1e-4, 1e-3


@pytest.mark.parametrize("model", sorted(MODELS))
def test_model_trains_like_the_cpu(conformance_backend: Any, model: str) -> None:
    if not conformance_backend.devices:
        pytest.skip(f"'{conformance_backend.name}' has no devices")
    device = conformance_backend.devices[-1]
    make_run, steps = MODELS[model]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU fallback's warnings: served operators are the backend's choice
        divergence, losses = models.compare_training(make_run, device, steps, atol=ATOL, rtol=RTOL)
    shown = {d: " ".join(f"{v:.6f}" for v in values) for d, values in losses.items()}
    if divergence is not None:
        pytest.fail(f"{model} on {device} diverges from the CPU at {divergence} (losses: cpu {shown['cpu']}; "
                    f"{device} {shown[device]})", pytrace=False)
    assert losses[device][-1] < losses[device][0], (f"{model} on {device}: the loss did not go down over {steps} "
                                                    f"steps: {shown[device]}")
