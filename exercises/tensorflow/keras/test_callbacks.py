"""Public tests for tensorflow.keras.callbacks: a few quick examples. Run with
``pytest exercises/tensorflow/keras/test_callbacks.py``."""

import keras
import numpy as np


class RecordLearningRate(keras.callbacks.Callback):
    """Reads the optimizer's learning rate at the start of every batch (after the scheduler,
    which comes first in the callbacks list)."""

    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(self.model.optimizer.learning_rate))


def test_warmup_over_two_epochs(impl):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    recorder = RecordLearningRate()
    model.fit(np.ones((6, 1)), np.ones((6, 1)), batch_size=2, epochs=2, verbose=0,
              callbacks=[impl.WarmupScheduler(0.4, 4), recorder])
    np.testing.assert_allclose(recorder.rates, [0.1, 0.2, 0.3, 0.4, 0.4, 0.4], rtol=1e-6)


def test_checkpoint_path_needs_a_keras_suffix(impl):
    try:
        impl.training_callbacks("best_model.h5", patience=3)
    except ValueError as exc:
        assert "checkpoint_path" in str(exc)
    else:
        raise AssertionError("training_callbacks('best_model.h5', ...) should raise ValueError naming "
                             "checkpoint_path (use .keras or .weights.h5)")
