"""A custom collate function: padding variable-length sequences into one batch.

The question
------------
A ``DataLoader`` builds a batch by handing a list of samples to its ``collate_fn``; the default
one stacks them, which fails when the samples are sequences of different lengths (sentences,
audio clips, sensor traces). A custom collate function pads them to the longest one and says
where the real steps are: the lengths (which ``torch.nn.utils.rnn.pack_padded_sequence`` takes so
that a recurrent network never reads the padding) and a boolean mask (for masked pooling, losses
and attention).

Your task
---------
Write ``pad_collate(batch, pad_value=0.0)``, usable as ``DataLoader(..., collate_fn=pad_collate)``.

Contract
--------
- ``batch`` is a non-empty list of ``(sequence, label)`` pairs: ``sequence`` a tensor of shape
  ``(L_i, F)`` with ``L_i >= 1``, ``label`` an int. All sequences have the same ``F``, dtype and
  device. An empty batch, a sequence that is not 2-D or has ``L_i == 0``, or sequences that
  differ in ``F`` or dtype raise ``ValueError`` naming ``batch``.
- ``pad_value`` is a number (NaN and infinities included) that the sequences' dtype can hold.
- The result is a dict with exactly the keys ``"x"``, ``"lengths"``, ``"mask"`` and ``"y"``; row
  ``i`` of each belongs to ``batch[i]`` (the batch keeps its order: nothing is sorted).
- ``x`` has shape ``(B, L_max, F)`` (``L_max`` the longest ``L_i``) with the sequences' dtype and
  device: ``x[i, :L_i]`` is sequence ``i`` and every step after it is ``pad_value``.
- ``lengths`` is an int64 tensor of shape ``(B,)`` on the CPU (where ``pack_padded_sequence``
  wants it, whatever the sequences' device) holding each ``L_i``; it counts the steps of each
  sequence, whatever their values (a step equal to ``pad_value`` is still a step).
- ``mask`` is a bool tensor of shape ``(B, L_max)`` on the sequences' device, ``True`` exactly
  at the real steps: ``mask[i, t]`` is ``t < L_i``.
- ``y`` is an int64 tensor of shape ``(B,)`` on the sequences' device holding the labels.
- The inputs are not modified, and ``x`` does not share memory with them.
- ``x`` and ``lengths`` feed ``pack_padded_sequence(x, lengths, batch_first=True,
  enforce_sorted=False)``: an ``nn.LSTM`` run on the packed batch gives each sequence the same
  final hidden and cell states as running it alone.

Hints
-----
- ``x.new_full(...)`` makes a tensor with ``x``'s dtype and device.
- ``torch.nn.utils.rnn.pad_sequence`` does the padding (see its ``batch_first`` and
  ``padding_value``).
- ``torch.arange(L_max, device=...) < ...[:, None]`` is the whole mask, by broadcasting.
"""

from __future__ import annotations

import torch


def pad_collate(batch: list[tuple[torch.Tensor, int]], pad_value: float = 0.0) -> dict[str, torch.Tensor]:
    """Pad ``(sequence (L_i, F), label)`` pairs into a batch dict with ``x``, ``lengths``,
    ``mask`` and ``y``."""
    raise NotImplementedError
