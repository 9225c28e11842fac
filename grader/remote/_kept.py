"""A test's optimizer or scheduler, kept in step on both sides once the submission was given it.

An object the wire cannot carry is pickled for the executor (``grader.remote._client``). One
with a ``state_dict`` and a ``load_state_dict`` (an optimizer, a scheduler) is *kept* from then
on: the executor holds its copy under an id, a later call passes that same copy, and around each
call each side sends the other the state of every kept object that changed on its side since
they last agreed. So a scheduler the submission builds on the test's optimizer sets the learning
rates the test reads after each ``scheduler.step()``, and a learning rate the test sets is the
one the scheduler sees. A class of the tests deriving from one (a GradScaler that records the
calls made to it) is kept with the plain data it adds (``own_data``). An optimizer's step hooks
(a test's spies), which pickling leaves out, go as callbacks, and those the test adds or removes
later follow at the next call. (Around a callback only mirrors and the RNG are agreed, not these.)

``Kept`` is one side's record; each side compares states it encoded itself, so what the other
side sent is believed only as data loaded with ``load_state_dict`` and as plain data.
"""

from __future__ import annotations

import types
import weakref
from collections import OrderedDict, defaultdict
from functools import lru_cache
from typing import Any

from grader.remote import _wire as wire
from grader.remote._mirror import is_plain_data, set_data


def is_kept_kind(obj: Any) -> bool:
    """Whether ``obj``, sent as a copy, is kept in step from then on (a module is mirrored
    instead, a class or a generator is not)."""
    import torch

    if isinstance(obj, (torch.nn.Module, type, torch.Generator)):
        return False
    return callable(getattr(obj, "state_dict", None)) and callable(getattr(obj, "load_state_dict", None))


def step_hooks(obj: Any) -> tuple[list, list]:
    """An optimizer's step pre-hooks and post-hooks (none for anything else)."""
    import torch

    if not isinstance(obj, torch.optim.Optimizer):
        return [], []
    return list(obj._optimizer_step_pre_hooks.values()), list(obj._optimizer_step_post_hooks.values())


def hooks_key(obj: Any) -> tuple:
    """What tells whether ``obj``'s step hooks changed."""
    pre, post = step_hooks(obj)
    return tuple(map(id, pre)), tuple(map(id, post))


def register_step_hooks(obj: Any, pre: list, post: list) -> list:
    """Register the stand-ins of a test's step hooks on the executor's copy; their handles."""
    return [*(obj.register_step_pre_hook(h) for h in pre), *(obj.register_step_post_hook(h) for h in post)]


def _is_torch_class(klass: type) -> bool:
    return klass.__module__ == "torch" or klass.__module__.startswith("torch.")


def _code_names(value: Any) -> set[str]:
    """The names a function (or a property's getter, a method wrapped by a decorator) and the
    functions it defines use: the attributes it reads and sets among them."""
    fn = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
    codes = []
    while fn is not None:
        if isinstance(getattr(fn, "__code__", None), types.CodeType):
            codes.append(fn.__code__)
        fn = getattr(fn, "__wrapped__", None)
    names: set[str] = set()
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


@lru_cache(maxsize=64)
def _torch_names(klass: type) -> frozenset[str]:
    """Every name the methods of ``klass``'s torch base classes use."""
    return frozenset().union(*(_code_names(v) for base in klass.__mro__ if _is_torch_class(base)
                               for v in vars(base).values()))


def _own_name(klass: type, name: str) -> bool:
    return not name.startswith("_") and name not in _torch_names(klass)


def own_data(obj: Any) -> dict[str, Any]:
    """The data a class of the tests adds to a torch optimizer, scheduler or scaler it derives
    from (a spy's list of the calls it saw): the public attributes no method of the torch
    classes uses, whose values are plain data without tensors. Empty for torch's own classes."""
    klass = type(obj)
    if _is_torch_class(klass):
        return {}
    own = [(k, v) for k, v in getattr(obj, "__dict__", {}).items() if _own_name(klass, k)]
    return {name: value for name, value in own if is_plain_data(value)}


def kept_state(obj: Any) -> list:
    """What keeps ``obj`` in step: its state dict and ``own_data``."""
    return [obj.state_dict(), own_data(obj)]


def load_kept_state(obj: Any, state: Any) -> bool:
    """Make ``obj`` what ``kept_state`` said of its counterpart (``WireError`` for other data);
    a list or dict of its own data changes in place, so a reference the test holds sees it.
    Whether its own data changed (on the trusted side, the executor's word decided it)."""
    state_dict, data = wire.as_list(state, 2)
    if not isinstance(state_dict, dict) or not isinstance(data, dict):
        raise wire.WireError("a kept object's state that is not a state dict and its data")
    obj.load_state_dict(state_dict)
    if _is_torch_class(type(obj)):
        return False
    before, changed = own_data(obj), False
    for name, value in data.items():
        if type(name) is str and _own_name(type(obj), name) and before.get(name) != value:
            set_data(obj, name, value)
            changed = True
    return changed


class _Fingerprint:
    """What tells whether a kept object's state changed, as cheaply as one walk of it allows:
    its shape and plain values (a float by its ``repr``, each value with its type, so ``1``,
    ``1.0`` and ``True`` differ), each tensor's kind, dtype, shape, place and requires_grad, and
    a copy of the tensors' bits (those on the CPU side by side in one buffer). A value of any
    other kind is held as its encoding. Two are equal where ``load_state_dict`` of one's state
    would leave the other's as it is."""

    __slots__ = ("plain", "buffer", "others")

    def __init__(self, state: Any) -> None:
        import torch

        plain: list = []
        on_cpu: list = []
        others: list = []
        stack = [(state, 0)]
        while stack:
            value, depth = stack.pop()
            if depth > wire.MAX_DEPTH:
                raise wire.WireError(f"a value nested more than {wire.MAX_DEPTH} levels deep")
            kind = type(value)
            if value is None or kind in (bool, int, str):
                plain.append((kind, value))
            elif kind is float:
                plain.append((kind, repr(value)))
            elif kind in (tuple, list):
                plain.append((kind, len(value)))
                stack.extend((v, depth + 1) for v in reversed(value))
            elif kind in (dict, OrderedDict) or (kind is defaultdict and value.default_factory is dict):
                plain.append((kind, len(value)))
                for k, v in reversed(value.items()):
                    stack.extend(((v, depth + 1), (k, depth + 1)))
            elif isinstance(value, torch.Tensor) and value.layout == torch.strided and not value.is_quantized:
                t = value.detach()
                plain.append((kind, t.dtype, t.shape, t.device, value.requires_grad))
                if t.device.type == "cpu":
                    on_cpu.append(wire.flat_bytes(t))
                else:
                    others.append(t.clone())
            else:  # as the wire carries it (or refuses it)
                blobs: list[bytes] = []
                plain.append((repr(wire.encode(value, blobs, seen=depth)), *blobs))
        self.plain = tuple(plain)
        self.buffer = torch.cat(on_cpu) if on_cpu else None
        self.others = others

    def __eq__(self, other: object) -> bool:
        import torch

        from grader.remote._sync import same_bits

        if not isinstance(other, _Fingerprint) or self.plain != other.plain:
            return False
        if (self.buffer is None) != (other.buffer is None):
            return False
        if self.buffer is not None and not torch.equal(self.buffer, other.buffer):
            return False
        return all(same_bits(a, b) for a, b in zip(self.others, other.others, strict=True))

    __hash__ = None  # type: ignore[assignment]


class Kept:
    """The kept objects of one side, each under the executor's id, with the state both sides
    last agreed on. The trusted side holds its originals weakly (the test owns them); the
    executor holds its copies in its objects."""

    def __init__(self, *, weak: bool) -> None:
        self.weak = weak
        self.objects: dict[int, Any] = {}  # ident -> the object (a weakref on the trusted side)
        self.agreed: dict[int, _Fingerprint] = {}
        self.by_identity: dict[int, int] = {}  # id(object) -> ident (trusted side)
        # The step hooks the executor has: their key here, their handles there.
        self.hooks: dict[int, Any] = {}

    def add(self, ident: int, obj: Any, hooks: Any) -> None:
        """Keep ``obj`` under ``ident``; its state now is what both sides agree on, and the
        executor has the step hooks ``hooks`` (a ``hooks_key`` here, their handles there)."""
        self.objects[ident] = weakref.ref(obj) if self.weak else obj
        self.by_identity[id(obj)] = ident
        self.agreed[ident] = self._key(obj)
        self.hooks[ident] = hooks

    def hook_changes(self, callback_id) -> list:
        """``[ident, pre, post]`` for each kept optimizer whose step hooks changed since they
        were sent, as the ids ``callback_id`` gives them (trusted side)."""
        entries = []
        for ident in list(self.objects):
            obj = self._object(ident)
            if obj is not None and (key := hooks_key(obj)) != self.hooks[ident]:
                self.hooks[ident] = key
                entries.append([ident, *([callback_id(h) for h in fns] for fns in step_hooks(obj))])
        return entries

    def rehook(self, entries: Any, stub) -> None:
        """The kept optimizers' step hooks are the stand-ins ``stub`` makes of the callback
        ids in ``entries`` (``hook_changes``) from now on (executor side)."""
        for entry in wire.as_list(entries):
            ident, pre, post = wire.as_list(entry, 3)
            obj = self._object(ident) if type(ident) is int else None
            if obj is None:
                continue
            for handle in self.hooks.get(ident, []):
                handle.remove()
            self.hooks[ident] = register_step_hooks(
                obj, [stub({"i": cid, "name": "step_pre_hook"}) for cid in wire.as_list(pre)],
                [stub({"i": cid, "name": "step_post_hook"}) for cid in wire.as_list(post)])

    def ident_of(self, obj: Any) -> int | None:
        """The id ``obj`` is kept under, if it is."""
        ident = self.by_identity.get(id(obj))
        if ident is None or self._object(ident) is not obj:
            return None
        return ident

    def original(self, ident: int) -> Any:
        """The object kept under ``ident``, or None."""
        return self._object(ident)

    def forget(self, ident: int) -> None:
        obj = self._object(ident)
        self.objects.pop(ident, None)
        self.agreed.pop(ident, None)
        self.hooks.pop(ident, None)
        if obj is not None and self.by_identity.get(id(obj)) == ident:
            del self.by_identity[id(obj)]

    def changes(self, out: list[bytes]) -> list:
        """``[ident, state]`` for each kept object whose state changed since both sides agreed
        (appending its tensors to ``out``); they agree on it from now on."""
        entries = []
        for ident in list(self.objects):
            obj = self._object(ident)
            if obj is None:
                self.forget(ident)
                continue
            state = kept_state(obj)
            key = _Fingerprint(state)
            if key != self.agreed[ident]:
                self.agreed[ident] = key
                blobs: list[bytes] = []
                entries.append([ident, wire.renumbered(wire.encode(state, blobs), len(out))])
                out.extend(blobs)
        return entries

    def take(self, entries: Any, blobs: list[bytes]) -> bool:
        """Load the states the other side sent (``changes``) into the kept objects; one of an
        object this side no longer keeps is skipped (it was freed meanwhile). Whether the own
        data of any changed (``load_kept_state``)."""
        data_changed = False
        for entry in wire.as_list(entries):
            ident, node = wire.as_list(entry, 2)
            obj = self._object(ident) if type(ident) is int else None
            if obj is None:
                continue
            data_changed |= load_kept_state(obj, wire.decode(node, blobs))
            self.agreed[ident] = self._key(obj)
        return data_changed

    def _object(self, ident: int) -> Any:
        obj = self.objects.get(ident)
        return obj() if self.weak and obj is not None else obj

    @staticmethod
    def _key(obj: Any) -> _Fingerprint:
        return _Fingerprint(kept_state(obj))
