"""grader.remote with TensorFlow: a real executor serving a module of TensorFlow functions, driven
from a fresh interpreter (as a grading child drives it: TensorFlow imported, no op run before the
executors' zygote is forked; a process forked after TensorFlow ran ops can hang), and the
codec's refusals of TensorFlow nodes a hostile executor could send."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

tf = pytest.importorskip("tensorflow")

from grader.remote import _wire as wire  # noqa: E402

MODULE = '''
import numpy as np
import tensorflow as tf

def same(x):
    return x

def square(x):
    return x * x

def through_numpy(x):
    return tf.constant(x.numpy() * 2)

def pair(x):
    return x * 3, tf.cast(x, tf.int32), "text"

def add_one_then_raise(var):
    var.assign_add(tf.ones_like(var))
    raise ValueError("var is wrong")

def assign(var, value):
    var.assign(value)
    return var

def new_variable(x):
    return tf.Variable(x)

def dtype_of(x):
    return x.dtype

def device_of(x):
    return x.device

def shout(s):
    return tf.strings.upper(s)

def resource_dtype():
    return tf.resource

def bad_decay(decay):
    tf.debugging.assert_less_equal(decay, 1.0, message="decay must be in [0, 1]")
'''

DRIVER = '''
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from grader.remote import Executor, Zygote

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
zygote = Zygote.start(close=[], threads=1)
executor = Executor(zygote)
root = Path(sys.argv[1])
module = executor.load("tensorflow.basics.tensors_and_variables", root)

# Every carried dtype crosses with its values, shape and dtype; a tensor returned is the test's own.
for dtype in (tf.bool, tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.float16, tf.bfloat16, tf.float32,
              tf.float64, tf.complex64, tf.complex128):
    x = tf.cast(tf.reshape(tf.range(6), (2, 3)), dtype)
    back = module.square(x) if dtype != tf.bool else module.same(x)
    assert back.dtype == dtype and back.shape == (2, 3), (dtype, back)
    assert module.dtype_of(x) == dtype
x = tf.constant([1.0, 2.0])
assert module.same(x) is x
words = tf.constant([[b"ab", b""], [b"c\\x00d", b"e"]])
assert module.shout(words).numpy().tolist() == [[b"AB", b""], [b"C\\x00D", b"E"]] and module.same(words) is words
word = tf.constant(b"one")  # a scalar string: its numpy() is bytes, not an array
assert module.shout(word).numpy() == b"ONE" and module.shout(word).shape == ()
assert type(module.resource_dtype()).__name__ == "DType" and module.same(x) is x  # a handle, and no harm

# A tape here differentiates through a call there; a result made through NumPy has no gradient.
with tf.GradientTape(persistent=True) as tape:
    tape.watch(x)
    y = module.square(x)
    tripled, as_int, text = module.pair(x)
    cut = module.through_numpy(x)
assert tape.gradient(y, x).numpy().tolist() == [2.0, 4.0]
assert tape.gradient(tripled, x).numpy().tolist() == [3.0, 3.0] and as_int.dtype == tf.int32 and text == "text"
assert tape.gradient(cut, x) is None and cut.numpy().tolist() == [2.0, 4.0]
with tf.GradientTape() as tape:
    tape.watch(x)
    total = tf.reduce_sum(module.square(x) * tf.constant([1.0, -1.0]))
assert tape.gradient(total, x).numpy().tolist() == [2.0, -4.0]

# A variable: the test's own comes back, with what the call assigned, also when it raised.
var = tf.Variable([[1.0, 2.0]])
reads = tf.function(lambda: var.read_value())
reads()
assert module.assign(var, [[5.0, 6.0]]) is var and reads().numpy().tolist() == [[5.0, 6.0]]
try:
    module.add_one_then_raise(var)
except ValueError as exc:
    assert "var is wrong" in str(exc)
else:
    raise AssertionError("no ValueError")
assert var.numpy().tolist() == [[6.0, 7.0]]
made = module.new_variable(x)
assert isinstance(made, tf.Variable) and made is not x and made.numpy().tolist() == [1.0, 2.0]

# TensorFlow's op errors come back as their own class, with their message.
try:
    module.bad_decay(tf.constant(1.5))
except tf.errors.InvalidArgumentError as exc:
    assert "decay must be in [0, 1]" in exc.message, exc.message
else:
    raise AssertionError("no InvalidArgumentError")

# A tensor placed on the second logical CPU is there in the call too.
with tf.device("/CPU:1"):
    placed = tf.identity(x)
assert module.device_of(placed).endswith("CPU:1"), module.device_of(placed)

executor.close()
zygote.close()
print("all held")
'''


def _drive(tmp_path, relpath: str, module: str, driver: str) -> None:
    """Run ``driver`` in a fresh interpreter against ``module`` staged at ``relpath``; it prints
    "all held" when every assertion did."""
    path = tmp_path / relpath
    path.parent.mkdir(parents=True)
    path.write_text(module)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(driver), str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0 and "all held" in done.stdout, done.stderr[-3000:]


@pytest.mark.timeout(600)  # a fresh interpreter imports TensorFlow
def test_tensors_variables_and_tapes_cross_as_in_one_process(tmp_path):
    _drive(tmp_path, "tensorflow/basics/tensors_and_variables.py", MODULE, DRIVER)


@pytest.mark.parametrize("node", [
    {"k": "tf_tensor", "dtype": "float32", "shape": [3], "device": "", "blob": 0},      # 8 bytes for 12
    {"k": "tf_tensor", "dtype": "string", "shape": [2], "device": "", "blob": 0},       # not carried
    {"k": "tf_tensor", "dtype": "resource", "shape": [], "device": "", "blob": 0},      # not carried
    {"k": "tf_tensor", "dtype": "float32", "shape": [-2], "device": "", "blob": 0},     # a negative dimension
    {"k": "tf_tensor", "dtype": "float32", "shape": [2], "device": 5, "blob": 0},       # a device not named
    {"k": "tf_dtype", "v": "variant"},
    {"k": "tf_variable", "v": {"k": "tf_dtype", "v": "float32"}, "trainable": True, "name": "v"},
    {"k": "tf_spec", "shape": [None, -1], "dtype": "float32", "name": None},             # a negative dimension
    {"k": "tf_spec", "shape": None, "dtype": "resource", "name": None},                  # not carried
    {"k": "tf_spec", "shape": [2], "dtype": "float32", "name": 7},                        # a name not a string
    {"k": "function", "module": "os", "qualname": "system"},                             # not a library's
    {"k": "function", "module": "tensorflow", "qualname": "Variable"},                  # not a function
    {"k": "function", "module": "keras.src.activations.activations", "qualname": "os.system"},  # reached through
])
def test_a_malformed_tensorflow_node_is_refused(node):
    ok = {"k": "tf_tensor", "dtype": "float32", "shape": [2], "device": "", "blob": 0}
    assert wire.decode(ok, [bytes(8)]).numpy().tolist() == [0.0, 0.0]
    for spec in (tf.TensorSpec([None, 3], tf.float64, name="x"), tf.TensorSpec(None, tf.string)):
        assert wire.decode(wire.encode(spec, []), []) == spec
    relu = pytest.importorskip("keras").activations.relu
    assert wire.decode(wire.encode(relu, []), []) is relu
    with pytest.raises(wire.WireError):
        wire.decode(node, [bytes(8)])


CALLING_BACK = '''
import numpy as np
import tensorflow as tf

def gradient(f, x, **options):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, **options)

def _gradient_recorded_on(outer, f, x):
    outer.watch(x)
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = f(x)
    return inner.gradient(y, x)

def hessian_vector_product(f, x, v):
    with tf.GradientTape() as outer:
        gv = tf.reduce_sum(_gradient_recorded_on(outer, f, x) * v)
    return outer.gradient(gv, x)

def derivative(f, x, order):
    if order == 0:
        return f(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = derivative(f, x, order - 1)
    return tape.gradient(y, x)

def forward_over_backward(f, x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    return accumulator.jvp(g)

@tf.function
def in_a_graph(f, x, v):
    return f(x) * v

def through_the_hessian(f, x, v):
    with tf.GradientTape() as outer:
        g = _gradient_recorded_on(outer, f, x)
    hessian = outer.jacobian(g, x)  # its backward vectorized: traced into a graph
    return tf.linalg.matvec(hessian, v)

def layer_gradients(layer, x):
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(layer(x, training=True))
    return tape.gradient(y, layer.trainable_variables), [tuple(v.shape) for v in layer.variables]

def sgd_step(layer, x, lr):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(x) ** 2)
    variables = layer.trainable_variables
    for var, g in zip(variables, tape.gradient(loss, variables)):
        var.assign_sub(lr * g)

def values(layer):
    return [v.numpy().tolist() for v in layer.variables]

def units(layer):
    return layer.units

def kinds(layer):
    return [isinstance(layer, kind) for kind in (tf.keras.Model, tf.keras.Sequential, tf.keras.layers.Dense,
                                                   tf.keras.layers.Layer)]

def same(x):
    return x

def call(layer, x):
    return layer(x)

def penalty(layer):
    return tf.add_n(layer.losses)
'''

CALLING_BACK_DRIVER = '''
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from grader.remote import Executor, Zygote

zygote = Zygote.start(close=[], threads=1)
executor = Executor(zygote)
module = executor.load("tensorflow.autodiff.gradient_tape", Path(sys.argv[1]))
x = tf.constant([0.5, -1.0, 2.0], tf.float64)

def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)

# A function of the tests, recorded on the submission's tape: its gradient crosses back.
close(module.gradient(lambda t: tf.reduce_sum(t ** 2), x), 2 * x)
close(module.gradient(lambda t: t ** 3, x), 3 * x ** 2)  # a non-scalar: the gradient of its sum
var = tf.Variable([1.0, 2.0], dtype=tf.float64)
close(module.gradient(lambda t: tf.reduce_sum(tf.exp(t)), var), tf.exp(var))  # a variable, as read there
# No dependence, or one through NumPy: None, or zeros when asked, as in one process.
assert module.gradient(lambda t: tf.constant(3.0, tf.float64), x) is None
assert module.gradient(lambda t: tf.constant(t.numpy() ** 2), x) is None
close(module.gradient(lambda t: tf.constant(3.0, tf.float64), x,
                      unconnected_gradients=tf.UnconnectedGradients.ZERO), [0.0, 0.0, 0.0])
# A second derivative: the inner gradient, taken while the outer tape records, is differentiable.
v = tf.constant([1.0, 2.0, -0.5], tf.float64)
f = lambda t: tf.reduce_sum(t) ** 2 + tf.reduce_sum(t ** 3)  # H v = 2 sum(v) + 6 x v
close(module.hessian_vector_product(f, x, v), 2 * np.sum(v) + 6 * x.numpy() * v.numpy())
# A linear function's gradient does not depend on x: None, as in one process.
assert module.hessian_vector_product(lambda t: tf.reduce_sum(3.0 * t), x, v) is None
# So does forward over backward (three products deep).
close(module.forward_over_backward(f, x, v), 2 * np.sum(v) + 6 * x.numpy() * v.numpy())
# Traced into a graph of the submission's, the function crosses as its graph (the next test);
# its gradient traced there (tape.jacobian's vectorized backward) does not yet: refused, by name.
close(module.in_a_graph(f, x, v), f(x) * v)
try:
    module.through_the_hessian(f, x, v)
except TypeError as exc:
    assert "cannot be traced into a graph" in str(exc), exc
else:
    raise AssertionError("the vectorized backward crossed")
# Up to the fourth derivative; a fifth is refused, by name.
for order, expected in enumerate([5 * x ** 4, 20 * x ** 3, 60 * x ** 2, 120 * x], start=1):
    close(module.derivative(lambda t: tf.reduce_sum(t ** 5), x, order), expected)
try:
    module.derivative(lambda t: tf.reduce_sum(t ** 6), x, 5)
except NotImplementedError as exc:
    assert "derivative of order 5" in str(exc), exc
else:
    raise AssertionError("a fifth derivative through a function of the tests crossed")

# A Keras model of the tests runs here: its records are the test's, its variables the
# submission's to differentiate, built or not.
class Recording(tf.keras.Model):
    def __init__(self):
        super().__init__(dtype="float64")
        self.dense = tf.keras.layers.Dense(2, dtype="float64")
        self.flags = []

    def call(self, t, training=None):
        self.flags.append(training)
        return self.dense(t) * 2.0

inputs = tf.constant(np.random.default_rng(0).standard_normal((4, 3)))
for built in (True, False):
    model, twin = Recording(), Recording()  # the twin, called here: the records one process makes
    if built:
        model(inputs), twin(inputs)
        model.flags.clear(), twin.flags.clear()
    grads, shapes = module.layer_gradients(model, inputs)
    twin(inputs, training=True)  # an unbuilt model's first call runs it twice (a symbolic pass)
    assert shapes == [(3, 2), (2,)] and model.flags == twin.flags == [True] * (1 if built else 2), (
        shapes, model.flags)
    close(grads[0], 2 * np.repeat(np.sum(inputs.numpy(), axis=0)[:, None], 2, axis=1))  # d/dW sum(2 (x W + b))
    close(grads[1], [8.0, 8.0])
    assert module.same(model) is model and module.units(model.dense) == 2
    # isinstance holds for the nearest classes of theirs that Keras exports.
    assert module.kinds(model) == [True, False, False, True] and module.kinds(model.dense) == [False, False, True, True]
assert module.kinds(tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])) == [True, True, False, True]

# What the submission assigns to the variables is the test's, and what the test assigns is
# the submission's.
dense = tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", dtype="float64")
dense(inputs)
before = dense.kernel.numpy()
module.sgd_step(dense, inputs, 0.01)
close(dense.kernel.numpy(), before - 0.01 * (2 * inputs.numpy().T @ (inputs.numpy() @ before)))  # d sum((x W)^2) / dW
dense.kernel.assign([[1.0], [2.0], [3.0]])
assert module.values(dense) == [[[1.0], [2.0], [3.0]]]
close(module.call(dense, inputs), inputs.numpy() @ np.array([[1.0], [2.0], [3.0]]))
# What the submission reads of a test's layer is an op of its variables too: a regularizer's
# loss, computed by the test's layer, is differentiable in them through the call.
regularized = tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="ones", dtype="float64",
                                    kernel_regularizer=tf.keras.regularizers.L2(0.5))
regularized(inputs)
with tf.GradientTape() as tape:
    loss = module.penalty(regularized)
close(loss, 0.5 * np.sum(regularized.kernel.numpy() ** 2))
close(tape.gradient(loss, regularized.kernel), regularized.kernel.numpy())  # d 0.5 sum(W^2) / dW

executor.close()
zygote.close()
print("all held")
'''


@pytest.mark.timeout(600)  # a fresh interpreter imports TensorFlow
def test_functions_and_keras_layers_of_the_tests_cross_with_their_gradients(tmp_path):
    _drive(tmp_path, "tensorflow/autodiff/gradient_tape.py", CALLING_BACK, CALLING_BACK_DRIVER)


def test_a_shared_variable_takes_only_a_value_of_its_own_dtype_and_shape():
    from grader.remote._keras import Variables

    here = Variables()  # the trusted side's: what the executor sends is checked
    var = tf.Variable([1.0, 2.0])
    here.add(7, var)
    for vid, value in ((7, tf.constant([1.0, 2.0, 3.0])), (7, tf.constant([1, 2])), (8, tf.constant([1.0, 2.0])),
                       ("7", tf.constant([1.0, 2.0]))):
        blobs: list[bytes] = []
        with pytest.raises(wire.WireError):
            here.take([[vid, wire.encode(value, blobs)]], blobs)
    assert var.numpy().tolist() == [1.0, 2.0]
    blobs = []
    here.take([[7, wire.encode(tf.constant([5.0, 6.0]), blobs)]], blobs)
    assert var.numpy().tolist() == [5.0, 6.0] and here.changes([]) == []  # taken, so agreed: not sent back
    var.assign([0.0, 0.0])
    assert [vid for vid, _ in here.changes([])] == [7] and here.changes([]) == []


def test_the_executor_drops_a_dead_proxys_variables_after_sending_what_it_assigned():
    from grader.remote._keras import Variables

    listed: set[int] = {1}
    there = Variables(lambda: listed)  # the executor's
    kept, gone = tf.Variable([1.0]), tf.Variable([2.0])
    there.add(1, kept)
    there.add(2, gone)
    gone.assign([3.0])
    there.unlisted = True  # the proxy that listed variable 2 died
    assert [vid for vid, _ in there.changes([])] == [2]  # its last value goes first
    assert sorted(there.by_id) == [1]
    blobs: list[bytes] = []
    there.take([[2, wire.encode(tf.constant([9.0]), blobs)]], blobs)  # sent meanwhile: moot
    assert gone.numpy().tolist() == [3.0]


def test_a_variable_a_finalizer_lets_go_is_dropped_at_the_next_exchange_not_during_one(monkeypatch):
    from grader.remote import _keras

    here = _keras.Variables()
    first, second = tf.Variable([1.0]), tf.Variable([2.0])
    here.add(1, first)
    here.add(2, second)
    reads = []
    real = _keras._bytes

    def collecting(var):  # the garbage collector runs a finalizer while a variable is read
        reads.append(var)
        if len(reads) == 1:
            here.drop_later([2])
        return real(var)

    monkeypatch.setattr(_keras, "_bytes", collecting)
    second.assign([5.0])
    assert [vid for vid, _ in here.changes([])] == [2]  # let go mid-exchange: its last value still goes
    assert sorted(here.by_id) == [1, 2] and here.dropping == [2]
    assert here.changes([]) == [] and sorted(here.by_id) == [1]


def test_a_variable_of_the_submissions_the_test_lets_go_of_goes_at_the_next_exchange_with_its_last_value():
    import keras

    from grader.remote import _keras

    released = []
    here = _keras.Variables(released=released.append)
    kept, dropped = keras.Variable([1.0], name="kept"), tf.Variable([2.0])
    here.add(1, kept, theirs=True)
    here.add(2, dropped, theirs=True)
    dropped.assign([5.0])
    del dropped  # the test holds the other one only
    assert [vid for vid, _ in here.changes([])] == [2]  # what the test last assigned still goes
    assert sorted(here.by_id) == [1] and released == [2]
    assert here.changes([]) == [] and sorted(here.by_id) == [1] and released == [2]


TRACING = '''
import tensorflow as tf

@tf.function
def gradient_in_a_graph(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)

def hvp_in_a_graph(f, x, v):
    @tf.function
    def hvp(x, v):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            gv = tf.reduce_sum(inner.gradient(y, x) * v)
        return outer.gradient(gv, x)
    return hvp(x, v)

def traced_directly(f, *args):
    return tf.function(f)(*args)

def traced_twice(f, x):
    traced = tf.function(lambda t, scale: f(t, scale=scale))
    return traced(x, 2.0), traced(x + 1.0, 2.0)

def op_types(f, spec):
    return sorted({op.type for op in tf.function(f).get_concrete_function(spec).graph.get_operations()})

def compiles(f, x):
    try:
        tf.function(f, jit_compile=True).experimental_get_compiler_ir(x)(stage="hlo")
    except (ValueError, tf.errors.OpError):
        return False
    return True

KEPT = {}

def run_kept(f, x):
    if "fn" not in KEPT:
        KEPT["fn"] = tf.function(lambda t: f(t))
    return KEPT["fn"](x)

def in_a_session(f, value):
    graph = tf.Graph()
    with graph.as_default():
        p = tf.compat.v1.placeholder(tf.float64, [None])
        y = f(p)
    with tf.compat.v1.Session(graph=graph) as session:
        return session.run(y, {p: value})

def mapped(f, values):
    return [e.numpy().tolist() for e in tf.data.Dataset.from_tensor_slices(values).map(f)]
'''

TRACING_DRIVER = '''
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

from grader.remote import Executor, Zygote

zygote = Zygote.start(close=[], threads=1)
executor = Executor(zygote)
module = executor.load("tensorflow.autodiff.gradient_tape", Path(sys.argv[1]))
x = tf.constant([0.5, -1.0, 2.0], tf.float64)
v = tf.constant([1.0, 2.0, -0.5], tf.float64)

def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)

# Differentiated in the submission's graph, on its tapes there, one and two derivatives deep.
f = lambda t: tf.reduce_sum(t) ** 2 + tf.reduce_sum(t ** 3)  # H v = 2 sum(v) + 6 x v
close(module.gradient_in_a_graph(f, x), 2 * np.sum(x) + 3 * x.numpy() ** 2)
close(module.hvp_in_a_graph(f, x, v), 2 * np.sum(v) + 6 * x.numpy() * v.numpy())
w = tf.constant([[1.0], [2.0], [3.0]], tf.float64)  # an eager tensor the function captures
close(module.gradient_in_a_graph(lambda t: tf.matmul(t[None, :], w), x), [1.0, 2.0, 3.0])
close(module.traced_directly(lambda t: tf.matmul(t[None, :], w), x), [[4.5]])  # imported into the trace

# What the function returns comes back in its structure; Python values it is called with, as they are.
out = module.traced_directly(lambda t, k: {"twice": t * k, "none": None, "pair": (t, t + 1.0)}, x, 2.0)
close(out["twice"], 2 * x), close(out["pair"][1], x + 1.0)
assert out["none"] is None and isinstance(out["pair"], tuple)

# The test's Python runs here, once per trace, with the keyword arguments it was called with.
traces = []
def scaled(t, scale):
    traces.append(scale)
    return t * scale
first, second = module.traced_twice(scaled, x)
close(first, 2 * x), close(second, 2 * (x + 1.0))
assert traces == [2.0], traces

# Its ops are the graph's own: the submission sees them, and XLA compiles them, or refuses what
# it has no kernel for (a numpy_function of the test's, a print).
spec = tf.TensorSpec([None, 3], tf.float32)
sine = lambda t: tf.sin(t) * 2.0
assert module.op_types(sine, spec) == sorted(
    {op.type for op in tf.function(sine).get_concrete_function(spec).graph.get_operations()})
X = tf.constant([[1.0, -2.0, 3.0]])
assert module.compiles(lambda t: tf.nn.relu(t) * 2.0, X) is True
assert module.compiles(lambda t: tf.numpy_function(lambda a: a * 2, [t], tf.float32), X) is False
assert module.compiles(lambda t: (tf.print(t), t * 2.0)[1], X) is False

# A variable of the test's that the function assigns is kept in step both ways.
counter = tf.Variable(0.0, dtype=tf.float64)
def bump(t):
    counter.assign_add(1.0)
    return t + counter
close(module.run_kept(bump, x), x + 1.0)
assert counter.numpy() == 1.0
counter.assign(10.0)
close(module.run_kept(bump, x), x + 11.0)
assert counter.numpy() == 11.0
assert module.compiles(lambda t: (counter.assign_add(1.0), t)[1], tf.constant([1.0], tf.float64)) is True
assert counter.numpy() == 11.0  # compiled, never run

# The function's own errors, raised while it is traced, come back as themselves.
def buggy(t):
    raise KeyError("a bug in f")
try:
    module.traced_directly(buggy, x)
except KeyError as exc:
    assert "a bug in f" in str(exc), exc
else:
    raise AssertionError("no KeyError")

# A TF1 graph run in a session, and tf.data's map.
close(module.in_a_session(lambda t: t * 3.0, [1.0, 2.0]), [3.0, 6.0])
# The sessions it ran are recorded there: the graph, its own, has the submission's placeholder
# (the test function's graph brought none).
from grader.tfchecks import SessionRun, record_session_runs
out, runs = record_session_runs(module.in_a_session, lambda t: t * 3.0, [1.0, 2.0])
close(out, [3.0, 6.0])
assert runs == [SessionRun(True, ((None,),))], runs
assert module.mapped(lambda t: t * 2, tf.constant([1, 2, 3])) == [2, 4, 6]

executor.close()
zygote.close()
print("all held")
'''


@pytest.mark.timeout(600)  # a fresh interpreter imports TensorFlow
def test_a_function_of_the_tests_traced_there_crosses_as_its_graph(tmp_path):
    _drive(tmp_path, "tensorflow/autodiff/gradient_tape.py", TRACING, TRACING_DRIVER)


SUBMISSIONS_KERAS = '''
import keras
import numpy as np
import tensorflow as tf

def mlp(width, hidden=4):
    model = keras.Sequential([keras.Input((width,)), keras.layers.Dense(hidden, activation="relu"),
                              keras.layers.Dense(1)])
    return model

def functional(width):
    x = keras.Input((width,), name="features")
    return keras.Model(x, keras.layers.Dense(2, name="head")(x))

class Block(keras.layers.Layer):
    """A layer of the submission's: built on its first call."""
    flavour = "plain"

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(int(input_shape[-1]), self.units), initializer="ones")

    def call(self, x):
        return tf.matmul(x, self.w)

    def get_config(self):
        return {**super().get_config(), "units": self.units}

def block_of(cls, units):
    return cls(units)

def total(model):
    return tf.add_n([tf.reduce_sum(w) for w in model.trainable_weights])

def same(x):
    return x

def elements(dataset):
    return [[float(v) for v in np.ravel(x)] for x in dataset]

def compiled_fit(model, optimizer, loss, x, y, epochs):
    model.compile(optimizer=optimizer, loss=loss)
    model.fit(x, y, epochs=epochs, batch_size=len(x), verbose=0)
    return model

def sets_policy(name):
    keras.mixed_precision.set_global_policy(name)

def logs_learning_rate(logs, nested):
    logs["learning_rate"] = 0.5
    del logs["dropped"]
    nested["inner"]["seen"] = True

def stops(model):
    model.stop_training = True

class Counter(tf.Module):
    """A tf.Module of the submission's."""

def described(layer):
    return type(layer).__name__, keras.activations.serialize(layer.activation), layer.activation

def replaces_a_method(model):
    model.predict = lambda *args: 0.0

def train_in_a_graph(model, x, y, optimizer, loss_fn, steps):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(loss_fn(y, model(x, training=True)))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return [float(step(x, y)) for _ in range(steps)]

def dense_under_the_policy():
    return keras.layers.Dense(2).dtype_policy.name
'''

SUBMISSIONS_KERAS_DRIVER = '''
import runpy
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from grader.remote import Executor, Zygote
from grader.tfchecks import where_the_submission_lives

zygote = Zygote.start(close=[], threads=1)
executor = Executor(zygote)
module = executor.load("tensorflow.keras.models", Path(sys.argv[1]))
module_here = runpy.run_path(str(Path(sys.argv[1], "tensorflow", "keras", "models.py")))
module_here = type("Here", (), {name: staticmethod(f) for name, f in module_here.items() if callable(f)})
HELPERS = """
import keras
import tensorflow as tf

class Flags(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.seen = []

    def call(self, x, training=None):
        self.seen.append(training)
        return x

class CountingLoss:
    def __init__(self):
        self.python_runs, self.calls = 0, tf.Variable(0)

    def __call__(self, y_true, y_pred):
        self.python_runs += 1
        self.calls.assign_add(1)
        return (y_true - y_pred) ** 2
"""
x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)

# A model of the submission's is an instance of the classes Keras exports that it derives from (a
# functional model of keras.Function and keras.Model); a class of the submission's is a class here
# that derives from those, whose instances and class methods are made there.
model = module.mlp(3)
assert isinstance(model, keras.Sequential) and isinstance(model, keras.Model)
assert not isinstance(model, keras.layers.Dense)
assert all(isinstance(layer, keras.layers.Dense) for layer in model.layers)
assert isinstance(module.functional(3), keras.Model) and isinstance(module.functional(3), keras.Function)
# A class TensorFlow exports under another name than its own: tf.name_scope is name_scope_v2.
counter = module.Counter()
assert isinstance(counter, tf.Module) and isinstance(counter.name_scope, tf.name_scope)
assert issubclass(module.Block, keras.layers.Layer) and not issubclass(module.Block, keras.Model)
assert module.Block.flavour == "plain"  # an attribute of its own, read there
block = module.Block(2)
assert isinstance(block, keras.layers.Layer) and type(block).__name__ == "Block"
assert module.Block.from_config(block.get_config()).units == 2
assert type(module.block_of(module.Block, 3)).__name__ == "Block"  # the class, passed back, is that class

# Its variables are variables here, one per variable there while the test holds it, kept in step
# both ways: what the test assigns is the model's, what the submission changes is the test's.
weights = model.trainable_weights
assert [w.path for w in weights] == [w.path for w in model.trainable_weights]
assert all(a is b for a, b in zip(weights, model.trainable_weights))
assert all(isinstance(w, keras.Variable) for w in weights) and weights[0].dtype == "float32"
for w in weights:
    w.assign(np.full(w.shape, 0.5, np.float32))
expected = np.maximum(x @ np.full((3, 4), 0.5) + 0.5, 0) @ np.full((4, 1), 0.5) + 0.5
assert np.allclose(model(x), expected) and np.isclose(float(module.total(model)), 0.5 * (12 + 4 + 4 + 1))
model.layers[0].kernel.assign(np.zeros((3, 4), np.float32))  # one the test does not keep: still sent
assert np.isclose(float(module.total(model)), 0.5 * (4 + 4 + 1))
assert not executor.keras_variables.theirs - {executor.keras_variables.ident(w) for w in weights}

# The gradients of a test's tape reach the variables the call read there, also those a first call
# made (a layer built by it), and nothing else is watched.
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(x) ** 2)
grads = tape.gradient(loss, model.trainable_weights)
with tf.GradientTape() as tape:
    same = keras.models.clone_model(model)
    same.set_weights(model.get_weights())
    reference = tape.gradient(tf.reduce_sum(same(x) ** 2), same.trainable_weights)
assert all(np.allclose(g, r) for g, r in zip(grads, reference)), (grads, reference)
fresh = module.Block(2)
with tf.GradientTape() as tape:
    out = tf.reduce_sum(fresh(x))
assert len(tape.watched_variables()) == 1  # w's, as in one process
assert np.allclose(tape.gradient(out, fresh.w), np.full((3, 2), x.sum(axis=0)[:, None]))

# A test's optimizer and loss cross as copies made from their config: the optimizer's iterations
# and learning rate are kept in step, so the test reads the steps the submission took.
optimizer = keras.optimizers.SGD(0.1)
trained = module.compiled_fit(module.mlp(3), optimizer, keras.losses.MeanSquaredError(), x, np.ones((4, 1)), 3)
assert int(optimizer.iterations.numpy()) == 3 and isinstance(trained.optimizer, keras.optimizers.SGD)
optimizer.learning_rate.assign(0.0)
before = [w.numpy() for w in trained.trainable_weights]
module.compiled_fit(trained, optimizer, "mse", x, np.ones((4, 1)), 2)
assert int(optimizer.iterations.numpy()) == 5
assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, trained.trainable_weights))

# A NumPy scalar crosses as its own type; a test's dataset as its pipeline's graph.
scalar = module.same(np.float32(1.5))
assert type(scalar) is np.float32 and scalar == 1.5
dataset = tf.data.Dataset.from_tensor_slices(np.arange(6.0)).map(lambda v: v * 2).batch(4)
assert module.elements(dataset) == [[0.0, 2.0, 4.0, 6.0], [8.0, 10.0]]

# A test's keras.Input is an input there: a model of the submission's layers on it is joined there.
inputs = keras.Input((3,), name="features")
outputs = module.Block(2)(inputs)
joined = where_the_submission_lives(module, "keras.Model", inputs, outputs)
assert isinstance(joined, keras.Model)
assert np.allclose(joined(x), np.full((4, 2), x.sum(axis=1)[:, None]))
try:
    module.same(keras.layers.Dense(2)(inputs))
except TypeError as exc:
    assert "not a keras.Input" in str(exc), exc
else:
    raise AssertionError("a layer's symbolic output crossed")

# A test's model and loss called in a tf.function of the submission's cross as their graphs: the
# step trains the test's own variables (read there as the test's layer reads them), the loss
# object's Python runs once per trace, here, and its variables there are made before the trace.
sys.path.insert(0, sys.argv[1])  # its classes are a test module's, as a test's are
Path(sys.argv[1], "test_helpers_of_the_driver.py").write_text(HELPERS)
from test_helpers_of_the_driver import CountingLoss, Flags

def tests_model():
    model = keras.Sequential([keras.Input((3,)), Flags(), keras.layers.Dense(1, kernel_initializer="ones")])
    model(x)
    model.layers[0].seen.clear()
    return model

ours, theirs, y = tests_model(), tests_model(), np.ones((4, 1), np.float32)
loss_here, loss_there = CountingLoss(), CountingLoss()
expected = module_here.train_in_a_graph(ours, x, y, keras.optimizers.SGD(0.1), loss_here, 3)
got = module.train_in_a_graph(theirs, x, y, keras.optimizers.SGD(0.1), loss_there, 3)
assert np.allclose(got, expected) and got[0] > got[-1], (got, expected)
assert all(np.allclose(a, b) for a, b in zip(ours.get_weights(), theirs.get_weights()))
assert theirs.layers[0].seen == ours.layers[0].seen == [True]  # at trace time, once
assert loss_there.python_runs == loss_here.python_runs == 1 and int(loss_there.calls.numpy()) == 3

# What a call sets or deletes in a dict of the test's is set or deleted in it (a callback's logs);
# a plain attribute it sets on a test's model is set on it (stop_training), a method is refused.
logs, loss, inner = {"loss": 1.25, "dropped": 0}, 1.25, {}
logs["loss"] = loss
module.logs_learning_rate(logs, {"inner": inner})
assert logs == {"loss": 1.25, "learning_rate": 0.5} and logs["loss"] is loss and inner == {"seen": True}
model = tests_model()
module.stops(model)
assert model.stop_training is True
try:
    module.replaces_a_method(model)
except AttributeError as exc:
    assert "takes only a plain value" in str(exc), exc
else:
    raise AssertionError("a method of the test's model was replaced")

# A test's layer is of a class named as its own there, and its activation is Keras's own function
# (a function of Keras's or TensorFlow's crosses by name); a function there has its name here.
assert module.described(keras.layers.Dense(2, activation="relu")) == ("Dense", "relu", keras.activations.relu)
assert module.described.__name__ == "described"

# Keras's global dtype policy travels with each call, both ways.
keras.mixed_precision.set_global_policy("mixed_bfloat16")
assert module.dense_under_the_policy() == "mixed_bfloat16"
module.sets_policy("float64")
assert keras.mixed_precision.global_policy().name == "float64"
keras.mixed_precision.set_global_policy("float32")

executor.close()
zygote.close()
print("all held")
'''


@pytest.mark.timeout(600)  # a fresh interpreter imports TensorFlow
def test_the_submissions_keras_objects_cross_as_instances_of_keras_classes_with_variables_kept_in_step(tmp_path):
    _drive(tmp_path, "tensorflow/keras/models.py", SUBMISSIONS_KERAS, SUBMISSIONS_KERAS_DRIVER)


@pytest.mark.parametrize("names", [
    [["keras", "ops"]],                           # exported, not a class
    [["keras.layers", "Dense"], ["os", "system"]],  # a namespace classes are not claimed from
    [["keras", "Layer"], ["keras", "Model"]],      # no class derives from both in that order
    [["keras", "NoSuchClass"]],
    [],
    "keras.Model",
])
def test_a_claim_of_classes_keras_does_not_export_is_refused(names):
    from grader.remote._claims import claimed_keras_class

    keras = pytest.importorskip("keras")
    assert issubclass(claimed_keras_class("Functional", [["keras", "Function"], ["keras", "Model"]]), keras.Model)
    with pytest.raises(wire.WireError):
        claimed_keras_class("Thing", names)
