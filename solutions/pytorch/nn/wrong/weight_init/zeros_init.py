"""Wrong (the constant submission): sets every Linear/Conv weight to 0 (biases 0, norms at the
identity). Fans, norm layers, structure and errors are right; no weight is drawn at random."""

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
            nn.init.zeros_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, _NORMS):
            if getattr(m, "weight", None) is not None:
                nn.init.ones_(m.weight)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
    return module
