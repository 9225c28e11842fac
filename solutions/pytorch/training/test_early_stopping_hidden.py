"""Hidden tests for pytorch.training.early_stopping (the catalog's contract checks).

The reference for when to stop is the contract read literally and computed another way: mark each
step improving or not with the strict ``min_delta`` rule, then stop at step ``i`` when the
``patience`` marks ending at ``i`` are all "not improving". Metric values are small integers and
halves, so ``best - min_delta`` is exact and ties and exact ``min_delta`` gaps really occur.
"""

from __future__ import annotations

import gc
import math
import weakref

import pytest
import torch
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_raises_naming, tensors_held_by

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
METRIC_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, math.nan, math.inf, -math.inf]


def improvements(metrics, mode: str, min_delta: float) -> list[bool]:
    best = math.inf if mode == "min" else -math.inf
    marks = []
    for m in metrics:
        better = m < best - min_delta if mode == "min" else m > best + min_delta
        marks.append(better)
        best = m if better else best
    return marks


def expected_stops(metrics, mode: str, min_delta: float, patience: int) -> list[bool]:
    marks = improvements(metrics, mode, min_delta)
    return [i + 1 >= patience and not any(marks[i + 1 - patience:i + 1]) for i in range(len(marks))]


def expected_best(metrics, mode: str, min_delta: float) -> list[float]:
    start = math.inf if mode == "min" else -math.inf
    marks = improvements(metrics, mode, min_delta)
    return [next((metrics[j] for j in range(i, -1, -1) if marks[j]), start) for i in range(len(metrics))]


def tagged_model() -> nn.Linear:
    return nn.Linear(1, 1, bias=False)


def tag(model: nn.Linear, value: float) -> None:
    with torch.no_grad():
        model.weight.fill_(value)


def tag_of(model: nn.Linear) -> float:
    return float(model.weight.detach())


def run(impl, metrics, *, patience, min_delta=0.0, mode="min", model=None, label=""):
    """Step through ``metrics`` (the model's weight tagged with the step index); return the flags."""
    stopper = impl.EarlyStopping(patience, min_delta=min_delta, mode=mode)
    model = model or tagged_model()
    flags = []
    for i, m in enumerate(metrics):
        tag(model, i)
        flag = stopper.step(m, model)
        assert type(flag) is bool, f"{label}: step returned {type(flag).__name__}, expected a bool"
        assert tag_of(model) == i, f"{label}: step {i} changed the model's weights"
        flags.append(flag)
    return stopper, model, flags


def describe(metrics, patience, min_delta, mode) -> str:
    return f"metrics {metrics}, patience={patience}, min_delta={min_delta}, mode={mode!r}"


def check_flags(impl, metrics, patience, min_delta=0.0, mode="min"):
    label = describe(metrics, patience, min_delta, mode)
    stopper, model, flags = run(impl, metrics, patience=patience, min_delta=min_delta, mode=mode, label=label)
    want = expected_stops(metrics, mode, min_delta, patience)
    assert flags == want, f"{label}: step returned {flags}, expected {want}"
    return stopper, model


@pytest.mark.points(4)
@settings(max_examples=150, phases=NO_SHRINK, deadline=None)
@given(metrics=st.lists(st.sampled_from(METRIC_VALUES), min_size=1, max_size=12),
       patience=st.integers(1, 4), min_delta=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
       mode=st.sampled_from(["min", "max"]))
def test_stops_at_the_right_step_and_restores_the_best(impl, metrics, patience, min_delta, mode):
    label = describe(metrics, patience, min_delta, mode)
    stopper, model = check_flags(impl, metrics, patience, min_delta, mode)
    bests = expected_best(metrics, mode, min_delta)
    assert type(stopper.best) is float and stopper.best == bests[-1], (
        f"{label}: best is {stopper.best!r}, expected {bests[-1]!r}")
    marks = improvements(metrics, mode, min_delta)
    if any(marks):
        best_step = max(i for i, m in enumerate(marks) if m)
        assert stopper.restore(model) is None, f"{label}: restore returned something, expected None"
        assert tag_of(model) == best_step, (
            f"{label}: restore gave the weights of step {tag_of(model):g}, expected those of the "
            f"best step {best_step}")


@pytest.mark.points(2)
@pytest.mark.parametrize("patience", [1, 3])
def test_patience_counts_this_step(impl, patience):
    check_flags(impl, [5.0, 4.0] + [4.0] * (patience + 1), patience)


@pytest.mark.points(2)
def test_an_improvement_starts_the_count_again(impl):
    check_flags(impl, [5.0, 6.0, 4.0, 6.0, 6.0, 3.0, 6.0, 6.0, 6.0], 3)


@pytest.mark.points(3)
@pytest.mark.parametrize("mode, metrics, min_delta", [
    ("min", [1.0, 0.75, 0.75], 0.25), ("min", [1.0, 0.7, 0.45], 0.25),
    ("max", [1.0, 1.25, 1.25], 0.25), ("max", [1.0, 1.3, 1.55], 0.25),
    ("min", [2.0, 2.0, 2.0], 0.0), ("max", [2.0, 2.0, 2.0], 0.0),
])
def test_min_delta_and_mode_strict_improvement(impl, mode, metrics, min_delta):
    """A gap of exactly min_delta (or a tie with min_delta=0) is not an improvement; more is."""
    stopper, _ = check_flags(impl, metrics, 2, min_delta, mode)
    want = expected_best(metrics, mode, min_delta)[-1]
    assert stopper.best == want, f"{describe(metrics, 2, min_delta, mode)}: best is {stopper.best}, expected {want}"


@pytest.mark.points(2)
@pytest.mark.parametrize("mode", ["min", "max"])
def test_best_starts_at_infinity(impl, mode):
    stopper = impl.EarlyStopping(2, mode=mode)
    want = math.inf if mode == "min" else -math.inf
    assert stopper.best == want, f"mode={mode!r}: best is {stopper.best!r} before any step, expected {want}"
    check_flags(impl, [math.inf if mode == "min" else -math.inf, 1.0], 1, 0.0, mode)


@pytest.mark.points(2)
def test_nan_never_improves_not_even_first(impl):
    stopper, model = check_flags(impl, [math.nan, 3.0, math.nan, math.nan], 2)
    assert stopper.best == 3.0, f"metrics [nan, 3.0, nan, nan]: best is {stopper.best}, expected 3.0"
    stopper.restore(model)
    assert tag_of(model) == 1, "after [nan, 3.0, nan, nan], restore should give the weights of step 1"


class BatchNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 4)
        self.norm = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.linear(x))))


def train_epoch(model, optimizer, data):
    model.train()
    x, y = data
    for i in range(0, len(x), 4):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[i:i + 4]), y[i:i + 4]).backward()
        optimizer.step()


def state_of(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_state_equal(model, want: dict[str, torch.Tensor], label: str):
    for name, value in model.state_dict().items():
        assert torch.equal(value, want[name]), (
            f"{label}: {name} differs from the best epoch's by up to "
            f"{float((value.double() - want[name].double()).abs().max()):.3g} (parameters and buffers "
            "must all come back, from a copy taken at that step)")


@pytest.mark.points(4)
@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
def test_restores_the_whole_best_state_from_a_copy(impl, optimizer_name):
    torch.manual_seed(0)
    model = BatchNormNet()
    optimizer = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer_name == "SGD"
                 else torch.optim.Adam(model.parameters(), lr=0.05))
    data = (torch.randn(16, 3), torch.randn(16, 1))
    stopper = impl.EarlyStopping(3)
    val_losses = [0.9, 0.7, 0.4, 0.5, 0.6, 0.8]  # best at epoch 2, stop at epoch 5
    best = None
    for epoch, loss in enumerate(val_losses):
        train_epoch(model, optimizer, data)
        if epoch == 2:
            best = state_of(model)
        stop = stopper.step(loss, model)
        assert stop == (epoch == 5), f"validation losses {val_losses}: step {epoch} returned {stop}"
    label = f"{optimizer_name}, best validation loss at epoch 2 of 6"
    stopper.restore(model)
    assert_state_equal(model, best, f"{label}: after restore")
    train_epoch(model, optimizer, data)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    stopper.restore(model)
    assert_state_equal(model, best, f"{label}: restoring a second time, after more training")


@pytest.mark.points(2)
def test_restore_best_false_keeps_no_copy_and_restore_raises(impl):
    model = nn.Linear(50, 50)
    stopper = impl.EarlyStopping(2, restore_best=False)
    for loss in (3.0, 2.0, 1.0):
        stopper.step(loss, model)
    held = [t for t in tensors_held_by(stopper) if t.numel >= 50]  # the size of a weight or bias
    assert not held, (f"with restore_best=False the object still holds {len(held)} tensor(s) the size of the "
                      "model's weights: it should keep no copy")
    assert_raises_naming(RuntimeError, "restore_best", stopper.restore, model)


@pytest.mark.points(1)
@pytest.mark.parametrize("metrics", [[], [math.nan, math.nan]], ids=["no step", "no improvement"])
def test_restore_before_any_improvement_raises(impl, metrics):
    model = tagged_model()
    stopper = impl.EarlyStopping(5)
    for m in metrics:
        stopper.step(m, model)
    try:
        stopper.restore(model)
    except RuntimeError:
        return
    raise AssertionError(f"restore after the metrics {metrics} (no improvement, nothing to restore) returned "
                         "normally: it should raise RuntimeError")


METRIC_KINDS = {
    "int": lambda v: int(v), "float": lambda v: float(v),
    "0-dim tensor": lambda v: torch.tensor(v), "float64 tensor": lambda v: torch.tensor(v, dtype=torch.float64),
    "(1,) tensor": lambda v: torch.tensor([v]), "(1, 1) tensor": lambda v: torch.tensor([[v]]),
    "tensor with grad": lambda v: (torch.tensor(v, requires_grad=True) * 1.0),
}


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", list(METRIC_KINDS))
def test_metric_kinds(impl, kind):
    metrics = [5.0, 3.0, 4.0, 4.0, 2.0, 6.0, 6.0]
    stopper = impl.EarlyStopping(2)
    model = tagged_model()
    flags = [stopper.step(METRIC_KINDS[kind](v), model) for v in metrics]
    want = expected_stops(metrics, "min", 0.0, 2)
    assert flags == want, f"metrics given as {kind}s {metrics}: step returned {flags}, expected {want}"
    assert type(stopper.best) is float and stopper.best == 2.0, (
        f"metrics given as {kind}s: best is {stopper.best!r} ({type(stopper.best).__name__}), expected the float 2.0")


@pytest.mark.points(2)
def test_keeps_no_reference_to_a_metric_tensor(impl):
    model = nn.Linear(3, 2)  # no one-element parameter: a one-element tensor held is a metric
    stopper = impl.EarlyStopping(2)
    refs = []
    for i in range(3):
        loss = model(torch.randn(4, 3)).pow(2).mean() / (i + 1)
        refs.append(weakref.ref(loss))
        stopper.step(loss, model)
        del loss
    gc.collect()
    alive = sum(r() is not None for r in refs)
    held = [t for t in tensors_held_by(stopper) if t.numel == 1 and t.requires_grad]
    assert alive == 0 and not held, (
        f"after step, {max(alive, len(held))} of the 3 loss tensors given as metric are still held, and with "
        "them their autograd graphs: keep metrics as Python floats")


def raises_for_each(error, name, fn, cases: dict):
    """``fn(value)`` raises ``error`` naming ``name`` for every bad value in ``cases``."""
    for case, value in cases.items():
        try:
            assert_raises_naming(error, name, fn, value)
        except AssertionError as exc:
            raise AssertionError(f"{name} {case}: {exc}") from None


def test_metric_of_another_type_raises_type_error(impl):
    raises_for_each(TypeError, "metric", lambda m: impl.EarlyStopping(2).step(m, tagged_model()),
                    {"'0.5' (a str)": "0.5", "None": None, "[0.5] (a list)": [0.5]})


def test_tensor_metric_with_other_than_one_element_raises_type_error(impl):
    raises_for_each(TypeError, "metric", lambda m: impl.EarlyStopping(2).step(m, tagged_model()),
                    {f"of shape {s}": torch.ones(s) for s in [(2,), (0,), (1, 2)]})


BAD_CONSTRUCTOR_ARGUMENTS = {
    "patience": {"0": 0, "-1": -1, "2.5": 2.5, "'3'": "3"},
    "min_delta": {"-0.1": -0.1, "nan": math.nan, "inf": math.inf, "'0.1'": "0.1"},
    "mode": {"'MIN'": "MIN", "'minimum'": "minimum", "None": None},
}


@pytest.mark.parametrize("name", list(BAD_CONSTRUCTOR_ARGUMENTS))
def test_bad_constructor_arguments_raise_value_error(impl, name):
    def make(value):
        args = {"patience": 2, name: value}
        return impl.EarlyStopping(args.pop("patience"), **args)

    raises_for_each(ValueError, name, make, BAD_CONSTRUCTOR_ARGUMENTS[name])


def test_smallest_accepted_values(impl):
    """patience=1 and min_delta=0 (the included ends) are accepted, as are both modes."""
    for mode in ("min", "max"):
        stopper = impl.EarlyStopping(1, min_delta=0, mode=mode)
        stopper.step(1.0, tagged_model())
