"""Public tests for tensorflow.keras.transfer_learning: a few quick examples. Run with
``pytest exercises/tensorflow/keras/test_transfer_learning.py``."""

import keras
import numpy as np

from grader.tfchecks import assert_shape


def small_base():
    return keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3),
                             keras.layers.BatchNormalization(), keras.layers.ReLU()])


def test_frozen_base_leaves_only_the_head_trainable(impl):
    model = impl.build_finetune_model(small_base(), 3)
    assert_shape(model(np.zeros((2, 8, 8, 3), np.float32)), (2, 3), name="build_finetune_model(base, 3) output")
    assert len(model.trainable_weights) == 2, (
        f"{len(model.trainable_weights)} trainable weights with train_base=False, expected the head's kernel and bias")


def test_unfreeze_top_keeps_batchnorm_frozen(impl):
    base = small_base()
    model = impl.build_finetune_model(base, 3)
    impl.unfreeze_top(model, 2)  # BatchNormalization and ReLU: nothing trainable in them
    assert len(model.trainable_weights) == 2, (
        "unfreeze_top(model, 2) on Conv2D -> BatchNormalization -> ReLU must leave the base frozen")
    impl.unfreeze_top(model, 3)
    assert len(model.trainable_weights) == 4, "unfreeze_top(model, 3) must unfreeze the Conv2D only"
