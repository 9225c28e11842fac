"""The torch class an object of the executor is an instance of, as the executor says.

A handle (``grader.remote._client.RemoteObject``) to an object whose class derives from one of
torch's optimizer, scheduler or data classes carries that class's name, so that
``isinstance(scheduler, LambdaLR)`` and ``isinstance(dataset, Dataset)`` hold in a test as in
one process. Only classes of ``CLAIMABLE`` modules are named, and only those whose subclasses
run no code of theirs when made (no metaclass of their own, no ``__init_subclass__``). Like a
mirrored module's class, the claim is the executor's word: a test that reads it is marked
``checked_in_executor``. A ``torch.autograd.Function`` subclass of the submission's is a class
here too (``function_class``), one per class there, and a test that reads it is marked alike.
"""

from __future__ import annotations

import abc
import importlib
import typing
from functools import lru_cache
from typing import Any

from grader.remote import _wire as wire

CLAIMABLE = ("torch.optim", "torch.utils.data")


def _claimable_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in CLAIMABLE)


def _claimable(klass: type) -> bool:
    """Whether a handle may claim ``klass``: a class of a claimable module whose subclasses run
    no code of its when they are made."""
    return (_claimable_module(str(klass.__module__)) and "<" not in klass.__qualname__
            and type(klass) in (type, abc.ABCMeta)
            and not any("__init_subclass__" in vars(k) for k in klass.__mro__ if k not in (typing.Generic, object)))


def claim(value: Any) -> list[str] | None:
    """``[module, qualified name]`` of the nearest class of ``value``'s (itself included) that it
    may claim, or None (executor side)."""
    for klass in type(value).__mro__:
        if _claimable(klass):
            return [klass.__module__, klass.__qualname__]
    return None


@lru_cache(maxsize=256)
def claimed_class(name: str, module: Any, qualname: Any) -> type:
    """A class named ``name`` (the executor's class), derived from the claimed torch class, for
    handles to report as theirs (trusted side; ``WireError`` for a class that is not one)."""
    if type(module) is not str or type(qualname) is not str or not _claimable_module(module):
        raise wire.WireError("a claim of a class torch's optimizer and data modules do not define")
    try:
        base: Any = importlib.import_module(module)
        for part in qualname.split("."):
            base = getattr(base, part)
    except (ImportError, AttributeError):
        raise wire.WireError(f"no class {module}.{qualname}") from None
    if not isinstance(base, type) or base.__module__ != module or not _claimable(base):
        raise wire.WireError(f"no class {module}.{qualname} that a handle may claim")
    return type(name if name.isidentifier() else base.__name__, (base,), {"__module__": "submission"})


# The methods of a torch.autograd.Function a test may call on the class itself.
_FUNCTION_METHODS = ("apply", "forward", "backward", "setup_context", "jvp", "vjp")


def function_class(name: str, executor: Any, ident: int) -> type:
    """The stand-in for the executor's ``torch.autograd.Function`` subclass ``ident``: a class
    named ``name``, derived from ``torch.autograd.Function`` (so ``issubclass`` holds, the
    executor's word), whose ``apply``, ``forward``, ``backward``, ``setup_context``, ``jvp`` and
    ``vjp`` are the executor's class's, called there (trusted side)."""
    import torch

    def there(method: str):
        def call(*args: Any, **kwargs: Any) -> Any:
            return executor.call(ident, args, kwargs, method=method)

        call.__name__ = call.__qualname__ = method
        return staticmethod(call)

    namespace = {"__module__": "submission", **{method: there(method) for method in _FUNCTION_METHODS}}
    return type(name if name.isidentifier() else "Function", (torch.autograd.Function,), namespace)
