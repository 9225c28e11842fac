"""Wrong: ties once in __init__ only. That survives deepcopy, load_state_dict and dtype or
CUDA moves, but .to('meta') (and other conversions that cannot reuse the tensor in place)
gives each registration its own new Parameter and silently unties them."""

import torch
from torch import Tensor, nn


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

    def forward(self, tokens: Tensor) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.is_floating_point() or tokens.is_complex() \
                or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be an integer tensor, got "
                            f"{getattr(tokens, 'dtype', type(tokens).__name__)}")
        return self.output(torch.tanh(self.hidden(self.embedding(tokens))))
