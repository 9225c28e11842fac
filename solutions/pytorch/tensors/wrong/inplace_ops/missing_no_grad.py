"""Wrong: updates in place but outside torch.no_grad(): when params require grad the averaged
tensors pick up a grad_fn (history leaks into the EMA), and an EMA model made with deepcopy (leaf
parameters that require grad) raises on the in-place op."""

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
        avg.mul_(decay).add_(param, alpha=1.0 - decay)
