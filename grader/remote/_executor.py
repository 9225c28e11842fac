"""The executor: the process that imports submitted code and runs it on request.

Forked from the grading child before the child reads its signing key, it holds neither the key
nor the report pipe, and the child it serves made itself undumpable, so nothing that runs here
can sign a record, reach the child's memory or change how a test decides. It answers one request
at a time over its socket (``grader.remote._wire``): load an exercise's module, read an
attribute, call a function or method, give a vector-Jacobian product of an earlier call, list an
iterable, forget objects; and, while a call runs, it calls the test's functions back
(``grader.remote._callbacks``). Objects the wire cannot carry stay here, in ``_Executor.objects``,
and the trusted side holds their ids; modules are described to it and mirrored there
(``grader.remote._mirror``).
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import gc
import io
import json
import os
import pickle
import signal
import socket
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from grader.remote import _keras, _patches, _probes, _rng, _tfgrad, _tfgraph
from grader.remote import _wire as wire
from grader.remote._callbacks import Caller, class_of_tests, instance_kind, raised_id, stub_id
from grader.remote._claims import claim, keras_claims
from grader.remote._kept import Kept, is_kept_kind, kept_state, register_step_hooks
from grader.remote._keras import KerasProxy
from grader.remote._memory import ReceivedMemories
from grader.remote._mirror import Described, builtin_base
from grader.remote._sync import (
    changed,
    describe_change,
    marks,
    module_tensors,
    vector_jacobian,
)

MAX_ITEMS = 100_000  # the most items an iteration over a remote object may list


def serve(sock: socket.socket, first_ident: int) -> None:
    """Answer requests on ``sock`` until the trusted side closes it, numbering objects from
    ``first_ident``; never returns."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL)
    owner = os.getpid()
    executor = _Executor(first_ident, sock)
    status = 0
    try:
        while True:
            try:
                header, blobs = wire.receive(sock)
            except wire.WireError:
                break
            reply, out = executor.answer(header, blobs)
            if os.getpid() != owner:
                os._exit(0)  # a copy forked by submitted code never answers for the executor
            wire.send(sock, reply, out)
    except BaseException:  # noqa: BLE001 - the trusted side sees the connection close
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


class _Executor:
    def __init__(self, first_ident: int, sock: socket.socket | None = None) -> None:
        self.objects: dict[int, Any] = {}
        self.calls: dict[int, tuple[list, list]] = {}  # call id -> (grad inputs, output tensors)
        self.next_id = first_ident
        self.impl_root: Path | None = None
        self.described = Described(self.objects, self._new_id)
        self.kept = Kept(weak=False)
        self.function_classes: dict[type, int] = {}  # a torch.autograd.Function subclass -> its id
        self.live_ids: dict[int, int] = {}  # id() of a dict read as a live copy there -> its id
        self.live_seen: dict[int, bytes] = {}  # a live dict's id -> the digest of what the trusted side has
        self.sock = sock
        self.caller = Caller(self)
        self.shared_variables: dict[int, Any] = {}  # the submission's variables the trusted side holds, by id
        self.class_keys: dict[type, int] = {}  # the classes of the handles sent, numbered (``_class_key``)
        self.keras_policy: str | None = None  # Keras's global dtype policy, as the last call was sent it
        self.keras_copies: dict[int, list[int]] = {}  # a test's Keras object's copy's id -> its variables' ids
        self.rng = _rng.Agreed()  # the random state this process and the trusted side last shared

    # ------------------------------------------------------------------ requests

    def answer(self, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        out: list[bytes] = []
        seq = header.get("seq")
        self.caller.keras_variables.take(header.get("keras"), blobs)
        for entry in wire.as_list(header.get("bind", [])):  # methods read since the last request
            self._bind(*wire.as_list(entry, 3))
        for ident in header.get("free", ()):
            self.objects.pop(ident, None)
            self.live_seen.pop(ident, None)
            self.calls.pop(ident, None)
            self.described.forget(ident)
            self.kept.forget(ident)
            if self.shared_variables.pop(ident, None) is not None:
                self.caller.keras_variables.drop([ident])
            self.caller.keras_variables.drop(self.keras_copies.pop(ident, []))
        try:
            op = getattr(self, "op_" + str(header.get("op")), None)
            if op is None:
                raise wire.WireError(f"no operation {header.get('op')!r}")
            reply = op(header, blobs, out)
        except BaseException as exc:  # noqa: BLE001 - every failure of submitted code is reported
            if isinstance(exc, wire.WireError):
                raise
            out.clear()
            reply = {"error": _describe(exc, self.impl_root)}
        dropped, self.caller.dropped[:] = list(self.caller.dropped), []
        return {"seq": seq, **reply, "dropped": dropped, "keras": self.caller.keras_variables.changes(out)}, out

    def op_load(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        from grader import catalog
        from grader._loader import load_implementation

        self.impl_root = Path(header["root"])
        module = load_implementation(catalog.get_exercise(header["exercise"]), self.impl_root)
        return {"value": self._encode(module, out)}

    def op_getattr(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        obj, name = self.objects[header["id"]], header["name"]
        value = getattr(obj, name)
        reply = {"value": self._encode_read(value, out)}
        if _plain_method(obj, name, value):  # read so from now on without asking (``_bind``)
            reply["method_of"] = self._class_key(type(obj))
        return reply

    def _bind(self, ident: Any, owner: Any, name: Any) -> None:
        """``objects[ident] = objects[owner].name``: a method the trusted side read of an object
        whose class's method of that name it was told of (``op_getattr``), read here before the
        request it was read before, as a read there would be."""
        if type(ident) is not int or ident in self.objects or type(name) is not str:
            raise wire.WireError("a malformed method to read")
        try:
            self.objects[ident] = getattr(self.objects[owner], name)
        except Exception as exc:  # noqa: BLE001 - the read raises where the method is used, as it was made
            self.objects[ident] = functools.partial(_raise, exc)

    def _class_key(self, cls: type) -> int:
        """A number for ``cls``, the same each time it is asked for."""
        return self.class_keys.setdefault(cls, len(self.class_keys))

    def op_setattr(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        setattr(self.objects[header["id"]], header["name"], self._decode(header["value"], blobs))
        return {"value": None}

    def op_setitem(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        self._live_dict(header["id"])[self._decode(header["key"], blobs)] = self._decode(header["value"], blobs)
        return {"value": None}

    def op_delitem(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        del self._live_dict(header["id"])[self._decode(header["key"], blobs)]
        return {"value": None}

    def _live_dict(self, ident: Any) -> dict:
        target = self.objects.get(ident)
        if type(target) is not dict:
            raise wire.WireError("an item written to an object that is not a dict read from here")
        return target

    def op_items(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        self._take_rng(header.get("rng"), blobs)  # a sampler draws from the global RNG
        items = []
        for item in self.objects[header["id"]]:
            items.append(item)
            if len(items) > MAX_ITEMS:
                raise ValueError(f"the iterable has more than {MAX_ITEMS} items")
        return {"value": self._encode(items, out), "rng": self._rng_change(out)}

    def op_describe(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        obj = self.objects[header["id"]]
        what = header["what"]
        value = {"repr": lambda: repr(obj)[:wire.MAX_MESSAGE], "str": lambda: str(obj)[:wire.MAX_MESSAGE],
                 "len": lambda: len(obj), "bool": lambda: bool(obj)}[what]()
        return {"value": self._encode(value, out)}

    def op_held(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        return {"value": wire.encode(_probes.held(self.objects[header["id"]]), out)}

    def op_call(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        import torch

        sent: list = []  # the argument tensors, in the order the trusted side numbered them
        copies: list = []  # the objects the trusted side pickled for this call
        copy_hooks: list = []  # the handles of each copy's step hooks
        for entry in wire.as_list(header.get("path", [])):  # to import test modules' classes by name
            if isinstance(entry, str) and entry not in sys.path:
                sys.path.append(entry)
        if "copies" in header:
            copies = _Unpickler(io.BytesIO(blobs[header["copies"]["blob"]]), self).load()
            copy_hooks = [[] for _ in copies]
            for index, grads in header["copies"]["grads"]:
                for t, grad in zip(module_tensors(copies[index]), grads, strict=True):
                    t.grad = None if grad is None else wire.decode(grad, blobs)
            for index, pre, post in header["copies"]["hooks"]:
                copy_hooks[index] = register_step_hooks(
                    copies[index], [self.caller.stub({"i": cid, "name": "step_pre_hook"}) for cid in pre],
                    [self.caller.stub({"i": cid, "name": "step_post_hook"}) for cid in post])
            for entry in wire.as_list(header["copies"]["adopt"]):
                index, module_ids, tensor_ids = wire.as_list(entry, 3)
                self.described.adopt(copies[index], wire.as_list(module_ids), wire.as_list(tensor_ids))

        self.described.take(header.get("push"), blobs, self.caller.stub)
        self.kept.take(header.get("kept", []), blobs)
        self.kept.rehook(header.get("kept_hooks", []), self.caller.stub)
        memories = ReceivedMemories(header.get("memories", []), blobs)

        def rebuilt(node: dict) -> Any:
            if node["k"] == "copy":
                return copies[node["i"]]
            if node["k"] == "view":
                made = memories.build(node, blobs)
                if isinstance(made, torch.Tensor):
                    sent.append(made)  # numbered where the trusted side numbered it
                return made
            return self._resolve(node, blobs)

        # The strings, numbers and test's namedtuples and dataclasses of the arguments, numbered as
        # the trusted side numbered them: one the call returns is the test's own.
        atoms: list = []
        dicts: list = []  # the test's plain dicts, numbered likewise: what the call changes in one goes back

        def decoded(node: Any) -> Any:
            return wire.decode(node, blobs, handle=rebuilt, grads=True, tensors=sent, atoms=atoms,
                               classes=functools.partial(class_of_tests, load=True), dicts=dicts)

        args, kwargs = decoded(header["args"]), decoded(header["kwargs"])
        variables = _tfgrad.variables_sent(atoms)
        watched = [atoms[i] for i in wire.as_list(header["tf_grad"])] if "tf_grad" in header else None
        if watched is not None and not all(wire.is_tf_value(w) for w in watched):
            raise wire.WireError("a tape's tensors that are not tensors")
        patches = _patches.decoded(header.get("patches"), decoded)
        state = header["state"]
        torch.set_default_dtype(wire.decode(state["default_dtype"], blobs))
        self.keras_policy = state.get("keras_policy")  # the test's Keras dtype policy: the submission's too
        if self.keras_policy is not None:
            _keras.set_global_policy(self.keras_policy)
        self._take_rng(state["rng"], blobs)
        before = [marks(t) for t in sent]
        items_before = [dict(d) for d in dicts]  # holding the values: a value replaced is told by identity
        if header.get("builtin") == "each":  # its exceptions described as a call's are
            fn = functools.partial(_each, describe=functools.partial(_describe, impl_root=self.impl_root))
        else:
            fn = _builtin(header.get("builtin")) or self.objects[header["id"]]
        if "method" in header:
            fn = getattr(fn, str(header["method"]))
        autocast_on = {device_type: wire.decode(dtype, blobs)
                       for device_type, dtype in (wire.as_list(e, 2) for e in wire.as_list(state["autocast"]))}
        probe = header.get("probe")
        if probe is not None and probe not in _probes.PROBES:
            raise wire.WireError(f"no probe {probe!r}")
        try:
            with contextlib.ExitStack() as around:
                around.enter_context(torch.set_grad_enabled(bool(state["grad_enabled"])))
                around.enter_context(_collecting(state.get("gc_enabled") is not False))
                for device_type in wire.AUTOCAST_DEVICES:  # as the test has it, whatever an earlier call left
                    on = device_type in autocast_on
                    if on or torch.is_autocast_enabled(device_type):
                        around.enter_context(torch.autocast(device_type, dtype=autocast_on.get(device_type),
                                                            enabled=on))
                # A module the trusted side calls directly: the test's hooks on it fired on that side.
                around.callback(self.described.called.pop)
                self.described.called.append(fn if isinstance(fn, torch.nn.Module) else None)
                around.enter_context(_patches.patched(patches))
                if watched is not None:  # the test's tape is watching these: a tape here records the call
                    # The trainable variables the call reads too: the test's tape may be watching the
                    # variables it holds of the submission's (a model's weights).
                    tape = around.enter_context(sys.modules["tensorflow"].GradientTape(
                        persistent=True, watch_accessed_variables=True))
                    tape.watch(watched)
                if probe is not None:
                    parameter = wire.decode(header.get("probe_with"), blobs)
                    result, evidence = _probes.run(probe, fn, args, kwargs, parameter)
                else:
                    result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported, with what the call changed before it raised
            out.clear()
            reply = {"error": _describe(exc, self.impl_root)}
            try:
                return {**reply, **self._changes(sent, before, copies, copy_hooks, memories, variables, out),
                        "dicts": self._dict_changes(dicts, items_before, out)}
            except Exception:  # noqa: BLE001 - the changes cannot be told: the exception alone
                out.clear()
                return reply
        by_identity = {id(t): i for i, t in enumerate(sent)}
        copy_identity = {id(c): j for j, c in enumerate(copies)}
        atom_identity = {id(a): k for k, a in enumerate(atoms)}
        outputs: list = []
        # A dict returned that the submission keeps (the one a context manager yields to fill) is
        # live; one inside a result is not (a state dict's: it must save as a dict).
        live = result if type(result) is dict and _kept_elsewhere(result) else None
        inside: set[int] = set()
        tf_outputs: list = []  # the TensorFlow tensors the result holds, for the test's tape

        def first(value: Any) -> dict | None:
            kind = type(value)  # the plainest values first: most of what crosses
            if value is None or kind is bool or kind is list or kind is tuple:
                return None
            if kind in wire.ATOMS:
                k = atom_identity.get(id(value))
                return {"k": "arg", "o": k} if k is not None and value is atoms[k] else None
            if live is not None and value is live and id(value) not in inside:
                return self._live_node(value, out, first, inside)
            if id(value) in copy_identity and value is copies[copy_identity[id(value)]]:
                return {"k": "arg", "c": copy_identity[id(value)]}
            if id(value) in atom_identity and value is atoms[atom_identity[id(value)]]:
                return {"k": "arg", "o": atom_identity[id(value)]}
            if (node := self.variable_node(value, out)) is not None:
                return node
            if isinstance(value, torch.Tensor) and id(value) in by_identity:
                return {"k": "arg", "i": by_identity[id(value)]}
            if isinstance(value, torch.Tensor) and self.described.tensor_id(value) is not None:
                return self.described.shared_node(value, out)
            if (index := memories.index_of(value)) is not None:
                return {"k": "arg", "a": index}
            if not (isinstance(value, torch.Tensor) and value.requires_grad) and (
                    where := memories.locate(value)) is not None:
                return memories.view_node(value, *where)  # a view of an argument's memory
            if isinstance(value, torch.Tensor) and (node := self.described.shared_view_node(value, out)):
                return node
            if isinstance(value, torch.Tensor):
                outputs.append(value)
            elif watched is not None and wire.is_tf_output(value):
                tf_outputs.append(value)  # numbered as the trusted side decodes them
            return None

        reply: dict = {"value": wire.encode(result, out, opaque=lambda v: self.opaque(v, out), first=first,
                                            instances=instance_kind),
                       **self._changes(sent, before, copies, copy_hooks, memories, variables, out),
                       "dicts": self._dict_changes(dicts, items_before, out)}
        if watched is not None:
            call = self._new_id()
            reply["tf_call"], reply["tf_outputs"] = call, len(tf_outputs)
            sent_variables = {id(var) for _, var, _ in variables}
            owners = _keras.variables_by_inner([fn, *args, *kwargs.values()])
            read = [var for var in tape.watched_variables()
                    if id(var) not in sent_variables and _keras.is_variable(var)]
            reply["tf_read"] = [self.variable_node(owners.get(id(var), var), out) for var in read]
            # The tape's own map of the variables it read: one of a proxy the call let go is
            # forgotten by the caller before the test asks for its gradient.
            self.calls[call] = _tfgrad.Tape(tape, watched, tf_outputs,
                                            {node["id"]: var for node, var in zip(reply["tf_read"], read)})
        if probe is not None:
            reply["evidence"] = wire.encode(evidence, out)
        del args, kwargs, result, fn
        live = None
        if not outputs:  # a call that made no tensor: an argument it still holds, its object holds
            reply["retained"] = [[i, self.described.share(sent[i])] for i in _held_after(sent, memories.built)]
        if header.get("grad_call"):
            call = self._new_id()
            shared = [self.described.tensors[tid] for tid in wire.as_list(header["grad_shared"])]
            self.calls[call] = ([t for t in sent if t.requires_grad] + shared, outputs)
            reply["call"] = call
            reply["differentiable"] = [bool(t.requires_grad) for t in outputs]
        return reply

    def op_made_by(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        """The Function subclass whose node made an output of an earlier call (None for a node
        of another kind, or none)."""
        import torch

        _, outputs = self.calls[header["call"]]
        index = header["output"]
        if type(index) is not int or not 0 <= index < len(outputs):
            raise wire.WireError("an output a call did not make")
        node = outputs[index].grad_fn
        made_by = getattr(type(node), "_forward_cls", None) if node is not None else None
        if not (isinstance(made_by, type) and issubclass(made_by, torch.autograd.Function)):
            made_by = None
        return {"value": self._encode(made_by, out)}

    def node_of(self, call: int) -> Any:
        """The autograd node that made the outputs of an earlier call, which the trusted side
        holds as its own call's node (one ``ctx`` a test passes to a Function's ``backward``)."""
        found = {id(o.grad_fn): o.grad_fn for o in self.calls[call][1] if o.grad_fn is not None}
        if len(found) != 1:
            raise pickle.UnpicklingError("the node of a call whose outputs were made by no node, or by several")
        return next(iter(found.values()))

    def op_tf_vjp(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        """The gradients of a call made for a test's tape (``grader.remote._tfgrad.Tape``), for
        its watched tensors and the shared variables ``header["variables"]`` names."""
        call = self.calls.get(header["call"])
        if not isinstance(call, _tfgrad.Tape):
            raise wire.WireError("the gradients of a call that kept no tape")
        variables = [call.read.get(vid) for vid in wire.as_list(header.get("variables", []))]
        if any(var is None for var in variables):
            raise wire.WireError("the gradient for a variable the call did not read")
        return {"value": wire.encode(call.gradient(wire.decode(header["grads"], blobs), variables), out)}

    def op_vjp(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        inputs, outputs = self.calls[header["call"]]
        create_graph = header.get("create_graph") is True
        sent: list = []  # with create_graph, the grads that require grad there are inputs too
        grads = wire.decode(header["grads"], blobs, grads=create_graph, tensors=sent)
        reply: dict = {}
        with self._products(reply, out):
            if header.get("record_ops") is True:  # the trusted side records a function of the test's
                result, evidence = _probes.run("aten_ops", vector_jacobian, (inputs, outputs, grads),
                                               {"create_graph": create_graph})
                reply["evidence"] = wire.encode(evidence, out)
            else:
                result = vector_jacobian(inputs, outputs, grads, create_graph=create_graph)
        if not create_graph:
            return {"value": wire.encode([None if g is None else g.detach() for g in result], out), **reply}
        # A double backward: this product is a call of its own, differentiable in the inputs of
        # the first and in the grads (the trusted side's Bridge wraps it as one).
        made = [g for g in result if g is not None]
        call = self._new_id()
        self.calls[call] = (list(inputs) + [g for g in sent if g.requires_grad], made)
        return {"value": wire.encode(result, out), "call": call,
                "differentiable": [bool(g.requires_grad) for g in made], **reply}

    def op_vjps(self, header: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        """The vector-Jacobian products of a call for each of ``header["each"]``'s grads in
        turn (``grader.checks.check_gradients``'s Jacobian rows): a list that ends at a product
        that raised (``raised`` describes its exception, as a product's would be)."""
        inputs, outputs = self.calls[header["call"]]
        each = wire.decode(header["each"], blobs)
        if not isinstance(each, list) or not all(isinstance(grads, list) and len(grads) == len(outputs)
                                                 for grads in each):
            raise wire.WireError("malformed grads of products")
        results: list = []
        reply: dict = {"raised": None}
        with self._products(reply, out):
            for grads in each:
                try:
                    result = vector_jacobian(inputs, outputs, grads)
                except Exception as exc:  # noqa: BLE001 - raised on the trusted side, as the product's own
                    reply["raised"] = _describe(exc, self.impl_root)
                    break
                results.append([None if g is None else g.detach() for g in result])
        return {"value": wire.encode(results, out), **reply}

    @contextlib.contextmanager
    def _products(self, reply: dict, out: list[bytes]) -> Iterator[None]:
        """Around a call's products. The product reaches the trusted side's tensors: the
        submission's hooks on shared tensors fire there, where these gradients are accumulated
        (``Mirrors.take`` put them on its tensors), not here. A forward during them (a checkpoint
        recomputing its blocks) can change the modules the trusted side mirrors (a block's log,
        batch norm's statistics): then what changed goes back in ``reply``, as after a call.
        Watched only here: a global hook slows every module."""
        import torch

        self.described.hooks_fire = False
        forwards: list = []
        watch = torch.nn.modules.module.register_module_forward_pre_hook(lambda *_: forwards.append(1))
        try:
            with self.described.their_hooks_silenced():
                yield
        finally:
            watch.remove()
            self.described.hooks_fire = True
        if forwards:
            reply["shared"] = self.described.changes(out)
            self.described.take(None, [], self.caller.stub)

    # ------------------------------------------------------------------ values

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def opaque(self, value: Any, out: list[bytes]) -> dict:
        """A module's node (it is mirrored on the trusted side), a test's function handed back,
        or a handle to ``value``."""
        if (node := self.variable_node(value, out)) is not None:
            return node
        if (cid := stub_id(value)) is not None:
            return {"k": "callback", "i": cid}
        if type(value) is _Proxy or isinstance(value, KerasProxy):  # the test's object it stands for
            return {"k": "proxy", "i": object.__getattribute__(value, "_attribute")._id}
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.nn.Module):
            return self.described.describe(value, out)
        if (kept := self.kept.ident_of(value)) is not None:  # the trusted side has the original
            return {"k": "handle", "id": kept, "type": type(value).__qualname__[:200], "callable": False, "kept": True}
        ident = self._new_id()
        if torch is not None and isinstance(value, type) and issubclass(value, torch.nn.Module):
            self.objects[ident] = value  # a module class: a class here too (isinstance holds)
            return {"k": "handle", "id": ident, "type": "type", "callable": True,
                    "module_class": [value.__qualname__[:200], builtin_base(value).__name__]}
        if torch is not None and isinstance(value, type) and issubclass(value, torch.autograd.Function):
            # A class there too, one per class (``is`` holds): it keeps the id it was first sent as.
            ident = self.function_classes.setdefault(value, ident)
            self.objects[ident] = value
            return {"k": "handle", "id": ident, "type": "type", "callable": True,
                    "function_class": value.__qualname__[:200]}
        self.objects[ident] = value
        node = {"k": "handle", "id": ident, "type": type(value).__qualname__[:200], "callable": callable(value),
                "cls": self._class_key(type(value))}
        if isinstance(value, type) and (claims := keras_claims(value)):
            node["class_claims"], node["name"] = claims, value.__qualname__[:200]  # a class there too
        elif (claimed := claim(value)) is not None:
            node["claim"] = claimed
        elif claims := keras_claims(type(value)):
            node["claims"] = claims
        return node

    def variable_node(self, value: Any, out: list[bytes]) -> dict | None:
        """The node of ``value`` when it is a variable of the submission's (or a copy of a test's
        layer's variable), shared with the trusted side from now on: the trusted side holds a
        variable kept in step with it (``grader.remote._keras.Variables``) while the test holds it."""
        if not _keras.is_variable(value):
            return None
        variables = self.caller.keras_variables
        vid = variables.ident(value)
        if vid is None:
            vid = self._new_id()
            variables.add(vid, value)
            self.shared_variables[vid] = value
        return _keras.variable_node(value, vid, out)

    def _encode(self, value: Any, out: list[bytes]) -> Any:
        return wire.encode(value, out, opaque=lambda v: self.opaque(v, out), instances=instance_kind,
                           first=lambda v: self.variable_node(v, out))

    def _encode_read(self, value: Any, out: list[bytes]) -> Any:
        """An attribute's value, as the trusted side is to read it: a tensor it shares as that
        tensor, and each dict inside as a live copy, whose item writes are made here too (a
        scheduler's ``optimizer.param_groups[0]["lr"] = x``)."""
        torch = sys.modules.get("torch")
        inside: set[int] = set()

        def first(v: Any) -> dict | None:
            if torch is not None and isinstance(v, torch.Tensor) and self.described.tensor_id(v) is not None:
                return self.described.shared_node(v, out)
            if torch is not None and isinstance(v, torch.Tensor) and (node := self.described.shared_view_node(v, out)):
                return node
            if type(v) is dict and id(v) not in inside:
                return self._live_node(v, out, first, inside)
            return self.variable_node(v, out)

        return wire.encode(value, out, opaque=lambda v: self.opaque(v, out), first=first, instances=instance_kind)

    def _live_node(self, d: dict, out: list[bytes], first: Any, inside: set[int]) -> dict:
        """``d``'s node as a live dict (``_encode_read``), its items encoded with ``first``;
        ``inside`` holds the dicts being encoded so (``first`` leaves those to the wire)."""
        inside.add(id(d))
        try:
            items = wire.encode(d, out, opaque=lambda x: self.opaque(x, out), first=first, instances=instance_kind)
        finally:
            inside.discard(id(d))
        ident = self.live_ids.get(id(d))
        if ident is None or self.objects.get(ident) is not d:
            ident = self._new_id()
            self.objects[ident], self.live_ids[id(d)] = d, ident
        return {"k": "live", "id": ident, "v": items}

    def _resolve(self, node: dict, blobs: list[bytes]) -> Any:
        if node["k"] == "shared":
            return self.described.tensors[node["t"]]
        if node["k"] == "proxy":  # a test's object pickle refused: its attributes and methods, there
            return _Proxy(self.caller.stub({"i": node["i"], "name": node.get("name")}))
        if node["k"] == "exception":  # a test's exception, as a with block it ended passes it
            from grader.remote._callbacks import rebuild_exception

            return rebuild_exception(node["e"])
        if node["k"] == "callback":
            return self.caller.stub(node)
        if node["k"] == "keras":  # a test's Keras layer: it runs there, its variables kept in step here
            return self.caller.keras_proxy(node, blobs)
        if node["k"] == "tf_dataset":  # a test's dataset: the same pipeline here
            return _tfgraph.made_dataset(node, blobs)
        if node["k"] == "keras_copy":  # a test's optimizer, loss...: a copy here, kept while the test holds it
            if type(node.get("id")) is not int:
                raise wire.WireError("a copy of a Keras object that has no id")
            copy, vids = _keras.made_copy(node, blobs, self.caller.keras_variables)
            self.objects[node["id"]], self.keras_copies[node["id"]] = copy, vids
            return copy
        if node["k"] == "tf_shared":  # a variable of the submission's the trusted side holds
            var = self.shared_variables.get(node.get("id"))
            if var is None:
                raise wire.WireError("a variable that is not shared")
            return var
        if node["k"] != "ref":
            raise wire.WireError(f"a {node['k']} node where a value was expected")
        return self.objects[node["id"]]

    def _changes(self, sent: list, before: list, copies: list, copy_hooks: list, memories: ReceivedMemories,
                 variables: list, out: list[bytes]) -> dict:
        """What a call changed (``grader.remote._client.Executor._take_changes`` applies it): the
        argument tensors it changed, the state of each object sent as a copy (one with a state
        dict is kept from then on, ``grader.remote._kept``), the state of each kept object that
        changed, the bytes of the arguments' memories, the modules and tensors the trusted side
        mirrors (a module sent is one from then on), the TensorFlow variables sent that it assigned
        to (``grader.remote._tfgrad``), the random state when it is not the shared one, and
        Keras's global dtype policy when the call set another."""
        kept = self.kept.changes(out)
        changes = {"changed": [[i, describe_change(t, mark, out)]
                               for i, (t, mark) in enumerate(zip(sent, before, strict=True)) if changed(t, mark)],
                   "copies": [self._state(c, hooks, out) for c, hooks in zip(copies, copy_hooks, strict=True)],
                   "kept": kept,
                   "memories": memories.changes(out),
                   "shared": self.described.changes(out),
                   "live": self._live_changes(out),
                   "rng": self._rng_change(out)}
        if variables:
            changes["tf_variables"] = _tfgrad.variable_changes(variables, out)
        if self.keras_policy is not None and (policy := _keras.global_policy()) != self.keras_policy:
            changes["keras_policy"] = policy  # the submission set another: the test's is that one too
        return changes

    def _dict_changes(self, dicts: list, items_before: list, out: list[bytes]) -> list:
        """``[place, [[key, value], ...], [deleted key, ...]]`` for each of the test's dicts sent
        (``dicts``) in which the call set or deleted an item: a callback's ``logs["lr"] = x``
        reaches the test's ``logs``, as in one process."""
        found = []
        for place, (d, before) in enumerate(zip(dicts, items_before, strict=True)):
            assigned = [k for k, v in d.items() if k not in before or before[k] is not v]
            deleted = [k for k in before if k not in d]
            if assigned or deleted:
                found.append([place, [[self._encode(k, out), self._encode(d[k], out)] for k in assigned],
                              [self._encode(k, out) for k in deleted]])
        return found

    def _take_rng(self, node: Any, blobs: list[bytes]) -> None:
        """Take the trusted side's random state (None: it drew no random number since the two
        last shared one)."""
        rng = wire.decode(node, blobs)
        if rng is not None:
            self.rng.take(rng)

    def _rng_change(self, out: list[bytes]) -> Any:
        """The random state for the trusted side to take, or None when it is the one they share."""
        return wire.encode(self.rng.change(), out)

    def _live_changes(self, out: list[bytes]) -> list:
        """``[id, node]`` of each dict the trusted side holds a live copy of whose items are not
        what it was last sent (a hook's record of activations, filled during a call)."""
        import hashlib

        found = []
        for address, ident in list(self.live_ids.items()):
            if id(self.objects.get(ident)) != address:  # the trusted side let its copy go
                del self.live_ids[address]
                continue
            blobs: list[bytes] = []
            node = self._encode_read(self.objects[ident], blobs)
            digest = hashlib.sha256(json.dumps(node).encode() + b"".join(
                len(b).to_bytes(8, "little") + b for b in blobs)).digest()
            if self.live_seen.get(ident) != digest:
                self.live_seen[ident] = digest
                found.append([ident, wire.renumbered(node, len(out))])
                out.extend(blobs)
        return found

    def _state(self, obj: Any, hooks: list, out: list[bytes]) -> dict:
        """What the trusted side needs to make its original of ``obj`` what the call made the
        copy (``grader.remote._client._take_state``): a generator's state; an optimizer's or
        scheduler's state dict, and the id it is kept under from now on (with ``hooks``, the
        handles of the step hooks registered on it for the test). A module sent is
        mirrored from then on: its changes travel as a mirror's."""
        import torch

        if isinstance(obj, torch.Generator):
            return {"kind": "generator", "state": wire.encode(obj.get_state(), out)}
        if not is_kept_kind(obj):
            return {"kind": "none"}
        ident = self._new_id()
        self.objects[ident] = obj
        self.kept.add(ident, obj, hooks)
        return {"kind": "state_dict", "state": wire.encode(kept_state(obj), out), "kept": ident}

    def _decode(self, node: Any, blobs: list[bytes]) -> Any:
        return wire.decode(node, blobs, handle=lambda n: self._resolve(n, blobs), grads=True)

    def decode(self, node: Any, blobs: list[bytes], tensors: list | None = None,
               tf_tensors: list | None = None) -> Any:
        """A value the trusted side sent (a callback's result): plain tensors, shared ones and
        objects of this process by their ids; its TensorFlow tensors appended to ``tf_tensors``."""
        return wire.decode(node, blobs, handle=lambda n: self._resolve(n, blobs), tensors=tensors,
                           tf_tensors=tf_tensors)


class _Proxy:
    """A test's object that pickle cannot copy (a ``SummaryWriter``, with its thread and open
    file), as the submission gets it: an attribute read asks the test's side, and a method read
    so runs there when called (a callback); an attribute set is set there (a plain value)."""

    __slots__ = ("_attribute",)

    def __init__(self, attribute: Any) -> None:
        object.__setattr__(self, "_attribute", attribute)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return object.__getattribute__(self, "_attribute")(name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_attribute")(name, value)  # on the test's object, there


@contextlib.contextmanager
def _collecting(enabled: bool) -> Iterator[None]:
    """Python's automatic garbage collection on or off as the test has it (a test that switched
    it off sees cycles freed only by a ``gc.collect()`` of the submission's), as before after."""
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        yield
    finally:
        (gc.enable if before else gc.disable)()


def _builtin(name: Any) -> Callable | None:
    """The function a call names instead of an object: a copy, a context's exit, one of the
    kit's checks that run where the submission lives; None for no name. Raises ``WireError``
    for a name of no such function."""
    if name is None:
        return None
    if name in _BUILTINS:
        return _BUILTINS[name]
    from grader._where import named_function

    try:
        return named_function(str(name))
    except ValueError:
        raise wire.WireError(f"no function {str(name)[:100]!r} to call") from None


def _load_batches(dataset: Any, **loader_kwargs: Any) -> list:
    """``grader.checks.load_batches`` of a dataset of this process (imported when asked)."""
    from grader.checks import load_batches

    return load_batches(dataset, **loader_kwargs)


def _exit(manager: Any, exc: BaseException | None) -> Any:
    """``manager.__exit__`` as a ``with`` block that ended with ``exc`` (None: normally) calls it."""
    return manager.__exit__(None if exc is None else type(exc), exc, None)


def _each(fn: Callable, calls: list, grad_at: list, describe: Callable[[BaseException], dict]) -> dict:
    """``fn(*args, **kwargs)`` for each ``[args, kwargs]`` of ``calls`` in turn, with the
    arguments at the places of ``grad_at`` (an index into ``args``, or a keyword) made leaves
    that require grad first (``RemoteObject.call_each_in_executor``): ``{"results": ...,
    "raised": ...}``, the results with each tensor in them a detached copy. The calls end at
    one that raised (``raised`` describes its exception, as a call's would be) or changed an
    argument in place (its result is the last): the trusted side makes the calls after it."""
    import torch

    results: list = []
    for args, kwargs in calls:
        args = list(wire.as_list(args))
        if not isinstance(kwargs, dict):
            raise wire.WireError("a malformed call to make")
        leaves: dict[int, torch.Tensor] = {}  # one leaf for a tensor given at two places, as it was one
        for place in wire.as_list(grad_at):
            holder = args if type(place) is int else kwargs
            if not isinstance(holder[place], torch.Tensor):
                raise wire.WireError("a place of an argument that is not a tensor")
            given = holder[place]
            if id(given) not in leaves:
                leaves[id(given)] = given.detach().requires_grad_(True)
            holder[place] = leaves[id(given)]
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        versions = [t._version for t in tensors]
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - raised on the trusted side, as the call's own
            return {"results": results, "raised": describe(exc)}
        results.append(_detached_copy(result))
        if [t._version for t in tensors] != versions:
            break
    return {"results": results, "raised": None}


def _plain_method(obj: Any, name: str, value: Any) -> bool:
    """Whether ``value``, read as ``obj.name``, is the function of that name on ``obj``'s class
    bound to ``obj``, read the plain way (no ``__getattribute__`` of the class's own, nothing of
    that name in the instance): the same read of any instance of that class gives its method."""
    cls = type(obj)
    if not isinstance(value, types.MethodType) or value.__self__ is not obj or cls.__getattribute__ is not (
            object.__getattribute__):
        return False
    if name in getattr(obj, "__dict__", {}):
        return False
    found = next((klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__), None)
    return isinstance(found, types.FunctionType) and value.__func__ is found


def _raise(exc: BaseException, *args: Any, **kwargs: Any) -> Any:
    raise exc


def _detached_copy(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if type(value) in (tuple, list):
        return type(value)(_detached_copy(v) for v in value)
    return value


_BUILTINS: dict[str, Callable] = {"deepcopy": copy.deepcopy, "exit": _exit, "loader": _load_batches}


def _references(t: Any) -> int:
    return sys.getrefcount(t)


def _kept_elsewhere(result: Any) -> bool:
    """Whether something besides the name its caller gives it refers to ``result``, a call's
    result: the submission kept it."""
    alone: list = [{}]
    # result: the caller's name and this parameter; alone[0]: one list slot.
    return _references(result) - 1 > _references(alone[0])


def _held_after(sent: list, built: list) -> list[int]:
    """The places in ``sent`` (a finished call's argument tensors, which nothing of the call
    holds any more but ``sent`` and ``built``, the memories' views) of those something else
    still refers to: the submission kept them (an optimizer its parameters)."""
    import torch

    alone = [torch.empty(0)]
    baseline = _references(alone[0]) - 1  # a tensor that one list slot holds, counted this way
    return [i for i in range(len(sent))
            if _references(sent[i]) - sum(x is sent[i] for x in sent) - sum(x is sent[i] for x in built) > baseline]


class _Unpickler(pickle.Unpickler):
    """Unpickles the trusted side's copies; a module or tensor the trusted side mirrors is the
    executor's own (``grader.remote._client._Pickler`` names them)."""

    def __init__(self, file, executor: _Executor) -> None:
        super().__init__(file)
        self.executor = executor

    def persistent_load(self, pid: Any) -> Any:
        kind, ident, *rest = pid
        if kind == "callback":
            return self.executor.caller.stub({"i": ident, "name": rest[0] if rest else "callback",
                                              "function": rest[1:2] == [True]})
        if kind == "shared":
            return self.executor.described.tensors[ident]
        if kind == "module":
            return self.executor.described.modules[ident]
        if kind == "kept":
            return self.executor.objects[ident]
        if kind == "node":
            return self.executor.node_of(ident)
        if kind == "hooks":  # a table of a module's call hooks, sent empty
            return collections.OrderedDict()
        raise pickle.UnpicklingError(f"no persistent object {kind!r}")


def _describe(exc: BaseException, impl_root: Path | None) -> dict:
    """An exception as the trusted side rebuilds it: its type's name, the nearest built-in
    exception class it derives from, its message, whether it is an untouched stub's (or a
    missing module's, or a failed import's), and where in the learner's code it was raised."""
    from grader import feedback
    from grader._loader import ImplementationError, MissingImplementation

    builtin = next((k.__name__ for k in type(exc).__mro__
                    if k.__module__ == "builtins" and issubclass(k, Exception)), "Exception")
    if not isinstance(exc, Exception):
        builtin = "RuntimeError"  # SystemExit and the like end no trusted process
    try:
        message = wire.bounded_message(str(exc))
    except BaseException:  # noqa: BLE001 - a message that cannot be made is not one
        message = "<the exception's message could not be made>"
    where: list[str] = []
    stub = False
    if impl_root is not None:
        with contextlib.suppress(Exception):
            where = feedback.where_in_learner_code(exc.__traceback__, impl_root)
            stub = feedback.stub_untouched(exc, impl_root)
    return {"type": type(exc).__name__[:200], "builtin": builtin, "message": message,
            "module": str(type(exc).__module__)[:200], "qualname": type(exc).__qualname__[:200],
            "stub": stub, "missing": isinstance(exc, MissingImplementation),
            "import_failed": isinstance(exc, ImplementationError),
            "where": "\n".join(where)[:wire.MAX_MESSAGE], "raised": raised_id(exc)}
