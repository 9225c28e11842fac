"""Device parametrisation and autocast helpers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch


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
def autocast(device_type: str, dtype: torch.dtype | None = None) -> Iterator[torch.dtype]:
    """``torch.autocast`` for ``device_type`` with ``dtype`` (default: the device's usual low
    dtype; CPU autocast also runs float16); yields that dtype."""
    dtype = dtype or autocast_dtype(device_type)
    with torch.autocast(device_type=device_type, dtype=dtype):
        yield dtype


def call_on_device(device: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, where an op that cannot run on ``meta`` (it needs the tensor's
    values: boolean-mask indexing, ``nonzero``) becomes a failure that says so and how to avoid it.

    Raises:
        AssertionError: on ``meta``, when torch raised ``NotImplementedError`` with a message.
    """
    problem = None
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        if device != "meta" or not str(exc):
            raise  # an untouched stub (or a real device): not this helper's business
        problem = str(exc)
    raise AssertionError(
        f"{fn.__name__} on the meta device raised NotImplementedError ({problem:.150}...): an op "
        "needs the tensor's values (boolean-mask indexing such as x[mask], nonzero); use "
        "torch.where or multiply by a mask instead")
