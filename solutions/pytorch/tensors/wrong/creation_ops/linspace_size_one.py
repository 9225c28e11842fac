"""Wrong: uses `torch.linspace(-1, 1, n)` for every side, but for n == 1 that is [-1], not the
centre 0 that F.affine_grid(..., align_corners=True) gives a one-pixel side."""

import torch


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_sinusoidal(seq_len, dim, dtype):
    if not _is_int(seq_len) or seq_len < 0:
        raise ValueError("seq_len must be an int >= 0")
    if not _is_int(dim) or dim <= 0 or dim % 2:
        raise ValueError("dim must be a positive even int")
    if not dtype.is_floating_point:
        raise ValueError("dtype must be floating")


def _check_grid(h, w):
    if not _is_int(h) or h < 1:
        raise ValueError("h must be an int >= 1")
    if not _is_int(w) or w < 1:
        raise ValueError("w must be an int >= 1")


def sinusoidal_positions(seq_len, dim, *, base=10000.0, dtype=torch.float32, device=None):
    _check_sinusoidal(seq_len, dim, dtype)
    work = torch.float64 if dtype == torch.float64 else torch.float32
    pos = torch.arange(seq_len, dtype=work, device=device)[:, None]
    freqs = base ** (-torch.arange(0, dim, 2, dtype=work, device=device) / dim)
    table = torch.stack(((pos * freqs).sin(), (pos * freqs).cos()), dim=-1)
    return table.reshape(seq_len, dim).to(dtype)


def coordinate_grid(h, w, *, device=None):
    _check_grid(h, w)
    ys = torch.linspace(-1, 1, h, device=device)
    xs = torch.linspace(-1, 1, w, device=device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack((gx, gy), dim=-1)
