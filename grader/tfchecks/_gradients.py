"""Gradient checks against finite differences, in float64, with learner-readable failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grader.tfchecks._env import VARIABLES, as_numpy, dtype_of, np, tf


def _is_float(x: Any) -> bool:
    if isinstance(x, (tf.Tensor, *VARIABLES)):
        return dtype_of(x).is_floating
    if isinstance(x, (float, list, tuple, np.ndarray)):
        try:
            return np.issubdtype(np.asarray(x).dtype, np.floating)
        except ValueError:  # ragged nesting: not an array
            return False
    return False


def _float_outputs(out: Any) -> list[int]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [k for k, o in enumerate(outs) if isinstance(o, (tf.Tensor, *VARIABLES)) and dtype_of(o).is_floating]


def _pick(out: Any, k: int) -> Any:
    return out[k] if isinstance(out, (tuple, list)) else out


def check_gradients(fn: Callable[..., Any], *inputs: Any, name: str = "function", delta: float = 1e-6,
                    rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Check ``fn``'s gradients w.r.t. every floating input against central finite differences.

    Floating inputs (tensors, arrays, floats) become float64 tensors first, so the learner's code
    must accept float64; other inputs are passed through unchanged and not differentiated. ``fn``
    may return one tensor or a tuple/list (each floating tensor in it is checked). Uses
    ``tf.test.compute_gradient``; the Jacobians must agree within ``atol + rtol * |numerical|``.
    Raises ``AssertionError`` naming the output, input and element whose gradient is wrong, the
    largest error, or that no gradient reaches an input (all zeros where finite differences are not).
    """
    args = [tf.constant(as_numpy(x, name=f"{name} input {i}"), tf.float64) if _is_float(x) else x
            for i, x in enumerate(inputs)]
    diff = [i for i, x in enumerate(args) if _is_float(x)]
    if not diff:
        raise AssertionError(f"{name}: no floating-point input to differentiate")

    def call(*xs: tf.Tensor) -> Any:
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        return fn(*full)

    try:
        first = call(*(args[i] for i in diff))
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's code may raise on float64
        raise AssertionError(f"{name}: calling it with float64 inputs raised "
                             f"{type(exc).__name__}: {exc!s:.300}") from None
    outs = _float_outputs(first)
    if not outs:
        raise AssertionError(f"{name}: returned no floating-point tensor to differentiate")
    worst = None
    for k in outs:
        try:
            theoretical, numerical = tf.test.compute_gradient(
                lambda *xs, k=k: _pick(call(*xs), k), [args[i] for i in diff], delta=delta)
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's gradient code may raise
            raise AssertionError(f"{name}: computing gradients raised {type(exc).__name__}: "
                                 f"{exc!s:.300}") from None
        for pos, (t, n) in enumerate(zip(theoretical, numerical)):
            t, n = np.asarray(t, np.float64), np.asarray(n, np.float64)
            if not t.size:
                continue
            excess = np.abs(t - n) - (atol + rtol * np.abs(n))
            excess = np.where(np.isnan(excess), np.inf, excess)
            row, col = divmod(int(np.argmax(excess)), t.shape[1])
            if excess[row, col] > 0 and (worst is None or excess[row, col] > worst[0]):
                unconnected = not t.any() and n.any()
                worst = (excess[row, col], k, diff[pos], row, col, t[row, col], n[row, col],
                         unconnected, float(np.nanmax(np.abs(t - n))))
    if worst is None:
        return
    _, k, i, row, col, t, n, unconnected, max_err = worst
    output = f"output {k}" if isinstance(first, (tuple, list)) else "the output"
    out_shape, in_shape = tuple(_pick(first, k).shape), tuple(args[i].shape)
    row = tuple(int(r) for r in np.unravel_index(row, out_shape)) if out_shape else ()
    col = tuple(int(c) for c in np.unravel_index(col, in_shape)) if in_shape else ()
    if unconnected:
        raise AssertionError(f"{name}: no gradient flows from {output} to input {i} (the tape "
                             "returns zeros or None), but finite differences are not zero: is the "
                             "computation leaving TensorFlow (.numpy(), Python floats), stopped "
                             "(tf.stop_gradient), or done outside the tape?")
    raise AssertionError(f"{name}: gradient of {output} at index {row} with respect to input {i} "
                         f"at index {col} is {t:.6g}, but finite differences give {n:.6g} "
                         f"(largest error {max_err:.3g}, rtol={rtol:g}, atol={atol:g})")


def central_differences(fn: Callable[..., Any], x: Any, eps: float = 1e-6) -> np.ndarray:
    """The gradient of ``sum(fn(...))`` with respect to ``x`` by central differences, shaped like ``x``.

    The same quantity ``tape.gradient(fn(...), x)`` returns. If ``x`` is a ``tf.Variable`` or a
    ``keras.Variable`` (for example a layer's weight), ``fn`` takes no arguments and reads it: each
    element is nudged with ``assign`` and the Variable is restored afterwards. Otherwise ``fn(x)`` is called with
    perturbed copies of ``x``. Use float64 values: in float32, ``eps`` is lost to round-off.
    """
    base = as_numpy(x, name="x").copy()
    grad = np.zeros(base.shape, np.float64)

    def total(value: np.ndarray) -> float:
        if isinstance(x, VARIABLES):
            x.assign(value.astype(dtype_of(x).as_numpy_dtype))
            out = fn()
        else:
            out = fn(tf.constant(value))
        return float(np.sum(as_numpy(out, name="output"), dtype=np.float64))

    try:
        for j in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[j] += eps
            minus[j] -= eps
            grad[j] = (total(plus) - total(minus)) / (2 * eps)
    finally:
        if isinstance(x, VARIABLES):
            x.assign(base)
    return grad
