"""The conformance suite's models area (backend_sdk/testing/conformance/model_checks.py): accel passes it
(bit for bit), and a backend with one wrong kernel fails naming the first step and layer that diverges."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from _helpers import ROOT, run_module


def _run(args: list[str], *extra_path: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_module(args, *extra_path, cwd=cwd, timeout=900)


def test_models_area_passes_on_accel():
    pytest.importorskip("accel")
    r = _run(["-m", "backend_sdk", "conformance", "accel", "--area", "models"])
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "conformance of 'accel': 2 passed, 0 failed, 0 skipped" in out, out


# A Python backend whose relu is wrong in one element: the CNN (conv-batchnorm-relu-...) diverges at its first
# ReLU ('features.2') in step 0; every other operator is the CPU's through the fallback. It is test_conformance's
# broken Python backend with relu instead of mul replaced.
WRONG_RELU_KERNEL = '''
def wrong_relu(a):
    result = a.cpu().relu().contiguous()
    if result.numel() > 3:
        flat = result.view(-1)
        flat[3] = flat[3] + 0.5
    return result.to(a.device)


_lib = library.Library("aten", "IMPL", "brokenpy")
_lib.impl("relu", wrong_relu)
'''


def _wrong_relu_backend() -> str:
    from test_conformance import BROKEN_BACKEND

    source = BROKEN_BACKEND.replace('_lib = library.Library("aten", "IMPL", "brokenpy")\n_lib.impl("mul.Tensor", wrong_mul)\n',
                                    WRONG_RELU_KERNEL)
    assert "wrong_relu" in source
    return source.replace("brokenpy", "wrongrelu").replace("64 << 20", "256 << 20")


def test_models_area_names_the_first_diverging_layer_and_step(tmp_path):
    (tmp_path / "wrongrelu.py").write_text(_wrong_relu_backend())
    r = _run(["-m", "backend_sdk", "conformance", "wrongrelu", "--area", "models", "-k", "cnn"], str(tmp_path),
             cwd=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "FAILED model_checks.py::test_model_trains_like_the_cpu[cnn]" in out, out
    m = re.search(r"cnn on wrongrelu:0 diverges from the CPU at step 0: activation 'features.2' differs: first "
                  r"mismatching element at index \(0, 0, 0, 3\): expected (\S+), actual (\S+)", out)
    assert m, out
    assert float(m.group(2)) == pytest.approx(float(m.group(1)) + 0.5, abs=1e-6)
