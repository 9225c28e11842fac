"""The wire between the trusted test process and the executor: frames and the value codec.

A frame is a JSON header (the message, values encoded as ``encode`` makes them) followed by the
binary blobs it refers to (tensor and array data, bytes). Nothing here unpickles or evaluates
what it reads: ``decode`` accepts only the kinds listed in ``_KINDS``, checks every dtype, shape
and blob length, and rebuilds plain tensors and arrays from raw bytes. That is what makes the
trusted side safe to read whatever the executor (which runs submitted code) sends: the worst a
frame can be is a wrong value or a ``WireError``.

Imports torch and numpy lazily: the codec of a TensorFlow-free, torch-free run never needs them.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import os
import socket
import struct
import sys
import time
import types
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

# The device types whose autocast a call carries: the executor runs it with each on as the test has it.
AUTOCAST_DEVICES = ("cpu", "cuda")
MAX_DEPTH = 64  # the deepest a value sent may nest
MAX_FRAME = 1 << 30  # a gibibyte: larger than any exercise's tensors, small enough to refuse garbage
_READ_AT_ONCE = 1 << 20  # a frame's parts up to this size in all are read in one read
_LENGTH = struct.Struct("!Q")


# The most characters of an exception's message that cross (and of an object's repr).
MAX_MESSAGE = 16_000


def bounded_message(text: str) -> str:
    """``text`` in at most about ``MAX_MESSAGE`` characters: a longer one keeps its start and its
    end (TensorFlow's "Graph execution error" names what failed after a traceback of where each
    op was made, which is longer in the submission's process than in the tests')."""
    if len(text) <= MAX_MESSAGE:
        return text
    return f"{text[:MAX_MESSAGE // 2]}\n[...]\n{text[-(MAX_MESSAGE // 2):]}"


class WireError(Exception):
    """A frame that is not one this protocol writes (torn, oversized, or of an unknown shape)."""


class PeerGone(WireError):
    """The other end closed the connection (the process ended)."""


# ----------------------------------------------------------------------------- frames


def send(sock: socket.socket, header: dict, blobs: list[bytes]) -> None:
    head = json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    sock.sendall(b"".join([_LENGTH.pack(len(head)), head, *blobs]))


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    if n > MAX_FRAME:
        raise WireError(f"a frame part of {n} bytes is over the limit")
    view = memoryview(bytearray(n))
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise PeerGone("the connection closed")
        got += k
    return view.obj  # type: ignore[return-value]


# How long a process waiting for the other's next frame polls for it before it sleeps. The two
# processes hand each request and reply back and forth, and the one that waits usually gets its
# answer within a fraction of a millisecond; a process that sleeps is woken on a CPU that may
# have gone idle (on a virtual machine, the host wakes that CPU first), which cost about a
# third of a bare call's round trip here (``bench/bench_crossing.py``). Polling yields the CPU
# to any other process that wants it.
POLL_BEFORE_SLEEP_S = 0.0005


def _poll_until_readable(sock: socket.socket, seconds: float) -> None:
    """Return once ``sock`` has something to read (or its peer closed), or after ``seconds``."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        try:
            sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return
        except BlockingIOError:
            os.sched_yield()


def receive(sock: socket.socket) -> tuple[dict, list[bytes]]:
    _poll_until_readable(sock, POLL_BEFORE_SLEEP_S)
    (length,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
    try:
        header = json.loads(_read_exactly(sock, length))
        sizes = header.pop("blobs")
        if not (isinstance(header, dict) and isinstance(sizes, list)
                and all(isinstance(s, int) and 0 <= s <= MAX_FRAME for s in sizes)):
            raise WireError("a malformed frame header")
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise WireError(f"a malformed frame header: {type(exc).__name__}") from None
    total = sum(sizes)
    if total > _READ_AT_ONCE:  # one at a time: no second copy of them all held at once
        return header, [bytes(_read_exactly(sock, s)) for s in sizes]
    # The parts read at once: a reply of many small tensors is one read, not one per tensor.
    data, blobs, at = memoryview(_read_exactly(sock, total)), [], 0
    for size in sizes:
        blobs.append(bytes(data[at:at + size]))
        at += size
    return header, blobs


# ----------------------------------------------------------------------------- values


# The iterable kinds a test may hand a function that takes "an iterable", rebuilt as that kind.
_SEQUENCES = {
    "tuple": tuple, "list": list, "iter": iter, "set": set, "frozenset": frozenset,
    "dict_keys": lambda items: dict.fromkeys(items).keys(),
    "dict_values": lambda items: dict(enumerate(items)).values(),
    "dict_items": lambda items: dict(items).items(),
}
SEQUENCE_KINDS = {set: "set", frozenset: "frozenset", type({}.keys()): "dict_keys",
                  type({}.values()): "dict_values", type({}.items()): "dict_items"}


# The default factories a defaultdict crosses with (an optimizer's ``state`` has dict's).
_FACTORIES: dict[str, Any] = {"none": None, "dict": dict, "list": list, "set": set, "int": int, "float": float}
_FACTORY_NAMES = {factory: name for name, factory in _FACTORIES.items()}

# The values whose identity a call's result keeps: one the submission returns as it got it (a
# string or number inside a batch) is the test's very object (``{"k": "atom"}`` nodes number them).
ATOMS = (str, bytes, int, float, complex)

# The nodes of what lives in one process, which ``decode``'s caller turns into values.
_HANDLED = frozenset({"handle", "ref", "arg", "copy", "module", "shared", "callback", "keras", "view", "live",
                      "exception", "proxy", "tf_shared", "keras_copy", "tf_dataset"})


def encode(value: Any, blobs: list[bytes], *, opaque: Callable[[Any], dict] | None = None,
           first: Callable[[Any], dict | None] | None = None,
           instances: Callable[[Any], str | None] | None = None, seen: int = 0) -> Any:
    """``value`` as a JSON-able node, its binary parts appended to ``blobs``.

    ``first``, when given, is asked first for every value (and sub-value) and may return its node
    itself; ``instances`` names the kind of an object sent as its class and its values
    (``"namedtuple"``, ``"dataclass"``: one of a test module's classes), else None; ``opaque``
    turns a value of no kind the wire carries into a node (the executor keeps such objects and
    sends a handle). A tensor's node has ``grad`` (whether it requires grad); its data is a
    copy, contiguous, with no autograd history. Sub-values are encoded depth first, left to
    right: the order ``decode`` rebuilds them in.
    """
    if seen > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if first is not None and (node := first(value)) is not None:
        return node
    if value is None or isinstance(value, (bool, str)) or type(value) is int:
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"k": "float", "v": repr(value)}

    def again(v: Any) -> Any:
        return encode(v, blobs, opaque=opaque, first=first, instances=instances, seen=seen + 1)

    if type(value) is complex:
        return {"k": "complex", "v": [repr(value.real), repr(value.imag)]}
    if type(value) is bytes:
        blobs.append(value)
        return {"k": "bytes", "blob": len(blobs) - 1}
    if type(value) in (tuple, list):
        return {"k": type(value).__name__, "v": [again(v) for v in value]}
    if type(value) in SEQUENCE_KINDS:  # a set, a dict's keys: by value, both ways
        return {"k": SEQUENCE_KINDS[type(value)], "v": [again(v) for v in value]}
    if type(value) in (dict, OrderedDict):  # an OrderedDict: a module's state_dict()
        return {"k": "dict" if type(value) is dict else "ordered_dict",
                "v": [[again(k), again(v)] for k, v in value.items()]}
    if type(value) is defaultdict and value.default_factory in _FACTORY_NAMES:
        return {"k": "defaultdict", "f": _FACTORY_NAMES[value.default_factory],
                "v": [[again(k), again(v)] for k, v in value.items()]}
    if instances is not None and (kind := instances(value)) is not None:
        return encode_instance(value, kind, again)
    if type(value) is slice:
        return {"k": "slice", "v": [again(value.start), again(value.stop), again(value.step)]}
    if value is Ellipsis:
        return {"k": "ellipsis"}
    torch = _torch_if_loaded()
    if torch is not None:
        if isinstance(value, torch.Tensor):
            if type(value) not in (torch.Tensor, torch.nn.Parameter):
                # A subclass travels as the plain tensor of its data: what its methods say of
                # itself (its device, its comparisons) stays behind.
                with torch._C.DisableTorchFunctionSubclass():
                    value = torch.Tensor.as_subclass(value, torch.Tensor)
            return _encode_tensor(torch, value, blobs)
        if type(value) is torch.dtype:
            return {"k": "dtype", "v": str(value).removeprefix("torch.")}
        if type(value) is torch.device:
            return {"k": "device", "v": str(value)}
        if type(value) is torch.Size:
            return {"k": "size", "v": [int(d) for d in value]}
    if _of_tensorflow(value) and (node := encode_tf(value, blobs)) is not None:
        return node
    if is_library_function(value):
        return {"k": "function", "module": value.__module__, "qualname": value.__qualname__}
    np = _numpy_if_loaded()
    if np is not None and type(value) is np.ndarray and array_dtype_carried(value.dtype):
        return _encode_array(value, blobs)
    if np is not None and isinstance(value, np.generic) and array_dtype_carried(value.dtype):
        blobs.append(value.tobytes())  # a NumPy scalar (np.float32(0.5)): as its own type
        return {"k": "npscalar", "dtype": value.dtype.str, "blob": len(blobs) - 1}
    if opaque is not None:
        return opaque(value)
    raise WireError(f"a {type(value).__name__} cannot be sent to the other process")


# Where a function crosses by name, as itself on the other side: Keras's and TensorFlow's
# (a layer's activation); torch's cross pickled by name where the trusted side sends them.
_LIBRARIES = ("keras", "tensorflow")


def is_library_function(value: Any) -> bool:
    """Whether ``value`` is a plain function of Keras or TensorFlow that its module names
    (``keras.activations.relu``; not one made inside a call, a closure of theirs)."""
    return (isinstance(value, types.FunctionType) and str(value.__module__).split(".")[0] in _LIBRARIES
            and "<" not in value.__qualname__)


def _library_function(node: dict) -> Any:
    """The function a ``function`` node names (``WireError`` for a name of no such function)."""
    module, qualname = _str(node["module"]), _str(node["qualname"])
    if module.split(".")[0] not in _LIBRARIES or module.split(".")[0] not in sys.modules or "<" in qualname:
        raise WireError(f"no function {module}.{qualname} that crosses by name")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        raise WireError(f"no function {module}.{qualname}") from None
    if not is_library_function(found) or found.__module__ != module or found.__qualname__ != qualname:
        raise WireError(f"no function {module}.{qualname} that crosses by name")
    return found


def encode_instance(value: Any, kind: str, again: Callable[[Any], Any]) -> dict:
    """The node of ``value``, a namedtuple or dataclass instance (``kind``): its class by name
    and its values (a dataclass's attributes), each as ``again`` encodes it."""
    klass = type(value)
    items = [again(v) for v in value] if kind == "namedtuple" else [[k, again(v)] for k, v in vars(value).items()]
    return {"k": "instance", "kind": kind, "module": klass.__module__, "qualname": klass.__qualname__, "v": items}


def renumbered(node: Any, offset: int) -> Any:
    """``node``, encoded with blobs of its own, as it reads once those blobs are appended to a
    list ``offset`` long."""
    if type(node) is list:
        return [renumbered(n, offset) for n in node]
    if type(node) is dict:
        moved = {k: renumbered(v, offset) for k, v in node.items()}
        if type(node.get("blob")) is int:
            moved["blob"] = node["blob"] + offset
        return moved
    return node


def _torch_if_loaded():
    return sys.modules.get("torch")


def _numpy_if_loaded():
    return sys.modules.get("numpy")


# ----------------------------------------------------------------------------- TensorFlow values

# The dtypes whose tensors and variables cross as raw data; string tensors cross element by
# element; resources and variants do not cross (a handle stands for them).
TF_DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                       "float16", "bfloat16", "float32", "float64", "complex64", "complex128"})
TF_CARRIED = TF_DTYPES | {"string"}  # the dtypes whose tensors cross at all
TF_KINDS = frozenset({"tf_tensor", "tf_variable", "tf_dtype", "tf_spec"})


def _of_tensorflow(value: Any) -> bool:
    """Whether ``value``'s class is one of TensorFlow's (a test of a string, so that the values of a
    PyTorch exercise pay next to nothing for TensorFlow's being loaded beside torch)."""
    return type(value).__module__.startswith("tensorflow.")


def is_tf_value(value: Any) -> bool:
    """Whether ``value`` is an eager TensorFlow tensor or a ``tf.Variable``."""
    if not _of_tensorflow(value):
        return False
    import tensorflow as tf

    return isinstance(value, (tf.Tensor, tf.Variable)) and not tf.is_symbolic_tensor(value)


def is_tf_output(value: Any) -> bool:
    """Whether ``value`` is an eager tensor (not a variable) whose values cross as raw data: what
    both sides number among a call's results for a test's tape (``grader.remote._tfgrad``)."""
    return is_tf_value(value) and value.dtype.name in TF_DTYPES and not isinstance(
        value, sys.modules["tensorflow"].Variable)


def is_tf_source(value: Any) -> bool:
    """Whether ``value`` is an eager tensor or a ``tf.Variable`` of a floating or complex dtype
    that crosses as raw data: what both sides number among a callback's arguments for the
    submission's tape (``grader.remote._tfgrad``)."""
    return is_tf_value(value) and value.dtype.name in TF_DTYPES and (value.dtype.is_floating or value.dtype.is_complex)


def encode_tf(value: Any, blobs: list[bytes]) -> dict | None:
    """The node of an eager tensor or a ``tf.Variable`` of a dtype in ``TF_DTYPES`` (its data, dtype,
    shape and device; a variable's name and whether it is trainable too), of a ``tf.DType``, of a
    ``tf.TensorSpec`` of a carried dtype (its shape, known or not, dtype and name); None for
    anything else."""
    import tensorflow as tf

    if type(value) is tf.DType:
        return {"k": "tf_dtype", "v": value.name} if value.name in TF_CARRIED else None
    if type(value) is tf.TensorSpec:
        if value.dtype.name not in TF_CARRIED:
            return None
        shape = None if value.shape.rank is None else [None if d is None else int(d) for d in value.shape.as_list()]
        return {"k": "tf_spec", "shape": shape, "dtype": value.dtype.name,
                "name": None if value.name is None else str(value.name)[:200]}
    if isinstance(value, tf.Variable):
        if value.dtype.name not in TF_DTYPES:
            return None
        return {"k": "tf_variable", "v": _encode_tf_tensor(value.read_value(), value.device, blobs),
                "trainable": bool(value.trainable), "name": value.name.split(":")[0][:200]}
    if isinstance(value, tf.Tensor) and not tf.is_symbolic_tensor(value):
        if value.dtype.name in TF_DTYPES:
            return _encode_tf_tensor(value, value.device, blobs)
        if value.dtype == tf.string:  # each element its own bytes (a scalar's numpy() is bytes itself)
            import numpy as np

            elements = np.asarray(value.numpy(), dtype=object).reshape(-1).tolist()
            strings = [blobs.append(b) or len(blobs) - 1 for b in elements]
            return {"k": "tf_tensor", "dtype": "string", "shape": [int(d) for d in value.shape],
                    "device": value.device[:200], "v": strings}
    return None


def _encode_tf_tensor(t, device: str, blobs: list[bytes]) -> dict:
    import numpy as np

    blobs.append(np.ascontiguousarray(t.numpy()).tobytes())
    return {"k": "tf_tensor", "dtype": t.dtype.name, "shape": [int(d) for d in t.shape], "device": device[:200],
            "blob": len(blobs) - 1}


def _decode_tf_strings(node: dict, blobs: list[bytes]):
    import numpy as np
    import tensorflow as tf

    shape = [dim(d) for d in as_list(node["shape"])]
    strings = [blob_at(blobs, b) for b in as_list(node["v"])]
    if len(strings) != math.prod(shape):
        raise WireError(f"{len(strings)} strings for a string tensor of {math.prod(shape)} elements")
    return tf.constant(np.array(strings, dtype=object).reshape(shape), dtype=tf.string)


def _tf_dtype(name: Any):
    import tensorflow as tf

    if _str(name) not in TF_CARRIED:
        raise WireError(f"a TensorFlow dtype {name!r} that is not carried")
    return tf.as_dtype(name)


def _tf_device(name: Any) -> str | None:
    """The device a tensor node names, as ``tf.device`` takes it, when this process has one of
    that name other than the first CPU (else None: TensorFlow's default placement, that CPU)."""
    name = _str(name)
    if name.endswith("/device:CPU:0") or not name:
        return None
    return _device_present(name)


@functools.lru_cache(maxsize=64)
def _device_present(name: str) -> str | None:
    import tensorflow as tf

    try:
        spec = tf.DeviceSpec.from_string(name)
    except ValueError:
        raise WireError("a malformed TensorFlow device") from None
    if spec.device_type is None or spec.device_index is None:
        return None
    short = f"/{spec.device_type}:{spec.device_index}"
    present = {f"/{d.device_type}:{tf.DeviceSpec.from_string(d.name).device_index}"
               for d in tf.config.list_logical_devices()}  # fixed once the runtime started
    return short if short in present else None


def decode_tf(node: dict, blobs: list[bytes]) -> Any:
    """The tensor, variable or dtype a ``TF_KINDS`` node holds (``encode_tf``), checked."""
    import numpy as np
    import tensorflow as tf

    kind = node["k"]
    if kind == "tf_dtype":
        return _tf_dtype(node["v"])
    if kind == "tf_spec":
        shape = node["shape"]
        if shape is not None:
            shape = [None if d is None else dim(d) for d in as_list(shape)]
        name = node["name"]
        return tf.TensorSpec(shape, _tf_dtype(node["dtype"]), name=None if name is None else _str(name))
    if kind == "tf_variable":
        value = decode_tf(node["v"], blobs)
        if not isinstance(value, tf.Tensor):
            raise WireError("a variable whose value is not a tensor")
        device = _tf_device(node["v"]["device"])
        name = _str(node["name"])
        with tf.device(device):
            return tf.Variable(value, trainable=node["trainable"] is True, name=name or None)
    if node["dtype"] == "string":
        made = _decode_tf_strings(node, blobs)
    else:
        dtype = _tf_dtype(node["dtype"])
        shape = [dim(d) for d in as_list(node["shape"])]
        data = blob_at(blobs, node["blob"])
        numpy_dtype = np.dtype(dtype.as_numpy_dtype)
        if len(data) != math.prod(shape) * numpy_dtype.itemsize:
            raise WireError(f"tensor data of {len(data)} bytes for {math.prod(shape)} {dtype.name} elements")
        made = tf.constant(np.frombuffer(bytearray(data), dtype=numpy_dtype).reshape(shape), dtype=dtype)
    if (device := _tf_device(node["device"])) is not None:
        with tf.device(device):
            made = tf.identity(made)  # placed there, as the tensor sent was
    return made


def array_dtype_carried(dtype) -> bool:
    """Whether an array of this NumPy dtype crosses as data: booleans and numbers (never
    objects, strings or records)."""
    return dtype.kind in "biufc" and not dtype.hasobject and dtype.fields is None and not dtype.subdtype


def array_dtype(name: Any):
    """The NumPy dtype a node names (``WireError`` unless ``array_dtype_carried``)."""
    import numpy as np

    try:
        dtype = np.dtype(_str(name))
    except TypeError:
        raise WireError(f"an unknown array dtype {name!r}") from None
    if not array_dtype_carried(dtype):
        raise WireError(f"an array dtype {name!r} that is not carried")
    return dtype


def _encode_array(a, blobs: list[bytes]) -> dict:
    import numpy as np

    blobs.append(np.ascontiguousarray(a).tobytes())
    return {"k": "ndarray", "dtype": a.dtype.str, "shape": list(a.shape), "blob": len(blobs) - 1,
            "ro": not a.flags.writeable}


def _decode_array(node: dict, blobs: list[bytes]):
    import numpy as np

    dtype = array_dtype(node["dtype"])
    shape = [dim(d) for d in as_list(node["shape"])]
    data = blob_at(blobs, node["blob"])
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise WireError(f"array data of {len(data)} bytes for {math.prod(shape)} {dtype} elements")
    out = np.frombuffer(bytearray(data), dtype=dtype).reshape(shape)
    if node.get("ro") is True:
        out.flags.writeable = False
    return out


def encode_tensor(t, blobs: list[bytes], *, with_grad: bool = False) -> dict:
    """A plain tensor's node; with ``with_grad``, its ``.grad`` travels in it (``"g"``)."""
    import torch

    node = _encode_tensor(torch, t, blobs)
    if with_grad and t.is_leaf and t.grad is not None:
        node["g"] = _encode_tensor(torch, t.grad, blobs)
    return node


def tensor_fields(t) -> dict:
    """A tensor's node without its data: dtype, shape, device and what autograd knows of it."""
    import torch

    if t.layout != torch.strided or t.is_quantized:
        raise WireError(f"a {t.layout} tensor cannot be sent to the other process")
    node = {"k": "tensor", "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
            "device": str(t.device), "grad": bool(t.requires_grad),
            "parameter": type(t) is torch.nn.Parameter}
    if t.is_inference():
        node["inference"] = True
    if t.grad_fn is not None:  # a result of autograd, not a leaf: one there too
        node["leaf"] = False
    return node


def _encode_tensor(torch, t, blobs: list[bytes]) -> dict:
    node = tensor_fields(t)
    if t.device.type != "meta":
        data = flat_bytes(t.detach().to("cpu"))
        blobs.append(data.numpy().tobytes() if data.numel() else b"")
        node["blob"] = len(blobs) - 1
    return node


def flat_bytes(t):
    """A CPU tensor's data as one row of bytes (a view where its layout allows, else a copy)."""
    import torch

    if t.dtype.is_complex:
        t = torch.view_as_real(t)
    flat = t.reshape(-1)
    if not flat.numel():
        return torch.empty(0, dtype=torch.uint8, device=t.device)
    if flat.stride(0) != 1:  # a one-element tensor may keep any stride
        flat = torch.empty_like(flat, memory_format=torch.contiguous_format).copy_(flat)
    return flat.view(torch.uint8)


def decode(node: Any, blobs: list[bytes], *, handle: Callable[[dict], Any] | None = None,
           grads: bool = False, tensors: list | None = None, atoms: list | None = None,
           classes: Callable[[str, str, str], type] | None = None, tf_tensors: list | None = None,
           tf_sources: list | None = None, dicts: list | None = None, seen: int = 0) -> Any:
    """The value ``encode`` made ``node``; raises ``WireError`` for anything else. ``handle``
    turns the node of a handle (``{"k": "handle"}``, ``{"k": "ref"}``, ``{"k": "arg"}``) into a
    value. Tensors require grad as their node says only with ``grads`` (the executor's side:
    the trusted side connects gradients itself); each tensor made is appended to ``tensors``,
    and each numbered value (an ``{"k": "atom"}`` node) to ``atoms``; each TensorFlow tensor made
    (not numbered) to ``tf_tensors``, and each of a floating or complex dtype, variables too, to
    ``tf_sources`` (what a tape there may differentiate against); each plain dict made to
    ``dicts``, in the order ``encode`` met them (an outer dict before those it holds).
    ``classes`` gives the class of an instance's node (module, qualified name, kind), or raises
    ``WireError``; the instance is made without running its class's code (no ``__init__``, no
    ``__setattr__``)."""
    if seen > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} levels deep")
    if node is None or isinstance(node, (bool, str)) or (type(node) is int) or (
            type(node) is float and math.isfinite(node)):
        return node
    if type(node) is not dict or not isinstance(node.get("k"), str):
        raise WireError(f"an unknown value node {str(node)[:80]!r}")

    def again(v: Any) -> Any:
        return decode(v, blobs, handle=handle, grads=grads, tensors=tensors, atoms=atoms, classes=classes,
                      tf_tensors=tf_tensors, tf_sources=tf_sources, dicts=dicts, seen=seen + 1)

    kind = node["k"]
    try:
        if kind in _SEQUENCES:
            return _SEQUENCES[kind]([again(v) for v in as_list(node["v"])])
        if kind in ("dict", "defaultdict", "ordered_dict"):
            slot = None
            if dicts is not None and kind == "dict":
                slot = len(dicts)
                dicts.append(None)  # numbered before the dicts it holds, as encode meets them
            items = {again(k): again(v) for k, v in (_pair(p) for p in as_list(node["v"]))}
            if slot is not None:
                dicts[slot] = items
            if kind == "ordered_dict":
                return OrderedDict(items)
            return items if kind == "dict" else defaultdict(_FACTORIES[_str(node["f"])], items)
        if kind == "atom":
            value = decode(node["v"], blobs, seen=seen + 1)
            if type(value) not in ATOMS and not is_tf_value(value):
                raise WireError("a numbered value that is not a string, bytes, a number or a TensorFlow tensor")
            if atoms is not None:
                atoms.append(value)
            return value
        if kind == "instance":
            return _instance(node, classes, again, atoms)
        if kind == "float":
            value = float(_str(node["v"]))
            if math.isfinite(value):
                raise WireError("a non-finite float node holding a finite value")
            return value
        if kind == "complex":
            re, im = (_float_text(v) for v in as_list(node["v"], 2))
            return complex(re, im)
        if kind == "bytes":
            return blob_at(blobs, node["blob"])
        if kind == "slice":
            return slice(*(again(v) for v in as_list(node["v"], 3)))
        if kind == "ellipsis":
            return Ellipsis
        if kind == "function":
            return _library_function(node)
        if kind == "tensor":
            tensor = _decode_tensor(node, blobs, grads)
            if tensors is not None:
                tensors.append(tensor)
            return tensor
        if kind == "ndarray":
            return _decode_array(node, blobs)
        if kind == "npscalar":
            dtype = array_dtype(node["dtype"])
            data = blob_at(blobs, node["blob"])
            if len(data) != dtype.itemsize:
                raise WireError(f"a {dtype} scalar of {len(data)} bytes")
            import numpy as np

            return np.frombuffer(data, dtype=dtype)[0]
        if kind in TF_KINDS:
            if "tensorflow" not in sys.modules:  # never sent to a process that has no TensorFlow test
                raise WireError("a TensorFlow value where TensorFlow is not loaded")
            value = decode_tf(node, blobs)
            if tf_tensors is not None and is_tf_output(value):
                tf_tensors.append(value)
            if tf_sources is not None and is_tf_source(value):
                tf_sources.append(value)
            return value
        if kind == "dtype":
            return _dtype(node["v"])
        if kind == "device":
            import torch

            return torch.device(_str(node["v"]))
        if kind == "size":
            import torch

            return torch.Size([dim(d) for d in as_list(node["v"])])
        if kind in _HANDLED and handle is not None:
            return handle(node)
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as exc:
        raise WireError(f"a malformed {kind} node: {exc}") from None
    raise WireError(f"an unknown value kind {kind!r}")


def _instance(node: dict, classes: Callable[[str, str, str], type] | None, again: Callable[[Any], Any],
              atoms: list | None) -> Any:
    if classes is None:
        raise WireError("an instance of a class where none is taken")
    kind = _str(node["kind"])
    klass = classes(_str(node["module"]), _str(node["qualname"]), kind)
    items = as_list(node["v"])
    slot = None
    if atoms is not None:  # numbered before its values, as it was sent
        slot = len(atoms)
        atoms.append(None)
    if kind == "namedtuple":
        if len(items) != len(klass._fields):
            raise WireError(f"a {klass.__name__} of {len(items)} values")
        made = tuple.__new__(klass, [again(v) for v in items])
    else:
        made = object.__new__(klass)
        for key, value in (_pair(p) for p in items):
            if type(key) is not str or key.startswith("__"):
                raise WireError("an attribute name that is not one")
            made.__dict__[key] = again(value)
    if slot is not None:
        atoms[slot] = made
    return made


def as_list(value: Any, length: int | None = None) -> list:
    """``value`` if it is a list (of ``length`` items, when given); else ``WireError``."""
    if type(value) is not list or (length is not None and len(value) != length):
        raise WireError("a malformed list")
    return value


def _pair(value: Any) -> tuple[Any, Any]:
    k, v = as_list(value, 2)
    return k, v


def _str(value: Any) -> str:
    if type(value) is not str or len(value) > 200:
        raise WireError("a malformed string field")
    return value


def _float_text(value: Any) -> float:
    return float(_str(value))


def dim(value: Any) -> int:
    """A dimension a node gave (``WireError`` for anything but an int of at least 0)."""
    if type(value) is not int or value < 0:
        raise WireError("a malformed dimension")
    return value


def blob_at(blobs: list[bytes], index: Any) -> bytes:
    """``blobs[index]`` for an index a node gave (``WireError`` for no such blob)."""
    if type(index) is not int or not 0 <= index < len(blobs):
        raise WireError("a reference to a missing blob")
    return blobs[index]


def _dtype(name: Any):
    import torch

    dtype = getattr(torch, _str(name), None)
    if type(dtype) is not torch.dtype:
        raise WireError(f"an unknown dtype {name!r}")
    return dtype


def decode_tensor(node: Any, blobs: list[bytes], *, grads: bool = False):
    """A tensor node's tensor (``WireError`` for any other node)."""
    if type(node) is not dict or node.get("k") != "tensor":
        raise WireError("a tensor node that is not one")
    try:
        return _decode_tensor(node, blobs, grads)
    except WireError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, OverflowError) as exc:
        raise WireError(f"a malformed tensor node: {exc}") from None


def _decode_tensor(node: dict, blobs: list[bytes], grads: bool):
    import torch

    dtype = _dtype(node["dtype"])
    shape = [dim(d) for d in as_list(node["shape"])]
    device = torch.device(_str(node["device"]))
    if device.type == "meta":
        out = torch.empty(shape, dtype=dtype, device="meta")
    else:
        data = blob_at(blobs, node["blob"])
        numel = math.prod(shape)
        if len(data) != numel * dtype.itemsize:
            raise WireError(f"tensor data of {len(data)} bytes for {numel} {dtype} elements")
        if not numel:
            out = torch.empty(shape, dtype=dtype)
        else:  # set_, not a reshape: a tensor of its own, not a view (a view's in-place ops are refused
            # where autograd made it, an autograd function's output)
            flat = torch.frombuffer(bytearray(data), dtype=torch.uint8)
            out = torch.empty(0, dtype=dtype).set_(flat.untyped_storage(), 0, shape)
        if device.type != "cpu":
            out = out.to(device)
    return finish_tensor(out, node, blobs, grads=grads)


def finish_tensor(out, node: dict, blobs: list[bytes], *, grads: bool):
    """``out``, the data of a tensor node, as the node says: an inference tensor, a parameter,
    requiring grad (only with ``grads``), with autograd history, with its ``.grad``."""
    import torch

    if node.get("inference") is True:  # made under torch.inference_mode(), never requiring grad
        with torch.inference_mode():
            return out.clone()
    wants_grad = grads and node.get("grad") is True
    if node.get("parameter") is True:
        out = torch.nn.Parameter(out, requires_grad=wants_grad)
    elif wants_grad:
        out.requires_grad_()
        if node.get("leaf") is False:
            with torch.enable_grad():  # decoded inside an autograd function's forward, say
                out = out.clone()
    if grads and "g" in node:
        out.grad = _decode_tensor(node["g"], blobs, False)
    return out
