"""What a test must run where the submission's objects live: one epoch of a DataLoader over a
submission's dataset (the loaders and compilers of saved programs: ``grader._where``)."""

from __future__ import annotations

from typing import Any


def load_batches(dataset: Any, **loader_kwargs: Any) -> list:
    """The batches of one epoch of ``torch.utils.data.DataLoader(dataset, **loader_kwargs)``.

    A dataset of a submission graded in a process of its own (``grader.remote``) is loaded in
    that process: a ``DataLoader`` built in the test's process would fork its workers from it,
    and each would ask the submission's process for samples over the one connection the test's
    process holds. There the workers fork the submission's process, and the batches come back.
    """
    loads = getattr(type(dataset), "load_batches_in_executor", None)
    if loads is not None:
        return loads(dataset, **loader_kwargs)
    from torch.utils.data import DataLoader

    return list(DataLoader(dataset, **loader_kwargs))
