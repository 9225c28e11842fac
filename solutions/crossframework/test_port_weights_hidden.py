"""Hidden tests for crossframework.port_weights (the catalog's contract checks).

Every test builds a model in one framework from a hypothesis-drawn architecture, ports it, and
checks that both models agree on outputs and on input gradients (autograd vs GradientTape).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_close, assert_raises_naming

RTOL = ATOL = 1e-5
# PyTorch warns that padding="same" with an even kernel pads a copy of the input: expected here.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning")


# --- architectures ------------------------------------------------------------------------------
# A spec is (input shape in PyTorch layout, layers); layers are
# ("conv", out_channels, (kh, kw), stride, padding, bias, relu), ("flatten",) and
# ("linear", out_features, bias, relu). Padding is "valid", 0 or "same" (PyTorch's spellings; 0 is
# "valid" in Keras). A relu flag is a separate ReLU module in PyTorch and, in Keras, one of
# RELU_STYLES; a layer without relu has activation None or "linear" (the style picks).
RELU_STYLES = ("fused", "ReLU()", 'Activation("relu")')

@st.composite
def mlp_specs(draw):
    layers = [("linear", draw(st.integers(1, 6)), draw(st.booleans()), draw(st.booleans()))
              for _ in range(draw(st.integers(1, 3)))]
    return (draw(st.integers(1, 6)),), layers


@st.composite
def cnn_specs(draw):
    c, h, w = draw(st.integers(1, 3)), draw(st.integers(3, 7)), draw(st.integers(3, 7))
    shape, layers = (c, h, w), []
    for _ in range(draw(st.integers(1, 2))):
        kh, kw = draw(st.integers(1, min(3, h))), draw(st.integers(1, min(3, w)))
        padding = draw(st.sampled_from(["valid", 0, "same"]))
        stride = 1 if padding == "same" else draw(st.one_of(st.integers(1, 2),
                                                            st.tuples(st.integers(1, 2), st.integers(1, 2))))
        c = draw(st.integers(1, 4))
        layers.append(("conv", c, (kh, kw), stride, padding, draw(st.booleans()), draw(st.booleans())))
        if padding != "same":
            sh, sw = stride if isinstance(stride, tuple) else (stride, stride)
            h, w = (h - kh) // sh + 1, (w - kw) // sw + 1
    tail = draw(st.sampled_from(["none", "flatten", "flatten_linear"]))
    if tail != "none":
        layers.append(("flatten",))
    if tail == "flatten_linear":
        layers.append(("linear", draw(st.integers(1, 4)), draw(st.booleans()), draw(st.booleans())))
    return shape, layers


# Architectures every run must see, whatever hypothesis draws.
FIXED_SPECS = {
    "ends_in_flatten": ((2, 4, 3), [("conv", 3, (2, 2), 1, "valid", True, True), ("flatten",)]),
    "flatten_then_linear": ((2, 4, 3), [("conv", 3, (2, 2), 1, "valid", True, False), ("flatten",),
                                        ("linear", 4, True, False)]),
    # Only the first Linear after the Flatten has its features reordered; the second one's 6 inputs
    # are a multiple of the 3 channels, so reordering it too would still run, with wrong values.
    "flatten_then_two_linears": ((2, 4, 3), [("conv", 3, (2, 2), 1, "valid", True, False), ("flatten",),
                                             ("linear", 6, True, True), ("linear", 2, True, False)]),
    "int_padding_0": ((1, 5, 5), [("conv", 2, (3, 3), 1, 0, True, False)]),
    "same_padding_even_kernel": ((2, 5, 4), [("conv", 3, (2, 2), 1, "same", False, True)]),
    "strides_2_1": ((1, 6, 5), [("conv", 2, (3, 2), (2, 1), "valid", True, True),
                                ("conv", 2, (1, 1), 1, "valid", True, False)]),
    "mlp": ((5,), [("linear", 4, True, True), ("linear", 3, False, False)]),
}


def describe(spec) -> str:
    shape, layers = spec
    parts = []
    for layer in layers:
        if layer[0] == "conv":
            _, c, k, s, p, bias, relu = layer
            parts.append(f"Conv({c}, kernel={k}, stride={s}, padding={p!r}, bias={bias})" + (" ReLU" if relu else ""))
        elif layer[0] == "flatten":
            parts.append("Flatten")
        else:
            parts.append(f"Linear({layer[1]}, bias={layer[2]})" + (" ReLU" if layer[3] else ""))
    return f"[{', '.join(parts)}] on input {shape} (PyTorch layout)"


def build_torch(spec, seed: int) -> nn.Sequential:
    shape, layers = spec
    modules, c, feat = [], shape[0], None
    for layer in layers:
        if layer[0] == "conv":
            _, out, k, s, p, bias, relu = layer
            modules.append(nn.Conv2d(c, out, k, stride=s, padding=p, bias=bias))
            c = out
        elif layer[0] == "flatten":
            modules.append(nn.Flatten())
            feat = None
        else:
            _, out, bias, relu = layer
            modules.append(nn.LazyLinear(out, bias=bias) if feat is None and len(shape) == 3
                           else nn.Linear(feat or shape[0], out, bias=bias))
            feat = out
        if layer[0] != "flatten" and relu:
            modules.append(nn.ReLU())
    model = nn.Sequential(*modules)
    model(torch.zeros(1, *shape))  # materialises the LazyLinear after a Flatten
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 4
            p.copy_(torch.from_numpy(rng.normal(size=tuple(p.shape)) / np.sqrt(fan_in)))
    return model


def build_keras(spec, seed: int, styles: list[int]) -> keras.Sequential:
    shape, layers = spec
    rng = np.random.default_rng(seed)
    keras_shape = (*shape[1:], shape[0]) if len(shape) == 3 else shape
    model_layers = [keras.Input(shape=keras_shape)]
    for layer, style in zip(layers, styles):
        relu = layer[0] != "flatten" and layer[-1]
        style = RELU_STYLES[style % 3] if relu else (None, "linear")[style % 2]
        activation = "relu" if style == "fused" else style if style == "linear" else None
        if layer[0] == "conv":
            _, out, k, s, p, bias, _ = layer
            model_layers.append(keras.layers.Conv2D(out, k, strides=s, padding="same" if p == "same" else "valid",
                                                    use_bias=bias, activation=activation))
        elif layer[0] == "flatten":
            model_layers.append(keras.layers.Flatten())
        else:
            _, out, bias, _ = layer
            model_layers.append(keras.layers.Dense(out, use_bias=bias, activation=activation))
        if style == "ReLU()":
            model_layers.append(keras.layers.ReLU())
        elif style == 'Activation("relu")':
            model_layers.append(keras.layers.Activation("relu"))
    model = keras.Sequential(model_layers)
    for layer in model.layers:
        weights = layer.get_weights()
        if weights:  # random biases too: Keras initialises them to zero, which hides a lost bias
            layer.set_weights([rng.normal(size=w.shape) / np.sqrt(max(w[..., 0].size, 4)) for w in weights])
    return model


def channels_last(t: torch.Tensor) -> np.ndarray:
    return (t.permute(0, 2, 3, 1) if t.dim() == 4 else t).detach().numpy()


def channels_first(a: np.ndarray) -> torch.Tensor:
    t = torch.from_numpy(np.array(a))  # a writable copy
    return t.permute(0, 3, 1, 2) if t.dim() == 4 else t


def assert_models_agree(torch_model, keras_model, input_shape, seed: int, name: str) -> None:
    """Outputs and input gradients of the two models agree (Keras in channels-last layout)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, *input_shape, generator=gen)
    xt = x.clone().requires_grad_(True)
    out_t = torch_model(xt)
    weight = torch.randn(out_t.shape, generator=gen)
    (out_t * weight).sum().backward()
    xk = tf.constant(channels_last(x))
    with tf.GradientTape() as tape:
        tape.watch(xk)
        out_k = keras_model(xk)
        loss = tf.reduce_sum(tf.cast(out_k, tf.float32) * tf.constant(channels_last(weight)))
    grad_k = tape.gradient(loss, xk)
    out_k = channels_first(out_k)
    assert tuple(out_k.shape) == tuple(out_t.shape), (
        f"{name}: output shape {tuple(out_k.shape)} (in PyTorch layout), expected {tuple(out_t.shape)}")
    assert_close(out_k.to(out_t.dtype), out_t.detach(), rtol=RTOL, atol=ATOL, name=f"{name}: outputs (PyTorch layout)")
    assert grad_k is not None, f"{name}: no gradient reaches the Keras model's input"
    assert_close(channels_first(grad_k).to(xt.grad.dtype), xt.grad, rtol=RTOL, atol=ATOL,
                 name=f"{name}: gradient with respect to the input (PyTorch layout)")


# --- PyTorch -> Keras ---------------------------------------------------------------------------

@pytest.mark.points(2)
@settings(max_examples=8)
@given(spec=mlp_specs(), seed=st.integers(0, 2**16))
def test_torch_to_keras_mlp(impl, spec, seed):
    model = build_torch(spec, seed)
    ported = impl.torch_to_keras(model)
    assert isinstance(ported, keras.Model), f"torch_to_keras should return a keras.Model, got {type(ported).__name__}"
    assert_models_agree(model, ported, spec[0], seed, f"torch_to_keras({describe(spec)})")


@pytest.mark.points(3)
@settings(max_examples=12)
@given(spec=cnn_specs(), seed=st.integers(0, 2**16))
def test_torch_to_keras_cnn(impl, spec, seed):
    model = build_torch(spec, seed)
    ported = impl.torch_to_keras(model)
    assert_models_agree(model, ported, spec[0], seed, f"torch_to_keras({describe(spec)})")


# --- Keras -> PyTorch ---------------------------------------------------------------------------

def describe_styles(spec, styles: list[int]) -> str:
    shown = []
    for layer, style in zip(spec[1], styles):
        if layer[0] != "flatten":
            shown.append(RELU_STYLES[style % 3] if layer[-1] else repr((None, "linear")[style % 2]))
    return f"Keras activations {shown}"


STYLE_LISTS = st.lists(st.integers(0, 5), min_size=6, max_size=6)


@pytest.mark.points(2)
@settings(max_examples=8)
@given(spec=mlp_specs(), seed=st.integers(0, 2**16), styles=STYLE_LISTS)
def test_keras_to_torch_mlp(impl, spec, seed, styles):
    model = build_keras(spec, seed, styles)
    ported = impl.keras_to_torch(model)
    assert isinstance(ported, nn.Module), f"keras_to_torch should return an nn.Module, got {type(ported).__name__}"
    name = f"keras_to_torch({describe(spec)}, {describe_styles(spec, styles)})"
    assert_models_agree(ported, model, spec[0], seed, name)


@pytest.mark.points(3)
@settings(max_examples=12)
@given(spec=cnn_specs(), seed=st.integers(0, 2**16), styles=STYLE_LISTS)
def test_keras_to_torch_cnn(impl, spec, seed, styles):
    model = build_keras(spec, seed, styles)
    ported = impl.keras_to_torch(model)
    name = f"keras_to_torch({describe(spec)}, {describe_styles(spec, styles)})"
    assert_models_agree(ported, model, spec[0], seed, name)


# --- architectures every run sees ----------------------------------------------------------------

@pytest.mark.parametrize("spec_id", list(FIXED_SPECS))
def test_torch_to_keras_fixed_architectures(impl, spec_id):
    spec = FIXED_SPECS[spec_id]
    model = build_torch(spec, 5)
    assert_models_agree(model, impl.torch_to_keras(model), spec[0], 5, f"torch_to_keras({describe(spec)})")


@pytest.mark.parametrize("style", [0, 1, 2, 3], ids=["fused_relu_and_None", "ReLU_layer_and_linear",
                                                    "Activation_relu_and_None", "fused_relu_and_linear"])
@pytest.mark.parametrize("spec_id", list(FIXED_SPECS))
def test_keras_to_torch_fixed_architectures(impl, spec_id, style):
    spec = FIXED_SPECS[spec_id]
    styles = [style] * 6
    model = build_keras(spec, 6, styles)
    assert_models_agree(impl.keras_to_torch(model), model, spec[0], 6,
                        f"keras_to_torch({describe(spec)}, {describe_styles(spec, styles)})")


# --- ported models are independent copies -------------------------------------------------------

CONV_SPEC = ((2, 4, 4), [("conv", 3, (2, 2), 1, "valid", True, True), ("flatten",), ("linear", 2, True, False)])


def test_torch_to_keras_is_a_trainable_float32_copy(impl):
    source = build_torch(CONV_SPEC, 0)
    ported = impl.torch_to_keras(source)
    x = torch.randn(2, *CONV_SPEC[0])
    before = np.array(ported(channels_last(x)))
    with torch.no_grad():
        for p in source.parameters():
            p.add_(1.0)
    after = ported(channels_last(x))
    assert_close(torch.from_numpy(np.array(after)), torch.from_numpy(before), rtol=0, atol=0,
                 name="the Keras copy after the PyTorch source changed")
    count = sum(p.numel() for p in source.parameters())
    trainable = sum(int(np.prod(w.shape)) for w in ported.trainable_weights)
    assert trainable == count, (f"torch_to_keras: the Keras model has {trainable} trainable parameters, "
                                f"the PyTorch model {count}: the copy's parameters must be trainable")
    dtypes = {tf.as_dtype(w.dtype).name for w in ported.weights} | {tf.as_dtype(after.dtype).name}
    assert dtypes == {"float32"}, f"torch_to_keras: weights and outputs must be float32, got {sorted(dtypes)}"


def test_keras_to_torch_is_a_trainable_float32_copy(impl):
    source = build_keras(CONV_SPEC, 0, [0] * 6)
    ported = impl.keras_to_torch(source)
    x = torch.randn(2, *CONV_SPEC[0])
    before = ported(x).detach().clone()
    for layer in source.layers:
        if layer.weights:
            layer.set_weights([w + 1.0 for w in layer.get_weights()])
    assert_close(ported(x).detach(), before, rtol=0, atol=0, name="the PyTorch copy after the Keras source changed")
    params = list(ported.parameters())
    assert params and all(p.requires_grad for p in params), "keras_to_torch: parameters should be trainable"
    count, expected = sum(p.numel() for p in params), sum(int(np.prod(w.shape)) for w in source.weights)
    assert count == expected, (f"keras_to_torch: the PyTorch model has {count} parameters, the Keras model "
                               f"{expected}")
    dtypes = {p.dtype for p in params} | {ported(x).dtype}
    assert dtypes == {torch.float32}, f"keras_to_torch: parameters and outputs must be float32, got {dtypes}"


# --- errors -------------------------------------------------------------------------------------

def _rejects(error, fn, model, named: str, what: str) -> None:
    exc = assert_raises_naming(error, "model", fn, model)
    assert named.lower() in str(exc).lower(), (
        f"{fn.__name__}({what}): the error should name the unsupported {named}: {exc!s:.200}")


# (model, error type, what the message names); PyTorch models.
TORCH_UNSUPPORTED = {
    "Tanh": (lambda: nn.Sequential(nn.Linear(3, 3), nn.Tanh()), TypeError, "Tanh"),
    "Conv1d": (lambda: nn.Sequential(nn.Conv1d(2, 2, 3)), TypeError, "Conv1d"),
    "padding_1": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3, padding=1)), ValueError, "Conv2d"),
    "padding_2_0": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3, padding=(2, 0))), ValueError, "Conv2d"),
    "dilation_2": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3, dilation=2)), ValueError, "Conv2d"),
    "groups_2": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3, groups=2)), ValueError, "Conv2d"),
    "Flatten_start_dim_2": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3), nn.Flatten(2)), ValueError, "Flatten"),
    "Flatten_end_dim_2": (lambda: nn.Sequential(nn.Conv2d(2, 2, 3), nn.Flatten(1, 2)), ValueError, "Flatten"),
}
# Keras layers after an input of shape (5, 5, 2).
KERAS_UNSUPPORTED = {
    "BatchNormalization": (lambda: keras.layers.BatchNormalization(), TypeError, "BatchNormalization"),
    "Dense_tanh": (lambda: keras.layers.Dense(3, activation="tanh"), ValueError, "tanh"),
    "Conv2D_sigmoid": (lambda: keras.layers.Conv2D(2, 3, activation="sigmoid"), ValueError, "sigmoid"),
    "Activation_tanh": (lambda: keras.layers.Activation("tanh"), ValueError, "tanh"),
    "dilation_2": (lambda: keras.layers.Conv2D(2, 3, dilation_rate=2), ValueError, "Conv2D"),
    "groups_2": (lambda: keras.layers.Conv2D(2, 3, groups=2), ValueError, "Conv2D"),
    "channels_first": (lambda: keras.layers.Conv2D(2, 1, data_format="channels_first"), ValueError, "Conv2D"),
    "same_stride_2": (lambda: keras.layers.Conv2D(2, 3, strides=2, padding="same"), ValueError, "Conv2D"),
    "ReLU_max_value": (lambda: keras.layers.ReLU(max_value=6.0), ValueError, "ReLU"),
    "ReLU_negative_slope": (lambda: keras.layers.ReLU(negative_slope=0.1), ValueError, "ReLU"),
    "ReLU_threshold": (lambda: keras.layers.ReLU(threshold=0.5), ValueError, "ReLU"),
}


@pytest.mark.parametrize("case", list(TORCH_UNSUPPORTED))
def test_torch_to_keras_rejects_unsupported_layers(impl, case):
    build, error, named = TORCH_UNSUPPORTED[case]
    _rejects(error, impl.torch_to_keras, build(), named, case)


@pytest.mark.parametrize("case", list(KERAS_UNSUPPORTED))
def test_keras_to_torch_rejects_unsupported_layers(impl, case):
    build, error, named = KERAS_UNSUPPORTED[case]
    model = keras.Sequential([keras.Input((5, 5, 2)), build()])
    _rejects(error, impl.keras_to_torch, model, named, case)
