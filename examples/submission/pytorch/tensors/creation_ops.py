"""Reference solution: pytorch.tensors.creation_ops."""

import torch
from torch import Tensor


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def sinusoidal_positions(seq_len: int, dim: int, *, base: float = 10000.0,
                         dtype: torch.dtype = torch.float32,
                         device: str | torch.device | None = None) -> Tensor:
    if not _is_int(seq_len) or seq_len < 0:
        raise ValueError(f"seq_len must be an int >= 0, got {seq_len!r}")
    if not _is_int(dim) or dim <= 0 or dim % 2:
        raise ValueError(f"dim must be a positive even int, got {dim!r}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype must be a floating dtype, got {dtype!r}")
    # Low-precision dtypes cannot even hold the positions exactly: work in float32 (or float64
    # when that is asked for) and round once at the end.
    work = torch.float64 if dtype == torch.float64 else torch.float32
    positions = torch.arange(seq_len, dtype=work, device=device)
    freqs = base ** (-torch.arange(0, dim, 2, dtype=work, device=device) / dim)
    angles = positions[:, None] * freqs[None, :]                        # (seq_len, dim / 2)
    table = torch.stack((angles.sin(), angles.cos()), dim=-1)           # (seq_len, dim / 2, 2)
    return table.reshape(seq_len, dim).to(dtype)


def _axis(n: int, device: str | torch.device | None) -> Tensor:
    # dtype= always: left out, both would follow torch.get_default_dtype(), not the fixed float32.
    # linspace(-1, 1, 1) is [-1]; the centre of a one-pixel side is 0 (as affine_grid has it).
    if n == 1:
        return torch.zeros(1, dtype=torch.float32, device=device)
    return torch.linspace(-1.0, 1.0, n, dtype=torch.float32, device=device)


def coordinate_grid(h: int, w: int, *, device: str | torch.device | None = None) -> Tensor:
    if not _is_int(h) or h < 1:
        raise ValueError(f"h must be an int >= 1, got {h!r}")
    if not _is_int(w) or w < 1:
        raise ValueError(f"w must be an int >= 1, got {w!r}")
    ys = _axis(h, device)[:, None].expand(h, w)
    xs = _axis(w, device)[None, :].expand(h, w)
    return torch.stack((xs, ys), dim=-1)
