"""Public tests for tensorflow.models.sequence_models: a few quick examples. Run with
``pytest exercises/tensorflow/models/test_sequence_models.py``."""

import keras
import numpy as np

from grader.tfchecks import where_the_submission_lives


def test_lstm_classifier_gives_logits_per_sequence(impl):
    model = impl.build_lstm_classifier(20, 8, 6, 3)
    out = model(np.array([[4, 7, 1, 0, 0], [2, 3, 9, 11, 5]], np.int32))
    assert tuple(out.shape) == (2, 3), f"expected logits of shape (2, 3), got {tuple(out.shape)}"


def test_trailing_padding_does_not_change_the_logits(impl):
    model = impl.build_lstm_classifier(20, 8, 6, 3)
    short = np.asarray(model(np.array([[4, 7, 1]], np.int32)))
    padded = np.asarray(model(np.array([[4, 7, 1, 0, 0, 0]], np.int32)))
    assert np.allclose(short, padded, atol=1e-5), f"padding changed the logits: {short} vs {padded}"


def test_encoder_block_keeps_the_shape(impl):
    x = keras.Input((None, 8))
    model = where_the_submission_lives(impl, "keras.Model", x,
                                       impl.transformer_encoder_block(x, num_heads=2, key_dim=4, ff_dim=16))
    out = model(np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32))
    assert tuple(out.shape) == (3, 5, 8), f"expected (3, 5, 8), got {tuple(out.shape)}"


def test_dropout_of_one_is_rejected(impl):
    try:
        impl.transformer_encoder_block(keras.Input((4, 8)), num_heads=2, key_dim=4, ff_dim=16, dropout=1.0)
    except ValueError as exc:
        assert "dropout" in str(exc)
    else:
        raise AssertionError("dropout=1.0 should raise ValueError naming dropout")
