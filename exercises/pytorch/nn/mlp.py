"""A configurable multi-layer perceptron as an ``nn.Module``.

The question
------------
``nn.Module`` is the base class of every PyTorch model. Subclassing it and assigning layers as
attributes *registers* them: ``parameters()``, ``state_dict()``, ``.to(device)``, ``.train()`` and
``.eval()`` all walk the registered children. Interviewers ask you to write a small fully connected
network with a configurable depth and then probe what you know about that machinery: why a plain
Python ``list`` of layers silently breaks training and saving (``nn.ModuleList`` /
``nn.Sequential`` exist for that), how many parameters the network has, and why dropout must only
be active in training mode.

Your task
---------
Write ``MLP(in_features, hidden, out_features, activation="relu", dropout=0.0)``, an
``nn.Module`` whose ``forward(x)`` maps ``(..., in_features)`` to ``(..., out_features)``.

Contract
--------
- Architecture, for ``hidden = [h1, ..., hk]`` (``k >= 0``)::

      Linear(in_features, h1) -> act -> Dropout(dropout)
      -> Linear(h1, h2)       -> act -> Dropout(dropout)
      ...
      -> Linear(hk, out_features)

  With ``hidden = []`` the network is the single ``Linear(in_features, out_features)``. Every
  ``Linear`` has a bias. The last ``Linear`` is followed by nothing: no activation, no dropout
  (its outputs are logits / regression values). Dropout is never applied to the input.
- The linear layers are ``nn.Linear`` modules, registered in forward order (the order in which
  ``model.modules()`` yields them is the order they are applied). How you hold them is up to you
  (``nn.Sequential``, ``nn.ModuleList``, attributes); the tests do not depend on names. Leave
  PyTorch's default ``nn.Linear`` initialisation alone.
- Everything is registered: ``parameters()`` yields exactly the ``2 * (len(hidden) + 1)`` weights
  and biases, ``state_dict()`` holds them, and ``load_state_dict`` into another ``MLP`` built with
  the same arguments reproduces the outputs. ``model.to(device)`` / ``model.double()`` move or
  convert every parameter.
- ``activation`` is one of ``"relu"``, ``"gelu"`` (the exact, erf-based GELU), ``"tanh"``,
  ``"silu"``.
- Dropout (inverted dropout, as ``nn.Dropout``) is active only in training mode; in eval mode the
  forward pass is deterministic and equals the network without dropout.
- ``x`` may have any number of leading dimensions (including none). The output is on ``x``'s
  device with the parameters' dtype; under ``torch.autocast`` it comes out in the autocast dtype,
  as ``nn.Linear`` gives it. Works on the ``meta`` device.
- Bad arguments raise ``ValueError`` whose message names the argument: ``in_features``,
  ``out_features`` or an entry of ``hidden`` that is not a positive ``int`` (name ``hidden``),
  an unknown ``activation``, a ``dropout`` outside ``[0, 1)`` (NaN included).

Hints
-----
- ``self.layers = [nn.Linear(...), ...]`` looks fine and runs, but what does ``parameters()``
  return then? What would an optimizer train?
- ``nn.Dropout`` reads ``self.training``; ``F.dropout(x, p)`` does not unless you pass
  ``training=self.training``.
- Parameter count: each ``Linear(a, b)`` has ``a * b + b`` parameters.
"""

from collections.abc import Sequence

from torch import Tensor, nn


class MLP(nn.Module):
    """Fully connected network ``in_features -> *hidden -> out_features``."""

    def __init__(self, in_features: int, hidden: Sequence[int], out_features: int,
                 activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        """``(..., in_features) -> (..., out_features)``."""
        raise NotImplementedError
