"""save/load: PyTorch's zip format, shared storages, devices and map_location, the weights_only allowlist,
damaged files; and, where a Python with torch is available, that torch reads our files and we read torch's."""
from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn

TORCH_PYTHON = os.environ.get("SDK_TORCH_PYTHON", "/tmp/tv/bin/python")


def _np(t):
    return t.detach().cpu().numpy()


def _has_torch() -> bool:
    if not os.path.exists(TORCH_PYTHON):
        return False
    return subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


def test_file_layout_is_pytorchs(tmp_path):
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2, 3)}, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names[0] == "model/data.pkl"
        assert {"model/byteorder", "model/version", "model/.format_version", "model/.storage_alignment",
                "model/data/0", "model/.data/serialization_id"} <= set(names)
        assert zf.read("model/version") == b"3\n" and zf.read("model/byteorder") == b"little"
        info = zf.getinfo("model/data/0")
        assert info.compress_type == zipfile.ZIP_STORED and info.file_size == 24
        local_header_end = info.header_offset + 30 + len(info.filename) + len(info.extra)
        with open(path, "rb") as f:
            f.seek(info.header_offset + 28)
            extra_len = int.from_bytes(f.read(2), "little")
        assert (info.header_offset + 30 + len(info.filename) + extra_len) % 64 == 0  # 64-byte aligned data
        pkl = zf.read("model/data.pkl")
        assert b"torch._utils\n_rebuild_tensor_v2" in pkl and b"FloatStorage" in pkl
    buf = io.BytesIO()
    torch.save([1], buf)
    assert zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()[0] == "archive/data.pkl"


def test_round_trip_of_values_views_and_dtypes(device, tmp_path):
    base = torch.arange(12, dtype=torch.float32, device=device)
    obj = {
        "base": base,
        "view": base.view(3, 4)[:, 1:3],
        "t": base.view(3, 4).t(),
        "i64": torch.tensor([1, -2, 3], device=device),
        "b": torch.tensor([True, False], device=device),
        "h": torch.ones(2, dtype=torch.float16, device=device),
        "bf": torch.ones(2, dtype=torch.bfloat16, device=device) * 3,
        "scalar": torch.tensor(2.5, device=device),
        "p": nn.Parameter(torch.ones(2, device=device)),
        "meta": [1, 2.5, "s", (3, 4), None, {"k": b"bytes"}, {1, 2}, torch.float64, torch.Size([2, 3])],
    }
    path = tmp_path / "x.pt"
    torch.save(obj, path)
    got = torch.load(path)
    for k in ("base", "view", "t", "i64", "b", "h", "scalar"):
        assert got[k].dtype == obj[k].dtype and got[k].shape == obj[k].shape and got[k].device == obj[k].device
        assert np.array_equal(_np(got[k]), _np(obj[k])), k
    assert _np(got["bf"].to(torch.float32)).tolist() == [3.0, 3.0]
    assert got["t"].stride() == (1, 4)  # strides survive
    assert isinstance(got["p"], nn.Parameter) and got["p"].requires_grad
    assert got["meta"] == obj["meta"]
    # views of one storage share it again after loading
    got["base"].fill_(0) if device == "cpu" else None
    if device == "cpu":
        assert float(got["view"].abs().sum().item()) == 0.0


def test_map_location(tmp_path):
    path = tmp_path / "d.pt"
    torch.save({"a": torch.ones(2, device="accel")}, path)
    assert torch.load(path)["a"].device.type == "accel"
    assert torch.load(path, map_location="cpu")["a"].is_cpu
    assert torch.load(path, map_location={"accel:0": "cpu"})["a"].is_cpu
    seen = []
    out = torch.load(path, map_location=lambda storage, loc: seen.append(loc) or storage)
    assert seen == ["accel:0"] and out["a"].is_cpu
    torch.save({"a": torch.ones(2)}, path)
    assert torch.load(path, map_location=torch.device("accel"))["a"].device.type == "accel"


def test_state_dict_round_trip_gives_same_outputs(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 2))
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    fresh = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 2))
    sd = torch.load(tmp_path / "sd.pt")
    assert isinstance(sd, OrderedDict) and sd._metadata[""] == {"version": 1}
    fresh.load_state_dict(sd)
    x = torch.randn(3, 4)
    assert np.array_equal(_np(fresh(x)), _np(model(x)))


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


class Custom:
    def __init__(self):
        self.v = 3


def test_weights_only_refuses_code_with_pytorchs_message(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"a": Evil()}, path)
    with pytest.raises(pickle.UnpicklingError) as e:
        torch.load(path)
    msg = str(e.value)
    assert msg.startswith("Weights only load failed. In PyTorch 2.6, we changed the default value of the "
                          "`weights_only` argument")
    assert f"Trying to load unsupported GLOBAL {os.system.__module__}.system whose module " in msg
    assert msg.endswith("https://pytorch.org/docs/stable/generated/torch.load.html.")
    path2 = tmp_path / "custom.pt"
    torch.save({"c": Custom()}, path2)
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL .*Custom was not an allowed global "
                                                     r"by default"):
        torch.load(path2)
    assert torch.load(path2, weights_only=False)["c"].v == 3
    with torch.serialization.safe_globals([Custom]):
        assert torch.load(path2)["c"].v == 3
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path2)


def test_truncated_and_corrupted_files_name_the_file_and_offset(tmp_path):
    path = tmp_path / "ok.pt"
    torch.save({"w": torch.ones(64)}, path)
    data = path.read_bytes()
    trunc = tmp_path / "trunc.pt"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match=r"failed finding central directory.*trunc.pt'.*bytes"):
        torch.load(trunc)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("ok/data/0")
        data_start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    corrupt = bytearray(data)
    corrupt[data_start + 5] ^= 0xFF
    bad = tmp_path / "bad.pt"
    bad.write_bytes(bytes(corrupt))
    with pytest.raises(RuntimeError, match=rf"bad.pt'.*record 'ok/data/0' at offset {info.header_offset}"):
        torch.load(bad)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(RuntimeError, match="junk.pt"):
        torch.load(junk)


@pytest.mark.skipif(not _has_torch(), reason="needs a Python with torch (SDK_TORCH_PYTHON)")
def test_torch_reads_our_files_and_we_read_torchs(tmp_path):
    ours = tmp_path / "ours.pt"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    sd = model.state_dict()
    sd["view"] = torch.arange(10)[2:8:2]
    torch.save(sd, ours)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 10
    np.save(tmp_path / "x.npy", x)
    theirs = tmp_path / "theirs.pt"
    script = f"""
import numpy as np, torch
sd = torch.load({str(ours)!r})
assert sd["view"].tolist() == [2, 4, 6], sd["view"]
view = sd.pop("view")
m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
m.load_state_dict(sd)
x = torch.from_numpy(np.load({str(tmp_path / 'x.npy')!r}))
np.save({str(tmp_path / 'torch_out.npy')!r}, m(x).detach().numpy())
torch.manual_seed(1)
m2 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
torch.save({{"sd": m2.state_dict(), "p": torch.nn.Parameter(torch.ones(2)), "h": torch.ones(2, dtype=torch.half)}},
           {str(theirs)!r})
np.save({str(tmp_path / 'torch_out2.npy')!r}, m2(x).detach().numpy())
"""
    subprocess.run([TORCH_PYTHON, "-c", script], check=True, capture_output=True, timeout=300)
    assert np.allclose(np.load(tmp_path / "torch_out.npy"), _np(model(torch.from_numpy(x))), atol=1e-6)
    loaded = torch.load(theirs)
    fresh = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    fresh.load_state_dict(loaded["sd"])
    assert np.allclose(np.load(tmp_path / "torch_out2.npy"), _np(fresh(torch.from_numpy(x))), atol=1e-6)
    assert isinstance(loaded["p"], nn.Parameter) and loaded["h"].dtype == torch.float16
