"""Wrong: the constant submission: networks of the right shapes that output zeros, and a step
that trains nothing and returns zeros."""

from __future__ import annotations

import torch
from torch import nn


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value}")


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                         nn.Linear(hidden, n_out))


class Generator(nn.Module):
    """Noise ``(B, latent_dim)`` -> samples ``(B, data_dim)``."""

    def __init__(self, latent_dim: int, data_dim: int, hidden: int = 32) -> None:
        super().__init__()
        _check_sizes(latent_dim=latent_dim, data_dim=data_dim, hidden=hidden)
        self.net = _mlp(latent_dim, hidden, data_dim)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.zeros(z.shape[0], self.net[-1].out_features, device=z.device)


class Discriminator(nn.Module):
    """Samples ``(B, data_dim)`` -> logits ``(B, 1)``."""

    def __init__(self, data_dim: int, hidden: int = 32) -> None:
        super().__init__()
        _check_sizes(data_dim=data_dim, hidden=hidden)
        self.net = _mlp(data_dim, hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(x.shape[0], 1, device=x.device)


def gan_step(G: nn.Module, D: nn.Module, opt_g: torch.optim.Optimizer, opt_d: torch.optim.Optimizer,
             real: torch.Tensor, z: torch.Tensor) -> tuple[float, float]:
    """One discriminator step, then one generator step; returns ``(d_loss, g_loss)``."""
    return 0.0, 0.0
