"""The class an object of the executor is an instance of, as the executor says.

A handle (``grader.remote._client.RemoteObject``) to an object whose class derives from one of
torch's optimizer, scheduler or data classes, or from a class Keras or TensorFlow exports
(``keras.Sequential``, ``keras.layers.Dense``, ``keras.optimizers.Adam``, ``tf.Module``...),
carries that class's name, so that ``isinstance(scheduler, LambdaLR)``, ``isinstance(dataset,
Dataset)`` and ``isinstance(model, keras.Model)`` hold in a test as in one process. A class of the
submission's deriving from one is a class here deriving from it (``claimed_subclass``): ``issubclass``
holds, and calling it makes an instance there. Only classes of ``CLAIMABLE`` modules or of
Keras's and TensorFlow's public namespaces are named, and only those whose subclasses run no code
of theirs when made (no metaclass of their own, no ``__init_subclass__``). Like a mirrored
module's class, the claim is the executor's word: a test that reads it is marked
``checked_in_executor``. A ``torch.autograd.Function`` subclass of the submission's is a class
here too (``function_class``), one per class there, and a test that reads it is marked alike.
"""

from __future__ import annotations

import abc
import importlib
import typing
from functools import lru_cache
from typing import Any

from grader.remote import _keras
from grader.remote import _wire as wire

CLAIMABLE = ("torch.optim", "torch.utils.data")


def _claimable_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in CLAIMABLE)


def _code_free(klass: type) -> bool:
    """Whether ``klass``'s subclasses run no code of its when they are made."""
    return ("<" not in klass.__qualname__ and type(klass) in (type, abc.ABCMeta)
            and not any("__init_subclass__" in vars(k) for k in klass.__mro__ if k not in (typing.Generic, object)))


def _claimable(klass: type) -> bool:
    """Whether a handle may claim ``klass``, a class of a claimable torch module."""
    return _claimable_module(str(klass.__module__)) and _code_free(klass)


def claim(value: Any) -> list[str] | None:
    """``[module, qualified name]`` of the nearest class of ``value``'s (itself included) of a
    claimable torch module that it may claim, or None (executor side)."""
    for klass in type(value).__mro__:
        if _claimable(klass):
            return [klass.__module__, klass.__qualname__]
    return None


def keras_claims(klass: type) -> list[list[str]]:
    """``[namespace, name]`` of each class Keras or TensorFlow exports that ``klass`` derives from
    (``grader.remote._keras.public_names``) when a handle may claim them all, else none
    (executor side)."""
    names = _keras.public_names(klass)
    return names if names and all(_code_free(_keras.exported(*pair)) for pair in names) else []


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


def _keras_bases(names: Any) -> tuple[type, ...]:
    bases = _keras.exported_bases(names)
    if not all(_code_free(base) for base in bases):
        raise wire.WireError("a claim of a class whose subclasses run its code")
    return bases


def claimed_keras_class(name: str, names: Any) -> type:
    """A class named ``name`` (the executor's class), derived from each class Keras or TensorFlow
    exports that ``names`` names (``keras_claims``), for handles to report as theirs (trusted
    side; ``WireError`` for names of no such classes)."""
    bases = _keras_bases(names)
    return _class_of(name if name.isidentifier() else bases[0].__name__, bases)


@lru_cache(maxsize=256)
def _class_of(name: str, bases: tuple[type, ...]) -> type:
    return type(name, bases, {"__module__": "submission"})


def claimed_subclass(name: str, names: Any, make: Any, call_method: Any, read: Any) -> type:
    """The stand-in for a class of the submission's that derives from the classes ``names`` names
    (``keras_claims``): a class named ``name`` deriving from them, whose instances are made there
    (``make(args, kwargs)``, a handle), whose class methods ``from_config`` and the like run there
    (``call_method(name, args, kwargs)``), and whose other attributes that those classes do not
    have are read there (``read(name)``) (trusted side; ``WireError`` for names of no such
    classes)."""
    bases = _keras_bases(names)

    meta = abc.ABCMeta if any(type(base) is abc.ABCMeta for base in bases) else type

    class There(meta):
        def __getattr__(cls, attribute: str) -> Any:
            if attribute.startswith("__"):
                raise AttributeError(attribute)
            return read(attribute)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return make(args, kwargs)  # not an instance of cls: its __init__ is not run here

    def there(method: str) -> classmethod:
        return classmethod(lambda cls, *args, **kwargs: call_method(method, args, kwargs))

    namespace = {"__module__": "submission", "__new__": __new__,
                 **{method: there(method) for method in _CLASS_METHODS if any(hasattr(b, method) for b in bases)}}
    return There(name if name.isidentifier() else bases[0].__name__, bases, namespace)


# The methods of a claimed class a test may call on the submission's class itself (a Keras layer's
# ``from_config``).
_CLASS_METHODS = ("from_config",)


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
