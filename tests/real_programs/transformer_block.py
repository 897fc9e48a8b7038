# A pre-norm transformer block (nn.MultiheadAttention with a causal mask, GELU MLP), a language-model head,
# AdamW with a cosine schedule, gradient clipping.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda"
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d_model, n_head, dropout=0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, dropout=dropout, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model=32, n_head=4, n_layer=2, block_size=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, block_size, d_model))
        self.blocks = nn.ModuleList([Block(d_model, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, : idx.size(1)]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


vocab, T = 16, 16
data = torch.arange(0, 4096) % vocab  # a periodic sequence: easy to learn
model = TinyLM(vocab, block_size=T).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=30)
print(model.blocks[0])
print("parameters:", sum(p.numel() for p in model.parameters()))

losses = []
for step in range(30):
    ix = torch.randint(len(data) - T - 1, (8,))
    xb = torch.stack([data[i : i + T] for i in ix]).to(device)
    yb = torch.stack([data[i + 1 : i + T + 1] for i in ix]).to(device)
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, vocab), yb.view(-1))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    losses.append(loss.item())
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.6f} grad norm {norm.item():.6f}")
print(f"final loss {losses[-1]:.6f} (first {losses[0]:.6f}, initial estimate {math.log(vocab):.6f})")
assert losses[-1] < 0.7 * losses[0]

model.eval()
with torch.no_grad():
    probs = F.softmax(model(data[:T].unsqueeze(0).to(device))[0, -1], dim=-1)
    top = torch.topk(probs, 3)
print("top-3 next tokens:", top.indices.tolist(), [round(v, 4) for v in top.values.tolist()])
