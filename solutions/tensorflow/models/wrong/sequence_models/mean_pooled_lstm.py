"""Wrong: averages the LSTM's outputs over the (unmasked) steps instead of taking its last output."""

import math
import numbers

import keras


def _check_int(value, name: str, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def build_lstm_classifier(vocab: int, embed_dim: int, units: int, num_classes: int) -> keras.Model:
    """Token ids ``(batch, length)``, 0 = padding -> logits ``(batch, num_classes)``."""
    _check_int(vocab, "vocab", 2)
    _check_int(embed_dim, "embed_dim", 1)
    _check_int(units, "units", 1)
    _check_int(num_classes, "num_classes", 2)
    tokens = keras.Input((None,), dtype="int32")
    # mask_zero=True: the embedding emits a mask (id != 0) that the LSTM uses to skip padded
    # steps, carrying its state over them, so padding at either end changes nothing.
    embedded = keras.layers.Embedding(vocab, embed_dim, mask_zero=True)(tokens)
    state = keras.layers.GlobalAveragePooling1D()(keras.layers.LSTM(units, return_sequences=True)(embedded))
    logits = keras.layers.Dense(num_classes)(state)  # logits: the loss applies the softmax
    return keras.Model(tokens, logits)


def transformer_encoder_block(inputs, *, num_heads: int, key_dim: int, ff_dim: int, dropout: float = 0.0,
                              attention_mask=None):
    """One post-norm Transformer encoder layer on a symbolic ``(batch, length, d_model)`` input."""
    _check_int(num_heads, "num_heads", 1)
    _check_int(key_dim, "key_dim", 1)
    _check_int(ff_dim, "ff_dim", 1)
    if (not isinstance(dropout, numbers.Real) or isinstance(dropout, bool) or math.isnan(dropout)
            or not 0 <= dropout < 1):
        raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
    if len(inputs.shape) != 3:
        raise ValueError(f"inputs must have rank 3 (batch, length, d_model), got shape {inputs.shape}")
    d_model = inputs.shape[-1]
    attended = keras.layers.MultiHeadAttention(num_heads, key_dim)(
        inputs, inputs, attention_mask=attention_mask)  # Keras: True = may attend
    attended = keras.layers.Dropout(dropout)(attended)  # active only with training=True
    hidden = keras.layers.LayerNormalization()(inputs + attended)
    ff = keras.layers.Dense(ff_dim, activation="relu")(hidden)
    ff = keras.layers.Dense(d_model)(ff)
    ff = keras.layers.Dropout(dropout)(ff)
    return keras.layers.LayerNormalization()(hidden + ff)
