"""Memory that a call's arguments share, kept shared across the two processes.

A test hands the submission tensors and NumPy arrays with a layout (strides, an offset into a
bigger buffer) and sometimes memory in common (a tensor and a view of it; an array and
``torch.from_numpy`` of it). For each call the trusted side sends each *memory* once, the bytes
of one span of address space that overlapping arguments cover, and each argument as a view
into it (``SentMemories``); the executor rebuilds the memories, and the arguments as views of
them with the same dtype, shape, strides and offsets (``ReceivedMemories``), so a layout a
submission gets wrong (``view`` of a transposed tensor, ``as_strided`` assuming unit strides)
fails there as it would in one process. A result that lies in one of those memories (a view of
an argument, ``torch.from_numpy`` of an array, ``tensor.numpy()``) goes back as a view, which
the trusted side rebuilds as a view of its own argument's memory: the test's write to either is
seen by the other, as in one process. Bytes the call wrote into a memory are written back.

That a result shares an argument's memory is the executor's word, as op counts are: a
submission can claim a view of memory it copied. A test that got such a result is marked
``checked_in_executor`` (``Executor.evidence_taken``). The claim can reach no memory but the
arguments' own: a view is bounded by its memory's span, checked here before it is made.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

from grader.remote import _wire as wire

ALIGN = 64  # each memory starts at the same address modulo this on both sides


def _numpy():
    import numpy as np

    return np


def span(obj) -> tuple[int, int, int] | None:
    """(first byte, end, address of element 0) of a CPU tensor's or NumPy array's data, or
    None for one that crosses as a copy (empty, on another device, conjugated, of a dtype the
    wire does not carry as an array)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        if (obj.device.type != "cpu" or obj.layout != torch.strided or obj.is_quantized or obj.numel() == 0
                or obj.is_conj() or obj.is_neg() or obj.is_inference()):
            return None
        start = obj.data_ptr()
        last = sum((n - 1) * s for n, s in zip(obj.shape, obj.stride(), strict=True))
        return start, start + (last + 1) * obj.element_size(), start
    np = sys.modules.get("numpy")
    if np is not None and type(obj) is np.ndarray:
        if obj.size == 0 or not wire.array_dtype_carried(obj.dtype):
            return None
        low, high = np.lib.array_utils.byte_bounds(obj)
        return low, high, obj.__array_interface__["data"][0]
    return None


def _extent(at: int, shape: list[int], strides: list[int], itemsize: int) -> tuple[int, int]:
    """The bytes ``[first, end)`` a view of element 0 at byte ``at`` covers (strides in bytes)."""
    if math.prod(shape) == 0:
        return at, at
    low = at + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    high = at + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True)) + itemsize
    return low, high


def _view_fields(node: dict) -> tuple[int, int, list[int], list[int]]:
    """A view node's (memory, byte of element 0, shape, strides as given), each checked."""
    memory, at = node["mem"], node["at"]
    if type(memory) is not int or type(at) is not int:
        raise wire.WireError("a malformed view")
    shape = [wire.dim(d) for d in wire.as_list(node["shape"])]
    strides = wire.as_list(node["stride"], len(shape))
    if not all(type(s) is int and abs(s) < 1 << 48 for s in strides):
        raise wire.WireError("a malformed view's strides")
    return memory, at, shape, strides


def shared_view_fields(t, base) -> dict | None:
    """The fields of ``t``, a view of ``base`` (a tensor both processes share: the series a
    dataset keeps, a parameter read under ``no_grad``), that the other process makes the same
    view of its own ``base`` with (``view_of_shared``): element 0's byte offset from ``base``'s,
    shape and strides. None for a view it cannot make so: one that requires grad, of another
    dtype, or reaching outside ``base``'s own bytes."""
    if t.requires_grad or t.dtype != base.dtype:
        return None
    inner, outer = span(t), span(base)
    if inner is None or outer is None or not (outer[0] <= inner[0] and inner[1] <= outer[1]):
        return None
    return {"at": inner[2] - outer[2], "shape": list(t.shape), "stride": list(t.stride())}


def view_of_shared(base, fields: Any):
    """The view ``shared_view_fields`` described, made of this process's ``base``: its element 0
    as far from ``base``'s, bounded by ``base``'s own bytes (``WireError`` for one that is not)."""
    import torch

    fields = fields if isinstance(fields, dict) else {}
    at, shape, strides = fields.get("at"), wire.as_list(fields.get("shape")), wire.as_list(fields.get("stride"))
    where = span(base)
    size = base.element_size()
    if where is None or type(at) is not int or at % size or len(strides) != len(shape) \
            or not all(type(s) is int and 0 <= s < 1 << 48 for s in strides):
        raise wire.WireError("a malformed view of a shared tensor")
    shape = [wire.dim(d) for d in shape]
    first, end, element0 = where
    low, high = _extent(element0 + at - first, shape, [s * size for s in strides], size)
    if low < 0 or high > end - first:
        raise wire.WireError("a view outside the shared tensor it names")
    with torch.no_grad():  # a view that requires no grad, as the one there (a leaf's, read so)
        return base.as_strided(shape, strides, base.storage_offset() + at // size)


class SentMemories:
    """The trusted side's memories of one call: its arguments' spans, merged where they
    overlap."""

    def __init__(self) -> None:
        self.pending: list[tuple[dict, Any, tuple[int, int, int]]] = []
        self.spans: list[list] = []  # [first, end, owners] per memory, once ``finish`` ran

    def node(self, obj, fields: dict) -> dict | None:
        """A view node for the argument ``obj`` (its ``fields``: a tensor's, with autograd's part),
        or None when it crosses as a copy. Its memory and offset are filled in by ``finish``."""
        where = span(obj)
        if where is None:
            return None
        np = _numpy() if fields["k"] == "ndarray" else None
        node = {**fields, "k": "view", "of": fields["k"]}
        if np is not None:
            node["stride"] = list(obj.strides)
        else:
            node["stride"] = list(obj.stride())
        self.pending.append((node, obj, where))
        return node

    def sent(self, index: Any) -> Any:
        """The ``index``-th argument sent as a view (the executor returned that very object)."""
        if type(index) is not int or not 0 <= index < len(self.pending):
            raise wire.WireError("a reference to an argument that was not sent")
        return self.pending[index][1]

    def finish(self, blobs: list[bytes]) -> list:
        """Merge the spans, point each node at its memory, append each memory's bytes to
        ``blobs``; the header's list of memories: ``[blob, first byte modulo ALIGN, writeable]``."""
        merged: list[list] = []
        for _node, obj, (first, end, _) in sorted(self.pending, key=lambda p: p[2][0]):
            if merged and first < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
                merged[-1][2].append(obj)
            else:
                merged.append([first, end, [obj]])
        self.spans = merged
        for node, _obj, (first, _end, element0) in self.pending:
            index = next(i for i, (low, high, _) in enumerate(merged) if low <= first < high)
            node["mem"], node["at"] = index, element0 - merged[index][0]
        entries = []
        for first, end, _owners in merged:
            blobs.append(ctypes.string_at(first, end - first))
            entries.append([len(blobs) - 1, first % ALIGN])
        return entries

    def _bytes(self, memory: int):
        """A writeable NumPy byte array over memory ``memory`` that keeps its owners alive."""
        np = _numpy()
        first, end, owners = self.spans[memory]
        holder = type("Memory", (ctypes.c_uint8 * (end - first),), {}).from_address(first)
        holder.owners = owners  # noqa: B010 - the arguments outlive every view made of them
        return np.ctypeslib.as_array(holder)

    def view(self, node: dict) -> Any:
        """A result the executor says lies in memory ``node["mem"]``, as a view of this side's
        argument memory (``WireError`` for a view outside it)."""
        memory, at, shape, strides = _view_fields(node)
        if not 0 <= memory < len(self.spans):
            raise wire.WireError("a view of a memory that was not sent")
        first, end, owners = self.spans[memory]
        if node.get("of") == "ndarray":
            dtype = wire.array_dtype(node["dtype"])
            low, high = _extent(at, shape, strides, dtype.itemsize)
            if low < 0 or high > end - first:
                raise wire.WireError("a view outside the memory it names")
            out = _numpy().ndarray(shape, dtype, buffer=self._bytes(memory), offset=at, strides=strides)
            if node.get("ro") is True:
                out.flags.writeable = False
            return out
        import torch

        dtype = wire._dtype(node["dtype"])
        size = dtype.itemsize
        if any(s < 0 for s in strides) or at % size:
            raise wire.WireError("a malformed tensor view")
        low, high = _extent(at, shape, [s * size for s in strides], size)
        if low < 0 or high > end - first:
            raise wire.WireError("a view outside the memory it names")
        storage = next((o.untyped_storage() for o in owners if isinstance(o, torch.Tensor)
                        and o.untyped_storage().data_ptr() <= first
                        and first + high <= o.untyped_storage().data_ptr() + o.untyped_storage().nbytes()),
                       None)
        if storage is None:  # the memory of arrays alone: a tensor over their bytes
            storage, base = torch.from_numpy(self._bytes(memory)).untyped_storage(), first
        else:
            base = storage.data_ptr()
        if (first + at - base) % size:
            raise wire.WireError("a tensor view out of its dtype's alignment")
        made = torch.empty(0, dtype=dtype).set_(storage, (first + at - base) // size, shape, strides)
        return wire.finish_tensor(made, node, [], grads=False)

    def write_back(self, entries: Any, blobs: list[bytes]) -> None:
        """Write the bytes the call wrote into a memory there (``ReceivedMemories.changes``)."""
        for entry in wire.as_list(entries):
            memory, blob = wire.as_list(entry, 2)
            if type(memory) is not int or not 0 <= memory < len(self.spans):
                raise wire.WireError("a change to a memory that was not sent")
            first, end, _ = self.spans[memory]
            data = wire.blob_at(blobs, blob)
            if len(data) != end - first:
                raise wire.WireError("a memory's bytes of the wrong length")
            ctypes.memmove(first, data, end - first)


class ReceivedMemories:
    """The executor's copies of a call's memories (``SentMemories.finish``)."""

    def __init__(self, entries: Any, blobs: list[bytes]) -> None:
        import torch

        self.memories: list[tuple[Any, int, int, bytes]] = []  # (bytes tensor, shift, length, sent)
        self.built: list = []  # the arguments made, in the order the trusted side sent them
        for entry in wire.as_list(entries):
            blob, alignment = wire.as_list(entry, 2)
            data = wire.blob_at(blobs, blob)
            if type(alignment) is not int or not 0 <= alignment < ALIGN:
                raise wire.WireError("a malformed memory")
            room = torch.empty(len(data) + ALIGN, dtype=torch.uint8)
            shift = (alignment - room.data_ptr()) % ALIGN
            if data:
                room[shift:shift + len(data)].copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
            self.memories.append((room, shift, len(data), data))

    def build(self, node: dict, blobs: list[bytes]) -> Any:
        """An argument's view node as a tensor (requiring grad as the node says) or an array."""
        memory, at, shape, strides = _view_fields(node)
        if not 0 <= memory < len(self.memories):
            raise wire.WireError("a view of a memory that was not sent")
        room, shift, _, _ = self.memories[memory]
        if node.get("of") == "ndarray":
            made = _numpy().ndarray(shape, wire.array_dtype(node["dtype"]), buffer=room.numpy(),
                                    offset=shift + at, strides=strides)
            if node.get("ro") is True:
                made.flags.writeable = False
        else:
            import torch

            dtype = wire._dtype(node["dtype"])
            made = torch.empty(0, dtype=dtype).set_(room.untyped_storage(), (shift + at) // dtype.itemsize,
                                                    shape, strides)
            made = wire.finish_tensor(made, node, blobs, grads=True)
        self.built.append(made)
        return made

    def index_of(self, obj) -> int | None:
        """The place among the arguments sent as views of ``obj`` itself, if it is one."""
        return next((i for i, made in enumerate(self.built) if made is obj), None)

    def locate(self, obj) -> tuple[int, int] | None:
        """(memory, byte of element 0 in it) of a result that lies wholly in one of the memories."""
        where = span(obj)
        if where is None:
            return None
        first, end, element0 = where
        for index, (room, shift, length, _) in enumerate(self.memories):
            low = room.data_ptr() + shift
            if low <= first and end <= low + length:
                return index, element0 - low
        return None

    def view_node(self, obj, memory: int, at: int) -> dict:
        """The node of a result that lies in ``memory``, its element 0 at byte ``at``."""
        import sys

        np = sys.modules.get("numpy")
        if np is not None and type(obj) is np.ndarray:
            return {"k": "view", "of": "ndarray", "mem": memory, "at": at, "dtype": obj.dtype.str,
                    "shape": list(obj.shape), "stride": list(obj.strides), "ro": not obj.flags.writeable}
        return {**wire.tensor_fields(obj), "k": "view", "of": "tensor", "mem": memory, "at": at,
                "stride": list(obj.stride())}

    def changes(self, out: list[bytes]) -> list:
        """``[memory, blob]`` for each memory the call wrote to."""
        changed = []
        for index, (room, shift, length, sent) in enumerate(self.memories):
            now = room[shift:shift + length].numpy().tobytes()
            if now != sent:
                out.append(now)
                changed.append([index, len(out) - 1])
        return changed
