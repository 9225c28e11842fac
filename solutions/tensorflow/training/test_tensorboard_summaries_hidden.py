"""Hidden tests for tensorflow.training.tensorboard_summaries (the catalog's contract checks).

Every check reads the event files back with TensorBoard's own reader
(``grader.tfchecks.read_summaries``: ``plugin_event_accumulator``, which reads tf.summary's tensor
events and the dashboard each is for). The expected values come from the test's own inputs, and
for the callback from the fit's History and the model's final weights.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from grader.tfchecks import assert_raises_naming, read_summaries

keras = tf.keras


def same_float32(got: float, want: float) -> bool:
    """An event stores float32: compare with ``want`` rounded to float32 (NaN equal to NaN)."""
    want = float(np.float32(want))
    return (math.isnan(got) and math.isnan(want)) or got == want


def logged(impl, log_dir, metrics, step=0):
    result = impl.log_scalars(log_dir, metrics, step)
    assert result is None, f"log_scalars should return None, got {type(result).__name__}"
    return read_summaries(log_dir)


VALUE_KINDS = {
    "int": lambda: (7, 7.0),
    "float": lambda: (0.1, 0.1),
    "float-nan": lambda: (float("nan"), float("nan")),
    "float-inf": lambda: (float("-inf"), float("-inf")),
    "numpy-float64": lambda: (np.float64(1 / 3), 1 / 3),
    "numpy-float16": lambda: (np.float16(2.5), 2.5),
    "numpy-int64": lambda: (np.int64(-3), -3.0),
    "numpy-uint8": lambda: (np.uint8(200), 200.0),
    "numpy-array-shape-1": lambda: (np.array([0.75]), 0.75),
    "numpy-array-shape-1x1": lambda: (np.array([[4.0]], np.float32), 4.0),
    "tensor-float32": lambda: (tf.constant(1.25), 1.25),
    "tensor-float64": lambda: (tf.constant(1 / 3, tf.float64), 1 / 3),
    "tensor-bfloat16": lambda: (tf.constant(1.5, tf.bfloat16), 1.5),
    "tensor-float16": lambda: (tf.constant(-0.5, tf.float16), -0.5),
    "tensor-int32": lambda: (tf.constant(9), 9.0),
    "tensor-int64": lambda: (tf.constant(-9, tf.int64), -9.0),
    "tensor-shape-1": lambda: (tf.constant([0.25]), 0.25),
    "tensor-shape-1x1": lambda: (tf.constant([[6.0]], tf.float64), 6.0),
    "tf-variable": lambda: (tf.Variable(2.0), 2.0),
    "keras-variable": lambda: (keras.Variable(3.0), 3.0),
}


@pytest.mark.parametrize("kind", sorted(VALUE_KINDS))
def test_each_value_kind_is_logged_as_a_float32_scalar(impl, tmp_path, kind):
    value, want = VALUE_KINDS[kind]()
    events = logged(impl, str(tmp_path), {"metric": value}, step=3)
    got = events.scalars.get("metric")
    assert got is not None and len(got) == 1, (
        f"{kind}: expected one scalar event tagged 'metric', read {got} (tags and their dashboards: "
        f"{events.plugins})")
    step, read = got[0]
    assert step == 3 and same_float32(read, want), f"{kind}: read (step, value) {got[0]}, expected (3, {want})"


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["str", "pathlib.Path"])
def test_every_tag_at_its_step_over_several_calls(impl, tmp_path, kind):
    log_dir = tmp_path / "run" / "train"  # missing: log_scalars creates it
    log_dir = str(log_dir) if kind == "str" else log_dir
    logged(impl, log_dir, {"train/loss": 1.5, "train/acc": 0.25, "lr": 0.001}, 0)
    logged(impl, log_dir, {"train/loss": 1.25, "train/acc": 0.5}, 7)
    events = logged(impl, log_dir, {"train/loss": 0.75}, np.int64(8))
    want = {"train/loss": [(0, 1.5), (7, 1.25), (8, 0.75)], "train/acc": [(0, 0.25), (7, 0.5)], "lr": [(0, 0.001)]}
    assert set(events.scalars) == set(want), (
        f"scalar tags read back: {sorted(events.scalars)}, expected {sorted(want)} (every tag of every call)")
    for tag, pairs in want.items():
        got = sorted(events.scalars[tag])
        assert len(got) == len(pairs) and all(
            s == ws and same_float32(v, wv) for (s, v), (ws, wv) in zip(got, pairs)), (
            f"tag {tag!r}: read (step, value) {got}, expected {pairs}")


def test_events_are_on_disk_when_log_scalars_returns(impl, tmp_path):
    for step in range(3):
        events = logged(impl, tmp_path, {"loss": 1.0 / (step + 1)}, step)
        got = sorted(events.scalars.get("loss", []))
        assert [s for s, _ in got] == list(range(step + 1)), (
            f"right after log_scalars(..., step={step}) returned, the 'loss' events on disk are at steps "
            f"{[s for s, _ in got]}; expected {list(range(step + 1))} (flush or close the writer)")


@pytest.mark.parametrize("step", [0, 12, np.int32(5), np.int64(2**40)], ids=["0", "12", "int32", "int64-large"])
def test_steps_from_zero_up_are_accepted(impl, tmp_path, step):
    events = logged(impl, tmp_path, {"loss": 0.5}, step)
    assert events.scalars.get("loss") == [(int(step), 0.5)], (
        f"read {events.scalars.get('loss')}, expected [({int(step)}, 0.5)]")


@pytest.mark.parametrize("step, error", [(-1, ValueError), (np.int64(-5), ValueError), (1.0, TypeError),
                                         (True, TypeError), ("3", TypeError)],
                         ids=["-1", "numpy-negative", "float", "bool", "str"])
def test_bad_step_raises_naming_step(impl, tmp_path, step, error):
    assert_raises_naming(error, "step", impl.log_scalars, tmp_path, {"loss": 1.0}, step)
    assert read_summaries(tmp_path).scalars == {}, "a bad step must log nothing"


# Built inside the test (lambdas): a test module must run no TensorFlow op when it is imported, or
# the children of a fork server that collected it may hang.
BAD_ENTRIES = {
    "empty-tag": (lambda: {"": 1.0}, ValueError, "tag"),
    "tag-not-str": (lambda: {3: 1.0}, TypeError, "tag"),
    "numpy-two-elements": (lambda: {"weights": np.array([1.0, 2.0])}, ValueError, "weights"),
    "tensor-two-elements": (lambda: {"weights": tf.constant([[1.0], [2.0]])}, ValueError, "weights"),
    "tensor-no-elements": (lambda: {"weights": tf.zeros((0,))}, ValueError, "weights"),
    "bool": (lambda: {"flag": True}, TypeError, "flag"),
    "str": (lambda: {"name": "abc"}, TypeError, "name"),
    "none": (lambda: {"missing": None}, TypeError, "missing"),
    "complex": (lambda: {"phase": 1 + 2j}, TypeError, "phase"),
    "tensor-complex": (lambda: {"phase": tf.constant(1 + 2j)}, TypeError, "phase"),
    "tensor-bool": (lambda: {"flag": tf.constant(True)}, TypeError, "flag"),
    "tensor-string": (lambda: {"name": tf.constant("abc")}, TypeError, "name"),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_bad_entry_raises_naming_it_and_logs_nothing(impl, tmp_path, case):
    make_bad, error, name = BAD_ENTRIES[case]
    metrics = {"good/first": 1.0, **make_bad(), "good/last": 2.0}  # a good entry on each side of the bad one
    assert_raises_naming(error, name, impl.log_scalars, tmp_path, metrics, 0)
    events = read_summaries(tmp_path)
    assert events.scalars == {}, f"{case}: a bad entry must log nothing, but read back {events.scalars}"


# --- tensorboard_callback, used in a real model.fit ---------------------------------------------

EPOCHS, SAMPLES, BATCH = 3, 24, 8  # 3 batches per epoch


class Fit:
    """One model.fit with the learner's callback: the History, the final weights, what TensorBoard
    reads in log_dir/train and log_dir/validation, or the error any of it raised."""

    def __init__(self, impl, log_dir: pathlib.Path):
        keras.utils.set_random_seed(0)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(SAMPLES, 3)).astype(np.float32)
        y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype(np.float32)
        self.model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                                       keras.layers.Dense(1)])
        self.model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
        self.callback = impl.tensorboard_callback(log_dir)
        self.history = self.model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, validation_data=(x[:8], y[:8]),
                                      callbacks=[self.callback], verbose=0).history
        self.train = read_summaries(log_dir / "train")
        self.validation = read_summaries(log_dir / "validation")


@pytest.fixture(scope="module")
def fit(impl, tmp_path_factory):
    try:
        return Fit(impl, tmp_path_factory.mktemp("tensorboard") / "logs")
    except Exception as exc:  # noqa: BLE001 - each test that reads the fit reports it
        return exc


def the_fit(fit) -> Fit:
    if isinstance(fit, Exception):
        raise fit
    return fit


def test_callback_is_a_keras_tensorboard_callback(impl, tmp_path):
    callback = impl.tensorboard_callback(str(tmp_path))
    assert isinstance(callback, keras.callbacks.TensorBoard), (
        f"tensorboard_callback should return a keras.callbacks.TensorBoard, got {type(callback).__name__}")


def check_epoch_values(events, values: dict[str, list[float]], run: str):
    for name, history in values.items():
        tag = f"epoch_{name}"
        got = sorted(events.scalars.get(tag, []))
        assert got, f"{run}: no scalar {tag!r}; its scalar tags: {sorted(events.scalars)}"
        assert [s for s, _ in got] == list(range(EPOCHS)) and all(
            same_float32(v, h) for (_, v), h in zip(got, history)), (
            f"{run}/{tag}: read (step, value) {got}, expected the history's {history} at steps 0..{EPOCHS - 1}")


@pytest.mark.points(2)
def test_epoch_values_in_train_and_validation(fit):
    fit = the_fit(fit)
    check_epoch_values(fit.train, {k: v for k, v in fit.history.items() if not k.startswith("val_")}, "train")
    check_epoch_values(fit.validation, {k[4:]: v for k, v in fit.history.items() if k.startswith("val_")},
                       "validation")


@pytest.mark.points(2)
def test_batch_values_after_every_batch(fit):
    fit = the_fit(fit)
    batches = EPOCHS * SAMPLES // BATCH
    for name in ("loss", "mae"):
        got = sorted(fit.train.scalars.get(f"batch_{name}", []))
        assert [s for s, _ in got] == list(range(1, batches + 1)), (
            f"train/batch_{name} is at steps {[s for s, _ in got]}; expected one event after each of the "
            f"{batches} training batches, at steps 1..{batches}")
        per_batch = dict(got)
        for epoch in range(EPOCHS):
            last = (epoch + 1) * SAMPLES // BATCH
            assert same_float32(per_batch[last], fit.history[name][epoch]), (
                f"train/batch_{name} at step {last} (the last batch of epoch {epoch}) is {per_batch[last]}; "
                f"expected that epoch's value {fit.history[name][epoch]}")


@pytest.mark.points(2)
def test_a_histogram_of_every_weight_after_every_epoch(fit):
    fit = the_fit(fit)
    for weight in fit.model.weights:
        tags = [t for t in fit.train.histograms if weight.path in t]
        assert len(tags) == 1, (f"expected one histogram of weight {weight.path!r} in train; histogram "
                                f"tags: {sorted(fit.train.histograms)}")
        events = fit.train.histograms[tags[0]]
        assert sorted(s for s, _ in events) == list(range(EPOCHS)), (
            f"histogram {tags[0]!r} is at steps {[s for s, _ in events]}; expected one per epoch, 0..{EPOCHS - 1}")
        buckets = dict(events)[EPOCHS - 1]
        values = np.asarray(weight.numpy(), np.float32)
        assert buckets[:, 2].sum() == values.size and np.isclose(buckets[:, 0].min(), values.min()) and np.isclose(
            buckets[:, 1].max(), values.max()), (
            f"the last histogram of {weight.path!r} does not describe the final weights: {values.size} values "
            f"from {values.min():.4g} to {values.max():.4g}")
