"""Wrong (the constant submission): the tie, its survival and the errors are right, but forward
returns zero logits of the right shape, dtype and device (attached to the graph, zero gradients)."""

import torch
from torch import Tensor, nn

_INDEX_DTYPES = (torch.int64, torch.int32)  # what nn.Embedding accepts as indices


def _check_size(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class TiedLM(nn.Module):
    """Embedding -> Linear + tanh -> output projection tied to the embedding."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        vocab, dim = _check_size(vocab, "vocab"), _check_size(dim, "dim")
        self.embedding = nn.Embedding(vocab, dim)
        self.hidden = nn.Linear(dim, dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        self.tie_weights()

    def tie_weights(self) -> None:
        # The output layer holds the embedding's Parameter object itself: parameters()
        # de-duplicates it, deepcopy's memo keeps it one object, load_state_dict copies into it.
        self.output.weight = self.embedding.weight

    def _apply(self, fn, *args, **kwargs):
        # A conversion that cannot reuse the tensor in place (to "meta", for one) replaces each
        # registration with a new Parameter, untying the two; tie them again afterwards.
        super()._apply(fn, *args, **kwargs)
        self.tie_weights()
        return self

    def forward(self, tokens: Tensor) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.dtype not in _INDEX_DTYPES:
            raise TypeError(f"tokens must be a torch.int64 or torch.int32 tensor, got "
                            f"{getattr(tokens, 'dtype', type(tokens).__name__)}")
        logits = self.output(torch.tanh(self.hidden(self.embedding(tokens))))
        return logits - logits.detach()
