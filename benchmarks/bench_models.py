"""Model bring-up (issue 20): the performance table, backend_sdk vs torch 2.13 CPU in the same run
(numpy where torch is not importable), single-threaded and with default threads.

    PYTHONPATH=.:samples/accel_sim:/tmp/tv/lib/python3.11/site-packages python benchmarks/bench_models.py
    ... bench_models.py --threads 1      # one configuration only (the default runs 1 and default threads)
    ... bench_models.py --quick          # fewer repetitions
    ... bench_models.py --only AdamW,embedding   # rows whose names start so (any case)
    ... bench_models.py --steps 100      # also train the GPT 100 steps on cpu and accel (losses, agreement)
    ... bench_models.py --repeat 7       # more rounds per row (the best is kept): for a loaded machine

Rows (forward + backward through autograd, as a training step runs them):
  conv2d at ResNet-18 block shapes (batch 8, 64 channels, 56x56, 3x3): target <= 1.5x torch;
  layer_norm and softmax (2048x512), scaled_dot_product_attention (batch 8, 4 heads, 256 tokens, 64
  wide, causal), embedding (32x64 indices into 50257x128): target <= 1.2x;
  an AdamW step over 10M parameters (20 tensors of 500k): target <= 1.0x;
  the nanoGPT-shaped training step (backend_sdk.testing.models, batch 8, context 64; torch runs the same
  models.py source with its imports pointed at torch): target <= 1.3x on cpu, <= 1.5x torch cpu on accel.
Ratios are measured in this run; the 1-minute load is printed beside them. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import types
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def best_ms(fn, number: int, repeat: int) -> float:
    """Best of ``repeat`` rounds of ``number`` calls, in ms per call (one warm-up call first)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best * 1e3


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def torch_models(torch):
    """backend_sdk/testing/models.py with its imports pointed at torch: the same model code under torch."""
    path = os.path.join(ROOT, "backend_sdk", "testing", "models.py")
    source = open(path).read()
    source = source.replace("import backend_sdk as torch", "import torch").replace(
        "from backend_sdk import nn", "from torch import nn").replace(
        "from backend_sdk.nn import functional as F", "from torch.nn import functional as F")
    mod = types.ModuleType("torch_models")
    sys.modules["torch_models"] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def fwd_bwd_cases(sdk, torch):
    """(name, sdk fn, reference fn or None, reference name): each fn runs forward + backward."""
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((8, 64, 56, 56), dtype=np.float32),
        "w": rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05,
        "ln": rng.standard_normal((2048, 512), dtype=np.float32),
        "lnw": np.ones(512, np.float32), "lnb": np.zeros(512, np.float32),
        "q": rng.standard_normal((8, 4, 256, 64), dtype=np.float32),
        "k": rng.standard_normal((8, 4, 256, 64), dtype=np.float32),
        "v": rng.standard_normal((8, 4, 256, 64), dtype=np.float32),
        "emb": rng.standard_normal((50257, 128), dtype=np.float32),
    }
    idx = rng.integers(0, 50257, (32, 64))

    def leaves(lib):
        t = {k: lib.from_numpy(a.copy()).requires_grad_() for k, a in arrays.items()}
        t["idx"] = lib.from_numpy(idx.copy())
        return t

    def make(lib):
        F = lib.nn.functional
        t = leaves(lib)

        def conv():
            F.conv2d(t["x"], t["w"], padding=1).sum().backward()

        def layer_norm():
            F.layer_norm(t["ln"], (512,), t["lnw"], t["lnb"]).sum().backward()

        def softmax():
            (F.softmax(t["ln"], dim=-1) * t["ln"]).sum().backward()

        def sdpa():
            F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True).sum().backward()

        def embedding():
            F.embedding(t["idx"], t["emb"]).sum().backward()

        def clear():
            for v in t.values():
                v.grad = None

        def wrap(fn):
            def run():
                fn()
                clear()
            return run

        return [wrap(f) for f in (conv, layer_norm, softmax, sdpa, embedding)]

    names = ["conv2d fwd+bwd 8x64x56x56 k3", "layer_norm fwd+bwd 2048x512", "softmax fwd+bwd 2048x512",
             "sdpa fwd+bwd 8x4x256x64 causal", "embedding fwd+bwd 32x64 of 50257x128"]
    targets = [1.5, 1.2, 1.2, 1.2, 1.2]
    ours = make(sdk)
    ref = make(torch) if torch else [None] * len(names)
    return list(zip(names, ours, ref, targets))


def adamw_case(sdk, torch):
    """An AdamW step over 10M parameters (20 tensors of 500k, gradients set once)."""
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(500_000, dtype=np.float32) for _ in range(20)]
    grads = [rng.standard_normal(500_000, dtype=np.float32) * 1e-3 for _ in range(20)]

    def make(lib):
        params = [lib.nn.Parameter(lib.from_numpy(v.copy())) for v in values]
        for p, g in zip(params, grads):
            p.grad = lib.from_numpy(g.copy())
        opt = lib.optim.AdamW(params, lr=1e-3)
        return opt.step

    return ("AdamW step, 10M params", make(sdk), make(torch) if torch else None, 1.0)


def gpt_cases(sdk, torch, with_accel: bool):
    from backend_sdk.testing import models

    rows = []
    run = models.make_gpt_run("cpu")
    ref = torch_models(torch).make_gpt_run("cpu") if torch else None
    rows.append(("nanoGPT train step cpu (b8, T64)", lambda: run.step().item(), (lambda: ref.step().item())
                 if ref else None, 1.3))
    if with_accel:
        acc = models.make_gpt_run("accel")
        rows.append(("nanoGPT train step accel", lambda: acc.step().item(), (lambda: ref.step().item())
                     if ref else None, 1.5))
    return rows


def numpy_reference(name: str):
    """Where torch is absent: a numpy computation of the same forward (a lower bound, no backward)."""
    rng = np.random.default_rng(0)
    if name.startswith("layer_norm") or name.startswith("softmax"):
        a = rng.standard_normal((2048, 512), dtype=np.float32)
        if name.startswith("layer_norm"):
            return lambda: (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
        return lambda: np.exp(a - a.max(-1, keepdims=True)) / np.exp(a - a.max(-1, keepdims=True)).sum(-1,
                                                                                                          keepdims=True)
    if name.startswith("sdpa"):
        q = rng.standard_normal((8, 4, 256, 64), dtype=np.float32)
        return lambda: (q @ q.swapaxes(-1, -2)) @ q
    if name.startswith("embedding"):
        e = rng.standard_normal((50257, 128), dtype=np.float32)
        i = rng.integers(0, 50257, (32, 64))
        return lambda: e[i]
    return None


def table(threads: int, quick: bool, rounds: int = 0, only: str = "") -> None:
    if threads:
        os.environ["SDK_NUM_THREADS"] = str(threads)
        os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
    warnings.simplefilter("ignore")
    import backend_sdk as sdk

    torch = _torch()
    if torch is not None and threads:
        torch.set_num_threads(threads)
    try:
        import accel  # noqa: F401

        with_accel = True
    except ImportError:
        with_accel = False
    number, repeat = (1, 2) if quick else (2, 3)
    repeat = rounds or repeat
    ref_name = "torch" if torch else "numpy (fwd only)"
    label = f"{threads} thread" if threads else f"default threads (torch {torch.get_num_threads()})" if torch \
        else "default threads"
    print(f"\n== {label}; reference {ref_name}" + (f" {torch.__version__}" if torch else "")
          + f"; 1-min load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
    print(f"{'row':<40}{'sdk ms':>10}{ref_name + ' ms':>12}{'ratio':>8}{'target':>8}  load")
    prefixes = tuple(p.strip().lower() for p in only.split(",") if p.strip())
    wanted = lambda name: not prefixes or name.lower().startswith(prefixes)  # noqa: E731
    rows = fwd_bwd_cases(sdk, torch) + [adamw_case(sdk, torch)]
    if wanted("nanogpt"):  # building the GPTs takes seconds: only when their rows run
        rows += gpt_cases(sdk, torch, with_accel)
    for name, ours, ref, target in rows:
        if not wanted(name):
            continue
        if ref is None and torch is None:
            ref = numpy_reference(name)
        n = 1 if name.startswith(("nanoGPT", "conv2d", "AdamW")) else number
        ours_ms = best_ms(ours, n, repeat)
        ref_ms = best_ms(ref, n, repeat) if ref is not None else float("nan")
        ratio = ours_ms / ref_ms if ref is not None else float("nan")
        print(f"{name:<40}{ours_ms:>10.2f}{ref_ms:>12.2f}{ratio:>8.2f}{target:>8.1f}  {os.getloadavg()[0]:.1f}",
              flush=True)


def train_100(steps: int) -> None:
    """The acceptance run: the GPT and the CNN trained ``steps`` steps on cpu and on accel from one seed."""
    warnings.simplefilter("ignore")
    import accel  # noqa: F401
    from backend_sdk.testing import models

    for name, make in (("gpt", models.make_gpt_run), ("cnn", models.make_cnn_run)):
        t = time.perf_counter()
        losses = {}
        for device in ("cpu", "accel"):
            run = make(device)
            losses[device] = [float(run.step().item()) for _ in range(steps)]
        diff = max(abs(a - b) for a, b in zip(losses["cpu"], losses["accel"]))
        same = losses["cpu"] == losses["accel"]
        print(f"{name}: {steps} steps on cpu and accel in {time.perf_counter() - t:.1f} s (load "
              f"{os.getloadavg()[0]:.1f}); loss {losses['cpu'][0]:.4f} -> {losses['cpu'][-1]:.4f} (mean of last 10 "
              f"{np.mean(losses['cpu'][-10:]):.4f}); max |cpu - accel| over the steps {diff:.3g}"
              f"{' (bit for bit at every step)' if same else ''}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=None, help="one configuration: 1, N or 0 (default threads)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--steps", type=int, default=0, help="also train the models this many steps (e.g. 100)")
    parser.add_argument("--repeat", type=int, default=0, help="rounds per row, the best kept (default 3; 2 quick)")
    parser.add_argument("--only", default="", help="comma-separated row-name prefixes, any case (e.g. AdamW,embedding)")
    args = parser.parse_args()
    if args.threads is not None:
        table(args.threads, args.quick, args.repeat, args.only)
    else:
        # Thread counts are read when the thread pools start: each configuration in a fresh process.
        for threads in (1, 0):
            cmd = [sys.executable, __file__, "--threads", str(threads)] + (["--quick"] if args.quick else []) + \
                (["--repeat", str(args.repeat)] if args.repeat else []) + (["--only", args.only] if args.only else [])
            subprocess.run(cmd, check=False)
    if args.steps:
        train_100(args.steps)


if __name__ == "__main__":
    main()
