"""Hidden tests for pytorch.deploy.checkpointing (the catalog's contract checks).

The reference for resuming is the same training run without stopping; a failure in the middle of
a save is injected two ways: ``torch.save`` writing half of its bytes and then raising, and a
module whose extra state cannot be pickled (torch.save fails after it has opened its target).
"""

from __future__ import annotations

import io
import os
import pathlib
import random

import pytest
import torch
from torch import nn

from grader.checks import assert_raises_naming

N_EPOCHS = 4


def make_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 6), nn.Dropout(0.3), nn.Tanh(), nn.Linear(6, 2))


OPTIMIZERS = {
    "SGD-momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam": lambda ps: torch.optim.Adam(ps, lr=0.01),
}
SCHEDULERS = {
    "none": lambda opt: None,
    # LambdaLR computes each lr from its epoch count (StepLR's chained form would hide a scheduler
    # that was not restored, since the optimizer's state carries the current lr).
    "LambdaLR": lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e) ** 2),
}


def run_epoch(model, optimizer, scheduler) -> None:
    """One epoch whose data, order and dropout all come from the global RNGs."""
    model.train()
    data = torch.randn(6, 3)
    order = list(range(6))
    random.shuffle(order)
    for i in (order[:3], order[3:]):
        optimizer.zero_grad()
        loss = model(data[i]).pow(2).mean()
        loss.backward()
        optimizer.step()
    if scheduler is not None:
        scheduler.step()


def build(opt_name, sched_name, seed):
    model = make_model(seed)
    optimizer = OPTIMIZERS[opt_name](model.parameters())
    return model, optimizer, SCHEDULERS[sched_name](optimizer)


def state_bytes(path) -> bytes:
    return pathlib.Path(path).read_bytes()


@pytest.mark.points(4)
@pytest.mark.parametrize("sched_name", sorted(SCHEDULERS))
@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("stop_at", [0, 2])
def test_resume_equals_uninterrupted_training_bitwise(impl, tmp_path, opt_name, sched_name, stop_at):
    label = f"{opt_name}, scheduler {sched_name}, stopped after epoch {stop_at} of {N_EPOCHS}"
    torch.manual_seed(0)
    random.seed(0)
    model, optimizer, scheduler = build(opt_name, sched_name, 1)
    torch.manual_seed(0)
    random.seed(0)
    for _ in range(N_EPOCHS):
        run_epoch(model, optimizer, scheduler)
    want = {k: v.clone() for k, v in model.state_dict().items()}

    resumed, optimizer, scheduler = build(opt_name, sched_name, 1)
    torch.manual_seed(0)
    random.seed(0)
    for _ in range(stop_at):
        run_epoch(resumed, optimizer, scheduler)
    path = tmp_path / "ckpt.pt"
    impl.save_checkpoint(path, model=resumed, optimizer=optimizer, epoch=stop_at, scheduler=scheduler)

    torch.manual_seed(1234)  # something else uses the RNGs before the restart
    random.seed(1234)
    torch.randn(10)
    random.random()
    fresh, optimizer, scheduler = build(opt_name, sched_name, 99)
    epoch = impl.load_checkpoint(path, fresh, optimizer, scheduler)
    assert type(epoch) is int and epoch == stop_at, f"{label}: load_checkpoint returned {epoch!r}, expected {stop_at}"
    for _ in range(epoch, N_EPOCHS):
        run_epoch(fresh, optimizer, scheduler)
    for name, value in fresh.state_dict().items():
        assert torch.equal(value, want[name]), (
            f"{label}: after resuming, {name} differs from uninterrupted training by up to "
            f"{float((value - want[name]).abs().max()):.3g} (model, optimizer, scheduler and RNG states "
            "must all be restored)")


@pytest.mark.points(2)
@pytest.mark.parametrize("path_kind", ["str", "Path", "Path-by-keyword"])
def test_file_loads_with_weights_only_and_into_a_fresh_model(impl, tmp_path, path_kind):
    model, optimizer, scheduler = build("Adam", "LambdaLR", 2)
    run_epoch(model, optimizer, scheduler)
    path = tmp_path / "c.pt"
    states = dict(model=model, optimizer=optimizer, epoch=1, scheduler=scheduler)
    if path_kind == "Path-by-keyword":  # the signature save_checkpoint(path, *, ...) lets path be named too
        impl.save_checkpoint(path=path, **states)
    else:
        impl.save_checkpoint(str(path) if path_kind == "str" else path, **states)
    state = torch.load(path, weights_only=True)
    assert isinstance(state, dict) and {"model", "optimizer", "scheduler", "epoch", "rng"} <= set(state), (
        f"the checkpoint should be a dict with keys model, optimizer, scheduler, epoch, rng; got "
        f"{sorted(state) if isinstance(state, dict) else type(state).__name__}")
    assert state["epoch"] == 1, f"epoch entry is {state['epoch']!r}, expected 1"
    fresh = make_model(3)
    fresh.load_state_dict(state["model"])
    for name, value in fresh.state_dict().items():
        assert torch.equal(value, model.state_dict()[name]), f"the model entry's {name} differs from the model's"
    assert state["optimizer"]["state"], "the optimizer entry has no per-parameter state (Adam's moments)"
    assert state["scheduler"] == scheduler.state_dict(), "the scheduler entry differs from scheduler.state_dict()"


@pytest.mark.points(1)
def test_scheduler_entry_is_none_without_a_scheduler(impl, tmp_path):
    model, optimizer, _ = build("SGD-momentum", "none", 4)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=0)
    state = torch.load(tmp_path / "c.pt", weights_only=True)
    assert state["scheduler"] is None, f"scheduler entry is {state['scheduler']!r}, expected None"


@pytest.mark.points(2)
def test_rng_states_are_saved_and_restored(impl, tmp_path):
    model, optimizer, _ = build("SGD-momentum", "none", 5)
    torch.manual_seed(7)
    random.seed(7)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=3)
    want_torch, want_py = torch.rand(3), random.random()
    torch.manual_seed(8)
    random.seed(8)
    impl.load_checkpoint(tmp_path / "c.pt", model, optimizer, map_location="cpu")
    assert torch.equal(torch.rand(3), want_torch), "torch's CPU generator was not restored by load_checkpoint"
    assert random.random() == want_py, "Python's random state was not restored by load_checkpoint"


@pytest.mark.points(1)
def test_checkpoint_saved_without_cuda_loads_where_cuda_is_available(impl, tmp_path, monkeypatch):
    # A checkpoint from a machine without CUDA holds no CUDA generator states; resuming it on a
    # machine with CUDA restores the states it does hold. is_available() is set for each side.
    model, optimizer, _ = build("SGD-momentum", "none", 8)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    torch.manual_seed(9)
    random.seed(9)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=2)
    want_torch, want_py = torch.rand(3), random.random()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    torch.manual_seed(10)
    random.seed(10)
    epoch = impl.load_checkpoint(tmp_path / "c.pt", model, optimizer)
    monkeypatch.undo()
    assert epoch == 2, f"load_checkpoint returned {epoch!r}, expected 2"
    assert torch.equal(torch.rand(3), want_torch), (
        "torch's CPU generator was not restored from a checkpoint saved without CUDA, loaded where CUDA is available")
    assert random.random() == want_py, (
        "Python's random state was not restored from a checkpoint saved without CUDA, loaded where CUDA is available")


@pytest.mark.cuda
@pytest.mark.points(1)
def test_cuda_rng_states_are_saved_and_restored(impl, tmp_path):
    model, optimizer, _ = build("SGD-momentum", "none", 11)
    torch.cuda.manual_seed_all(11)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=1)
    want = [torch.rand(3, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]
    torch.cuda.manual_seed_all(12)
    impl.load_checkpoint(tmp_path / "c.pt", model, optimizer)
    for i, expected in enumerate(want):
        assert torch.equal(torch.rand(3, device=f"cuda:{i}"), expected), (
            f"the generator of cuda:{i} was not saved and restored (CUDA is available: the checkpoint "
            "holds every CUDA generator's state and load_checkpoint restores it)")


class RunsCodeWhenUnpickled:
    """Unpickling this object creates ``marker``: code a weights-only load never runs."""

    def __init__(self, marker: pathlib.Path):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


@pytest.mark.points(1)
def test_load_refuses_a_file_that_holds_arbitrary_objects(impl, tmp_path):
    # A checkpoint made valid by save_checkpoint, plus one pickled object that runs code when it is
    # unpickled: a weights_only=True load refuses it without running that code.
    model, optimizer, _ = build("SGD-momentum", "none", 10)
    path, marker = tmp_path / "c.pt", tmp_path / "code-ran"
    impl.save_checkpoint(path, model=model, optimizer=optimizer, epoch=1)
    state = torch.load(path, weights_only=True)
    state["extra"] = RunsCodeWhenUnpickled(marker)
    torch.save(state, path)
    try:
        impl.load_checkpoint(path, model, optimizer)
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - torch's refusal, whichever error it is
        refused = True
    else:
        refused = False
    assert not marker.exists(), (
        "load_checkpoint unpickled an arbitrary object from the file and ran its code: load it with "
        "torch.load(..., weights_only=True)")
    assert refused, ("load_checkpoint loaded a file holding an arbitrary pickled object, which "
                     "torch.load(..., weights_only=True) refuses")


@pytest.mark.points(1)
def test_negative_epoch_raises_value_error_and_zero_is_accepted(impl, tmp_path):
    model, optimizer, _ = build("SGD-momentum", "none", 6)
    assert_raises_naming(ValueError, "epoch", impl.save_checkpoint, tmp_path / "a.pt", model=model,
                         optimizer=optimizer, epoch=-1)
    assert impl.save_checkpoint(tmp_path / "b.pt", model=model, optimizer=optimizer, epoch=0) is None
    assert impl.load_checkpoint(tmp_path / "b.pt", model, optimizer) == 0


@pytest.mark.points(1)
def test_scheduler_for_a_checkpoint_without_one_raises_value_error(impl, tmp_path):
    model, optimizer, scheduler = build("SGD-momentum", "LambdaLR", 7)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, epoch=1)
    assert_raises_naming(ValueError, "scheduler", impl.load_checkpoint, tmp_path / "c.pt", model, optimizer,
                         scheduler)


class HalfWriteThenFail:
    """torch.save stand-in: serialises for real, writes half the bytes to the target, raises."""

    def __init__(self, real_save):
        self.real_save = real_save

    def __call__(self, obj, f, *args, **kwargs):
        buf = io.BytesIO()
        self.real_save(obj, buf, *args, **kwargs)
        data = buf.getvalue()[: len(buf.getvalue()) // 2]
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as out:
                out.write(data)
        else:
            f.write(data)
        raise OSError(28, "No space left on device (injected after half the bytes)")


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this extra state (injected)")


class ModelWithBadExtraState(nn.Module):
    def __init__(self, fail: bool = False):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.fail = fail

    def get_extra_state(self):
        return Unpicklable() if self.fail else {"ok": 1}

    def set_extra_state(self, state):
        pass

    def forward(self, x):
        return self.linear(x)


@pytest.mark.points(3)
@pytest.mark.parametrize("failure", ["half-write", "unpicklable-state"])
def test_failure_mid_save_leaves_the_previous_checkpoint_intact(impl, tmp_path, monkeypatch, failure):
    model = ModelWithBadExtraState()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "ckpt.pt"
    impl.save_checkpoint(path, model=model, optimizer=optimizer, epoch=1)
    before = state_bytes(path)
    with torch.no_grad():
        model.linear.weight.add_(1.0)
    if failure == "half-write":
        injected = HalfWriteThenFail(torch.save)
        monkeypatch.setattr(torch, "save", injected)
        monkeypatch.setattr(torch.serialization, "save", injected)
        expected_error = OSError
    else:  # a model of the same kind whose extra state cannot be pickled
        model = ModelWithBadExtraState(fail=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        expected_error = Exception
    with pytest.raises(expected_error):
        impl.save_checkpoint(path, model=model, optimizer=optimizer, epoch=2)
    monkeypatch.undo()
    assert state_bytes(path) == before, f"{failure}: the failed save changed the previous checkpoint file"
    fresh = ModelWithBadExtraState()
    assert impl.load_checkpoint(path, fresh, torch.optim.SGD(fresh.parameters(), lr=0.1)) == 1
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["ckpt.pt"], f"{failure}: files left in the directory after the failed save: {left}"


@pytest.mark.points(2)
def test_failed_first_save_leaves_no_file(impl, tmp_path, monkeypatch):
    model = ModelWithBadExtraState()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    injected = HalfWriteThenFail(torch.save)
    monkeypatch.setattr(torch, "save", injected)
    monkeypatch.setattr(torch.serialization, "save", injected)
    with pytest.raises(OSError):
        impl.save_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, epoch=0)
    monkeypatch.undo()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [], f"a failed first save left files behind: {left} (a half-written checkpoint or a temporary file)"
