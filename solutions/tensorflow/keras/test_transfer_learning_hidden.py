"""Hidden tests for tensorflow.keras.transfer_learning (the catalog's contract checks).

MobileNetV2 is built once per module, at its smallest input (32x32) and width (alpha=0.35), with
random weights (``weights=None``: nothing is downloaded); each test gets it back with its first
weights and every layer trainable (and the model ``unfreeze_top`` is tested on, around it, as it
was built). Small hand-made bases isolate single clauses quickly.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import assert_close, assert_raises_naming, assert_shape

MOBILENET_INPUT = (32, 32, 3)


@pytest.fixture(scope="module")
def mobilenet_once():
    keras.utils.set_random_seed(0)
    base = keras.applications.MobileNetV2(input_shape=MOBILENET_INPUT, alpha=0.35, include_top=False,
                                          weights=None)
    return base, [w.numpy() for w in base.weights]


@pytest.fixture
def mobilenet(mobilenet_once):
    base, weights = mobilenet_once
    base.trainable = True  # as keras.applications returns it: every layer trainable
    for layer in base.layers:
        layer.trainable = True
    for variable, value in zip(base.weights, weights):
        variable.assign(value)
    return base


@pytest.fixture(scope="module")
def documented_mobilenet_once(mobilenet_once):
    # Building it calls MobileNet once (most of a second): once per module, not per test.
    model = documented_model(mobilenet_once[0], 2)
    return model, list(model.layers)


@pytest.fixture
def documented_mobilenet(mobilenet, documented_mobilenet_once):
    """``documented_model(mobilenet, 2)`` as it is built: the base frozen, the model and its head
    trainable. Built again if a test left other layers in it."""
    model, layers = documented_mobilenet_once
    if list(model.layers) != layers:
        return documented_model(mobilenet, 2)
    model.trainable = True  # reaches every layer inside it, the base's too
    mobilenet.trainable = False
    return model


class TrainingFlags(keras.layers.Layer):
    """Identity layer that records the ``training`` flag it is called with."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.flags = []

    def call(self, x, training=None):
        self.flags.append(training)
        return x


def small_base(seed: int = 0, *, dropout: float = 0.0, flags: TrainingFlags | None = None,
               sequential: bool = False) -> keras.Model:
    """Conv -> BatchNorm -> ReLU [-> Dropout] -> Conv -> BatchNorm -> ReLU on 8x8x3 images, with
    random BatchNormalization weights and moving statistics so that they show in the outputs."""
    keras.utils.set_random_seed(seed)
    layers = [keras.layers.Conv2D(4, 3, name="conv_a"), keras.layers.BatchNormalization(name="bn_a"),
              keras.layers.ReLU(name="relu_a")]
    layers += [keras.layers.Dropout(dropout, name="drop")] if dropout else []
    layers += [flags] if flags is not None else []
    layers += [keras.layers.Conv2D(5, 1, name="conv_b"), keras.layers.BatchNormalization(name="bn_b"),
               keras.layers.ReLU(name="relu_b")]
    if sequential:
        base = keras.Sequential([keras.Input((8, 8, 3)), *layers], name="small_base")
    else:
        inputs = keras.Input((8, 8, 3))
        h = inputs
        for layer in layers:
            h = layer(h)
        base = keras.Model(inputs, h, name="small_base")
    rng = np.random.default_rng(seed)
    for layer in base.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            size = layer.gamma.shape
            layer.gamma.assign(rng.uniform(0.5, 2.0, size).astype(np.float32))
            layer.beta.assign(rng.normal(size=size).astype(np.float32))
            layer.moving_mean.assign(rng.normal(size=size).astype(np.float32))
            layer.moving_variance.assign(rng.uniform(0.5, 3.0, size).astype(np.float32))
    return base


def images(seed: int, batch: int, shape=(8, 8, 3)) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(batch, *shape)).astype(np.float32)


class DocumentedModel(keras.Model):
    """The layout build_finetune_model documents, built here, so that unfreeze_top is tested on
    its own."""

    def __init__(self, base, num_classes):
        super().__init__()
        self.base = base
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.head = keras.layers.Dense(num_classes)

    def call(self, x, training=None):
        return self.head(self.pool(self.base(x, training=False)))


def documented_model(base: keras.Model, num_classes: int) -> keras.Model:
    """A DocumentedModel with the base frozen, as train_base=False leaves it."""
    base.trainable = False
    model = DocumentedModel(base, num_classes)
    model(np.zeros((1, *base.inputs[0].shape[1:]), np.float32))
    return model


def build(impl, base, num_classes, name: str, *, named=False, **kwargs) -> keras.Model:
    """``build_finetune_model``'s model, checked; ``named``: pass base and num_classes by keyword,
    as the signature ``build_finetune_model(base, num_classes, *, ...)`` allows."""
    model = (impl.build_finetune_model(base=base, num_classes=num_classes, **kwargs) if named
             else impl.build_finetune_model(base, num_classes, **kwargs))
    assert isinstance(model, keras.Model), f"{name}: expected a keras.Model, got {type(model).__name__}"
    try:
        model.count_params()
    except ValueError as exc:
        raise AssertionError(f"{name}: the model is not built ({exc!s:.120}): build it (call it once) "
                             "before returning it") from None
    assert any(layer is base for layer in model.layers), (
        f"{name}: the base is not one of model.layers; call the base model itself on the input "
        "(it is shared, not copied or unrolled)")
    return model


def head(model, name: str):
    dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    assert len(dense) == 1, f"{name}: {len(dense)} Dense layers in model.layers, expected the one head"
    return dense[0]


def names(variables) -> list[str]:
    return sorted(v.path for v in variables)


def assert_trainable(model, base, head_layer, unfrozen, name: str) -> None:
    """The model's trainable weights must be exactly the head's and the weights of the base
    layers in ``unfrozen`` other than BatchNormalization, compared as sets of variables."""
    expected = [*head_layer.weights]
    for layer in unfrozen:
        if not isinstance(layer, keras.layers.BatchNormalization):
            expected += layer.weights
    got = {id(v) for v in model.trainable_weights}
    want = {id(v) for v in expected}
    if got != want:
        extra = [v for v in model.trainable_weights if id(v) not in want]
        missing = [v for v in expected if id(v) not in got]
        bn = [v for v in extra if any(v is w for layer in base.layers
                                      if isinstance(layer, keras.layers.BatchNormalization) for w in layer.weights)]
        raise AssertionError(
            f"{name}: trainable weights are not the head's plus those of the unfrozen base layers "
            f"(BatchNormalization excepted): {len(extra)} trainable that should be frozen "
            f"{names(extra)[:4]}{' (BatchNormalization weights)' if bn else ''}, {len(missing)} frozen "
            f"that should be trainable {names(missing)[:4]}")
    count = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    assert count == sum(int(np.prod(v.shape)) for v in expected), f"{name}: {count} trainable parameters"


# --- the model's layout and outputs -------------------------------------------------------------

@pytest.mark.points(3)
@settings(max_examples=5)
@given(num_classes=st.integers(1, 5), batch=st.integers(1, 3), seed=st.integers(0, 2**16),
       sequential=st.booleans())
@example(num_classes=1, batch=1, seed=0, sequential=False)
def test_head_is_average_pooling_and_dense_logits(impl, num_classes, batch, seed, sequential):
    base = small_base(seed % 7, sequential=sequential)
    name = f"build_finetune_model({'Sequential' if sequential else 'functional'} base, {num_classes})"
    model = build(impl, base, num_classes, name)
    dense = head(model, name)
    x = images(seed, batch)
    features = np.asarray(base(x, training=False), np.float64).mean(axis=(1, 2))
    expected = features @ np.asarray(dense.kernel, np.float64) + np.asarray(dense.bias, np.float64)
    out = model(x)
    assert_shape(out, (batch, num_classes), name=f"{name} output")
    assert_close(out, expected, rtol=1e-4, atol=1e-5,
                 name=f"{name}: logits (Dense on the spatial mean of the base's features)")


@pytest.mark.points(2)
def test_mobilenet_head_and_frozen_counts(impl, mobilenet):
    name = "build_finetune_model(MobileNetV2(alpha=0.35, 32x32, weights=None), 3)"
    model = build(impl, mobilenet, 3, name)
    dense = head(model, name)
    dense.bias.assign(np.array([0.5, -1.0, 2.0], np.float32))  # logits of zero features are not zero
    x = images(1, 2, MOBILENET_INPUT)
    expected = (np.asarray(mobilenet(x, training=False), np.float64).mean(axis=(1, 2))
                @ np.asarray(dense.kernel, np.float64) + np.asarray(dense.bias, np.float64))
    assert_close(model(x), expected, rtol=1e-4, atol=1e-4, name=f"{name}: logits")
    assert_trainable(model, mobilenet, dense, [], f"{name} (train_base=False)")
    trainable = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    assert trainable == 1280 * 3 + 3, f"{name}: {trainable} trainable parameters, expected the head's 3843"
    assert model.count_params() == mobilenet.count_params() + 1280 * 3 + 3, (
        f"{name}: {model.count_params()} parameters in all, expected the base's plus the head's")


@pytest.mark.points(2)
def test_mobilenet_train_base_unfreezes_all_but_batchnorm(impl, mobilenet):
    name = "build_finetune_model(MobileNetV2(...), 4, train_base=True)"
    mobilenet.trainable = False  # whatever the flags were before, train_base=True decides
    model = build(impl, mobilenet, 4, name, named=True, train_base=True)
    assert_trainable(model, mobilenet, head(model, name), mobilenet.layers, name)


@pytest.mark.parametrize("n", [0, 1, 9, 40, "all"])
def test_unfreeze_top_on_mobilenet(impl, mobilenet, documented_mobilenet, n):
    n = len(mobilenet.layers) if n == "all" else n
    model = documented_mobilenet
    name = f"unfreeze_top(model on MobileNetV2 with {len(mobilenet.layers)} layers, n={n})"
    assert impl.unfreeze_top(model, n) is None, f"{name} should return None (it works in place)"
    top = mobilenet.layers[len(mobilenet.layers) - n:]
    assert_trainable(model, mobilenet, head(model, name), top, name)


def test_unfreeze_top_refreezes_what_an_earlier_call_unfroze(impl):
    for sequential in (False, True):
        base = small_base(2, sequential=sequential)
        model = documented_model(base, 3)
        kind = "Sequential" if sequential else "functional"
        impl.unfreeze_top(model, len(base.layers))
        impl.unfreeze_top(model, 2)
        assert_trainable(model, base, head(model, "model"), base.layers[-2:],
                         f"unfreeze_top(model on a {kind} base, {len(base.layers)}) then unfreeze_top(model, 2)")
        impl.unfreeze_top(model, 0)
        assert_trainable(model, base, head(model, "model"), [], f"then unfreeze_top(model on a {kind} base, 0)")


# --- inference mode and training ----------------------------------------------------------------

def batchnorm_state(base) -> list[np.ndarray]:
    return [w.numpy() for layer in base.layers if isinstance(layer, keras.layers.BatchNormalization)
            for w in layer.weights]


@pytest.mark.points(3)
@pytest.mark.parametrize("train_base", [False, True])
def test_base_runs_in_inference_mode(impl, train_base):
    flags = TrainingFlags()
    base = small_base(3, dropout=0.5, flags=flags)
    name = f"build_finetune_model(base with Dropout and BatchNormalization, 3, train_base={train_base})"
    model = build(impl, base, 3, name, train_base=train_base)
    x = images(3, 6)
    before = batchnorm_state(base)
    dense = head(model, name)
    expected = (np.asarray(base(x, training=False), np.float64).mean(axis=(1, 2))
                @ np.asarray(dense.kernel, np.float64) + np.asarray(dense.bias, np.float64))
    flags.flags.clear()
    assert_close(model(x, training=True), expected, rtol=1e-4, atol=1e-5,
                 name=f"{name}: model(x, training=True) (the base's Dropout must be off and its "
                      "BatchNormalization use moving statistics: call it with training=False)")
    assert flags.flags and not any(flags.flags), (
        f"{name}: layers inside the base were called with training={flags.flags!r:.60}; the base "
        "must be called with training=False")
    model.compile(optimizer=keras.optimizers.SGD(0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    model.fit(x, np.arange(6) % 3, batch_size=6, epochs=1, verbose=0)
    for got, want in zip(batchnorm_state(base), before):
        assert_close(got, want, rtol=0, atol=0,
                     name=f"{name}: a BatchNormalization weight or moving statistic after fit")


@pytest.mark.points(3)
def test_fit_changes_exactly_the_unfrozen_weights_on_mobilenet(impl, mobilenet):
    name = "build_finetune_model(MobileNetV2(...), 3), unfreeze_top(model, 12), fit"
    model = build(impl, mobilenet, 3, name)
    impl.unfreeze_top(model, 12)
    top = mobilenet.layers[-12:]
    should_change = {id(v) for layer in top if not isinstance(layer, keras.layers.BatchNormalization)
                     for v in layer.trainable_weights} | {id(v) for v in head(model, name).weights}
    before = {id(v): (v.path, v.numpy()) for v in model.weights}
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    x = images(4, 4, MOBILENET_INPUT)
    model.fit(x, np.array([0, 1, 2, 0]), batch_size=4, epochs=1, verbose=0)
    changed = {id(v) for v in model.weights if not np.array_equal(v.numpy(), before[id(v)][1])}
    wrongly = sorted(before[i][0] for i in changed - should_change)
    assert not wrongly, (f"{name}: fit changed {len(wrongly)} weights that must stay frozen, e.g. "
                         f"{wrongly[:4]} (lower layers, BatchNormalization weights or moving statistics)")
    kernels = {id(v) for layer in top if isinstance(layer, keras.layers.Conv2D) for v in layer.weights}
    assert kernels & changed, f"{name}: fit changed no convolution of the top 12 layers"


# --- arguments ----------------------------------------------------------------------------------

def test_bad_num_classes_or_base_raise_value_error(impl):
    base = small_base(5)
    assert_raises_naming(ValueError, "num_classes", impl.build_finetune_model, base, 0)
    assert_raises_naming(ValueError, "num_classes", impl.build_finetune_model, base, 2.5)
    assert_raises_naming(ValueError, "base", impl.build_finetune_model, keras.layers.Dense(3), 2)
    flat = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    assert_raises_naming(ValueError, "base", impl.build_finetune_model, flat, 2)


def test_bad_n_or_model_raise_value_error(impl):
    base = small_base(6)
    model = documented_model(base, 2)
    for n in (-1, len(base.layers) + 1, 1.5):
        assert_raises_naming(ValueError, "n", impl.unfreeze_top, model, n)
    flat = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    assert_raises_naming(ValueError, "model", impl.unfreeze_top, flat, 1)
