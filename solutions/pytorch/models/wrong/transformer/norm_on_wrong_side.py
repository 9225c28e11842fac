"""Wrong: swaps the two norm placements: post-norm when norm_first=True and pre-norm otherwise
(breaks the norm_first clause)."""


from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention that can load ``nn.MultiheadAttention``'s weights."""

    def __init__(self, dim: int, heads: int, bias: bool = True) -> None:
        super().__init__()
        if heads < 1 or dim % heads:
            raise ValueError(f"heads ({heads}) must divide dim ({dim})")
        self.dim, self.heads, self.bias = dim, heads, bias
        self.q_proj = nn.Linear(dim, dim, bias=bias)
        self.k_proj = nn.Linear(dim, dim, bias=bias)
        self.v_proj = nn.Linear(dim, dim, bias=bias)
        self.out_proj = nn.Linear(dim, dim, bias=bias)

    def _split(self, x: Tensor) -> Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.heads, self.dim // self.heads).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, *, key_padding_mask: Tensor | None = None,
                causal: bool = False) -> Tensor:
        q, k, v = self._split(self.q_proj(query)), self._split(self.k_proj(key)), self._split(self.v_proj(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.dim // self.heads)
        lq, lk = scores.shape[-2:]
        allowed = torch.ones(lq, lk, dtype=torch.bool, device=query.device)
        if causal:
            allowed = allowed.tril()
        if key_padding_mask is not None:
            allowed = allowed & ~key_padding_mask[:, None, None, :]
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(query.shape[0], lq, self.dim)
        return self.out_proj(out)

    def load_from_torch(self, mha: nn.MultiheadAttention) -> None:
        """Copy the weights of ``mha`` into this module."""
        if (not isinstance(mha, nn.MultiheadAttention) or mha.embed_dim != self.dim
                or mha.num_heads != self.heads or (mha.in_proj_bias is not None) != self.bias
                or mha.in_proj_weight is None):
            raise ValueError(f"mha must be an nn.MultiheadAttention({self.dim}, {self.heads}, "
                             f"bias={self.bias}), got {mha!r:.100}")
        with torch.no_grad():
            for proj, w in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_weight.chunk(3), strict=True):
                proj.weight.copy_(w)
            self.out_proj.weight.copy_(mha.out_proj.weight)
            if self.bias:
                for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_bias.chunk(3), strict=True):
                    proj.bias.copy_(b)
                self.out_proj.bias.copy_(mha.out_proj.bias)


class TransformerEncoderLayer(nn.Module):
    """Post-norm (or pre-norm) encoder layer equal to ``nn.TransformerEncoderLayer(batch_first=True)``."""

    def __init__(self, d_model: int, nhead: int, dim_ff: int, dropout: float = 0.0,
                 norm_first: bool = False) -> None:
        super().__init__()
        if not 0.0 <= dropout < 1.0:  # also False for NaN
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        if nhead < 1 or d_model % nhead:
            raise ValueError(f"nhead ({nhead}) must divide d_model ({d_model})")
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_ff)
        self.linear2 = nn.Linear(dim_ff, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.dropout = nn.Dropout(dropout)

    def _sa(self, x: Tensor, key_padding_mask: Tensor | None, causal: bool) -> Tensor:
        return self.dropout(self.self_attn(x, x, x, key_padding_mask=key_padding_mask, causal=causal))

    def _ff(self, x: Tensor) -> Tensor:
        return self.dropout(self.linear2(self.dropout(torch.relu(self.linear1(x)))))

    def forward(self, x: Tensor, *, key_padding_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        if not self.norm_first:
            x = x + self._sa(self.norm1(x), key_padding_mask, causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, key_padding_mask, causal))
        return self.norm2(x + self._ff(x))

    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> None:
        """Copy the weights of ``layer`` into this module."""
        if (not isinstance(layer, nn.TransformerEncoderLayer) or layer.norm_first != self.norm_first
                or layer.linear1.weight.shape != self.linear1.weight.shape
                or layer.self_attn.num_heads != self.self_attn.heads):
            raise ValueError(f"layer must be an nn.TransformerEncoderLayer with d_model="
                             f"{self.linear1.in_features}, nhead={self.self_attn.heads}, dim_ff="
                             f"{self.linear1.out_features}, norm_first={self.norm_first}")
        self.self_attn.load_from_torch(layer.self_attn)
        with torch.no_grad():
            for name in ("linear1", "linear2", "norm1", "norm2"):
                for p, q in zip(getattr(self, name).parameters(), getattr(layer, name).parameters(), strict=True):
                    p.copy_(q)
