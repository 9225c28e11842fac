"""What both processes agree on about tensors: how they list a module's, and how a change to one
travels from the process that made it to the one that holds the same tensor.

The trusted side and the executor each walk their own object and must number its tensors the
same way: a change, a gradient or an identity refers to a tensor by its place in these lists or by
the id both sides gave it (a *shared* tensor: a parameter or buffer of a module the submission
built, which the trusted side holds as a mirror, ``grader.remote._mirror``). A change is made by
``describe_change`` on one side and applied by ``apply_change`` on the other; what tells each side
that a shared tensor changed since they last agreed is its ``Snapshots``.
"""

from __future__ import annotations

import collections
from typing import Any

from grader.remote import _wire as wire


def module_tensors(module) -> list:
    """A module's parameters then buffers, each once, in ``parameters()``/``buffers()`` order."""
    return [*module.parameters(), *module.buffers()]


def grad_of(t):
    """``t.grad``, read without torch's warning for a tensor that is not a leaf and keeps none
    (a module's input in the middle of a graph, crossing as an argument)."""
    return t.grad if t.is_leaf or t.retains_grad else None


def marks(t) -> tuple:
    """What tells whether a tensor changed since: its data's version and place, its .grad and
    that grad's version (in-place clipping scales a grad without replacing it), whether it has
    autograd history and requires grad."""
    grad = grad_of(t)
    # An inference tensor keeps no version: an argument made under inference_mode() is one the
    # call could change in place only under it too, which goes unseen.
    return (None if t.is_inference() else t._version, grad, None if grad is None else grad._version,
            None if t.is_meta else t.data_ptr(), t.grad_fn is not None, t.requires_grad)


def changed(t, before: tuple) -> bool:
    """Whether ``t`` is not as its ``marks`` were ``before`` (writes through ``.data`` and a
    kernel's own updates of running statistics leave no mark: ``Snapshot`` sees those)."""
    version, grad, grad_version, pointer, had_history, required_grad = before
    return ((version is not None and t._version != version) or grad_of(t) is not grad
            or (not t.is_meta and t.data_ptr() != pointer) or (grad is not None and grad._version != grad_version)
            or (t.grad_fn is not None) != had_history or t.requires_grad != required_grad)


class Snapshot:
    """A tensor's marks and a copy of its data and .grad, to tell afterwards whether anything
    changed it, however it was written."""

    __slots__ = ("marks", "data", "grad")

    def __init__(self, t) -> None:
        self.marks = marks(t)
        self.data = t.detach().clone()
        grad = grad_of(t)
        self.grad = None if grad is None else grad.detach().clone()

    def differs(self, t) -> bool:
        return (changed(t, self.marks) or not same_bits(t.detach(), self.data)
                or ((grad := grad_of(t)) is not None and not same_bits(grad.detach(), self.grad)))


class Snapshots:
    """The snapshots of a set of shared tensors, by id, taken when both sides last agreed on
    them (``take``), to tell which changed since (``differing``) and how (``describe``). Each
    pass over the set costs one copy or one comparison of all their bytes, not one per tensor: a
    contiguous CPU tensor (and its .grad) is kept as a view of its bytes, whose copies sit side
    by side in one buffer; another (on another device, not contiguous, empty), or one shared
    after the last ``take``, has a ``Snapshot`` of its own."""

    def __init__(self) -> None:
        self.states: dict[int, tuple] = {}  # tid -> its _state when taken
        self.grads: dict[int, Any] = {}  # tid -> its .grad then (held: its _state names it by id)
        self.own: dict[int, Snapshot] = {}
        # tid -> (the views of its bytes, [(start, end)] of each in the buffer)
        self.batched: dict[int, tuple[list, list[tuple[int, int]]]] = {}
        self.views: list = []  # the views whose bytes the buffer holds, in its order
        self.buffer = None

    def __contains__(self, tid: int) -> bool:
        return tid in self.states

    def take(self, tensors) -> None:
        """Snapshot ``tensors`` (``(tid, tensor)`` pairs), forgetting every earlier snapshot."""
        import torch

        before, states = self.batched, self.states
        self.states, self.grads, self.own, self.batched, self.views = {}, {}, {}, {}, []
        at = 0
        for tid, t in tensors:
            self.states[tid] = state = _state(t)
            self.grads[tid] = grad_of(t)
            # The views of a tensor and .grad that did not move still hold their bytes.
            views = (before[tid][0] if tid in before and states[tid][_LAYOUT:] == state[_LAYOUT:]
                     else _byte_views(t))
            if views is None:
                self.own[tid] = Snapshot(t)
                continue
            spans = []
            for view in views:
                spans.append((at, at + view.numel()))
                at += view.numel()
            self.views.extend(views)
            self.batched[tid] = (views, spans)
        self.buffer = torch.cat(self.views) if self.views else None

    def add(self, tid: int, t) -> None:
        """Snapshot ``t``, shared since the last ``take``."""
        self.states[tid], self.grads[tid] = _state(t), grad_of(t)
        self.own[tid] = Snapshot(t)
        self.batched.pop(tid, None)

    def drop(self, tid: int) -> None:
        self.states.pop(tid, None)
        self.grads.pop(tid, None)
        self.own.pop(tid, None)
        self.batched.pop(tid, None)  # its views stay in the buffer's order until the next take

    def differing(self, tensors) -> list:
        """Those of ``tensors`` (``(tid, tensor)`` pairs with a snapshot) that are not as it."""
        import torch

        found, batched = [], []
        for tid, t in tensors:
            if tid in self.own:
                if self.own[tid].differs(t):
                    found.append((tid, t))
            elif _state(t) != self.states[tid]:
                found.append((tid, t))
            else:
                batched.append((tid, t))
        if batched:
            now = torch.cat(self.views)
            if not torch.equal(now, self.buffer):
                found.extend((tid, t) for tid, t in batched
                             if not all(torch.equal(now[a:b], self.buffer[a:b]) for a, b in self.batched[tid][1]))
        return found

    def describe(self, tid: int, t, out: list[bytes]) -> dict:
        """``describe_change`` of ``t``, which ``differing`` found changed, with its data only
        where that changed (a change of its .grad alone sends no data)."""
        then, now = self.states[tid], _state(t)
        marks_then = (then[0], self.grads[tid], then[2], then[_LAYOUT], then[3], then[4])
        return describe_change(t, marks_then, out, data=not self._same_data(tid, t, then, now),
                               grad=not self._same_grad(tid, t, then, now))

    def _same_data(self, tid: int, t, then: tuple, now: tuple) -> bool:
        """Whether the data of ``t``, not its .grad, is as snapshotted (its _state ``then``, and
        ``now``): the same version, place, layout, dtype and bits."""
        import torch

        if then[0] != now[0] or then[_LAYOUT:_GRAD_LAYOUT] != now[_LAYOUT:_GRAD_LAYOUT]:
            return False
        if tid in self.own:
            return same_bits(t.detach(), self.own[tid].data)
        start, end = self.batched[tid][1][0]
        return torch.equal(wire.flat_bytes(t.detach()), self.buffer[start:end])

    def _same_grad(self, tid: int, t, then: tuple, now: tuple) -> bool:
        """Whether the .grad of ``t`` is the one snapshotted, as it was (its _state ``then``, and
        ``now``): the same tensor, version, place, layout, dtype, requires_grad and bits; never
        when it has none."""
        import torch

        if now[1] is None or then[1:3] != now[1:3] or then[_GRAD_LAYOUT:] != now[_GRAD_LAYOUT:]:
            return False
        grad = grad_of(t).detach()
        if tid in self.own:
            return same_bits(grad, self.own[tid].grad)
        start, end = self.batched[tid][1][1]
        return torch.equal(wire.flat_bytes(grad), self.buffer[start:end])


# Where a _state's layout (its data's place, shape, strides, offset, dtype) and its .grad's begin.
_LAYOUT, _GRAD_LAYOUT = 5, 10


def _state(t) -> tuple:
    """What tells, compared with ``==``, whether a tensor changed other than in its bytes, and
    whether views of its bytes made before still hold them: its data's version, its .grad (by
    identity: ``Snapshots`` holds it) and that grad's version, whether it has autograd history,
    whether it requires grad; from ``_LAYOUT`` its data's place, shape, strides, offset and
    dtype; from ``_GRAD_LAYOUT`` its .grad's, and whether that requires grad."""
    grad = grad_of(t)
    state = (None if t.is_inference() else t._version, None if grad is None else id(grad),
             None if grad is None else grad._version, t.grad_fn is not None, t.requires_grad,
             None if t.is_meta else t.data_ptr(), t.shape, t.stride(), t.storage_offset(), t.dtype)
    if grad is None:
        return state
    return (*state, grad.data_ptr(), grad.shape, grad.stride(), grad.storage_offset(), grad.dtype, grad.requires_grad)


def _byte_views(t) -> list | None:
    """Views of the bytes of a contiguous, non-empty CPU tensor and of its .grad (if any, likewise),
    or None."""
    import torch

    views = []
    for x in (t, grad_of(t)):
        if x is None:
            continue
        if x.layout != torch.strided or x.device.type != "cpu" or not x.is_contiguous() or x.numel() == 0:
            return None
        views.append(wire.flat_bytes(x.detach()))  # a view: the tensor is contiguous
    return views


def same_bits(a, b) -> bool:
    """Whether two tensors hold the same values bit for bit (NaN equal to itself)."""
    import torch

    if b is None or a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.is_meta or a.numel() == 0:
        return True
    return torch.equal(wire.flat_bytes(a), wire.flat_bytes(b))


def describe_change(t, before: tuple, out: list[bytes], *, data: bool = True, grad: bool = True) -> dict:
    """How ``t`` is now, against its ``marks`` ``before`` (``apply_change`` makes the other
    side's tensor so): its data (None where ``data`` is false: it is as it was), whether that was
    replaced or changed in place, its .grad likewise (and whether it requires grad: a backward
    with ``create_graph`` made it; ``"grad_kept"`` where ``grad`` is false: it is as it was),
    whether the tensor requires grad, and whether it gained autograd history."""
    _, grad_then, _, pointer, had_history, _ = before
    now = grad_of(t)
    change = {"data": wire.encode(t.detach(), out) if data else None,
              "data_replaced": data and not t.is_meta and t.data_ptr() != pointer,
              "requires_grad": t.requires_grad, "history": t.grad_fn is not None and not had_history}
    if not grad:
        return {**change, "grad_kept": True}
    return {**change, "grad": None if now is None else wire.encode(now.detach(), out),
            "grad_replaced": now is not grad_then, "grad_requires_grad": now is not None and now.requires_grad}


def apply_change(target, change: Any, blobs: list[bytes], *, quiet: bool = False) -> None:
    """Make ``target`` what the other side's tensor became (``describe_change``): data replaced
    or changed in place as it was there (none sent: as it is), .grad likewise (a .grad that
    requires grad there requires grad here, as a leaf: its graph stays there), requires_grad,
    and autograd history when that tensor gained some. ``quiet``: data changed in place is written through ``.data``,
    leaving the version counter alone (the executor taking the test's changes: the test's
    writes, ``gradcheck``'s perturbations among them, must not spoil a graph saved there)."""
    import torch

    if not isinstance(change, dict):
        raise wire.WireError("a malformed change")
    new = wire.decode(change["data"], blobs)  # None: its data as it was
    history = new is not None and change.get("history") is True and torch.is_grad_enabled() and not target.requires_grad
    if history:
        target.copy_(new.requires_grad_())  # with grad: the history the copy gained, here too
    elif new is not None and (change.get("data_replaced") is True or new.shape != target.shape
                              or new.dtype != target.dtype or new.device != target.device):
        with torch.no_grad():
            target.data = new
    elif new is not None and (target.is_meta or not same_bits(target.detach(), new)):  # unchanged: no version bump
        with torch.no_grad():
            (target.data if quiet else target).copy_(new)
    if not history and target.is_leaf and (change.get("requires_grad") is True) != target.requires_grad:
        target.requires_grad_(change.get("requires_grad") is True)
    if change.get("grad_kept") is True:
        return
    grad = None if change["grad"] is None else wire.decode(change["grad"], blobs)
    if grad is None:
        target.grad = None
    elif (change.get("grad_replaced") is True or target.grad is None or target.grad.shape != grad.shape
          or target.grad.dtype != grad.dtype or target.grad.device != grad.device):
        target.grad = grad
    elif not same_bits(target.grad.detach(), grad):
        with torch.no_grad():
            target.grad.copy_(grad)
    wants_grad = change.get("grad_requires_grad") is True
    if target.grad is not None and target.grad.is_leaf and target.grad.requires_grad != wants_grad:
        target.grad.requires_grad_(wants_grad)


def replace_tensors(value: Any, swap: dict[int, Any]) -> Any:
    """``value`` with each tensor whose ``id`` is a key of ``swap`` replaced by its value, inside
    tuples, lists and dicts too (a call's outputs, by the autograd node's that stand for them)."""
    if id(value) in swap:
        return swap[id(value)]
    if type(value) in (tuple, list):
        return type(value)(replace_tensors(v, swap) for v in value)
    if type(value) in (dict, collections.OrderedDict):
        return type(value)((replace_tensors(k, swap), replace_tensors(v, swap)) for k, v in value.items())
    return value


def vector_jacobian(inputs: list, outputs: list, grads: list, *, create_graph: bool = False) -> list:
    """The vector-Jacobian product of a call: per input, the gradient of ``outputs`` weighted by
    ``grads`` (``None`` where unused). The graph stays for the next product; with
    ``create_graph`` the result is itself differentiable (a double backward)."""
    import contextlib

    import torch

    pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if g is not None and o.requires_grad]
    if not (pairs and inputs):
        return [None] * len(inputs)
    with torch.enable_grad() if create_graph else contextlib.nullcontext():
        return list(torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                                        retain_graph=True, create_graph=create_graph))
