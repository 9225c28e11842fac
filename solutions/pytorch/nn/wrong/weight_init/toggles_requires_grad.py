"""Wrong: avoids torch.no_grad() by switching requires_grad off, initialising, and switching it
back on, so a frozen (requires_grad=False) parameter comes out trainable. Breaks: parameters keep
their requires_grad."""

import math

from torch import Tensor, nn

_WEIGHTED = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm,
          nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
_SCHEMES = ("kaiming", "xavier")


def fan_in_and_fan_out(weight: Tensor) -> tuple[int, int]:
    if weight.dim() < 2:
        raise ValueError(f"weight must have at least 2 dimensions (out, in, *kernel), "
                         f"got shape {tuple(weight.shape)}")
    receptive = math.prod(weight.shape[2:])  # 1 for a Linear weight
    return int(weight.shape[1] * receptive), int(weight.shape[0] * receptive)


def init_weights(module: nn.Module, scheme: str = "kaiming") -> nn.Module:
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {_SCHEMES}, got {scheme!r}")
    for m in module.modules():  # every descendant, module itself included
        if isinstance(m, _WEIGHTED):
            fan_in, fan_out = fan_in_and_fan_out(m.weight)
            var = 2.0 / fan_in if scheme == "kaiming" else 2.0 / (fan_in + fan_out)
            # nn.init works in place under no_grad: same Parameter objects, no history.
            m.weight.requires_grad_(False)
            m.weight.normal_(0.0, math.sqrt(var))
            m.weight.requires_grad_(True)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, _NORMS):
            if getattr(m, "weight", None) is not None:
                nn.init.ones_(m.weight)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
    return module
