"""nn.TransformerEncoderLayer / nn.TransformerEncoder (backend_sdk/nn/modules/transformer.py): PyTorch's
submodule names and state dict, post-norm and pre-norm, masks, training on cpu and accel; and, where a
Python with torch is available, torch's weights give torch's outputs and gradients here."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn
from test_models import run_torch
from test_serialization import _has_torch

def _np(t):
    return t.detach().cpu().numpy()


def test_layer_structure_and_state_dict_names():
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    assert list(layer.state_dict()) == [
        "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight", "self_attn.out_proj.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
        "norm2.weight", "norm2.bias"]
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(16))
    assert len(enc.layers) == 3 and enc.layers[0] is not enc.layers[1]
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight  # deep copies
    assert torch.equal(enc.layers[0].linear1.weight, enc.layers[2].linear1.weight)
    assert "layers.2.norm2.bias" in enc.state_dict() and "norm.weight" in enc.state_dict()
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(16, 4, activation="tanh")


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_computes_attention_then_feed_forward(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=norm_first).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    F = nn.functional

    def sa(h):
        return layer.self_attn(h, h, h, need_weights=False)[0]

    def ff(h):
        return layer.linear2(F.gelu(layer.linear1(h)))

    if norm_first:
        h = x + sa(layer.norm1(x))
        want = h + ff(layer.norm2(h))
    else:
        h = layer.norm1(x + sa(x))
        want = layer.norm2(h + ff(h))
    np.testing.assert_allclose(_np(layer(x)), _np(want), rtol=1e-12, atol=1e-12)
    # A causal mask: position 0 sees only itself, so changing later positions leaves output 0 unchanged.
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    y = x.clone()
    y[:, 1:] = 0.0
    np.testing.assert_allclose(_np(layer(x, src_mask=mask, is_causal=True))[:, 0],
                               _np(layer(y, src_mask=mask, is_causal=True))[:, 0], rtol=1e-12, atol=1e-12)


def test_encoder_trains_on_each_device(device):
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1), 2).to(device)
    head = nn.Linear(16, 3).to(device)
    opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=1e-2)
    x = torch.randn(6, 4, 16).to(device)  # (S, N, E): batch_first=False
    y = torch.tensor([0, 1, 2, 1]).to(device)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(head(enc(x).mean(0)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(p.grad is not None for p in enc.parameters())


_TORCH_SIDE = r'''
import sys, torch
torch.manual_seed(0)
out = {}
for norm_first in (False, True):
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", batch_first=True,
                                             norm_first=norm_first)
    enc = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(16), enable_nested_tensor=False).eval()
    x = torch.randn(2, 7, 16)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(7)
    pad = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
    with torch.no_grad():
        y = enc(x, mask=mask, src_key_padding_mask=pad)
    enc.train()
    x.requires_grad_()
    enc(x, mask=mask).sum().backward()
    out[norm_first] = {"state": enc.state_dict(), "x": x.detach(), "mask": mask, "pad": pad, "y": y,
                       "gx": x.grad, "gw": enc.layers[0].linear1.weight.grad}
torch.save(out, sys.argv[1])
'''


@pytest.mark.skipif(not _has_torch(), reason="needs a Python with torch (SDK_TORCH_PYTHON)")
def test_torch_weights_give_torchs_outputs_and_gradients(tmp_path):
    path = tmp_path / "enc.pt"
    run_torch(_TORCH_SIDE, str(path))
    ref = torch.load(path)
    for norm_first, r in ref.items():
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=norm_first)
        enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
        enc.load_state_dict(r["state"])
        enc.eval()
        with torch.no_grad():
            y = enc(r["x"], mask=r["mask"], src_key_padding_mask=r["pad"])
        np.testing.assert_allclose(_np(y), _np(r["y"]), rtol=1e-4, atol=1e-5)
        enc.train()
        x = r["x"].clone().requires_grad_()
        enc(x, mask=r["mask"]).sum().backward()
        np.testing.assert_allclose(_np(x.grad), _np(r["gx"]), rtol=1e-3, atol=1e-5)
        np.testing.assert_allclose(_np(enc.layers[0].linear1.weight.grad), _np(r["gw"]), rtol=1e-3, atol=1e-5)
