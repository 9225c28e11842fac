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
# ("linear", out_features, bias, relu). A relu flag is a separate ReLU module in PyTorch and,
# in Keras, either the layer's fused activation or a separate ReLU layer (drawn).

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
        padding = draw(st.sampled_from(["valid", "same"]))
        stride = 1 if padding == "same" else draw(st.integers(1, 2))
        c = draw(st.integers(1, 4))
        layers.append(("conv", c, (kh, kw), stride, padding, draw(st.booleans()), draw(st.booleans())))
        if padding == "valid":
            h, w = (h - kh) // stride + 1, (w - kw) // stride + 1
    if draw(st.booleans()):
        layers += [("flatten",), ("linear", draw(st.integers(1, 4)), draw(st.booleans()), draw(st.booleans()))]
    return shape, layers


def describe(spec) -> str:
    shape, layers = spec
    parts = []
    for layer in layers:
        if layer[0] == "conv":
            _, c, k, s, p, bias, relu = layer
            parts.append(f"Conv({c}, kernel={k}, stride={s}, padding={p!r}, bias={bias})" + (" ReLU" if relu else ""))
        elif layer[0] == "linear":
            parts.append(f"Linear({layer[1]}, bias={layer[2]})" + (" ReLU" if layer[3] else ""))
        else:
            parts.append("Flatten")
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


def build_keras(spec, seed: int, fused: list[bool]) -> keras.Sequential:
    shape, layers = spec
    rng = np.random.default_rng(seed)
    keras_shape = (*shape[1:], shape[0]) if len(shape) == 3 else shape
    model_layers = [keras.Input(shape=keras_shape)]
    for layer, fuse in zip(layers, fused):
        relu = layer[0] != "flatten" and layer[-1]
        activation = "relu" if relu and fuse else None
        if layer[0] == "conv":
            _, out, k, s, p, bias, _ = layer
            model_layers.append(keras.layers.Conv2D(out, k, strides=s, padding=p, use_bias=bias,
                                                    activation=activation))
        elif layer[0] == "flatten":
            model_layers.append(keras.layers.Flatten())
        else:
            _, out, bias, _ = layer
            model_layers.append(keras.layers.Dense(out, use_bias=bias, activation=activation))
        if relu and not fuse:
            model_layers.append(keras.layers.ReLU())
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

@pytest.mark.points(2)
@settings(max_examples=8)
@given(spec=mlp_specs(), seed=st.integers(0, 2**16), fused=st.lists(st.booleans(), min_size=6, max_size=6))
def test_keras_to_torch_mlp(impl, spec, seed, fused):
    model = build_keras(spec, seed, fused)
    ported = impl.keras_to_torch(model)
    assert isinstance(ported, nn.Module), f"keras_to_torch should return an nn.Module, got {type(ported).__name__}"
    name = f"keras_to_torch({describe(spec)}, fused activations {fused[:len(spec[1])]})"
    assert_models_agree(ported, model, spec[0], seed, name)


@pytest.mark.points(3)
@settings(max_examples=12)
@given(spec=cnn_specs(), seed=st.integers(0, 2**16), fused=st.lists(st.booleans(), min_size=6, max_size=6))
def test_keras_to_torch_cnn(impl, spec, seed, fused):
    model = build_keras(spec, seed, fused)
    ported = impl.keras_to_torch(model)
    name = f"keras_to_torch({describe(spec)}, fused activations {fused[:len(spec[1])]})"
    assert_models_agree(ported, model, spec[0], seed, name)


# --- ported models are independent copies -------------------------------------------------------

def test_ported_models_do_not_share_state(impl):
    spec = ((4,), [("linear", 3, True, False)])
    source = build_torch(spec, 0)
    ported = impl.torch_to_keras(source)
    x = torch.randn(2, 4)
    before = np.asarray(ported(x.numpy()))
    with torch.no_grad():
        for p in source.parameters():
            p.add_(1.0)
    assert_close(torch.from_numpy(np.asarray(ported(x.numpy()))), torch.from_numpy(before), rtol=0, atol=0,
                 name="the Keras copy after the PyTorch source changed")
    back = impl.keras_to_torch(ported)
    assert all(p.requires_grad for p in back.parameters()), "keras_to_torch: parameters should be trainable"


# --- errors -------------------------------------------------------------------------------------

def test_unsupported_layers_are_rejected_naming_them(impl):
    exc = assert_raises_naming((TypeError, ValueError), "model", impl.torch_to_keras,
                               nn.Sequential(nn.Linear(3, 3), nn.Tanh()))
    assert "Tanh" in str(exc), f"torch_to_keras: the error should name the unsupported layer (Tanh): {exc}"
    bn = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), keras.layers.BatchNormalization()])
    exc = assert_raises_naming((TypeError, ValueError), "model", impl.keras_to_torch, bn)
    assert "BatchNormalization" in str(exc), (
        f"keras_to_torch: the error should name the unsupported layer (BatchNormalization): {exc}")
    tanh = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, activation="tanh")])
    exc = assert_raises_naming((TypeError, ValueError), "model", impl.keras_to_torch, tanh)
    assert "tanh" in str(exc), f"keras_to_torch: the error should name the unsupported activation (tanh): {exc}"
