"""``MultiheadAttention`` (``torch.nn.modules.activation``) over linear and scaled_dot_product_attention."""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

from ..._factories import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Multi-head attention with PyTorch's parameters (``in_proj_weight`` (3E, E), ``in_proj_bias``,
    ``out_proj``), so PyTorch state dicts load. Inputs are (L, N, E), or (N, L, E) with batch_first,
    or unbatched (L, E). A bool ``attn_mask`` / ``key_padding_mask`` marks positions NOT allowed to
    attend (True = masked), a float one is added to the scores. Not supported yet: ``kdim``/``vdim``
    different from ``embed_dim``, ``add_bias_kv``, ``add_zero_attn`` (NotImplementedError)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Optional[int] = None,
                 vdim: Optional[int] = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)) or add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: kdim/vdim != embed_dim, add_bias_kv and add_zero_attn "
                                      "are not supported by the SDK yet")
        self.embed_dim = embed_dim
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim, "embed_dim must be divisible by num_heads"
        self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), device=device, dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    @staticmethod
    def _as_additive(mask: Optional[Tensor], like: Tensor) -> Optional[Tensor]:
        if mask is None:
            return None
        if mask.dtype.is_floating_point:
            return mask.to(like.dtype)
        return like.new_zeros(list(mask.shape)).masked_fill(mask, float("-inf"))

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None,
                need_weights: bool = True, attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[Tensor, Optional[Tensor]]:
        unbatched = query.dim() == 2
        if unbatched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        tgt_len, bsz, embed = query.shape
        if embed != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {embed}")
        src_len = key.shape[0]
        w, b = self.in_proj_weight, self.in_proj_bias
        E = self.embed_dim
        q = F.linear(query, w[:E], None if b is None else b[:E])
        k = F.linear(key, w[E:2 * E], None if b is None else b[E:2 * E])
        v = F.linear(value, w[2 * E:], None if b is None else b[2 * E:])

        def heads(t: Tensor, length: int) -> Tensor:  # (L, N, E) -> (N, H, L, D)
            return t.reshape(length, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)

        q, k, v = heads(q, tgt_len), heads(k, src_len), heads(v, src_len)
        mask = self._as_additive(attn_mask, q)
        if mask is not None and mask.dim() == 3:  # (N * H, L, S)
            mask = mask.reshape(bsz, self.num_heads, tgt_len, src_len)
        if is_causal and mask is None:
            mask = q.new_zeros([tgt_len, src_len]).masked_fill(
                q.new_ones([tgt_len, src_len]).triu(1).bool(), float("-inf"))
        pad = self._as_additive(key_padding_mask, q)
        if pad is not None:
            pad = pad.reshape(bsz, 1, 1, src_len)
            mask = pad if mask is None else mask + pad
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            attn = F.softmax(scores, dim=-1)
            out = F.dropout(attn, dropout_p) @ v
        else:
            attn = None
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, E)
        out = self.out_proj(out)
        if attn is not None and average_attn_weights:
            attn = attn.mean(dim=1)
        if unbatched:
            out = out.squeeze(1)
            if attn is not None:
                attn = attn.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, attn
