"""Data-parallel training with DistributedDataParallel, and the all-reduce it does, by hand.

The question
------------
How do you train one model on several GPUs or machines? ``DataParallel`` runs one process that
copies the model to every GPU on each step; ``DistributedDataParallel`` (DDP) runs one process per
device (a *rank*), each with its own copy of the model and its own shard of the data
(``DistributedSampler``). After ``backward`` DDP averages the gradients over the ranks with an
all-reduce (in buckets, overlapped with the backward pass), so every copy takes the same optimizer
step and the copies stay identical: one step on ``W`` ranks with ``B`` samples each is one step
on the combined ``W * B`` samples in one process. The sampler shuffles with a seed and the epoch
(call ``set_epoch``, or every epoch visits the same order), and gives every rank the same number of
samples, repeating some or dropping the tail: a rank with one more batch than the others would
wait forever in an all-reduce they never join.

Your task
---------
Write ``all_reduce_mean_(tensors)`` and ``ddp_worker(rank, world_size, init_method, *, model,
dataset, epochs, batch_size, lr, seed=0, drop_last=False, sync="ddp", timeout_s=30.0)``, the
body of one rank: the tests start ``world_size`` processes that meet on loopback and call
``ddp_worker`` in each.

Contract
--------
- ``all_reduce_mean_(tensors)`` takes a list or a tuple of floating-point tensors (float16,
  bfloat16, float32 or float64) and needs the default process group initialised; every rank calls
  it with tensors of the same shapes and dtypes in the same order. It replaces each tensor's
  values, in place, with their mean over the ranks (the sum of every rank's tensor divided by the
  world size), and returns ``None``.
- A tensor that is not floating point raises ``TypeError`` naming ``tensors``, before any
  communication (this check needs no process group).
- ``ddp_worker`` checks its arguments before anything else: ``0 <= rank < world_size`` (else
  ``ValueError`` naming ``rank``) and ``sync`` is ``"ddp"`` or ``"manual"`` (else ``ValueError``
  naming ``sync``).
- ``ddp_worker`` joins the default process group with the ``gloo`` backend, ``init_method``,
  ``rank``, ``world_size`` and a timeout of ``timeout_s`` seconds, and leaves it
  (``destroy_process_group``) before it returns or raises.
- ``model`` is an ``nn.Module`` on the CPU; the ranks may be given copies with different values.
  Training starts from rank 0's parameters on every rank.
- Each rank reads its shard of ``dataset`` (a ``TensorDataset`` of inputs and targets) from
  ``DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed,
  drop_last=drop_last)`` in batches of ``batch_size`` (a ``DataLoader``; the last batch may be
  smaller), calling the sampler's ``set_epoch(epoch)`` before each epoch ``0 .. epochs - 1``.
  So in every epoch each rank gets the same number of samples: with ``drop_last=False``
  ``ceil(n / world_size)``, the shuffled order padded by repeating its first indices; with
  ``drop_last=True`` ``n // world_size``, the tail of the shuffled order dropped. When
  ``world_size`` divides ``n`` the shards of one epoch are disjoint and together hold every index.
- Each step: ``loss = F.mse_loss(model(x), y)`` (the mean), ``backward``, then a step of
  ``torch.optim.SGD(parameters, lr=lr)``. ``sync="ddp"`` wraps the model in
  ``DistributedDataParallel``; ``sync="manual"`` does not, and averages the gradients itself with
  ``all_reduce_mean_`` before each step (and starts by broadcasting rank 0's parameters).
- Either way every rank ends with the same parameters, equal (to float round-off) to training
  rank 0's model in one process with the same optimizer on each step's combined batch (the ranks'
  batches of that step, together).
- It returns ``{"state_dict": ..., "indices": ...}``: the model's ``state_dict()`` after training
  (its own keys, without DDP's ``module.`` prefix) and, per epoch, the list of dataset indices
  (ints) this rank trained on, in the order it used them.

Hints
-----
- ``dist.init_process_group("gloo", init_method=..., rank=..., world_size=...,
  timeout=datetime.timedelta(seconds=timeout_s))``; ``try``/``finally`` for the cleanup.
- ``DistributedDataParallel(model)`` broadcasts rank 0's parameters when it wraps the model; its
  ``.module`` is the model itself.
- ``dist.all_reduce(t, op=dist.ReduceOp.SUM)`` sums in place; ``dist.broadcast(t, src=0)``.
- ``list(sampler)`` after ``set_epoch`` is the epoch's shard, in the order the loader reads it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset


def all_reduce_mean_(tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> None:
    """Replace each tensor, in place, with its mean over all ranks of the default process group."""
    raise NotImplementedError


def ddp_worker(rank: int, world_size: int, init_method: str, *, model: nn.Module, dataset: TensorDataset,
               epochs: int, batch_size: int, lr: float, seed: int = 0, drop_last: bool = False,
               sync: str = "ddp", timeout_s: float = 30.0) -> dict:
    """Train ``model`` as rank ``rank`` of ``world_size``; return its final state and its shards."""
    raise NotImplementedError
