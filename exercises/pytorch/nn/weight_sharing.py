"""Weight sharing: tie a language model's output projection to its embedding.

The question
------------
Two layers *share* weights when they use the very same ``nn.Parameter`` object. The classic case
is a language model whose output projection (hidden state -> vocabulary logits) reuses the input
embedding matrix: both are ``(vocab, dim)``, tying them saves ``vocab * dim`` parameters and
often helps. Because it is one tensor, autograd adds up the gradient contributions of both uses
into the one ``.grad``, and the optimizer updates it once. Interviewers ask how you would share
weights between layers, and then what survives: does the tie still hold after ``state_dict``
save/load, ``copy.deepcopy`` or ``.to(device)``? Is the shared tensor counted once or twice? (Copying
the *values*, or wrapping the same data in a second ``nn.Parameter``, is not sharing.)

Your task
---------
Write ``TiedLM(vocab, dim)``, a tiny language model whose output projection is tied to its
embedding.

Contract
--------
- Sub-modules, with these names:

  - ``self.embedding = nn.Embedding(vocab, dim)``
  - ``self.hidden = nn.Linear(dim, dim)`` (with bias)
  - ``self.output = nn.Linear(dim, vocab, bias=False)``, whose ``weight`` **is** the embedding's
    weight: ``model.output.weight is model.embedding.weight``.

- ``forward(tokens)``: ``tokens`` is an integer tensor (``torch.int64`` or ``torch.int32``, the
  index dtypes ``nn.Embedding`` takes) of any shape ``S`` (including 0-d) with values in
  ``[0, vocab)``; returns logits of shape ``(*S, vocab)``::

      logits = output(tanh(hidden(embedding(tokens))))

  The logits are on ``tokens``' device; under ``torch.autocast`` they come out in the autocast
  dtype (what ``nn.Linear`` gives).
- The shared matrix is one parameter: ``parameters()`` yields 3 tensors (embedding/output weight,
  hidden weight, hidden bias) with ``vocab * dim + dim * dim + dim`` values in total, and its
  ``.grad`` after backward is the sum of the gradients of its two uses.
- The tie survives ``load_state_dict`` (into a fresh ``TiedLM``), ``copy.deepcopy`` (the copy is
  tied to itself, not to the original) and every conversion: ``.to(dtype)``, ``.double()``,
  ``.to(device)`` for ``cpu``, ``cuda`` and ``meta`` (see the last hint: ``meta`` needs care).
- Leave PyTorch's default initialisation alone (the tests do not depend on it).
- Errors: ``vocab`` or ``dim`` not a positive ``int`` -> ``ValueError`` naming it; ``tokens``
  that is not a ``torch.int64`` or ``torch.int32`` tensor (a float, bool or ``uint8`` tensor, a
  list) -> ``TypeError`` naming ``tokens``.

Hints
-----
- Assigning an existing ``nn.Parameter`` to a module attribute registers it there too.
- ``nn.Parameter(self.embedding.weight.clone())`` and ``nn.Parameter(self.embedding.weight.data)``
  are two different ways of *not* tying.
- ``model.parameters()`` removes duplicates; ``named_parameters(remove_duplicate=False)`` shows
  both names of a shared tensor, and ``state_dict()`` stores both keys.
- Converting to ``meta`` (unlike a dtype change or a move to CUDA) makes ``nn.Module`` build a
  *new* ``nn.Parameter`` for each registration it walks, so a tie made once in ``__init__`` is
  silently undone (check ``model.to("meta")``). Every ``.to``/``.cuda``/``.double``/``.to_empty``
  goes through ``nn.Module._apply(fn, ...)``: override it, call ``super()._apply(...)``, then tie
  again and return ``self``. (Hugging Face models re-tie with ``tie_weights()`` for this reason.)
"""

from torch import Tensor, nn


class TiedLM(nn.Module):
    """Embedding -> Linear + tanh -> output projection tied to the embedding."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, tokens: Tensor) -> Tensor:
        """Integer ``tokens`` of shape ``S`` -> logits ``(*S, vocab)``."""
        raise NotImplementedError
