"""Scaled dot-product attention, with masks, by hand.

The question
------------
Attention is the core of every transformer: each query row ``q_i`` scores every key ``k_j`` with
a dot product, the scores are divided by ``sqrt(D)`` (``D`` the query/key size, so that the
softmax does not saturate as ``D`` grows), a softmax over the keys turns them into weights, and
the output row is the weighted average of the value rows. Interviews ask for it from scratch and
then probe the details: which axis the softmax runs over, what a mask means (PyTorch's boolean
``attn_mask`` says True = *may attend*; ``key_padding_mask`` in ``nn.MultiheadAttention`` says
the opposite), how a causal mask lines up when there are fewer queries than keys, and what happens
to a query that may attend to nothing (a softmax over only ``-inf`` is ``0/0 = NaN``).

Your task
---------
Write ``scaled_dot_product_attention(q, k, v, *, mask=None, causal=False)`` returning
``(out, weights)``.

Contract
--------
- Shapes: ``q`` is ``(..., Lq, D)``, ``k`` is ``(..., Lk, D)``, ``v`` is ``(..., Lk, Dv)``, with
  the same leading dimensions ``...`` (any number of them, including none). ``weights`` is
  ``(..., Lq, Lk)`` and ``out`` is ``(..., Lq, Dv)``.
- Values: ``weights = softmax(q @ k^T / sqrt(D) + bias, dim=-1)`` (a softmax over the keys, for
  each query) and ``out = weights @ v``, equal to ``torch.nn.functional.scaled_dot_product_attention``
  with the same mask and ``is_causal``. ``bias`` is zero without a mask.
- ``mask`` broadcasts to ``(..., Lq, Lk)`` without changing that shape. A boolean mask says which
  keys each query may attend to: True = attend, False = masked out (its weight is exactly 0).
  A floating mask must have ``q``'s dtype and is added to the scores (an additive mask: ``0`` keeps
  a score, ``-inf`` masks it out, anything else shifts it).
- ``causal=True`` lets query ``i`` attend to keys ``j <= i`` only, aligned at the top left
  exactly as PyTorch's ``is_causal`` (the mask is ``torch.ones(Lq, Lk, dtype=torch.bool).tril()``,
  also when ``Lq != Lk``). With a ``mask`` as well, a key must be allowed by both.
- A query that may attend to no key at all (every key masked out by a boolean mask, by ``-inf``
  in an additive mask, or by the causal rule) gets a row of zero weights and a zero output row:
  never NaN, neither in the values nor in any gradient.
- The softmax is numerically stable: large scores (``|q @ k^T / sqrt(D)|`` in the thousands) give
  finite results.
- Gradients flow to ``q``, ``k`` and ``v`` and equal those of PyTorch's attention. ``out`` and
  ``weights`` have ``q``'s dtype (float32 or float64) and device (``cpu``, ``cuda`` or ``meta``).
  Under ``torch.autocast`` the matmuls run in the autocast dtype and ``out`` comes out in it
  (bfloat16 on CPU), finite and close to the float32 result.
- Errors: ``k.shape[-1] != q.shape[-1]`` raises ``ValueError`` naming ``k``; ``v.shape[-2] !=
  k.shape[-2]`` raises ``ValueError`` naming ``v``; a ``mask`` that does not broadcast to
  ``(..., Lq, Lk)`` raises ``ValueError`` naming ``mask``; a ``mask`` that is neither boolean nor
  of ``q``'s floating dtype raises ``TypeError`` naming ``mask``.

Hints
-----
- ``scores.masked_fill(~allowed, float("-inf"))`` masks; ``torch.softmax`` is already stable
  (it subtracts the row maximum). What does it return for a row of only ``-inf``?
- ``torch.where(cond, weights, 0)`` after a NaN softmax fixes the values but not the gradient:
  the NaN still flows back through the branch that was not taken. Make the row safe *before*
  the softmax (or the exponential) instead.
- Nothing here needs the tensors' values on the host: no boolean indexing, so it runs on ``meta``.
"""

from __future__ import annotations

from torch import Tensor


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, *, mask: Tensor | None = None,
                                 causal: bool = False) -> tuple[Tensor, Tensor]:
    """Attention of queries ``q`` over keys ``k`` and values ``v``; returns ``(out, weights)``."""
    raise NotImplementedError
