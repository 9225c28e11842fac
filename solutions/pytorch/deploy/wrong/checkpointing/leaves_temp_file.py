"""Wrong: writes to a temporary file and renames it, but does not remove the temporary
file when the write fails."""

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
    finally:
        pass


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
