"""Hidden tests for pytorch.training.gan_step (the catalog's contract checks).

``gan_step`` is watched on networks the test builds itself (so its clauses do not depend on the
submitted classes), with hooks on the optimizers: what each ``step()`` was given is compared with
gradients that ``torch.autograd.grad`` computes from snapshots of the parameters, and the
parameters of the network that must not move are compared before and after. The classes are
checked against a forward pass written out from the layers they register.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn
from torch.func import functional_call

from grader.checks import assert_close, assert_raises_naming, device_params

LATENT, DATA, BATCH = 3, 2, 8


def small_networks(seed: int) -> tuple[nn.Module, nn.Module]:
    """A generator and a discriminator of the right shapes, independent of the submission."""
    torch.manual_seed(seed)
    G = nn.Sequential(nn.Linear(LATENT, 6), nn.Tanh(), nn.Linear(6, DATA))
    D = nn.Sequential(nn.Linear(DATA, 6), nn.Tanh(), nn.Linear(6, 1))
    return G, D


def bce(logits: torch.Tensor, target: float) -> torch.Tensor:
    return F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, target))


def params_of(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def d_loss_of(G_params, D_params, G, D, real, z):
    fake = functional_call(G, G_params, (z,)).detach()
    return bce(functional_call(D, D_params, (real,)), 1.0) + bce(functional_call(D, D_params, (fake,)), 0.0)


def g_loss_of(G_params, D_params, G, D, z):
    return bce(functional_call(D, D_params, (functional_call(G, G_params, (z,)),)), 1.0)


def grads_of(loss_fn, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    grads = torch.autograd.grad(loss_fn(leaves), list(leaves.values()))
    return dict(zip(leaves, grads))


class Watched:
    """``gan_step`` calls on the test's networks with SGD, recording what each optimizer's step
    saw: the gradients, and both networks' parameters before and after it."""

    def __init__(self, seed: int = 0, calls: int = 2) -> None:
        self.G, self.D = small_networks(seed)
        self.opt_g = torch.optim.SGD(self.G.parameters(), lr=0.1)
        self.opt_d = torch.optim.SGD(self.D.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(seed)
        self.batches = [(torch.randn(BATCH, DATA, generator=g) + 2.0, torch.randn(BATCH, LATENT, generator=g))
                        for _ in range(calls)]
        self.events: list[dict] = []  # per optimizer step, in call order
        for opt, name, net in ((self.opt_d, "D", self.D), (self.opt_g, "G", self.G)):
            opt.register_step_pre_hook(lambda o, a, k, name=name, net=net: self.events.append(
                {"opt": name, "grads": {n: None if p.grad is None else p.grad.detach().clone()
                                        for n, p in net.named_parameters()},
                 "G": params_of(self.G), "D": params_of(self.D)}))
            opt.register_step_post_hook(lambda o, a, k: self.events[-1].update(
                G_after=params_of(self.G), D_after=params_of(self.D)))

    def run(self, impl) -> list[dict]:
        """Calls ``gan_step`` once per batch; returns, per call, its result and snapshots."""
        calls = []
        for real, z in self.batches:
            start = len(self.events)
            G0, D0 = params_of(self.G), params_of(self.D)
            result = impl.gan_step(self.G, self.D, self.opt_g, self.opt_d, real, z)
            steps = self.events[start:]
            assert [e["opt"] for e in steps] == ["D", "G"], (
                f"gan_step should call opt_d.step() once, then opt_g.step() once; the optimizer steps were "
                f"{[('opt_' + e['opt'].lower()) for e in steps]}")
            calls.append({"real": real, "z": z, "G0": G0, "D0": D0, "result": result,
                          "d_step": steps[0], "g_step": steps[1]})
        return calls


def assert_grads(seen: dict, want: dict, what: str) -> None:
    for name, grad in want.items():
        assert seen[name] is not None, f"{what}: parameter {name} had no gradient at the step"
        err = float((seen[name] - grad).abs().max())
        assert err < 1e-5, f"{what}: the gradient of {name} differs from the expected one by up to {err:.3g}"


@pytest.mark.points(3)
def test_d_step_sees_the_gradient_of_d_loss_alone(impl):
    watched = Watched(seed=1)
    for number, call in enumerate(watched.run(impl)):
        want = grads_of(lambda p: d_loss_of(call["G0"], p, watched.G, watched.D, call["real"], call["z"]),
                        call["D0"])
        assert_grads(call["d_step"]["grads"], want,
                     f"call {number}, opt_d.step(): D's gradients must be those of "
                     "BCE(D(real), 1) + BCE(D(G(z)), 0) alone (zero D's gradients before the backward; the "
                     "generator step of the previous call leaves gradients in D)")


@pytest.mark.points(3)
def test_d_loss_sends_no_gradient_into_g(impl):
    G, D = small_networks(2)
    opt_g, opt_d = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
    reached_g = []
    in_d_step = [True]
    handles = [p.register_hook(lambda grad: reached_g.append(in_d_step[0])) for p in G.parameters()]
    handles.append(opt_d.register_step_post_hook(lambda *_: in_d_step.__setitem__(0, False)))
    try:
        impl.gan_step(G, D, opt_g, opt_d, torch.randn(BATCH, DATA) + 2.0, torch.randn(BATCH, LATENT))
    finally:
        for handle in handles:
            handle.remove()
    assert not any(reached_g), (
        "the discriminator's loss sent gradients into the generator's parameters: detach the fake batch "
        "(G(z).detach()) for the discriminator step")
    assert reached_g, "the generator's loss sent no gradient into the generator"


@pytest.mark.points(2)
def test_d_step_leaves_g_unchanged(impl):
    watched = Watched(seed=3, calls=1)
    call = watched.run(impl)[0]
    for name, value in call["d_step"]["G_after"].items():
        assert torch.equal(value, call["G0"][name]), (
            f"G's parameter {name} changed during the discriminator step (before opt_g.step())")


@pytest.mark.points(3)
def test_g_step_sees_the_non_saturating_loss_through_the_updated_d(impl):
    watched = Watched(seed=4)
    for number, call in enumerate(watched.run(impl)):
        D1 = call["d_step"]["D_after"]
        want = grads_of(lambda p: g_loss_of(p, D1, watched.G, watched.D, call["z"]), call["G0"])
        assert_grads(call["g_step"]["grads"], want,
                     f"call {number}, opt_g.step(): G's gradients must be those of the non-saturating "
                     "BCE(D(G(z)), 1) = -log D(G(z)) alone, through D as the discriminator step left it")


@pytest.mark.points(2)
def test_g_step_leaves_d_as_the_d_step_made_it(impl):
    watched = Watched(seed=5, calls=1)
    call = watched.run(impl)[0]
    after = params_of(watched.D)
    for name, value in call["d_step"]["D_after"].items():
        assert torch.equal(after[name], value), (
            f"D's parameter {name} changed after the discriminator step: the generator step must update G only")


@pytest.mark.points(2)
def test_returns_both_losses_as_floats_before_their_steps(impl):
    watched = Watched(seed=6)
    for number, call in enumerate(watched.run(impl)):
        result = call["result"]
        assert isinstance(result, tuple) and len(result) == 2 and all(type(v) is float for v in result), (
            f"gan_step should return a tuple of two Python floats (d_loss, g_loss), got {result!r:.200}")
        with torch.no_grad():
            d_want = d_loss_of(call["G0"], call["D0"], watched.G, watched.D, call["real"], call["z"]).item()
            g_want = g_loss_of(call["G0"], call["d_step"]["D_after"], watched.G, watched.D, call["z"]).item()
        for label, got, want in (("d_loss", result[0], d_want), ("g_loss", result[1], g_want)):
            assert math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6), (
                f"call {number}: returned {label} {got:.6g}, expected {want:.6g} (computed before its step)")


def manual_forward(module: nn.Module, x: torch.Tensor, shapes: list[tuple[int, int]]) -> torch.Tensor:
    """Linear, LeakyReLU(0.2), Linear, LeakyReLU(0.2), Linear, with the module's own Linear layers
    picked by their (in, out) shapes (all different here), whatever order they were registered in."""
    by_shape = {(m.in_features, m.out_features): m for m in module.modules() if isinstance(m, nn.Linear)}
    first, middle, last = (by_shape[shape] for shape in shapes)
    h = F.leaky_relu(first(x), 0.2)
    h = F.leaky_relu(middle(h), 0.2)
    return last(h)


def linear_shapes(module: nn.Module) -> list[tuple[int, int]]:
    return sorted((m.in_features, m.out_features) for m in module.modules() if isinstance(m, nn.Linear))


@pytest.mark.points(3)
@pytest.mark.parametrize("net", ["Generator", "Discriminator"])
def test_layers_as_specified(impl, net):
    torch.manual_seed(7)
    if net == "Generator":
        module, x, shapes = impl.Generator(5, 3, hidden=7), torch.randn(64, 5) * 3, [(5, 7), (7, 7), (7, 3)]
    else:
        module, x, shapes = impl.Discriminator(3, hidden=7), torch.randn(64, 3) * 3, [(3, 7), (7, 7), (7, 1)]
    assert linear_shapes(module) == sorted(shapes), (
        f"{net}: nn.Linear layers (in, out) {linear_shapes(module)}, expected {shapes}")
    with torch.no_grad():
        for linear in (m for m in module.modules() if isinstance(m, nn.Linear)):
            linear.bias.add_(4.0)  # outputs well outside [-1, 1] and (0, 1)
        assert_close(module(x), manual_forward(module, x, shapes),
                     name=f"{net} output (Linear, LeakyReLU(0.2), Linear, LeakyReLU(0.2), Linear; nothing after)")


@pytest.mark.points(1)
def test_hidden_defaults_to_32(impl):
    for net, module, shapes in (("Generator(2, 3)", impl.Generator(2, 3), [(2, 32), (32, 32), (32, 3)]),
                                ("Discriminator(3)", impl.Discriminator(3), [(3, 32), (32, 32), (32, 1)])):
        assert linear_shapes(module) == sorted(shapes), (
            f"{net}: nn.Linear layers (in, out) {linear_shapes(module)}, expected {shapes} (hidden=32 by default)")


@pytest.mark.points(2)
@pytest.mark.parametrize("device", device_params(meta=True))
@given(batch=st.integers(1, 9), latent=st.integers(1, 6), data=st.integers(1, 6), hidden=st.integers(1, 9))
def test_shapes_and_device(impl, device, batch, latent, data, hidden):
    G = impl.Generator(latent, data, hidden=hidden).to(device)
    D = impl.Discriminator(data, hidden=hidden).to(device)
    z = torch.randn(batch, latent, device=device)
    fake = G(z)
    logits = D(fake)
    label = f"latent_dim={latent}, data_dim={data}, hidden={hidden}, batch {batch} on {device}"
    assert tuple(fake.shape) == (batch, data), f"{label}: G(z) has shape {tuple(fake.shape)}"
    assert tuple(logits.shape) == (batch, 1), f"{label}: D(x) has shape {tuple(logits.shape)}"
    assert fake.device.type == logits.device.type == device, f"{label}: outputs left the device"


@pytest.mark.points(1)
@pytest.mark.parametrize("make, argument", [
    (lambda impl: impl.Generator(0, 2), "latent_dim"),
    (lambda impl: impl.Generator(2, 0), "data_dim"),
    (lambda impl: impl.Generator(2, 2, hidden=0), "hidden"),
    (lambda impl: impl.Discriminator(0), "data_dim"),
    (lambda impl: impl.Discriminator(2, hidden=0), "hidden"),
], ids=["G-latent_dim", "G-data_dim", "G-hidden", "D-data_dim", "D-hidden"])
def test_sizes_below_one_raise_value_error(impl, make, argument):
    assert_raises_naming(ValueError, argument, make, impl)


@pytest.mark.points(1)
def test_sizes_of_one_are_accepted(impl):
    G, D = impl.Generator(1, 1, hidden=1), impl.Discriminator(1, hidden=1)
    assert tuple(D(G(torch.randn(4, 1))).shape) == (4, 1)


LEARN_SEED = 0
LEARN_STEPS = 200
DATA_MEAN, DATA_STD, MEAN_TOL = 3.0, 0.5, 0.5


def learned_mean(impl, seed: int, device: str = "cpu") -> float:
    """The mean of G's samples after training on N(3, 0.5^2) as the contract describes."""
    torch.manual_seed(seed)
    G, D = impl.Generator(4, 1, hidden=16).to(device), impl.Discriminator(1, hidden=16).to(device)
    opt_g = torch.optim.Adam(G.parameters(), lr=5e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=5e-3, betas=(0.5, 0.999))
    g = torch.Generator().manual_seed(seed)
    for _ in range(LEARN_STEPS):
        real = DATA_MEAN + DATA_STD * torch.randn(64, 1, generator=g)
        impl.gan_step(G, D, opt_g, opt_d, real.to(device), torch.randn(64, 4, generator=g).to(device))
    with torch.no_grad():
        return float(G(torch.randn(4000, 4, generator=g).to(device)).mean())


@pytest.mark.points(4)
@pytest.mark.parametrize("device", device_params())
def test_learns_the_mean_of_a_gaussian(impl, device):
    mean = learned_mean(impl, LEARN_SEED, device)
    assert abs(mean - DATA_MEAN) < MEAN_TOL, (
        f"after {LEARN_STEPS} steps on N(3, 0.5^2) the generator's samples have mean {mean:.3f}; a correct GAN "
        f"step brings it within {MEAN_TOL} of {DATA_MEAN}")

