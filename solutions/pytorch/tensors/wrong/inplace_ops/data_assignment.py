"""Wrong: assigns a freshly computed tensor to `avg.data`: same Python object and right values, but
the tensor now lives in new memory and autograd's version counter never sees the change."""

from collections.abc import Iterable

from torch import Tensor


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"decay must be in [0, 1], got {decay!r}")


def ema(avg: Tensor, new: Tensor, decay: float) -> Tensor:
    _check_decay(decay)
    if new.shape != avg.shape:
        raise ValueError("new: shape mismatch")
    return decay * avg + (1.0 - decay) * new


def _checked_pairs(avg_params, params):
    avg_list, param_list = list(avg_params), list(params)
    if len(avg_list) != len(param_list) or any(a.shape != p.shape for a, p in zip(avg_list, param_list)):
        raise ValueError("params do not match avg_params")
    return avg_list, param_list


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    _check_decay(decay)
    avg_list, param_list = _checked_pairs(avg_params, params)
    for avg, param in zip(avg_list, param_list):
        avg.data = decay * avg.data + (1.0 - decay) * param.data
