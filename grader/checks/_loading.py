"""What a test must run where the submission's objects live: one epoch of a DataLoader over a
submission's dataset, and the loaders and compilers of torch's saved programs."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

# torch.jit.load and torch.export.load unpickle what they read: a file the submission wrote,
# loaded in the tests' process, could run code of the submission's choosing there (both say so
# in their own warnings). torch.jit.script compiles the module's code, torch.export.save writes
# the program it is given. Graded apart (``grader.remote``), each runs in the submission's
# process, and what it makes is used from there, as the submission's other objects are.
WHERE_THE_SUBMISSION_LIVES = ("torch.jit.load", "torch.jit.script", "torch.export.save", "torch.export.load")


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


def named_function(name: str) -> Callable:
    """The function one of ``WHERE_THE_SUBMISSION_LIVES`` names.

    Raises:
        ValueError: ``name`` is not one of them.
    """
    if name not in WHERE_THE_SUBMISSION_LIVES:
        raise ValueError(f"name must be one of {', '.join(WHERE_THE_SUBMISSION_LIVES)}, got {name!r}")
    import torch
    import torch.export  # noqa: F401 - a submodule torch loads lazily

    return operator.attrgetter(name.removeprefix("torch."))(torch)


def where_the_submission_lives(impl: Any, name: str, *args: Any) -> Any:
    """``name(*args)``, ``name`` one of ``WHERE_THE_SUBMISSION_LIVES`` (``"torch.jit.load"``,
    ``"torch.jit.script"``, ``"torch.export.save"``, ``"torch.export.load"``), run in the
    process of the submission whose module is ``impl`` (the ``impl`` fixture's): its own when
    the submission is graded in the tests' process, else the submission's, whose result (a
    scripted or loaded module, a program) the test then uses as it uses the submission's other
    objects.

    Raises:
        ValueError: ``name`` is not one of those.
    """
    function = named_function(name)
    runs = getattr(type(impl), "run_in_executor", None)
    if runs is not None:
        return runs(impl, name, *args)
    return function(*args)
