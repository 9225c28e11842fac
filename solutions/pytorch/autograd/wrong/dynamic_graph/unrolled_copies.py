"""Wrong: thinks like a static graph and unrolls the loop into ``max_steps`` separate copies of
the block, one per step. The parameter count grows with ``max_steps``, the copies drift apart in
training, and the block that was passed in never gets a gradient."""

import copy

import torch
from torch import Tensor, nn


class Refiner(nn.Module):
    def __init__(self, block: nn.Module, *, tol: float = 1e-4, max_steps: int = 50) -> None:
        super().__init__()
        if not tol >= 0:
            raise ValueError(f"tol must be >= 0, got {tol}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
        self.steps = nn.ModuleList(copy.deepcopy(block) for _ in range(max_steps))
        self.tol = float(tol)

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        h = x
        for step, block in enumerate(self.steps, start=1):
            update = block(h)
            h = h + update
            if torch.linalg.vector_norm(update) < self.tol:
                break
        return h, step
