"""Transfer learning with keras.applications: a frozen base, a new head, then unfreezing the top.

The question
------------
"How is transfer learning implemented in TensorFlow?" Take a network trained on a large data set
(``keras.applications.MobileNetV2``, ``ResNet50``... without its classifier: ``include_top=False``),
freeze it, put a small head of your own on its features and train the head; then unfreeze the
top of the base and fine-tune it with a small learning rate. The details interviewers ask about:
``trainable = False`` on the base, calling the base with ``training=False`` so its
BatchNormalization layers keep their moving statistics (and its Dropout stays off) even while
the head trains, and keeping BatchNormalization frozen when the top is unfrozen: a handful of new
batches would wreck the statistics learned on millions of images.

Your task
---------
1. ``build_finetune_model(base, num_classes, *, train_base=False)``: a new model that runs
   ``base`` in inference mode, averages its feature map over the image
   (``GlobalAveragePooling2D``) and puts a ``Dense(num_classes)`` head on it (logits).
2. ``unfreeze_top(model, n)``: make the top ``n`` layers of the model's base trainable for
   fine-tuning, BatchNormalization excepted; freeze the rest of the base.

Contract
--------
- ``base`` is a built functional or Sequential ``keras.Model`` with one input whose output is a
  feature map ``(batch, height, width, channels)``, e.g.
  ``keras.applications.MobileNetV2(include_top=False, weights=None, input_shape=(32, 32, 3))``.
- ``build_finetune_model`` returns a new ``keras.Model``, already built (``count_params()``
  works before any data), that takes inputs of the base's input shape and outputs logits
  ``(batch, num_classes)``: ``Dense(num_classes)`` of the spatial mean of the base's features,
  no softmax. Its ``model.layers`` are ``base`` itself (the same object: its weights are shared,
  not copied), the ``GlobalAveragePooling2D`` and the ``Dense`` head, and no other layer (no
  preprocessing, no dropout); the base is the only ``keras.Model`` among them.
- The base always runs in inference mode, also when the model is called with ``training=True``
  or trained with ``fit``: its layers are called with ``training=False``, so its Dropout is off
  and its BatchNormalization layers normalise with their moving statistics and never update
  them.
- With ``train_base=False`` the base is frozen: the model's trainable weights are exactly the
  Dense head's kernel and bias. With ``train_base=True`` every layer of the base is trainable
  except its BatchNormalization layers, which stay frozen.
- ``unfreeze_top(model, n)`` takes a model laid out like ``build_finetune_model``'s, whatever
  its current trainable flags: the last ``n`` entries of ``base.layers`` become trainable except
  BatchNormalization layers, every other layer of the base is frozen, the head stays trainable.
  ``n=0`` freezes the whole base; ``n=len(base.layers)`` is the same as ``train_base=True``. It
  changes the flags in place and returns ``None`` (compile the model again before fitting).
- The model's trainable weights are exactly the head's and those of the base's trainable
  layers: ``fit`` changes only them, and leaves every other weight, BatchNormalization's moving
  statistics included, unchanged.
- ``num_classes`` that is not a positive int raises ``ValueError`` naming ``num_classes``; a
  ``base`` that is not a ``keras.Model`` with a 4-D output raises ``ValueError`` naming ``base``;
  an ``n`` that is not an int in ``[0, len(base.layers)]`` raises ``ValueError`` naming ``n``; a
  ``model`` whose layers do not hold exactly one ``keras.Model`` raises ``ValueError`` naming
  ``model``.

Hints
-----
- The Keras guide builds the model functionally, ``base(inputs, training=False)``. In the Keras
  this kit pins (3.15), a ``training`` fixed while building a functional model is overridden by
  the flag the model itself is called with (keras-team/keras pull request 23364 changes that
  upstream): ``fit`` would run the base in training mode. Subclass ``keras.Model`` instead,
  create the layers in ``__init__`` and call ``self.base(x, training=False)`` in ``call``; call
  the new model once on zeros to build it.
- ``layer.trainable = ...`` on a model sets it on every layer inside: set the base's flag
  first, then its layers'.
- Python's ``layers[-0:]`` is the whole list.
- ``isinstance(layer, keras.layers.BatchNormalization)``.
"""

from __future__ import annotations

import keras


def build_finetune_model(base: keras.Model, num_classes: int, *, train_base: bool = False) -> keras.Model:
    """``base`` in inference mode -> ``GlobalAveragePooling2D`` -> ``Dense(num_classes)`` logits."""
    raise NotImplementedError


def unfreeze_top(model: keras.Model, n: int) -> None:
    """Make the last ``n`` layers of the model's base trainable (BatchNormalization excepted)."""
    raise NotImplementedError
