"""The trusted side: start the executors, and stand-ins for what lives in them.

``Zygote.start`` forks the zygote from the grading child while the child has run no tensor op and
read no key; it forks each executor (``grader.remote._executor``) on request: ``Executors`` gives
each exercise its own, and ``Executor.revive`` a fresh one after a test overran.
``Executor.load`` returns a ``RemoteObject`` for the exercise's module: attribute reads, calls,
iteration and ``len``/``bool``/``repr`` go to the executor, and what comes back is rebuilt from
plain data by ``grader.remote._wire`` (tensors are always plain ``torch.Tensor``s with this
process's own methods). A call whose tensor arguments require grad goes through ``_bridge()``, an
autograd function whose backward asks the executor for the vector-Jacobian product of the call, so
gradients, ``backward()`` and finite-difference checks work across the two processes. Tensor
arguments the call changed in place (data or ``.grad``) are changed here too, and the random state
(``grader.remote._rng``) and default dtype travel with each call. Modules cross as mirrors
(``grader.remote._mirror``) and the test's functions as callbacks (``grader.remote._callbacks``),
which ``request`` serves while it waits for the executor's answer.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import ctypes
import functools
import gc
import io
import os
import pickle
import signal
import socket
import sys
import weakref
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from grader import _crossings
from grader.remote import _keras, _patches, _probes, _rng, _tfgrad, _tfgraph
from grader.remote import _wire as wire
from grader.remote._callbacks import (
    Callbacks,
    class_of_tests,
    describe_exception,
    instance_kind,
    is_callback,
    of_test_module,
)
from grader.remote._claims import claimed_class, claimed_keras_class, claimed_subclass, function_class
from grader.remote._kept import Kept, hooks_key, load_kept_state, step_hooks
from grader.remote._memory import SentMemories
from grader.remote._mirror import CALL_HOOKS, OWNER, Mirrors, base_named, mirror_class
from grader.remote._sync import (
    apply_change,
    module_tensors,
    replace_tensors,
)

PR_SET_DUMPABLE = 4


class ExecutorFailed(AssertionError):
    """The submission's process ended, or answered out of protocol: the test fails."""


class Zygote:
    """A process forked from the grading child before the child reads its key or runs a tensor
    op, which forks executors on request: each exercise graded apart gets its own, and a fresh
    one after its process was stopped, so no executor is forked from a process that has run
    threads or tensor ops, and a test that hangs costs no other exercise its points."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid, self.sock = pid, sock

    @classmethod
    def start(cls, close: list[int], threads: int | None = None) -> Zygote:
        """Fork the zygote. In it, every descriptor but the standard three and its socket is
        closed (``close`` names those the caller knows of: the report and key pipes); here,
        this process becomes undumpable, so no executor (same user) can trace it or read its
        memory. ``threads``: the executors' torch intra-op threads; give 1 when this process
        has run tensor ops already (a fork of a process whose OpenMP pool ran can hang in its
        first parallel op), None to keep this process's setting."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                from grader._lifetime import die_with_parent

                die_with_parent()
                for fd in close:
                    with contextlib.suppress(OSError, ValueError):
                        os.close(fd)
                keep = sorted({0, 1, 2, theirs.fileno()})
                for low, high in zip(keep, [*keep[1:], 65536]):
                    os.closerange(low + 1, high)
                _serve_as_zygote(theirs, threads)
            finally:
                os._exit(1)
        theirs.close()
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        return cls(pid, ours)

    def spawn(self, first_ident: int) -> tuple[int, socket.socket]:
        """A fresh executor: its pid and the socket to it. Its objects are numbered from
        ``first_ident``. Raises ``ExecutorFailed`` when the zygote is gone."""
        try:
            self.sock.sendall(f"spawn {first_ident}\n".encode())
            message, fds, _, _ = socket.recv_fds(self.sock, 64, 1)
            if len(fds) != 1 or not message.strip().isdigit():
                raise OSError("no executor came back")
        except OSError as exc:
            raise ExecutorFailed(f"no process could be started for the submission ({exc})") from None
        return int(message), socket.socket(fileno=fds[0])

    def reap(self, pid: int) -> int | None:
        """Wait for the executor ``pid`` to end (kill it first) and return its wait status. (One
        killed and not asked for is reaped by the zygote as it ends.)"""
        with contextlib.suppress(OSError, ValueError):
            self.sock.sendall(f"status {pid}\n".encode())
            answer = self.sock.recv(64).strip()
            if answer.lstrip(b"-").isdigit() and int(answer) >= 0:
                return int(answer)
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.sock.close()
        with contextlib.suppress(OSError, ValueError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError):
            os.waitpid(self.pid, 0)


def _serve_as_zygote(sock: socket.socket, threads: int | None) -> None:
    """The zygote's loop: fork an executor, or reap one, per request; ends when the grading
    child closes its end."""
    from grader.remote._executor import serve

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
        signal.signal(sig, signal.SIG_DFL)
    ended: dict[int, int] = {}  # an executor reaped as it ended -> its wait status, till asked for

    def reap_ended(*_: Any) -> None:
        with contextlib.suppress(ChildProcessError):
            while (found := os.waitpid(-1, os.WNOHANG))[0]:
                ended[found[0]] = found[1]

    signal.signal(signal.SIGCHLD, reap_ended)
    # What the grading child loaded (torch, the tests) is no executor's to collect: a submission's
    # gc.collect() (freeing a failed try's tensors, after each one) then walks only what it made,
    # as it does in a child of the fork server, which froze the same before forking.
    gc.freeze()
    stream = sock.makefile("rb")
    for line in stream:
        verb, _, argument = line.decode("ascii", "replace").strip().partition(" ")
        if verb == "spawn" and argument.isdigit():
            ours, theirs = socket.socketpair()
            # Not reaped between the fork and forgetting what an earlier process of its pid left.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            try:
                pid = os.fork()
                if pid == 0:
                    try:
                        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the submission's children are its own to reap
                        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                        stream.close()
                        sock.close()
                        ours.close()
                        from grader._lifetime import die_with_parent

                        die_with_parent()
                        if threads is not None:
                            import torch

                            torch.set_num_threads(threads)
                        serve(theirs, first_ident=int(argument))
                    finally:
                        os._exit(1)
                # A retired executor is reaped and never asked for: a new one given its pid is not it.
                ended.pop(pid, None)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            theirs.close()
            socket.send_fds(sock, [str(pid).encode()], [ours.fileno()])
            ours.close()
        elif verb == "status" and argument.isdigit():
            child = int(argument)
            while child not in ended:
                try:
                    found = os.waitpid(child, 0)
                except ChildProcessError:  # reaped as it ended, meanwhile; or none of ours
                    break
                ended[found[0]] = found[1]
            sock.sendall(f"{ended.pop(child, -1)}\n".encode())
    os._exit(0)


class Executor:
    """The connection to the executor of one exercise (or of a test of the remote machinery).
    When its process is stopped (a test ran past its time limit) or ends, the test that was
    using it fails; ``revive`` then forks a fresh one from the zygote, with the modules loaded
    before loaded again, for the tests after it."""

    GENERATION = 1 << 32  # each process numbers its objects from its own multiple of this

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.generation = 0
        self.modules: dict[int, tuple[str, str]] = {}  # a loaded module's first ident -> (exercise, root)
        self.moved: dict[int, int] = {}  # a loaded module's first ident -> its ident in this process
        self.evidence_taken = 0  # checks whose evidence the executor gave (op counts), so far
        self._spawn()

    def _spawn(self) -> None:
        self.generation += 1
        self.base = self.generation * self.GENERATION
        self.seq = 0
        self.to_free: list[int] = []
        self.to_bind: list[list] = []  # [id, object's id, name] of each method read since the last request
        self.methods: set[tuple[int, str]] = set()  # (class number, name) of the methods read so
        self.broken: str | None = None
        self.rng = _rng.Agreed()  # the random state this process and the executor last shared
        self.outer_requests = 0  # requests under way (a callback's request is made inside its call's)
        self.mirrors = Mirrors(self)
        self.callbacks = Callbacks(self)
        self.kept = Kept(weak=True)
        # Those of the test's Keras layers sent as proxies, and the submission's the test holds.
        self.keras_variables = _keras.Variables(released=self.release)
        self.keras_copies = _keras.Copies(self, self.keras_variables)
        self.keras_layouts = _keras.Layouts(self, self.keras_variables,
                                            lambda layer: functools.partial(_attribute_of, layer))
        self.function_classes: dict[int, type] = {}  # the stand-ins of the submission's Function and Keras classes
        self.class_idents: dict[int, int] = {}  # id() of such a stand-in -> its class's id there
        self.live_dicts: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> LiveDict
        self.trusted_seq = 0
        self.pid, self.sock = self.zygote.spawn(self.base)

    def revive(self) -> None:
        """After this executor's process was stopped or ended: a fresh process, with every
        module loaded before loaded again (the objects made in the old one are gone: a test
        that still holds one fails). Nothing when it is working."""
        if not self.broken:
            return
        self.close()
        try:
            self._spawn()
            for first, (exercise, root) in self.modules.items():
                node, _, _ = self.request({"op": "load", "exercise": exercise, "root": root}, [])
                try:
                    self.moved[first] = self._handle_id(node)
                except wire.WireError as exc:
                    self._fail(f"the submission's process answered out of protocol ({exc})")
        except ExecutorFailed:
            pass  # self.broken says why, and the tests that use it fail with that
        except Exception as exc:  # noqa: BLE001 - the module raised on its second import
            self.broken = f"the submission's module could not be imported again after its process was stopped: {exc}"
            self.close()

    def retire(self) -> None:
        """Stop the process once its exercise's tests have run (a later test of that exercise
        gets a fresh one, as after a test that overran: ``revive``), without waiting for it to
        end: the zygote reaps it."""
        if self.pid is not None and not self.broken:
            self.broken = "the submission's process was stopped after its exercise's tests ran"
            self.close(wait=False)

    def live(self, ident: int) -> int:
        """The ident to send for the object the trusted side knows as ``ident``. Raises
        ``ExecutorFailed`` for an object of a process stopped since, or when this executor is
        broken (with the reason)."""
        if self.broken:
            raise ExecutorFailed(self.broken)
        ident = self.moved.get(ident, ident)
        if ident < self.base:
            raise ExecutorFailed("this object lived in the submission's process that was stopped "
                                 "(a test ran past its time limit, or the process ended); the "
                                 "tests after that run in a fresh one")
        return ident

    # ------------------------------------------------------------------ protocol

    def request(self, header: dict, blobs: list[bytes]) -> tuple[Any, dict, list[bytes]]:
        """Send one request and read its reply: (the raw value node, the reply, its blobs).
        Raises the executor's exception (rebuilt) when the request raised there."""
        if self.broken:
            raise ExecutorFailed(self.broken)
        try:
            self.callbacks.drop()
        except wire.WireError as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")
        _crossings.note_request()
        self.seq += 1
        seq = self.seq
        header = {**header, "seq": seq, "free": self.to_free, "keras": self.keras_variables.changes(blobs)}
        if self.to_bind:
            header["bind"], self.to_bind = self.to_bind, []
        self.to_free = []
        self.outer_requests += 1  # this one's, while it waits: a callback may make requests of its own
        try:
            wire.send(self.sock, header, blobs)
            reply, out = wire.receive(self.sock)
            self.keras_variables.take(reply.get("keras"), out)
            while "callback" in reply or "callback_vjp" in reply or "callback_trace" in reply:  # a test's function
                answer, answer_blobs = self.callbacks.serve(reply, out)
                answer["keras"] = self.keras_variables.changes(answer_blobs)
                wire.send(self.sock, answer, answer_blobs)
                reply, out = wire.receive(self.sock)
                self.keras_variables.take(reply.get("keras"), out)
        except wire.PeerGone:
            self._fail(f"the submission's process ended {self._how_it_ended()}")
        except OSError as exc:
            self._fail(f"the submission's process could not be reached ({exc.strerror})")
        except wire.WireError as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")
        except BaseException:
            # Interrupted mid-request (a time limit): the executor may still be busy with it,
            # and a late answer would be taken for the next request's. It is stopped.
            self.broken = "the submission's process was stopped after a test ran past its time limit"
            self.close()
            raise
        finally:
            self.outer_requests -= 1
        if reply.get("seq") != seq:
            self._fail("the submission's process answered out of turn")
        self.callbacks.dropped = reply.get("dropped", [])  # forgotten at the next request
        error = None
        if "error" in reply:
            error = self.callbacks.reraised(reply["error"]) or _rebuilt_exception(reply["error"])
        if not self.outer_requests:
            self.callbacks.raised.clear()
        if error is not None:
            if "changed" in reply:  # a call that raised, and what it changed before
                reply["blobs"] = out
                raise _CallRaised(error, reply)
            raise error
        if "value" not in reply:
            self._fail("the submission's process sent no value")
        return reply["value"], reply, out

    def _fail(self, why: str) -> None:
        self.broken = why
        self.close()
        raise ExecutorFailed(why)

    def _how_it_ended(self) -> str:
        status = self.zygote.reap(self.pid)
        self.pid = None
        if status is not None and os.WIFSIGNALED(status):
            return f"(killed by {signal.Signals(os.WTERMSIG(status)).name})"
        if status is not None and os.WIFEXITED(status):
            return f"(it exited with status {os.WEXITSTATUS(status)})"
        return ""

    def close(self, *, wait: bool = True) -> None:
        """Stop the executor's process (its zygote serves on); ``wait``: until it has ended."""
        with contextlib.suppress(OSError, ValueError):
            self.sock.close()
        if self.pid is not None:
            with contextlib.suppress(OSError, ValueError):
                os.kill(self.pid, signal.SIGKILL)
            if wait:
                self.zygote.reap(self.pid)
            self.pid = None

    def _object(self, n: dict, blobs: list[bytes]) -> Any:
        """What a node of an object that lives in the executor stands for here: a module's
        mirror, a shared tensor, or a ``RemoteObject`` (any other node kind: ``WireError``)."""
        if n.get("k") == "module":
            return self.mirrors.build(n, blobs)
        if n.get("k") == "shared":
            return self.mirrors.shared(n, blobs)
        if n.get("k") == "live":  # read, or synced after a call: a tensor that requires grad there does here
            return self._live(n, blobs, lambda m: self._object(m, blobs), grads=True)
        if n.get("k") == "tf_shared":  # a variable of the submission's, kept in step while the test holds it
            return self._shared_variable(n, blobs)
        if n.get("k") == "callback":  # a test's own function, handed back
            fn = self.callbacks.function(n.get("i"))
            if fn is None:
                raise wire.WireError("a callback that was not sent")
            return fn
        if n.get("k") == "proxy":  # a test's object sent as a proxy, handed back: that object
            fn = self.callbacks.function(n.get("i"))
            if not (isinstance(fn, functools.partial) and fn.func is _attribute_of):
                raise wire.WireError("a proxy that was not sent")
            return fn.args[0]
        if n.get("kept") is True:  # a copy of a test's object: the original, while the test holds it
            original = self.kept.original(self._handle_id(n))
            if original is not None:
                return original
            self.keep(n["id"])  # released here while the request was under way: a handle from now on
        if "function_class" in n:  # a torch.autograd.Function subclass there: one class here
            ident = self._handle_id(n)
            self.evidence_taken += 1  # that it derives from Function is the executor's word
            if ident not in self.function_classes:
                name = str(n["function_class"])[:200].rsplit(".", 1)[-1]
                self.function_classes[ident] = function_class(name, self, ident)
                self.class_idents[id(self.function_classes[ident])] = ident
            return self.function_classes[ident]
        if "class_claims" in n:  # a class of the submission's deriving from Keras's: a class here too
            return self._claimed_subclass(n)
        type_name = str(n.get("type"))[:200]
        class_name = type_name.rsplit(".", 1)[-1]
        claimed = None
        if "claim" in n:  # the torch class it derives from, as the executor says (grader.remote._claims)
            module, qualname = wire.as_list(n["claim"], 2)
            claimed = claimed_class(class_name, module, qualname)
        elif "claims" in n:  # the Keras and TensorFlow classes it derives from, likewise
            claimed = claimed_keras_class(class_name, n["claims"])
        class_key = n.get("cls") if type(n.get("cls")) is int else None
        constructor = _handle_class(class_name)._new(self, self._handle_id(n), type_name, n.get("callable") is True,
                                                     claimed, class_key)
        if "module_class" in n:  # a module class of the submission: its mirrors' class here
            name, base = wire.as_list(n["module_class"], 2)
            cls = mirror_class(str(name)[:200], base_named(base), self)
            type.__setattr__(cls, "_constructor", constructor)
            return cls
        return constructor

    def _shared_variable(self, n: dict, blobs: list[bytes]) -> Any:
        """The variable here that stands for the executor's variable of node ``n``: the one the
        test holds already, else one made from the value sent (``grader.remote._keras``); a
        test's own variable, when the submission's is its copy (a proxy's)."""
        vid = n.get("id")
        found = self.keras_variables.get(vid) if type(vid) is int else None
        if found is not None:
            return found
        vid = self.own_id(vid)
        if self.made_here(vid):
            raise wire.WireError("a variable of the tests' that is not shared")
        var = _keras.made_variable(n, blobs)
        self.keep(vid)  # let go here, and sent again before the executor heard it
        self.keras_variables.add(vid, var, theirs=True)
        return var

    def _claimed_subclass(self, n: dict) -> type:
        """The stand-in of the submission's class of node ``n`` (``grader.remote._claims``), one per
        class there; that it derives from the class it claims is the executor's word."""
        ident = self._handle_id(n)
        self.evidence_taken += 1
        if ident not in self.function_classes:
            name = str(n.get("name"))[:200].rsplit(".", 1)[-1]
            self.function_classes[ident] = claimed_subclass(
                name, n["class_claims"], make=lambda args, kwargs: self.call(ident, args, kwargs),
                call_method=lambda method, args, kwargs: self.call(ident, args, kwargs, method=method),
                read=lambda attribute: self.getattr(ident, attribute))
            self.class_idents[id(self.function_classes[ident])] = ident
        return self.function_classes[ident]

    def _live(self, n: dict, blobs: list[bytes], handle: Any, tensors: list | None = None, *,
              grads: bool = False) -> LiveDict:
        """A dict the executor keeps, as the ``LiveDict`` that stands for it here (one while the
        test holds it, taking what the dict holds now); its values decoded with ``handle``, its
        tensors appended to ``tensors`` (a call's outputs, which its autograd node makes require
        grad) or, with ``grads``, requiring grad, with history, as they do there (a hook that
        kept an activation without ``detach``)."""
        items = wire.decode(n.get("v"), blobs, handle=handle, tensors=tensors, grads=grads)
        if type(items) is not dict:
            raise wire.WireError("a live dict that is not a dict")
        ident = self.own_id(n.get("id"))
        live = self.live_dicts.get(ident)
        if live is None:
            live = self.live_dicts[ident] = LiveDict._new(self, ident, items)
        else:
            live._take(items)
            self.keep(ident)
        return live

    def _handle_id(self, n: Any) -> int:
        kind = n.get("k") if isinstance(n, dict) else type(n).__name__
        if kind != "handle":
            raise wire.WireError(f"a {kind} node where a value was expected")
        return self.own_id(n.get("id"))

    def own_id(self, ident: Any) -> int:
        """``ident`` if it is one the executor's process may have given (else ``WireError``)."""
        if type(ident) is not int or not self.base <= ident < self.base + self.GENERATION:
            raise wire.WireError("an id of an object it cannot have")
        return ident

    def keep(self, ident: int) -> None:
        """An object released while a request was under way came back: it is not to be freed."""
        if ident in self.to_free:
            self.to_free.remove(ident)

    def decode(self, node: Any, blobs: list[bytes], *, grads: bool = False, tensors: list | None = None,
               tf_sources: list | None = None) -> Any:
        try:
            return wire.decode(node, blobs, handle=lambda n: self._object(n, blobs), grads=grads, tensors=tensors,
                               classes=class_of_tests, tf_sources=tf_sources)
        except wire.WireError as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")

    def encode(self, value: Any, blobs: list[bytes], tensors: list | None = None,
               copies: list | None = None, memories: SentMemories | None = None, atoms: list | None = None,
               tf_outputs: list | None = None, dicts: list | None = None) -> Any:
        """``value`` as sent to the executor; its tensors are appended to ``tensors`` in the order
        the executor numbers them, and its strings and numbers to ``atoms`` (a call's result
        that is one of them comes back as it). A mirror goes by its id, a function as a
        callback; any other value of no kind the wire carries (a module sent for the first time,
        an optimizer, a class of a test module) is appended to ``copies``, which the caller
        pickles for the executor; without ``copies`` it cannot be sent. With ``memories``, CPU
        tensors and NumPy arrays go as views of the memory they share (``grader.remote._memory``).
        A Keras layer goes as a proxy (``grader.remote._keras``); each TensorFlow tensor a
        callback returns is appended to ``tf_outputs``, in the order the executor numbers them;
        each plain dict to ``dicts``, likewise (what the call changes in one is changed here)."""
        torch = sys.modules.get("torch")
        np = sys.modules.get("numpy")

        def first(v: Any) -> dict | None:
            kind = type(v)  # the plainest values first: most of what crosses
            if kind in wire.ATOMS:
                if atoms is None:
                    return None
                atoms.append(v)
                return {"k": "atom", "v": wire.encode(v, blobs)}
            if v is None or kind is bool or kind is list or kind is tuple:
                return None
            if kind is dict:
                if dicts is not None:
                    dicts.append(v)  # numbered as the executor decodes it: an outer dict first
                return None
            if _keras.is_variable(v) and (vid := self.keras_variables.ident(v)) is not None and not self.made_here(vid):
                return {"k": "tf_shared", "id": self.live(vid)}  # the submission's own variable
            if tf_outputs is not None and wire.is_tf_output(v):
                tf_outputs.append(v)
                return None
            if atoms is not None and wire.is_tf_value(v) and (node := wire.encode_tf(v, blobs)) is not None:
                atoms.append(v)  # the test's very tensor or variable, when the call returns it
                return {"k": "atom", "v": node}
            if atoms is not None and (kind := instance_kind(v)) is not None:
                atoms.append(v)  # numbered before its values, as the executor numbers what it makes
                return wire.encode_instance(v, kind, lambda x: wire.encode(x, blobs, first=first, opaque=opaque))
            if isinstance(v, RemoteObject):
                if object.__getattribute__(v, "_executor") is not self:
                    raise TypeError("an object of another grading process cannot be passed on")
                return {"k": "ref", "id": self.live(object.__getattribute__(v, "_ident"))}
            if isinstance(v, type) and (ident := self.class_idents.get(id(v))) is not None:
                return {"k": "ref", "id": self.live(ident)}  # a class of the submission's: that class
            if torch is not None and isinstance(v, torch.nn.Module) and v in OWNER:
                owner, ident = OWNER[v]
                if owner is not self:
                    raise TypeError("a module of another grading process cannot be passed on")
                return {"k": "ref", "id": self.live(ident)}
            if torch is not None and isinstance(v, torch.Tensor) and (tid := self.mirrors.tensor_id(v)) is not None:
                return {"k": "shared", "t": tid}
            if isinstance(v, BaseException):
                return {"k": "exception", "e": describe_exception(v)}
            if torch is not None and isinstance(v, torch.Tensor) and tensors is not None:
                tensors.append(v)
                if type(v) in (torch.Tensor, torch.nn.Parameter):
                    if memories is not None:
                        fields = wire.tensor_fields(v)
                        if v.is_leaf and v.grad is not None:
                            fields["g"] = wire.encode_tensor(v.grad.detach(), blobs)
                        if (node := memories.node(v, fields)) is not None:
                            return node
                    return wire.encode_tensor(v, blobs, with_grad=True)
            if np is not None and type(v) is np.ndarray and memories is not None:
                return memories.node(v, {"k": "ndarray", "dtype": v.dtype.str, "shape": list(v.shape),
                                         "ro": not v.flags.writeable})
            return None

        def opaque(v: Any) -> dict:
            if _keras.copied_by_config(v) or _keras.is_symbolic(v):
                return self.keras_copies.node(v, blobs)
            if _tfgraph.is_dataset(v) and (node := _tfgraph.dataset_node(v, blobs)) is not None:
                return node
            if _keras.is_layer(v):
                return self.keras_layouts.node(v, self.callbacks, blobs)
            if _is_iterator(v):
                return {"k": "iter", "v": [wire.encode(x, blobs, first=first, opaque=opaque) for x in v]}
            if is_callback(v):
                return self.callbacks.node(v)
            if (ident := self.kept_ident(v)) is not None:
                return {"k": "ref", "id": ident}
            if copies is not None:
                index = next((i for i, c in enumerate(copies) if c is v), None)
                if index is None:
                    if not _copied_whole(v) and not _picklable(v, self):  # a SummaryWriter: its methods run here
                        node = self.callbacks.node(functools.partial(_attribute_of, v))
                        return {"k": "proxy", "i": node["i"], "name": type(v).__name__[:200]}
                    copies.append(v)
                    index = len(copies) - 1
                return {"k": "copy", "i": index}
            raise TypeError(f"a {type(v).__name__} cannot be passed to the submission's process "
                            "(its tests run in a process of their own)")

        return wire.encode(value, blobs, first=first, opaque=opaque)

    # ------------------------------------------------------------------ operations

    def load(self, exercise_id: str, root: Path) -> RemoteObject:
        node, _, out = self.request({"op": "load", "exercise": exercise_id, "root": str(root)}, [])
        module = self.decode(node, out)
        self.modules[object.__getattribute__(module, "_ident")] = (exercise_id, str(root))
        return module

    def getattr(self, ident: int, name: str) -> Any:
        node, reply, out = self.request({"op": "getattr", "id": self.live(ident), "name": name}, [])
        if type(reply.get("method_of")) is int:  # read without asking from now on (``method``)
            self.methods.add((reply["method_of"], name))
        return self.decode(node, out)

    def method(self, ident: int, cls: int | None, name: str) -> RemoteObject | None:
        """``obj.name`` for the executor's object ``ident`` of class ``cls``, where an earlier read
        showed it a method of that class: a handle made here, which the executor reads at the
        start of the next request (before anything else runs there, as a read now would); None
        for any other name, which is asked for."""
        if cls is None or (cls, name) not in self.methods:
            return None
        bound = self.new_id()
        self.to_bind.append([bound, self.live(ident), name])
        return _handle_class("method")._new(self, bound, "method", True)

    def setattr(self, ident: int, name: str, value: Any) -> None:
        blobs: list[bytes] = []
        self.request({"op": "setattr", "id": self.live(ident), "name": name,
                      "value": self.encode(value, blobs)}, blobs)

    def setitem(self, ident: int, key: Any, value: Any) -> None:
        """``d[key] = value`` on the executor's dict ``ident`` (read as a ``LiveDict``)."""
        blobs: list[bytes] = []
        self.request({"op": "setitem", "id": self.live(ident), "key": self.encode(key, blobs),
                      "value": self.encode(value, blobs)}, blobs)

    def delitem(self, ident: int, key: Any) -> None:
        """``del d[key]`` on the executor's dict ``ident`` (read as a ``LiveDict``)."""
        blobs: list[bytes] = []
        self.request({"op": "delitem", "id": self.live(ident), "key": self.encode(key, blobs)}, blobs)

    def describe(self, ident: int, what: str) -> Any:
        node, _, out = self.request({"op": "describe", "id": self.live(ident), "what": what}, [])
        return self.decode(node, out)

    def tensors_held(self, ident: int) -> list:
        """The tensors the executor's object ``ident`` holds, as the executor says
        (``grader.checks.tensors_held_by``)."""
        node, _, out = self.request({"op": "held", "id": self.live(ident)}, [])
        self.evidence_taken += 1
        try:
            return _probes.held_tensors(wire.decode(node, out))
        except (wire.WireError, TypeError, ValueError):
            self._fail("the submission's process sent no list of the tensors an object holds")

    def items(self, ident: int) -> list:
        blobs: list[bytes] = []
        header = {"op": "items", "id": self.live(ident), "rng": self._rng_to_send(blobs)}
        node, reply, out = self.request(header, blobs)
        try:
            self._take_rng(reply.get("rng"), out)
        except (wire.WireError, TypeError, ValueError, RuntimeError) as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")
        return self.decode(node, out)

    def kept_ident(self, obj: Any) -> int | None:
        """The id of the executor's copy of ``obj``, a test's object kept in step there
        (``grader.remote._kept``), if it is one of this process's."""
        ident = self.kept.ident_of(obj)
        return ident if ident is not None and ident >= self.base else None

    def new_id(self) -> int:
        """An id for an object the trusted side starts to share (from the upper half of this
        process's range: the executor numbers its own from the lower)."""
        self.trusted_seq += 1
        return self.base + self.GENERATION // 2 + self.trusted_seq

    def made_here(self, ident: int) -> bool:
        """Whether ``ident`` is one ``new_id`` gave: an object of the test's that the executor
        holds a copy of (a module it sent, and that module's tensors)."""
        return ident >= self.base + self.GENERATION // 2

    def call_method(self, ident: int, name: str, args: tuple, kwargs: dict) -> Any:
        """``obj.name(*args, **kwargs)`` in the executor, ``obj`` a mirrored module."""
        return self.call(ident, args, kwargs, method=name)

    def deepcopy(self, ident: int, mirror: Any) -> Any:
        """A deep copy of the executor's module ``ident`` (``mirror`` here), made there."""
        return self.call(ident, (mirror,), {}, builtin="deepcopy")

    def call(self, ident: int, args: tuple, kwargs: dict, probe: str | tuple[str, Any] | None = None,
             builtin: str | None = None, method: str | None = None) -> Any:
        """``obj(*args, **kwargs)`` in the executor; with ``probe`` (a name, or a ``(name,
        parameter)`` pair), (its result, the evidence of that check of ``grader.remote._probes``,
        taken there); with ``builtin="deepcopy"``,
        ``copy.deepcopy(*args)`` there; with ``builtin="exit"``, ``args`` a context manager and
        the exception that ended its block (or None), its ``__exit__`` as the block calls it;
        with ``method``, ``obj.method(*args, **kwargs)``. Made
        while a test's function is recorded (``record_aten_ops``), the call's ops are recorded
        there and added to that record."""
        from grader.checks._opcount import recorded_elsewhere

        with recorded_elsewhere() as add:
            if add is None or probe is not None:
                return self._call(ident, args, kwargs, probe, builtin, method)
            result, calls = self._call(ident, args, kwargs, "aten_ops", builtin, method)
            add(calls)
            return result

    def _call(self, ident: int, args: tuple, kwargs: dict, probe: str | tuple[str, Any] | None,
              builtin: str | None, method: str | None) -> Any:
        import torch

        blobs: list[bytes] = []
        tensors: list = []
        copies: list = []
        hook_keys: list = []  # the step hooks each copy was sent with
        memories = SentMemories()
        atoms: list = []
        dicts: list = []  # the test's dicts sent: what the call changes in one is changed here too
        probe, probe_with = _probes.split(probe)
        header = {"op": "call", "id": self.live(ident), "probe": probe,
                  "probe_with": wire.encode(probe_with, blobs),
                  "args": self.encode(tuple(args), blobs, tensors, copies, memories, atoms, dicts=dicts),
                  "kwargs": self.encode(dict(kwargs), blobs, tensors, copies, memories, atoms, dicts=dicts)}
        if builtin is not None:
            header["builtin"] = builtin
        if method is not None:
            header["method"] = method
        header["patches"] = _patches.changes(lambda value: self.encode(value, blobs, tensors, copies, memories, atoms,
                                                                       dicts=dicts))
        header["memories"] = memories.finish(blobs)
        if copies:
            try:
                blobs.append(_pickled(copies, self))
                pickled = len(blobs) - 1
            except Exception as exc:  # noqa: BLE001 - what pickle refuses, said as the wire says it
                kinds = ", ".join(sorted({type(c).__name__ for c in copies}))
                raise TypeError(f"a {kinds} cannot be passed to the submission's process (its tests "
                                f"run in a process of their own): {exc}") from None
            # Pickle leaves out a tensor's .grad: the copies' modules get theirs as data.
            grads = [[i, [None if t.grad is None else wire.encode(t.grad.detach(), blobs) for t in module_tensors(c)]]
                     for i, c in enumerate(copies) if isinstance(c, torch.nn.Module)]
            # A module sent is mirrored from now on: the same object there for every later call.
            adopt = [[i, *self.mirrors.adopt(c)] for i, c in enumerate(copies) if isinstance(c, torch.nn.Module)]
            # Pickle leaves out an optimizer's step hooks (a test's spies): they go as callbacks.
            hooks = [[i, *([self.callbacks.node(h, weak=True)["i"] for h in fns] for fns in step_hooks(c))]
                     for i, c in enumerate(copies) if isinstance(c, torch.optim.Optimizer)]
            hook_keys = [hooks_key(c) for c in copies]
            header["copies"] = {"blob": pickled, "grads": grads, "adopt": adopt, "hooks": hooks}
        if copies or any(type(a) not in wire.ATOMS for a in atoms):  # to import test modules' classes by name
            header["path"] = [p for p in sys.path if isinstance(p, str)]
        header["state"] = {"grad_enabled": torch.is_grad_enabled(), "gc_enabled": gc.isenabled(),
                           "autocast": [[device, self.encode(torch.get_autocast_dtype(device), blobs)]
                                        for device in wire.AUTOCAST_DEVICES if torch.is_autocast_enabled(device)],
                           "default_dtype": self.encode(torch.get_default_dtype(), blobs),
                           "rng": self._rng_to_send(blobs)}
        if (policy := _keras.global_policy()) is not None:
            header["state"]["keras_policy"] = policy
        header["push"] = self.mirrors.push(blobs)
        header["kept"] = self.kept.changes(blobs)
        header["kept_hooks"] = self.kept.hook_changes(lambda fn: self.callbacks.node(fn, weak=True)["i"])
        shared = self.mirrors.requiring_grad() if torch.is_grad_enabled() else []
        header["grad_shared"] = [tid for tid, _ in shared]
        torch_grads = [t for t in tensors if t.requires_grad and torch.is_grad_enabled()]
        needs_grad = torch_grads + [t for _, t in shared]
        on_tape = _tfgrad.watched(atoms)  # TensorFlow tensors a test's tape may be watching
        try:
            # While a test's tape may record, a call of a TensorFlow exercise is one op of those
            # tensors and of the variables of the submission's it reads (a model's weights); so
            # is a call on watched TensorFlow tensors alone beside torch modules whose parameters
            # require grad (a Keras model ported from the test's torch model).
            if on_tape and not torch_grads or _tfgrad.recording() and not needs_grad:
                header["tf_grad"] = [i for i, _ in on_tape]
                result, reply = _tfgrad.bridged(
                    self, lambda outputs: self._finish_call(header, blobs, tensors, copies=copies, memories=memories,
                                                            atoms=atoms, tf_outputs=outputs),
                    [t for _, t in on_tape])
            elif not needs_grad:
                result, reply = self._finish_call(header, blobs, tensors, copies=copies, memories=memories,
                                                  atoms=atoms)
            else:
                header["grad_call"] = True
                holder: dict = {"copies": copies, "memories": memories, "atoms": atoms}
                bridged = _bridge().apply(self, header, blobs, tensors, holder, *needs_grad)
                result, reply = holder["result"], holder["reply"]
                outputs = holder["outputs"]
                swap = {id(t): b for t, b in zip(outputs, bridged[1:], strict=True)}
                result = replace_tensors(result, swap)
        except _CallRaised as raised:
            # What the call changed before it raised stays changed, as in one process (a module's
            # training flags that a failing call left switched).
            with torch.no_grad():
                self._take_changes(raised.reply, tensors, copies, memories, hook_keys, atoms, dicts)
            raise raised.error from None
        self._take_changes(reply, tensors, copies, memories, hook_keys, atoms, dicts)
        self._share_retained(reply.get("retained", []), tensors)
        if probe is not None:
            self.evidence_taken += 1
            try:
                return result, _probes.evidence(probe, wire.decode(reply.get("evidence"), reply.get("blobs", [])))
            except (wire.WireError, TypeError, ValueError):
                self._fail(f"the submission's process sent no evidence of the check {probe!r}")
        return result

    def _finish_call(self, header: dict, blobs: list[bytes], tensors: list, outputs: list | None = None,
                     copies: list = (), memories: SentMemories | None = None,
                     atoms: list = (), tf_outputs: list | None = None) -> tuple[Any, dict]:

        node, reply, out = self.request(header, blobs)

        def handle(n: dict) -> Any:
            if n["k"] == "arg" and "c" in n:
                if type(n["c"]) is not int or not 0 <= n["c"] < len(copies):
                    raise wire.WireError("a reference to an object that was not sent")
                return copies[n["c"]]
            if n["k"] == "arg" and "a" in n and memories is not None:
                return memories.sent(n["a"])
            if n["k"] == "arg" and "o" in n:
                if type(n["o"]) is not int or not 0 <= n["o"] < len(atoms):
                    raise wire.WireError("a reference to a value that was not sent")
                return atoms[n["o"]]
            if n["k"] == "view" and memories is not None:
                self.evidence_taken += 1  # that it shares an argument's memory is the executor's word
                return memories.view(n)
            if n["k"] == "arg":
                if type(n.get("i")) is not int or not 0 <= n["i"] < len(tensors):
                    raise wire.WireError("a reference to an argument that was not sent")
                return tensors[n["i"]]
            if n["k"] == "live":  # its tensors are the call's outputs too, numbered where they sit
                return self._live(n, out, handle, outputs)
            return self._object(n, out)

        try:
            result = wire.decode(node, out, handle=handle, tensors=outputs, classes=class_of_tests,
                                 tf_tensors=tf_outputs)
            if tf_outputs is not None:  # made for a test's tape: the variables it read there
                reply["variables_read"] = self._variables_read(reply, out)
            # The graphs of callback calls the executor freed during this call go now, not at
            # the next request: a test may check right after the call that nothing holds them.
            self.callbacks.drop()
        except (wire.WireError, KeyError, TypeError, ValueError, RuntimeError) as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")
        reply["blobs"] = out
        return result, reply

    def _take_changes(self, reply: dict, tensors: list, copies: list, memories: SentMemories,
                      hook_keys: list, atoms: list, dicts: list) -> None:
        """Make the arguments what the call made them in the executor (their memories' bytes
        last; the TensorFlow variables among ``atoms`` and the items of ``dicts`` too), and take
        its RNG state. Runs after a
        call's autograd node is made, with this process's grad mode: history an argument gained
        there is gained here too."""
        out = reply["blobs"]
        try:
            for entry in reply.get("changed", []):
                index, change = wire.as_list(entry, 2)
                if type(index) is not int or not 0 <= index < len(tensors):
                    raise wire.WireError("a change to an argument that was not sent")
                apply_change(tensors[index], change, out)
            states = reply.get("copies", [])
            if not isinstance(states, list) or len(states) != len(copies):
                raise wire.WireError("the objects sent came back as something else")
            for obj, state, hooks in zip(copies, states, hook_keys):
                if _take_state(obj, state, out):
                    self.evidence_taken += 1  # a spy's records, as the executor's copy has them
                if isinstance(state, dict) and "kept" in state:
                    ident = self.own_id(state["kept"])
                    self.kept.add(ident, obj, hooks)
                    weakref.finalize(obj, self._release_kept, ident)
            if self.kept.take(reply.get("kept", []), out):
                self.evidence_taken += 1
            memories.write_back(reply.get("memories", []), out)
            if reply.get("tf_variables"):
                _tfgrad.take_variable_changes(reply["tf_variables"], atoms, out)
            for entry in wire.as_list(reply.get("dicts", [])):  # what the call set or deleted in a dict sent
                index, assigned, deleted = wire.as_list(entry, 3)
                if type(index) is not int or not 0 <= index < len(dicts):
                    raise wire.WireError("a change to a dict that was not sent")
                for key in wire.as_list(deleted):
                    dicts[index].pop(self.decode(key, out), None)
                for pair in wire.as_list(assigned):
                    key, value = wire.as_list(pair, 2)
                    dicts[index][self.decode(key, out)] = self.decode(value, out)
            if "keras_policy" in reply:  # the submission set Keras's global dtype policy
                _keras.set_global_policy(reply["keras_policy"])
            self.mirrors.take(reply.get("shared"), out)
            for entry in wire.as_list(reply.get("live", [])):  # what the call changed in dicts read before
                ident, node = wire.as_list(entry, 2)
                if self.live_dicts.get(self.own_id(ident)) is not None:
                    self._object(node, out)
            self._take_rng(reply["rng"], out)
        except (wire.WireError, KeyError, TypeError, ValueError, RuntimeError) as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")

    def _share_retained(self, retained: Any, tensors: list) -> None:
        """Share each argument tensor the submission kept from a call with the executor's
        (``Executor.op_call`` says which): a later change to either reaches the other, as one
        tensor in one process (the parameters an optimizer keeps, and their gradients)."""
        import torch

        try:
            for entry in wire.as_list(retained):
                index, tid = wire.as_list(entry, 2)
                if type(index) is not int or not 0 <= index < len(tensors):
                    raise wire.WireError("a kept argument that was not sent")
                tid, t = self.own_id(tid), tensors[index]
                if type(t) in (torch.Tensor, torch.nn.Parameter) and self.mirrors.tensor_id(t) is None:
                    self.mirrors.share(t, tid)
                else:  # sent twice, or of a kind that crosses as a copy: the executor's stays its own
                    self.release(tid)
        except wire.WireError as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")

    def _take_rng(self, node: Any, out: list[bytes]) -> None:
        """Take the executor's random state after a request (None: it drew nothing)."""
        rng = wire.decode(node, out)
        if rng is not None:
            self.rng.take(rng)

    def _rng_to_send(self, blobs: list[bytes]) -> Any:
        """This process's random state (``grader.remote._rng``) for the executor to take, or None
        when the executor's is the same already (no random number was drawn here since the last
        call)."""
        state = self.rng.change()
        return None if state is None else self.encode(state, blobs)

    def vjp(self, call: int, grads: tuple) -> list:
        from grader.checks._opcount import recorded_elsewhere

        blobs: list[bytes] = []
        with recorded_elsewhere() as add:
            node, reply, out = self.request({"op": "vjp", "call": self.live(call), "record_ops": add is not None,
                                             "grads": self.encode(list(grads), blobs)}, blobs)
            self._take_backward_changes(reply, out)
            if add is not None:
                add(self._ops_recorded(reply, out))
            return self.decode(node, out)

    def vjps(self, call: int, each: list) -> tuple[list, BaseException | None]:
        """The products of ``call`` for each tuple of grads in ``each``, made in turn in one
        request, and the exception of the product after the last of them, rebuilt (None when
        none raised): the products end at one that raised."""
        blobs: list[bytes] = []
        node, reply, out = self.request({"op": "vjps", "call": self.live(call),
                                         "each": self.encode([list(grads) for grads in each], blobs)}, blobs)
        self._take_backward_changes(reply, out)
        results, raised = self.decode(node, out), reply.get("raised")
        if not (isinstance(results, list) and len(results) <= len(each)
                and (raised is None or isinstance(raised, dict))):
            self._fail("the submission's process answered out of protocol (products)")
        return results, None if raised is None else _rebuilt_exception(raised)

    def tf_vjp(self, call: int, upstream: tuple, inputs: list, variables: list = ()) -> list:
        """The gradients for ``inputs`` (the tensors a call watched), then for ``variables`` (pairs
        of the id a variable there has and the variable here that stands for it), of that call's
        outputs weighted by ``upstream``, from its tape there (``grader.remote._tfgrad``)."""
        blobs: list[bytes] = []
        node, _, out = self.request({"op": "tf_vjp", "call": self.live(call),
                                     "variables": [vid for vid, _ in variables],
                                     "grads": self.encode(list(upstream), blobs)}, blobs)
        try:
            return _tfgrad.checked_gradients(self.decode(node, out), [*inputs, *(var for _, var in variables)])
        except wire.WireError as exc:
            self._fail(f"the submission's process answered out of protocol ({exc})")

    def _variables_read(self, reply: dict, out: list[bytes]) -> list:
        """``[id, tf.Variable here]`` of each trainable variable a call made for a test's tape read
        there (its reply's ``tf_read``): the submission's (held from now on as the test holds them)
        and the test's own that the submission's proxies copied. Read before the callbacks the
        call let go are forgotten (a proxy of the test's model, with its variables' ids)."""
        found = []
        for node in wire.as_list(reply.get("tf_read", [])):
            var = self._object(node, out)
            if not _keras.is_variable(var):
                raise wire.WireError("a variable read that is not a variable")
            found.append([node["id"], _keras.tf_variable(var)])
        return found

    def function_of(self, call: int, index: int) -> Any:
        """The ``torch.autograd.Function`` subclass whose node made output ``index`` of ``call``
        there (its stand-in, ``function_class``), or None: the executor's word."""
        node, _, out = self.request({"op": "made_by", "call": self.live(call), "output": index}, [])
        self.evidence_taken += 1
        return self.decode(node, out)

    def _ops_recorded(self, reply: dict, out: list[bytes]) -> list:
        """The ops the executor recorded during a product (``record_ops``): its word."""
        self.evidence_taken += 1
        try:
            return _probes.evidence("aten_ops", wire.decode(reply.get("evidence"), out))
        except (wire.WireError, TypeError, ValueError):
            self._fail("the submission's process sent no record of the ops of a backward")

    def _take_backward_changes(self, reply: dict, out: list[bytes]) -> None:
        """What a product changed in the mirrored modules, when a forward ran during it (a
        checkpoint's recomputation: ``Executor.op_vjp`` there)."""
        if "shared" in reply:
            try:
                self.mirrors.take(reply["shared"], out)
            except (wire.WireError, KeyError, TypeError, ValueError, RuntimeError) as exc:
                self._fail(f"the submission's process answered out of protocol ({exc})")

    def vjp_graph(self, call: int, inputs: tuple, grads: tuple) -> list:
        """The vector-Jacobian product of ``call`` as a call there (a backward with
        ``create_graph``): differentiable in the call's ``inputs`` and in ``grads``."""
        from grader.checks._opcount import recorded_elsewhere

        blobs: list[bytes] = []
        with recorded_elsewhere() as add:
            header = {"op": "vjp", "call": self.live(call), "create_graph": True, "record_ops": add is not None,
                      "grads": wire.encode(list(grads), blobs)}
            needs = [*inputs, *(g for g in grads if g is not None and g.requires_grad)]
            holder: dict = {"copies": []}
            bridged = _bridge().apply(self, header, blobs, [], holder, *needs)
            self._take_backward_changes(holder["reply"], holder["reply"]["blobs"])
            if add is not None:
                add(self._ops_recorded(holder["reply"], holder["reply"]["blobs"]))
        swap = {id(t): b for t, b in zip(holder["outputs"], bridged[1:], strict=True)}
        return replace_tensors(holder["result"], swap)

    def _release_kept(self, ident: int) -> None:
        self.kept.forget(ident)
        self.release(ident)

    def release(self, ident: int) -> None:
        self.modules.pop(ident, None)
        ident = self.moved.pop(ident, ident)
        if ident >= self.base:  # an object of a process stopped since is gone with it
            self.to_free.append(ident)


def _take_state(obj: Any, state: Any, blobs: list[bytes]) -> bool:
    """Make ``obj``, which the executor was given a copy of, what its copy became there: an
    optimizer's or scheduler's state (``grader.remote._kept.kept_state``); a generator's state.
    (A module sent is mirrored from then on: ``grader.remote._mirror``.) Whether data a class
    of the tests adds changed (the executor's word)."""
    import torch

    if not isinstance(state, dict) or state.get("kind") == "none":
        return False
    kind = state["kind"]
    if kind == "state_dict" and hasattr(obj, "load_state_dict"):
        return load_kept_state(obj, wire.decode(state["state"], blobs))
    if kind == "generator" and isinstance(obj, torch.Generator):
        obj.set_state(wire.decode(state["state"], blobs))
        return False
    raise wire.WireError(f"a {kind} state for a {type(obj).__name__}")


# What ``_Pickler`` pickles as itself without asking what else it is.
_PICKLED_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes, tuple, list, dict})


class _Pickler(pickle.Pickler):
    """Pickles a test's objects for the executor; a mirror there, or one of its tensors, goes by
    its id and is unpickled as the executor's own (``grader.remote._executor._Unpickler``), and a
    function inside (an optimizer's hook) as a callback."""

    def __init__(self, file, executor: Executor, objects: list, *, trying: bool = False) -> None:
        super().__init__(file)
        self.executor, self.trying = executor, trying  # trying: whether they can be pickled, registering nothing
        # A module's tables of call hooks go empty: the test's hooks fire here (Mirrors.push
        # sends placeholders of its forward hooks), so none is sent as a callback to hold.
        self.hook_tables = {id(table) for c in objects if isinstance(c, sys.modules["torch"].nn.Module)
                            for m in c.modules() for name in CALL_HOOKS if (table := m.__dict__.get(name)) is not None}

    def persistent_id(self, obj: Any) -> Any:
        if id(obj) in self.hook_tables:
            return ("hooks", 0)
        if type(obj) in _PICKLED_PLAIN:  # most of what a copy holds: none of the kinds below
            return None
        if is_callback(obj):  # a hook on a test's optimizer, say: it runs here when called there
            if self.trying:
                return ("callback", 0, "")
            node = self.executor.callbacks.node(obj)
            return ("callback", node["i"], node["name"], node.get("function", False))
        torch = sys.modules["torch"]
        if isinstance(obj, torch.Tensor) and (tid := self.executor.mirrors.tensor_id(obj)) is not None:
            return ("shared", tid)
        if isinstance(obj, torch.nn.Module) and (ident := self.executor.mirrors.module_id(obj)) is not None:
            return ("module", self.executor.live(ident))
        if (ident := self.executor.kept_ident(obj)) is not None:
            return ("kept", ident)
        if type(obj) is getattr(_bridge(), "_backward_cls", None) and getattr(obj, "executor", None) is self.executor:
            return ("node", self.executor.live(obj.call))  # a call's autograd node: that call's node there
        return None


def _copied_whole(value: Any) -> bool:
    """Whether ``value`` is of a kind that is always sent as a copy (a module, an optimizer, a
    generator), not asked first whether pickle takes it."""
    torch = sys.modules["torch"]
    return isinstance(value, (torch.nn.Module, torch.optim.Optimizer, torch.Generator))


def _picklable(value: Any, executor: Executor) -> bool:
    """Whether ``value`` can be pickled for the executor (what ``_Pickler`` would send by id
    counted as sendable)."""
    try:
        with _patches.unpatched():  # torch.save pickles a tensor's storage: the test's stand-in is not ours
            _Pickler(io.BytesIO(), executor, [value], trying=True).dump(value)
    except Exception:  # noqa: BLE001 - whatever pickle refuses: a lock, a thread, an open file
        return False
    return True


def _attribute_of(obj: Any, name: Any, *value: Any) -> Any:
    """``obj.name`` for the executor's proxy of ``obj``: a method (or any callable) as a callback,
    so that it runs here, but a function of Keras's by name (a layer's activation); a value as
    itself. With a ``value``, ``obj.name = value``, for a plain
    value (a string, a number, a bool or None: a model's ``stop_training``) in place of an
    attribute that is not callable (a method the submission put there would run in the tests'
    checks). Public attributes only: the executor names them, and ``__class__`` or
    ``__setattr__`` would reach further into this process than the object's use."""
    if type(name) is not str or name.startswith("_"):
        raise AttributeError(f"{type(obj).__name__}'s attribute {str(name)[:100]!r} is not reachable from the "
                             "submission's process")
    if value:
        (new,) = value
        if not (new is None or type(new) in (bool, *wire.ATOMS)) or callable(getattr(obj, name, None)):
            raise AttributeError(f"{type(obj).__name__}'s attribute {name[:100]!r} takes only a plain value "
                                 "from the submission's process (its tests run in a process of their own)")
        setattr(obj, name, new)
        return None
    got = getattr(obj, name)
    return functools.partial(got) if callable(got) and not wire.is_library_function(got) else got


def _pickled(objects: list, executor: Executor) -> bytes:
    buffer = io.BytesIO()
    with _patches.unpatched():  # as in _picklable
        _Pickler(buffer, executor, objects).dump(objects)
    return buffer.getvalue()


def _is_iterator(value: Any) -> bool:
    return hasattr(value, "__next__") and hasattr(value, "__iter__")


@cache
def _bridge():
    """The autograd function of a call in the executor, made on first use (it needs torch)."""
    import torch

    class Bridge(torch.autograd.Function):
        """A call in the executor as one autograd node: its backward is the executor's
        vector-Jacobian product of that call."""

        @staticmethod
        def function_there(ctx, output) -> Any:
            """The ``torch.autograd.Function`` subclass (its stand-in here) whose node made the
            call's ``output`` there, or None (``grader.checks.autograd_function``)."""
            return ctx.executor.function_of(ctx.call, output.output_nr - 1)

        @staticmethod
        def forward(ctx, executor, header, blobs, tensors, holder, *needs_grad):
            outputs: list = []
            result, reply = executor._finish_call(header, blobs, tensors, outputs, holder["copies"],
                                                  holder.get("memories"), holder.get("atoms", ()))
            flags = reply.get("differentiable")
            if type(reply.get("call")) is not int or not isinstance(flags, list) or len(flags) != len(outputs):
                executor._fail("the submission's process answered out of protocol (a call's gradients)")
            ctx.executor, ctx.call, ctx.n_inputs = executor, reply["call"], len(needs_grad)
            ctx.save_for_backward(*needs_grad)  # the inputs of a double backward's product
            weakref.finalize(ctx, executor.release, reply["call"])
            holder.update(result=result, reply=reply, outputs=outputs)
            marker = torch.empty(0)  # an output even when the call returned no tensor
            ctx.mark_non_differentiable(marker, *[o for o, f in zip(outputs, flags, strict=True)
                                                  if f is not True or not (o.is_floating_point() or o.is_complex())])
            return (marker, *outputs)

        @staticmethod
        def expect_products(ctx, each: list) -> None:
            """The products the next backwards through this node will ask for, in order, each a
            tuple of grads for the call's outputs (``grader.checks.check_gradients``'s Jacobian
            rows): the first of them asks the executor for all at once, and each that asks for
            the next of them is answered from those (one that raised there raises here). One
            that asks for anything else is made by itself, as is every one after it."""
            ctx.expected, ctx.answered, ctx.raised = collections.deque(each), None, None

        @staticmethod
        def backward(ctx, _marker, *grads):
            # Read even when unused: a second backward through a graph the first one freed (no
            # retain_graph) raises here, as it would in one process.
            inputs = ctx.saved_tensors
            expected = getattr(ctx, "expected", None)
            if expected and not torch.is_grad_enabled() and _same_grads(grads, expected[0]):
                if ctx.answered is None:  # the first of them: all are asked for
                    answered, ctx.raised = ctx.executor.vjps(ctx.call, list(expected))
                    ctx.answered = collections.deque(answered)
                expected.popleft()
                if not ctx.answered:
                    ctx.expected = None
                    if ctx.raised is not None:
                        raise ctx.raised
                else:
                    result = ctx.answered.popleft()
                    if not isinstance(result, list) or len(result) != ctx.n_inputs:
                        ctx.executor._fail("the submission's process answered out of protocol (a gradient)")
                    return (None, None, None, None, None, *result)
            if expected is not None:
                ctx.expected = None  # asked for something else: every product from now on by itself
            if torch.is_grad_enabled():  # create_graph: the product is differentiable too
                result = ctx.executor.vjp_graph(ctx.call, inputs, grads)
            else:
                result = ctx.executor.vjp(ctx.call, tuple(None if g is None else g.detach() for g in grads))
            if not isinstance(result, list) or len(result) != ctx.n_inputs:
                ctx.executor._fail("the submission's process answered out of protocol (a gradient)")
            return (None, None, None, None, None, *result)

    return Bridge


def _same_grads(grads: tuple, expected: tuple) -> bool:
    import torch

    return len(grads) == len(expected) and all(
        g is None and e is None or g is not None and e is not None and torch.equal(g, e)
        for g, e in zip(grads, expected, strict=True))


class _CallRaised(Exception):
    """A call that raised in the executor (``error``, rebuilt), with the reply that says what it
    changed before (``Executor._take_changes`` applies it)."""

    def __init__(self, error: BaseException, reply: dict) -> None:
        super().__init__(error)
        self.error, self.reply = error, reply


_EXCEPTIONS: dict[tuple[str, str], type] = {}


def _tests_exception_class(module: Any, qualname: Any) -> type | None:
    """The ``Exception`` class ``qualname`` of the test module ``module`` (one this process
    imported, named ``test_...``), or None: an exception a module of the tests raised there
    (pickled there by reference to its class) is raised here as that very class."""
    if type(module) is not str or type(qualname) is not str or "<" in qualname:
        return None
    found: Any = sys.modules.get(module)
    if found is None or not of_test_module(module):
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, Exception) and found.__module__ == module:
        return found
    return None


def _tensorflow_error(module: Any, qualname: Any, message: str) -> BaseException | None:
    """One of TensorFlow's op errors (``tf.errors.InvalidArgumentError``...) raised there, as that
    class here with its message; None for any other exception, or where TensorFlow is not loaded."""
    tf = sys.modules.get("tensorflow")
    if tf is None or module != "tensorflow.python.framework.errors_impl" or type(qualname) is not str:
        return None
    cls = getattr(tf.errors, qualname, None)
    if not (isinstance(cls, type) and issubclass(cls, tf.errors.OpError)):
        return None
    return cls(None, None, message)


def _rebuilt_exception(error: Any) -> BaseException:
    """The executor's exception as raised here: of the built-in class it derives from (a class
    of that name deriving from it when the executor's was not built-in), with its message."""
    if not isinstance(error, dict):
        return ExecutorFailed("the submission's process answered out of protocol (an error)")
    name, base_name = str(error.get("type"))[:200], str(error.get("builtin"))
    message = wire.bounded_message(str(error.get("message")))
    from grader._loader import ImplementationError, MissingImplementation, StubRaised

    if error.get("missing") is True:
        return MissingImplementation(message)
    if error.get("import_failed") is True:
        return ImplementationError(message)
    if error.get("stub") is True:
        return StubRaised(message)
    base = getattr(builtins, base_name, None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    if (op_error := _tensorflow_error(error.get("module"), error.get("qualname"), message)) is not None:
        return op_error
    tests = _tests_exception_class(error.get("module"), error.get("qualname"))
    if tests is not None:  # a test's own exception, raised there by a module of the test's
        cls = tests
    elif name == base.__name__:
        cls = base
    else:
        cls = _EXCEPTIONS.get((name, base.__name__))
        if cls is None:
            cls = _EXCEPTIONS[(name, base.__name__)] = type(name, (base,), {"__module__": "submission"})
    try:
        exc = cls(message)
    except Exception:  # noqa: BLE001 - a class of the tests that wants other arguments
        exc = base(message)
    where = error.get("where")
    if isinstance(where, str) and where:
        exc.add_note(where[:wire.MAX_MESSAGE])
    return exc


class Executors:
    """The executors of one grading session: one zygote, and an executor per exercise graded
    apart, started when its tests first load the submission."""

    def __init__(self, zygote: Zygote) -> None:
        self.zygote = zygote
        self.of_exercise: dict[str, Executor] = {}

    @classmethod
    def start(cls, close: list[int], threads: int | None = None) -> Executors:
        """``Zygote.start(close, threads)``, before this process reads its key."""
        return cls(Zygote.start(close, threads))

    def load(self, exercise_id: str, root: Path) -> RemoteObject:
        """The exercise's module under ``root``, imported in that exercise's executor."""
        if exercise_id not in self.of_exercise:
            self.of_exercise[exercise_id] = Executor(self.zygote)
        return self.of_exercise[exercise_id].load(exercise_id, root)

    def revive(self, exercise_id: str) -> None:
        """Before a test of ``exercise_id``: a fresh process for its executor if its process was
        stopped or ended (``Executor.revive``), and the others' processes stopped: a grading
        child runs each exercise's tests together, so theirs have run (and every executor left
        running would hold its threads against the child's process budget). Nothing one
        exercise's submission does reaches another's tests."""
        for other, executor in self.of_exercise.items():
            if other != exercise_id:
                executor.retire()
        if exercise_id in self.of_exercise:
            self.of_exercise[exercise_id].revive()

    def follow(self, test: Any) -> None:
        """From now on, around each call into an executor, what the ``monkeypatch`` fixture of
        ``test`` (a pytest item, once the fixture is set up) changed applies there too
        (``grader.remote._patches``)."""
        _patches.follow(lambda: getattr(test, "funcargs", {}).get("monkeypatch"))

    @property
    def evidence_taken(self) -> int:
        return sum(e.evidence_taken for e in self.of_exercise.values())

    def close(self) -> None:
        for executor in self.of_exercise.values():
            executor.close()
        self.zygote.close()


# The dunder attributes a handle reads there: a function's names, for a test's message.
_NAMES = ("__name__", "__qualname__")


class RemoteObject:
    """An object that lives in the executor. Reading an attribute, calling it, iterating over it,
    ``len``, ``bool``, ``str`` and ``repr`` ask the executor; setting an attribute sets it there.
    One whose class derives from a torch optimizer, scheduler or data class is an instance of
    that class to ``isinstance`` (the executor's word, ``grader.remote._claims``)."""

    __slots__ = ("__weakref__", "_executor", "_ident", "_type_name", "_callable", "_cache", "_claimed", "_cls")

    @classmethod
    def _new(cls, executor: Executor, ident: int, type_name: str, is_callable: bool,
             claimed: type | None = None, class_key: int | None = None) -> RemoteObject:
        obj = object.__new__(cls)
        for name, value in (("_executor", executor), ("_ident", ident), ("_type_name", type_name),
                            ("_callable", is_callable), ("_cache", {}), ("_claimed", claimed), ("_cls", class_key)):
            object.__setattr__(obj, name, value)
        weakref.finalize(obj, executor.release, ident)
        return obj

    @property
    def __class__(self) -> type:
        """The claimed class, which ``isinstance`` asks for when this one is not the class
        it checks; reading it makes the test one checked in the executor."""
        claimed = object.__getattribute__(self, "_claimed")
        if claimed is None:
            return type(self)
        object.__getattribute__(self, "_executor").evidence_taken += 1
        return claimed

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in _NAMES:
            raise AttributeError(name)
        cache = object.__getattribute__(self, "_cache")
        generation = self._executor.generation
        if name in cache and cache[name][0] == generation:
            return cache[name][1]
        if (method := self._executor.method(self._ident, self._cls, name)) is not None:
            return method
        value = self._executor.getattr(self._ident, name)
        # A module's functions and classes: read once per process (not a Function class's
        # stand-in: a test that reads one relies on the executor's word, each time).
        if self._type_name == "module" and (isinstance(value, RemoteObject) and value._callable
                                            or isinstance(value, type) and not issubclass(value, _function())):
            cache[name] = (generation, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_cache").pop(name, None)
        self._executor.setattr(self._ident, name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self._executor.call(self._ident, args, kwargs)
        _crossings.note_call(self, args, kwargs, result)
        return result

    def call_each_in_executor(self, calls: list, grad_at: list) -> tuple[list, BaseException | None]:
        """``self(*args, **kwargs)`` for each ``(args, kwargs)`` of ``calls`` in turn, made in the
        executor in one request (``grader.checks.check_gradients``'s evaluations): each argument
        at a place of ``grad_at`` (an index into ``args``, or a keyword) is made a leaf that
        requires grad first, and each tensor of the results is a copy that requires none.
        Returns the results and the exception of the call after the last of them, rebuilt
        (None when none raised). The calls end at one that raised, or that changed an
        argument in place (its result is the last)."""
        answer = self._executor.call(self._ident, (self, [[list(a), dict(k)] for a, k in calls], list(grad_at)),
                                     {}, builtin="each")
        results, raised = (answer.get("results"), answer.get("raised")) if isinstance(answer, dict) else (None, None)
        if not (isinstance(results, list) and len(results) <= len(calls)
                and (raised is None or isinstance(raised, dict))):
            self._executor._fail("the submission's process answered out of protocol (calls in turn)")
        return results, None if raised is None else _rebuilt_exception(raised)

    def call_probed(self, probe: str | tuple[str, Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """(``self(*args, **kwargs)``, the evidence of the check ``probe``), taken in the
        executor (``grader.remote._probes``)."""
        return self._executor.call(self._ident, args, kwargs, probe=probe)

    def tensors_held_in_executor(self) -> list:
        """The tensors this object holds, walked in the executor (``grader.checks.tensors_held_by``)."""
        return self._executor.tensors_held(self._ident)

    def __iter__(self):
        return iter(self._executor.items(self._ident))

    def __getitem__(self, key: Any) -> Any:
        return self._executor.call_method(self._ident, "__getitem__", (key,), {})

    def load_batches_in_executor(self, **loader_kwargs: Any) -> list:
        """One epoch of ``torch.utils.data.DataLoader(obj, **loader_kwargs)``, loaded in the
        executor (its workers forked from there), as a list of batches
        (``grader.checks.load_batches``)."""
        return self._executor.call(self._ident, (self,), loader_kwargs, builtin="loader")

    def run_in_executor(self, name: str, *args: Any) -> Any:
        """``name(*args)``, one of the torch functions a test runs where the submission lives,
        run in the executor (``grader.checks.where_the_submission_lives``)."""
        return self._executor.call(self._ident, args, {}, builtin=name)

    def __enter__(self) -> Any:
        return self._executor.call_method(self._ident, "__enter__", (), {})

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> Any:
        """The executor's ``__exit__``, given the exception that ended the block (rebuilt there
        as ``grader.remote._callbacks`` rebuilds a test's exceptions)."""
        return self._executor.call(self._ident, (self, exc), {}, builtin="exit")

    def __len__(self) -> int:
        return self._executor.describe(self._ident, "len")

    def __bool__(self) -> bool:
        return bool(self._executor.describe(self._ident, "bool"))

    def __repr__(self) -> str:
        return str(self._executor.describe(self._ident, "repr"))

    def __str__(self) -> str:
        return str(self._executor.describe(self._ident, "str"))


class LiveDict(dict):
    """A dict read from an object in the executor (``optimizer.param_groups[0]``): a copy here,
    whose item writes (``group["lr"] = x``, ``del``, ``update``, ``setdefault``, ``pop``) are
    made to the executor's dict too, as a scheduler's reach the optimizer's own groups, and
    which takes what each later call changed in that dict (a hook's record of activations). It
    pickles and copies as a plain dict."""

    @classmethod
    def _new(cls, executor: Executor, ident: int, items: dict) -> LiveDict:
        live = cls(items)
        live._executor, live._ident = executor, ident
        weakref.finalize(live, executor.release, ident)
        return live

    def _take(self, items: dict) -> None:
        """Hold ``items``, what the executor's dict holds now (nothing is sent)."""
        dict.clear(self)
        dict.update(self, items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._executor.setitem(self._ident, key, value)
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._executor.delitem(self._ident, key)
        super().__delitem__(key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> LiveDict:
        self.update(other)
        return self

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: Any, *default: Any) -> Any:
        if key not in self:
            return super().pop(key, *default)
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[Any, Any]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self))
        return key, self.pop(key)

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    def __reduce__(self):
        return dict, (dict(self),)


def _function() -> type:
    import torch

    return torch.autograd.Function


@lru_cache(maxsize=256)
def _handle_class(name: str) -> type[RemoteObject]:
    """The class of handles to the executor's instances of its class ``name``: a
    ``RemoteObject`` so named, so that ``type(obj).__name__`` in a test's message names it."""
    return type(name, (RemoteObject,), {"__slots__": (), "__module__": "submission"})
