"""Wrong: computes the logits with the embedding matrix directly but still creates the
output Linear with its own (unused) weight: the model carries an extra vocab x dim parameter
that is counted, saved and never trained, and output.weight is not the embedding weight."""

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
        # "Tied" in forward: the logits use the embedding matrix; self.output is left unused.

    def forward(self, tokens: Tensor) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.is_floating_point() or tokens.is_complex() \
                or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be an integer tensor, got "
                            f"{getattr(tokens, 'dtype', type(tokens).__name__)}")
        h = torch.tanh(self.hidden(self.embedding(tokens)))
        return nn.functional.linear(h, self.embedding.weight)
