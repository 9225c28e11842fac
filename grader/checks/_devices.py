"""Device parametrisation and autocast helpers."""

from __future__ import annotations

import contextlib
from typing import Iterator

import pytest
import torch


def cuda_available() -> bool:
    return torch.cuda.is_available()


def device_params(*, meta: bool = False) -> list:
    """``pytest.param`` devices to parametrize a test over: cpu, meta when ``meta``, and cuda.

    The cuda case carries the ``cuda`` marker: the kit's plugin skips it (and leaves it out of the
    maximum score) on a machine without a GPU.
    """
    params = [pytest.param("cpu", id="cpu")]
    if meta:
        params.append(pytest.param("meta", id="meta"))
    params.append(pytest.param("cuda", id="cuda", marks=pytest.mark.cuda))
    return params


def autocast_dtype(device_type: str) -> torch.dtype:
    """The low-precision dtype autocast uses by default: bfloat16 on CPU, float16 on CUDA."""
    return torch.float16 if device_type == "cuda" else torch.bfloat16


@contextlib.contextmanager
def autocast(device_type: str) -> Iterator[torch.dtype]:
    """``torch.autocast`` for ``device_type`` with its default low dtype; yields that dtype."""
    dtype = autocast_dtype(device_type)
    with torch.autocast(device_type=device_type, dtype=dtype):
        yield dtype
