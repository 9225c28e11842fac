"""Sequence models in Keras: an LSTM text classifier with masking, and a Transformer encoder block.

The question
------------
How are RNNs, attention and Transformers implemented in TensorFlow? With Keras layers: an
``Embedding`` turns token ids into vectors, an ``LSTM`` (or ``GRU``) reads them in order and
keeps a state, and ``MultiHeadAttention`` lets every position look at every other one at once.
Real batches hold sequences of different lengths padded with a token id 0; the classic bug is
letting the model read the padding: ``Embedding(..., mask_zero=True)`` creates a mask that the
LSTM then honours by skipping those steps. Attention takes its mask explicitly, and Keras'
convention is the opposite of PyTorch's: ``True`` means "may attend", not "masked out".

Your task
---------
``build_lstm_classifier(vocab, embed_dim, units, num_classes)`` and
``transformer_encoder_block(inputs, *, num_heads, key_dim, ff_dim, dropout=0.0,
attention_mask=None)``.

Contract
--------
- ``build_lstm_classifier`` returns a Keras model that maps int token ids of shape
  ``(batch, length)``, any batch size and any length, to logits of shape ``(batch, num_classes)``.
- It is exactly ``Embedding(vocab, embed_dim, mask_zero=True)``, then ``LSTM(units)`` (default
  settings otherwise: the last output), then ``Dense(num_classes)`` with no activation: token ids
  are ``1 .. vocab - 1`` and 0 is padding.
- Padding does not change predictions: zeros added at the end or at the start of a sequence (as
  ``keras.utils.pad_sequences`` does) leave its logits unchanged.
- ``vocab`` is an int >= 2, ``embed_dim`` and ``units`` ints >= 1, ``num_classes`` an int >= 2;
  anything else (a bool included) raises ``ValueError`` naming the argument.
- ``transformer_encoder_block`` is functional: called on a Keras symbolic input ``x`` of shape
  ``(batch, length, d_model)`` (``length`` may be ``None``), it creates new layers and returns
  the block's output, a symbolic tensor of the same shape, to build a ``keras.Model`` with.
- The block is the post-norm encoder layer of "Attention Is All You Need", from Keras layers with
  their default settings: ``a = MultiHeadAttention(num_heads, key_dim)(x, x,
  attention_mask=attention_mask)``, ``h = LayerNormalization()(x + a)``, ``f = Dense(d_model)(
  Dense(ff_dim, activation="relu")(h))``, output ``LayerNormalization()(h + f)``; no other layer
  has weights.
- ``dropout`` (a rate in ``[0, 1)``) applies to ``a`` and ``f`` before the residual additions,
  and only when the model is called with ``training=True``; at inference the block is
  deterministic.
- ``attention_mask`` is ``None`` (every position attends to every position) or a boolean
  symbolic tensor ``(batch, length, length)``: position ``i`` attends to position ``j`` only where
  ``attention_mask[b, i, j]`` is ``True``.
- Without a mask the block is permutation equivariant: permuting the positions of ``x`` permutes
  the output's positions the same way (there are no positional encodings inside it).
- All layers take the global Keras dtype policy (no ``dtype=`` of their own): under a
  ``"float64"`` policy the classifier and the block compute in float64.
- ``num_heads``, ``key_dim`` and ``ff_dim`` that are not ints >= 1, a ``dropout`` that is not a
  number in ``[0, 1)``, and an ``x`` whose rank is not 3 raise ``ValueError`` naming ``num_heads``,
  ``key_dim``, ``ff_dim``, ``dropout`` or ``inputs``.

Hints
-----
- ``keras.Input((None,), dtype="int32")`` accepts any length.
- ``d_model`` is ``inputs.shape[-1]``.
- The attention layer takes ``attention_mask=`` in its call; the model built around the block
  gets the mask as a second input: ``keras.Input((None, None), dtype="bool")``.
- Compile the classifier with ``SparseCategoricalCrossentropy(from_logits=True)`` to train it.
"""

import keras


def build_lstm_classifier(vocab: int, embed_dim: int, units: int, num_classes: int) -> keras.Model:
    """Token ids ``(batch, length)``, 0 = padding -> logits ``(batch, num_classes)``."""
    raise NotImplementedError


def transformer_encoder_block(inputs, *, num_heads: int, key_dim: int, ff_dim: int, dropout: float = 0.0,
                              attention_mask=None):
    """One post-norm Transformer encoder layer on a symbolic ``(batch, length, d_model)`` input."""
    raise NotImplementedError
