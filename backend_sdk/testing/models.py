"""The acceptance models of model bring-up (issue 20), written as PyTorch users write them.

* :class:`GPT`: a character-level GPT shaped like nanoGPT (pre-LayerNorm blocks of causal
  self-attention through ``F.scaled_dot_product_attention`` and a GELU MLP, learned position
  embeddings, weight tying, dropout, nanoGPT's initialisation and its AdamW parameter groups).
  :data:`GPT_CONFIG` is the acceptance shape: 4 layers, 4 heads, 128-wide embedding, context 64.
* :class:`SmallCNN`: conv-batchnorm-relu-pool twice, then linear.

The training helpers (:func:`train_gpt`, :func:`train_cnn`) build the model on the CPU from a seed,
move it to the device and train it on batches drawn on the CPU (as nanoGPT's ``get_batch``), so a
run on ``cpu`` and one on a device start from the same weights and see the same data; dropout draws
from the device's generator, seeded by ``manual_seed`` alike on every device (Philox counters:
Note [Philox random numbers]), so the masks agree too. :func:`compare_training` trains the same
model on two devices and reports the first step and the first layer (activation, gradient or
parameter, in execution order) where they diverge. The conformance suite's models area, the demo
and benchmarks/bench_models.py use them.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Iterator, Optional

import numpy as np

import backend_sdk as torch
from backend_sdk import nn
from backend_sdk.nn import functional as F

__all__ = [
    "GPTConfig", "GPT_CONFIG", "GPT", "SmallCNN", "CHAR_TEXT", "CharDataset", "TrainingRun", "Divergence",
    "train_gpt", "train_cnn", "make_gpt_run", "make_cnn_run", "compare_training",
]


# ---- the character-level GPT -------------------------------------------------------------------

@dataclasses.dataclass
class GPTConfig:
    """nanoGPT's ``GPTConfig`` (defaults: the acceptance shape, vocabulary of the built-in text)."""

    block_size: int = 64
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.1
    bias: bool = True


#: The acceptance shape: 4 layers, 4 heads, 128-wide embedding, context 64, dropout 0.1.
GPT_CONFIG = GPTConfig()


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's: ``nn.LayerNorm`` had no ``bias=False`` when it was written)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: one projection to q, k, v, scaled_dot_product_attention(is_causal=True)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Linear(4x) - GELU - Linear - Dropout."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """A pre-LayerNorm transformer block."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's model: token + position embeddings, ``n_layer`` blocks, final LayerNorm, tied LM head."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding: bool = True) -> int:
        """Parameters (the position embedding not counted by default, as nanoGPT)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None
                ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only " \
                                            f"{self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float, betas: tuple[float, float],
                             device_type: str) -> torch.optim.AdamW:
        """AdamW with weight decay on the 2-d parameters (matmuls, embeddings) only, as nanoGPT."""
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: Optional[int] = None, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """Samples ``max_new_tokens`` tokens after ``idx`` (b, t), feeding each prediction back in."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# ---- the small CNN -----------------------------------------------------------------------------

class SmallCNN(nn.Module):
    """conv-batchnorm-relu-pool twice, then linear: (N, in_channels, size, size) -> (N, num_classes)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, size: int = 16, width: int = 8) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, kernel_size=3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, kernel_size=3, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(2 * width * (size // 4) ** 2, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


# ---- data ---------------------------------------------------------------------------------------

#: A small built-in corpus for the character-level model (no download: the tests and the demo run offline).
CHAR_TEXT = (
    "First Citizen: Before we proceed any further, hear me speak.\n"
    "All: Speak, speak.\n"
    "First Citizen: You are all resolved rather to die than to famish?\n"
    "All: Resolved. resolved.\n"
    "First Citizen: First, you know Caius Marcius is chief enemy to the people.\n"
    "All: We know't, we know't.\n"
    "First Citizen: Let us kill him, and we'll have corn at our own price. Is't a verdict?\n"
    "All: No more talking on't; let it be done: away, away!\n"
    "Second Citizen: One word, good citizens.\n"
    "First Citizen: We are accounted poor citizens, the patricians good. What authority surfeits on would "
    "relieve us: if they would yield us but the superfluity, while it were wholesome, we might guess they "
    "relieved us humanely; but they think we are too dear: the leanness that afflicts us, the object of our "
    "misery, is as an inventory to particularise their abundance; our sufferance is a gain to them.\n"
)


class CharDataset:
    """The text encoded as int64 character ids, with nanoGPT's ``get_batch`` (random windows, drawn on the CPU)."""

    def __init__(self, text: str = CHAR_TEXT, vocab_size: Optional[int] = None) -> None:
        chars = sorted(set(text))
        self.vocab_size = max(len(chars), vocab_size or 0)
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = {i: c for c, i in self.stoi.items()}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)

    def decode(self, ids: Any) -> str:
        """The text of a sequence of ids."""
        return "".join(self.itos.get(int(i), "?") for i in ids)

    def get_batch(self, batch_size: int, block_size: int, device: str,
                  generator: Optional[torch.Generator] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), each (batch_size, block_size): windows at random offsets, targets shifted by one."""
        ix = torch.randint(len(self.data) - block_size, (batch_size,), generator=generator)
        x = torch.stack([self.data[i:i + block_size] for i in ix.tolist()])
        y = torch.stack([self.data[i + 1:i + 1 + block_size] for i in ix.tolist()])
        return x.to(device), y.to(device)


def _cnn_batches(seed: int, batch_size: int, size: int, num_classes: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Synthetic images: a class-dependent pattern plus noise (learnable in a few steps), from numpy's seeded RNG."""
    rng = np.random.default_rng(seed)
    patterns = rng.standard_normal((num_classes, 1, size, size)).astype(np.float32)
    while True:
        labels = rng.integers(0, num_classes, batch_size)
        images = patterns[labels] + 0.5 * rng.standard_normal((batch_size, 1, size, size)).astype(np.float32)
        yield images, labels.astype(np.int64)


# ---- training runs ------------------------------------------------------------------------------

@dataclasses.dataclass
class TrainingRun:
    """A model, its optimizer and a step function, ready to train on ``device``.

    ``step()`` does one training step (zero_grad, forward, backward, clipping where the recipe has it,
    optimizer step) and returns the loss tensor (on the device, not synchronised).
    """

    name: str
    device: str
    model: nn.Module
    optimizer: Any
    step: Callable[[], torch.Tensor]


def make_gpt_run(device: str, seed: int = 1337, config: GPTConfig = GPT_CONFIG, batch_size: int = 8,
                 learning_rate: float = 1e-3, grad_clip: float = 1.0) -> TrainingRun:
    """nanoGPT's training recipe on ``device``: model built on the CPU from ``seed`` then moved, AdamW
    (betas 0.9/0.95, weight decay 0.1 on the 2-d parameters), gradient clipping at ``grad_clip``."""
    torch.manual_seed(seed)
    data = CharDataset(vocab_size=config.vocab_size)
    config = dataclasses.replace(config, vocab_size=data.vocab_size)
    model = GPT(config).to(device)
    model.train()
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), device.split(":")[0])
    torch.manual_seed(seed)  # the initialisation drew from the CPU's generator only: dropout starts alike everywhere
    batches = torch.Generator().manual_seed(seed)

    def step() -> torch.Tensor:
        x, y = data.get_batch(batch_size, config.block_size, device, generator=batches)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        return loss

    return TrainingRun("gpt", device, model, optimizer, step)


def make_cnn_run(device: str, seed: int = 0, batch_size: int = 16, size: int = 16, num_classes: int = 10,
                 learning_rate: float = 0.05) -> TrainingRun:
    """The small CNN on synthetic 1-channel images: SGD with momentum 0.9, cross-entropy."""
    torch.manual_seed(seed)
    model = SmallCNN(1, num_classes, size).to(device)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9)
    torch.manual_seed(seed)
    batches = _cnn_batches(seed, batch_size, size, num_classes)
    criterion = nn.CrossEntropyLoss()

    def step() -> torch.Tensor:
        images, labels = next(batches)
        x, y = torch.from_numpy(images).to(device), torch.from_numpy(labels).to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return TrainingRun("cnn", device, model, optimizer, step)


def _train(run: TrainingRun, steps: int) -> list[float]:
    return [float(run.step().item()) for _ in range(steps)]


def train_gpt(device: str, steps: int, seed: int = 1337, **kwargs: Any) -> list[float]:
    """The losses of ``steps`` nanoGPT-recipe steps on ``device`` (see :func:`make_gpt_run`)."""
    return _train(make_gpt_run(device, seed, **kwargs), steps)


def train_cnn(device: str, steps: int, seed: int = 0, **kwargs: Any) -> list[float]:
    """The losses of ``steps`` small-CNN steps on ``device`` (see :func:`make_cnn_run`)."""
    return _train(make_cnn_run(device, seed, **kwargs), steps)


# ---- comparing two devices ----------------------------------------------------------------------

@dataclasses.dataclass
class Divergence:
    """Where two training runs first disagree: the step (0-based), what ("activation", "loss",
    "gradient" or "parameter"), the module or parameter name, and the first mismatching element."""

    step: int
    kind: str
    name: str
    detail: str

    def __str__(self) -> str:
        return f"step {self.step}: {self.kind} '{self.name}' differs: {self.detail}"


def _record_activations(model: nn.Module, into: list[tuple[str, Any]]) -> list[Any]:
    """Forward hooks on every submodule appending (name, output) in execution order; returns the handles."""
    handles = []
    for name, module in model.named_modules():
        if not name:
            continue

        def hook(mod: nn.Module, args: Any, output: Any, name: str = name) -> None:
            out = output[0] if isinstance(output, tuple) else output
            if isinstance(out, torch.Tensor):
                into.append((name, out.detach().cpu().numpy()))

        handles.append(module.register_forward_hook(hook))
    return handles


def compare_training(make_run: Callable[..., TrainingRun], device: str, steps: int, reference: str = "cpu",
                     atol: float = 1e-5, rtol: float = 1e-4, **kwargs: Any
                     ) -> tuple[Optional[Divergence], dict[str, list[float]]]:
    """Trains ``make_run(reference)`` and ``make_run(device)`` side by side for ``steps`` steps and compares,
    at each step in execution order, every module's output, the loss, every parameter's gradient and
    every parameter after the optimizer step. Returns (the first :class:`Divergence` or None, the losses
    per device). The tolerances are float32 rounding's, loosened for steps compounding it."""
    from .conformance import first_mismatch

    runs = {d: make_run(d, **kwargs) for d in (reference, device)}
    acts: dict[str, list[tuple[str, Any]]] = {d: [] for d in runs}
    handles = [h for d, r in runs.items() for h in _record_activations(r.model, acts[d])]
    losses: dict[str, list[float]] = {d: [] for d in runs}
    try:
        for step in range(steps):
            for d, r in runs.items():
                acts[d].clear()
                losses[d].append(float(r.step().item()))
            ref, dev = runs[reference], runs[device]
            ref_acts, dev_acts = acts[reference], acts[device]
            for (name, a), (_, b) in zip(ref_acts, dev_acts):
                bad = first_mismatch(a, b, atol, rtol)
                if bad:
                    return Divergence(step, "activation", name, bad), losses
            bad = first_mismatch(np.float64(losses[reference][-1]), np.float64(losses[device][-1]), atol, rtol)
            if bad:
                return Divergence(step, "loss", run_name(ref), bad), losses
            dev_params = dict(dev.model.named_parameters())
            for kind in ("gradient", "parameter"):
                # Gradients in backward order (the last layer's first), parameters in module order.
                named = list(ref.model.named_parameters())
                for name, p in (reversed(named) if kind == "gradient" else named):
                    q = dev_params[name]
                    a = p.grad if kind == "gradient" else p
                    b = q.grad if kind == "gradient" else q
                    if (a is None) != (b is None):
                        return Divergence(step, kind, name, f"{reference}: {'no' if a is None else 'a'} gradient, "
                                                            f"{device}: {'no' if b is None else 'a'} gradient"), losses
                    if a is None:
                        continue
                    bad = first_mismatch(a.detach().cpu().numpy(), b.detach().cpu().numpy(), atol, rtol)
                    if bad:
                        return Divergence(step, kind, name, bad), losses
    finally:
        for h in handles:
            h.remove()
    return None, losses


def run_name(run: TrainingRun) -> str:
    """The loss's name in a divergence report."""
    return f"{run.name} loss"
