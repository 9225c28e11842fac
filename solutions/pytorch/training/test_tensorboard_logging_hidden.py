"""Hidden tests for pytorch.training.tensorboard_logging (the catalog's contract checks).

Every check reads the event files back with TensorBoard's own reader (``EventAccumulator``, through
``grader.checks.read_tensorboard``). The expected values come from the run itself, watched from
outside: the test's ``loss_fn`` records each loss it returns, and an optimizer hook snapshots the
parameters after each epoch's last step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from grader.checks import GradientSpy, assert_raises_naming, device_params, read_tensorboard, summary_writer

# float32 is what an event stores: compare at its precision.
REL = 1e-6


def logged(impl, tmp_path, metrics, step=0):
    writer = summary_writer(tmp_path)
    try:
        impl.log_metrics(writer, metrics, step)
    finally:
        writer.close()
    return read_tensorboard(tmp_path)


def same_float(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=REL, abs_tol=1e-30)


VALUE_KINDS = {
    "int": lambda: (7, 7.0),
    "float": lambda: (0.1, 0.1),
    "numpy-float32": lambda: (np.float32(2.5), 2.5),
    "numpy-int64": lambda: (np.int64(-3), -3.0),
    "tensor-0d-float32": lambda: (torch.tensor(1.25), 1.25),
    "tensor-1-element": lambda: (torch.tensor([0.75]), 0.75),
    "tensor-float64": lambda: (torch.tensor(1 / 3, dtype=torch.float64), 1 / 3),
    "tensor-bfloat16": lambda: (torch.tensor(1.5, dtype=torch.bfloat16), 1.5),
    "tensor-int64": lambda: (torch.tensor(9), 9.0),
    "tensor-with-graph": lambda: ((torch.tensor(2.0, requires_grad=True) * 3), 6.0),
}


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", sorted(VALUE_KINDS))
def test_each_value_kind_is_logged_as_a_float(impl, tmp_path, kind):
    value, want = VALUE_KINDS[kind]()
    events = logged(impl, tmp_path, {"metric": value}, step=3)
    got = events.scalars.get("metric")
    assert got is not None and len(got) == 1, f"{kind}: expected one scalar event tagged 'metric', read {got}"
    step, read = got[0]
    assert step == 3 and same_float(read, want), f"{kind}: read (step, value) {got[0]}, expected (3, {want})"


@pytest.mark.points(1)
@pytest.mark.parametrize("device", device_params())
def test_a_tensor_on_the_device_is_logged(impl, tmp_path, device):
    events = logged(impl, tmp_path, {"loss": torch.tensor(0.5, device=device)})
    assert events.scalars.get("loss") == [(0, 0.5)], f"read {events.scalars.get('loss')}, expected [(0, 0.5)]"


@pytest.mark.points(2)
def test_every_tag_at_its_step(impl, tmp_path):
    writer = summary_writer(tmp_path)
    try:
        impl.log_metrics(writer, {"train/loss": 1.5, "train/acc": 0.25, "lr": 0.001}, 0)
        impl.log_metrics(writer, {"train/loss": 1.25, "train/acc": 0.5}, 7)
    finally:
        writer.close()
    events = read_tensorboard(tmp_path)
    want = {"train/loss": [(0, 1.5), (7, 1.25)], "train/acc": [(0, 0.25), (7, 0.5)], "lr": [(0, 0.001)]}
    assert set(events.scalars) == set(want), f"scalar tags read back: {sorted(events.scalars)}, expected {sorted(want)}"
    for tag, pairs in want.items():
        got = events.scalars[tag]
        assert [s for s, _ in got] == [s for s, _ in pairs] and all(
            same_float(g, w) for (_, g), (_, w) in zip(got, pairs)), f"{tag}: read {got}, expected {pairs}"


@pytest.mark.points(1)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_values_are_logged_as_they_are(impl, tmp_path, value):
    events = logged(impl, tmp_path, {"loss": value, "ok": 1.0}, step=2)
    got = events.scalars.get("loss")
    assert got is not None and len(got) == 1 and got[0][0] == 2 and same_float(got[0][1], value), (
        f"a {value} loss should be logged as it is (it shows a diverging run); read {got}")


@pytest.mark.points(1)
def test_step_zero_accepted_and_negative_rejected(impl, tmp_path):
    events = logged(impl, tmp_path / "zero", {"m": 1.0}, step=0)
    assert events.scalars.get("m") == [(0, 1.0)], f"step 0: read {events.scalars.get('m')}"
    writer = summary_writer(tmp_path / "negative")
    try:
        assert_raises_naming(ValueError, "step", impl.log_metrics, writer, {"m": 1.0}, -1)
    finally:
        writer.close()


@pytest.mark.points(2)
@pytest.mark.parametrize("bad, argument", [({"fine": 1.0, "weights": torch.ones(3)}, "weights"),
                                           ({"fine": 1.0, "": 2.0}, "tag")], ids=["3-element-tensor", "empty-tag"])
def test_bad_entry_raises_value_error_and_writes_nothing(impl, tmp_path, bad, argument):
    writer = summary_writer(tmp_path)
    try:
        assert_raises_naming(ValueError, argument, impl.log_metrics, writer, bad, 1)
    finally:
        writer.close()
    events = read_tensorboard(tmp_path)
    assert not events.scalars, f"a bad entry must stop log_metrics before it writes anything; read {events.scalars}"


class RecordingLoss:
    """MSE that remembers every value it returned (the steps' losses), and can fail at a step."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.values: list[float] = []
        self.fail_at = fail_at

    def __call__(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if not out.requires_grad:  # the targets never do: they come from the batches
            raise AssertionError("loss_fn must be called as loss_fn(model(x), y), the model's output first")
        if self.fail_at is not None and len(self.values) == self.fail_at:
            raise RuntimeError("injected failure in the loss")
        loss = nn.functional.mse_loss(out, y)
        self.values.append(loss.item())
        return loss


def make_batches(kind: str, n_batches: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4 * n_batches, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(4 * n_batches, 1, generator=g)
    pairs = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 4 * n_batches, 4)]
    if kind == "list":
        return pairs
    if kind == "tuple":
        return tuple(pairs)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4, shuffle=False)


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def watched_run(impl, tmp_path, *, kind="list", epochs=2, n_batches=3):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    snapshots = []
    optimizer.register_step_post_hook(lambda *_: snapshots.append(
        {name: p.detach().clone() for name, p in model.named_parameters()}))
    loss_fn = RecordingLoss()
    history = impl.train_with_logging(model, optimizer, loss_fn, make_batches(kind, n_batches), epochs=epochs,
                                      log_dir=tmp_path)
    return model, loss_fn.values, snapshots, history, read_tensorboard(tmp_path)


@pytest.mark.points(3)
@pytest.mark.parametrize("kind", ["list", "tuple", "DataLoader"])
def test_train_loss_at_every_step(impl, tmp_path, kind):
    _, losses, snapshots, _, events = watched_run(impl, tmp_path, kind=kind)
    assert len(snapshots) == 6 and len(losses) == 6, (
        f"3 batches ({kind}) for 2 epochs make 6 steps; saw {len(snapshots)} optimizer steps and "
        f"{len(losses)} calls of loss_fn")
    got = events.scalars.get("train/loss")
    assert got is not None, f"no 'train/loss' scalars; tags read back: {sorted(events.scalars)}"
    assert [s for s, _ in got] == list(range(6)), f"'train/loss' steps {[s for s, _ in got]}, expected 0..5"
    for (step, value), want in zip(got, losses):
        assert same_float(value, want), f"'train/loss' at step {step} is {value}, but that step's loss was {want}"


@pytest.mark.points(2)
def test_epoch_loss_is_the_mean_of_its_steps(impl, tmp_path):
    _, losses, _, history, events = watched_run(impl, tmp_path, epochs=3, n_batches=2)
    want = [sum(losses[i:i + 2]) / 2 for i in range(0, 6, 2)]
    got = events.scalars.get("epoch/loss")
    assert got is not None and [s for s, _ in got] == [0, 1, 2], f"'epoch/loss' events {got}, expected steps 0, 1, 2"
    for (epoch, value), mean in zip(got, want):
        assert same_float(value, mean), f"'epoch/loss' at epoch {epoch} is {value}, the mean of its steps is {mean}"
    assert isinstance(history, list) and len(history) == 3 and all(type(v) is float for v in history), (
        f"train_with_logging should return 3 Python floats, got {history!r:.200}")
    assert all(math.isclose(h, m, rel_tol=1e-6) for h, m in zip(history, want)), (
        f"returned {history}, but the epochs' mean losses were {want}")


@pytest.mark.points(3)
def test_weight_histograms_after_each_epoch(impl, tmp_path):
    model, _, snapshots, _, events = watched_run(impl, tmp_path, epochs=2, n_batches=3)
    names = [name for name, _ in model.named_parameters()]
    tags = {f"weights/{name}" for name in names}
    assert tags <= set(events.histograms), (
        f"histogram tags read back: {sorted(events.histograms)}, expected {sorted(tags)}")
    for name in names:
        got = events.histograms[f"weights/{name}"]
        assert [s for s, _ in got] == [0, 1], f"weights/{name}: histogram steps {[s for s, _ in got]}, expected [0, 1]"
        for epoch, hist in got:
            p = snapshots[3 * epoch + 2][name].double()
            want = {"num": p.numel(), "min": float(p.min()), "max": float(p.max()), "sum": float(p.sum())}
            read = {"num": hist.num, "min": hist.min, "max": hist.max, "sum": hist.sum}
            assert read["num"] == want["num"] and all(
                math.isclose(read[k], want[k], rel_tol=1e-5, abs_tol=1e-6) for k in ("min", "max", "sum")), (
                f"weights/{name} at epoch {epoch}: histogram {read}, but the parameter after that epoch's last "
                f"step has {want}")


@pytest.mark.points(2)
def test_writer_closed_when_training_raises(impl, tmp_path):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match="injected failure"):
        impl.train_with_logging(model, optimizer, RecordingLoss(fail_at=4), make_batches("list"), epochs=2,
                                log_dir=tmp_path)
    got = read_tensorboard(tmp_path).scalars.get("train/loss")
    assert got is not None and [s for s, _ in got] == [0, 1, 2, 3], (
        f"after a failure at step 4 the file should hold 'train/loss' for steps 0..3 (close the writer in a "
        f"finally), read {got}")


@pytest.mark.points(1)
def test_each_step_sees_its_own_gradient_alone(impl, tmp_path):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with GradientSpy(optimizer) as spy:
        impl.train_with_logging(model, optimizer, RecordingLoss(), make_batches("list"), epochs=2, log_dir=tmp_path)
    assert spy.steps == 6 and not spy.stale_steps, (
        f"6 steps expected, each on its own batch's gradients; saw {spy.steps} steps, steps "
        f"{spy.stale_steps} on gradients left over from earlier steps (zero the gradients every step)")


@pytest.mark.points(1)
def test_every_step_is_a_gradient_step_on_its_batch(impl, tmp_path):
    # Independent: the contract's step (zero, loss, backward, step) spelled out on a twin model.
    model = make_model()
    impl.train_with_logging(model, torch.optim.SGD(model.parameters(), lr=0.1), RecordingLoss(),
                            make_batches("list"), epochs=2, log_dir=tmp_path)
    twin = make_model()
    optimizer = torch.optim.SGD(twin.parameters(), lr=0.1)
    for _ in range(2):
        for x, y in make_batches("list"):
            optimizer.zero_grad()
            nn.functional.mse_loss(twin(x), y).backward()
            optimizer.step()
    for (name, got), want in zip(model.named_parameters(), twin.parameters()):
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (
            f"after 2 epochs of 3 batches with SGD(lr=0.1), parameter {name} is {got.detach()}, but 6 "
            f"steps of zero_grad, loss, backward, optimizer.step() give {want.detach()}")


@pytest.mark.points(1)
def test_steps_run_in_training_mode(impl, tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1)).eval()
    modes = []
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    impl.train_with_logging(model, torch.optim.SGD(model.parameters(), lr=0.1), RecordingLoss(),
                            make_batches("list"), epochs=1, log_dir=tmp_path)
    assert modes and all(modes), f"forward passes ran with training={modes}: call model.train() before the steps"


@pytest.mark.points(1)
@pytest.mark.parametrize("epochs, batches, argument", [(0, "list", "epochs"), (1, "empty", "batches")])
def test_zero_epochs_or_no_batches_raise_value_error(impl, tmp_path, epochs, batches, argument):
    model = make_model()
    assert_raises_naming(ValueError, argument, impl.train_with_logging, model,
                         torch.optim.SGD(model.parameters(), lr=0.1), RecordingLoss(),
                         [] if batches == "empty" else make_batches(batches), epochs=epochs, log_dir=tmp_path)


@pytest.mark.points(1)
def test_one_epoch_is_accepted(impl, tmp_path):
    _, losses, _, history, events = watched_run(impl, tmp_path, epochs=1, n_batches=1)
    assert len(history) == 1 and [s for s, _ in events.scalars.get("epoch/loss", [])] == [0], (
        f"epochs=1: returned {history}, 'epoch/loss' events {events.scalars.get('epoch/loss')}")
