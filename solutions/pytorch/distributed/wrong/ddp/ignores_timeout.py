"""Wrong: joins the process group with the default timeout (30 minutes), not timeout_s: a missing
rank keeps the others waiting."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def all_reduce_mean_(tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> None:
    """Replace each tensor, in place, with its mean over all ranks of the default process group."""
    tensors = list(tensors)
    for t in tensors:
        if not (isinstance(t, torch.Tensor) and t.is_floating_point()):
            raise TypeError(f"tensors must hold floating-point tensors, got {getattr(t, 'dtype', type(t).__name__)}")
    world_size = dist.get_world_size()
    for t in tensors:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t.div_(world_size)


def ddp_worker(rank: int, world_size: int, init_method: str, *, model: nn.Module, dataset: TensorDataset,
               epochs: int, batch_size: int, lr: float, seed: int = 0, drop_last: bool = False,
               sync: str = "ddp", timeout_s: float = 30.0) -> dict:
    """Train ``model`` as rank ``rank`` of ``world_size``; return its final state and its shards."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size={world_size}), got {rank}")
    if sync not in ("ddp", "manual"):
        raise ValueError(f"sync must be 'ddp' or 'manual', got {sync!r}")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    try:
        if sync == "ddp":
            trained = DistributedDataParallel(model)  # broadcasts rank 0's parameters and buffers
        else:
            for tensor in [*model.parameters(), *model.buffers()]:
                dist.broadcast(tensor.data, src=0)
            trained = model
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed,
                                     drop_last=drop_last)
        loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
        indices = []
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            indices.append([int(i) for i in sampler])
            for x, y in loader:
                optimizer.zero_grad()
                F.mse_loss(trained(x), y).backward()
                if sync == "manual":
                    all_reduce_mean_([p.grad for p in model.parameters() if p.grad is not None])
                optimizer.step()
        return {"state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
                "indices": indices}
    finally:
        dist.destroy_process_group()
