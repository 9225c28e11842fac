"""Hidden tests for tensorflow.models.sequence_models (the catalog's contract checks)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    central_differences,
    check_gradients,
    mixed_precision,
    where_the_submission_lives,
)


def randomize_weights(model, seed: int, scale: float = 0.5) -> None:
    """Every weight of ``model`` to seeded normal values: the value tests then hold for any
    initializers, and a network that ignores its weights cannot match."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(scale=scale, size=tuple(w.shape)).astype(w.dtype))


def layers_of(model, kind, count: int, what: str) -> list:
    found = [layer for layer in model.layers if isinstance(layer, kind)]
    assert len(found) == count, (
        f"{what}: expected {count} {kind.__name__} layer(s), found {len(found)} among "
        f"{[type(layer).__name__ for layer in model.layers]}")
    return found


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --- build_lstm_classifier -----------------------------------------------------------------------

def lstm_reference(model, tokens: np.ndarray) -> np.ndarray:
    """Logits in float64 NumPy from the model's Embedding, LSTM (gates i, f, c, o) and Dense
    weights, reading only the non-zero tokens of each sequence."""
    what = "build_lstm_classifier's model"
    (embedding,) = layers_of(model, keras.layers.Embedding, 1, what)
    (lstm,) = layers_of(model, keras.layers.LSTM, 1, what)
    (dense,) = layers_of(model, keras.layers.Dense, 1, what)
    table = np.asarray(embedding.embeddings, np.float64)
    kernel, recurrent = np.asarray(lstm.cell.kernel, np.float64), np.asarray(lstm.cell.recurrent_kernel, np.float64)
    bias = np.asarray(lstm.cell.bias, np.float64)
    units = recurrent.shape[0]
    logits = []
    for row in tokens:
        h, c = np.zeros(units), np.zeros(units)
        for token in row[row != 0]:
            z = table[token] @ kernel + h @ recurrent + bias
            i, f, g, o = (z[k * units:(k + 1) * units] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
        logits.append(h @ np.asarray(dense.kernel, np.float64) + np.asarray(dense.bias, np.float64))
    return np.array(logits)


def classifier(impl, vocab: int, embed_dim: int, units: int, num_classes: int):
    """``build_lstm_classifier``'s model, called once so that its weights exist (a Sequential
    without an Input is built on its first call)."""
    model = impl.build_lstm_classifier(vocab, embed_dim, units, num_classes)
    assert isinstance(model, keras.Model), (
        f"build_lstm_classifier must return a keras.Model, got {type(model).__name__}")
    model(np.ones((1, 1), np.int32))
    return model


def lstm_parameter_count(vocab, embed_dim, units, num_classes) -> int:
    return vocab * embed_dim + 4 * units * (embed_dim + units + 1) + units * num_classes + num_classes


def random_tokens(rng, batch: int, length: int, vocab: int) -> np.ndarray:
    return rng.integers(1, vocab, size=(batch, length)).astype(np.int32)


@pytest.mark.points(3)
def test_lstm_logits_match_numpy_reference(impl):
    model = classifier(impl, 9, 4, 3, 3)
    randomize_weights(model, seed=1)
    rng = np.random.default_rng(2)
    tokens = random_tokens(rng, 4, 6, 9)
    tokens[1, 4:] = 0  # a shorter sequence, padded at the end
    tokens[2, :3] = 0  # and one padded at the start
    expected = lstm_reference(model, tokens)
    got = model(tokens, training=False)
    assert_shape(got, (4, 3), name="build_lstm_classifier(9, 4, 3, 3) on token ids (4, 6)")
    assert_close(got, expected, rtol=1e-4, atol=1e-5,
                 name="logits of build_lstm_classifier(9, 4, 3, 3) (Embedding, LSTM's last output, "
                      "Dense without activation)")


@pytest.mark.points(2)
@settings(max_examples=4)
@given(vocab=st.integers(2, 12), embed_dim=st.integers(1, 4), units=st.integers(1, 4),
       num_classes=st.integers(2, 5), batch=st.integers(1, 4), length=st.integers(1, 7))
@example(vocab=2, embed_dim=1, units=1, num_classes=2, batch=1, length=1)  # the smallest of everything
def test_lstm_shape_and_size_for_drawn_sizes(impl, vocab, embed_dim, units, num_classes, batch, length):
    name = f"build_lstm_classifier({vocab}, {embed_dim}, {units}, {num_classes})"
    model = classifier(impl, vocab, embed_dim, units, num_classes)
    expected = lstm_parameter_count(vocab, embed_dim, units, num_classes)
    assert model.count_params() == expected, (
        f"{name} has {model.count_params()} parameters; Embedding({vocab}, {embed_dim}), LSTM({units}) "
        f"and Dense({num_classes}) have {expected}")
    rng = np.random.default_rng(vocab * 100 + length)
    for b, n in ((batch, length), (batch + 1, length + 2)):  # one model, two batch sizes and lengths
        assert_shape(model(random_tokens(rng, b, n, vocab)), (b, num_classes), name=f"{name} on ids {(b, n)}")


@pytest.mark.points(3)
def test_padding_does_not_change_lstm_predictions(impl):
    model = classifier(impl, 11, 5, 4, 3)
    randomize_weights(model, seed=3)
    rng = np.random.default_rng(4)
    sequences = [random_tokens(rng, 1, n, 11)[0] for n in (1, 3, 5)]
    alone = np.concatenate([np.asarray(model(s[None])) for s in sequences])
    assert not np.allclose(alone, alone[0]), (
        f"three different sequences all get the logits {alone[0].tolist()}: the model ignores its input")
    for padding in ("post", "pre"):
        padded = keras.utils.pad_sequences(sequences, maxlen=8, padding=padding, value=0)
        assert_close(model(padded), alone, rtol=1e-5, atol=1e-6,
                     name=f"logits of sequences zero-padded ({padding!r}) to length 8, against each "
                          "sequence alone without padding")


@pytest.mark.parametrize(("arg", "value"), [
    ("vocab", 1), ("vocab", 0), ("vocab", 2.0), ("embed_dim", 0), ("embed_dim", True), ("units", 0),
    ("units", -3), ("units", True), ("units", 2.0), ("num_classes", 1), ("num_classes", "3"),
])
def test_lstm_bad_arguments_raise_value_error(impl, arg, value):
    kwargs = {"vocab": 10, "embed_dim": 4, "units": 3, "num_classes": 2, arg: value}
    assert_raises_naming(ValueError, arg, impl.build_lstm_classifier, **kwargs)


def test_lstm_gradient_in_float64_matches_finite_differences(impl):
    with mixed_precision("float64"):
        model = classifier(impl, 6, 3, 2, 2)
    randomize_weights(model, seed=5)
    tokens = np.array([[1, 5, 2, 0], [3, 3, 4, 1]], np.int32)
    (embedding,) = layers_of(model, keras.layers.Embedding, 1, "build_lstm_classifier's model")
    out = model(tokens)
    assert_dtype(out, tf.float64, name="logits under the 'float64' dtype policy")
    assert_close(out, lstm_reference(model, tokens), rtol=1e-10, atol=1e-12,
                 name="logits under the 'float64' dtype policy (to float64 precision)")
    weights = tf.constant(np.random.default_rng(6).normal(size=(2, 2)))
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(model(tokens, training=False) * weights)
    grad = tape.gradient(total, embedding.embeddings)
    assert grad is not None, "no gradient reaches the embedding table"
    assert_close(tf.convert_to_tensor(grad), central_differences(lambda: model(tokens) * weights, embedding.embeddings),
                 rtol=1e-5, atol=1e-8, name="gradient of the logits with respect to the embedding table (float64)")


# --- transformer_encoder_block -------------------------------------------------------------------

def joined(impl, inputs, outputs) -> keras.Model:
    """``keras.Model(inputs, outputs)``, made where the block's layers live."""
    return where_the_submission_lives(impl, "keras.Model", inputs, outputs)


def build_block(impl, d_model: int, *, masked: bool, length=None, **kwargs):
    x = keras.Input((length, d_model))
    if masked:
        mask = keras.Input((length, length), dtype="bool")
        return joined(impl, [x, mask], impl.transformer_encoder_block(x, attention_mask=mask, **kwargs))
    return joined(impl, x, impl.transformer_encoder_block(x, **kwargs))


def layer_norm(x, layer):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + layer.epsilon) * np.asarray(layer.gamma) + np.asarray(layer.beta)


def block_reference(model, x: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The post-norm encoder layer in float64 NumPy from the model's own layers' weights."""
    what = "the model around transformer_encoder_block"
    (mha,) = layers_of(model, keras.layers.MultiHeadAttention, 1, what)
    norm1, norm2 = layers_of(model, keras.layers.LayerNormalization, 2, what)
    expand, project = layers_of(model, keras.layers.Dense, 2, what)

    def proj(dense, t):
        return np.einsum("btd,dhk->bthk", t, np.asarray(dense.kernel)) + np.asarray(dense.bias)

    x = np.asarray(x, np.float64)
    q, k, v = proj(mha.query_dense, x), proj(mha.key_dense, x), proj(mha.value_dense, x)
    scores = np.einsum("bthk,bshk->bhts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask[:, None], scores, -np.inf)  # True = may attend
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    context = np.einsum("bhts,bshk->bthk", weights, v)
    output = mha.output_dense
    attended = np.einsum("bthk,hkd->btd", context, np.asarray(output.kernel)) + np.asarray(output.bias)
    h = layer_norm(x + attended, norm1)
    f = np.maximum(h @ np.asarray(expand.kernel) + np.asarray(expand.bias), 0)
    f = f @ np.asarray(project.kernel) + np.asarray(project.bias)
    return layer_norm(h + f, norm2)


def assert_symbolic_shape(out, shape: tuple, *, name: str) -> None:
    assert isinstance(out, keras.KerasTensor), (
        f"{name}: expected the symbolic output (a KerasTensor) to build a keras.Model with, got "
        f"{type(out).__name__}")
    assert tuple(out.shape) == shape, f"{name}: symbolic output of shape {tuple(out.shape)}, expected {shape}"


def block_parameter_count(d, num_heads, key_dim, ff_dim) -> int:
    attention = 3 * (d * num_heads * key_dim + num_heads * key_dim) + num_heads * key_dim * d + d
    return attention + 2 * 2 * d + d * ff_dim + ff_dim + ff_dim * d + d


def random_mask(rng, batch: int, length: int) -> np.ndarray:
    """Random attention masks with the diagonal allowed (no query without a key)."""
    return (rng.random((batch, length, length)) < 0.5) | np.eye(length, dtype=bool)


def random_input(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.points(3)
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
def test_block_matches_numpy_reference(impl, masked):
    model = build_block(impl, 6, masked=masked, num_heads=2, key_dim=3, ff_dim=5)
    (mha,) = layers_of(model, keras.layers.MultiHeadAttention, 1, "the model around transformer_encoder_block")
    heads_and_key_dim = tuple(mha.query_dense.kernel.shape)[1:]
    assert heads_and_key_dim == (2, 3), (
        f"transformer_encoder_block(num_heads=2, key_dim=3, ...): the attention's query kernel is "
        f"(d_model, heads, key_dim) = (6, *{heads_and_key_dim}), expected MultiHeadAttention(num_heads, key_dim) "
        "with 2 heads of key_dim 3")
    randomize_weights(model, seed=7)
    rng = np.random.default_rng(8)
    x = random_input(rng, 3, 4, 6)
    mask = random_mask(rng, 3, 4) if masked else None
    got = model([x, mask] if masked else x, training=False)
    assert_close(got, block_reference(model, x, mask), rtol=1e-4, atol=1e-5,
                 name=f"transformer_encoder_block(num_heads=2, key_dim=3, ff_dim=5) on (3, 4, 6)"
                      f"{' with an attention mask' if masked else ''}: LN(h + FFN(h)), h = LN(x + MHA(x, x))")


@pytest.mark.points(2)
@settings(max_examples=4)
@given(batch=st.integers(1, 3), length=st.integers(1, 5), d_model=st.integers(1, 7),
       num_heads=st.integers(1, 3), key_dim=st.integers(1, 4), ff_dim=st.integers(1, 6))
@example(batch=1, length=1, d_model=1, num_heads=1, key_dim=1, ff_dim=1)  # the smallest of everything
@example(batch=2, length=3, d_model=4, num_heads=3, key_dim=2, ff_dim=4)  # num_heads * key_dim != d_model
def test_block_shape_and_size_for_drawn_sizes(impl, batch, length, d_model, num_heads, key_dim, ff_dim):
    name = f"transformer_encoder_block(num_heads={num_heads}, key_dim={key_dim}, ff_dim={ff_dim})"
    x = keras.Input((None, d_model))
    out = impl.transformer_encoder_block(x, num_heads=num_heads, key_dim=key_dim, ff_dim=ff_dim)
    assert_symbolic_shape(out, (None, None, d_model), name=f"{name} on keras.Input((None, {d_model}))")
    model = joined(impl, x, out)
    expected = block_parameter_count(d_model, num_heads, key_dim, ff_dim)
    assert model.count_params() == expected, (
        f"{name} on d_model={d_model} has {model.count_params()} parameters; MultiHeadAttention, two "
        f"LayerNormalization and Dense({ff_dim}) + Dense({d_model}) have {expected}")
    rng = np.random.default_rng(length)
    for n in (length, length + 2):  # one model, two lengths
        assert_shape(model(random_input(rng, batch, n, d_model)), (batch, n, d_model),
                     name=f"{name} on input {(batch, n, d_model)}")


@pytest.mark.points(2)
def test_block_is_permutation_equivariant(impl):
    model = build_block(impl, 5, masked=False, num_heads=2, key_dim=3, ff_dim=7)
    randomize_weights(model, seed=9)
    rng = np.random.default_rng(10)
    x = random_input(rng, 2, 6, 5)
    out = np.asarray(model(x))
    assert not np.allclose(out, out[:, :1]), (
        "the block gives the same output at every position of a random input: it ignores its input")
    for _ in range(3):
        perm = rng.permutation(6)
        assert_close(model(x[:, perm]), out[:, perm], rtol=1e-4, atol=1e-5,
                     name=f"block(x[:, {perm.tolist()}]) against block(x)[:, {perm.tolist()}]")


@pytest.mark.points(3)
def test_attention_mask_is_respected(impl):
    model = build_block(impl, 4, masked=True, num_heads=2, key_dim=2, ff_dim=6)
    randomize_weights(model, seed=11)
    rng = np.random.default_rng(12)
    length = 5
    x = tf.constant(random_input(rng, 2, length, 4))
    mask = random_mask(rng, 2, length)
    mask_tensor = tf.constant(mask)
    for i in range(length):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = model([x, mask_tensor])
            total = tf.reduce_sum(out[:, i] * random_input(rng, 2, 4))
        grad = np.abs(tape.gradient(total, x).numpy()).sum(-1)  # (batch, key position j)
        scale = grad.max()
        for b in range(2):
            for j in range(length):
                if j == i:
                    continue  # the residual connection: position i always depends on itself
                if mask[b, i, j]:
                    assert grad[b, j] > 1e-6 * scale, (
                        f"output position {i} of batch element {b} does not depend on position {j}, "
                        f"though attention_mask[{b}, {i}, {j}] is True (True means 'may attend')")
                else:
                    assert grad[b, j] <= 1e-6 * scale, (
                        f"output position {i} of batch element {b} depends on position {j}, though "
                        f"attention_mask[{b}, {i}, {j}] is False (Keras masks: True means 'may attend')")


@pytest.mark.parametrize("branch", ["attention", "feed-forward"])
def test_dropout_applies_to_each_branch(impl, branch):
    # Zero the other branch's last weights (a = 0 or f = 0 exactly), so that only this branch's
    # dropout can make a training call differ from inference.
    model = build_block(impl, 6, masked=False, num_heads=2, key_dim=3, ff_dim=8, dropout=0.5)
    randomize_weights(model, seed=15)
    what = "the model around transformer_encoder_block"
    (mha,) = layers_of(model, keras.layers.MultiHeadAttention, 1, what)
    _, project = layers_of(model, keras.layers.Dense, 2, what)
    silenced = project if branch == "attention" else mha
    for w in silenced.weights:
        w.assign(np.zeros(tuple(w.shape), w.dtype))
    x = random_input(np.random.default_rng(16), 2, 5, 6)
    inference = np.asarray(model(x, training=False))
    training = np.asarray(model(x, training=True))
    assert not np.allclose(training, inference, rtol=1e-4, atol=1e-5), (
        f"the block with dropout=0.5 called with training=True gave the inference output when only the "
        f"{branch} branch is non-zero: dropout must apply to the {branch} output before its residual addition")


@pytest.mark.points(2)
def test_dropout_only_with_training_true(impl):
    model = build_block(impl, 6, masked=False, num_heads=2, key_dim=3, ff_dim=8, dropout=0.5)
    randomize_weights(model, seed=13)
    x = random_input(np.random.default_rng(14), 2, 5, 6)
    inference = model(x, training=False)
    assert_close(inference, block_reference(model, x, None), rtol=1e-4, atol=1e-5,
                 name="the block with dropout=0.5 called with training=False (dropout must be off)")
    assert_close(model(x, training=False), inference, rtol=0, atol=0,
                 name="a second call with training=False")
    training = np.asarray(model(x, training=True))
    assert not np.allclose(training, inference, rtol=1e-4, atol=1e-5), (
        "the block with dropout=0.5 called with training=True gave the inference output: dropout is not applied")


def test_block_computes_in_float64_under_a_float64_policy(impl):
    with mixed_precision("float64"):
        x = keras.Input((3, 4), dtype="float64")
        model = joined(impl, x, impl.transformer_encoder_block(x, num_heads=2, key_dim=2, ff_dim=3))
    randomize_weights(model, seed=15)
    inputs = np.random.default_rng(16).standard_normal((1, 3, 4))
    out = model(inputs)
    assert_dtype(out, tf.float64, name="the block's output under the 'float64' dtype policy")
    # Not to 1e-12: Keras' MultiHeadAttention scales the scores by a float32-rounded 1/sqrt(key_dim).
    assert_close(out, block_reference(model, inputs, None), rtol=1e-6, atol=1e-7,
                 name="the block's output under the 'float64' dtype policy")
    check_gradients(lambda t: model(t), inputs, name="transformer_encoder_block (float64)")


BAD_BLOCK_ARGUMENTS = [
    ("num_heads", 0), ("num_heads", 2.0), ("num_heads", True), ("key_dim", 0), ("key_dim", True),
    ("ff_dim", 0), ("ff_dim", -1), ("dropout", 1.0), ("dropout", -0.1), ("dropout", float("nan")), ("dropout", "0.1"),
]


@pytest.mark.parametrize(("arg", "value"), BAD_BLOCK_ARGUMENTS)
def test_block_bad_arguments_raise_value_error(impl, arg, value):
    kwargs = {"num_heads": 2, "key_dim": 2, "ff_dim": 4, arg: value}
    assert_raises_naming(ValueError, arg, impl.transformer_encoder_block, keras.Input((3, 4)), **kwargs)


def test_block_input_of_rank_other_than_3_raises_value_error(impl):
    for shape in ((4,), (2, 3, 4)):
        assert_raises_naming(ValueError, "inputs", impl.transformer_encoder_block, keras.Input(shape),
                             num_heads=2, key_dim=2, ff_dim=4)


def test_block_accepts_the_included_ends_of_its_ranges(impl):
    for dropout in (0.0, 0.999):
        x = keras.Input((3, 4))
        out = impl.transformer_encoder_block(x, num_heads=1, key_dim=1, ff_dim=1, dropout=dropout)
        assert_symbolic_shape(out, (None, 3, 4), name=f"block with num_heads=key_dim=ff_dim=1, dropout={dropout}")
