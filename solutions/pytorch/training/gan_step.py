"""A GAN on low-dimensional data: the generator, the discriminator and one training step.

The question
------------
What is a GAN, and how do you train one in PyTorch? A generator ``G`` turns noise ``z`` into
samples; a discriminator ``D`` scores samples with a logit, high for "real". They train in turns.
The discriminator step pushes ``D(real)`` up and ``D(G(z))`` down; the generated batch is
*detached* there, so D's loss trains D alone. The generator step pushes ``D(G(z))`` up with the
*non-saturating* loss ``-log D(G(z))``: the original ``log(1 - D(G(z)))`` has almost no gradient
early on, when D easily spots the fakes. Each optimizer updates its own network only, and each
step must see the gradients of its own loss alone.

Your task
---------
Write ``Generator``, ``Discriminator`` and ``gan_step(G, D, opt_g, opt_d, real, z)``.

Contract
--------
- ``Generator(latent_dim, data_dim, hidden=32)`` maps noise ``(B, latent_dim)`` to samples
  ``(B, data_dim)`` through ``nn.Linear(latent_dim, hidden)``, ``LeakyReLU(0.2)``,
  ``nn.Linear(hidden, hidden)``, ``LeakyReLU(0.2)``, ``nn.Linear(hidden, data_dim)``, in that
  order, with no activation after the last layer (samples are unbounded).
- ``Discriminator(data_dim, hidden=32)`` maps samples ``(B, data_dim)`` to logits ``(B, 1)``
  through ``nn.Linear(data_dim, hidden)``, ``LeakyReLU(0.2)``, ``nn.Linear(hidden, hidden)``,
  ``LeakyReLU(0.2)``, ``nn.Linear(hidden, 1)``, with no sigmoid after the last layer.
- ``latent_dim``, ``data_dim`` and ``hidden`` are ints >= 1; 0 raises ``ValueError`` naming the
  argument. Both modules' outputs are on the input's device (``cpu``, ``cuda``, ``meta``).
- ``gan_step`` makes one discriminator step, then one generator step, for any generator ``G`` and
  discriminator ``D`` of those shapes, with ``real`` ``(B, data_dim)`` and noise ``z``
  ``(B, latent_dim)``: ``opt_d`` holds D's parameters and ``opt_g`` G's.
- The discriminator step minimises ``d_loss = BCE(D(real), 1) + BCE(D(fake), 0)``, where BCE is
  ``F.binary_cross_entropy_with_logits`` (mean over the batch) and ``fake = G(z)`` is detached:
  D's loss sends no gradient into G. ``opt_d.step()`` sees the gradients of ``d_loss`` alone
  (zero D's gradients first), and G's parameters stay unchanged by this step.
- The generator step minimises the non-saturating ``g_loss = BCE(D(G(z)), 1)`` (``-log D(G(z))``,
  not ``log(1 - D(G(z)))``), with D as the discriminator step left it. ``opt_g.step()`` sees
  the gradients of ``g_loss`` alone, and D's parameters stay as the discriminator step made them.
- Returns ``(d_loss, g_loss)``: the two losses above as Python floats, each computed before its
  own step.
- Trained with it, the networks learn: with ``Generator(4, 1, hidden=16)``,
  ``Discriminator(1, hidden=16)``, Adam for both (``lr=5e-3``, ``betas=(0.5, 0.999)``) and
  batches of 64, 200 steps on samples of a 1-D Gaussian ``N(3, 0.5^2)`` bring the mean of G's
  samples within 0.5 of 3.

Hints
-----
- ``fake = G(z)``; the D step uses ``fake.detach()``, the G step ``D(fake)``.
- ``BCE(logits, 1)`` is ``F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))``.
- ``loss.item()`` gives the float; call ``zero_grad()`` on the optimizer you are about to step.
"""

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

    opt_d.zero_grad()
    d_loss = _bce(D(real), 1.0) + _bce(D(fake.detach()), 0.0)  # detached: D's loss does not train G
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = _bce(D(fake), 1.0)  # non-saturating: -log D(G(z)), through the updated D
    g_loss.backward()  # also leaves gradients in D's .grad, which the next D step zeroes first
    opt_g.step()
    return d_loss.item(), g_loss.item()
