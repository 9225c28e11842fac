"""Value, shape, dtype and device assertions with messages a learner can act on."""

from __future__ import annotations

from typing import Any

import torch

from grader._messages import shape_mismatch, value_mismatch

# (rtol, atol) per dtype, as torch.testing.assert_close documents them.
_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


# Tensor types a result may have. A subclass of the submission's own could override arithmetic,
# comparisons or properties such as ``is_meta`` that the checks below rely on.
_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter, *(
    (torch.nn.Buffer,) if isinstance(getattr(torch.nn, "Buffer", None), type) else ()))


def assert_tensor(value: Any, *, name: str = "result") -> torch.Tensor:
    """Assert ``value`` is a plain ``torch.Tensor`` (or ``nn.Parameter``) and return it."""
    if not isinstance(value, torch.Tensor):
        raise AssertionError(f"{name}: expected a torch.Tensor, got {type(value).__name__}")
    if type(value) not in _PLAIN_TENSOR_TYPES:
        raise AssertionError(f"{name}: expected a plain torch.Tensor, got the subclass "
                             f"{type(value).__name__}")
    return value


def assert_shape(actual: torch.Tensor, shape: tuple[int, ...], *, name: str = "result") -> None:
    assert_tensor(actual, name=name)
    if tuple(actual.shape) != tuple(shape):
        raise AssertionError(shape_mismatch(name, tuple(actual.shape), tuple(shape)))


def assert_device(actual: torch.Tensor, device: torch.device | str, *, name: str = "result") -> None:
    """The tensor must live on ``device`` (type, and index when ``device`` names one)."""
    assert_tensor(actual, name=name)
    want = torch.device(device)
    got = actual.device
    if got.type != want.type or (want.index is not None and got.index != want.index):
        raise AssertionError(f"{name}: on device {got}, expected {want} "
                             "(outputs must stay on the inputs' device)")


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None,
                 atol: float | None = None, name: str = "result", check_dtype: bool = True,
                 check_device: bool = True, equal_nan: bool = False) -> None:
    """Assert two tensors agree, like ``torch.testing.assert_close`` but with a readable message.

    ``expected`` may be a tensor or anything ``torch.as_tensor`` accepts. Checks, in order: type,
    shape, dtype (``check_dtype``), device (``check_device``), then values within
    ``atol + rtol * |expected|`` (defaults by dtype as in torch.testing). On failure the message
    names ``name``, how many values differ, the largest error, where it is and both values.
    Values of meta tensors are not compared.
    """
    actual = assert_tensor(actual, name=name)
    if not isinstance(expected, torch.Tensor):
        expected = torch.as_tensor(expected, dtype=actual.dtype if not check_dtype else None)
    assert_shape(actual, tuple(expected.shape), name=name)
    if check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(f"{name}: dtype {actual.dtype}, expected {expected.dtype}")
    if check_device:
        assert_device(actual, expected.device, name=name)
    if actual.is_meta or expected.is_meta:
        return
    dtype = expected.dtype if expected.dtype in _TOLERANCES else actual.dtype
    default_rtol, default_atol = _TOLERANCES.get(dtype, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a = actual.detach().to("cpu", torch.complex128 if actual.is_complex() else torch.float64)
    e = expected.detach().to("cpu", a.dtype)
    err = (a - e).abs()
    bad = err > atol + rtol * e.abs()
    nan_a, nan_e = a.isnan(), e.isnan()
    bad |= nan_a ^ nan_e if equal_nan else (nan_a | nan_e)
    bad |= (a.isinf() | e.isinf()) & (a != e)  # an infinite tolerance must not excuse a finite value
    if not bool(bad.any()):
        return
    count, total = int(bad.sum()), bad.numel()
    err = torch.where(bad, err.nan_to_num(nan=float("inf")), torch.zeros_like(err))
    flat = int(err.reshape(-1).argmax()) if err.numel() else 0
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), bad.shape)) if bad.dim() else ()
    got, want = a[index].item() if a.dim() else a.item(), e[index].item() if e.dim() else e.item()
    raise AssertionError(value_mismatch(name, count=count, total=total, rtol=rtol, atol=atol,
                                        index=index, got=got, expected=want))
