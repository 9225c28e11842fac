"""Wrong: stops when ||u|| <= tol: an update whose norm equals tol stops the loop, and with tol=0 an
exactly zero update stops it early."""

import torch
from torch import Tensor, nn


class Refiner(nn.Module):
    def __init__(self, block: nn.Module, *, tol: float = 1e-4, max_steps: int = 50) -> None:
        super().__init__()
        if not tol >= 0:  # also rejects NaN
            raise ValueError(f"tol must be >= 0, got {tol}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
        # Assigning a Module attribute registers it: one parameter set, reused at every step.
        self.block = block
        self.tol = float(tol)
        self.max_steps = max_steps

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        h = x
        for step in range(1, self.max_steps + 1):
            update = self.block(h)
            h = h + update
            # The comparison is a Python bool: the graph recorded so far is exactly the steps run.
            if torch.linalg.vector_norm(update) <= self.tol:
                break
        return h, step
