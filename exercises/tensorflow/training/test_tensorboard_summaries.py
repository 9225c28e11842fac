"""Public tests for tensorflow.training.tensorboard_summaries: a few quick examples. Run with
``pytest exercises/tensorflow/training/test_tensorboard_summaries.py``.

They read the event files back with TensorBoard's own reader (the ``tensorboard`` package)."""

import numpy as np
import pytest
import tensorflow as tf

keras = tf.keras


def scalars(log_dir):
    pea = pytest.importorskip("tensorboard.backend.event_processing.plugin_event_accumulator",
                              reason="needs tensorboard: pip install -e '.[tensorboard]'")
    from tensorboard.util import tensor_util

    events = pea.EventAccumulator(str(log_dir), size_guidance={pea.TENSORS: 0})
    events.Reload()
    # Only what the scalar dashboard draws (the callback also writes histograms and the model).
    return {tag: [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in events.Tensors(tag)]
            for tag in events.Tags()[pea.TENSORS]
            if events.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"}


def test_log_scalars_writes_tags_at_their_step(impl, tmp_path):
    impl.log_scalars(str(tmp_path), {"loss": 0.5, "acc": tf.constant(0.75)}, 4)
    assert scalars(tmp_path) == {"loss": [(4, 0.5)], "acc": [(4, 0.75)]}


def test_negative_step_is_rejected(impl, tmp_path):
    with pytest.raises(ValueError, match="step"):
        impl.log_scalars(str(tmp_path), {"loss": 0.5}, -1)


def test_callback_logs_epoch_loss_in_model_fit(impl, tmp_path):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 2), np.float32)
    history = model.fit(x, x[:, :1], epochs=2, batch_size=4, verbose=0,
                        callbacks=[impl.tensorboard_callback(str(tmp_path))]).history
    logged = scalars(tmp_path / "train")["epoch_loss"]
    assert [step for step, _ in logged] == [0, 1]
    np.testing.assert_allclose([value for _, value in logged], history["loss"], rtol=1e-6)
