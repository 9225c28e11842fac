"""Wrong: accepts only torch.int64 (long) tokens and rejects torch.int32, which nn.Embedding takes
and the contract allows. Breaks: tokens is a torch.int64 or torch.int32 tensor."""

import torch
from torch import Tensor, nn

_INDEX_DTYPES = (torch.int64,)  # what nn.Embedding accepts as indices


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
        return self.output(torch.tanh(self.hidden(self.embedding(tokens))))
