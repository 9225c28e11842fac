"""Wrong: zeroes only the generator's gradients; the discriminator step adds its gradients to those
the previous generator step left in D."""

from __future__ import annotations

import torch
import torch.nn.functional as F
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
        return self.net(z)


class Discriminator(nn.Module):
    """Samples ``(B, data_dim)`` -> logits ``(B, 1)``."""

    def __init__(self, data_dim: int, hidden: int = 32) -> None:
        super().__init__()
        _check_sizes(data_dim=data_dim, hidden=hidden)
        self.net = _mlp(data_dim, hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _bce(logits: torch.Tensor, target: float) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, target))


def gan_step(G: nn.Module, D: nn.Module, opt_g: torch.optim.Optimizer, opt_d: torch.optim.Optimizer,
             real: torch.Tensor, z: torch.Tensor) -> tuple[float, float]:
    """One discriminator step, then one generator step; returns ``(d_loss, g_loss)``."""
    fake = G(z)

    d_loss = _bce(D(real), 1.0) + _bce(D(fake.detach()), 0.0)  # detached: D's loss does not train G
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = _bce(D(fake), 1.0)  # non-saturating: -log D(G(z)), through the updated D
    g_loss.backward()  # also leaves gradients in D's .grad, which the next D step zeroes first
    opt_g.step()
    return d_loss.item(), g_loss.item()
