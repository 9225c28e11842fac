"""Value, shape and dtype assertions for TensorFlow results, with messages a learner can act on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grader._messages import shape_mismatch, value_mismatch
from grader.tfchecks._env import VARIABLES, as_numpy, dtype_of, np, tf


def _shape_of(x: Any, name: str) -> tuple:
    if isinstance(x, (tf.Tensor, *VARIABLES)):
        shape = tf.TensorShape(x.shape)
        return tuple(shape.as_list()) if shape.rank is not None else None
    return tuple(as_numpy(x, name=name).shape)


def assert_shape(x: Any, shape: Sequence[int | None], *, name: str = "result") -> None:
    """``x`` (tensor, TensorFlow or Keras Variable, array) must have ``shape``; ``None`` in
    ``shape`` matches any size."""
    got = _shape_of(x, name)
    want = tuple(shape)
    if got is None or len(got) != len(want) or any(w is not None and g != w for g, w in zip(got, want)):
        raise AssertionError(shape_mismatch(name, got if got is not None else "(unknown rank)", want))


def assert_dtype(x: Any, dtype: Any, *, name: str = "result") -> None:
    """``x`` must have ``dtype`` (a ``tf.DType``, a NumPy dtype or a name such as ``"float32"``)."""
    want = tf.as_dtype(dtype)
    if isinstance(x, (tf.Tensor, *VARIABLES)):
        got = dtype_of(x)
    else:
        got = tf.as_dtype(as_numpy(x, name=name).dtype)
    if got != want:
        raise AssertionError(f"{name}: dtype {got.name}, expected {want.name}")


def assert_close(actual: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-6,
                 name: str = "result") -> None:
    """``actual`` must equal ``expected`` within ``atol + rtol * |expected|`` elementwise.

    Both may be tf.Tensor, tf.Variable or keras.Variable, NumPy arrays or Python numbers; values
    are compared in float64 (complex128 for complex). Shapes must match exactly (no broadcasting). NaN never
    equals anything, infinities only themselves. On failure the message names ``name``, how many
    values differ, the largest error, where it is and both values. Dtypes are not compared: use
    ``assert_dtype``.
    """
    a, e = as_numpy(actual, name=name), as_numpy(expected, name=f"{name} (expected)")
    if a.shape != e.shape:
        raise AssertionError(shape_mismatch(name, a.shape, e.shape))
    kind = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
    try:
        a, e = a.astype(kind), e.astype(kind)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{name}: values are not numbers ({exc!s:.150})") from None
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
        bad = ~(err <= atol + rtol * np.abs(e))  # NaN anywhere compares False: counted as bad
        bad |= np.isinf(a) & (a != e)
        bad &= ~(np.isinf(a) & (a == e))
    if not bad.any():
        return
    err = np.where(bad, np.nan_to_num(err, nan=np.inf), 0.0)
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), bad.shape)) if bad.ndim else ()
    got, want = a[index].item(), e[index].item()
    raise AssertionError(value_mismatch(name, count=int(bad.sum()), total=bad.size, rtol=rtol,
                                        atol=atol, index=index, got=got, expected=want))
