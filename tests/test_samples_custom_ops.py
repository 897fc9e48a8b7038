"""samples/custom_ops: every sample operator passes opcheck on cpu and accel with edge inputs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backend_sdk
from backend_sdk.utils import include_paths, library_paths

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "custom_ops"
CXX = shutil.which("g++") or shutil.which("c++")
HAS_ACCEL = (ROOT / "samples" / "accel_sim" / "accel" / "libaccel_sim.so").exists()

sys.path.insert(0, str(SAMPLES))
import sample_ops  # noqa: E402
import check  # noqa: E402


@pytest.fixture(scope="module")
def muladd_lib(tmp_path_factory) -> str | None:
    if CXX is None:
        return None
    out = tmp_path_factory.mktemp("muladd") / "libmuladd.so"
    cmd = [CXX, "-std=c++17", "-O1", "-shared", "-fPIC", str(SAMPLES / "csrc" / "muladd.cpp"), "-o", str(out)]
    cmd += [f"-I{p}" for p in include_paths()] + [f"-L{p}" for p in library_paths()]
    cmd += ["-lbackend_sdk"] + [f"-Wl,-rpath,{p}" for p in library_paths()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return str(out)


def test_sample_values_on_cpu(muladd_lib) -> None:
    x = backend_sdk.from_numpy(np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_allclose(sample_ops.sin_relu(x).numpy(), np.maximum(np.sin(x.numpy()), 0), rtol=1e-6)
    y = x.clone()
    sample_ops.scale_add_(y, x, 0.5)
    np.testing.assert_allclose(y.numpy(), x.numpy() * 1.5)
    out = backend_sdk.empty(0)
    r = sample_ops.abs_diff_out(x, x * 3, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.abs(x.numpy() - x.numpy() * 3), rtol=1e-6)
    if muladd_lib is not None:
        op = sample_ops.load_cpp_op(muladd_lib)
        np.testing.assert_allclose(op(x, x.t().contiguous().t(), x).numpy(), x.numpy() ** 2 + x.numpy(), rtol=1e-6)
        m = op(*(backend_sdk.empty(2, 3, device="meta"),) * 3)
        assert m.is_meta and tuple(m.shape) == (2, 3)
        with pytest.raises(ValueError, match="samples_cpp::muladd: x, y and z must have the same shape"):
            op(x, x[0], x)


def test_samples_pass_opcheck_on_cpu(muladd_lib) -> None:
    assert check.check("cpu", muladd_lib) == []


@pytest.mark.skipif(not HAS_ACCEL, reason="needs the in-tree build of samples/accel_sim")
def test_samples_pass_opcheck_on_accel(muladd_lib) -> None:
    # Renaming PrivateUse1 is once per process: the accel run is a subprocess.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "samples" / "accel_sim")]))
    args = [sys.executable, str(SAMPLES / "check.py"), "accel"] + ([muladd_lib] if muladd_lib else [])
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=str(ROOT))
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), result.stdout + result.stderr
