"""Hidden tests for tensorflow.keras.callbacks (the catalog's contract checks).

Every test trains a real one-weight Keras model whose updates are known exactly: its input is
all ones and its loss the mean absolute error to a target far above the prediction, so every
SGD step adds exactly the learning rate to the weight. The warmup tests read the learning rate
each batch trained with from the weight's change. The early-stopping tests add to the output,
at inference only, an offset that a test callback sets at the start of every epoch, with all-zero
validation inputs and targets: the validation loss of epoch ``e`` is then exactly ``curve[e]``,
while the weight after epoch ``e`` is ``(e + 1) * STEPS * LR``.
"""

import math
import pathlib

import keras
import numpy as np
import pytest

from grader.tfchecks import assert_close, assert_raises_naming, where_the_submission_lives

TARGET = 1000.0  # far above every prediction: d MAE / d w = -1 on every batch
LR = 0.25  # SGD learning rate of the early-stopping tests (exact in binary)
STEPS = 2  # training batches per epoch in the early-stopping tests


class CurveOutput(keras.layers.Layer):
    """``x @ kernel`` plus, at inference only, a non-trainable ``offset`` the test sets per epoch."""

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], 1), initializer="zeros")
        self.offset = self.add_weight(name="offset", shape=(), initializer="zeros", trainable=False)

    def call(self, inputs, training=None):
        out = keras.ops.matmul(inputs, self.kernel)
        return out if training else out + self.offset


def one_weight_model(dtype: str = "float32", learning_rate: float = LR) -> keras.Model:
    model = keras.Sequential([keras.Input((1,), dtype=dtype), CurveOutput(dtype=dtype)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss="mae")
    return model


def kernel_of(model) -> float:
    return float(np.asarray(model.layers[-1].kernel.numpy()).reshape(()))


def train_data(n: int, dtype=np.float32):
    return np.ones((n, 1), dtype), np.full((n, 1), TARGET, dtype)


# ---- WarmupScheduler ---------------------------------------------------------------------------

class LearningRatePerBatch(keras.callbacks.Callback):
    """The learning rate each training batch used: the kernel's change over the batch (every
    step adds exactly the learning rate to it)."""

    def __init__(self):
        super().__init__()
        self.used = []

    def on_train_batch_begin(self, batch, logs=None):
        self._before = kernel_of(self.model)

    def on_train_batch_end(self, batch, logs=None):
        self.used.append(kernel_of(self.model) - self._before)


def warmup(peak_lr: float, warmup_steps: int, steps: range) -> np.ndarray:
    return np.array([peak_lr * min(1.0, (t + 1) / warmup_steps) for t in steps])


def fit_with(model, callbacks, *, n: int, batch_size: int, epochs: int):
    x, y = train_data(n, np.float64)
    return model.fit(x, y, batch_size=batch_size, epochs=epochs, callbacks=callbacks, shuffle=False,
                     verbose=0)


@pytest.mark.points(3)
@pytest.mark.parametrize(("peak_lr", "warmup_steps"), [(0.5, 7), (0.25, 1), (2.0, 20)],
                         ids=["warmup-spans-epochs", "warmup-1", "warmup-longer-than-training"])
def test_learning_rate_per_batch_follows_the_warmup(impl, peak_lr, warmup_steps):
    model = one_weight_model("float64", learning_rate=0.01)  # 0.01: the rate before any scheduling
    recorder = LearningRatePerBatch()
    fit_with(model, [impl.WarmupScheduler(peak_lr, warmup_steps), recorder], n=9, batch_size=2, epochs=3)
    expected = warmup(peak_lr, warmup_steps, range(15))
    assert len(recorder.used) == 15, f"fit ran {len(recorder.used)} batches, expected 3 epochs of 5"
    assert_close(np.array(recorder.used), expected, rtol=1e-6, atol=1e-9,
                 name=f"learning rate of each of 15 batches (3 epochs of 5) with WarmupScheduler("
                      f"peak_lr={peak_lr}, warmup_steps={warmup_steps}); expected peak_lr * min(1, (t + 1) / "
                      "warmup_steps) at the optimizer's step t")


@pytest.mark.points(2)
@pytest.mark.parametrize("resume_with", ["same scheduler", "new scheduler"])
def test_warmup_continues_when_training_resumes(impl, resume_with):
    model = one_weight_model("float64", learning_rate=0.01)
    recorder = LearningRatePerBatch()
    scheduler = impl.WarmupScheduler(1.0, 8)
    fit_with(model, [scheduler, recorder], n=6, batch_size=2, epochs=1)  # steps 0-2
    if resume_with == "new scheduler":
        scheduler = impl.WarmupScheduler(1.0, 8)
    fit_with(model, [scheduler, recorder], n=6, batch_size=2, epochs=2)  # steps 3-8
    assert_close(np.array(recorder.used), warmup(1.0, 8, range(9)), rtol=1e-6, atol=1e-9,
                 name=f"learning rate of each batch over a fit of 3 batches then one of 6, resumed with "
                      f"the {resume_with} (the optimizer's step count goes on: 1/8, 2/8, ... 1)")


def test_learning_rate_is_logged_every_epoch(impl):
    model = one_weight_model("float64", learning_rate=0.01)
    history = fit_with(model, [impl.WarmupScheduler(0.75, 6)], n=8, batch_size=2, epochs=3)
    logged = history.history.get("learning_rate")
    assert logged is not None, (
        f"fit's History has no 'learning_rate' (keys: {sorted(history.history)}): add it to the logs "
        "in on_epoch_end")
    # the rate in use at the end of each epoch: that of its last batch (steps 3, 7, 11)
    assert_close(np.array(logged, np.float64), warmup(0.75, 6, range(3, 12, 4)), rtol=1e-6, atol=1e-9,
                 name="History's 'learning_rate' per epoch (the rate of each epoch's last batch)")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("bad", [0, -0.1, math.nan, math.inf, True])
def test_bad_peak_lr_raises(impl, bad):
    assert_raises_naming(ValueError, "peak_lr", impl.WarmupScheduler, bad, 5)


@pytest.mark.points(0.25)
@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_warmup_steps_raises(impl, bad):
    assert_raises_naming(ValueError, "warmup_steps", impl.WarmupScheduler, 0.1, bad)


# ---- training_callbacks ------------------------------------------------------------------------

class ValidationCurve(keras.callbacks.Callback):
    """Sets the model's inference offset to ``curve[epoch]`` when each epoch begins, so that
    epoch's validation loss (zero inputs and targets) is exactly ``curve[epoch]``."""

    def __init__(self, curve):
        super().__init__()
        self.curve = curve

    def on_epoch_begin(self, epoch, logs=None):
        self.model.layers[-1].offset.assign(self.curve[epoch])


def fit_on_curve(impl, curve, *, patience, checkpoint_path):
    """Train on ``curve`` for at most ``len(curve)`` epochs with the learner's callbacks; return
    the model and the number of epochs run."""
    model = one_weight_model()
    x, y = train_data(2 * STEPS)
    zeros = np.zeros((2, 1), np.float32)
    callbacks = impl.training_callbacks(checkpoint_path, patience)
    assert isinstance(callbacks, list), f"training_callbacks must return a list, got {type(callbacks).__name__}"
    history = model.fit(x, y, batch_size=2, epochs=len(curve), validation_data=(zeros, zeros), shuffle=False,
                        callbacks=[ValidationCurve(curve), *callbacks], verbose=0)
    val = history.history.get("val_loss", [])
    assert_close(np.array(val), np.array(curve[:len(val)]), rtol=1e-6, atol=1e-6,
                 name="the test's own validation curve (a test setup check)")
    return model, len(history.history["loss"])


def weight_after_epoch(epoch: int) -> float:
    return (epoch + 1) * STEPS * LR


# (validation losses epoch by epoch, patience, best epoch)
CURVES = {
    "dip-then-rise": ([4.0, 3.0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5], 2, 2),
    "new-best-within-patience": ([5.0, 4.0, 4.5, 4.25, 3.0, 3.5, 3.75, 3.875, 1.0], 3, 4),
    "tie-is-no-improvement": ([3.0, 2.0, 2.0, 1.0, 0.5], 1, 1),
}


@pytest.mark.points(2)
@pytest.mark.parametrize("case", list(CURVES))
def test_stops_at_the_expected_epoch(impl, case, tmp_path):
    curve, patience, best = CURVES[case]
    _, ran = fit_on_curve(impl, curve, patience=patience, checkpoint_path=str(tmp_path / "best.weights.h5"))
    expected = min(best + patience + 1, len(curve))
    assert ran == expected, (
        f"training_callbacks(..., patience={patience}) on the validation losses {curve}: fit ran {ran} "
        f"epochs, expected {expected} (best epoch {best}, counting from 0, then {patience} without a "
        "strictly lower val_loss)")


@pytest.mark.points(1.5)
@pytest.mark.parametrize("case", ["stopped early", "ran all epochs"])
def test_model_holds_the_best_weights_when_fit_returns(impl, case, tmp_path):
    curve, best = (([3.0, 1.0, 2.0, 2.5, 3.0, 3.5], 1) if case == "stopped early"
                   else ([3.0, 2.0, 0.5, 1.0], 2))
    model, ran = fit_on_curve(impl, curve, patience=2, checkpoint_path=str(tmp_path / "best.weights.h5"))
    assert_close(kernel_of(model), weight_after_epoch(best), rtol=0, atol=1e-6,
                 name=f"the model's weight after fit ({case}, {ran} epochs), which should be the best "
                      f"epoch's (epoch {best} of the validation losses {curve}), not the last one's")


@pytest.mark.points(3)
@pytest.mark.parametrize("path_kind", ["str .keras", "Path .weights.h5"])
def test_checkpoint_holds_the_best_weights(impl, path_kind, tmp_path):
    kind, suffix = path_kind.split()
    path = tmp_path / f"best{suffix}"
    curve, best = [3.0, 2.0, 0.5, 1.0, 0.75, 2.5], 2
    fit_on_curve(impl, curve, patience=3, checkpoint_path=path if kind == "Path" else str(path))
    assert path.is_file(), f"training_callbacks({kind} {path.name!r}): fit wrote no checkpoint there"
    if suffix == ".keras":
        try:
            # Loaded where the submission lives: a .keras file's config names what loading imports and calls.
            restored = where_the_submission_lives(impl, "keras.saving.load_model", path, {"CurveOutput": CurveOutput})
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            raise AssertionError(f"the checkpoint {path.name!r} is not a whole model that "
                                 f"keras.saving.load_model reads: {type(exc).__name__}: {exc!s:.200}") from None
    else:
        restored = one_weight_model()
        try:
            restored.load_weights(path)
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            raise AssertionError(f"the checkpoint {path.name!r} holds no weights that model.load_weights "
                                 f"reads: {type(exc).__name__}: {exc!s:.200}") from None
    assert_close(kernel_of(restored), weight_after_epoch(best), rtol=0, atol=1e-6,
                 name=f"the weight saved in {path.name!r} after training on the validation losses {curve}: "
                      f"the best epoch's ({best}), not a later one's")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("bad", ["best.h5", "best.ckpt", "best", "best.keras.bak", pathlib.Path("model.h5")],
                         ids=["h5", "ckpt", "no-suffix", "keras.bak", "Path-h5"])
def test_bad_checkpoint_path_raises(impl, bad, tmp_path):
    path = tmp_path / bad
    assert_raises_naming(ValueError, "checkpoint_path", impl.training_callbacks,
                         path if isinstance(bad, pathlib.Path) else str(path), 2)


@pytest.mark.points(0.25)
@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_bad_patience_raises(impl, bad, tmp_path):
    assert_raises_naming(ValueError, "patience", impl.training_callbacks, str(tmp_path / "best.keras"), bad)
