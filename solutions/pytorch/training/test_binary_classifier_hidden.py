"""Hidden tests for pytorch.training.binary_classifier (the catalog's contract checks).

The references are independent of the submission's loop: gradient descent written out by hand
(the gradient of the mean BCE-with-logits of a linear model is ``mean((sigmoid(z) - y) * x)``),
started from the submission's own initial weights (``epochs=0``, same seed), and, where the order
is random, every possible order at once: a correct epoch must equal SGD over *some* permutation.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from grader.checks import assert_close, assert_raises_naming, device_params

# The convergence check's data and settings; bench/seed_sweep.py proves the 0.95 bar over seeds.
ACCURACY_SEED = 1234
ACCURACY_BAR = 0.95
ACCURACY_FIT = dict(epochs=20, lr=0.5, batch_size=16)


def separable_data(seed: int, n: int = 200, d: int = 2, margin: float = 0.2,
                   dtype: torch.dtype = torch.float32):
    """Points on both sides of a random hyperplane, none closer to it than ``margin``."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    w /= w.norm()
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    side = X @ w
    X += (margin * torch.sign(side))[:, None] * w  # push every point at least `margin` away
    return X.to(dtype), (side > 0).to(torch.int64)


def small_data(n: int, d: int, seed: int, dtype: torch.dtype = torch.float64):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=gen, dtype=dtype)
    y = (torch.arange(n) % 2).to(torch.float32)[torch.randperm(n, generator=gen)]
    return X, y


def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float(((model(X).squeeze(1) > 0).long() == y.long()).double().mean())


def train_accuracy(impl, seed: int = ACCURACY_SEED) -> float:
    """Accuracy on ``separable_data(seed)`` of a model fitted on it with ``seed``."""
    X, y = separable_data(seed)
    return accuracy(impl.fit_binary_classifier(X, y, seed=seed, **ACCURACY_FIT), X, y)


def linear_params(model, label: str) -> tuple[torch.Tensor, torch.Tensor]:
    assert isinstance(model, nn.Linear), (
        f"{label}: fit_binary_classifier returned a {type(model).__name__}, expected a torch.nn.Linear "
        "(one layer giving logits: no Sigmoid in the model)")
    return model.weight.detach().clone(), model.bias.detach().clone()


def initial_params(impl, X, y, seed: int, label: str):
    return linear_params(impl.fit_binary_classifier(X, y, epochs=0, lr=0.1, batch_size=1, seed=seed),
                         f"{label}, epochs=0")


def sgd_over_orders(w0, b0, X, y, orders: torch.Tensor, batch_size: int, lr: float):
    """Plain SGD on the mean BCE-with-logits from (w0, b0), for each row of ``orders`` at once.

    ``orders`` is (P, epochs * N): the example order of every epoch, one candidate per row.
    Returns weights (P, D) and biases (P,).
    """
    p = orders.shape[0]
    w, b = w0.reshape(1, -1).repeat(p, 1), b0.reshape(1).repeat(p)
    n = X.shape[0]
    for epoch_order in orders.split(n, dim=1):
        for batch in epoch_order.split(batch_size, dim=1):
            xb, yb = X[batch], y[batch].to(X.dtype)  # (P, B, D), (P, B)
            err = torch.sigmoid((xb * w[:, None, :]).sum(-1) + b[:, None]) - yb
            w = w - lr * (err[..., None] * xb).mean(1)
            b = b - lr * err.mean(1)
    return w, b


def closest_order(w, b, got_w, got_b) -> tuple[int, float]:
    """Index of the candidate order whose result is nearest the submission's, and the distance."""
    dist = (w - got_w.reshape(1, -1)).abs().amax(1).maximum((b - got_b.reshape(1)).abs())
    i = int(dist.argmin())
    return i, float(dist[i])


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_returns_a_linear_layer_giving_logits(impl, dtype):
    X, y = small_data(9, 3, seed=1, dtype=dtype)
    model = impl.fit_binary_classifier(X, y, epochs=30, lr=1.0, batch_size=4, seed=0)
    w, b = linear_params(model, f"{dtype} X")
    assert (model.in_features, model.out_features) == (3, 1), (
        f"the model is Linear({model.in_features}, {model.out_features}), expected Linear(3, 1)")
    assert w.dtype == dtype and b.dtype == dtype, f"parameters are {w.dtype}, expected X's dtype {dtype}"
    assert not model.training, "the returned model is in training mode, expected evaluation mode (model.eval())"
    with torch.no_grad():
        out = model(X)
    assert tuple(out.shape) == (9, 1), f"model(X) has shape {tuple(out.shape)}, expected (9, 1)"
    assert_close(out, X @ w.T + b, name="model(X), which should be the logits X @ weight.T + bias")


@pytest.mark.points(3)
@pytest.mark.parametrize("epochs", [1, 3])
@pytest.mark.parametrize("batch_size", ["N", "N+3"])
def test_full_batch_epochs_are_gradient_descent_steps(impl, epochs, batch_size):
    n = 7
    X, y = small_data(n, 3, seed=2)
    label = f"N={n}, batch_size={batch_size}, {epochs} epoch(s)"
    w0, b0 = initial_params(impl, X, y, 5, label)
    size = n if batch_size == "N" else n + 3
    model = impl.fit_binary_classifier(X, y, epochs=epochs, lr=0.8, batch_size=size, seed=5)
    got_w, got_b = linear_params(model, label)
    want_w, want_b = sgd_over_orders(w0, b0, X, y, torch.arange(n).repeat(1, epochs), size, 0.8)
    assert_close(got_w, want_w[0].reshape(1, -1), name=f"{label}: weight after training (expected "
                 f"{epochs} gradient descent step(s) on the mean BCE-with-logits, gradients cleared each step)")
    assert_close(got_b, want_b, name=f"{label}: bias after training")


@pytest.mark.points(3)
@pytest.mark.parametrize("batch_size", [2, 3])
def test_one_epoch_is_sgd_over_some_order_with_no_batch_dropped(impl, batch_size):
    n = 5
    X, y = small_data(n, 2, seed=3)
    label = f"N={n}, batch_size={batch_size}, one epoch"
    w0, b0 = initial_params(impl, X, y, 7, label)
    got_w, got_b = linear_params(
        impl.fit_binary_classifier(X, y, epochs=1, lr=0.8, batch_size=batch_size, seed=7), label)
    orders = torch.tensor(list(itertools.permutations(range(n))))
    i, dist = closest_order(*sgd_over_orders(w0, b0, X, y, orders, batch_size, 0.8), got_w, got_b)
    assert dist < 1e-9, (
        f"{label}: the trained weights match no order of the examples: one epoch should be one SGD "
        f"step per consecutive batch of {batch_size} of a permutation of all {n} examples (the last "
        f"batch smaller, none dropped), each step on that batch's mean BCE-with-logits "
        f"(closest order {orders[i].tolist()} is off by {dist:.3g})")


FRESH_ORDER_SEEDS = (11, 12, 13, 14)


@pytest.mark.points(3)
def test_every_epoch_draws_a_fresh_order(impl):
    """Two epochs of SGD, one example per step, must match SGD over some pair of orders of the
    five examples; a correct solution fails only if every seed draws the same order twice,
    120**-4 = 5e-9."""
    n = 5
    X, y = small_data(n, 2, seed=4)
    orders = torch.tensor(list(itertools.permutations(range(n))))
    pairs = torch.cartesian_prod(torch.arange(len(orders)), torch.arange(len(orders)))
    repeated = []
    for seed in FRESH_ORDER_SEEDS:
        label = f"N={n}, batch_size=1, 2 epochs, seed={seed}"
        w0, b0 = initial_params(impl, X, y, seed, label)
        got_w, got_b = linear_params(
            impl.fit_binary_classifier(X, y, epochs=2, lr=0.8, batch_size=1, seed=seed), label)
        both = torch.cat([orders[pairs[:, 0]], orders[pairs[:, 1]]], dim=1)
        i, dist = closest_order(*sgd_over_orders(w0, b0, X, y, both, 1, 0.8), got_w, got_b)
        assert dist < 1e-9, (
            f"{label}: the trained weights match no two orders of the examples: each epoch should be "
            f"one SGD step per example, over a permutation of all {n} (off by {dist:.3g} at best)")
        first, second = pairs[i].tolist()
        repeated.append(orders[first].tolist() if first == second else None)
    if all(repeated):
        what = ("the examples in their given order" if all(r == list(range(n)) for r in repeated)
                else "the same order in both epochs")
        raise AssertionError(f"with seeds {FRESH_ORDER_SEEDS}, every run visited {what}: each epoch "
                             "should shuffle afresh")


@pytest.mark.points(2)
def test_same_seed_gives_identical_weights_whatever_the_global_rng(impl):
    X, y = small_data(12, 3, seed=5, dtype=torch.float32)
    args = dict(epochs=3, lr=0.3, batch_size=5, seed=42)
    torch.manual_seed(0)
    first = linear_params(impl.fit_binary_classifier(X, y, **args), "first call")
    torch.manual_seed(987)
    torch.rand(100)
    second = linear_params(impl.fit_binary_classifier(X, y, **args), "second call")
    for name, a, b in zip(("weight", "bias"), first, second):
        assert torch.equal(a, b), (
            f"two calls with the same arguments (seed=42) gave different {name}s after the global RNG "
            "was used in between: the initial weights and the shuffles must come from seed alone")


@pytest.mark.points(1)
def test_different_seeds_give_different_initial_weights(impl):
    X, y = small_data(6, 4, seed=6)
    a = initial_params(impl, X, y, 0, "seed 0")
    b = initial_params(impl, X, y, 1, "seed 1")
    assert not torch.equal(a[0], b[0]), "seeds 0 and 1 gave the same initial weight: the seed is not used"


@pytest.mark.points(3)
def test_reaches_high_accuracy_on_separable_data(impl):
    acc = train_accuracy(impl)
    assert acc > ACCURACY_BAR, (
        f"after {ACCURACY_FIT['epochs']} epochs (lr={ACCURACY_FIT['lr']}, batch_size="
        f"{ACCURACY_FIT['batch_size']}) on 200 linearly separable points, training accuracy is "
        f"{acc:.3f}, expected > {ACCURACY_BAR}")


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", ["bool", "int64", "int32", "float32", "float64"])
def test_labels_of_any_dtype(impl, kind):
    X, y = small_data(8, 2, seed=8)
    args = dict(epochs=2, lr=0.5, batch_size=3, seed=9)
    want = linear_params(impl.fit_binary_classifier(X, y.to(torch.float64), **args), "float64 y")
    got = linear_params(impl.fit_binary_classifier(X, y.to(getattr(torch, kind)), **args), f"{kind} y")
    assert not torch.equal(got[0], initial_params(impl, X, y, 9, f"{kind} y")[0]), (
        f"with {kind} labels, training left the initial weights unchanged")
    for name, g, w in zip(("weight", "bias"), got, want):
        assert_close(g, w, name=f"{name} trained with {kind} labels (vs the same labels as float64)")


@pytest.mark.parametrize("device", device_params())
def test_model_on_the_data_device(impl, device):
    X, y = small_data(8, 3, seed=9, dtype=torch.float32)
    model = impl.fit_binary_classifier(X.to(device), y.to(device), epochs=2, lr=0.5, batch_size=3, seed=1)
    w, b = linear_params(model, f"X on {device}")
    assert w.device.type == b.device.type == torch.device(device).type, (
        f"with X on {device}, the model's parameters are on {w.device}")


@pytest.mark.points(2)
@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_works_under_autocast(impl, low):
    """Full-batch epochs under autocast must be float32 gradient descent steps, as outside it."""
    n, epochs = 9, 4
    X, y = small_data(n, 3, seed=12, dtype=torch.float32)
    label = f"inside torch.autocast({low}), N={n}, batch_size=N, {epochs} epochs"
    with torch.autocast("cpu", dtype=low):
        w0, b0 = initial_params(impl, X, y, 3, label)
        got = linear_params(impl.fit_binary_classifier(X, y, epochs=epochs, lr=0.8, batch_size=n, seed=3), label)
    want_w, want_b = sgd_over_orders(w0.double(), b0.double(), X.double(), y, torch.arange(n).repeat(1, epochs),
                                     n, 0.8)
    for name, g, w in zip(("weight", "bias"), got, (want_w[0].reshape(1, -1), want_b)):
        assert g.dtype == torch.float32, f"{label}: the {name} became {g.dtype}, expected X's float32"
        assert_close(g.double(), w, rtol=1e-5, atol=1e-6,
                     name=f"{label}: {name} (expected {epochs} float32 gradient descent steps, as outside autocast)")


BAD_ARGUMENTS = {
    # argument named, error: {case: the bad value}, each breaking one rule with the rest valid
    ("X", ValueError): {
        "1-D": lambda X, y: X[:, 0], "3-D": lambda X, y: X[None], "no columns": lambda X, y: X[:, :0],
        "NaN": lambda X, y: X.index_put((torch.tensor([2]), torch.tensor([1])), torch.tensor(math.nan)),
        "inf": lambda X, y: X.index_put((torch.tensor([0]), torch.tensor([0])), torch.tensor(-math.inf))},
    ("X", TypeError): {"int64": lambda X, y: X.long(), "float16": lambda X, y: X.half(),
                       "bfloat16": lambda X, y: X.bfloat16()},
    ("y", ValueError): {"too short": lambda X, y: y[:5], "(N, 1)": lambda X, y: y[:, None],
                        "a 2": lambda X, y: y * 2, "a -1": lambda X, y: y - 1, "a 0.5": lambda X, y: y * 0.5},
    ("epochs", ValueError): {"-1": lambda X, y: -1},
    ("lr", ValueError): {"0": lambda X, y: 0.0, "-0.1": lambda X, y: -0.1, "nan": lambda X, y: math.nan,
                         "inf": lambda X, y: math.inf},
    ("batch_size", ValueError): {"0": lambda X, y: 0},
}


@pytest.mark.parametrize("name, error", list(BAD_ARGUMENTS), ids=lambda v: getattr(v, "__name__", v))
def test_bad_arguments_raise_naming_the_argument(impl, name, error):
    X, y = small_data(6, 2, seed=10, dtype=torch.float32)
    for case, make in BAD_ARGUMENTS[name, error].items():
        args = dict(X=X, y=y, epochs=1, lr=0.1, batch_size=2, seed=0)
        args[name] = make(X, y)
        try:
            assert_raises_naming(error, name, impl.fit_binary_classifier, args.pop("X"), args.pop("y"), **args)
        except AssertionError as exc:
            raise AssertionError(f"{name} {case}: {exc}") from None


def test_x_without_rows_raises_value_error(impl):
    assert_raises_naming(ValueError, "X", impl.fit_binary_classifier, torch.zeros(0, 2),
                         torch.zeros(0), epochs=1, lr=0.1, batch_size=2, seed=0)


def test_smallest_accepted_values(impl):
    """The included ends of the ranges: one example, one feature, batch_size=1, a tiny lr, epochs=0."""
    X, y = torch.tensor([[0.5]]), torch.tensor([1])
    for args in (dict(epochs=0, lr=0.1, batch_size=1), dict(epochs=2, lr=1e-12, batch_size=1)):
        model = impl.fit_binary_classifier(X, y, seed=0, **args)
        linear_params(model, f"N=1, D=1, {args}")
