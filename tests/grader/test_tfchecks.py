"""The TensorFlow check library: each helper catches what it claims and says so readably."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

tf = pytest.importorskip("tensorflow")

import grader.tfchecks  # noqa: E402 - after importorskip: only once TensorFlow is installed
from grader.tfchecks import (  # noqa: E402
    SessionRun,
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    broadcastable_batch_shapes,
    central_differences,
    check_gradients,
    mixed_precision,
    record_session_runs,
    retrace_counter,
    shapes,
    tf_tensors,
)


def test_public_surface():
    assert set(grader.tfchecks.__all__) == {
        "assert_close", "assert_shape", "assert_dtype", "check_gradients", "central_differences",
        "retrace_counter", "mixed_precision", "assert_raises_naming", "shapes",
        "broadcastable_batch_shapes", "tf_tensors", "logical_cpus", "read_summaries", "where_the_submission_lives",
        "record_session_runs", "SessionRun"}
    assert [name for name in grader.tfchecks.__all__ if not hasattr(grader.tfchecks, name)] == []


def test_assert_close_names_the_largest_error_and_where():
    actual = tf.constant([[0.0, 0.0, 0.0], [0.0, 0.0, 0.5]])
    with pytest.raises(AssertionError, match=r"f\(x\): 1 of 6 values differ .* at index \(1, 2\): "
                                             r"got 0.5, expected 0"):
        assert_close(actual, np.zeros((2, 3)), name="f(x)")


@pytest.mark.parametrize("actual, message", [
    (tf.zeros((2, 2)), r"result: shape \(2, 2\), expected \(2, 3\)"),
    (tf.fill((2, 3), float("nan")), "6 of 6 values differ"),
    ("zeros", "expected a tf.Tensor, a Variable, a NumPy array or a number, got str"),
])
def test_assert_close_rejects_shape_nan_and_non_tensors(actual, message):
    with pytest.raises(AssertionError, match=message):
        assert_close(actual, tf.zeros((2, 3)))


def test_assert_close_accepts_tensors_variables_arrays_and_numbers():
    assert_close(tf.Variable([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    assert_close(tf.constant(3, tf.int32), 3)
    assert_close(2.5, tf.constant(2.5, tf.float64))
    assert_close(tf.constant([np.inf]), [np.inf])
    with pytest.raises(AssertionError, match="got inf, expected -inf"):
        assert_close(tf.constant([np.inf]), [-np.inf])


def test_assert_close_refuses_symbolic_tensors():
    @tf.function
    def inside(x):
        assert_close(x, [1.0])
        return x

    with pytest.raises(AssertionError, match="symbolic tensor"):
        inside(tf.constant([1.0]))


def test_shape_and_dtype_helpers():
    assert_shape(tf.zeros((1, 2)), (1, 2))
    assert_shape(tf.zeros((4, 2)), (None, 2))
    with pytest.raises(AssertionError, match=r"out: shape \(1, 2\), expected \(2, 1\)"):
        assert_shape(tf.zeros((1, 2)), (2, 1), name="out")
    assert_dtype(tf.Variable([1.0]), tf.float32)
    assert_dtype(np.zeros(2), "float64")
    weight = tf.keras.layers.Dense(3).add_weight(shape=(2, 3))  # a keras.Variable: dtype is a str
    assert_shape(weight, (2, 3))
    assert_dtype(weight, tf.float32)
    assert_close(weight, weight.numpy())
    with pytest.raises(AssertionError, match="out: dtype float32, expected float64"):
        assert_dtype(tf.zeros(1), tf.float64, name="out")


@tf.custom_gradient
def _wrong_square(x):
    return x * x, lambda dy: dy * x  # should be 2 * x


def test_check_gradients_passes_correct_and_names_the_wrong_element():
    check_gradients(lambda x, y: tf.sin(x) * y, tf.random.normal((2, 3)), np.ones((2, 3)), name="ok")
    check_gradients(lambda x, n: (x * n, tf.reduce_sum(x)), [1.0, 2.0], 3, name="two outputs")
    with pytest.raises(AssertionError, match=r"wrong_square: gradient of the output at index \(1,\) "
                                             r"with respect to input 0 at index \(1,\) is 2, but "
                                             "finite differences give 4"):
        check_gradients(_wrong_square, tf.constant([1.0, 2.0]), name="wrong_square")


def test_check_gradients_reports_a_disconnected_input_and_errors():
    with pytest.raises(AssertionError, match="no gradient flows from the output to input 1"):
        check_gradients(lambda x, y: x * tf.constant(y.numpy()), [1.0], [2.0], name="f")
    with pytest.raises(AssertionError, match="calling it with float64 inputs raised"):
        check_gradients(lambda x: x + tf.constant(1.0, tf.float32), [1.0], name="f")
    with pytest.raises(NotImplementedError):
        check_gradients(lambda x: (_ for _ in ()).throw(NotImplementedError), [1.0])


def test_central_differences_for_tensors_and_captured_variables():
    x = tf.constant([1.0, -2.0], tf.float64)
    np.testing.assert_allclose(central_differences(lambda t: t ** 3, x), 3 * x.numpy() ** 2, rtol=1e-6)
    for v in (tf.Variable([[0.5, 1.5]], dtype=tf.float64),
              tf.keras.Variable([[0.5, 1.5]], dtype="float64")):  # what Keras 3 layers hold
        grad = central_differences(lambda v=v: tf.reduce_sum(tf.sin(v)), v)
        np.testing.assert_allclose(grad, np.cos(np.asarray([[0.5, 1.5]])), rtol=1e-6)
        assert_close(v, [[0.5, 1.5]], rtol=0, atol=0)  # restored


def test_retrace_counting():
    step = tf.function(lambda x: x * 2)
    step(tf.ones(2))
    counter = retrace_counter(step)
    step(tf.ones(2))
    assert counter() == 0
    step(tf.ones(7))
    assert counter() == 1
    with pytest.raises(AssertionError, match="train_step: expected a tf.function"):
        retrace_counter(lambda x: x, name="train_step")


def test_mixed_precision_restores_the_policy_even_after_an_error():
    before = tf.keras.mixed_precision.global_policy().name
    with pytest.raises(RuntimeError), mixed_precision("mixed_bfloat16") as policy:
        assert policy.compute_dtype == "bfloat16"
        assert tf.keras.layers.Dense(2).dtype_policy.compute_dtype == "bfloat16"
        raise RuntimeError
    assert tf.keras.mixed_precision.global_policy().name == before


def test_assert_raises_naming_is_the_shared_one():
    def f(units):
        raise ValueError(f"units must be positive, got {units}")

    assert isinstance(assert_raises_naming(ValueError, "units", f, -1), ValueError)


@settings(max_examples=10)
@given(tf_tensors(shapes(max_dims=3)), tf_tensors((2, 3), tf.int32), broadcastable_batch_shapes(2))
def test_strategies(x, n, batch):
    assert isinstance(x, tf.Tensor) and x.dtype == tf.float64 and 1 <= x.shape.rank <= 3
    assert n.dtype == tf.int32 and n.shape == (2, 3)
    np.broadcast_shapes(*batch)


class _PluginManager:
    def get_plugins(self):
        return []


def test_canary_catches_a_patched_tensorflow_check(monkeypatch):
    import grader.tfchecks._compare as compare
    from grader import _canary

    for name, fresh in (("_snapshot", {}), ("_plugins", set()), ("_module_globals", [])):
        monkeypatch.setattr(_canary, name, fresh)
    pm = _PluginManager()
    _canary.snapshot(pm)
    assert _canary.check(pm) == []
    monkeypatch.setattr(compare, "assert_close", lambda *a, **k: None)
    monkeypatch.setattr(grader.tfchecks, "assert_close", lambda *a, **k: None)
    problems = _canary.check(pm)
    assert "grader.tfchecks._compare.assert_close was replaced" in problems
    assert "grader.tfchecks.assert_close accepts different tensors" in problems
    # The behavioural canaries run for the check libraries of the exercise just graded: after a
    # PyTorch exercise's tests, the identity check still sees the patch.
    problems = _canary.check(pm, behaviour=("pytorch",))
    assert "grader.tfchecks._compare.assert_close was replaced" in problems
    assert "grader.tfchecks.assert_close accepts different tensors" not in problems
    assert "grader.tfchecks.assert_close accepts different tensors" in _canary.check(pm, behaviour=("tensorflow",))


def test_read_summaries_reads_tf_summary_tensor_events(tmp_path):
    pytest.importorskip("tensorboard")
    from grader.tfchecks import read_summaries

    for step, (loss, acc) in enumerate([(1.5, 0.25), (float("nan"), 0.5)]):
        writer = tf.summary.create_file_writer(str(tmp_path))  # a file per writer: both are read
        with writer.as_default():
            tf.summary.scalar("train/loss", loss, step=step)
            tf.summary.scalar("acc", tf.constant(acc, tf.float64), step=step)
            tf.summary.histogram("weights", tf.constant([1.0, 2.0, 2.0, 4.0]), step=step)
            tf.summary.write("raw", tf.constant(3.0), step=step)  # no plugin: not a scalar
        writer.close()
    events = read_summaries(tmp_path)
    assert set(events.scalars) == {"train/loss", "acc"}
    assert events.scalars["acc"] == [(0, 0.25), (1, 0.5)]
    (first, second) = events.scalars["train/loss"]
    assert first == (0, 1.5) and second[0] == 1 and np.isnan(second[1])
    assert events.plugins == {"train/loss": "scalars", "acc": "scalars", "weights": "histograms", "raw": ""}
    step, buckets = events.histograms["weights"][1]
    assert step == 1 and buckets.shape[1] == 3 and buckets[:, 2].sum() == 4
    assert buckets[:, 0].min() == 1.0 and buckets[:, 1].max() == 4.0


def test_read_summaries_of_a_missing_directory_is_empty(tmp_path):
    pytest.importorskip("tensorboard")
    from grader.tfchecks import read_summaries

    events = read_summaries(tmp_path / "nothing")
    assert (events.scalars, events.histograms, events.plugins) == ({}, {}, {})


def test_read_summaries_imports_no_torch():
    pytest.importorskip("tensorboard")
    from tests.helpers import run_python

    result = run_python("-c", "import sys, tempfile\nfrom grader.tfchecks import read_summaries\n"
                              "read_summaries(tempfile.mkdtemp())\nprint('torch' in sys.modules)")
    assert result.stdout.strip() == "False", result.stdout + result.stderr


def _run_in_a_graph(graph, build):
    with graph.as_default():
        fetch, feed = build()
    with tf.compat.v1.Session(graph=graph) as session:
        return session.run(fetch, feed)


def test_record_session_runs_says_whose_graph_each_run_ran_and_its_placeholders():
    def own_graph(value):
        def build():
            x = tf.compat.v1.placeholder(tf.float32, [None])
            tf.compat.v1.placeholder(tf.float32, [2, 3])
            tf.compat.v1.placeholder(tf.float32)  # of unknown rank
            return x * 2.0, {x: value}
        return _run_in_a_graph(tf.Graph(), build)

    out, runs = record_session_runs(own_graph, [1.0, 2.0])
    np.testing.assert_allclose(out, [2.0, 4.0])
    assert runs == [SessionRun(True, ((None,), (2, 3), None))]
    out, runs = record_session_runs(lambda: _run_in_a_graph(tf.compat.v1.get_default_graph(),
                                                            lambda: (tf.constant(1.0) + 1.0, None)))
    assert out == 2.0 and runs == [SessionRun(False, ())]  # the global default graph
    assert record_session_runs(lambda: 3) == (3, [])


def test_record_session_runs_puts_session_run_back_when_the_call_raises():
    from grader.tfchecks._sessions import _run_method_owner

    owner = _run_method_owner()
    before = vars(owner)["run"]

    def failing():
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        record_session_runs(failing)
    assert vars(owner)["run"] is before
