"""Hidden tests for pytorch.training.debug_not_learning (the catalog's contract checks).

Each planted bug has a test that watches the loop from outside and sees that bug alone: the
gradient arriving at the model's output (logits to the loss), a ``GradientSpy`` on the optimizer
(gradients zeroed each step), the mode of every training forward pass, the labels' dtype. The
reference for values is torch itself: the returned losses are recomputed from snapshots of the
model taken after each epoch's last step.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from grader.checks import GradientSpy, assert_raises_naming, device_params

N_ROWS, N_FEATURES, N_CLASSES, BATCH = 60, 4, 3, 16  # batches of 16, 16, 16 and 12 rows
STEPS_PER_EPOCH = math.ceil(N_ROWS / BATCH)


def blobs(seed: int, n: int = N_ROWS, spread: float = 0.6) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` distinct rows in ``N_CLASSES`` Gaussian blobs around well-separated centres."""
    g = torch.Generator().manual_seed(seed)
    centres = 3.0 * torch.eye(N_CLASSES, N_FEATURES)
    y = torch.arange(n) % N_CLASSES
    X = centres[y] + spread * torch.randn(n, N_FEATURES, generator=g)
    return X, y


def make_model(seed: int, *, dropout: float = 0.25, batchnorm: bool = True) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(N_FEATURES, 16), *([nn.BatchNorm1d(16)] if batchnorm else []), nn.ReLU(),
              *([nn.Dropout(dropout)] if dropout else []), nn.Linear(16, N_CLASSES)]
    return nn.Sequential(*layers)


def row_indices(batch: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Which rows of ``X`` (all distinct) make up ``batch``."""
    index = torch.cdist(batch.detach().double(), X.double()).argmin(dim=1)
    assert torch.equal(X[index], batch.detach()), "the model was called on rows that are not rows of X"
    return index


class ForwardLog:
    """Every forward pass of ``model``: its rows, its mode, whether it built a graph, and the
    gradient that reached its output."""

    def __init__(self, model: nn.Module, X: torch.Tensor) -> None:
        self.model, self.X, self.calls = model, X, []
        self.handle = model.register_forward_hook(self.record)

    def record(self, module, args, output) -> None:
        call = {"rows": row_indices(args[0], self.X),
                "training": all(m.training for m in module.modules()),
                "graph": output.requires_grad, "logits": output.detach().clone(), "grad": None}
        if output.requires_grad:
            output.register_hook(lambda grad: call.__setitem__("grad", grad.detach().clone()))
        self.calls.append(call)

    def training_calls(self) -> list[dict]:
        """The forward passes whose output a backward pass went through."""
        return [c for c in self.calls if c["grad"] is not None]

    def close(self) -> None:
        self.handle.remove()


def train_logged(impl, *, epochs: int = 3, seed: int = 0, dropout: float = 0.25, y_dtype=torch.int64):
    X, y = blobs(seed)
    model = make_model(seed, dropout=dropout)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    log = ForwardLog(model, X)
    try:
        with GradientSpy(optimizer) as spy:
            history = impl.fixed_train(model, optimizer, X, y.to(y_dtype), epochs=epochs, batch_size=BATCH,
                                       seed=seed)
    finally:
        log.close()
    return X, y, log, spy, history


def assert_steps_made(spy: GradientSpy, epochs: int) -> None:
    expected = epochs * STEPS_PER_EPOCH
    assert spy.steps == expected, (
        f"{N_ROWS} rows in batches of {BATCH} for {epochs} epochs make {expected} optimizer steps; "
        f"optimizer.step() was called {spy.steps} times")


@pytest.mark.points(3)
def test_loss_gets_the_logits(impl):
    X, y, log, spy, _ = train_logged(impl)
    assert_steps_made(spy, 3)
    calls = log.training_calls()
    assert len(calls) == spy.steps, (
        f"{spy.steps} steps, but the loss gradient reached the model's output in {len(calls)} forward passes")
    for number, call in enumerate(calls):
        logits, labels = call["logits"], y[call["rows"]]
        # d CrossEntropyLoss(logits, labels) / d logits, mean over the batch.
        want = (torch.softmax(logits, dim=1) - F.one_hot(labels, N_CLASSES)) / len(labels)
        err = float((call["grad"] - want).abs().max())
        assert err < 1e-6, (
            f"step {number}: the gradient at the model's output differs from that of "
            f"nn.CrossEntropyLoss() (mean) of the logits by up to {err:.3g}: the loss must get the raw "
            "outputs (no softmax before CrossEntropyLoss, which applies log_softmax itself)")


@pytest.mark.points(3)
def test_each_step_sees_only_its_own_batch_gradient(impl):
    _, _, _, spy, _ = train_logged(impl, dropout=0.0)
    assert_steps_made(spy, 3)
    assert not spy.stale_steps, (
        f"optimizer.step() number {spy.stale_steps[0]} saw gradients left over from earlier steps: "
        "zero the gradients every step (optimizer.zero_grad())")


@pytest.mark.points(3)
def test_steps_run_in_training_mode(impl):
    _, _, log, spy, _ = train_logged(impl, epochs=3)
    assert_steps_made(spy, 3)
    training = log.training_calls()
    assert len(training) >= spy.steps, f"{spy.steps} steps but only {len(training)} forward passes fed a backward"
    for number, call in enumerate(training):
        assert call["training"], (
            f"training forward pass {number} (epoch {number // STEPS_PER_EPOCH}) ran with the model in eval "
            "mode: after evaluating, switch back with model.train() before the next steps")


@pytest.mark.points(2)
@pytest.mark.parametrize("y_dtype", [torch.int32, torch.int16, torch.uint8, torch.float32, torch.float64],
                         ids=str)
def test_labels_of_any_dtype_are_class_indices(impl, y_dtype):
    X, y = blobs(1)
    runs = {}
    for dtype in (torch.int64, y_dtype):
        model = make_model(1, dropout=0.0)
        initial = [p.detach().clone() for p in model.parameters()]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        history = impl.fixed_train(model, optimizer, X, y.to(dtype), epochs=2, batch_size=BATCH, seed=1)
        runs[dtype] = (history, [p.detach().clone() for p in model.parameters()])
    (want_history, want_params), (history, params) = runs[torch.int64], runs[y_dtype]
    assert not all(torch.equal(a, b) for a, b in zip(initial, want_params)), (
        "fixed_train left the model's parameters unchanged (with int64 labels)")
    assert history == want_history and all(torch.equal(a, b) for a, b in zip(params, want_params)), (
        f"labels given as {y_dtype} (whole values) must train exactly as the same labels as int64 class "
        "indices: convert them with y.long()")


@pytest.mark.points(3)
def test_returns_the_eval_loss_after_each_epoch(impl):
    epochs = 3
    X, y = blobs(2)
    model = make_model(2, dropout=0.5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    snapshots = []
    handle = optimizer.register_step_post_hook(lambda *_: snapshots.append(copy.deepcopy(model.state_dict())))
    log = ForwardLog(model, X)
    try:
        history = impl.fixed_train(model, optimizer, X, y, epochs=epochs, batch_size=BATCH, seed=2)
    finally:
        handle.remove()
        log.close()
    assert isinstance(history, list) and len(history) == epochs, (
        f"fixed_train should return a list of {epochs} losses (one per epoch), got {history!r:.200}")
    assert all(type(v) is float for v in history), (
        f"the losses should be Python floats (loss.item()), got {[type(v).__name__ for v in history]}")
    assert len(snapshots) == epochs * STEPS_PER_EPOCH, (
        f"expected {epochs * STEPS_PER_EPOCH} optimizer steps, saw {len(snapshots)}")
    evaluations = [c for c in log.calls if not c["training"]]
    assert evaluations and not any(c["graph"] for c in evaluations), (
        "the evaluation after each epoch built an autograd graph: run it under torch.no_grad()")
    probe = make_model(2, dropout=0.5).eval()
    for epoch in range(epochs):
        probe.load_state_dict(snapshots[(epoch + 1) * STEPS_PER_EPOCH - 1])
        with torch.no_grad():
            want = F.cross_entropy(probe(X), y).item()
        assert math.isclose(history[epoch], want, rel_tol=1e-5, abs_tol=1e-6), (
            f"epoch {epoch}: returned loss {history[epoch]:.6g}, but the model after that epoch has a mean "
            f"cross-entropy of {want:.6g} on all of X in eval mode (dropout off)")


@pytest.mark.points(2)
def test_each_epoch_visits_every_row_once_in_batches(impl):
    epochs = 3
    _, _, log, spy, _ = train_logged(impl, epochs=epochs, seed=3)
    assert_steps_made(spy, epochs)
    batches = [c["rows"] for c in log.training_calls()]
    sizes = [len(b) for b in batches]
    want_sizes = [BATCH] * (N_ROWS // BATCH) + [N_ROWS % BATCH]
    orders = []
    for epoch in range(epochs):
        part = batches[epoch * STEPS_PER_EPOCH:(epoch + 1) * STEPS_PER_EPOCH]
        assert [len(b) for b in part] == want_sizes, (
            f"epoch {epoch}: batch sizes {[len(b) for b in part]}, expected {want_sizes} ({N_ROWS} rows, "
            f"batch_size={BATCH}); all batch sizes seen: {sizes}")
        order = torch.cat(part)
        assert sorted(order.tolist()) == list(range(N_ROWS)), (
            f"epoch {epoch} did not visit every row exactly once (rows seen twice or missed)")
        orders.append(order)
    assert not torch.equal(orders[0], orders[1]), "every epoch used the same order: shuffle afresh each epoch"


@pytest.mark.points(2)
def test_same_seed_gives_identical_weights_and_another_seed_another_order(impl):
    X, y = blobs(4)

    def final_weights(seed: int, global_seed: int) -> list[torch.Tensor]:
        model = make_model(4, dropout=0.0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        torch.manual_seed(global_seed)  # the order must not depend on the global RNG
        impl.fixed_train(model, optimizer, X, y, epochs=2, batch_size=BATCH, seed=seed)
        return [p.detach().clone() for p in model.parameters()]

    first, again, other = final_weights(7, 0), final_weights(7, 12345), final_weights(8, 0)
    assert all(torch.equal(a, b) for a, b in zip(first, again)), (
        "the same seed, model and data gave different weights after the global RNG changed: draw the "
        "order with a torch.Generator seeded with seed, not the global RNG")
    assert not all(torch.equal(a, b) for a, b in zip(first, other)), (
        "seed 7 and seed 8 gave identical weights: the batch order must come from seed")


def test_seed_defaults_to_0_as_in_buggy_train(impl):
    """The same signature as ``buggy_train``: ``seed`` left out is ``seed=0``."""
    X, y = blobs(4)

    def final_weights(**seed: int) -> list[torch.Tensor]:
        model = make_model(4, dropout=0.0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        impl.fixed_train(model, optimizer, X, y, epochs=2, batch_size=BATCH, **seed)
        return [p.detach().clone() for p in model.parameters()]

    default, seed_0 = final_weights(), final_weights(seed=0)
    # Anchored on training having happened: two runs that never step are equal without proving anything.
    initial = list(make_model(4, dropout=0.0).parameters())
    assert not all(torch.equal(a, b.detach()) for a, b in zip(seed_0, initial)), (
        "fixed_train(..., seed=0) left the weights as they were: each mini-batch makes one step")
    assert all(torch.equal(a, b) for a, b in zip(default, seed_0)), (
        "fixed_train without seed gave other weights than with seed=0: keep buggy_train's signature "
        "(seed: int = 0)")


@pytest.mark.points(1)
@pytest.mark.parametrize("argument, kwargs", [("epochs", {"epochs": 0}), ("batch_size", {"batch_size": 0}),
                                              ("y", {"n_labels": N_ROWS - 1})])
def test_bad_arguments_raise_value_error(impl, argument, kwargs):
    X, y = blobs(5)
    y = y[:kwargs.pop("n_labels", N_ROWS)]
    model = make_model(5)
    call = {"epochs": 1, "batch_size": BATCH, **kwargs}
    assert_raises_naming(ValueError, argument, impl.fixed_train, model,
                         torch.optim.SGD(model.parameters(), lr=0.05), X, y, **call)


@pytest.mark.points(1)
def test_smallest_epochs_and_batch_size_are_accepted(impl):
    X, y = blobs(6, n=10)
    model = make_model(6, batchnorm=False)  # BatchNorm cannot train on one row
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    with GradientSpy(optimizer) as spy:
        history = impl.fixed_train(model, optimizer, X, y, epochs=1, batch_size=1)
    assert len(history) == 1 and spy.steps == 10, (
        f"epochs=1, batch_size=1 on 10 rows: expected 1 loss and 10 steps, got {len(history)} and {spy.steps}")


def accuracy_after_training(impl, seed: int, device: str = "cpu") -> float:
    """Training accuracy of a fresh MLP after a short, well-tuned run on separable blobs."""
    X, y = blobs(seed, n=150, spread=0.8)
    model = make_model(seed, dropout=0.1).to(device)
    X, y = X.to(device), y.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    impl.fixed_train(model, optimizer, X, y, epochs=8, batch_size=16, seed=seed)
    model.eval()
    with torch.no_grad():
        return float((model(X).argmax(dim=1) == y).double().mean())


LEARN_SEED = 11
MIN_ACCURACY = 0.9


@pytest.mark.points(3)
@pytest.mark.parametrize("device", device_params())
def test_learns_a_separable_task(impl, device):
    accuracy = accuracy_after_training(impl, LEARN_SEED, device)
    assert accuracy > MIN_ACCURACY, (
        f"after 8 epochs of SGD (lr 0.1) on three well-separated classes the training accuracy is "
        f"{accuracy:.2f}; a correct loop reaches more than {MIN_ACCURACY}")
