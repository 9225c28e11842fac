"""Moving nested data between devices.

The question
------------
PyTorch never moves data behind your back: a tensor lives on one device (``cpu``, ``cuda:0``,
``mps``, ...), an operation needs its operands on the same device, and you move things explicitly
with ``t.to(device)`` (which *returns* the moved tensor; for tensors it is not in place).
Interviewers ask how to move a tensor or a model to the GPU, how to write device-agnostic code that
runs with or without one, and what device types exist. In a real training loop the batch is rarely
one tensor: it is a dict of tensors, a tuple of (inputs, targets), a namedtuple or a dataclass, with
strings, ids and other non-tensor values mixed in. Every framework has a helper that walks such a
structure and moves each tensor; you will write one.

Your task
---------
1. ``move_to(obj, device, *, non_blocking=False)``: return ``obj`` with every tensor inside it on
   ``device``.
2. ``pick_device(prefer=("cuda", "mps", "cpu"))``: the first device type in ``prefer`` that is
   available on this machine.

Contract
--------
``move_to``:

- ``device`` is a ``str`` or a ``torch.device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"meta"``,
  ...). A tensor ``t`` becomes ``t.to(device, non_blocking=non_blocking)``: same dtype and values,
  still connected to the autograd graph, and **the same tensor object** when it is already on
  ``device`` (no copy).
- Containers are walked recursively and rebuilt with the same type:

  * ``list`` -> ``list``; ``tuple`` -> ``tuple``; a namedtuple -> the same namedtuple class;
  * ``dict`` -> ``dict`` and ``OrderedDict`` -> ``OrderedDict``, same keys in the same order
    (keys are not moved, only values);
  * a dataclass instance -> a new instance of the same dataclass whose fields are moved (frozen
    dataclasses included).

- Anything else (numbers, strings, bytes, ``None``, NumPy arrays, ...) is returned unchanged,
  as the very same object.
- The input is never modified: its containers still hold the original tensors afterwards.
- ``non_blocking`` is passed on to every tensor transfer.

``pick_device``:

- ``prefer`` is a sequence of device type names, each one of ``"cuda"``, ``"mps"``, ``"xpu"``,
  ``"cpu"``. Returns ``torch.device(name)`` (no index) for the first available one, in the order
  given. Availability is decided when called, by ``torch.cuda.is_available()``,
  ``torch.backends.mps.is_available()``, ``torch.xpu.is_available()``; ``"cpu"`` is always
  available.
- An empty ``prefer``, an unknown name anywhere in it, or no available entry raises
  ``ValueError`` naming ``prefer``.

Hints
-----
- A namedtuple is a tuple, but ``tuple(...)`` loses its class and ``NamedTuple(generator)`` does
  not call it the way you think: look at how namedtuples are constructed from positional values.
- A string is a sequence too (of one-character strings, each a sequence...).
- ``dataclasses.is_dataclass``, ``dataclasses.fields``, ``dataclasses.replace``.
"""

from collections.abc import Sequence
from typing import Any

import torch


def move_to(obj: Any, device: str | torch.device, *, non_blocking: bool = False) -> Any:
    """``obj`` with every tensor inside it moved to ``device``; containers keep their types."""
    raise NotImplementedError


def pick_device(prefer: Sequence[str] = ("cuda", "mps", "cpu")) -> torch.device:
    """The first available device type in ``prefer``."""
    raise NotImplementedError
