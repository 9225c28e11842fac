"""Multi-head attention and a transformer encoder layer, equal to PyTorch's own.

The question
------------
Multi-head attention projects the queries, keys and values with three linear maps, splits the
``dim`` features into ``heads`` groups of ``dim // heads``, runs scaled dot-product attention in
every group at once, joins the groups again and applies an output projection. A transformer
encoder layer wraps it with residual connections, layer norms and a two-layer feed-forward
network. Where the norm goes is a classic question: the original ("post-norm") layer normalises
after each residual addition, ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; "pre-norm"
(``norm_first=True``) normalises the input of each sub-block, ``x = x + sa(norm1(x));
x = x + ff(norm2(x))``, which trains more stably in deep stacks. A faithful re-implementation
can load the weights of ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` and must then
give the same outputs.

Your task
---------
Write the modules ``MultiHeadAttention`` and ``TransformerEncoderLayer``, each with a
``load_from_torch`` method.

Contract
--------
- ``MultiHeadAttention(dim, heads, bias=True)``: ``forward(query, key, value, *,
  key_padding_mask=None, causal=False)`` takes batch-first ``(B, Lq, dim)``, ``(B, Lk, dim)``,
  ``(B, Lk, dim)`` and returns ``(B, Lq, dim)`` on the input's device, in the input's dtype.
  ``heads`` must divide ``dim``, else ``ValueError`` naming ``heads``.
- ``key_padding_mask`` is a boolean ``(B, Lk)`` tensor in ``nn.MultiheadAttention``'s convention:
  True = padding, that key is ignored. ``causal=True`` lets query ``i`` attend to keys ``j <= i``
  only (top-left aligned, as PyTorch's ``is_causal``). Inputs always leave every query at least
  one key to attend to.
- ``MultiHeadAttention.load_from_torch(mha)`` copies the weights of an ``nn.MultiheadAttention``
  built with the same ``embed_dim``, ``num_heads`` and ``bias`` (and ``batch_first=True``). After
  it, in eval mode, the output equals ``mha(query, key, value, key_padding_mask=...,
  attn_mask=..., need_weights=False)[0]``, for self- and cross-attention, gradients included.
  A module of another type, size or number of heads raises ``ValueError`` naming ``mha``.
- ``TransformerEncoderLayer(d_model, nhead, dim_ff, dropout=0.0, norm_first=False)`` has the
  structure of ``nn.TransformerEncoderLayer`` with ReLU and layer-norm eps ``1e-5``: self-attention,
  then the feed-forward ``linear2(dropout(relu(linear1(x))))``, each sub-block followed by
  dropout and added to its input; post-norm for ``norm_first=False``, pre-norm for
  ``norm_first=True``. ``forward(x, *, key_padding_mask=None, causal=False)`` takes and returns
  ``(B, L, d_model)``, the masks as above.
- ``TransformerEncoderLayer.load_from_torch(layer)`` copies the weights of an
  ``nn.TransformerEncoderLayer(d_model, nhead, dim_ff, dropout, norm_first=..., batch_first=True)``
  with the same sizes and ``norm_first``; in eval mode the outputs are then equal, with key
  padding and causal masks, gradients included. A layer of another type, size or ``norm_first``
  raises ``ValueError`` naming ``layer``.
- Dropout (probability ``dropout``) acts only in training mode: in eval mode the layer is
  deterministic and ignores ``dropout``; in training mode with ``dropout > 0`` two calls differ.
  ``dropout`` must be in ``[0, 1)``, else ``ValueError`` naming ``dropout``; ``nhead`` must
  divide ``d_model``, else ``ValueError`` naming ``nhead``.
- Without positional information both modules are permutation-equivariant: permuting the
  sequence positions of the input (and of the key padding mask) permutes the output the same way.

Hints
-----
- ``nn.MultiheadAttention`` keeps the three input projections stacked in ``in_proj_weight``
  ``(3*dim, dim)`` (query, key, value rows in that order) and ``in_proj_bias``; the output
  projection is ``out_proj``.
- ``x.view(B, L, heads, hd).transpose(1, 2)`` splits heads; ``x.view(B, heads, L, hd)`` does not.
- ``F.scaled_dot_product_attention`` takes a boolean mask with True = attend: the opposite of a
  key padding mask.
"""

from __future__ import annotations

from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention that can load ``nn.MultiheadAttention``'s weights."""

    def __init__(self, dim: int, heads: int, bias: bool = True) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, query: Tensor, key: Tensor, value: Tensor, *, key_padding_mask: Tensor | None = None,
                causal: bool = False) -> Tensor:
        raise NotImplementedError

    def load_from_torch(self, mha: nn.MultiheadAttention) -> None:
        """Copy the weights of ``mha`` into this module."""
        raise NotImplementedError


class TransformerEncoderLayer(nn.Module):
    """Post-norm (or pre-norm) encoder layer equal to ``nn.TransformerEncoderLayer(batch_first=True)``."""

    def __init__(self, d_model: int, nhead: int, dim_ff: int, dropout: float = 0.0,
                 norm_first: bool = False) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor, *, key_padding_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        raise NotImplementedError

    def load_from_torch(self, layer: nn.TransformerEncoderLayer) -> None:
        """Copy the weights of ``layer`` into this module."""
        raise NotImplementedError
