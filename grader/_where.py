"""The functions a test must run where the submission's objects live, by name.

Loaders and compilers that read or run what the submission wrote: ``torch.jit.load`` and
``torch.export.load`` unpickle what they read, and ``keras.saving.load_model`` imports and calls
what a ``.keras`` file's config names, so a file the submission wrote, loaded in the tests'
process, could run code of the submission's choosing there; ``torch.jit.script`` compiles a
module's code, ``torch.export.save`` writes the program it is given, and ``keras.Model`` joins
the symbolic tensors of the submission's layers into a model. Graded apart (``grader.remote``),
each runs in the submission's process, and what it makes is used from there, as the
submission's other objects are.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from typing import Any

WHERE_THE_SUBMISSION_LIVES = ("torch.jit.load", "torch.jit.script", "torch.export.save", "torch.export.load",
                              "keras.Model", "keras.saving.load_model")


def named_function(name: str) -> Callable:
    """The function one of ``WHERE_THE_SUBMISSION_LIVES`` names (its framework imported).

    Raises:
        ValueError: ``name`` is not one of them.
    """
    if name not in WHERE_THE_SUBMISSION_LIVES:
        raise ValueError(f"name must be one of {', '.join(WHERE_THE_SUBMISSION_LIVES)}, got {name!r}")
    module, _, attribute = name.rpartition(".")
    importlib.import_module(module)  # torch.export: a submodule torch loads lazily
    root, _, path = name.partition(".")
    return operator.attrgetter(path)(importlib.import_module(root))


def where_the_submission_lives(impl: Any, name: str, *args: Any) -> Any:
    """``name(*args)``, ``name`` one of ``WHERE_THE_SUBMISSION_LIVES`` (``"torch.jit.load"``,
    ``"torch.jit.script"``, ``"torch.export.save"``, ``"torch.export.load"``, ``"keras.Model"``,
    ``"keras.saving.load_model"``), run in the process of the submission whose module is
    ``impl`` (the ``impl`` fixture's): its own when the submission is graded in the tests'
    process, else the submission's, whose result (a scripted or loaded module, a program, a
    model) the test then uses as it uses the submission's other objects.

    Raises:
        ValueError: ``name`` is not one of those.
    """
    function = named_function(name)
    runs = getattr(type(impl), "run_in_executor", None)
    if runs is not None:
        return runs(impl, name, *args)
    return function(*args)
