"""Modules the submission builds, held by the trusted side as *mirrors*.

A ``torch.nn.Module`` that reaches the trusted side from the executor (returned, read as an
attribute, listed) comes back as a mirror: a module of the same shape, whose parameters and
buffers are real tensors here, shared with the executor's module (each pair has one id, and
``grader.remote._sync`` carries changes both ways around every call). Each submodule is mirrored
too, one mirror per module however often it is reached, so tied weights and shared blocks stay
tied.

A submodule of exactly a ``torch.nn`` class, with no hooks and plain attributes (an
``nn.Linear``, an ``nn.Sequential``, an ``nn.BatchNorm1d``), is rebuilt as an instance of that very
class, whose ``forward`` is torch's own, run here. Any other (a class of the submission, or a
``torch.nn`` module with hooks or methods set on it) is an instance of a class made here that
derives from its nearest ``torch.nn`` class (``isinstance`` holds) and calls its ``forward``, and
any attribute or method not found here, in the executor. So the test can train, inspect, save and
load a mirror as it would the module, and a gradient reaches its parameters here.

``Described`` is the executor's side: which modules it described and their tensors, by id, and
what changed since the trusted side last saw them. ``build`` is the trusted side's.
"""

from __future__ import annotations

import contextlib
import functools
import types
import weakref
from functools import cache
from typing import Any

from grader.remote import _wire as wire
from grader.remote._memory import shared_view_fields, view_of_shared
from grader.remote._sync import Snapshots

# The tensors of an RNN that torch lists again from its parameters' names: rebuilt, not sent.
_REBUILT = frozenset({"_flat_weights"})

# The hooks of a module's call (its forward, and the backward of what the call made).
CALL_HOOKS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
               "_backward_pre_hooks")

# A mirror here -> (its executor, its id there).
OWNER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@cache
def _left_out() -> frozenset[str]:
    """The attributes of a module that are not its own data: torch's internals, and what is
    rebuilt (``_REBUILT``)."""
    import torch

    return frozenset(torch.nn.Module().__dict__) | _REBUILT


def builtin_base(cls: type) -> type:
    """The nearest class among ``cls``'s bases (itself included) that ``torch.nn`` exports."""
    import torch

    for klass in cls.__mro__:
        if getattr(torch.nn, klass.__name__, None) is klass:
            return klass
    return torch.nn.Module


def _plain(value: Any, depth: int = 0, *, tensors: bool = True) -> bool:
    """Whether ``value`` is plain data: atoms, dtypes, devices and sizes, and tuples, lists and
    dicts of plain data (``tensors``: tensors too), at most 8 deep."""
    import torch

    if depth > 8:
        return False
    if value is None or type(value) in (bool, int, float, complex, str, torch.dtype, torch.device, torch.Size):
        return True
    if type(value) in (tuple, list):
        return all(_plain(v, depth + 1, tensors=tensors) for v in value)
    if type(value) is dict:
        return all(_plain(k, depth + 1, tensors=tensors) and _plain(v, depth + 1, tensors=tensors)
                   for k, v in value.items())
    return tensors and type(value) in (torch.Tensor, torch.nn.Parameter)


def _attributes(module) -> list[tuple[str, Any]]:
    from grader.remote._callbacks import stub_id

    left_out = _left_out()
    return [(k, v) for k, v in module.__dict__.items()  # a forward that runs on the trusted side: not one
            if k not in left_out and not k.startswith("__") and stub_id(v) is None]


# What calls ``_apply``: a class that overrides it (to tie weights again after a move, say) has
# these run in the executor too.
_APPLYING = ("_apply", "to", "cpu", "cuda", "double", "float", "half", "bfloat16", "type", "to_empty")


def overrides(module, base: type) -> list[str]:
    """The methods of ``base`` (a ``torch.nn`` class) that ``module``'s class defines again, or
    that are set on ``module`` itself (``bn.train = MethodType(...)``)."""
    import torch

    from grader.remote._callbacks import stub_id

    names = {k for k, v in module.__dict__.items()
             if callable(v) and stub_id(v) is None and callable(getattr(base, k, None))}
    for klass in type(module).__mro__:
        if klass is base or getattr(torch.nn, klass.__name__, None) is klass:
            break
        names.update(k for k in vars(klass) if k not in ("forward", "__init__") and not k.startswith("__")
                     and callable(getattr(base, k, None)))
    if "_apply" in names:
        names.update(_APPLYING)
    return sorted(names)


@cache
def _hook_tables() -> tuple[str, ...]:
    """The names of a module's tables of hooks (forward, backward, state dict)."""
    import torch

    return tuple(k for k, v in torch.nn.Module().__dict__.items() if k.endswith("_hooks") and isinstance(v, dict))


# The tables of a module's forward hooks whose entries of the test's the copy there holds as
# ``Placeholder``s.
_PLACEHELD = ("_forward_hooks", "_forward_pre_hooks")


class Placeholder:
    """A forward hook the test put on its own module, in the table of that module's copy in the
    executor, so the submission sees it there; when it goes (the submission cleared the table),
    the test's hook goes too. Called there, it calls the test's hook (``hook``, a callback) when
    the module's forward runs there as part of another's (a model the submission hooked runs
    there whole); it does nothing when the test's side fires the hook itself: the module's
    forward runs on the test's side (``Mirrors._forward_here``), or the test called the module
    directly."""

    __slots__ = ("key", "hook", "described")

    def __init__(self, key: int, hook: Any, described: Described) -> None:
        self.key, self.hook, self.described = key, hook, described

    def __call__(self, module: Any, *args: Any, **kwargs: Any) -> Any:
        from grader.remote._callbacks import stub_id

        if stub_id(module.__dict__.get("forward")) is not None or module is self.described.called_directly():
            return None
        return self.hook(module, *args, **kwargs)


def _hooked(module) -> bool:
    """Whether ``module`` has a hook (``Placeholder``s of the test's hooks aside)."""
    found = module.__dict__
    return any(any(not isinstance(hook, Placeholder) for hook in table.values())
               for name in _hook_tables() if (table := found.get(name)))


def _hooked_inside(module) -> bool:
    """Whether ``module`` or a module inside it has a hook: then the whole of it runs where the
    hook is, so that what its later layers do (an in-place ReLU) reaches what the hook kept."""
    return any(_hooked(m) for m in module.modules())


def _local_attributes(module, base: type, attributes: list[tuple[str, Any]] | None = None,
                      hooked: bool | None = None) -> list[tuple[str, Any]] | None:
    """``module``'s attributes (``_attributes``, given or read) if it runs its ``forward`` on the
    trusted side: exactly a ``torch.nn`` class (not ``nn.Module`` itself, whose forward is a
    subclass's), no hooks (``_hooked``, given or read), no method set on the instance, every
    attribute plain data; else None."""
    if not _unhooked_torch_class(module, base, hooked):
        return None
    attributes = _attributes(module) if attributes is None else attributes
    return attributes if all(_plain(v) for _, v in attributes) else None


def _unhooked_torch_class(module, base: type, hooked: bool | None = None) -> bool:
    """Whether ``module`` is exactly a ``torch.nn`` class (``base``; not ``nn.Module`` itself)
    with no hooks (``_hooked``, given or read): whether its ``forward`` may run on the trusted
    side, where its attributes are plain data."""
    import torch

    return type(module) is base and base is not torch.nn.Module and not (_hooked(module) if hooked is None else hooked)


def _signature(module, attributes: list[tuple[str, Any]] | None = None, hooked: bool | None = None,
               reprs: dict[str, str] | None = None) -> tuple:
    """What a mirror's shape depends on: its class, where its forward runs, its tensors and
    submodules (by identity) and, for one run here, its attributes, each as its ``repr``
    (``_attributes``, ``_hooked`` and ``_data`` of the attributes, given where the caller made
    them already)."""
    local = None
    base = builtin_base(type(module))
    if reprs is not None and len(reprs) == len(attributes):  # every attribute plain data, its repr made
        if _unhooked_torch_class(module, base, hooked):
            local = tuple(reprs.items())
    elif (attributes := _local_attributes(module, base, attributes, hooked)) is not None:
        local = tuple((k, repr(v)) for k, v in attributes)
    return (type(module), local is not None,
            tuple((k, id(v)) for k, v in module._parameters.items()),
            tuple((k, id(v), k in module._non_persistent_buffers_set) for k, v in module._buffers.items()),
            tuple((k, id(v)) for k, v in module._modules.items()),
            local)


class Described:
    """The executor's record of the modules it described to the trusted side and their tensors:
    each has the id the trusted side knows it by, and a snapshot taken when both sides last
    agreed, to tell what a call changed (``changes``)."""

    def __init__(self, objects: dict[int, Any], new_id) -> None:
        self.objects, self.new_id = objects, new_id
        self.modules: dict[int, Any] = {}
        self.module_ids: dict[int, int] = {}
        self.signatures: dict[int, tuple] = {}
        self.training: dict[int, bool] = {}
        self.tensors: dict[int, Any] = {}
        self.tensor_ids: dict[int, int] = {}
        self.snapshots = Snapshots()
        self.own: dict[int, type] = {}  # a module the trusted side sent -> the class it came as
        self.data: dict[int, dict[str, str]] = {}  # such a module -> its plain data attributes (``_data``)
        # A module -> its attributes and their _data, where no attribute can change inside (``_data_of``)
        self.frozen: dict[int, tuple[list, dict[str, str]] | None] = {}
        self.hooks: dict[int, list] = {}  # a shared tensor -> the handles of the test's hooks on it
        self.hooks_fire = True  # off while a product is computed for the trusted side, where they fire
        self.theirs: dict[int, tuple] = {}  # a shared tensor -> the keys of the submission's hooks on it, as sent
        self.inside: dict[int, bool] = {}  # a module the trusted side sent -> whether a hook inside makes it run here
        # (module id, table) -> {the placeholder's key here: the test's hook's key there}
        self.placeheld: dict[tuple[int, str], dict[int, int]] = {}
        self.called: list = []  # the modules the trusted side is calling directly, innermost last

    def adopt(self, module, module_ids: list, tensor_ids: list) -> None:
        """``module``, a copy of the trusted side's, is mirrored from now on: the trusted side
        gave ids to it, its submodules and tensors (``None`` for those mirrored already), in
        ``modules()`` and ``module_tensors`` order."""
        from grader.remote._sync import module_tensors

        modules, tensors = list(module.modules()), module_tensors(module)
        if len(modules) != len(module_ids) or len(tensors) != len(tensor_ids):
            raise wire.WireError("ids for a module that is not the one sent")
        for m, ident in zip(modules, module_ids):
            if ident is not None:
                self.modules[ident], self.module_ids[id(m)], self.objects[ident] = m, ident, m
                self.own[ident] = type(m)  # its hook tables came empty (client._Pickler)
                self.signatures[ident], self.training[ident] = _signature(m), bool(m.training)
                self.data[ident] = _data(_attributes(m))
        for t, tid in zip(tensors, tensor_ids):
            if tid is not None:
                self.tensors[tid], self.tensor_ids[id(t)] = t, tid
                self.snapshots.add(tid, t)

    def forget(self, ident: int) -> None:
        module = self.modules.pop(ident, None)
        if module is not None:
            self.module_ids.pop(id(module), None)
        tensor = self.tensors.pop(ident, None)
        if tensor is not None:
            self.tensor_ids.pop(id(tensor), None)
        for table in (self.signatures, self.training, self.own, self.data, self.frozen, self.hooks, self.theirs,
                      self.inside):
            table.pop(ident, None)
        for name in _PLACEHELD:
            self.placeheld.pop((ident, name), None)
        self.snapshots.drop(ident)

    def tensor_id(self, t) -> int | None:
        tid = self.tensor_ids.get(id(t))
        return tid if tid is not None and self.tensors.get(tid) is t else None

    def share(self, t) -> int:
        """Share ``t``, an argument tensor the submission kept from a call, under a new id (the
        trusted side shares its original under it: ``Mirrors.share``); snapshotted with the
        others before the next call."""
        tid = self.new_id()
        self.tensors[tid], self.tensor_ids[id(t)] = t, tid
        return tid

    def shared_node(self, t, out: list[bytes], *, parameter: bool = False) -> dict:
        """A shared tensor's node (its data too: the trusted side may no longer hold it).
        ``parameter``: it is a module's parameter, a ``Parameter`` there (a loaded TorchScript
        module's parameters are plain tensors here)."""
        tid = self.tensor_id(t)
        if tid is None:
            tid = self.new_id()
            self.tensors[tid], self.tensor_ids[id(t)] = t, tid
        value = wire.encode_tensor(t, out, with_grad=True)
        if parameter:
            value["parameter"] = True
        return {"k": "shared", "t": tid, "v": value}

    def shared_view_node(self, t, out: list[bytes]) -> dict | None:
        """The node of ``t`` as a view of a shared tensor (``t._base``), which the trusted side
        makes of its own (with ``t``'s data, for when it no longer holds that tensor), or None."""
        base = t._base
        tid = None if base is None else self.tensor_id(base)
        fields = None if tid is None else shared_view_fields(t, base)
        if fields is None:
            return None
        return {"k": "shared", "t": tid, "view": fields, "v": wire.encode_tensor(t, out)}

    def describe(self, root, out: list[bytes]) -> dict:
        """``root``'s node: each module in it once, by its id, parents before children."""
        nodes: list = []
        index: dict[int, int] = {}

        def visit(module) -> int:
            if id(module) in index:
                return index[id(module)]
            index[id(module)] = len(nodes)
            nodes.append(None)
            ident = self.module_ids.get(id(module))
            if ident is None or self.modules.get(ident) is not module:
                ident = self.new_id()
                self.modules[ident], self.module_ids[id(module)] = module, ident
                self.objects[ident] = module
            nodes[index[id(module)]] = self._node(module, ident, visit, out)
            return index[id(module)]

        visit(root)
        return {"k": "module", "nodes": nodes}

    def _node(self, module, ident: int, visit, out: list[bytes]) -> dict:
        base = builtin_base(type(module))
        inside = ident in self.own and _hooked_inside(module)
        if ident in self.own:
            self.inside[ident] = inside
        local = _local_attributes(module, base) is not None and not inside
        self.signatures[ident] = _signature(module)
        self.training[ident] = bool(module.training)
        # The trusted side's own module, still of its class, with no hook and no method set on
        # it: it runs there.
        remote = overrides(module, base)
        own = self.own.get(ident) is type(module) and not inside and not _hooked(module) and not remote
        transient = module._non_persistent_buffers_set
        return {"id": ident, "type": type(module).__qualname__[:200], "base": base.__name__, "local": local,
                "own": own, "overrides": [] if local or own else remote,
                "training": bool(module.training),
                "params": [[k, None if v is None else self.shared_node(v, out, parameter=True)]
                           for k, v in module._parameters.items()],
                "buffers": [[k, None if v is None else self.shared_node(v, out), k not in transient]
                            for k, v in module._buffers.items()],
                "children": [[k, None if v is None else visit(v)] for k, v in module._modules.items()],
                "attributes": [[k, wire.encode(v, out)] for k, v in _attributes(module)] if local and not own else []}

    # ------------------------------------------------------------------ around a call

    def take(self, push: Any, blobs: list[bytes], stub=None) -> None:
        """Make the described modules and tensors what the trusted side's mirrors are (its
        ``Mirrors.push``; ``stub`` makes the stand-in of a module's forward that is to run
        there), then snapshot them."""
        from grader.remote._sync import apply_change

        # An id this very request freed is skipped: the trusted side listed its object's changes,
        # then the object died (a garbage collection) before the request went out.
        if push is not None:
            for entry in wire.as_list(push["placed"]):
                ident, kind, name, tid, node = wire.as_list(entry, 5)
                if node is None:
                    t = self.tensors.get(tid)
                else:
                    t = wire.decode_tensor(node, blobs, grads=True)
                    self.tensors[tid], self.tensor_ids[id(t)] = t, tid
                module = self.modules.get(ident)
                if module is None or t is None:
                    continue
                (module._parameters if kind == "param" else module._buffers)[name] = t
                self.signatures[ident] = _signature(module)
            for entry in wire.as_list(push["tensors"]):
                tid, change = wire.as_list(entry, 2)
                if tid in self.tensors:
                    apply_change(self.tensors[tid], change, blobs, quiet=True)
            for entry in wire.as_list(push["training"]):
                ident, flag = wire.as_list(entry, 2)
                if ident in self.modules:
                    self.training[ident] = flag = flag is True
                    if self.modules[ident].training is not flag:  # torch's __setattr__ is slow
                        self.modules[ident].training = flag
            for entry in wire.as_list(push["forward_here"]):
                ident, cid = wire.as_list(entry, 2)
                if ident in self.modules:
                    self.modules[ident].forward = stub({"i": cid, "name": "forward"})
                    self.signatures[ident] = _signature(self.modules[ident])
            for ident in wire.as_list(push.get("forward_there", [])):
                if ident in self.modules:  # its own forward again: the trusted side calls it here
                    self.modules[ident].__dict__.pop("forward", None)
                    self.signatures[ident] = _signature(self.modules[ident])
            for entry in wire.as_list(push.get("module_hooks", [])):
                ident, name, hooks = wire.as_list(entry, 3)
                if ident in self.modules and name in _PLACEHELD:
                    self._placehold(ident, name, [wire.as_list(h, 4) for h in wire.as_list(hooks)], stub)
            for entry in wire.as_list(push.get("hooks", [])):
                tid, cids = wire.as_list(entry, 2)
                if tid in self.tensors:
                    self._hook(tid, [stub({"i": cid, "name": "hook"}) for cid in wire.as_list(cids)])
        self.snapshots.take(self.tensors.items())

    def called_directly(self) -> Any:
        """The module the trusted side is calling directly (its own hooks fired there), if any."""
        return self.called[-1] if self.called else None

    def _placehold(self, ident: int, name: str, hooks: list, stub) -> None:
        """The test's hooks in table ``name`` of its module ``ident`` are ``hooks`` (``[key,
        callback id, with kwargs, always called]`` each): the copy's table holds a
        ``Placeholder`` for each, and no other."""
        from torch.utils.hooks import RemovableHandle

        module = self.modules[ident]
        table = getattr(module, name)
        flags = [getattr(module, f"{name}_with_kwargs", {}), getattr(module, f"{name}_always_called", {})]
        keys = [key for key, *_ in hooks]
        held = self.placeheld.setdefault((ident, name), {})
        for here, key in list(held.items()):
            if key not in keys:
                for found in (table, *flags):
                    found.pop(here, None)
                del held[here]
        for key, cid, with_kwargs, always in hooks:
            if key not in held.values():
                here = RemovableHandle(table).id
                table[here] = Placeholder(key, stub({"i": cid, "name": "hook"}), self)
                for found, flag in zip(flags, (with_kwargs, always)):
                    if flag is True:
                        found[here] = True
                held[here] = key

    def _placeholders_gone(self) -> list:
        """``[module id, table, the test's hook's key]`` of each placeholder the submission took
        out of its table since: the test's hook goes too (``Mirrors.take``)."""
        gone = []
        for (ident, name), held in list(self.placeheld.items()):
            module = self.modules.get(ident)
            table = getattr(module, name) if module is not None else {}
            for here, key in list(held.items()):
                if not isinstance(table.get(here), Placeholder):
                    del held[here]
                    gone.append([ident, name, key])
        return gone

    def _hook(self, tid: int, stubs: list) -> None:
        """The test's gradient hooks on shared tensor ``tid`` are ``stubs`` now."""
        for handle in self.hooks.pop(tid, []):
            handle.remove()

        def firing(fn):
            return lambda grad: fn(grad) if self.hooks_fire else None

        self.hooks[tid] = [self.tensors[tid].register_hook(firing(fn)) for fn in stubs]

    def _their_hooks(self, tid: int, t) -> list:
        """``(key, hook)`` of each gradient hook on shared tensor ``tid`` that is the
        submission's (not one of the test's, ``_hook``)."""
        tests = {handle.id for handle in self.hooks.get(tid, [])}
        return [(key, fn) for key, fn in (t._backward_hooks or {}).items() if key not in tests]

    def _their_hook_changes(self) -> list:
        """``[tid, [handle node, ...]]`` for each shared tensor whose gradient hooks of the
        submission's are not those last sent: the trusted side calls each, as a handle, when its
        backward computes that tensor's gradient (``Mirrors.take``)."""
        entries = []
        for tid, t in list(self.tensors.items()):
            found = self._their_hooks(tid, t)
            if tuple(key for key, _ in found) != self.theirs.get(tid, ()):
                self.theirs[tid] = tuple(key for key, _ in found)
                nodes = []
                for _, fn in found:
                    ident = self.new_id()
                    self.objects[ident] = fn
                    nodes.append({"k": "handle", "id": ident, "type": type(fn).__qualname__[:200], "callable": True})
                entries.append([tid, nodes])
        return entries

    @contextlib.contextmanager
    def their_hooks_silenced(self):
        """The submission's gradient hooks on shared tensors do not fire inside: a product for
        the trusted side, which accumulates those gradients and calls the hooks there."""
        silenced = []
        for tid, t in list(self.tensors.items()):
            if t._backward_hooks and (found := self._their_hooks(tid, t)):
                silenced.append((t._backward_hooks, dict(t._backward_hooks)))
                for key, _ in found:
                    del t._backward_hooks[key]
        try:
            yield
        finally:
            for hooks, saved in silenced:
                hooks.clear()
                hooks.update(saved)

    def _data_of(self, ident: int, attributes: list[tuple[str, Any]]) -> dict[str, str]:
        """``_data(attributes)`` of module ``ident``: made again only where an attribute is not the
        very value it was, or one was a container that may have changed inside."""
        held = self.frozen.get(ident)
        if held is not None and len(held[0]) == len(attributes) and all(
                k == k0 and v is v0 for (k, v), (k0, v0) in zip(attributes, held[0])):
            return held[1]
        now = _data(attributes)
        self.frozen[ident] = (attributes, now) if all(_frozen(v) for _, v in attributes) else None
        return now

    def changes(self, out: list[bytes]) -> dict:
        """What changed since ``take``: tensors, training flags, modules whose shape changed
        (described again), and the submission's gradient hooks on shared tensors."""
        snapshots = self.snapshots
        tensors = [[tid, snapshots.describe(tid, t, out)] for tid, t
                   in snapshots.differing([(tid, t) for tid, t in list(self.tensors.items()) if tid in snapshots])]
        training, reshaped, data = [], [], []
        hooked = {id(m) for m in self.modules.values() if _hooked(m)}
        for ident, module in list(self.modules.items()):
            if ident not in self.modules:
                continue
            attributes = _attributes(module)
            now = self._data_of(ident, attributes)
            inside = ident in self.own and bool(hooked) and any(id(m) in hooked for m in module.modules())
            if (_signature(module, attributes, id(module) in hooked, now) != self.signatures[ident]
                    or inside != self.inside.get(ident, False)):
                reshaped.append([ident, self.describe(module, out)])
            elif bool(module.training) != self.training[ident]:
                self.training[ident] = bool(module.training)
                training.append([ident, bool(module.training)])
            if ident in self.data and now != (before := self.data[ident]):
                data.append([ident, [[k, wire.encode(v, [])] for k, v in attributes
                                     if k in now and before.get(k) != now[k]]])
                self.data[ident] = now
        return {"tensors": tensors, "training": training, "reshaped": reshaped, "data": data,
                "their_hooks": self._their_hook_changes(), "placeholders_gone": self._placeholders_gone()}


# ----------------------------------------------------------------------------- the trusted side


class Mirrors:
    """The trusted side's mirrors of one executor's modules, and their shared tensors."""

    def __init__(self, executor) -> None:
        self.executor = executor
        self.modules: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.tensors: dict[int, weakref.ref] = {}
        self.tensor_ids: dict[int, int] = {}
        self.snapshots = Snapshots()
        # (module id, "param" or "buffer", name) -> the id of the tensor the executor has there
        self.slots: dict[tuple[int, str, str], int] = {}
        self.forward_here: set[int] = set()  # modules whose forward the executor calls back for
        self.forward_there: list[int] = []  # such modules that run their forward there since (sent once)
        self.hooks_sent: dict[int, tuple[int, ...]] = {}  # a shared tensor -> its hooks the executor has
        self.their_handles: dict[int, list] = {}  # a shared tensor -> the handles of the submission's hooks here
        self.hook_keys_sent: dict[tuple[int, str], tuple] = {}  # (a test's module, table) -> its hooks' keys, as sent

    def tensor_id(self, t) -> int | None:
        tid = self.tensor_ids.get(id(t))
        return tid if tid is not None and self.tensors[tid]() is t else None

    def _slots(self) -> list[tuple[tuple[int, str, str], Any]]:
        return [((ident, kind, name), t) for ident, module in list(self.modules.items())
                for kind, table in (("param", module._parameters), ("buffer", module._buffers))
                for name, t in table.items() if t is not None]

    def _agree(self) -> None:
        """Both sides now hold the same tensor in every slot of every mirror."""
        self.slots = {key: tid for key, t in self._slots() if (tid := self.tensor_id(t)) is not None}

    def module_id(self, module) -> int | None:
        owner = OWNER.get(module)
        return owner[1] if owner is not None and owner[0] is self.executor else None

    def tensor(self, tid: Any):
        """The shared tensor ``tid`` (``WireError`` when there is none)."""
        t = self.tensors[tid]() if tid in self.tensors else None
        if t is None:
            raise wire.WireError("a shared tensor that is gone")
        return t

    def live_tensors(self) -> list[tuple[int, Any]]:
        return [(tid, t) for tid, ref in list(self.tensors.items()) if (t := ref()) is not None]

    def requiring_grad(self) -> list[tuple[int, Any]]:
        return [(tid, t) for tid, t in self.live_tensors() if t.requires_grad and t.is_leaf]

    def shared(self, node: dict, blobs: list[bytes]):
        """The shared tensor a node names (taken from its data when this side holds it no more),
        or, for a node with a ``view``, that view of it (``Described.shared_view_node``): a slice
        of the series a dataset keeps is the test's series' slice. That it is a view is the
        executor's word (``Executor.evidence_taken``)."""
        tid = self.executor.own_id(node.get("t"))
        t = self.tensors[tid]() if tid in self.tensors else None
        if "view" in node:
            if t is None:  # the test dropped it: no write of its can be seen, a copy is the same
                return wire.decode_tensor(node["v"], blobs)
            self.executor.evidence_taken += 1
            return view_of_shared(t, node["view"])
        if t is None:
            t = wire.decode_tensor(node["v"], blobs, grads=True)
            self.share(t, tid)
            self.executor.keep(tid)
        return t

    def share(self, t, tid: int) -> None:
        """Share ``t``, a tensor here, under ``tid``: the id of the executor's tensor it stands
        for from now on (one the submission kept from a call: ``Described.share``)."""
        self.tensors[tid], self.tensor_ids[id(t)] = weakref.ref(t), tid
        self.snapshots.add(tid, t)
        weakref.finalize(t, self._forget_tensor, self.executor.generation, tid, id(t))

    def _register(self, module, ident: int) -> None:
        OWNER[module] = (self.executor, ident)
        self.modules[ident] = module
        weakref.finalize(module, self._forget_module, self.executor.generation, ident)

    def adopt(self, module) -> tuple[list, list]:
        """Mirror ``module``, the test's, sent to the executor as a copy: ids for it, its
        submodules and tensors (``None`` for those mirrored already), in ``modules()`` and
        ``module_tensors`` order (``Described.adopt``). A module the test hooked runs its
        forward here (``push``)."""
        from grader.remote._sync import module_tensors

        module_ids: list = []
        for m in module.modules():
            if self.module_id(m) is None:
                module_ids.append(self.executor.new_id())
                self._register(m, module_ids[-1])
            else:
                module_ids.append(None)
        tensor_ids: list = []
        for t in module_tensors(module):
            if self.tensor_id(t) is None:
                tensor_ids.append(self.executor.new_id())
                self.share(t, tensor_ids[-1])
            else:
                tensor_ids.append(None)
        for m, ident in zip(module.modules(), module_ids):
            if ident is not None:  # the copy there holds these very tensors
                for kind, table in (("param", m._parameters), ("buffer", m._buffers)):
                    self.slots.update({(ident, kind, name): self.tensor_id(t) for name, t in table.items()
                                       if t is not None})
        return module_ids, tensor_ids

    def _forget_tensor(self, generation: int, tid: int, address: int) -> None:
        if generation != self.executor.generation:
            return
        self.tensors.pop(tid, None)
        self.snapshots.drop(tid)
        self.hooks_sent.pop(tid, None)
        self.their_handles.pop(tid, None)
        if self.tensor_ids.get(address) == tid:
            del self.tensor_ids[address]
        self.executor.release(tid)

    def push(self, blobs: list[bytes]) -> dict:
        """What the test changed in the mirrors since the last call (``Described.take``): their
        tensors, training flags, and tensors it put in their place (``model.to("meta")`` makes
        new parameters)."""
        placed = []
        for (ident, kind, name), t in self._slots():
            tid, node = self.tensor_id(t), None
            if tid is None:  # a tensor the executor has not seen: sent with its data
                tid = self.executor.new_id()
                self.share(t, tid)
                node = wire.encode_tensor(t, blobs, with_grad=True)
            if self.slots.get((ident, kind, name)) != tid:  # functional_call swaps them back and forth
                placed.append([ident, kind, name, tid, node])
                self.slots[(ident, kind, name)] = tid  # there too, once the executor takes this
        tensors = [[tid, self.snapshots.describe(tid, t, blobs)]
                   for tid, t in self.snapshots.differing(self.live_tensors())]
        forward_there, self.forward_there = self.forward_there, []
        return {"placed": placed, "tensors": tensors, "forward_here": self._forward_here(),
                "forward_there": forward_there, "module_hooks": self._module_hooks(),
                "training": [[ident, m.training] for ident, m in list(self.modules.items())],
                "hooks": self._tensor_hooks()}

    def _module_hooks(self) -> list:
        """``[module id, table, [[key, callback id, with kwargs, always called], ...]]`` for each
        forward-hook table of a module of the test's own whose hooks changed since the executor
        last had them (its copy holds a ``Placeholder`` for each)."""
        entries = []
        for ident, module in list(self.modules.items()):
            if not self.executor.made_here(ident):
                continue
            for name in _PLACEHELD:
                table = getattr(module, name)
                keys = tuple((key, id(hook)) for key, hook in table.items())
                if keys != self.hook_keys_sent.get((ident, name), ()):
                    self.hook_keys_sent[(ident, name)] = keys
                    flags = [getattr(module, f"{name}_with_kwargs", {}), getattr(module, f"{name}_always_called", {})]
                    # The module holds its hooks, and outlives its copy there: held weakly here.
                    entries.append([ident, name, [[key, self.executor.callbacks.node(hook, weak=True)["i"],
                                                   key in flags[0], key in flags[1]] for key, hook in table.items()]])
        return entries

    @contextlib.contextmanager
    def hooks_silenced(self):
        """The shared tensors' gradient hooks do not fire here inside (they are the
        executor's to fire, where the gradient the product feeds is accumulated)."""
        silenced = [(hooks, dict(hooks)) for _, t in self.live_tensors() if (hooks := t._backward_hooks)]
        for hooks, _ in silenced:
            hooks.clear()
        try:
            yield
        finally:
            for hooks, saved in silenced:
                hooks.update(saved)

    def _tensor_hooks(self) -> list:
        """``[tid, callback ids]`` for each shared tensor whose gradient hooks (``register_hook``)
        changed since the executor last had them: they fire there, where its backward runs."""
        entries = []
        for tid, t in self.live_tensors():
            hooks = tuple(h for h in (t._backward_hooks or {}).values() if not isinstance(h, TheirHook))
            if tuple(map(id, hooks)) != self.hooks_sent.get(tid, ()):
                self.hooks_sent[tid] = tuple(map(id, hooks))
                # A tensor of the test's own module: its copy there lives no longer than it, and
                # it holds its hooks (so the registry need not: ``Callbacks.node``).
                weak = self.executor.made_here(tid)
                entries.append([tid, [self.executor.callbacks.node(h, weak=weak)["i"] for h in hooks]])
        return entries

    def _forward_here(self) -> list[list[int]]:
        """The modules whose forward is to run here from now on, each with its callback: those
        the test hooked (its hooks fire here), but never a mirror whose forward runs there."""
        entries = []
        for ident, module in list(self.modules.items()):
            if ident in self.forward_here or isinstance(type(module), _MirrorType):
                continue
            if _hooked(module):
                self.forward_here.add(ident)
                # The test's own module: its copy there lives no longer than it, so the callback
                # does not hold it (held, it would keep the module, and so its copy, alive).
                run = (functools.partial(_run_while_alive, weakref.ref(module)) if self.executor.made_here(ident)
                       else functools.partial(_run_here, module))
                entries.append([ident, self.executor.callbacks.node(run)["i"]])
        return entries

    def take(self, changes: Any, blobs: list[bytes]) -> None:
        """Make the mirrors what the call made their modules (``Described.changes``), then
        snapshot every shared tensor."""
        from grader.remote._sync import apply_change

        if changes is not None:
            for entry in wire.as_list(changes["tensors"]):
                tid, change = wire.as_list(entry, 2)
                t = self.tensors[tid]() if tid in self.tensors else None
                if t is not None:
                    apply_change(t, change, blobs)
            for entry in wire.as_list(changes["training"]):
                ident, flag = wire.as_list(entry, 2)
                if (module := self.modules.get(ident)) is not None:
                    module.training = flag is True
            for entry in wire.as_list(changes["reshaped"]):
                ident, node = wire.as_list(entry, 2)
                if ident in self.modules:
                    self.build(node, blobs)
            for entry in wire.as_list(changes.get("placeholders_gone", [])):
                ident, name, key = wire.as_list(entry, 3)  # the submission took a hook of the test's away
                if (module := self.modules.get(ident)) is not None and name in _PLACEHELD:
                    # What that hook records (a spy's log) is the executor's word from now on.
                    self.executor.evidence_taken += 1
                    for table in (name, f"{name}_with_kwargs", f"{name}_always_called"):
                        getattr(module, table, {}).pop(key, None)
                    sent = self.hook_keys_sent.get((ident, name), ())
                    self.hook_keys_sent[(ident, name)] = tuple(k for k in sent if k[0] != key)
            for entry in wire.as_list(changes.get("their_hooks", [])):
                tid, nodes = wire.as_list(entry, 2)
                t = self.tensors[tid]() if tid in self.tensors else None
                for handle in self.their_handles.pop(tid, []):
                    handle.remove()
                if t is not None:
                    self.their_handles[tid] = [t.register_hook(TheirHook(self.executor.decode(node, blobs)))
                                               for node in wire.as_list(nodes)]
            for entry in wire.as_list(changes["data"]):
                ident, values = wire.as_list(entry, 2)
                if (module := self.modules.get(ident)) is not None:
                    # What a module of the test's recorded there (a spy's log) is the executor's word.
                    self.executor.evidence_taken += 1
                    for name, value in (wire.as_list(v, 2) for v in wire.as_list(values)):
                        set_data(module, _name(name), wire.decode(value, []))
        self.snapshots.take(self.live_tensors())

    def build(self, node: dict, blobs: list[bytes]):
        """The mirror of a module node. A module mirrored before is that same mirror, filled
        again from the node (its module may have changed shape since)."""
        import torch

        nodes = wire.as_list(node["nodes"])
        if not nodes:
            raise wire.WireError("a module node without modules")
        made: list = []
        for n in nodes:
            ident = self.executor.own_id(n["id"])
            module = self.modules.get(ident)
            cls = type(module) if module is not None and n.get("own") is True else _class_of(n, self.executor)
            if module is not None:
                if type(module) is not cls:
                    module.__class__ = cls  # a hook set there, say: its forward now runs there
                    if ident in self.forward_here:  # and no longer here, where the test's hooks fire first
                        self.forward_here.discard(ident)
                        self.forward_there.append(ident)
            else:
                module = cls.__new__(cls)
                torch.nn.Module.__init__(module)
                self._register(module, ident)
                self.executor.keep(ident)
            made.append(module)
        for n, module in zip(nodes, made, strict=True):
            self._fill(module, n, made, blobs)
        self._agree()
        return made[0]

    def _forget_module(self, generation: int, ident: int) -> None:
        if generation == self.executor.generation:
            self.executor.release(ident)

    def _fill(self, module, n: dict, made: list, blobs: list[bytes]) -> None:
        import torch

        module._parameters.clear()
        module._buffers.clear()
        module._non_persistent_buffers_set.clear()
        module._modules.clear()
        module.training = n["training"] is True
        for entry in wire.as_list(n["params"]):
            name, value = wire.as_list(entry, 2)
            t = None if value is None else self._shared_of_kind(value, blobs)
            if t is not None and not isinstance(t, torch.nn.Parameter):
                raise wire.WireError("a parameter that is not one")
            module._parameters[_name(name)] = t
        for entry in wire.as_list(n["buffers"]):
            name, value, persistent = wire.as_list(entry, 3)
            module._buffers[_name(name)] = None if value is None else self._shared_of_kind(value, blobs)
            if persistent is not True:
                module._non_persistent_buffers_set.add(name)
        for entry in wire.as_list(n["children"]):
            name, index = wire.as_list(entry, 2)
            if index is not None and (type(index) is not int or not 0 <= index < len(made)):
                raise wire.WireError("a submodule that was not described")
            module._modules[_name(name)] = None if index is None else made[index]
        for entry in wire.as_list(n["attributes"]):
            name, value = wire.as_list(entry, 2)
            if not _name(name).startswith("__"):
                module.__dict__[name] = wire.decode(value, blobs)
        _run_there(module, [_name(k) for k in wire.as_list(n.get("overrides", []))])
        if n["local"] is True and hasattr(module, "_init_flat_weights"):
            module._init_flat_weights()

    def _shared_of_kind(self, value: Any, blobs: list[bytes]):
        if not isinstance(value, dict) or value.get("k") != "shared":
            raise wire.WireError("a module tensor that is not shared")
        return self.shared(value, blobs)


def _data(attributes: list[tuple[str, Any]]) -> dict[str, str]:
    """Of a module's attributes (``_attributes``), those that are plain data without tensors (a
    list a test's model appends to), each as its ``repr``: what tells whether one changed (as
    the JSON of its wire node would, at a fraction of the cost)."""
    return {k: repr(v) for k, v in attributes if is_plain_data(v)}


def _frozen(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` cannot change inside, nor come to hold what would make ``_data`` read it
    otherwise: anything but a list or dict, a tuple only of such values."""
    if type(value) is tuple:
        return depth < 8 and all(_frozen(v, depth + 1) for v in value)
    return type(value) not in (list, dict)


def is_plain_data(value: Any) -> bool:
    """Whether ``value`` is plain data without tensors (a list a test's object appends to), which
    crosses as itself when it changes."""
    return _plain(value, tensors=False)


def set_data(module, name: str, value: Any) -> None:
    """Set a test's module (or kept object's) attribute to what its copy's became there: a list
    or dict in place, so a reference the test holds sees it."""
    if name.startswith("__"):
        return
    current = module.__dict__.get(name)
    if type(current) is list and type(value) is list:
        current[:] = value
    elif type(current) is dict and type(value) is dict:
        current.clear()
        current.update(value)
    else:
        module.__dict__[name] = value


class TheirHook:
    """A gradient hook the submission put on a shared tensor, on the trusted side's tensor: it
    calls the submission's hook (a handle) with the gradient computed here, and its result is
    the gradient, as in one process."""

    def __init__(self, hook) -> None:
        self.hook = hook

    def __call__(self, grad):
        return self.hook(grad)


def _run_here(module, *args, **kwargs):
    """A module of the tests called from the submission: its hooks and forward, here."""
    return module(*args, **kwargs)


def _run_while_alive(ref, *args, **kwargs):
    """``_run_here`` for a module of the test's own, held weakly."""
    module = ref()
    if module is None:
        raise RuntimeError("this module of the tests was freed in the tests' process; the submission still "
                           "called it (its tests run in a process of their own)")
    return module(*args, **kwargs)


def _name(value: Any) -> str:
    if type(value) is not str or not value or len(value) > 200:
        raise wire.WireError("a malformed name")
    return value


def _class_of(n: dict, executor) -> type:
    base = base_named(n["base"])
    if n["local"] is True and base is not _torch_module():
        return base
    return mirror_class(_name(n["type"]), base, executor)


def _torch_module() -> type:
    import torch

    return torch.nn.Module


def base_named(name: Any) -> type:
    """The ``torch.nn`` module class named ``name`` (else ``WireError``)."""
    import torch

    base = getattr(torch.nn, _name(name), None)
    if not (isinstance(base, type) and issubclass(base, torch.nn.Module)):
        raise wire.WireError(f"no torch.nn module class {name!r}")
    return base


class _MirrorType(type):
    """The metaclass of mirror classes: calling one builds an instance in the executor (where
    the class came from), so ``impl.Block(4)`` and ``isinstance(m, impl.Block)`` both work."""

    def __call__(cls, *args, **kwargs):
        constructor = cls.__dict__.get("_constructor")
        if constructor is None:
            raise TypeError(f"{cls.__qualname__} is a class of the submission; build it from its module")
        return constructor(*args, **kwargs)

    def __getattr__(cls, name: str):
        """A class attribute not found here (a classmethod ``from_float``, a constant): there."""
        constructor = cls.__dict__.get("_constructor")
        if constructor is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(constructor, name)


@cache
def mirror_class(type_name: str, base: type, executor) -> type:
    """The class of the mirrors of the executor's instances of its class ``type_name``: a
    subclass of ``base``, named as that class, whose ``forward`` (and each method the class
    overrides, ``_run_there``) runs in the executor."""
    import torch

    def forward(self, *args, **kwargs):
        executor, ident = _owner(self)
        return executor.call(ident, args, kwargs)

    def __getattr__(self, name: str):
        try:
            return torch.nn.Module.__getattr__(self, name)
        except AttributeError:
            if name.startswith("_"):
                raise
            owner = OWNER.get(self)
            if owner is None:
                raise
        return owner[0].getattr(owner[1], name)

    def call_probed(self, probe, *args, **kwargs):
        """(``self(*args, **kwargs)``, the evidence of the check ``probe``), taken there, where
        the forward runs (``grader.remote._probes``)."""
        executor, ident = _owner(self)
        return executor.call(ident, args, kwargs, probe=probe)

    def __deepcopy__(self, memo):
        executor, ident = _owner(self)
        return executor.deepcopy(ident, self)

    def __reduce_ex__(self, protocol):
        raise TypeError(f"{type_name}, a module the submission built, cannot be pickled here "
                        "(its tests run in a process of their own); save its state_dict()")

    short = type_name.rsplit(".", 1)[-1] or "Module"
    return _MirrorType(short, (base,), {"forward": forward, "__getattr__": __getattr__, "__deepcopy__": __deepcopy__,
                                        "call_probed": call_probed, "__reduce_ex__": __reduce_ex__,
                                        "__module__": "submission", "__qualname__": type_name})


def _run_there(module, names: list) -> None:
    """Set, on the mirror ``module``, the methods its module overrides there, as calls there
    (``model.train()`` reaches a frozen batch norm's own ``train``); drop those set before."""
    for name in [k for k, v in module.__dict__.items() if getattr(v, "_runs_there", False)]:
        del module.__dict__[name]
    for name in names:
        if callable(getattr(type(module), name, None)):
            def method(self, *args, _name=name, **kwargs):
                executor, ident = _owner(self)
                return executor.call_method(ident, _name, args, kwargs)

            method._runs_there = True
            method.__name__ = name
            module.__dict__[name] = types.MethodType(method, module)  # a cycle: gc frees it


def _owner(module) -> tuple[Any, int]:
    owner = OWNER.get(module)
    if owner is None:
        raise RuntimeError("this module was built by the submission in a process that is gone")
    return owner
