"""A test's Keras layer or model, as the submission gets it: a proxy whose variables are kept in step.

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
"""

from __future__ import annotations

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


def _public() -> dict[str, Any]:
    """Where Keras exports the classes a proxy may answer ``isinstance`` for, by name."""
    import keras

    return {"keras": keras, "keras.layers": keras.layers}


def public_base(klass: type) -> list[str]:
    """``[namespace, name]`` of the nearest class among ``klass``'s bases (itself included) that
    Keras exports (``keras.Sequential``, ``keras.Model``, ``keras.layers.Dense``...)."""
    for base in klass.__mro__:
        for namespace, module in _public().items():
            if getattr(module, base.__name__, None) is base:
                return [namespace, base.__name__]
    return ["keras.layers", "Layer"]


def exported_class(base: Any) -> type:
    """The Keras class ``public_base`` named (a Keras layer class; ``keras.layers.Layer`` for any
    other name)."""
    namespace, name = wire.as_list(base, 2)
    module = _public().get(namespace) if type(namespace) is str else None
    found = getattr(module, name, None) if module is not None and type(name) is str else None
    layer = _public()["keras.layers"].Layer
    return found if isinstance(found, type) and issubclass(found, layer) else layer


def _tf_variable(var: Any) -> Any:
    """The ``tf.Variable`` a Keras variable holds (itself for a ``tf.Variable``)."""
    inner = getattr(var, "_value", None)
    return inner if isinstance(inner, sys.modules["tensorflow"].Variable) else var


class Variables:
    """One side's ``tf.Variable``s shared with the other under ids, with the bytes of each as the
    two sides last agreed, so that each sends only what changed on its side. On the executor's
    side, set ``unlisted`` when a proxy died: the next ``changes`` drops what none lists."""

    def __init__(self, listed: Callable[[], set[int]] | None = None) -> None:
        self.by_id: dict[int, Any] = {}
        self.ids: dict[int, int] = {}  # id() of a variable -> its id
        self.agreed: dict[int, bytes] = {}
        # The executor's (``listed``: the ids of the variables its live proxies list): one no
        # proxy lists goes once what the submission last assigned to it was sent, and a value
        # the trusted side sends for one gone meanwhile is moot.
        self.listed = listed
        self.unlisted = False

    def add(self, vid: int, var: Any) -> None:
        self.by_id[vid], self.ids[id(var)], self.agreed[vid] = var, vid, _bytes(var)

    def ident(self, var: Any) -> int | None:
        vid = self.ids.get(id(var))
        return vid if vid is not None and self.by_id.get(vid) is var else None

    def drop(self, vids: Any) -> None:
        for vid in vids:
            var = self.by_id.pop(vid, None)
            self.agreed.pop(vid, None)
            if var is not None and self.ids.get(id(var)) == vid:
                del self.ids[id(var)]

    def changes(self, out: list[bytes]) -> list:
        """``[id, value]`` of each variable whose value changed here since the sides last agreed
        (then, where ``unlisted`` is set, the variables no live proxy lists go)."""
        found = []
        for vid, var in self.by_id.items():
            now = _bytes(var)
            if now != self.agreed[vid]:
                self.agreed[vid] = now
                found.append([vid, wire.encode(var.read_value(), out)])
        if self.unlisted and self.listed is not None:
            listed = self.listed()
            self.drop([vid for vid in self.by_id if vid not in listed])
            self.unlisted = False
        return found

    def take(self, entries: Any, blobs: list[bytes]) -> None:
        """Assign what the other side changed (``changes``); ``WireError`` for a value of
        another variable's dtype or shape, or of no variable shared."""
        if not entries:  # every message carries its list: TensorFlow is imported for none that is empty
            return
        for entry in wire.as_list(entries):
            vid, node = wire.as_list(entry, 2)
            var = self.by_id.get(vid) if type(vid) is int else None
            if var is None and self.listed is not None and type(vid) is int:
                continue
            if var is None:
                raise wire.WireError("a value of a variable that is not shared")
            assign_checked(var, wire.decode(node, blobs))
            self.agreed[vid] = _bytes(var)


def _bytes(var: Any) -> bytes:
    return var.numpy().tobytes()


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
        """``[id, value or None, trainable, name]`` per variable of ``layer``: the value of a
        variable the executor was not sent yet (None: it has that id already)."""
        entries = []
        for var in layer.variables:
            inner = _tf_variable(var)
            vid = self.variables.ident(inner)
            fresh = vid is None
            if fresh:
                vid = self.executor.new_id()
                self.variables.add(vid, inner)
            entries.append([vid, wire.encode(inner.read_value(), blobs) if fresh else None,
                            bool(var.trainable), str(getattr(var, "name", "variable"))[:200]])
        self.by_callback[cid] = [e[0] for e in entries]
        return entries

    def changed_layout(self, layer: Any, cid: int, blobs: list[bytes]) -> list | None:
        """``layer``'s layout (``layout``) when its variables are no longer those last sent
        (a layer built by the call), else None."""
        known = self.by_callback.get(cid)
        if known is None:
            return None
        now = [self.variables.ident(_tf_variable(v)) for v in layer.variables]
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


# ----------------------------------------------------------------------------- the executor


class KerasProxy:
    """The executor's stand-in for a test's Keras layer: calling it calls the layer in the trusted
    process, as one op of its inputs and ``variables`` (this process's, kept in step with the
    layer's); any other attribute is read there."""

    __slots__ = ("_call", "_attribute", "_variables", "_trainable", "_base", "__weakref__")

    def __init__(self, call: Any, attribute: Any, base: type) -> None:
        for name, value in (("_call", call), ("_attribute", attribute), ("_variables", []), ("_trainable", []),
                            ("_base", base)):
            object.__setattr__(self, name, value)

    @property
    def __class__(self) -> type:
        """The nearest class of the layer's that Keras exports, which ``isinstance`` asks for
        when this one is not the class it checks (``isinstance(model, keras.Model)`` holds)."""
        return object.__getattribute__(self, "_base")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return object.__getattribute__(self, "_call")(args, kwargs, list(object.__getattribute__(self, "_variables")))

    def __getattr__(self, name: str) -> Any:
        if name in _LISTS:
            keep = _LISTS[name]
            pairs = zip(object.__getattribute__(self, "_variables"), object.__getattribute__(self, "_trainable"))
            return [v for v, trainable in pairs if keep is None or trainable is keep]
        if name.startswith("__"):
            raise AttributeError(name)
        return object.__getattribute__(self, "_attribute")(name)

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_attribute').__name__} of the tests>"


def take_layout(proxy: KerasProxy, entries: Any, variables: Variables, blobs: list[bytes]) -> None:
    """Give ``proxy`` the variables its layer has now (``Layouts.layout``): a new ``tf.Variable``
    for each one this process was sent the value of, the one it has for each other."""
    import tensorflow as tf

    made, trainable = [], []
    for entry in wire.as_list(entries):
        vid, node, is_trainable, name = wire.as_list(entry, 4)
        if type(vid) is not int:
            raise wire.WireError("a variable of a layer that has no id")
        if node is None:
            var = variables.by_id.get(vid)
            if var is None:
                raise wire.WireError("a layer's variable that was not sent")
        else:
            value = wire.decode(node, blobs)
            if not isinstance(value, tf.Tensor):
                raise wire.WireError("a layer's variable whose value is not a tensor")
            var = tf.Variable(value, trainable=is_trainable is True, name=str(name)[:200] or None)
            variables.add(vid, var)
        made.append(var)
        trainable.append(is_trainable is True)
    object.__setattr__(proxy, "_variables", made)
    object.__setattr__(proxy, "_trainable", trainable)

