"""Public tests for pytorch.distributed.ddp: a few quick examples. Run with
``pytest exercises/pytorch/distributed/test_ddp.py``. The ranks are two real processes
(``grader.checks.run_ranks`` spawns them and calls your function in each); they meet on
127.0.0.1."""

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from grader.checks import run_ranks


def test_two_ranks_end_with_the_same_parameters(impl):
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))

    def calls(rank, init_method):
        torch.manual_seed(rank)  # different starting values: training starts from rank 0's
        return (rank, 2, init_method), dict(model=nn.Linear(3, 1), dataset=dataset, epochs=1, batch_size=2,
                                            lr=0.1, timeout_s=45.0)

    rank0, rank1 = (r.returned for r in run_ranks(impl.ddp_worker, 2, calls, timeout_s=50.0))
    for key in ("weight", "bias"):
        assert torch.allclose(rank0["state_dict"][key], rank1["state_dict"][key]), (
            f"{key} differs between the ranks after training: {rank0['state_dict'][key]} vs {rank1['state_dict'][key]}")
    assert sorted(rank0["indices"][0] + rank1["indices"][0]) == list(range(8)), (
        f"the ranks' shards {rank0['indices'][0]} and {rank1['indices'][0]} should split indices 0..7 between them")


def test_integer_tensors_are_rejected(impl):
    with pytest.raises(TypeError, match="tensors"):
        impl.all_reduce_mean_([torch.ones(2, dtype=torch.int64)])
