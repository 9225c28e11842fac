"""Keras across the two processes: variables kept in step, the test's layers as proxies, the test's
optimizers and inputs as copies, and the classes Keras exports that objects answer ``isinstance`` for.

A Keras layer a test passes to the submission (a model to differentiate, a layer to wrap) stays
in the trusted process, where it runs: the executor gets a ``KerasProxy``. Calling the proxy calls
the test's layer there, as one op of the call's floating tensors and the proxy's variables on the
submission's tapes (``grader.remote._tfgrad.callback_call``), so ``tape.gradient(loss,
model.trainable_variables)`` there differentiates through the test's layer. The proxy's
``variables`` (``weights``, ``trainable_variables``, ...) are ``tf.Variable``s of the executor, one
per variable of the layer, each paired with the test's by an id (``Variables``): around every
request, callback and answer each side sends the values it changed since the two last agreed,
so an optimizer step the submission applies to them is the test's, and a moving statistic the
test's layer updated is the submission's. Any other attribute is the test's (a method runs
there), as a proxy of a test's object has it (``grader.remote._executor``).

The other way round, a variable of the submission's that reaches the test (a model's
``trainable_weights``, a layer's ``kernel``) is a variable here, a Keras variable of the same path
for a Keras variable (``variable_node``, ``made_variable``), paired with the submission's in the
same ``Variables`` while the test holds it: what the test assigns is the model's, what a ``fit``
there changes is the test's. A test's optimizer, loss or metric (``copied_by_config``) reaches the
submission as a copy made from its config, once per object, its variables (an optimizer's
``iterations``) kept in step with the original's; a test's ``keras.Input`` as an input made alike
(``Copies``). Keras's global dtype policy travels with each call (``global_policy``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from grader.remote import _wire as wire
from grader.remote._tfgrad import assign_checked

# The attributes of a Keras layer that list its variables, and which of them each keeps.
_LISTS = {"variables": None, "weights": None, "trainable_variables": True, "trainable_weights": True,
          "non_trainable_variables": False, "non_trainable_weights": False}


def is_layer(value: Any) -> bool:
    """Whether ``value`` is a Keras layer (a model too), without importing Keras."""
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(value, keras.layers.Layer)


# Where Keras (and TensorFlow) export the classes a proxy or a handle may answer ``isinstance``
# for, by name: a class counts when one of these namespaces exports it.
PUBLIC_NAMESPACES = ("keras", "keras.layers", "keras.models", "keras.optimizers", "keras.optimizers.schedules",
                     "keras.callbacks", "keras.losses", "keras.metrics", "keras.regularizers",
                     "keras.initializers", "keras.constraints", "tensorflow")


def _public() -> dict[str, Any]:
    import importlib

    return {namespace: importlib.import_module(namespace) for namespace in PUBLIC_NAMESPACES}


@functools.lru_cache(maxsize=1)
def _exported_as() -> dict[type, tuple[str, str]]:
    """Each class ``PUBLIC_NAMESPACES`` export -> the namespace and name it is exported as: its
    own name where a namespace exports it so, else the first alias (``tf.name_scope`` is the
    class ``name_scope_v2``), the namespaces in their order."""
    found: dict[type, tuple[str, str]] = {}
    for namespace, module in _public().items():
        for name, value in vars(module).items():
            if isinstance(value, type) and not name.startswith("_"):
                known = found.get(value)
                if known is None or (known[1] != value.__name__ and name == value.__name__):
                    found[value] = (namespace, name)
    return found


def public_names(klass: type) -> list[list[str]]:
    """``[namespace, name]`` of each class among ``klass``'s bases (itself included) that Keras or
    TensorFlow exports (``keras.Sequential``, ``keras.layers.Dense``, ``tf.Module``,
    ``tf.name_scope``...), nearest first, leaving out those that one named before derives from: a
    functional model's are ``keras.Function`` and ``keras.Model``. None are named where neither
    is loaded."""
    if "keras" not in sys.modules and "tensorflow" not in sys.modules:
        return []
    exported_as = _exported_as()
    found: list[list[str]] = []
    classes: list[type] = []
    for base in klass.__mro__:
        if base is object:
            break
        if any(issubclass(c, base) for c in classes):
            continue
        if (pair := exported_as.get(base)) is not None:
            found.append(list(pair))
            classes.append(base)
    return found


def public_base(klass: type) -> list[list[str]]:
    """``public_names`` of a Keras layer's class (``keras.layers.Layer`` when none is nearer)."""
    return public_names(klass) or [["keras.layers", "Layer"]]


def exported(namespace: Any, name: Any) -> type | None:
    """The class ``public_names`` named so, or None for a name of no class exported so."""
    module = _public().get(namespace) if type(namespace) is str else None
    found = getattr(module, name, None) if module is not None and type(name) is str else None
    return found if isinstance(found, type) and _exported_as().get(found) == (namespace, name) else None


def exported_bases(names: Any) -> tuple[type, ...]:
    """The classes ``public_names`` named (``WireError`` for a name of no class exported so, or
    for classes no one class can derive from in that order)."""
    bases = tuple(exported(*wire.as_list(pair, 2)) for pair in wire.as_list(names))
    if not bases or None in bases:
        raise wire.WireError("a class Keras or TensorFlow does not export")
    try:
        type("probe", bases, {})
    except TypeError:
        raise wire.WireError("classes no class derives from in that order") from None
    return bases


@functools.lru_cache(maxsize=256)
def _joined(bases: tuple[type, ...], name: str) -> type:
    return bases[0] if len(bases) == 1 else type(name, bases, {"__module__": "tests"})


def exported_class(base: Any, name: Any = None) -> type:
    """The Keras layer class ``public_base`` named, deriving from each class it names (its own,
    named ``name``, for several); ``keras.layers.Layer`` for any other names."""
    layer = _public()["keras.layers"].Layer
    try:
        bases = exported_bases(base)
    except wire.WireError:
        return layer
    if not any(issubclass(b, layer) for b in bases):
        return layer
    return _joined(bases, str(name)[:200] if isinstance(name, str) and name.isidentifier() else bases[0].__name__)


def global_policy() -> str | None:
    """The name of Keras's global dtype policy (``"mixed_bfloat16"``...), None where Keras is not
    loaded: it travels with each call, as torch's default dtype does."""
    keras = sys.modules.get("keras")
    return None if keras is None else keras.mixed_precision.global_policy().name


def set_global_policy(name: Any) -> None:
    """Make ``name`` (``global_policy``'s) Keras's global dtype policy, when it is not already."""
    import keras

    if type(name) is not str:
        raise wire.WireError("a dtype policy that is not named")
    if keras.mixed_precision.global_policy().name != name:
        try:
            keras.mixed_precision.set_global_policy(name)
        except ValueError:
            raise wire.WireError(f"no dtype policy {name[:100]!r}") from None


def tf_variable(var: Any) -> Any:
    """The ``tf.Variable`` a Keras variable holds (itself for a ``tf.Variable``)."""
    inner = getattr(var, "_value", None)
    return inner if isinstance(inner, sys.modules["tensorflow"].Variable) else var


def variables_by_inner(objects: list) -> dict[int, Any]:
    """``id()`` of each ``tf.Variable`` held by a Keras variable of the Keras layers among
    ``objects`` -> that Keras variable (what a tape that watched the former read)."""
    return {id(tf_variable(var)): var for obj in objects if is_layer(obj) for var in obj.variables}


def is_variable(value: Any) -> bool:
    """Whether ``value`` is a ``tf.Variable`` or a Keras variable of a dtype whose values cross
    (without importing either)."""
    module = type(value).__module__
    if module.startswith("keras."):
        keras = sys.modules.get("keras")
        inner = tf_variable(value) if keras is not None and isinstance(value, keras.Variable) else value
        return inner is not value and is_variable(inner)
    if module.startswith("tensorflow."):
        tf = sys.modules["tensorflow"]
        return isinstance(value, tf.Variable) and value.dtype.name in wire.TF_DTYPES
    return False


def variable_node(var: Any, vid: int, out: list[bytes]) -> dict:
    """The node of the executor's variable ``var`` (``is_variable``), shared under ``vid``: its
    value, whether it is trainable, its path and whether it is a Keras variable."""
    inner = tf_variable(var)
    is_keras = inner is not var
    path = var.path if is_keras else inner.name.split(":")[0]
    return {"k": "tf_shared", "id": vid, "v": wire.encode(value_of(inner), out), "trainable": bool(var.trainable),
            "path": str(path)[:200], "keras": is_keras}


def made_variable(node: dict, blobs: list[bytes]) -> Any:
    """The trusted side's variable for the node of one of the submission's (``variable_node``):
    a Keras variable of that path for a Keras variable, else a ``tf.Variable`` of that name,
    holding the value sent."""
    import contextlib

    import tensorflow as tf

    value = wire.decode(node["v"], blobs)
    if not isinstance(value, tf.Tensor) or value.dtype.name not in wire.TF_DTYPES:
        raise wire.WireError("a variable whose value is not a tensor")
    *scopes, name = str(node["path"]).split("/")
    trainable = node["trainable"] is True
    if node["keras"] is not True:
        return tf.Variable(value, trainable=trainable, name=name or None)
    import keras

    with contextlib.ExitStack() as stack:
        with contextlib.suppress(ValueError):  # a scope Keras refuses: the variable's name alone
            for scope in scopes:
                stack.enter_context(keras.name_scope(scope))
        return keras.Variable(value, trainable=trainable, name=name or "variable")


class Variables:
    """One side's variables shared with the other under ids, with the bytes of each as the two
    sides last agreed, so that each sends only what changed on its side. A variable is a
    ``tf.Variable`` or a Keras variable (its ``tf.Variable`` is what is read and assigned). On the
    executor's side, set ``unlisted`` when a proxy died: the next ``changes`` drops what none
    lists. On the trusted side, a variable of the submission's (``add(..., theirs=True)``) is kept
    while the test holds it: once nothing else refers to it, ``changes`` sends what the test last
    assigned to it and lets it go (``released`` is told its id), and a value the executor sends
    for it meanwhile is moot."""

    def __init__(self, listed: Callable[[], set[int]] | None = None,
                 released: Callable[[int], None] | None = None) -> None:
        self.by_id: dict[int, Any] = {}
        self.ids: dict[int, int] = {}  # id() of a variable (and of its tf.Variable) -> its id
        self.agreed: dict[int, bytes] = {}
        self.theirs: set[int] = set()  # the ids of the submission's variables (trusted side)
        self.dropping: list[int] = []  # ids to drop before the next exchange (``drop_later``)
        self.gone: set[int] = set()  # the ids of those the test let go
        # The executor's (``listed``: the ids of the variables its live proxies list): one no
        # proxy lists goes once what the submission last assigned to it was sent, and a value
        # the trusted side sends for one gone meanwhile is moot.
        self.listed = listed
        self.unlisted = False
        self.released = released

    def add(self, vid: int, var: Any, *, theirs: bool = False) -> None:
        self.by_id[vid] = var
        self.ids[id(var)] = self.ids[id(tf_variable(var))] = vid
        self.agreed[vid] = _bytes(var)
        if theirs:
            self.theirs.add(vid)
            self.gone.discard(vid)

    def get(self, vid: Any) -> Any:
        """The variable shared under ``vid``, or None."""
        return self.by_id.get(vid)

    def ident(self, var: Any) -> int | None:
        vid = self.ids.get(id(var))
        found = self.by_id.get(vid)
        return vid if found is not None and (found is var or tf_variable(found) is var) else None

    def drop(self, vids: Any) -> None:
        for vid in vids:
            var = self.by_id.pop(vid, None)
            self.agreed.pop(vid, None)
            self.theirs.discard(vid)
            for key in ((id(var), id(tf_variable(var))) if var is not None else ()):
                if self.ids.get(key) == vid:
                    del self.ids[key]

    def drop_later(self, vids: list[int]) -> None:
        """``drop`` at the next exchange: what a finalizer (run by the garbage collector at any
        allocation, in the middle of ``changes`` too) may call."""
        self.dropping.extend(vids)

    def changes(self, out: list[bytes]) -> list:
        """``[id, value]`` of each variable whose value changed here since the sides last agreed
        (then, where ``unlisted`` is set, the variables no live proxy lists go; and the
        submission's that the test no longer holds)."""
        if self.dropping:
            dropping, self.dropping = self.dropping, []
            self.drop(dropping)
        found = []
        for vid, var in self.by_id.items():
            now = _bytes(var)
            if now != self.agreed[vid]:
                self.agreed[vid] = now
                found.append([vid, wire.encode(value_of(var), out)])
        var = None  # not one more reference to the last variable (``_held_elsewhere``)
        if self.unlisted and self.listed is not None:
            listed = self.listed()
            self.drop([vid for vid in self.by_id if vid not in listed])
            self.unlisted = False
        if self.theirs:
            let_go = [vid for vid in self.theirs if not _held_elsewhere(self.by_id, vid)]
            self.drop(let_go)
            self.theirs.difference_update(let_go)
            self.gone.update(let_go)
            for vid in let_go:
                self.released(vid)
        return found

    def take(self, entries: Any, blobs: list[bytes]) -> None:
        """Assign what the other side changed (``changes``); ``WireError`` for a value of
        another variable's dtype or shape, or of no variable shared."""
        if not entries:  # every message carries its list: TensorFlow is imported for none that is empty
            return
        for entry in wire.as_list(entries):
            vid, node = wire.as_list(entry, 2)
            var = self.by_id.get(vid) if type(vid) is int else None
            if var is None and type(vid) is int and (self.listed is not None or vid in self.gone):
                continue
            if var is None:
                raise wire.WireError("a value of a variable that is not shared")
            assign_checked(tf_variable(var), wire.decode(node, blobs))
            self.agreed[vid] = _bytes(var)


def _held_elsewhere(by_id: dict, vid: int) -> bool:
    """Whether anything but ``by_id`` refers to the variable it holds under ``vid``, or anything
    but that Keras variable to the ``tf.Variable`` it holds (a tape that read it)."""
    alone: dict = {0: object()}
    once = sys.getrefcount(alone[0])  # an object one container holds, counted this way
    if sys.getrefcount(by_id[vid]) > once:  # read in place: a name here would count as a holder
        return True
    inner = tf_variable(by_id[vid])  # held by its Keras variable, and by this name
    return inner is not by_id[vid] and sys.getrefcount(inner) > once + 1


def _bytes(var: Any) -> bytes:
    return value_of(var).numpy().tobytes()


def value_of(var: Any) -> Any:
    """The value of a ``tf.Variable`` or Keras variable, read unseen: no tape or watcher of a
    gradient (``tf.custom_gradient``'s) records the read, as none would in one process."""
    from tensorflow.python.ops import gen_resource_variable_ops

    inner = tf_variable(var)
    return gen_resource_variable_ops.read_variable_op(inner.handle, inner.dtype)


class Layouts:
    """The trusted side's Keras layers sent as proxies: per layer (by its callback id), the ids
    of its variables as the executor last heard them."""

    def __init__(self, executor, variables: Variables, attributes_of: Any) -> None:
        self.executor, self.variables, self.attributes_of = executor, variables, attributes_of
        self.by_callback: dict[int, list[int]] = {}
        self.attributes: dict[int, Any] = {}  # a layer's callback id -> the function reading its attributes

    def node(self, layer: Any, callbacks: Any, blobs: list[bytes]) -> dict:
        """The node of ``layer``: called, it is the callback of ``layer`` itself; its other
        attributes are read through a second one (``attributes_of(layer)``), and its variables
        listed (``layout``)."""
        cid = callbacks.node(layer)["i"]
        if cid not in self.attributes:
            self.attributes[cid] = self.attributes_of(layer)
        attributes = callbacks.node(self.attributes[cid])["i"]
        return {"k": "keras", "i": cid, "a": attributes, "name": type(layer).__name__[:200],
                "base": public_base(type(layer)), "variables": self.layout(layer, cid, blobs)}

    def layout(self, layer: Any, cid: int, blobs: list[bytes]) -> list:
        """``[id, node or None, trainable, name]`` per variable of ``layer``: the node of a variable
        the executor was not sent yet (``variable_node``; None: it has that id already)."""
        entries = []
        for var in layer.variables:
            inner = tf_variable(var)
            vid = self.variables.ident(inner)
            fresh = vid is None
            if fresh:
                vid = self.executor.new_id()
                self.variables.add(vid, inner)
            entries.append([vid, variable_node(var, vid, blobs) if fresh else None,
                            bool(var.trainable), str(getattr(var, "name", "variable"))[:200]])
        self.by_callback[cid] = [e[0] for e in entries]
        return entries

    def changed_layout(self, layer: Any, cid: int, blobs: list[bytes]) -> list | None:
        """``layer``'s layout (``layout``) when its variables are no longer those last sent
        (a layer built by the call), else None."""
        known = self.by_callback.get(cid)
        if known is None:
            return None
        now = [self.variables.ident(tf_variable(v)) for v in layer.variables]
        return None if now == known else self.layout(layer, cid, blobs)

    def sources(self, vids: Any) -> list:
        """The test's variables the executor names by ``vids`` (those a proxy's call read)."""
        found = [self.variables.by_id.get(vid) if type(vid) is int else None for vid in wire.as_list(vids)]
        if any(var is None for var in found):
            raise wire.WireError("a variable that is not shared")
        return found

    def forget(self, cid: int) -> None:
        """The executor dropped the layer's proxy: its variables no other layout lists go too."""
        self.attributes.pop(cid, None)
        vids = self.by_callback.pop(cid, None)
        if vids:
            still = {v for listed in self.by_callback.values() for v in listed}
            self.variables.drop([v for v in vids if v not in still])


# The kinds of Keras object a test passes that cross as a copy made from their config (an
# optimizer to compile a model with, a loss, a metric), their variables kept in step.
_COPIED_KINDS = ("optimizers.Optimizer", "losses.Loss", "metrics.Metric", "regularizers.Regularizer",
                 "initializers.Initializer", "constraints.Constraint", "optimizers.schedules.LearningRateSchedule")


def copied_by_config(value: Any) -> bool:
    """Whether ``value`` is a Keras object of one of ``_COPIED_KINDS``, of a class Keras exports
    (one a test defines has code of the tests', which stays with them)."""
    keras = sys.modules.get("keras")
    if keras is None or not type(value).__module__.startswith("keras."):
        return False
    import operator

    if not isinstance(value, tuple(operator.attrgetter(kind)(keras) for kind in _COPIED_KINDS)):
        return False
    names = public_names(type(value))
    return bool(names) and exported(*names[0]) is type(value)


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` is a Keras symbolic tensor (``keras.Input(...)``, or a layer's output on one)."""
    keras = sys.modules.get("keras")
    return keras is not None and type(value).__module__.startswith("keras.") and isinstance(value, keras.KerasTensor)


def _input_spec(tensor: Any) -> dict:
    """What makes ``tensor``, a test's ``keras.Input``, there: its batch shape, dtype, sparseness
    and name. Raises ``TypeError`` for a symbolic tensor that is a layer's output (the layers
    that made it are the tests')."""
    import keras

    made_by = tensor._keras_history.operation
    if not isinstance(made_by, keras.layers.InputLayer):
        raise TypeError("a symbolic tensor of the tests' that is not a keras.Input cannot be passed to the "
                        "submission's process (its tests run in a process of their own)")
    return {"shape": [None if d is None else int(d) for d in tensor.shape], "dtype": str(tensor.dtype),
            "sparse": bool(tensor.sparse), "name": str(made_by.name)[:200]}


class Copies:
    """The trusted side's Keras objects sent as copies made from their config (``copied_by_config``),
    and its ``keras.Input`` tensors, sent as inputs made alike (a model of the submission's layers
    can be joined there from one: ``keras.Model`` run where the submission lives):
    the executor makes the copy once (``made_copy``) and keeps it under an id while the test
    holds the original, later calls pass that same copy, and the variables the original has
    when it is first sent (an optimizer's ``iterations`` and ``learning_rate``, a metric's totals)
    are kept in step with the copy's, so ``optimizer.iterations`` counts the steps the
    submission took."""

    def __init__(self, executor, variables: Variables) -> None:
        self.executor, self.variables = executor, variables
        self.sent: dict[int, tuple[int, Any]] = {}  # id(original) -> (its copy's id, a weak reference to it)

    def node(self, obj: Any, blobs: list[bytes]) -> dict:
        import weakref

        known = self.sent.get(id(obj))
        if known is not None and known[1]() is obj:
            return {"k": "ref", "id": self.executor.live(known[0])}
        ident = self.executor.new_id()
        if is_symbolic(obj):
            made, vids = {"input": _input_spec(obj)}, []
        else:
            import keras

            entries = []
            for var in getattr(obj, "variables", []):  # a loss has none
                vid = self.executor.new_id()
                self.variables.add(vid, tf_variable(var))
                entries.append([vid, wire.encode(value_of(var), blobs)])
            made = {"config": wire.encode(keras.saving.serialize_keras_object(obj), blobs), "variables": entries}
            vids = [vid for vid, _ in entries]
        self.sent[id(obj)] = (ident, weakref.ref(obj))
        weakref.finalize(obj, self._forget, id(obj), ident, vids)
        return {"k": "keras_copy", "id": ident, **made}

    def _forget(self, key: int, ident: int, vids: list[int]) -> None:
        if self.sent.get(key, (None,))[0] == ident:
            del self.sent[key]
        self.variables.drop_later(vids)  # a finalizer: the registry may be in the middle of an exchange
        self.executor.release(ident)


# ----------------------------------------------------------------------------- the executor


class KerasProxy:
    """The executor's stand-in for a test's Keras layer: calling it calls the layer in the trusted
    process, as one op of its inputs and ``variables`` (this process's, kept in step with the
    layer's); any other attribute is read there, and set there (a plain value: a callback's
    ``self.model.stop_training = True``)."""

    __slots__ = ("_calls", "_layer", "_attribute", "_variables", "_trainable", "_base", "__weakref__")

    def __init__(self, calls: Any, layer: Any, attribute: Any, base: type) -> None:
        """``calls(stub, args, kwargs, variables)`` calls a stand-in of the test's (``layer``'s, the
        layer itself; ``attribute``'s, reading an attribute) as an op of ``variables`` too."""
        for name, value in (("_calls", calls), ("_layer", layer), ("_attribute", attribute), ("_variables", []),
                            ("_trainable", []), ("_base", base)):
            object.__setattr__(self, name, value)

    @property
    def __class__(self) -> type:
        """The nearest class of the layer's that Keras exports, which ``isinstance`` asks for
        when this one is not the class it checks (``isinstance(model, keras.Model)`` holds)."""
        return object.__getattribute__(self, "_base")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._of_variables("_layer", args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in _LISTS:
            keep = _LISTS[name]
            pairs = zip(object.__getattribute__(self, "_variables"), object.__getattribute__(self, "_trainable"))
            return [v for v, trainable in pairs if keep is None or trainable is keep]
        if name.startswith("__"):
            raise AttributeError(name)
        # An op of the variables too: what the layer computes from them (its regularizers'
        # ``losses``) is differentiable in them, as in one process.
        return self._of_variables("_attribute", (name,), {})

    def _of_variables(self, stub: str, args: tuple, kwargs: dict) -> Any:
        return object.__getattribute__(self, "_calls")(object.__getattribute__(self, stub), args, kwargs,
                                                       list(object.__getattribute__(self, "_variables")))

    def __setattr__(self, name: str, value: Any) -> None:
        object.__getattribute__(self, "_attribute")(name, value)  # set on the test's layer, there

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_attribute').__name__} of the tests>"


@functools.lru_cache(maxsize=256)
def proxy_class(name: str) -> type[KerasProxy]:
    """The class of proxies of a test's layers of the class ``name``: a ``KerasProxy`` so named, so
    that ``type(layer).__name__`` in the submission's message names the layer's class."""
    return type(name if name.isidentifier() else "KerasProxy", (KerasProxy,), {"__slots__": (), "__module__": "tests"})


def take_layout(proxy: KerasProxy, entries: Any, variables: Variables, blobs: list[bytes]) -> None:
    """Give ``proxy`` the variables its layer has now (``Layouts.layout``): a new variable for each
    one this process was sent (``made_variable``: a Keras variable of its path for a Keras
    variable), the one it has for each other."""
    made, trainable = [], []
    for entry in wire.as_list(entries):
        vid, node, is_trainable, _ = wire.as_list(entry, 4)
        if type(vid) is not int:
            raise wire.WireError("a variable of a layer that has no id")
        if node is None:
            var = variables.by_id.get(vid)
            if var is None:
                raise wire.WireError("a layer's variable that was not sent")
        else:
            if type(node) is not dict:
                raise wire.WireError("a layer's variable that is not described")
            var = made_variable(node, blobs)
            variables.add(vid, var)
        made.append(var)
        trainable.append(is_trainable is True)
    object.__setattr__(proxy, "_variables", made)
    object.__setattr__(proxy, "_trainable", trainable)



def made_copy(node: dict, blobs: list[bytes], variables: Variables) -> tuple[Any, list[int]]:
    """The executor's copy of a test's Keras object (``Copies.node``), its variables paired with
    the original's under their ids, or a ``keras.Input`` like a test's: (the copy, those ids)."""
    import keras

    if "input" in node:  # a test's keras.Input: one here, of its shape, dtype and name
        spec = node["input"]
        if type(spec) is not dict:
            raise wire.WireError("a symbolic input that is not described")
        shape = tuple(None if d is None else wire.dim(d) for d in wire.as_list(spec["shape"]))
        return keras.Input(batch_shape=shape, dtype=str(spec["dtype"]), sparse=spec["sparse"] is True,
                           name=str(spec["name"])), []
    config = wire.decode(node["config"], blobs)
    if type(config) is not dict:
        raise wire.WireError("a Keras object's config that is not a dict")
    copy = keras.saving.deserialize_keras_object(config)
    entries = [wire.as_list(entry, 2) for entry in wire.as_list(node["variables"])]
    copied = getattr(copy, "variables", [])
    if len(copied) < len(entries):
        raise ValueError(f"a copy of the tests' {type(copy).__name__} has fewer variables than the original")
    for (vid, value), var in zip(entries, copied):
        if type(vid) is not int:
            raise wire.WireError("a variable of a Keras object that has no id")
        assign_checked(tf_variable(var), wire.decode(value, blobs))
        variables.add(vid, var)
    return copy, [vid for vid, _ in entries]
