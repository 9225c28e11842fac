"""Wrong: validates no argument: Keras' own errors (or none) name the layers' arguments, not these."""

import keras


def build_lstm_classifier(vocab: int, embed_dim: int, units: int, num_classes: int) -> keras.Model:
    """Token ids ``(batch, length)``, 0 = padding -> logits ``(batch, num_classes)``."""
    tokens = keras.Input((None,), dtype="int32")
    # mask_zero=True: the embedding emits a mask (id != 0) that the LSTM uses to skip padded
    # steps, carrying its state over them, so padding at either end changes nothing.
    embedded = keras.layers.Embedding(vocab, embed_dim, mask_zero=True)(tokens)
    state = keras.layers.LSTM(units)(embedded)
    logits = keras.layers.Dense(num_classes)(state)  # logits: the loss applies the softmax
    return keras.Model(tokens, logits)


def transformer_encoder_block(inputs, *, num_heads: int, key_dim: int, ff_dim: int, dropout: float = 0.0,
                              attention_mask=None):
    """One post-norm Transformer encoder layer on a symbolic ``(batch, length, d_model)`` input."""
    d_model = inputs.shape[-1]
    attended = keras.layers.MultiHeadAttention(num_heads, key_dim)(
        inputs, inputs, attention_mask=attention_mask)  # Keras: True = may attend
    attended = keras.layers.Dropout(dropout)(attended)  # active only with training=True
    hidden = keras.layers.LayerNormalization()(inputs + attended)
    ff = keras.layers.Dense(ff_dim, activation="relu")(hidden)
    ff = keras.layers.Dense(d_model)(ff)
    ff = keras.layers.Dropout(dropout)(ff)
    return keras.layers.LayerNormalization()(hidden + ff)
