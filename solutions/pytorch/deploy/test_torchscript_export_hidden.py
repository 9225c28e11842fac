"""Hidden tests for pytorch.deploy.torchscript_export (the catalog's contract checks).

The references are independent of the learner's module: ``BranchNet``'s output is computed from
its ``up`` and ``down`` layers by the formula of the docstring, and every exported or loaded
module is compared with the kit's own eager model in evaluation mode. ``torch.export`` is slow
(seconds per call on a small CPU), so each program is exported once per module, in a fixture that
keeps the export's outcome, and the tests that read it re-raise a failed export.

torch.jit is deprecated in torch 2.13 and warns on every call; the exporters warn too. No
warning may fail a correct answer, so this module ignores them (``export_traced``'s own
``TracerWarning`` check sees them regardless: ``catch_warnings`` with ``simplefilter("always")``
overrides these filters).
"""

from __future__ import annotations

import pathlib
import warnings
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_close, assert_raises_naming, where_the_submission_lives

pytestmark = pytest.mark.filterwarnings("ignore")

FEATURES = 3


def branch_formula(model, x: torch.Tensor) -> torch.Tensor:
    """The docstring's BranchNet, computed from the model's own ``up`` and ``down`` layers."""
    with torch.no_grad():
        if float(x.sum()) > 0:
            return torch.relu(x @ model.up.weight.T + model.up.bias)
        return torch.tanh(x @ model.down.weight.T + model.down.bias)


def signed_batch(batch: int, features: int, sign: int, seed: int = 0) -> torch.Tensor:
    """A batch whose sum has the given sign (every entry does)."""
    g = torch.Generator().manual_seed(seed)
    return sign * (torch.rand(batch, features, generator=g) + 0.1)


def make_branchnet(impl, seed: int = 0):
    torch.manual_seed(seed)
    return impl.BranchNet(FEATURES)


class DropoutBN(nn.Module):
    """Dropout and batch normalisation with non-trivial running statistics: training mode and
    evaluation mode give different outputs."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))
        with torch.no_grad():
            for _ in range(5):
                self.net(torch.randn(16, 4) * 3 + 1)  # running statistics far from (0, 1)

    def forward(self, x):
        return self.net(x)


class PythonIf(nn.Module):
    """Data-dependent control flow written as a plain Python ``if``: tracing bakes in one branch."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.linear = nn.Linear(FEATURES, FEATURES)

    def forward(self, x):
        if x.sum() > 0:
            return self.linear(x)
        return -self.linear(x)


class Warns(nn.Module):
    """No data-dependent control flow, but its forward warns (a plain ``Warning`` and a
    ``UserWarning``, neither of them a ``TracerWarning``) every time it runs."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.linear = nn.Linear(FEATURES, 2)

    def forward(self, x):
        warnings.warn("Warns: a warning of the base category", Warning, stacklevel=2)
        warnings.warn("Warns: a user warning", UserWarning, stacklevel=2)
        return torch.sigmoid(self.linear(x))


def eval_reference(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The model's output in evaluation mode, its own mode restored afterwards."""
    mode = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(x)
    finally:
        model.train(mode)


def state_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


@dataclass
class Exported:
    """What an export call left: the model, its mode and state before and after, the result."""

    model: nn.Module
    result: object = None
    error: BaseException | None = None
    mode_after: bool | None = None
    state_before: dict | None = None
    state_after: dict | None = None

    def get(self):
        if self.error is not None:
            raise self.error
        return self.result


def export(call, model: nn.Module, *args) -> Exported:
    out = Exported(model, state_before=state_of(model))
    try:
        out.result = call(model, *args)
    except Exception as exc:  # re-raised by every test that reads this export
        out.error = exc
    out.mode_after, out.state_after = model.training, state_of(model)
    return out


@pytest.fixture(scope="module")
def branch_program(impl):
    return export(impl.export_program, make_branchnet(impl, 1), signed_batch(5, FEATURES, +1))


@pytest.fixture(scope="module")
def dropout_program(impl):
    return export(impl.export_program, DropoutBN().train(), torch.randn(3, 4))


def outputs_of(module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return module(x)


# BranchNet itself


@pytest.mark.points(2)
@given(batch=st.integers(1, 9), features=st.integers(1, 6), sign=st.sampled_from([1, -1]))
def test_branchnet_computes_both_branches(impl, batch, features, sign):
    model = impl.BranchNet(features)
    x = signed_batch(batch, features, sign, seed=batch)
    assert_close(outputs_of(model, x), branch_formula(model, x),
                 name=f"BranchNet({features}) on a batch of {batch} whose sum is "
                      f"{'positive' if sign > 0 else 'negative'}")


@pytest.mark.points(1)
def test_branchnet_zero_sum_takes_the_down_branch(impl):
    model = make_branchnet(impl)
    x = torch.tensor([[1.0, -2.0, 0.5], [0.25, 0.5, -0.25]])  # sums to exactly 0
    assert float(x.sum()) == 0.0
    assert_close(outputs_of(model, x), branch_formula(model, x),
                 name="BranchNet on a batch whose sum is exactly 0 (the down branch: tanh(down(x)))")


@pytest.mark.points(1)
def test_branchnet_features_range(impl):
    model = impl.BranchNet(1)
    for name in ("up", "down"):
        layer = getattr(model, name, None)
        assert isinstance(layer, nn.Linear) and (layer.in_features, layer.out_features) == (1, 1), (
            f"BranchNet(1).{name} should be nn.Linear(1, 1), got {layer!r}")
    assert_raises_naming(ValueError, "features", impl.BranchNet, 0)


# Batches by the sign of their sum; "small positive" sums to 0.25 (up) and "zero" to exactly 0 (down).
SUM_BATCHES = {
    "positive": lambda: signed_batch(4, FEATURES, 1),
    "negative": lambda: signed_batch(4, FEATURES, -1),
    "small positive": lambda: torch.tensor([[0.5, -0.25, 0.125], [-0.5, 0.25, 0.125]]),
    "zero": lambda: torch.tensor([[1.0, -2.0, 0.5], [0.25, 0.5, -0.25]]),
}


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["positive", "negative", "small positive", "zero"],
                         ids=["positive-sum", "negative-sum", "small-positive-sum", "zero-sum"])
def test_scripted_branchnet_chooses_the_branch_at_run_time(impl, kind):
    model = make_branchnet(impl, 2)
    scripted = where_the_submission_lives(impl, "torch.jit.script", model)
    x = SUM_BATCHES[kind]()
    assert_close(outputs_of(scripted, x), branch_formula(model, x),
                 name=f"torch.jit.script(BranchNet) on a batch with a {kind} sum ({float(x.sum()):g})")


# export_scripted


@pytest.mark.points(2)
@pytest.mark.parametrize("batch", [1, 64])
def test_export_scripted_keeps_both_branches_after_loading(impl, tmp_path, batch):
    model = make_branchnet(impl, 5)
    impl.export_scripted(model, tmp_path / "branch.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "branch.pt")
    for sign in (1, -1):
        x = signed_batch(batch, FEATURES, sign)
        assert_close(outputs_of(loaded, x), branch_formula(model, x),
                     name=f"the loaded scripted BranchNet on a batch of {batch} with a "
                          f"{'positive' if sign > 0 else 'negative'} sum")


@pytest.mark.points(2)
def test_export_scripted_captures_evaluation_mode(impl, tmp_path):
    model = DropoutBN().train()
    impl.export_scripted(model, tmp_path / "m.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "m.pt")
    for batch in (1, 6):
        x = torch.randn(batch, 4)
        assert_close(outputs_of(loaded, x), eval_reference(model, x),
                     name=f"the loaded scripted model (dropout, batch norm) on a batch of {batch}, vs the "
                          "model in evaluation mode")


# export_traced


@pytest.mark.points(2)
def test_export_traced_captures_evaluation_mode_at_any_batch_size(impl, tmp_path):
    model = DropoutBN().train()
    impl.export_traced(model, torch.randn(3, 4), tmp_path / "t.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "t.pt")
    for batch in (1, 3, 64):
        x = torch.randn(batch, 4)
        assert_close(outputs_of(loaded, x), eval_reference(model, x),
                     name=f"the loaded traced model (dropout, batch norm; traced at batch 3) on a batch of "
                          f"{batch}, vs the model in evaluation mode")


@pytest.mark.points(2)
def test_export_traced_refuses_data_dependent_control_flow(impl, tmp_path):
    path = tmp_path / "if.pt"
    assert_raises_naming(ValueError, "model", impl.export_traced, PythonIf(), signed_batch(2, FEATURES, 1), path)
    assert not path.exists(), "export_traced raised, but left a file at path"


@pytest.mark.points(1)
def test_export_traced_keeps_a_model_that_warns_for_other_reasons(impl, tmp_path):
    model = Warns()
    impl.export_traced(model, torch.randn(3, FEATURES), tmp_path / "w.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "w.pt")
    for batch in (1, 5):
        x = torch.randn(batch, FEATURES)
        assert_close(outputs_of(loaded, x), eval_reference(model, x),
                     name=f"the loaded traced model whose forward warns (a Warning and a UserWarning, no "
                          f"TracerWarning: it must be saved) on a batch of {batch}")


# export_program


@pytest.mark.points(3)
@given(batch=st.integers(1, 64), sign=st.sampled_from([1, -1]))
def test_program_chooses_the_branch_at_any_batch_size(impl, branch_program, batch, sign):
    program = branch_program.get()
    x = signed_batch(batch, FEATURES, sign, seed=batch)
    assert_close(outputs_of(program.module(), x), branch_formula(branch_program.model, x),
                 name=f"export_program(BranchNet) (example: batch 5, positive sum) on a batch of {batch} with a "
                      f"{'positive' if sign > 0 else 'negative'} sum")


@pytest.mark.points(2)
def test_program_survives_save_and_load(impl, branch_program, tmp_path):
    where_the_submission_lives(impl, "torch.export.save", branch_program.get(), tmp_path / "p.pt2")
    loaded = where_the_submission_lives(impl, "torch.export.load", tmp_path / "p.pt2").module()
    for batch, sign in ((1, -1), (7, 1), (64, -1)):
        x = signed_batch(batch, FEATURES, sign)
        assert_close(outputs_of(loaded, x), branch_formula(branch_program.model, x),
                     name=f"the saved and loaded program on a batch of {batch} with a "
                          f"{'positive' if sign > 0 else 'negative'} sum")


@pytest.mark.points(2)
def test_program_captures_evaluation_mode(impl, dropout_program):
    module = dropout_program.get().module()
    for batch in (1, 3, 10):
        x = torch.randn(batch, 4)
        assert_close(outputs_of(module, x), eval_reference(dropout_program.model, x),
                     name=f"export_program(model with dropout and batch norm) on a batch of {batch}, vs the "
                          "model in evaluation mode")


@pytest.mark.points(2)
def test_program_from_an_example_of_batch_one(impl):
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    module = impl.export_program(model, torch.randn(1, 2)).module()
    for batch in (1, 7):
        x = torch.randn(batch, 2)
        assert_close(outputs_of(module, x), eval_reference(model, x),
                     name=f"export_program(model, example of batch 1) on a batch of {batch}")


# what every export leaves behind


def _scripted(impl, model, tmp_path):
    return export(impl.export_scripted, model, tmp_path / "s.pt")


def _traced(impl, model, tmp_path):
    return export(impl.export_traced, model, torch.randn(3, 4), tmp_path / "t.pt")


@pytest.mark.points(1)
@pytest.mark.parametrize(("how", "mode"), [("export_scripted", "train"), ("export_scripted", "eval"),
                                           ("export_traced", "train"), ("export_traced", "eval"),
                                           ("export_program", "train")])  # one program export per module
def test_export_leaves_mode_parameters_and_buffers_as_found(impl, tmp_path, dropout_program, how, mode):
    if how == "export_program":
        done = dropout_program
    else:
        done = (_scripted if how == "export_scripted" else _traced)(impl, DropoutBN().train(mode == "train"),
                                                                     tmp_path)
    done.get()
    assert done.mode_after == (mode == "train"), (
        f"{how} left model.training {done.mode_after} for a model handed over in {mode} mode")
    for name, before in done.state_before.items():
        assert torch.equal(done.state_after[name], before), (
            f"{how} changed the model's {name} (a forward pass in training mode updates batch norm's "
            "running statistics)")


@pytest.mark.points(1)
@pytest.mark.parametrize("how", ["export_scripted", "export_traced"])
@pytest.mark.parametrize("path_kind", ["str", "Path"])
def test_path_may_be_str_or_pathlike_and_returns_none(impl, tmp_path, how, path_kind):
    path = tmp_path / "m.pt"
    target = str(path) if path_kind == "str" else pathlib.Path(path)
    model = DropoutBN()
    result = (impl.export_scripted(model, target) if how == "export_scripted"
              else impl.export_traced(model, torch.randn(2, 4), target))
    assert result is None, f"{how} returned {type(result).__name__}, expected None"
    x = torch.randn(2, 4)
    assert_close(outputs_of(where_the_submission_lives(impl, "torch.jit.load", path), x), eval_reference(model, x),
                 name=f"the module {how} saved at a {path_kind} path")
