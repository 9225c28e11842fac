"""A test's function that the submission traces into a graph crosses as that graph.

When the submission traces a function of the tests (a ``tf.function`` of its own around it,
``tf.data``'s ``map``, XLA's compiler, a TF1 graph), or calls a test's Keras layer there (its
proxy, ``grader.remote._keras``), what its stand-in is called with are
symbolic tensors of the submission's graph, which cannot cross. The executor sends their specs
instead, each a ``tf.TensorSpec`` numbered by its name, in the call's structure (``called``).
The trusted side traces the test's own function for those specs (``traced``) as the
submission's trace would have in one process: with autograph when that trace has it, the test's
Python running once per trace, here, where the test sees what it did. What goes back is data:
the graph (a ``GraphDef``), the names of its inputs, of its outputs in the structure the
function returned and of the ops that must run for their effects (a ``tf.print``, an
assignment); the eager tensors it captured, by value; and the test's ``tf.Variable``s it reads
or assigns, each kept in step with a variable of the executor's as a Keras proxy's are
(``grader.remote._keras.Variables``), made there unseen by the ``tf.function`` being traced
(``_unseen_by_creators``: they existed before it, as in one process) and watched by a tape there
as read, so an assignment the submission runs reaches the test's variable and a gradient the
submission takes reaches it too (a training step of the test's model). The executor imports
the graph into the trace under way, its ops that graph's own (``_inlined``: the op types and
XLA's verdict are those of one process), or, while a tape there may record (a tape records no
imported op), as a function of its own called in their place (``_called_as_function``:
``wrap_function``, pruned to those inputs and outputs), which the tape differentiates. A
``py_function`` or ``numpy_function`` of the test's is an op whose Python stays here: XLA refuses
it as in one process, and running it there fails, saying the function is not found. A function
that captures another resource, or returns what is not a tensor, is refused, by name.

A ``tf.data.Dataset`` of the test's crosses the same way, as its graph (``dataset_node``): the
executor makes the same pipeline from it (``made_dataset``), and iterating over it there makes
its elements there, as a copy of the test's dataset would.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from grader.remote import _tfgrad
from grader.remote import _wire as wire

# The name prefix of the specs that stand for the call's symbolic tensors, numbered.
_SPEC = "drills_traced_"
# The name scope the test's graph is imported under, there.
_SCOPE = "test_function"

_NOT_A_TENSOR = ("a function of the tests traced into a graph of the submission's process returns a "
                 "{what} (its tests run in a process of their own: only tensors, None and containers of "
                 "them come back from a trace)")
_RESOURCE_REFUSED = ("a function of the tests traced into a graph of the submission's process uses a "
                     "resource that is not a tf.Variable (its tests run in a process of their own)")


@contextlib.contextmanager
def _eagerly() -> Iterator[None]:
    """Out of the graph being built (a function's, or a TF1 graph's), executing eagerly."""
    import tensorflow as tf
    from tensorflow.python.eager import context

    with tf.init_scope(), context.eager_mode():
        yield


@contextlib.contextmanager
def _unseen_by_creators() -> Iterator[None]:
    """No variable creator of a ``tf.function`` sees the variables made inside: the test's
    variables exist before the submission's function is traced, as in one process, where a
    function that made variables on its first trace would be traced once more."""
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    creators = graph._variable_creator_stack
    graph._variable_creator_stack = []
    try:
        yield
    finally:
        graph._variable_creator_stack = creators


def _autograph_on() -> bool:
    from tensorflow.python.autograph.core import ag_ctx

    return ag_ctx.control_status_ctx().status == ag_ctx.Status.ENABLED


def specs_of(args: tuple, kwargs: dict) -> tuple[Any, list]:
    """``(args, kwargs)`` with each symbolic tensor (a variable: as read now) replaced by a
    numbered ``tf.TensorSpec``, and those tensors in their numbers' order (executor side)."""
    import tensorflow as tf

    symbolic: list = []

    def spec(leaf: Any) -> Any:
        if isinstance(leaf, tf.Variable):
            leaf = tf.convert_to_tensor(leaf)
        if not (isinstance(leaf, tf.Tensor) and tf.is_symbolic_tensor(leaf)):
            return leaf
        if leaf.dtype.name not in wire.TF_CARRIED:
            raise TypeError(f"a {leaf.dtype.name} tensor cannot be passed to a function of the tests traced "
                            "into a graph (its tests run in a process of their own)")
        symbolic.append(leaf)
        return tf.TensorSpec(leaf.shape, leaf.dtype, name=f"{_SPEC}{len(symbolic) - 1}")

    structure = (tuple(args), dict(kwargs))
    return tf.nest.pack_sequence_as(structure, [spec(leaf) for leaf in tf.nest.flatten(structure)]), symbolic


def called(caller: Any, cid: int, args: tuple, kwargs: dict, encode: Any, out: list[bytes]) -> Any:
    """The test's function ``cid``, called in a trace of the submission's with ``args`` and
    ``kwargs``: its graph, traced by the trusted side and imported here, called on them
    (executor side; ``encode`` makes a value's node for the message, its blobs in ``out``)."""
    import tensorflow as tf

    (args, kwargs), symbolic = specs_of(args, kwargs)
    message = {"callback_trace": cid, "args": encode(args), "kwargs": encode(kwargs),
               "count": len(symbolic), "autograph": _autograph_on()}
    with _eagerly():  # what comes back is eager: the captured constants' values
        description, _ = caller._finish(message, out)
    graph_def, inputs, constants, variables, outputs, effects = wire.as_list(description, 6)
    inputs, effects = wire.as_list(inputs, len(symbolic)), wire.as_list(effects)
    if type(graph_def) is not bytes or not all(type(n) is str for n in [*inputs, *effects]):
        raise RuntimeError("the tests' process answered out of protocol (a traced function)")
    constants = [wire.as_list(entry, 2) for entry in wire.as_list(constants)]
    kept = [_kept_variable(caller, entry) for entry in wire.as_list(variables)]
    fetched = sorted({name for name in tf.nest.flatten(outputs) if name is not None})
    graph_def = tf.compat.v1.GraphDef.FromString(graph_def)
    if _tfgrad.recording():
        by_name = _called_as_function(graph_def, symbolic, inputs, constants, kept, fetched, effects)
    else:
        by_name = _inlined(graph_def, symbolic, inputs, constants, kept, fetched)
    return tf.nest.map_structure(lambda name: None if name is None else by_name[name], outputs)


def _inlined(graph_def: Any, symbolic: list, inputs: list, constants: list, kept: list, fetched: list) -> dict:
    """The outputs of ``graph_def``, imported into the graph being traced, by name: its ops are
    that graph's own, as the test's function's would be in one process (a tape records none of
    them: ``called`` takes this way only while none may be recording)."""
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()

    def outer(value: Any) -> Any:  # an eager value (a variable's handle) used in this graph
        return graph.capture(value) if hasattr(graph, "capture") else tf.constant(value)

    feeds = dict(zip(inputs, symbolic, strict=True))
    feeds.update((name, outer(value)) for name, value in constants)
    feeds.update((name, outer(var.handle)) for name, var in kept)
    # The placeholders fed go: left in, one would be an op of this graph that nothing feeds (XLA
    # refuses to compile a graph with one).
    fed = {name.partition(":")[0] for name in feeds}
    nodes = [node for node in graph_def.node if node.name not in fed]
    del graph_def.node[:]
    graph_def.node.extend(nodes)
    returned = tf.graph_util.import_graph_def(graph_def, input_map=feeds, return_elements=fetched, name=_SCOPE)
    return dict(zip(fetched, returned, strict=True))


def _called_as_function(graph_def: Any, symbolic: list, inputs: list, constants: list, kept: list,
                        fetched: list, effects: list) -> dict:
    """The outputs of ``graph_def`` by name, imported as a function of its own and called on the
    trace's tensors: a call the submission's tapes record, differentiable through the graph."""
    import tensorflow as tf

    def imported() -> None:
        with tf.name_scope("captured"):
            feeds = {name: tf.constant(value) for name, value in constants}
        tf.compat.v1.import_graph_def(graph_def, input_map=feeds, name=_SCOPE)

    wrapped = tf.compat.v1.wrap_function(imported, [])
    graph = wrapped.graph

    def element(name: str) -> Any:
        return graph.as_graph_element(f"{_SCOPE}/{name}")

    function = wrapped.prune([element(n) for n in [*inputs, *(name for name, _ in kept)]],
                             [[element(n) for n in fetched], [element(n) for n in effects]])
    from tensorflow.python.eager import tape

    # Read by the function, as by the test's own function in one process: a tape watches them.
    tape.variables_accessed([var for _, var in kept])
    values, _ = function(*symbolic, *(var.handle for _, var in kept))
    return dict(zip(fetched, values, strict=True))


def _kept_variable(caller: Any, entry: Any) -> tuple[str, Any]:
    """``(placeholder name, the executor's variable)`` of one of the test's variables a traced
    function captured: made, under its id, from the value sent the first time."""
    import tensorflow as tf

    name, vid, value, trainable = wire.as_list(entry, 4)
    variables = caller.keras_variables
    var = variables.by_id.get(vid) if type(vid) is int else None
    if type(name) is not str:
        raise RuntimeError("the tests' process answered out of protocol (a traced function's variable)")
    if var is None:
        if not isinstance(value, tf.Tensor) or type(vid) is not int:
            raise RuntimeError("the tests' process answered out of protocol (a traced function's variable)")
        with _eagerly(), _unseen_by_creators():  # made once, outside the trace under way
            var = tf.Variable(value, trainable=trainable is True)
            variables.add(vid, var)
        caller.traced_variables.append(var)
    return name, var


# ----------------------------------------------------------------------------- the trusted side


def traced(executor: Any, fn: Any, message: dict, blobs: list[bytes], out: list[bytes]) -> dict:
    """The answer to a ``called`` request: ``fn`` traced for the specs and values it names, as
    data (trusted side). Raises what tracing ``fn`` raised (the test's function's own errors)."""
    import tensorflow as tf

    template = (executor.decode(message["args"], blobs), executor.decode(message["kwargs"], blobs))
    leaves = tf.nest.flatten(template)
    numbered = {int(leaf.name[len(_SPEC):]): place for place, leaf in enumerate(leaves)
                if isinstance(leaf, tf.TensorSpec) and (leaf.name or "").startswith(_SPEC)
                and leaf.name[len(_SPEC):].isdigit()}
    count = message.get("count")
    if type(count) is not int or sorted(numbered) != list(range(count)):
        raise wire.WireError("a traced call whose tensors are not numbered")
    places = [numbered[i] for i in range(count)]

    @tf.autograph.experimental.do_not_convert
    def rebuilt(tensors: tuple) -> Any:
        filled = list(leaves)
        for place, tensor in zip(places, tensors, strict=True):
            filled[place] = tensor
        return tf.nest.pack_sequence_as(template, filled)

    def call(*tensors: Any) -> Any:
        args, kwargs = rebuilt(tensors)
        return fn(*args, **kwargs)

    concrete = tf.function(call, autograph=message.get("autograph") is True).get_concrete_function(
        *(tf.TensorSpec(leaves[p].shape, leaves[p].dtype) for p in places))
    graph = concrete.graph
    by_handle = {id(var.handle): var for var in concrete.variables}
    constants, variables = [], []
    for external, internal in zip(concrete.captured_inputs, graph.internal_captures, strict=True):
        if external.dtype != tf.resource:
            constants.append([internal.name, external])
            continue
        var = by_handle.get(id(external))
        if var is None:
            raise TypeError(_RESOURCE_REFUSED)
        vid = executor.keras_variables.ident(var)
        fresh = vid is None
        if fresh:
            vid = executor.new_id()
            executor.keras_variables.add(vid, var)
        variables.append([internal.name, vid, var.read_value() if fresh else None, bool(var.trainable)])

    def output_name(value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, tf.Tensor):
            raise TypeError(_NOT_A_TENSOR.format(what=type(value).__name__))
        return value.name

    outputs = tf.nest.map_structure(output_name, concrete.structured_outputs)
    effects = [op.name for op in graph.control_outputs]
    description = [graph.as_graph_def().SerializeToString(), [t.name for t in concrete.inputs[:count]],
                   constants, variables, outputs, effects]
    return {"answer": "callback", "value": executor.encode(description, out)}


# ----------------------------------------------------------------------------- datasets


def is_dataset(value: Any) -> bool:
    """Whether ``value`` is a ``tf.data.Dataset`` (without importing TensorFlow)."""
    return (type(value).__module__.startswith("tensorflow.")
            and isinstance(value, sys.modules["tensorflow"].data.Dataset))


def dataset_node(dataset: Any, blobs: list[bytes]) -> dict | None:
    """The node of a test's dataset: its graph and its element spec (trusted side); None for one
    whose elements are not of specs that cross (ragged or sparse ones)."""
    try:
        spec = wire.encode(dataset.element_spec, [])
    except wire.WireError:
        return None
    blobs.append(dataset._as_serialized_graph().numpy())
    return {"k": "tf_dataset", "graph": len(blobs) - 1, "spec": spec}


def made_dataset(node: dict, blobs: list[bytes]) -> Any:
    """The executor's dataset made from the graph of a test's (``dataset_node``)."""
    import tensorflow as tf

    spec = wire.decode(node["spec"], blobs)
    variant = tf.raw_ops.DatasetFromGraph(graph_def=tf.constant(wire.blob_at(blobs, node["graph"])))
    return tf.data.experimental.from_variant(variant, spec)
