"""Out of memory: find the largest batch that fits, and report what the allocator holds.

The question
------------
"CUDA out of memory" is the error every practitioner meets. The usual fixes are a smaller batch,
mixed precision, gradient accumulation or checkpointing, and not keeping references to tensors
(a list of losses with their graphs, an exception's traceback) that hold memory alive. A common
tool finds the largest batch size that fits automatically: try a size, grow it while it works,
then binary-search between the last size that fitted and the first that did not. Done carelessly it
catches the wrong errors (a real bug reported as "out of memory"), makes O(n) attempts, or keeps
the failed attempt's tensors alive through the exception so that every later try fails too.

Your task
---------
Write ``max_batch_size(try_batch, *, start=1, limit=65536)`` and ``memory_report(device)``.

Contract
--------
- ``try_batch(n)`` runs one batch of size ``n``; it raises ``torch.OutOfMemoryError`` when ``n``
  does not fit and returns normally otherwise. Sizes that fit form a prefix: if ``n`` fits, every
  smaller size fits.
- ``max_batch_size`` returns the largest ``n`` in ``[start, limit]`` for which ``try_batch(n)``
  returned normally, and ``0`` when ``try_batch(start)`` already runs out of memory. It only ever
  calls ``try_batch`` with sizes in ``[start, limit]``.
- It makes O(log) calls, at most ``2 * ceil(log2(limit - start + 1)) + 1`` calls to
  ``try_batch`` in all: for example grow ``start, 2*start, 4*start, ...`` (capped at ``limit``)
  until a size runs out of memory or ``limit`` fits, then binary-search in between.
- Only ``torch.OutOfMemoryError`` means "too big". Any other exception from ``try_batch``
  (``RuntimeError``, ``ValueError``, ...) propagates unchanged, and the search stops there.
- Between tries the memory of a failed try is released: the exception and its traceback (which
  keep the failed try's tensors alive) are dropped before the next try, then ``gc.collect()`` runs
  and, when CUDA is available, ``torch.cuda.empty_cache()``.
- ``start`` and ``limit`` are ``int``s with ``1 <= start <= limit``; otherwise ``ValueError``
  naming ``start`` (when ``start < 1``) or ``limit`` (when ``limit < start``).
- ``memory_report(device)`` (a ``str`` or ``torch.device``) for a CUDA device returns
  ``{"allocated": ..., "reserved": ..., "peak_allocated": ...}``, ints in bytes from
  ``torch.cuda.memory_allocated``, ``memory_reserved`` and ``max_memory_allocated`` for that
  device. Any other device (``cpu``, ``meta``) raises ``ValueError`` naming ``device``.

Hints
-----
- ``except torch.OutOfMemoryError:`` and nothing broader: ``OutOfMemoryError`` is a subclass of
  ``RuntimeError``, but not every ``RuntimeError`` is about memory.
- Do the next try *after* the ``except`` block, not inside it: inside, the exception and its
  traceback (with the frames and tensors of the failed try) are still alive.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def max_batch_size(try_batch: Callable[[int], None], *, start: int = 1, limit: int = 65536) -> int:
    """The largest batch size in ``[start, limit]`` that fits (0 if ``start`` does not)."""
    raise NotImplementedError


def memory_report(device: str | torch.device) -> dict[str, int]:
    """What the CUDA caching allocator holds on ``device``, in bytes."""
    raise NotImplementedError
