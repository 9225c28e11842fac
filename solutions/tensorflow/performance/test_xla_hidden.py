"""Hidden tests for tensorflow.performance.xla (the catalog's contract checks)."""

import math

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    check_gradients,
    retrace_counter,
    shapes,
)

DTYPES = {"float32": np.float32, "float64": np.float64}
# Error allowed relative to the size of the terms summed (|x| @ |w| + |b|): "float32 round-off"
# in both dtypes, since XLA's CPU erf is accurate to about 1e-8 even in float64 (measured: 5e-9
# absolute). The tanh approximation of GELU is off by up to 4.7e-4, far outside it.
TOLERANCE = {"float32": 2e-6, "float64": 2e-7}


def exact_gelu(z: np.ndarray) -> np.ndarray:
    """The exact GELU in float64, independent of TensorFlow: z * Phi(z) with math.erf."""
    return 0.5 * z * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(z / math.sqrt(2.0)))


def inputs(batch: tuple, n_in: int, n_out: int, dtype: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    np_dtype = DTYPES[dtype]
    return (rng.normal(0, 1.5, (*batch, n_in)).astype(np_dtype),
            rng.normal(0, 1.0, (n_in, n_out)).astype(np_dtype),
            rng.normal(0, 0.5, (n_out,)).astype(np_dtype))


def check_value(out, x, w, b, dtype: str, name: str) -> None:
    x64, w64, b64 = (np.asarray(a, np.float64) for a in (x, w, b))
    scale = np.abs(x64) @ np.abs(w64) + np.abs(b64)
    assert_shape(out, (*x.shape[:-1], w.shape[1]), name=name)
    assert_dtype(out, dtype, name=name)
    assert_close(out, exact_gelu(x64 @ w64 + b64), rtol=0, atol=TOLERANCE[dtype] * float(scale.max() + 1),
                 name=name)


def call(impl, x, w, b, dtype: str):
    return impl.dense_gelu(*(tf.constant(a, dtype) for a in (x, w, b)))


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=5, deadline=None)
@given(batch=shapes(min_dims=1, max_dims=3, max_side=4), n_in=st.integers(1, 6),
       n_out=st.integers(1, 5), seed=st.integers(0, 2**16))
@example(batch=(1,), n_in=1, n_out=1, seed=0)  # every size 1
@example(batch=(3, 2), n_in=5, n_out=3, seed=1)  # two batch dimensions
def test_dense_gelu_matches_the_exact_gelu_over_shapes(impl, dtype, batch, n_in, n_out, seed):
    x, w, b = inputs(batch, n_in, n_out, dtype, seed)
    check_value(call(impl, x, w, b, dtype), x, w, b, dtype,
                name=f"dense_gelu(x of shape {x.shape}, w of shape {w.shape}) in {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_gelu_not_the_tanh_approximation(impl, dtype):
    # One input feature, w = 1, b = 0: the result is gelu(z) itself, at points where the tanh
    # approximation is off by 1e-4 to 4.7e-4, and at 0 and far into both tails.
    z = np.array([[-30.0], [-3.0], [-2.7], [-1.5], [0.0], [1.0], [2.0], [2.7], [4.0], [30.0]])
    x, w, b = z.astype(DTYPES[dtype]), np.ones((1, 1), DTYPES[dtype]), np.zeros(1, DTYPES[dtype])
    out = call(impl, x, w, b, dtype)
    assert_close(out, exact_gelu(z), rtol=10 * TOLERANCE[dtype], atol=10 * TOLERANCE[dtype],
                 name=f"dense_gelu(z, w=[[1]], b=[0]) = gelu(z) at z = {z.ravel().tolist()} ({dtype}): "
                      "the exact GELU, 0.5 z (1 + erf(z / sqrt 2)), not its tanh approximation")


def test_equals_the_same_function_run_eagerly(impl):
    x, w, b = inputs((4, 3), 5, 6, "float32", seed=7)
    compiled = call(impl, x, w, b, "float32")
    tf.config.run_functions_eagerly(True)  # a jit_compile function then runs op by op, no XLA
    try:
        eager = call(impl, x, w, b, "float32")
    finally:
        tf.config.run_functions_eagerly(False)
    check_value(compiled, x, w, b, "float32", name="dense_gelu compiled by XLA")
    assert_close(compiled, eager, rtol=1e-5, atol=1e-6,
                 name="dense_gelu compiled by XLA, compared with the same function run eagerly")


@pytest.mark.points(2)
def test_compiler_ir_for_several_shapes_and_dtypes(impl):
    impl.dense_gelu(tf.ones((1, 1)), tf.ones((1, 1)), tf.zeros((1,)))  # works at all before its IR is read
    assert callable(getattr(impl.dense_gelu, "experimental_get_compiler_ir", None)), (
        "dense_gelu is not a tf.function: decorate it with @tf.function(jit_compile=True)")
    for batch, n_in, n_out, dtype in [((2,), 3, 4, "float32"), ((1,), 1, 1, "float32"),
                                      ((2, 3), 5, 2, "float64")]:
        x, w, b = (tf.constant(a) for a in inputs(batch, n_in, n_out, dtype))
        try:
            hlo = impl.dense_gelu.experimental_get_compiler_ir(x, w, b)(stage="hlo")
        except ValueError as exc:
            raise AssertionError(f"dense_gelu has no XLA compiler IR for x of shape {x.shape} "
                                 f"({dtype}): {str(exc).splitlines()[0][:200]} (is it a "
                                 "tf.function created with jit_compile=True?)") from None
        element = {"float32": "f32", "float64": "f64"}[dtype]
        want = f"{element}[{','.join(map(str, (*batch, n_out)))}]"
        assert isinstance(hlo, str) and hlo.startswith("HloModule") and want in hlo, (
            f"dense_gelu's HLO for x of shape {x.shape} ({dtype}) should be an HloModule with a "
            f"{want} result, got {hlo!r:.200}")


def test_seen_shapes_do_not_trace_again(impl):
    shapes_seen = [((2,), 3, 4, "float32"), ((5,), 3, 4, "float32"), ((2,), 3, 4, "float64")]
    args = [tuple(tf.constant(a) for a in inputs(*case)) for case in shapes_seen]
    for a in args:
        impl.dense_gelu(*a)
    counter = retrace_counter(impl.dense_gelu, name="dense_gelu")
    for a in args * 2:
        impl.dense_gelu(*a)
    assert counter() == 0, (
        f"dense_gelu traced {counter()} more time(s) when called again with shapes and dtypes it "
        "had already seen: define the tf.function once, at module level, not inside a call")


@pytest.mark.parametrize("batch", [(3,), (2, 2)], ids=["batch_2d", "batch_3d"])
def test_gradients_flow_to_x_w_and_b(impl, batch):
    x, w, b = inputs(batch, 3, 2, "float64", seed=3)
    check_value(call(impl, x, w, b, "float64"), x, w, b, "float64", name="dense_gelu in float64")
    check_gradients(impl.dense_gelu, x, w, b, name="dense_gelu")


def test_w_not_matching_x_raises_value_error_naming_w(impl):
    x, w, b = (tf.constant(a) for a in inputs((2,), 3, 4, "float32"))
    assert_raises_naming(ValueError, "w", impl.dense_gelu, x, tf.ones((4, 4)), b)


@pytest.mark.parametrize("b_shape", [(1,), (5,), (1, 4), ()], ids=["(1,)", "(5,)", "(1,4)", "scalar"])
def test_b_of_another_shape_raises_value_error_naming_b(impl, b_shape):
    # (1,), (1, 4) and a scalar would broadcast silently in x @ w + b.
    x, w, _ = (tf.constant(a) for a in inputs((2,), 3, 4, "float32"))
    assert_raises_naming(ValueError, "b", impl.dense_gelu, x, w, tf.ones(b_shape))


# ---- compiles_with_xla -------------------------------------------------------------------

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)


def supported(t):
    return tf.reduce_sum(tf.nn.relu(t) * 2.0, axis=-1)


def via_numpy(t):
    return tf.numpy_function(lambda a: (np.maximum(a, 0) * 2).sum(-1), [t], tf.float32)


FORMS = {
    "python_function": lambda f: f,
    "tf_function": tf.function,
    "tf_function_jit_compile": lambda f: tf.function(f, jit_compile=True),
    "tf_function_no_jit_compile": lambda f: tf.function(f, jit_compile=False),
}


def answer(impl, fn, *args) -> bool:
    result = impl.compiles_with_xla(fn, *args)
    assert isinstance(result, bool), (
        f"compiles_with_xla must return a Python bool, got {type(result).__name__}: {result!r:.100}")
    return result


@pytest.mark.points(2)
@pytest.mark.parametrize("form", FORMS)
def test_answers_true_and_false_for_every_form_of_fn(impl, form):
    make = FORMS[form]
    assert answer(impl, make(supported), tf.constant(X)) is True, (
        f"compiles_with_xla(relu(t) * 2 summed, given as a {form}) should be True: XLA compiles it")
    assert answer(impl, make(via_numpy), tf.constant(X)) is False, (
        f"compiles_with_xla(tf.numpy_function(...), given as a {form}) should be False: XLA has no "
        "kernel for it (the function runs eagerly or in a plain graph, but it does not compile)")


UNSUPPORTED = {
    "py_function": lambda t: tf.py_function(lambda a: a * 2.0, [t], tf.float32),
    "numpy_function": via_numpy,
    "strings": lambda t: tf.strings.length(tf.strings.as_string(t)),
    "print": lambda t: (tf.print(t), t * 2.0)[1],
    "determinant": lambda t: tf.linalg.det(tf.eye(3) + tf.matmul(t, t, transpose_a=True)),
}
SUPPORTED_TWIN = {
    "py_function": lambda t: t * 2.0,
    "numpy_function": supported,
    "strings": lambda t: tf.cast(tf.abs(t) > 1.0, tf.int32),
    "print": lambda t: t * 2.0,
    "determinant": lambda t: tf.linalg.inv(tf.eye(3) + tf.matmul(t, t, transpose_a=True)),
}


@pytest.mark.parametrize("op", UNSUPPORTED)
def test_an_op_without_an_xla_kernel_answers_false(impl, op):
    assert answer(impl, SUPPORTED_TWIN[op], tf.constant(X)) is True, (
        f"compiles_with_xla should be True for the {op} case's compilable twin")
    assert answer(impl, UNSUPPORTED[op], tf.constant(X)) is False, (
        f"compiles_with_xla should be False for a function using {op}: XLA has no kernel for it on CPU")


@pytest.mark.parametrize("kind", ["numpy_array", "python_number"])
def test_takes_numpy_arrays_and_python_numbers(impl, kind):
    args = (X,) if kind == "numpy_array" else (3.0,)
    assert answer(impl, lambda t: tf.nn.relu(t) * 2.0, *args) is True, (
        f"compiles_with_xla(relu(t) * 2, t as a {kind}) should be True")
    assert answer(impl, lambda t: tf.py_function(lambda a: a, [t], tf.float32), *args) is False, (
        f"compiles_with_xla(tf.py_function(...), t as a {kind}) should be False")


def test_answers_without_running_fn(impl):
    counter = tf.Variable(0.0)

    def bump(t):
        counter.assign_add(1.0)
        return t + counter

    def bump_via_numpy(t):
        counter.assign_add(1.0)
        return via_numpy(t) + counter

    assert answer(impl, bump, tf.constant(X)) is True, (
        "compiles_with_xla(fn that adds to a Variable) should be True: XLA compiles assign_add")
    assert answer(impl, bump_via_numpy, tf.constant(X)) is False, (
        "compiles_with_xla(fn that adds to a Variable and calls tf.numpy_function) should be False")
    assert counter.numpy() == 0.0, (
        "compiles_with_xla ran fn (a Variable it assigns to changed): it must only trace and compile "
        "fn, e.g. through experimental_get_compiler_ir, never call it")


@pytest.mark.parametrize("bug", ["shape_mismatch", "type_error"])
def test_errors_of_fn_itself_propagate(impl, bug):
    error = ValueError if bug == "shape_mismatch" else TypeError

    def buggy(t):
        if bug == "type_error":
            raise TypeError("a bug in fn")
        return tf.matmul(t, tf.ones((5, 2)))  # t has 3 columns: a ValueError while tracing

    try:
        result = impl.compiles_with_xla(buggy, tf.constant(X))
    except error as exc:
        assert bug != "type_error" or "a bug in fn" in str(exc), (
            f"compiles_with_xla raised TypeError, but not fn's own error: {exc!s:.200}")
    else:
        raise AssertionError(
            f"compiles_with_xla returned {result!r} for a function that raises {error.__name__} "
            f"while being traced ({bug.replace('_', ' ')}): an error of fn's own must propagate, "
            "it is not an answer about XLA")
