"""Functions of the tests that the submission calls: they run in the trusted process.

A function, lambda or bound method a test hands the submission (a loss function, a function to
differentiate, a batch to try, a spy's method) travels as a *callback*: the executor gets a
stand-in (``Stub``) that, when called, sends the call back over the same socket and waits, while
the trusted side runs the test's own function and answers. Either side serves the other's requests
while it waits, so a callback may call into the submission again. Around each callback the two
sides agree on every shared tensor and mirrored module (``grader.remote._mirror``), as around a
call, and on the RNG state, so a test's optimizer stepping the parameters the submission's
backward just filled sees the same tensors as in one process. A callback whose tensor arguments
require grad is one autograd node in the executor whose backward asks the trusted side for the
vector-Jacobian product.

``Callbacks`` is the trusted side's registry and server; ``Stub`` and ``Caller`` the executor's.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import functools
import importlib
import sys
import types
import weakref
from functools import cache
from typing import Any

from grader.remote import _keras, _tfgrad, _tfgraph
from grader.remote import _wire as wire
from grader.remote._kept import is_kept_kind
from grader.remote._sync import replace_tensors, vector_jacobian


def of_test_module(module: Any) -> bool:
    """Whether ``module`` (a module's name) names a test module (``test_...``, in a package or not)."""
    return str(module).rpartition(".")[2].startswith("test_")


def _kind_of_class(klass: type) -> str | None:
    """``"namedtuple"`` or ``"dataclass"`` (one whose instances have a ``__dict__``) for such a
    class, else None."""
    if issubclass(klass, tuple) and type(getattr(klass, "_fields", None)) is tuple:
        return "namedtuple"
    if dataclasses.is_dataclass(klass) and klass.__dictoffset__:
        return "dataclass"
    return None


def instance_kind(value: Any) -> str | None:
    """``"namedtuple"`` or ``"dataclass"`` when ``value`` is one of a test module's namedtuples or
    dataclass instances, which cross by value: a batch the submission rebuilt with the test's
    container classes comes back as one (``grader.remote._wire``)."""
    klass = type(value)
    return _kind_of_class(klass) if of_test_module(klass.__module__) else None


def class_of_tests(module: str, qualname: str, kind: str, *, load: bool = False) -> type:
    """The namedtuple or dataclass ``qualname`` of the test module ``module`` (imported here
    already, or with ``load`` imported now), as an instance node names it
    (``grader.remote._wire``); ``WireError`` for any other class."""
    found: Any = None
    if of_test_module(module) and "<" not in qualname:
        found = sys.modules.get(module) or (importlib.import_module(module) if load else None)
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None)
    if isinstance(found, type) and found.__module__ == module and _kind_of_class(found) == kind:
        return found
    raise wire.WireError(f"an instance of {qualname!r}, which is no namedtuple or dataclass of the tests")


def is_callback(value: Any) -> bool:
    """Whether ``value`` is passed as a callback: a Python function, lambda, bound method or
    partial, but not torch's own nor a function of Keras's or TensorFlow's (those cross by name
    and run there as they would); or a callable object of a class a test module defines,
    deriving from no torch class (a loss that records what it returned: its records stay here,
    where the test reads them), unless it is kept in step (``grader.remote._kept``: it has a
    ``state_dict``), which runs where the submission calls it (a fake device whose tries must be
    freed by the submission's ``gc.collect()``) and brings its records back after each call."""
    if isinstance(value, functools.partial):
        return True
    if wire.is_library_function(value):
        return False
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, types.FunctionType):
        return not str(value.__module__).startswith("torch")
    klass = type(value)
    return (callable(value) and not isinstance(value, type)
            and of_test_module(klass.__module__)
            and not any(str(k.__module__).startswith("torch") for k in klass.__mro__)
            and not is_kept_kind(value))


def describe_exception(exc: BaseException) -> dict:
    """An exception as the other side rebuilds it (``rebuild_exception``): its class's module
    and name, the nearest built-in class it derives from, and its message."""
    builtin = next((k.__name__ for k in type(exc).__mro__
                    if k.__module__ == "builtins" and issubclass(k, Exception)), "Exception")
    try:
        message = wire.bounded_message(str(exc))
    except Exception:  # noqa: BLE001 - a message that cannot be made is not one
        message = "<the exception's message could not be made>"
    return {"module": str(type(exc).__module__)[:200], "type": type(exc).__qualname__[:200],
            "builtin": builtin, "message": message}


def rebuild_exception(error: Any) -> BaseException:
    """The exception ``describe_exception`` described: of its own class where that is torch's
    or a built-in one (so ``except torch.OutOfMemoryError`` catches it), else of a class of its
    name deriving from its nearest built-in class."""
    if not isinstance(error, dict):
        return RuntimeError("a malformed exception")
    message = wire.bounded_message(str(error.get("message")))
    module, name = str(error.get("module")), str(error.get("type"))
    if module == "builtins" or module == "torch" or module.startswith("torch."):
        cls = _named_class(module, name)
        if cls is not None:
            try:
                return cls(message)
            except Exception:  # noqa: BLE001 - a class that wants other arguments: its base below
                pass
    base = getattr(builtins, str(error.get("builtin")), None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    return (base if name == base.__name__ else _derived(name, base))(message)


_RAISED_BY_TESTS = "_raised_by_the_tests"  # the attribute of an exception a test's function raised


def raised_by_tests(exc: BaseException, error: dict) -> BaseException:
    """``exc``, rebuilt from a test's function's ``error``, marked with the id the trusted side
    keeps the original under (``raised_id`` reads it back when the submission lets it through)."""
    if type(error.get("raised")) is int:
        exc.__dict__[_RAISED_BY_TESTS] = error["raised"]
    return exc


def raised_id(exc: BaseException) -> int | None:
    """The id of the test's exception ``exc`` stands for (``raised_by_tests``), or None."""
    key = getattr(exc, "__dict__", {}).get(_RAISED_BY_TESTS)
    return key if type(key) is int else None


def _named_class(module: str, name: str) -> type | None:
    try:
        value: Any = importlib.import_module(module)
        for part in name.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError):
        return None
    return value if isinstance(value, type) and issubclass(value, Exception) else None


@cache
def _derived(name: str, base: type) -> type:
    return type(name.rsplit(".", 1)[-1], (base,), {"__module__": "tests", "__qualname__": name})


# ----------------------------------------------------------------------------- the trusted side


class Callbacks:
    """The trusted side's callbacks of one executor: each function passed gets an id (the same
    function, the same id, while the executor holds its stand-in), and each callback call that
    needs gradients keeps its graph until the executor drops it."""

    def __init__(self, executor) -> None:
        self.executor = executor
        self.functions: dict[int, Any] = {}
        self.weak: dict[int, Any] = {}  # the ids of functions held weakly -> their weak references
        self.ids: dict[int, int] = {}  # id(function) -> its id
        self.graphs: dict[int, tuple[list, list]] = {}  # a callback call -> (inputs, outputs)
        self.dropped: Any = []  # what the executor's last answer said it dropped
        # The exceptions the test's functions raised during the request under way, by the id sent
        # with each: one the submission lets through is raised here as the very object.
        self.raised: dict[int, BaseException] = {}

    def node(self, fn: Any, *, weak: bool = False) -> dict:
        """The node of ``fn``, under the id it has while the executor holds its stand-in.
        ``weak``: ``fn`` is a hook on an object of the test's own that the executor holds a copy
        of (a step hook of an optimizer kept in step there, ``grader.remote._kept``; a gradient
        hook on a tensor of a module the test sent), which holds ``fn`` and outlives the copy, so
        it is not held here: held, a hook that refers to its object (a spy's method) would keep
        the object alive, the object its copy there, and the copy the hook's stand-in, a cycle
        across the two processes that neither could collect."""
        self.drop()  # an id the executor dropped is not to be sent again
        cid = self.ids.get(id(fn))
        if cid is None or self.function(cid) is not fn:
            cid = self.executor.new_id()
            self.ids[id(fn)] = cid
        if not weak:
            self.functions[cid] = fn
            self.weak.pop(cid, None)
        elif cid not in self.functions:
            self.weak[cid] = weakref.WeakMethod(fn) if isinstance(fn, types.MethodType) else weakref.ref(fn)
        node = {"k": "callback", "i": cid, "name": str(getattr(fn, "__name__", "callback"))[:200]}
        if type(fn) is types.FunctionType:
            node["function"] = True
        return node

    def function(self, cid: Any) -> Any:
        """The function sent under ``cid``; None when there is none (or it was held weakly and
        is gone: a hook of an optimizer freed here)."""
        fn = self.functions.get(cid)
        if fn is None and cid in self.weak:
            fn = self.weak[cid]()
        return fn

    def reraised(self, error: Any) -> BaseException | None:
        """The test's own exception the executor's ``error`` says it let through, or None."""
        key = error.get("raised") if isinstance(error, dict) else None
        return self.raised.get(key) if type(key) is int else None

    def drop(self) -> None:
        """Forget what the executor said it no longer holds (its stand-ins and graphs, gone
        there), once the answer that said so was read: it may have handed a function back."""
        ids, self.dropped = self.dropped, []
        for ident in wire.as_list(ids):
            fn = self.function(ident)
            self.functions.pop(ident, None)
            self.weak.pop(ident, None)
            if fn is not None and self.ids.get(id(fn)) == ident:
                del self.ids[id(fn)]
            self.graphs.pop(ident, None)
            self.executor.keras_layouts.forget(ident)

    def _vjp(self, message: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        """The vector-Jacobian product of a callback call; with ``create_graph``, a call of its
        own there, differentiable in the call's inputs and in the grads."""
        executor = self.executor
        inputs, outputs = self.graphs[message["callback_vjp"]]
        create = message.get("create_graph") is True
        sent: list = []
        grads = executor.decode(message["grads"], blobs, grads=create, tensors=sent)
        with executor.mirrors.hooks_silenced():  # the product reaches the executor's tensors: there they fire
            result = vector_jacobian(inputs, outputs, wire.as_list(grads), create_graph=create)
        if not create:
            return {"answer": "callback", "value": executor.encode([None if g is None else g.detach() for g in result],
                                                                   out)}
        call = executor.new_id()
        self.graphs[call] = (list(inputs) + [g for g in sent if g.requires_grad], [g for g in result if g is not None])
        return {"answer": "callback", "value": executor.encode(result, out), "call": call}

    def _tf_vjp(self, message: dict, blobs: list[bytes], out: list[bytes]) -> dict:
        """The product of a TensorFlow callback call (``grader.remote._tfgrad.Recorded``); with
        ``create_graph``, a call of its own, differentiable in the call's sources and in the
        floating upstream tensors."""
        recorded = self.graphs.get(message["callback_vjp"])
        if not isinstance(recorded, _tfgrad.Recorded):
            raise wire.WireError("the gradient of a call that recorded none")
        more: list = []
        upstream = self.executor.decode(message["grads"], blobs, tf_sources=more)
        if message.get("create_graph") is not True:
            return {"answer": "callback", "value": self.executor.encode(recorded.gradient(upstream), out)}
        later, grads = recorded.differentiated(upstream, more)
        value = self.executor.encode(grads, out, tf_outputs=later.outputs)
        call = self.executor.new_id()
        self.graphs[call] = later
        return {"answer": "callback", "value": value, "call": call, "tf_outputs": len(later.outputs)}

    def serve(self, message: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        """Answer a callback call (or its vector-Jacobian product) from the executor. An
        ``Exception`` the test's function raised goes back to be raised there."""
        import torch

        executor, out = self.executor, []
        try:
            if "callback_vjp" in message:
                return (self._tf_vjp if message.get("tf") is True else self._vjp)(message, blobs, out), out
            fn = self.function(message.get("callback", message.get("callback_trace")))
            if fn is None:  # a hook of an object freed here: removed with it
                raise LookupError("a function of the tests that is gone")
            if "callback_trace" in message:
                return _tfgraph.traced(executor, fn, message, blobs, out), out
            executor.mirrors.take(message["shared"], blobs)
            sent: list = []
            # Made for the submission's tape: the call is recorded on tapes of this side's.
            tf_sources = [] if message.get("tf_grad_call") is True else None
            args = executor.decode(message["args"], blobs, grads=True, tensors=sent, tf_sources=tf_sources)
            kwargs = executor.decode(message["kwargs"], blobs, grads=True, tensors=sent, tf_sources=tf_sources)
            layer_vids = wire.as_list(message.get("keras_sources", []))
            recorded = None if tf_sources is None else _tfgrad.Recorded.new(
                [*tf_sources, *executor.keras_layouts.sources(layer_vids)], accessed="keras_sources" in message)
            state = message["state"]
            executor.rng.take(wire.decode(state["rng"], blobs))
            shared = [executor.mirrors.tensor(tid) for tid in wire.as_list(message["grad_shared"])]
            autocast_on, autocast_dtype = state["autocast"]
            with torch.set_grad_enabled(bool(state["grad_enabled"])), \
                    torch.autocast("cpu", dtype=wire.decode(autocast_dtype, blobs), enabled=bool(autocast_on)):
                with contextlib.nullcontext() if recorded is None else recorded.recording():
                    result = fn(*args, **kwargs)
            outputs: list = []
            answer = {"answer": "callback", "value": executor.encode(
                result, out, outputs, tf_outputs=None if recorded is None else recorded.outputs)}
            if (layout := executor.keras_layouts.changed_layout(fn, message["callback"], out)) is not None:
                answer["keras_layout"] = layout  # the test's layer was built by this call
                if recorded is not None:  # its new trainable variables: sources too, numbered as there
                    recorded.sources += [executor.keras_variables.by_id[vid] for vid, _, trainable, _ in layout
                                         if trainable and vid not in layer_vids]
            if recorded is not None:
                call = executor.new_id()
                self.graphs[call] = recorded
                answer["call"], answer["tf_outputs"] = call, len(recorded.outputs)
            elif message.get("grad_call"):
                call = executor.new_id()
                self.graphs[call] = ([t for t in sent if t.requires_grad] + shared, outputs)
                answer["call"] = call
        except Exception as exc:  # noqa: BLE001 - the test's function raised: raised there too
            out.clear()
            raised = executor.new_id()
            self.raised[raised] = exc
            answer = {"answer": "callback", "error": {**describe_exception(exc), "raised": raised}}
        answer["push"] = executor.mirrors.push(out)
        answer["rng"] = wire.encode(executor.rng.now(), out)
        return answer, out


# ----------------------------------------------------------------------------- the executor


class Stub:
    """The executor's stand-in for a test's callable object (or bound method, or partial):
    calling it calls the object in the trusted process (``Caller.call``)."""

    # What TensorFlow's autograph reads as one of its own: it calls a stand-in as it is, rather
    # than rewrite the kit's code while the submission traces a test's function.
    autograph_info__: dict = {}

    def __init__(self, caller: Caller, cid: int, name: str) -> None:
        self._caller, self._id, self.__name__ = caller, cid, name
        self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._caller.call(self._id, args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self.__name__} of the tests>"

    def __deepcopy__(self, memo) -> Stub:  # a copy of a module holding one calls the same function
        return self

    def __reduce__(self):
        raise TypeError(f"{self.__name__}, a function of the tests, cannot be pickled")


# The stand-ins of the test's plain functions and lambdas: each is a Python function itself, as
# the test's was (a ``LambdaLR`` saves no state for a function, and the state of any other
# callable it holds), and like the test's lambda it does not pickle. Its id, by the stand-in.
_FUNCTION_STUBS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _function_stub(caller: Caller, cid: int, name: str) -> types.FunctionType:
    def stub(*args: Any, **kwargs: Any) -> Any:
        return caller.call(cid, args, kwargs)

    stub.__name__ = stub.__qualname__ = name
    stub.autograph_info__ = Stub.autograph_info__  # called as it is by autograph (``Stub``)
    _FUNCTION_STUBS[stub] = cid
    return stub


def stub_id(value: Any) -> int | None:
    """The callback id ``value`` stands for when it is a stand-in for a test's function
    (``Stub`` or a function stand-in), else None."""
    if isinstance(value, Stub):
        return value._id
    if type(value) is types.FunctionType:
        return _FUNCTION_STUBS.get(value)
    return None


class Caller:
    """The executor's side of callbacks: one stand-in per callback while it is held, and the
    exchange with the trusted side (which may ask for requests of its own meanwhile)."""

    def __init__(self, executor) -> None:
        self.executor = executor
        self.stubs: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self.dropped: list[int] = []  # sent with the next answer: the trusted side forgets them
        self.keras_proxies: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # call id -> proxy
        self.keras_variables = _keras.Variables(self._keras_listed)  # those proxies' variables, by the test's ids
        self.traced_variables: list = []  # the test's variables its traced functions use (``_tfgraph``)

    def keras_proxy(self, node: dict, blobs: list[bytes]) -> _keras.KerasProxy:
        """The proxy of a test's Keras layer (one per layer while it is held), with the
        variables the node lists."""
        cid = node["i"]
        proxy = self.keras_proxies.get(cid)
        if proxy is None:
            call = self.stub({"i": cid, "name": node.get("name")})
            attribute = self.stub({"i": node["a"], "name": node.get("name")})
            name = str(node.get("name"))[:200]
            proxy = _keras.proxy_class(name)(
                lambda stub, args, kwargs, variables: self.call(stub._id, args, kwargs, variables),
                call, attribute, _keras.exported_class(node.get("base"), name))
            self.keras_proxies[cid] = proxy
            weakref.finalize(proxy, setattr, self.keras_variables, "unlisted", True)
        _keras.take_layout(proxy, node["variables"], self.keras_variables, blobs)
        return proxy

    def _keras_listed(self) -> set[int]:
        """The ids of the variables the live proxies list (the trusted side forgets the others
        when it hears that their proxies' callbacks were dropped)."""
        variables = self.keras_variables
        return {variables.ident(v) for proxy in self.keras_proxies.values()
                for v in object.__getattribute__(proxy, "_variables")} | {
                variables.ident(v) for v in self.traced_variables} | set(self.executor.shared_variables) | {
                vid for vids in self.executor.keras_copies.values() for vid in vids}

    def stub(self, node: dict) -> Any:
        cid = node["i"]
        stub = self.stubs.get(cid)
        if stub is None:
            make = _function_stub if node.get("function") is True else Stub
            stub = make(self, cid, str(node.get("name"))[:200])
            self.stubs[cid] = stub
            weakref.finalize(stub, self.dropped.append, cid)
            if cid in self.dropped:  # its last stand-in died during this request: held again
                self.dropped.remove(cid)
        return stub

    def exchange(self, message: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        """Send ``message`` to the trusted side and wait for its answer, answering its own
        requests meanwhile."""
        executor = self.executor
        message["keras"] = self.keras_variables.changes(blobs)
        wire.send(executor.sock, message, blobs)
        while True:
            header, got = wire.receive(executor.sock)
            if header.get("answer") == "callback":
                self.keras_variables.take(header.get("keras"), got)
                return header, got
            reply, out = executor.answer(header, got)
            wire.send(executor.sock, reply, out)

    def call(self, cid: int, args: tuple, kwargs: dict, variables: list = ()) -> Any:
        """The test's function ``cid`` called with ``args`` and ``kwargs``; ``variables``: those
        of a Keras layer's proxy, which its call reads (``grader.remote._keras``)."""
        import torch

        executor, out, sent, tf_sources = self.executor, [], [], []
        tracing = "tensorflow" in sys.modules and not sys.modules["tensorflow"].executing_eagerly()

        def first(value: Any) -> dict | None:
            if isinstance(value, torch.Tensor) and executor.described.tensor_id(value) is not None:
                return {"k": "shared", "t": executor.described.tensor_id(value)}
            if (cid := stub_id(value)) is not None:
                return {"k": "callback", "i": cid}
            if isinstance(value, torch.Tensor):
                sent.append(value)
            elif wire.is_tf_source(value):
                tf_sources.append(value)  # numbered as the trusted side decodes them
            return None

        def encode(value: Any) -> Any:
            return wire.encode(value, out, first=first, opaque=lambda v: executor.opaque(v, out),
                               instances=instance_kind)

        if tracing:  # the submission traces the test's function: it crosses as its graph
            return _tfgraph.called(self, cid, args, kwargs, encode, out)
        grad = torch.is_grad_enabled()
        message = {"callback": cid, "args": encode(tuple(args)), "kwargs": encode(dict(kwargs)),
                   "shared": executor.described.changes(out),
                   "state": {"grad_enabled": grad,
                             "autocast": [torch.is_autocast_enabled("cpu"),
                                          wire.encode(torch.get_autocast_dtype("cpu"), out)],
                             "rng": wire.encode(executor.rng.now(), out)}}
        executor.described.take(None, [])
        if (tf_sources or variables) and _tfgrad.recording():  # the submission's tape may be recording
            message["tf_grad_call"], message["grad_shared"] = True, []
            proxy = self.keras_proxies.get(cid)
            if proxy is not None or variables:  # a layer's call or attribute read: its variables are sources too
                message["keras_sources"] = [self.keras_variables.ident(v) for v in variables]
            return _tfgrad.callback_call(self, message, out, [*tf_sources, *map(_keras.tf_variable, variables)],
                                         None if proxy is None else
                                         lambda: [_keras.tf_variable(v) for v in proxy.trainable_variables])
        shared = [(tid, t) for tid, t in executor.described.tensors.items() if t.requires_grad and t.is_leaf] \
            if grad else []
        message["grad_shared"] = [tid for tid, _ in shared]
        needs_grad = [t for t in sent if t.requires_grad] + [t for _, t in shared] if grad else []
        if not needs_grad:
            result, _ = self._finish(message, out)
            return result
        message["grad_call"] = True
        holder: dict = {}
        bridged = _callback_bridge().apply(self, message, out, holder, *needs_grad)
        swap = {id(t): b for t, b in zip(holder["outputs"], bridged[1:], strict=True)}
        return replace_tensors(holder["result"], swap)

    def _finish(self, message: dict, blobs: list[bytes], outputs: list | None = None,
                tf_outputs: list | None = None) -> tuple[Any, dict]:
        executor = self.executor
        answer, got = self.exchange(message, blobs)
        if "push" in answer:  # a callback call (not a product of its backward)
            executor.described.take(answer["push"], got, self.stub)
            executor.rng.take(wire.decode(answer["rng"], got))
        if "keras_layout" in answer:  # the test's layer made variables (built by the call)
            proxy = self.keras_proxies.get(message.get("callback"))
            if proxy is None:
                raise wire.WireError("the variables of a layer that has no proxy here")
            _keras.take_layout(proxy, answer["keras_layout"], self.keras_variables, got)
        if "error" in answer:
            raise raised_by_tests(rebuild_exception(answer["error"]), answer["error"])
        return executor.decode(answer["value"], got, tensors=outputs, tf_tensors=tf_outputs), answer

    def tf_vjp(self, call: int, upstream: tuple, inputs: list) -> list:
        """Per input of the TensorFlow callback call ``call`` (``grader.remote._tfgrad``), the
        gradient of its outputs weighted by ``upstream``; while a tape here records (the
        submission differentiates that gradient again), an op of its own, of ``inputs`` and the
        floating upstream tensors."""
        out: list[bytes] = []
        message = {"callback_vjp": call, "tf": True, "grads": wire.encode(list(upstream), out)}
        if _tfgrad.recording():
            message["create_graph"] = True
            more = [u for u in upstream if wire.is_tf_source(u)]
            grads = _tfgrad.callback_call(self, message, out, [*inputs, *more])
        else:
            answer, got = self.exchange(message, out)
            if "error" in answer:
                raise rebuild_exception(answer["error"])
            grads = self.executor.decode(answer["value"], got)
        try:
            return _tfgrad.checked_gradients(grads, inputs)
        except wire.WireError:
            raise RuntimeError("the tests' process answered out of protocol (a gradient)") from None

    def vjp_graph(self, call: int, inputs: tuple, grads: tuple) -> list:
        """The vector-Jacobian product of callback ``call`` as a callback of its own (a backward
        with ``create_graph``): differentiable in the call's ``inputs`` and in ``grads``."""
        out: list[bytes] = []
        message = {"callback_vjp": call, "create_graph": True, "grads": wire.encode(list(grads), out)}
        needs = [*inputs, *(g for g in grads if g is not None and g.requires_grad)]
        holder: dict = {}
        bridged = _callback_bridge().apply(self, message, out, holder, *needs)
        swap = {id(t): b for t, b in zip(holder["outputs"], bridged[1:], strict=True)}
        return replace_tensors(holder["result"], swap)

    def vjp(self, call: int, grads: tuple) -> list:
        out: list[bytes] = []
        answer, got = self.exchange({"callback_vjp": call, "grads": wire.encode(list(grads), out)}, out)
        if "error" in answer:
            raise rebuild_exception(answer["error"])
        return self.executor.decode(answer["value"], got)


@cache
def _callback_bridge():
    """The autograd function of a callback in the executor, made on first use (it needs torch)."""
    import torch

    class CallbackBridge(torch.autograd.Function):
        """A test's function called from the submission, as one autograd node: its backward is
        the trusted side's vector-Jacobian product of that call."""

        @staticmethod
        def forward(ctx, caller, message, blobs, holder, *needs_grad):
            outputs: list = []
            result, answer = caller._finish(message, blobs, outputs)
            ctx.caller, ctx.call, ctx.n_inputs = caller, answer.get("call"), len(needs_grad)
            ctx.save_for_backward(*needs_grad)  # the inputs of a double backward's product
            if ctx.call is not None:
                weakref.finalize(ctx, caller.dropped.append, ctx.call)
            holder.update(result=result, outputs=outputs)
            marker = torch.empty(0)
            ctx.mark_non_differentiable(marker, *[o for o in outputs
                                                  if not (o.is_floating_point() or o.is_complex())])
            return (marker, *outputs)

        @staticmethod
        def backward(ctx, _marker, *grads):
            # Read even when unused: a second backward through a graph the first one freed (no
            # retain_graph) raises here, as it would in one process.
            inputs = ctx.saved_tensors
            if ctx.call is None:
                return (None, None, None, None, *[None] * ctx.n_inputs)
            if torch.is_grad_enabled():  # create_graph: the product is differentiable too
                result = ctx.caller.vjp_graph(ctx.call, inputs, grads)
            else:
                result = ctx.caller.vjp(ctx.call, tuple(None if g is None else g.detach() for g in grads))
            if not isinstance(result, list) or len(result) != ctx.n_inputs:
                raise RuntimeError("the tests' process answered out of protocol (a gradient)")
            return (None, None, None, None, *result)

    return CallbackBridge
