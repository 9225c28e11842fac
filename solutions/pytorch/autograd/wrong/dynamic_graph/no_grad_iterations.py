"""Wrong: runs the refinement under ``torch.no_grad()`` to save memory and re-enables autograd
only for the final step (a "one-step gradient" shortcut). The values are right, but the gradient
ignores every step but the last: nothing flows back to ``x`` through the earlier steps, and the
block's parameters get only the last step's share."""

import torch
from torch import Tensor, nn


class Refiner(nn.Module):
    def __init__(self, block: nn.Module, *, tol: float = 1e-4, max_steps: int = 50) -> None:
        super().__init__()
        if not tol >= 0:
            raise ValueError(f"tol must be >= 0, got {tol}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
        self.block = block
        self.tol = float(tol)
        self.max_steps = max_steps

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        h = x
        with torch.no_grad():
            for step in range(1, self.max_steps + 1):
                update = self.block(h)
                if torch.linalg.vector_norm(update) < self.tol or step == self.max_steps:
                    break
                h = h + update
        # h is now the state before the final step; only that step is recorded by autograd.
        return h + self.block(h), step
