"""Hidden tests for tensorflow.training.custom_loop (the catalog's contract checks)."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    mixed_precision,
)

LR = 0.125  # exact in binary, so Keras' float32 learning rate equals the reference's


def mse(y_true, y_pred):
    return tf.reduce_mean(tf.square(tf.cast(y_true, y_pred.dtype) - y_pred), axis=-1)


class RecordingLoss:
    """Per-example MSE that records each batch's mean loss in Variables (this works inside a
    tf.function too) and counts how often its Python code runs: inside a tf.function that is
    once per trace, eagerly once per batch."""

    def __init__(self, capacity: int = 256):
        self.batch_losses = tf.Variable(tf.zeros(capacity, tf.float64))
        self.calls = tf.Variable(0)
        self.python_runs = 0

    def __call__(self, y_true, y_pred):
        self.python_runs += 1
        per_example = mse(y_true, y_pred)
        index = tf.minimum(self.calls.read_value(), self.batch_losses.shape[0] - 1)
        self.batch_losses.scatter_nd_update([[index]], [tf.cast(tf.reduce_mean(per_example), tf.float64)])
        self.calls.assign_add(1)
        return per_example

    def recorded(self) -> np.ndarray:
        return self.batch_losses.numpy()[:int(self.calls.numpy())]


class TrainingFlags(tf.keras.layers.Layer):
    """Identity layer that records the ``training`` flag it is called with (at trace time too)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flags = []

    def call(self, x, training=None):
        self.flags.append(training)
        return x


def linear_model(in_dim: int, out_dim: int, dtype: str = "float64", seed: int = 0):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential([tf.keras.Input((in_dim,), dtype=dtype),
                                 tf.keras.layers.Dense(out_dim, dtype=dtype,
                                                       bias_initializer="random_normal")])
    return model


def dataset(n: int, in_dim: int, out_dim: int, batch: int, seed: int = 0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, in_dim)).astype(dtype)
    y = (x @ rng.standard_normal((in_dim, out_dim)) + 0.5).astype(dtype)
    return x, y, tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)


def run(impl, model, ds, *, epochs, loss_fn=mse, optimizer=None, named=False):
    """``train``'s history, checked; ``named``: pass model and dataset by keyword, as the signature
    ``train(model, dataset, *, ...)`` allows."""
    options = dict(epochs=epochs, optimizer=optimizer or tf.keras.optimizers.SGD(LR), loss_fn=loss_fn)
    history = impl.train(model=model, dataset=ds, **options) if named else impl.train(model, ds, **options)
    assert isinstance(history, dict) and "loss" in history, (
        f"train must return a dict with a 'loss' list, got {history!r:.100}")
    losses = history["loss"]
    assert isinstance(losses, list) and len(losses) == epochs, (
        f"train: history['loss'] must be a list of {epochs} values (one per epoch), got {losses!r:.200}")
    assert all(isinstance(v, float) for v in losses), (
        f"train: history['loss'] must hold Python floats, got {[type(v).__name__ for v in losses]}")
    return losses


def reference_sgd(w, b, x, y, batch, epochs):
    """Mini-batch SGD on the mean of per-example MSE, in NumPy: final weights and loss history."""
    history = []
    for _ in range(epochs):
        batch_losses = []
        for start in range(0, len(x), batch):
            xb, yb = x[start:start + batch], y[start:start + batch]
            err = xb @ w + b - yb
            batch_losses.append(np.mean(np.mean(err ** 2, axis=-1)))
            dpred = 2 * err / err.size  # d mean(mean(err^2, -1)) / d pred
            w, b = w - LR * xb.T @ dpred, b - LR * dpred.sum(0)
        history.append(np.mean(batch_losses))
    return w, b, history


@pytest.mark.points(3)
@settings(max_examples=4)
@given(n=st.integers(3, 12), batch=st.integers(2, 5), in_dim=st.integers(1, 3),
       out_dim=st.integers(1, 2), epochs=st.integers(1, 3))
@example(n=10, batch=4, in_dim=2, out_dim=1, epochs=2)  # a short last batch
@example(n=6, batch=3, in_dim=1, out_dim=2, epochs=1)  # batches of one size, a single epoch
def test_updates_and_history_match_reference_sgd(impl, n, batch, in_dim, out_dim, epochs):
    model = linear_model(in_dim, out_dim)
    x, y, ds = dataset(n, in_dim, out_dim, batch)
    w0, b0 = (v.numpy() for v in model.trainable_variables)
    losses = run(impl, model, ds, epochs=epochs)
    w, b, history = reference_sgd(w0, b0, x, y, batch, epochs)
    what = f"{epochs} epoch(s) of SGD over {n} samples in batches of {batch}"
    # float32-level tolerances: the docstring does not forbid reducing the losses in float32.
    assert_close(model.trainable_variables[0], w, rtol=1e-5, atol=1e-6, name=f"kernel after {what}")
    assert_close(model.trainable_variables[1], b, rtol=1e-5, atol=1e-6, name=f"bias after {what}")
    assert_close(np.array(losses), history, rtol=1e-5, atol=1e-7,
                 name=f"history['loss'] after {what} (mean of per-example losses, per epoch)")


def test_history_is_the_mean_of_each_epochs_batch_losses(impl):
    loss_fn = RecordingLoss()
    model = linear_model(2, 1, seed=1)
    _, _, ds = dataset(10, 2, 1, batch=4, seed=1)  # 3 batches, the last one of 2
    losses = run(impl, model, ds, epochs=3, loss_fn=loss_fn, named=True)
    recorded = loss_fn.recorded()
    assert len(recorded) == 9, (f"train called loss_fn {len(recorded)} times for 3 epochs of 3 "
                                "batches; the contract is once per batch")
    for epoch, value in enumerate(losses):
        expected = recorded[3 * epoch:3 * epoch + 3].mean()
        assert abs(value - expected) <= 1e-5 * abs(expected) + 1e-7, (
            f"train: history['loss'][{epoch}] is {value:.6g}, but the mean of that epoch's batch "
            f"losses is {expected:.6g} (is the metric reset at the start of every epoch, and is a "
            "batch's loss the mean of its per-example losses?)")


@pytest.mark.points(2)
def test_step_traces_at_most_twice_with_a_short_last_batch(impl):
    loss_fn = RecordingLoss()
    model = linear_model(3, 1, seed=2)
    _, _, ds = dataset(14, 3, 1, batch=4, seed=2)  # 4 batches per epoch, the last one of 2
    run(impl, model, ds, epochs=3, loss_fn=loss_fn)
    assert len(loss_fn.recorded()) == 12, (
        f"train ran the loss of {len(loss_fn.recorded())} batches for 3 epochs of 4 batches; the step "
        "must run once per batch")
    assert loss_fn.python_runs <= 2, (
        f"over 3 epochs of 4 batches the Python code of the train step ran {loss_fn.python_runs} "
        "times: the step was traced that often (or runs eagerly). A tf.function defined once, "
        "outside the epoch loop, traces once per batch shape: at most twice here")


def test_model_runs_in_training_mode(impl):
    flags = TrainingFlags()
    model = tf.keras.Sequential([tf.keras.Input((2,)), flags, tf.keras.layers.Dense(1),
                                 tf.keras.layers.BatchNormalization()])
    model(tf.zeros((1, 2)))
    flags.flags.clear()
    _, _, ds = dataset(8, 2, 1, batch=4, seed=3, dtype=np.float32)
    run(impl, model, ds, epochs=1)
    assert flags.flags, "train never called the model"
    assert all(f is True for f in flags.flags), (
        f"train called the model with training={next(f for f in flags.flags if f is not True)!r}; "
        "a training step needs model(x, training=True) (dropout, batch normalisation)")
    moving_mean = model.layers[-1].moving_mean
    assert np.any(moving_mean.numpy() != 0), ("BatchNormalization's moving mean never moved: the "
                                              "model did not run in training mode")


def _regression_data(n: int = 250):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]]) + 0.3 + 0.01 * rng.standard_normal((n, 1))).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(32)  # the last batch is short


@pytest.mark.points(2)
def test_converges_on_synthetic_regression(impl):
    model = linear_model(3, 1, dtype="float32", seed=4)
    losses = run(impl, model, _regression_data(), epochs=10, optimizer=tf.keras.optimizers.Adam(0.1))
    assert np.all(np.isfinite(losses)), f"train: the loss is not finite: {losses}"
    assert losses[-1] < 0.01 and losses[-1] < losses[0] / 10, (
        f"train did not fit y = x w + b in 10 epochs of Adam(0.1): loss went {losses[0]:.4g} -> "
        f"{losses[-1]:.4g} (are the gradients applied to the model's variables every batch?)")


class DtypeRecordingLoss:
    """Per-example MSE in float32 that records the dtype of the predictions it receives."""

    def __init__(self):
        self.pred_dtypes = []

    def __call__(self, y_true, y_pred):
        self.pred_dtypes.append(tf.as_dtype(y_pred.dtype))
        return mse(tf.cast(y_true, tf.float32), tf.cast(y_pred, tf.float32))


def test_trains_under_mixed_bfloat16(impl):
    loss_fn = DtypeRecordingLoss()
    with mixed_precision("mixed_bfloat16"):
        tf.keras.utils.set_random_seed(5)
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
        losses = run(impl, model, _regression_data(96), epochs=4, loss_fn=loss_fn,
                     optimizer=tf.keras.optimizers.Adam(0.1))
    assert_dtype(model.layers[0].kernel, tf.float32, name="the kernel after mixed_bfloat16 training")
    assert loss_fn.pred_dtypes, "train never called loss_fn"
    assert all(d == tf.bfloat16 for d in loss_fn.pred_dtypes), (
        f"under mixed_bfloat16 loss_fn received predictions of dtype "
        f"{sorted({d.name for d in loss_fn.pred_dtypes})}; the contract says it receives the model's "
        "bfloat16 predictions as they are")
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0] / 2, (
        f"train under mixed_bfloat16: loss went {losses[0]:.4g} -> {losses[-1]:.4g}; expected it "
        "to at least halve in 4 epochs of Adam(0.1)")


@pytest.mark.parametrize("epochs", [0, -1, 1.5, "3"])
def test_bad_epochs_raise_value_error(impl, epochs):
    model = linear_model(1, 1)
    _, _, ds = dataset(4, 1, 1, batch=2)
    assert_raises_naming(ValueError, "epochs", impl.train, model, ds, epochs=epochs,
                         optimizer=tf.keras.optimizers.SGD(LR), loss_fn=mse)
