"""Wrong: a constant submission -- validates its arguments and registers the block as the contract
says, but forward returns zeros shaped like x and claims one step."""

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
        return torch.zeros_like(x), 1
