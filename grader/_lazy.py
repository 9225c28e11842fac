"""Names a package exports but imports only when first used (PEP 562's module ``__getattr__``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``homes`` (name ->
    module) from its module when first asked for and keeps it in ``package``, so it is asked for
    once: the check libraries' hypothesis strategies, whose import costs a learner's run a third of
    a second that its public tests never use."""

    def __getattr__(name: str) -> object:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(homes[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
