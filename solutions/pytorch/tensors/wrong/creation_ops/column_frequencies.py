"""Wrong: gives every column its own frequency, `base ** (-j / dim)` for column `j`, instead of
one frequency per sin/cos pair, `base ** (-2i / dim)` for columns `2i` and `2i + 1`: the cosine
columns get the wrong frequencies."""

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
    freqs = base ** (-torch.arange(dim, dtype=work, device=device) / dim)
    angles = pos * freqs
    out = torch.empty(seq_len, dim, dtype=work, device=device)
    out[:, 0::2] = angles[:, 0::2].sin()
    out[:, 1::2] = angles[:, 1::2].cos()
    return out.to(dtype)


def coordinate_grid(h, w, *, device=None):
    _check_grid(h, w)
    ys = torch.linspace(-1, 1, h, device=device) if h > 1 else torch.zeros(1, device=device)
    xs = torch.linspace(-1, 1, w, device=device) if w > 1 else torch.zeros(1, device=device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack((gx, gy), dim=-1)
