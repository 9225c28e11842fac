"""Wrong: computes the table directly in the requested dtype. Fine for float32/float64, but in
bfloat16 (or float16) the positions and angles are rounded to a few bits, so later rows are
badly off (bfloat16 cannot even hold the angle 63.3 closer than 0.25)."""

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
    pos = torch.arange(seq_len, dtype=dtype, device=device)[:, None]
    freqs = base ** (-torch.arange(0, dim, 2, dtype=dtype, device=device) / dim)
    table = torch.stack(((pos * freqs).sin(), (pos * freqs).cos()), dim=-1)
    return table.reshape(seq_len, dim)


def coordinate_grid(h, w, *, device=None):
    _check_grid(h, w)
    ys = torch.linspace(-1, 1, h, device=device) if h > 1 else torch.zeros(1, device=device)
    xs = torch.linspace(-1, 1, w, device=device) if w > 1 else torch.zeros(1, device=device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack((gx, gy), dim=-1)
