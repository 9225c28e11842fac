"""Public tests for pytorch.training.gan_step: a few quick examples. Run with
``pytest exercises/pytorch/training/test_gan_step.py``."""

import torch


def test_shapes(impl):
    G, D = impl.Generator(4, 2), impl.Discriminator(2)
    fake = G(torch.randn(5, 4))
    assert tuple(fake.shape) == (5, 2), f"Generator(4, 2) on (5, 4) noise gave shape {tuple(fake.shape)}"
    logits = D(fake)
    assert tuple(logits.shape) == (5, 1), f"Discriminator(2) on (5, 2) samples gave shape {tuple(logits.shape)}"


def test_one_step_returns_two_floats_and_moves_both_networks(impl):
    torch.manual_seed(0)
    G, D = impl.Generator(4, 2), impl.Discriminator(2)
    opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
    g_before = [p.detach().clone() for p in G.parameters()]
    d_before = [p.detach().clone() for p in D.parameters()]
    d_loss, g_loss = impl.gan_step(G, D, opt_g, opt_d, torch.randn(8, 2) + 3.0, torch.randn(8, 4))
    assert type(d_loss) is float and type(g_loss) is float, "gan_step should return two Python floats"
    assert d_loss > 0 and g_loss > 0, f"binary cross-entropies are positive, got {d_loss}, {g_loss}"
    assert any(not torch.equal(a, b) for a, b in zip(g_before, G.parameters())), "G's parameters did not move"
    assert any(not torch.equal(a, b) for a, b in zip(d_before, D.parameters())), "D's parameters did not move"
