"""Wrong: a static-graph habit: always runs ``max_steps`` steps and ignores ``tol``, so the
number of steps never depends on the input."""

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
        for _ in range(self.max_steps):
            h = h + self.block(h)
        return h, self.max_steps
