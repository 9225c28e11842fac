"""Reference solution: pytorch.tensors.from_data."""

from itertools import zip_longest
from typing import Any

import numpy as np
import torch
from torch import Tensor

# NumPy number scalars are accepted as leaves too; torch.tensor knows their dtypes.
_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)


def _shape_of(item: Any, depth: int) -> tuple[int, ...]:
    """Shape of the regular nested sequence ``item`` found at ``depth``.

    Raises ValueError naming the depth where the nesting is ragged, TypeError for a non-number.
    """
    if isinstance(item, (list, tuple)):
        shapes = [_shape_of(x, depth + 1) for x in item]
        for other in shapes[1:]:
            if other != shapes[0]:
                # The first dimension where two siblings disagree: siblings sit at depth + 1.
                k = next(i for i, (p, q) in enumerate(zip_longest(shapes[0], other)) if p != q)
                raise ValueError(f"data is ragged at depth {depth + 1 + k}: items below depth "
                                 f"{depth} have shapes {shapes[0]} and {other}")
        return (len(item), *(shapes[0] if shapes else ()))
    if isinstance(item, _NUMBERS):
        return ()
    raise TypeError(f"data must hold bool, int or float values, found a "
                    f"{type(item).__name__} at depth {depth}")


def to_tensor(data: Any, *, dtype: torch.dtype | None = None,
              device: str | torch.device | None = None) -> Tensor:
    if isinstance(data, (np.ndarray, np.generic)):
        # np.array(copy=True, order="C") gives a fresh array with positive strides, which
        # torch.from_numpy can take over; the original is never shared.
        array = np.array(data, copy=True, order="C")
        try:
            tensor = torch.from_numpy(array)
        except TypeError as exc:
            raise TypeError(f"data has NumPy dtype {array.dtype}, which torch cannot hold") from exc
        return tensor.to(device=device, dtype=dtype)
    _shape_of(data, 0)
    # torch.tensor always copies and infers bool/int64/float32 (default dtype) as the contract says;
    # with dtype= it converts each Python number directly, without a float32 detour.
    return torch.tensor(data, dtype=dtype, device=device)
