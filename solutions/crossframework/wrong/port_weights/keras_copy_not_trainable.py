"""Wrong: torch_to_keras freezes every ported layer (trainable=False), so the copy cannot be
fine-tuned."""

from __future__ import annotations

import keras
import numpy as np
import torch
from torch import nn


def _linear_kernel(weight: np.ndarray, flat_channels: int | None) -> np.ndarray:
    """torch Linear weight (out, in) -> Keras Dense kernel (in, out).

    After a Flatten, torch's inputs are ordered (C, H, W) and Keras's (H, W, C): the input axis
    is regrouped from channel-major to channel-minor before the transpose.
    """
    if flat_channels is not None:
        out = weight.shape[0]
        weight = weight.reshape(out, flat_channels, -1).transpose(0, 2, 1).reshape(out, -1)
    return weight.T


def _dense_weight(kernel: np.ndarray, flat_channels: int | None) -> np.ndarray:
    """Keras Dense kernel (in, out) -> torch Linear weight (out, in); inverse of ``_linear_kernel``."""
    weight = kernel.T
    if flat_channels is not None:
        out = weight.shape[0]
        weight = weight.reshape(out, -1, flat_channels).transpose(0, 2, 1).reshape(out, -1)
    return weight


def _check_conv(conv: nn.Conv2d) -> str:
    if conv.groups != 1 or conv.dilation != (1, 1) or conv.padding_mode != "zeros":
        raise ValueError(f"model: {conv} is not supported (groups, dilation and padding_mode must be "
                         "the defaults)")
    if conv.padding in ("valid", (0, 0)):
        return "valid"
    if conv.padding == "same":
        return "same"
    raise ValueError(f"model: {conv} has padding {conv.padding!r}; only 0/'valid' and 'same' have a "
                     "Keras equivalent")


class _ChannelsLastFlatten(nn.Module):
    """``(N, C, H, W) -> (N, H * W * C)`` in Keras's order: a Flatten that ends a ported model."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 2, 3, 1).flatten(1)


def torch_to_keras(model: nn.Sequential) -> keras.Sequential:
    """A Keras copy of ``model`` (channels-last where ``model`` is channels-first)."""
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"model must be an nn.Sequential, got {type(model).__name__}")
    layers: list[keras.layers.Layer] = []
    channels: int | None = None  # channels of the current image tensor, once a conv has run
    flat_channels: int | None = None  # set by a Flatten, used by the next Linear
    for index, module in enumerate(model):
        if isinstance(module, nn.Linear):
            weight = module.weight.detach().cpu().double().numpy()
            layer = keras.layers.Dense(module.out_features, use_bias=module.bias is not None)
            layer.build((None, module.in_features))
            params = [_linear_kernel(weight, flat_channels)]
            flat_channels = None
        elif isinstance(module, nn.Conv2d):
            padding = _check_conv(module)
            layer = keras.layers.Conv2D(module.out_channels, module.kernel_size, strides=module.stride,
                                        padding=padding, use_bias=module.bias is not None)
            layer.build((None, None, None, module.in_channels))
            # torch (out, in, kh, kw) -> Keras (kh, kw, in, out): a transpose, never a reshape.
            params = [module.weight.detach().cpu().double().numpy().transpose(2, 3, 1, 0)]
            channels = module.out_channels
        elif isinstance(module, nn.ReLU):
            layers.append(keras.layers.ReLU())
            continue
        elif isinstance(module, nn.Flatten):
            if channels is None or module.start_dim != 1 or module.end_dim != -1:
                raise ValueError("model: only nn.Flatten() after a Conv2d is supported")
            if any(isinstance(later, nn.Linear) for later in list(model)[index + 1:]):
                # The next Linear's weight is reordered instead: cheaper than a transpose.
                flat_channels = channels
            else:
                # The flattened features are the model's output: PyTorch's (C, H, W) order.
                layers.append(keras.layers.Permute((3, 1, 2)))
            layers.append(keras.layers.Flatten())
            continue
        else:
            raise TypeError(f"model: unsupported layer {type(module).__name__}")
        if module.bias is not None:
            params.append(module.bias.detach().cpu().double().numpy())
        layer.set_weights([p.astype(np.float32) for p in params])
        layer.trainable = False
        layers.append(layer)
    # Every layer is built from the torch shapes, so the model needs no input shape up front.
    return keras.Sequential(layers)


def _activation_name(layer: keras.layers.Layer) -> str:
    activation = getattr(layer, "activation", None)
    return "linear" if activation is None else keras.activations.serialize(activation)


def keras_to_torch(model: keras.Sequential) -> nn.Sequential:
    """A PyTorch copy of ``model`` (channels-first where ``model`` is channels-last)."""
    if not isinstance(model, keras.Sequential):
        raise TypeError(f"model must be a keras.Sequential, got {type(model).__name__}")
    modules: list[nn.Module] = []
    channels: int | None = None
    flat_channels: int | None = None
    for index, layer in enumerate(model.layers):
        activation = _activation_name(layer)
        if isinstance(layer, keras.layers.Dense):
            kernel, *bias = (np.asarray(w, np.float64) for w in layer.get_weights())
            module = nn.Linear(kernel.shape[0], kernel.shape[1], bias=bool(bias))
            params = [_dense_weight(kernel, flat_channels), *bias]
            flat_channels = None
        elif isinstance(layer, keras.layers.Conv2D):
            if (layer.data_format != "channels_last" or tuple(layer.dilation_rate) != (1, 1)
                    or layer.groups != 1):
                raise ValueError(f"model: Conv2D {layer.name} must be channels_last with no dilation or groups")
            if layer.padding == "same" and tuple(layer.strides) != (1, 1):
                raise ValueError(f"model: Conv2D {layer.name} has padding='same' with strides "
                                 f"{layer.strides}; PyTorch supports 'same' only with stride 1")
            kernel, *bias = (np.asarray(w, np.float64) for w in layer.get_weights())
            kh, kw, c_in, c_out = kernel.shape
            module = nn.Conv2d(c_in, c_out, (kh, kw), stride=tuple(layer.strides),
                               padding=layer.padding, bias=bool(bias))
            params = [kernel.transpose(3, 2, 0, 1), *bias]
            channels = c_out
        elif isinstance(layer, keras.layers.Flatten):
            if channels is None:
                raise ValueError("model: only a Flatten after a Conv2D is supported")
            if any(isinstance(later, keras.layers.Dense) for later in model.layers[index + 1:]):
                modules.append(nn.Flatten())  # the next Linear's weight is reordered instead
                flat_channels = channels
            else:
                modules.append(_ChannelsLastFlatten())  # the output: Keras's (H, W, C) order
            continue
        elif isinstance(layer, keras.layers.ReLU):
            config = layer.get_config()
            if config.get("max_value") is not None or config.get("negative_slope") or config.get("threshold"):
                raise ValueError(f"model: ReLU layer {layer.name} is not a plain ReLU")
            modules.append(nn.ReLU())
            continue
        elif isinstance(layer, keras.layers.Activation):
            if activation != "relu":
                raise ValueError(f"model: unsupported activation {activation!r} in layer {layer.name}")
            modules.append(nn.ReLU())
            continue
        else:
            raise TypeError(f"model: unsupported layer {type(layer).__name__}")
        with torch.no_grad():
            for param, value in zip(module.parameters(), params):
                param.copy_(torch.from_numpy(value))
        modules.append(module)
        # Keras fuses the activation into Dense/Conv2D; PyTorch needs its own module.
        if activation == "relu":
            modules.append(nn.ReLU())
        elif activation != "linear":
            raise ValueError(f"model: unsupported activation {activation!r} in layer {layer.name}")
    return nn.Sequential(*modules)
