"""Wrong (the constant submission): validates like the reference and returns zeros of the right
shape, dtype and device. Earns only the points of the error, empty-shape and meta-device checks."""

from itertools import zip_longest
from typing import Any

import numpy as np
import torch
from torch import Tensor

# NumPy number scalars are accepted as leaves too; torch.tensor knows their dtypes.
_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)


# The widest kind of scalar found so far, in promotion order, and the dtype each kind gives.
_NO_SCALAR, _BOOL, _INT, _FLOAT = range(4)
_KIND_DTYPE = {_NO_SCALAR: torch.float32, _BOOL: torch.bool, _INT: torch.int64,
               _FLOAT: torch.float32}


def _kind_of(value: Any) -> int:
    if isinstance(value, (bool, np.bool_)):
        return _BOOL
    if isinstance(value, (int, np.integer)):
        return _INT
    return _FLOAT


def _walk(item: Any, depth: int) -> tuple[tuple[int, ...], int]:
    """Shape of the regular nested sequence ``item`` found at ``depth``, and its widest kind.

    Raises ValueError naming the depth where the nesting is ragged, TypeError for a non-number.
    """
    if isinstance(item, (list, tuple)):
        walked = [_walk(x, depth + 1) for x in item]
        shapes = [shape for shape, _ in walked]
        for other in shapes[1:]:
            if other != shapes[0]:
                # The first dimension where two siblings disagree: siblings sit at depth + 1.
                k = next(i for i, (p, q) in enumerate(zip_longest(shapes[0], other)) if p != q)
                raise ValueError(f"data is ragged at depth {depth + 1 + k}: items below depth "
                                 f"{depth} have shapes {shapes[0]} and {other}")
        kind = max((k for _, k in walked), default=_NO_SCALAR)
        return (len(item), *(shapes[0] if shapes else ())), kind
    if isinstance(item, _NUMBERS):
        return (), _kind_of(item)
    raise TypeError(f"data must hold bool, int or float values, found a "
                    f"{type(item).__name__} at depth {depth}")


def _correct_to_tensor(data: Any, *, dtype: torch.dtype | None = None,
              device: str | torch.device | None = None) -> Tensor:
    if isinstance(data, (np.ndarray, np.generic)):
        # np.array(copy=True, order="C") gives a fresh array with positive strides, which
        # torch.from_numpy can take over; the original is never shared, whatever dtype/device.
        array = np.array(data, copy=True, order="C")
        try:
            tensor = torch.from_numpy(array)
        except TypeError as exc:
            raise TypeError(f"data has NumPy dtype {array.dtype}, which torch cannot hold") from exc
        return tensor.to(device=device, dtype=dtype)
    _, kind = _walk(data, 0)
    # torch.tensor always copies; with dtype= it converts each Python number directly, without a
    # float32 detour. The dtype is always passed: left to torch, floats would follow
    # torch.get_default_dtype() instead of the contract's fixed float32.
    return torch.tensor(data, dtype=dtype if dtype is not None else _KIND_DTYPE[kind], device=device)


def to_tensor(data: Any, *, dtype: torch.dtype | None = None,
              device: str | torch.device | None = None) -> Tensor:
    # MISTAKE (the constant submission): right shape, dtype, device and errors; every value 0.
    return torch.zeros_like(_correct_to_tensor(data, dtype=dtype, device=device))
