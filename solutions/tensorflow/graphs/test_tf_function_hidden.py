"""Hidden tests for tensorflow.graphs.tf_function (the catalog's contract checks)."""

import re

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    record_session_runs,
    retrace_counter,
)

SPECS = (tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32))
WHILE_OPS = {"While", "StatelessWhile"}


def reference_ema(x: np.ndarray, decay: float) -> np.ndarray:
    """Independent reference in float64: the recurrence written out."""
    y = np.zeros(len(x))
    for t, value in enumerate(np.asarray(x, np.float64)):
        y[t] = value if t == 0 else decay * y[t - 1] + (1 - decay) * value
    return y


def numeric_grads(x: np.ndarray, decay: float, w: np.ndarray, eps: float = 1e-6):
    """d sum(w * ema) / dx and / d decay by central differences on the float64 reference."""
    def f(xv, dv):
        return float(np.dot(w, reference_ema(xv, dv)))
    gx = np.zeros(len(x))
    for i in range(len(x)):
        plus, minus = x.astype(np.float64), x.astype(np.float64)
        plus[i] += eps
        minus[i] -= eps
        gx[i] = (f(plus, decay) - f(minus, decay)) / (2 * eps)
    return gx, (f(x, decay + eps) - f(x, decay - eps)) / (2 * eps)


def series(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n).astype(np.float32)


@pytest.fixture
def eager_functions():
    """Run every tf.function eagerly inside the test, and always switch back."""
    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(False)


@pytest.mark.points(2)
@settings(max_examples=10)
@given(n=st.integers(0, 9), decay=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
@example(n=0, decay=0.5, seed=0)  # the empty series
@example(n=5, decay=0.0, seed=1)  # both ends of [0, 1] are allowed
@example(n=5, decay=1.0, seed=2)
def test_ema_scan_matches_the_recurrence(impl, n, decay, seed):
    x = series(seed, n)
    out = impl.ema_scan(tf.constant(x), decay)
    name = f"ema_scan(x of length {n}, decay={decay:.3g})"
    assert_shape(out, (n,), name=name)
    assert_dtype(out, tf.float32, name=name)
    assert_close(out, reference_ema(x, decay), rtol=1e-5, atol=1e-5, name=name)


@pytest.mark.parametrize("x_kind", ["tensor", "numpy"])
@pytest.mark.parametrize("decay_kind", ["tensor", "python"])
def test_ema_scan_takes_tensors_arrays_and_python_floats(impl, x_kind, decay_kind):
    x, decay = series(21, 5), 0.375
    out = impl.ema_scan(tf.constant(x) if x_kind == "tensor" else x,
                        tf.constant(decay, tf.float32) if decay_kind == "tensor" else decay)
    name = f"ema_scan(x as a {x_kind}, decay as a {decay_kind})"
    assert_shape(out, (5,), name=name)
    assert_dtype(out, tf.float32, name=name)
    assert_close(out, reference_ema(x, decay), rtol=1e-5, atol=1e-5, name=name)


def test_eager_graph_and_session_agree(impl, eager_functions):
    x, decay = series(3, 7), 0.7
    expected = reference_ema(x, decay)
    eager = impl.ema_scan(tf.constant(x), decay)
    assert_close(eager, expected, rtol=1e-5, atol=1e-5,
                 name="ema_scan run eagerly (tf.config.run_functions_eagerly(True))")
    tf.config.run_functions_eagerly(False)
    assert_close(impl.ema_scan(tf.constant(x), decay), expected, rtol=1e-5, atol=1e-5,
                 name="ema_scan run as a graph")
    assert_close(impl.run_in_session(x, decay), expected, rtol=1e-5, atol=1e-5,
                 name="run_in_session(x, 0.7)")


@pytest.mark.points(2)
def test_one_trace_for_many_lengths_and_python_float_decays(impl):
    impl.ema_scan(tf.constant([1.0]), 0.5)  # works at all before counting traces
    counter = retrace_counter(impl.ema_scan, name="ema_scan")
    for n in range(1, 8):
        impl.ema_scan(tf.constant(series(n, n)), 0.1 * n)
    impl.ema_scan(np.ones(3, np.float32), 0.5)
    impl.ema_scan(tf.zeros([0]), tf.constant(0.25))
    traces = counter()
    assert traces <= 1, (f"ema_scan traced {traces} times for 9 calls with different lengths and "
                         "Python-float decays: give it an input_signature with a None length and a "
                         "scalar decay, so one graph serves every call")


def test_loop_is_a_graph_while_op(impl):
    impl.ema_scan(tf.constant([1.0]), 0.5)  # works at all before its graph is inspected
    assert hasattr(impl.ema_scan, "get_concrete_function"), (
        "ema_scan is not a tf.function: decorate it with @tf.function(input_signature=...)")
    concrete = impl.ema_scan.get_concrete_function(*SPECS)
    found = {op.type for op in concrete.graph.get_operations()}
    assert found & WHILE_OPS, ("ema_scan's graph has no While op: the loop was unrolled at trace "
                               "time (a Python loop over a known length?); loop over tf.range(...) "
                               "so the length can change from call to call")


def test_gradients_flow_through_the_loop(impl):
    x, decay = series(11, 6), 0.6
    w = np.random.default_rng(12).normal(size=6)
    xt, dt = tf.constant(x), tf.constant(decay, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch([xt, dt])
        loss = tf.reduce_sum(tf.constant(w, tf.float32) * impl.ema_scan(xt, dt))
    gx, gd = tape.gradient(loss, [xt, dt])
    want_x, want_d = numeric_grads(x, decay, w)
    assert gx is not None and gd is not None, "ema_scan: no gradient reaches x or decay"
    assert_close(gx, want_x, rtol=1e-4, atol=1e-4, name="gradient of ema_scan with respect to x")
    assert_close(gd, want_d, rtol=1e-4, atol=1e-4, name="gradient of ema_scan with respect to decay")


ABOVE_ONE = float(np.nextafter(np.float32(1), np.float32(2)))  # the first float32 above 1
BELOW_ZERO = -1e-7  # a float32 just below 0 (a subnormal would be flushed to zero)


@pytest.mark.parametrize("decay", [1.5, -0.1, ABOVE_ONE, BELOW_ZERO, float("nan"), float("inf")],
                         ids=["1.5", "-0.1", "just_above_1", "just_below_0", "nan", "inf"])
def test_decay_out_of_range_is_an_error_op(impl, decay):
    for given_as in (decay, tf.constant(decay, tf.float32)):
        assert_raises_naming(tf.errors.InvalidArgumentError, "decay", impl.ema_scan,
                             tf.ones([3]), given_as)


def test_op_types_of_a_straight_line_function(impl):
    def scaled_sine(x):
        return tf.sin(x) * 2.0
    spec = tf.TensorSpec([None, 3], tf.float32)
    expected = {op.type for op in tf.function(scaled_sine).get_concrete_function(spec).graph.get_operations()}
    got = impl.op_types(tf.function(scaled_sine), spec)
    assert isinstance(got, set), f"op_types should return a set of strings, got {type(got).__name__}"
    assert got == expected, f"op_types(fn, spec) returned {sorted(got)}, expected {sorted(expected)}"


def test_op_types_finds_the_while_loop(impl):
    got = impl.op_types(impl.ema_scan, *SPECS)
    assert got & WHILE_OPS, f"op_types(ema_scan, ...) returned {sorted(got)}: no While op in it"


def test_op_types_leaves_out_ops_inside_loop_bodies(impl):
    def sines(n):
        # Sin and Cos run only inside the loop body; Tanh only after the loop.
        _, total = tf.while_loop(lambda i, acc: i < n,
                                 lambda i, acc: (i + 1, acc + tf.sin(tf.cos(tf.cast(i, tf.float32)))),
                                 (tf.constant(0), tf.constant(0.0)))
        return tf.tanh(total)
    got = impl.op_types(tf.function(sines), tf.TensorSpec([], tf.int32))
    assert isinstance(got, set), f"op_types should return a set of strings, got {type(got).__name__}"
    assert got & WHILE_OPS and "Tanh" in got, (
        f"op_types(fn with a while loop) returned {sorted(got)}: the While op and the Tanh after the "
        "loop are in the top-level graph")
    inside = got & {"Sin", "Cos"}
    assert not inside, (f"op_types(fn with a while loop) returned {sorted(inside)}, which run only inside "
                        "the loop body: the contract asks for the top-level graph's ops only")


def test_op_types_rejects_a_plain_function(impl):
    assert_raises_naming(TypeError, "fn", impl.op_types, lambda x: x, SPECS[0])


def test_run_in_session_uses_a_v1_session(impl):
    out, runs = record_session_runs(impl.run_in_session, series(5, 4), 0.25)
    assert runs, "run_in_session never called Session.run: build a tf.Graph and run it in a tf.compat.v1.Session"
    assert runs[0].own_graph, "run_in_session ran the global default graph: build your own tf.Graph"
    assert isinstance(out, np.ndarray), f"run_in_session should return a NumPy array, got {type(out).__name__}"
    assert out.dtype == np.float32, f"run_in_session should return a float32 array, got {out.dtype}"
    assert_close(out, reference_ema(series(5, 4), 0.25), rtol=1e-5, atol=1e-5, name="run_in_session(x, 0.25)")


def test_run_in_session_placeholders_have_a_none_length(impl):
    _, runs = record_session_runs(impl.run_in_session, series(6, 3), 0.5)
    assert runs, "run_in_session never called Session.run: build a tf.Graph and run it in a tf.compat.v1.Session"
    shapes_seen = [shape for run in runs for shape in run.placeholder_shapes]
    vectors = [s for s in shapes_seen if s != ()]  # of unknown rank, or of rank 1 or more
    assert vectors, ("run_in_session's graph has no placeholder for x: feed the series through a "
                     "tf.compat.v1.placeholder")
    fixed = [s for s in vectors if s is None or len(s) != 1 or s[0] is not None]
    assert not fixed, (f"run_in_session's graph has a placeholder "
                       f"{'of unknown rank' if fixed[0] is None else f'of shape {fixed[0]}'}: give it a None "
                       "length, so the same graph runs a series of any length")


def test_run_in_session_takes_a_python_list(impl):
    x = [0.5, -1.0, 2.0]
    out = impl.run_in_session(x, 0.5)
    assert isinstance(out, np.ndarray), f"run_in_session should return a NumPy array, got {type(out).__name__}"
    assert_close(out, reference_ema(np.array(x), 0.5), rtol=1e-6, atol=1e-6, name="run_in_session([0.5, -1, 2], 0.5)")


@settings(max_examples=4)
@given(n=st.integers(0, 6), decay=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_session_handles_any_length(impl, n, decay, seed):
    x = series(seed, n)
    assert_close(impl.run_in_session(x, decay), reference_ema(x, decay), rtol=1e-5, atol=1e-5,
                 name=f"run_in_session(x of length {n}, decay={decay:.3g})")


@pytest.mark.points(2)
def test_running_mean_state_changes_on_every_call(impl):
    rm = impl.RunningMean()
    batches = [[1.0, 2.0, 3.0], [10.0], [], [-4.0, 0.5]]
    seen: list[float] = []
    for batch in batches:
        seen.extend(batch)
        out = rm.update(tf.constant(batch, tf.float32))
        assert_dtype(out, tf.float32, name=f"RunningMean.update after {len(seen)} values")
        assert_close(out, np.mean(seen), rtol=1e-6, atol=1e-6,
                     name=f"RunningMean.update after {len(seen)} values")
    assert len(rm.trainable_variables) == 0, "RunningMean's state should not be trainable"


def test_running_mean_is_a_working_tf_module(impl):
    rm = impl.RunningMean()
    assert isinstance(rm, tf.Module), f"RunningMean should subclass tf.Module, got bases {type(rm).__mro__[1:]}"
    try:
        name, scope = rm.name, rm.name_scope
    except AttributeError as exc:
        raise AssertionError(f"RunningMean() is a tf.Module that was never set up ({exc}): call "
                             "super().__init__() in __init__") from None
    assert isinstance(name, str) and name, f"RunningMean().name should be a non-empty str, got {name!r}"
    assert isinstance(scope, tf.name_scope), f"RunningMean().name_scope should be a tf.name_scope, got {scope!r}"


def test_running_mean_before_any_value_is_zero(impl):
    rm = impl.RunningMean()  # keep a reference: a tf.function method holds its instance weakly
    assert_close(rm.update(tf.zeros([0])), 0.0, name="RunningMean.update([]) on a new instance")


def test_running_mean_update_traces_once(impl):
    rm = impl.RunningMean()
    rm.update(tf.constant([1.0]))  # works at all before counting traces
    counter = retrace_counter(rm.update, name="RunningMean.update")
    for n in (2, 3, 0, 5):
        rm.update(tf.ones([n]))
    traces = counter()
    assert traces == 0, (f"RunningMean.update traced {traces} more time(s) for vectors of new lengths: "
                         "give it an input_signature with a None length")


def test_running_mean_logs_every_call_with_tf_print(impl, tmp_path):
    log = tmp_path / "means.log"
    log.write_text("earlier line 1.0\n")  # update appends: what is there stays
    rm = impl.RunningMean(log_path=str(log))
    expected = []
    seen: list[float] = []
    for batch in ([2.0, 4.0], [6.0], [0.0, 0.0, 8.0]):
        seen.extend(batch)
        expected.append(np.mean(seen))
        rm.update(tf.constant(batch, tf.float32))
    lines = log.read_text().splitlines() if log.exists() else []
    assert lines[:1] == ["earlier line 1.0"], ("RunningMean's log lost what the file held before: every "
                                               "call must append to it")
    lines = lines[1:]
    assert len(lines) == 3, (f"after 3 calls to update the log has {len(lines)} new line(s), expected 3: "
                             "Python's print runs only while tracing; tf.print runs on every call")
    # The last thing on each line (trailing spaces aside) is a number: the mean, not a label.
    endings = [re.search(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$", line) for line in lines]
    assert all(endings), f"every log line should end with the current mean, got {lines}"
    logged = [float(found.group().strip()) for found in endings]
    assert_close(np.array(logged), np.array(expected), rtol=1e-4, atol=1e-4, name="means in the log file")
