"""TensorFlow gradients across the two processes, and the variables a call changed.

A test that records a call into the submission on a ``tf.GradientTape`` (``tape.watch(x)``, then
``impl.fn(x)``) gets outputs its tape can differentiate: the trusted side makes the call inside a
``tf.custom_gradient`` function of the floating tensors it sent (``bridged``), and the executor
runs it under a persistent tape of its own watching those tensors (``Tape``), kept under the
call's id. The test's ``tape.gradient`` then asks the executor for the vector-Jacobian product
of that call (``Executor.tf_vjp``): a gradient the submission's computation does not carry (a
result made through NumPy) is None here, as in one process.

The other way round, a test's function the submission calls on its own tape (``gradient(f, x)``:
``tape.watch(x)``, then ``f(x)``) is one op of the floating tensors and variables it was sent
(``callback_call``): the trusted side records the call on nested persistent tapes watching
what it decoded (``Recorded``), and the op's gradient asks it for the product. A gradient the
submission takes while a tape of its own records (a Hessian-vector product: an inner gradient
inside an outer tape, or forward over backward) is such an op again, of the call's inputs and
the upstream gradients, answered from the next tape out, which the trusted side re-enters: up to
``ORDERS`` derivatives deep. A test's function the submission traces crosses as its graph
(``grader.remote._tfgraph``), as does a test's Keras layer called in one; the gradient of one
it called eagerly cannot be traced into a graph of the submission's yet (``GRAPH_REFUSED``).

A ``tf.Variable`` the test passes is a copy there; what the call assigned to it (before it
returned or raised) is assigned to the test's own variable afterwards (``variable_changes``,
``take_variable_changes``), so ``out is var`` and a ``tf.function`` holding ``var`` read what
the call wrote. A variable the submission keeps past the call is not kept in step.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any

from grader.remote import _wire as wire
from grader.remote._sync import replace_tensors


def _differentiable(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


def recording() -> bool:
    """Whether a gradient tape of this process may be recording now (TensorFlow loaded)."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import record

    return record.could_possibly_record()


def watched(atoms: list) -> list[tuple[int, Any]]:
    """(place among the call's numbered values, tensor) of each floating eager tensor sent, when
    a gradient tape may be recording (else none: no tape is kept there)."""
    found = [(i, a) for i, a in enumerate(atoms) if wire.is_tf_value(a) and _differentiable(a)
             and not isinstance(a, sys.modules["tensorflow"].Variable)]
    if not found:
        return []
    from tensorflow.python.eager import record

    return found if record.could_possibly_record() else []


def bridged(executor, finish, inputs: list) -> tuple[Any, dict]:
    """``finish(tf_outputs)`` (the call, sent; its result and reply), made as one differentiable
    op of ``inputs`` and of the variables here that stand for the trainable ones the call read
    there (its reply's ``variables_read``) on the test's tapes: the result with each floating tensor
    it made replaced by the op's output that stands for it."""
    import tensorflow as tf

    holder: dict = {}

    @tf.custom_gradient
    def call(*_inputs):
        outputs: list = []
        result, reply = finish(outputs)
        try:
            ident = executor.own_id(reply.get("tf_call"))
        except wire.WireError:
            ident = None
        if ident is None or reply.get("tf_outputs") != len(outputs):
            executor._fail("the submission's process answered out of protocol (a call's gradients)")
        holder.update(result=result, reply=reply, outputs=outputs)
        read = {}  # id() of each variable here that stands for one the call read there -> that one's id
        for vid, var in reply["variables_read"]:
            var.read_value()  # read inside the op: TensorFlow hands it to ``grad``, and the test's tape watches it
            read[id(var)] = vid

        def grad(*upstream, variables=None):
            if variables is None:
                return executor.tf_vjp(ident, upstream, inputs)
            # Each variable read here is one of the submission's the call read, or the test's own
            # a copy of which it read; any other (read while the result was rebuilt) has no
            # gradient through the call.
            asked = [(read[id(v)], v) for v in variables if id(v) in read]
            grads = executor.tf_vjp(ident, upstream, inputs, asked)
            by_variable = {id(v): g for (_, v), g in zip(asked, grads[len(inputs):])}
            return grads[:len(inputs)], [by_variable.get(id(v)) for v in variables]

        weakref.finalize(grad, executor.release, ident)  # with the tapes that hold it
        return (tuple(outputs) if outputs else tf.zeros(())), grad

    made = call(*inputs)
    made = made if isinstance(made, (tuple, list)) else (made,)
    swap = {id(t): b for t, b in zip(holder["outputs"], made)}  # a lone output comes back as one
    return replace_tensors(holder["result"], swap), holder["reply"]


class Tape:
    """The executor's record of a call made for a test's tape: its tape, the tensors it watched,
    the floating tensors the call returned, in the order the trusted side numbers them, and the
    ``tf.Variable``s it read by the ids the trusted side knows them by."""

    def __init__(self, tape, inputs: list, outputs: list, read: dict | None = None) -> None:
        self.tape, self.inputs, self.outputs, self.read = tape, inputs, outputs, read or {}

    def gradient(self, upstream: Any, variables: list = ()) -> list:
        """Per watched tensor, then per ``tf.Variable`` of ``variables`` (read during the call),
        the gradient of the outputs weighted by ``upstream`` (one per output, None for
        zeros), or None where the outputs do not depend on it."""
        import tensorflow as tf

        upstream = wire.as_list(upstream, len(self.outputs))
        sources = [*self.inputs, *variables]
        pairs = [(o, tf.zeros_like(o) if g is None else tf.cast(g, o.dtype))
                 for o, g in zip(self.outputs, upstream) if _differentiable(o)]
        if not pairs:
            return [None] * len(sources)
        grads = self.tape.gradient([o for o, _ in pairs], sources, output_gradients=[g for _, g in pairs])
        return [None if g is None else tf.convert_to_tensor(g) for g in grads]


def checked_gradients(grads: Any, inputs: list) -> list:
    """The executor's gradients for ``inputs``: each None or a tensor of its input's shape and dtype."""
    import tensorflow as tf

    grads = wire.as_list(grads, len(inputs))
    for g, x in zip(grads, inputs):
        if g is not None and not (isinstance(g, tf.Tensor) and g.shape == x.shape and g.dtype == x.dtype):
            raise wire.WireError("a gradient that is not one of its input's shape and dtype")
    return grads


def variables_sent(atoms: list) -> list[tuple[int, Any, bytes]]:
    """(place, variable, its bytes) of each ``tf.Variable`` among a call's numbered values, as sent."""
    return [(i, a, a.numpy().tobytes()) for i, a in enumerate(atoms)
            if wire.is_tf_value(a) and isinstance(a, sys.modules["tensorflow"].Variable)]


def variable_changes(sent: list[tuple[int, Any, bytes]], out: list[bytes]) -> list:
    """``[place, value]`` for each variable sent whose value the call changed."""
    return [[i, wire.encode(var.read_value(), out)] for i, var, before in sent if var.numpy().tobytes() != before]


def take_variable_changes(entries: Any, atoms: list, blobs: list[bytes]) -> None:
    """Assign what the call wrote to each of the test's variables (``variable_changes``)."""
    import tensorflow as tf

    for entry in wire.as_list(entries):
        index, node = wire.as_list(entry, 2)
        if type(index) is not int or not 0 <= index < len(atoms) or not isinstance(atoms[index], tf.Variable):
            raise wire.WireError("a change to a variable that was not sent")
        assign_checked(atoms[index], wire.decode(node, blobs))


def assign_checked(var: Any, value: Any) -> None:
    """``var.assign(value)`` for a tensor of ``var``'s dtype and shape; ``WireError`` for anything
    else (what the other process sent)."""
    import tensorflow as tf

    if not isinstance(value, tf.Tensor) or value.dtype != var.dtype or value.shape != var.shape:
        raise wire.WireError("a variable's value of another dtype or shape")
    var.assign(value)


# ----------------------------------------------------------------------------- callbacks


def callback_call(caller, message: dict, blobs: list[bytes], sources: list, trainable: Any = None) -> Any:
    """The executor's side: the test's function called as ``message`` says (``Caller``), made one
    op of ``sources`` (the floating tensors and variables it was sent, in the order the trusted
    side decodes them) on the submission's tapes, whose gradient is the trusted side's product
    of that call (``Caller.tf_vjp``). A variable is an input as read now, so a tape that watches
    it differentiates against it through that read. ``trainable``: for a Keras layer's proxy,
    what lists its trainable variables after the call; those the call made (a layer built by
    it) are read inside the op, so a tape watching what is accessed watches them, and the op's
    gradient reaches them as it would the layer's own in one process."""
    import tensorflow as tf

    inputs = [tf.convert_to_tensor(s) if isinstance(s, tf.Variable) else s for s in sources]
    holder: dict = {}

    @tf.custom_gradient
    def call(*_inputs):
        outputs: list = []
        result, answer = caller._finish(message, blobs, tf_outputs=outputs)
        ident = answer.get("call")
        if type(ident) is not int or answer.get("tf_outputs") != len(outputs):
            raise RuntimeError("the tests' process answered out of protocol (a gradient)")
        holder.update(result=result, outputs=outputs)
        known = {id(s) for s in sources}
        made = [v for v in (trainable() if trainable is not None else []) if id(v) not in known]
        for var in made:
            var.read_value()  # accessed inside the op: TensorFlow hands it to ``grad``

        def grad(*upstream, variables=None):
            if not tf.executing_eagerly():  # traced into a graph (a Jacobian's vectorized backward)
                raise TypeError(GRAPH_REFUSED)
            grads = caller.tf_vjp(ident, upstream, [*inputs, *made])
            by_variable = {id(v): g for v, g in zip(made, grads[len(inputs):])}
            # Any other variable read during the exchange (by a call of the submission's that
            # the test's function made) is the submission's: its gradient is not this op's.
            grads = grads[:len(inputs)]
            return grads if variables is None else (grads, [by_variable.get(id(v)) for v in variables])

        weakref.finalize(grad, caller.dropped.append, ident)  # with the tapes that hold it
        return (tuple(outputs) if outputs else tf.zeros(())), grad

    made = call(*inputs)
    made = made if isinstance(made, (tuple, list)) else (made,)
    swap = {id(t): b for t, b in zip(holder["outputs"], made)}
    return replace_tensors(holder["result"], swap)


# The gradient of a test's function called eagerly, traced into a graph of the submission's
# (tape.jacobian's vectorized backward): a py_function would carry the call there, but not
# faithfully (TensorFlow differentiates one only once, and gives a scalar zero for a gradient it
# does not reach), so it is refused, by name.
GRAPH_REFUSED = ("the gradient of a function of the tests cannot be traced into a graph in the submission's "
                 "process yet (tape.jacobian's vectorized backward; its tests run in a process of their own): "
                 "call it eagerly")

# How many times a product of a test's function may be differentiated again: a Hessian-vector
# product forward over backward (``tf.autodiff.ForwardAccumulator`` around a tape) takes the
# product of a product of the call's product, three deep. Each level records the call's ops once more.
ORDERS = 4


class Recorded:
    """The trusted side's record of a test's function called on the submission's tape: its
    sources (the floating tensors and variables decoded for it, then a Keras layer's variables),
    the floating tensors it returned (``outputs``, numbered as the executor decodes them), and
    the nested tapes it ran under, innermost first: the first gives its product, and the ones
    around it, re-entered while the first differentiates, record that product for another
    (``differentiated``), up to ``ORDERS`` deep."""

    def __init__(self, sources: list, tapes: list) -> None:
        self.sources, self.tapes = sources, tapes
        self.outputs: list = []

    @classmethod
    def new(cls, sources: list, *, accessed: bool = False) -> Recorded:
        """A record watching ``sources``; ``accessed``: every trainable variable the call reads
        too (a Keras layer's call, which may build it: its new variables are sources after)."""
        import tensorflow as tf

        return cls(sources, [tf.GradientTape(persistent=True, watch_accessed_variables=accessed)
                             for _ in range(ORDERS)])

    @contextlib.contextmanager
    def recording(self, more_sources: list = ()):
        """Every tape records inside, watching the sources (and ``more_sources``)."""
        with contextlib.ExitStack() as stack:
            for tape in reversed(self.tapes):
                stack.enter_context(tape)
                tape.watch([*self.sources, *more_sources])
            yield

    def gradient(self, upstream: Any) -> list:
        """Per source, the gradient of the outputs weighted by ``upstream`` (None where unused)."""
        return Tape(self.tapes[0], self.sources, self.outputs).gradient(upstream)

    def differentiated(self, upstream: Any, more_sources: list) -> tuple[Recorded, list]:
        """The product for ``upstream`` recorded on the tapes around the first, as a record of its
        own whose sources are this one's and ``more_sources`` (the floating upstream tensors); its
        ``outputs`` are for the caller to fill, as the product is encoded."""
        if len(self.tapes) < 2:
            raise NotImplementedError(f"a derivative of order {ORDERS + 1} through a function of the tests is "
                                      "not carried to the submission's process (its tests run in a process of "
                                      "their own)")
        later = Recorded(self.sources + more_sources, self.tapes[1:])
        with later.recording():
            grads = self.gradient(upstream)
        return later, grads
