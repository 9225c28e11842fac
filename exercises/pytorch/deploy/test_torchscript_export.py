"""Public tests for pytorch.deploy.torchscript_export: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_torchscript_export.py``.

torch.jit warns that it is deprecated on every call; these tests ignore warnings."""

import pytest
import torch

from grader.checks import where_the_submission_lives

pytestmark = pytest.mark.filterwarnings("ignore")


def test_branchnet_takes_the_branch_of_the_batch_sum(impl):
    torch.manual_seed(0)
    model = impl.BranchNet(2)
    x = torch.tensor([[1.0, 2.0]])
    with torch.no_grad():
        assert torch.allclose(model(x), torch.relu(model.up(x))), "a positive sum should give relu(up(x))"
        assert torch.allclose(model(-x), torch.tanh(model.down(-x))), "a negative sum should give tanh(down(x))"


def test_export_scripted_round_trip_keeps_both_branches(impl, tmp_path):
    torch.manual_seed(0)
    model = impl.BranchNet(2)
    impl.export_scripted(model, tmp_path / "branch.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "branch.pt")
    x = torch.tensor([[1.0, 2.0], [0.5, 0.5]])
    with torch.no_grad():
        for sign in (1, -1):
            assert torch.allclose(loaded(sign * x), model(sign * x)), (
                f"the loaded scripted model differs from the model on a batch with a "
                f"{'positive' if sign > 0 else 'negative'} sum")


def test_export_program_has_a_dynamic_batch(impl):
    torch.manual_seed(0)
    model = impl.BranchNet(2)
    program = impl.export_program(model, torch.ones(4, 2))
    x = -torch.ones(7, 2)
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x)), (
            "the program (exported at batch 4, positive sum) differs from the model at batch 7, negative sum")
