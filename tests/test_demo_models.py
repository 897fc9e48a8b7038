"""The demo's models section (``python -m backend_sdk demo``): the acceptance GPT trained on accel and on
the CPU, compared at every step (tests/test_profiler.py runs the whole demo)."""
from __future__ import annotations

import contextlib
import io

import pytest


def test_demo_trains_the_gpt_on_accel_and_reports_the_comparison():
    pytest.importorskip("accel")
    from backend_sdk.__main__ import _demo_gpt

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = _demo_gpt(steps=2)
    text = out.getvalue()
    assert ok, text
    assert "GPT: 4 layers, 4 heads, 128-wide, context 64" in text
    cpu = next(line for line in text.splitlines() if line.strip().startswith("cpu "))
    accel = next(line for line in text.splitlines() if line.strip().startswith("accel "))
    assert cpu.split(":", 1)[1] == accel.split(":", 1)[1]  # the same losses, printed to 6 digits
    losses = [float(v) for v in cpu.split(":", 1)[1].split()]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert "cpu and accel agree bit for bit" in text


def test_demo_reports_a_divergence(monkeypatch):
    # A device whose model differs (one layer's output scaled): the section names the step and layer, returns False.
    pytest.importorskip("accel")
    from backend_sdk.__main__ import _demo_gpt
    from backend_sdk.testing import models

    original = models.make_gpt_run

    def broken(device, **kwargs):
        run = original(device, **kwargs)
        if device != "cpu":
            run.model.transformer.h[1].mlp.register_forward_hook(lambda m, a, o: o * 1.5)
        return run

    monkeypatch.setattr(models, "make_gpt_run", broken)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = _demo_gpt(steps=1)
    assert not ok
    assert "MISMATCH: step 0: activation 'transformer.h.1.mlp' differs" in out.getvalue()
