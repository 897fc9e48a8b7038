"""Issue 20 acceptance models (backend_sdk/testing/models.py): the nanoGPT-shaped GPT and the small CNN
train on cpu and on accel from the same seed, the loss goes down, and the two devices agree bit for
bit at every step (accel runs the CPU's kernels, simulated or through the fallback, so every value is
the same). The 100-step figures come from benchmarks/bench_models.py; here a few steps keep it short.
"""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.testing import models as M
from test_serialization import _has_torch

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


# ---- Linear / matmul over batched inputs ------------------------------------------------------------------

def test_linear_on_3d_input_folds_rows_and_gets_the_same_values_and_gradients(device):
    # Note [matmul folds batch dims]: (..., in) @ W.T is one addmm/mm over folded rows; values and gradients
    # equal the per-batch computation.
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((2, 3, 5)), device=device, requires_grad=True)
    w = torch.tensor(rng.standard_normal((4, 5)), device=device, requires_grad=True)
    b = torch.tensor(rng.standard_normal(4), device=device, requires_grad=True)
    for bias in (b, None):
        out = torch.nn.functional.linear(x, w, bias)
        want = x.detach().cpu().numpy() @ w.detach().cpu().numpy().T + (0 if bias is None else b.detach().cpu().numpy())
        np.testing.assert_allclose(out.detach().cpu().numpy(), want, rtol=1e-12)
    assert torch.autograd.gradcheck(lambda x, w, b: torch.nn.functional.linear(x, w, b), (x, w, b))
    assert torch.autograd.gradcheck(lambda x, w: torch.matmul(x, w.t()), (x, w))
    assert torch.autograd.gradcheck(lambda x, v: torch.matmul(x, v), (x, w[0].detach().clone().requires_grad_()))
    # Non-contiguous input (a transposed view) takes the copy.
    xt = x.transpose(0, 1)
    np.testing.assert_allclose(torch.nn.functional.linear(xt, w, b).detach().cpu().numpy(),
                               xt.detach().cpu().numpy() @ w.detach().cpu().numpy().T + b.detach().cpu().numpy(),
                               rtol=1e-12)
    assert torch.matmul(x, w[0]).shape == (2, 3)


# ---- bad input (issue 20): PyTorch's messages ---------------------------------------------------------------

_BAD_LAYERS = {
    "linear": (lambda d: torch.nn.Linear(5, 6).to(d)(torch.randn(4, 3, device=d)), RuntimeError,
               r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 5x6\)"),
    "linear_3d": (lambda d: torch.nn.Linear(5, 6).to(d)(torch.randn(2, 4, 3, device=d)), RuntimeError,
                  r"mat1 and mat2 shapes cannot be multiplied \(8x3 and 5x6\)"),
    "linear_no_bias": (lambda d: torch.nn.Linear(5, 6, bias=False).to(d)(torch.randn(4, 3, device=d)), RuntimeError,
                       r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 5x6\)"),
    "conv_channels": (lambda d: torch.nn.Conv2d(3, 8, 3).to(d)(torch.randn(1, 4, 8, 8, device=d)), RuntimeError,
                      r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[1, 4, 8, 8\] to have 3 "
                      r"channels, but got 4 channels instead"),
    "conv_dims": (lambda d: torch.nn.Conv2d(3, 8, 3).to(d)(torch.randn(3, 8, device=d)), RuntimeError,
                  r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[3, 8\]"),
    "conv_kernel": (lambda d: torch.nn.Conv2d(3, 8, 5).to(d)(torch.randn(1, 3, 3, 3, device=d)), RuntimeError,
                    r"Calculated padded input size per channel: \(3 x 3\). Kernel size: \(5 x 5\). Kernel size can't "
                    r"be greater than actual input size"),
    "embedding_range": (lambda d: torch.nn.Embedding(10, 4).to(d)(torch.tensor([3, 10], device=d)), IndexError,
                        r"index 10 is out of bounds for dimension 0 with size 10"),
    "embedding_dtype": (lambda d: torch.nn.Embedding(10, 4).to(d)(torch.tensor([1.0], device=d)), RuntimeError,
                        r"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                        r"Long, Int"),
    "layer_norm": (lambda d: torch.nn.LayerNorm(8).to(d)(torch.randn(2, 6, device=d)), RuntimeError,
                   r"Given normalized_shape=\[8\], expected input with shape \[\*, 8\], but got input of size\[2, 6\]"),
    "batch_norm": (lambda d: torch.nn.BatchNorm2d(4).to(d)(torch.randn(2, 3, 5, 5, device=d)), RuntimeError,
                   r"running_mean should contain 3 elements not 4"),
    "cross_entropy": (lambda d: torch.nn.functional.cross_entropy(torch.randn(4, 3, device=d),
                                                                  torch.tensor([0, 1, 2], device=d)), ValueError,
                      r"Expected input batch_size \(4\) to match target batch_size \(3\)"),
}


@pytest.mark.parametrize("case", sorted(_BAD_LAYERS))
def test_wrong_shapes_into_layers_raise_pytorchs_messages(device, case):
    fn, kind, message = _BAD_LAYERS[case]
    if case == "embedding_range" and device != "cpu":
        # A bad index is found by the kernel, on the device's stream: as on CUDA, the error surfaces at the next
        # synchronisation, an AcceleratorError naming the kernel and the index.
        kind = torch.AcceleratorError
    with pytest.raises(kind, match=message):
        fn(device).cpu()


def test_gpt_context_longer_than_block_size_is_refused():
    model = M.GPT(M.GPTConfig(vocab_size=11, n_layer=1, n_embd=16, n_head=2, block_size=8))
    with pytest.raises(AssertionError, match="Cannot forward sequence of length 9, block size is only 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_optimizer_given_a_non_leaf_or_a_tensor_is_refused():
    model = M.SmallCNN()
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        torch.optim.AdamW([model.classifier.weight * 2], lr=1e-3)
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors or "
                                        "dicts, but got backend_sdk."):
        torch.optim.SGD(model.classifier.weight, lr=0.1)


def test_gpt_checkpoint_round_trip_and_damaged_files(tmp_path):
    torch.manual_seed(0)
    cfg = M.GPTConfig(vocab_size=11, n_layer=1, n_embd=16, n_head=2, block_size=8, dropout=0.0)
    model = M.GPT(cfg).eval()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "config": dataclasses_asdict(cfg)}, path)
    ckpt = torch.load(path)
    restored = M.GPT(M.GPTConfig(**ckpt["config"])).eval()
    restored.load_state_dict(ckpt["model"])
    idx = torch.tensor([[1, 2, 3, 4]])
    assert torch.equal(restored(idx)[0], model(idx)[0])
    # A model of another width: PyTorch's size-mismatch message, naming the key and both shapes.
    other = M.GPT(M.GPTConfig(vocab_size=11, n_layer=1, n_embd=8, n_head=2, block_size=8))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in loading state_dict for GPT:\n\tsize mismatch for "
                                           r"transformer.wte.weight: copying a param with shape "
                                           r"backend_sdk.Size\(\[11, 16\]\) from checkpoint, the shape in current "
                                           r"model is backend_sdk.Size\(\[11, 8\]\)"):
        other.load_state_dict(ckpt["model"])
    # Missing and unexpected keys: strict raises naming them; strict=False reports them.
    partial = {k: v for k, v in ckpt["model"].items() if not k.startswith("transformer.ln_f")}
    partial["head.extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "head.extra"'):
        restored.load_state_dict(partial)
    result = restored.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["transformer.ln_f.weight", "transformer.ln_f.bias"]
    assert result.unexpected_keys == ["head.extra"]
    # Truncated file: a RuntimeError naming the file.
    data = path.read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(RuntimeError, match="cut.pt"):
        torch.load(cut)


def dataclasses_asdict(cfg):
    import dataclasses

    return dataclasses.asdict(cfg)


# ---- the same model source under real torch --------------------------------------------------------------

_TORCH_SIDE = r'''
import sys, types
source = open(sys.argv[1]).read()
source = source.replace("import backend_sdk as torch", "import torch").replace(
    "from backend_sdk import nn", "from torch import nn").replace(
    "from backend_sdk.nn import functional as F", "from torch.nn import functional as F")
assert "backend_sdk" not in source.split('"""', 2)[2].replace("from .conformance import first_mismatch", "")
mod = types.ModuleType("models"); sys.modules["models"] = mod; exec(compile(source, "models.py", "exec"), mod.__dict__)
import torch
torch.manual_seed(0)
data = mod.CharDataset()
cfg = mod.GPTConfig(vocab_size=data.vocab_size, n_layer=2)
model = mod.GPT(cfg).eval()
idx = data.data[:64].view(1, 64)
logits, loss = model(idx, idx)
cnn = mod.SmallCNN().eval()
img = torch.linspace(-1, 1, 2 * 256).view(2, 1, 16, 16)
torch.save({"gpt": model.state_dict(), "logits": logits, "loss": loss, "cnn": cnn.state_dict(),
            "cnn_out": cnn(img), "img": img}, sys.argv[2])
'''


def run_torch(code: str, *args: str) -> None:
    """Runs ``code`` with torch 2.13's Python (test_serialization.TORCH_PYTHON), one thread, failing with its stderr."""
    import subprocess

    from test_serialization import TORCH_PYTHON

    proc = subprocess.run([TORCH_PYTHON, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.skipif(not _has_torch(), reason="needs a Python with torch (SDK_TORCH_PYTHON)")
def test_models_source_runs_under_torch_and_its_weights_give_our_outputs(tmp_path):
    # models.py is a PyTorch program: with its three imports pointed at torch it runs under torch 2.13; the state
    # dicts torch saves load into our models (strict) and give the same logits and loss.
    out = tmp_path / "torch_models.pt"
    run_torch(_TORCH_SIDE, M.__file__, str(out))
    ref = torch.load(out)
    data = M.CharDataset()
    model = M.GPT(M.GPTConfig(vocab_size=data.vocab_size, n_layer=2)).eval()
    model.load_state_dict(ref["gpt"])
    idx = data.data[:64].view(1, 64)
    logits, loss = model(idx, idx)
    np.testing.assert_allclose(logits.detach().numpy(), ref["logits"].numpy(), rtol=1e-4, atol=1e-5)
    assert abs(loss.item() - ref["loss"].item()) < 1e-5
    cnn = M.SmallCNN().eval()
    cnn.load_state_dict(ref["cnn"])
    np.testing.assert_allclose(cnn(ref["img"]).detach().numpy(), ref["cnn_out"].numpy(), rtol=1e-4, atol=1e-5)
