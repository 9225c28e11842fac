"""Checkpoints that resume training exactly, written atomically.

The question
------------
What goes into a training checkpoint, and how do you resume from it? Saving ``model.state_dict()``
alone is not enough to continue training: the optimizer's state (momentum, Adam's moments), the
learning-rate scheduler's position, the epoch counter and the random number generators (dropout
masks, shuffling) all shape the next steps. And a checkpoint is only useful if a crash while
writing it cannot destroy the previous one: write to a temporary file, then rename it over the
old one (a rename within one directory is atomic). Checkpoints made of plain state dicts can be
loaded with ``torch.load(..., weights_only=True)``, which unpickles no arbitrary objects.

Your task
---------
Write ``save_checkpoint(path, *, model, optimizer, epoch, scheduler=None)`` and
``load_checkpoint(path, model, optimizer, scheduler=None, map_location="cpu")``.

Contract
--------
- ``path`` is a ``str`` or an ``os.PathLike`` (a ``pathlib.Path``); its directory exists.
- ``save_checkpoint`` writes, with ``torch.save``, one dict with the keys ``"model"``
  (``model.state_dict()``), ``"optimizer"`` (``optimizer.state_dict()``), ``"scheduler"``
  (``scheduler.state_dict()``, or ``None`` without a scheduler), ``"epoch"`` and ``"rng"`` (the
  states of torch's CPU generator, of every CUDA generator when CUDA is available, and of
  Python's ``random`` module).
- ``epoch`` is an int >= 0 (the number of finished epochs); a negative one raises ``ValueError``
  naming ``epoch``. ``save_checkpoint`` returns ``None``.
- The file loads with ``torch.load(path, weights_only=True)``: it holds only tensors, dicts,
  lists, tuples, numbers, strings and ``None``, and its ``"model"`` entry loads into a fresh
  instance of the model with ``load_state_dict``.
- Saving is atomic: the data goes to a temporary file that is renamed over ``path`` only once it
  is completely written. If writing fails (an exception from ``torch.save`` or from the disk),
  the exception propagates, the file previously at ``path`` (if any) is left unchanged and
  loadable, and no temporary file is left behind.
- ``load_checkpoint`` loads the file with ``weights_only=True`` and ``map_location``, restores
  the model, the optimizer, the scheduler (when one is given) and every RNG state saved, and
  returns the saved epoch as an int. A scheduler given for a checkpoint saved without one raises
  ``ValueError`` naming ``scheduler``.
- Resuming is exact: training ``k`` epochs, saving, then loading into fresh model, optimizer and
  scheduler objects (after anything else has used the RNGs) and training to epoch ``n`` gives
  bitwise the same parameters as training ``n`` epochs without stopping.

Hints
-----
- ``torch.get_rng_state()``, ``torch.cuda.get_rng_state_all()`` and ``random.getstate()`` give
  the RNG states; each has a ``set`` counterpart.
- ``tempfile.NamedTemporaryFile(dir=..., delete=False)`` or ``tempfile.mkstemp`` in the target's
  directory, then ``os.replace``; clean up in ``except``/``finally``.
"""

from __future__ import annotations

import os
import random
import tempfile

import torch


def _rng_states() -> dict:
    states = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"].cpu())
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in states["cuda"]])


def save_checkpoint(path: str | os.PathLike, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    epoch: int, scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> None:
    """Atomically save everything needed to resume training after ``epoch`` finished epochs."""
    if epoch < 0:
        raise ValueError(f"epoch must be an int >= 0, got {epoch}")
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "epoch": int(epoch),
        "rng": _rng_states(),
    }
    path = os.fspath(path)
    # The temporary file lives beside the target so that os.replace is a rename on one filesystem.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_checkpoint(path: str | os.PathLike, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
                    map_location: str | torch.device = "cpu") -> int:
    """Restore the states saved by ``save_checkpoint`` and return the saved epoch."""
    state = torch.load(path, map_location=map_location, weights_only=True)
    if scheduler is not None and state["scheduler"] is None:
        raise ValueError("scheduler given, but the checkpoint was saved without a scheduler")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    _set_rng_states(state["rng"])
    return int(state["epoch"])
