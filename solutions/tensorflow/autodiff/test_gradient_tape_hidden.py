"""Hidden tests for tensorflow.autodiff.gradient_tape (the catalog's contract checks)."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    central_differences,
    shapes,
    tf_tensors,
)

# Scalar functions of any shape; the Hessians of the last three are not diagonal, which is what
# separates a true H v from the row sums of H times v.
FUNCTIONS = {
    "sum(sin(x) * x)": lambda x: tf.reduce_sum(tf.sin(x) * x),
    "logsumexp(x)": lambda x: tf.reduce_logsumexp(x),
    "sum(x)**2 + sum(x**3)": lambda x: tf.reduce_sum(x) ** 2 + tf.reduce_sum(x ** 3),
    "sum(x**2) * sum(cos(x))": lambda x: tf.reduce_sum(x ** 2) * tf.reduce_sum(tf.cos(x)),
}
f_names = st.sampled_from(sorted(FUNCTIONS))


def _tensor(out, like: tf.Tensor, name: str) -> tf.Tensor:
    if out is None:
        raise AssertionError(f"{name} returned None: a tape gives None for a source it did not "
                             "watch or that the target does not depend on; the contract asks for a "
                             "tensor (zeros where there is no dependence)")
    assert isinstance(out, tf.Tensor), f"{name}: expected a tf.Tensor, got {type(out).__name__}"
    assert_shape(out, tuple(like.shape), name=name)
    assert_dtype(out, like.dtype, name=name)
    return out


def _numerical_jacobian(fn, x: tf.Tensor) -> np.ndarray:
    _, (numerical,) = tf.test.compute_gradient(fn, [x], delta=1e-6)
    return numerical


@pytest.mark.points(2)
@settings(max_examples=10)
@given(x=tf_tensors(shapes(max_dims=3, max_side=3)), f_name=f_names)
def test_gradient_of_a_constant_matches_compute_gradient(impl, x, f_name):
    name = f"gradient({f_name}, x of shape {tuple(x.shape)})"
    out = _tensor(impl.gradient(FUNCTIONS[f_name], x), x, name)
    expected = _numerical_jacobian(FUNCTIONS[f_name], x).reshape(x.shape)
    assert_close(out, expected, rtol=1e-5, atol=1e-6, name=name)


def test_gradient_of_a_non_scalar_is_the_gradient_of_its_sum(impl):
    x = tf.constant([[0.5, -1.0], [2.0, 0.25]], tf.float64)
    out = _tensor(impl.gradient(lambda t: t ** 3, x), x, "gradient(x**3, x) (non-scalar f)")
    assert_close(out, 3 * x ** 2, rtol=1e-12, atol=0, name="gradient(x**3, x) (non-scalar f)")


def test_gradient_of_a_variable(impl):
    var = tf.Variable([1.0, 2.0, -3.0], dtype=tf.float64)
    out = _tensor(impl.gradient(lambda t: tf.reduce_sum(tf.exp(t)), var), var, "gradient(sum(exp(v)), v)")
    assert_close(out, tf.exp(var), rtol=1e-12, atol=0, name="gradient(sum(exp(v)), v) for a Variable v")


def test_gradient_is_zero_where_f_does_not_depend_on_x(impl):
    x = tf.constant([[1.0, 2.0]], tf.float64)
    name = "gradient(f, x) for an f that ignores x"
    out = _tensor(impl.gradient(lambda t: tf.constant(3.0, tf.float64), x), x, name)
    assert_close(out, np.zeros((1, 2)), rtol=0, atol=0, name=name)
    name = "gradient(x[0, 0] ** 2, x)"
    out = _tensor(impl.gradient(lambda t: t[0, 0] ** 2, x), x, name)
    assert_close(out, [[2.0, 0.0]], rtol=1e-12, atol=0, name=name)


@pytest.mark.points(3)
@settings(max_examples=8)
@given(shape=shapes(max_dims=2, max_side=4), f_name=f_names, seed=st.integers(0, 2**16))
def test_hessian_vector_product_matches_finite_differences(impl, shape, f_name, seed):
    rng = np.random.default_rng(seed)
    x, v = (tf.constant(rng.standard_normal(shape)) for _ in range(2))
    f = FUNCTIONS[f_name]

    def true_gradient(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = f(t)
        return tape.gradient(y, t)

    hessian = _numerical_jacobian(true_gradient, x)  # rows: d grad_i, columns: d x_j
    expected = (hessian @ v.numpy().reshape(-1)).reshape(shape)
    name = f"hessian_vector_product({f_name}, x and v of shape {shape})"
    out = _tensor(impl.hessian_vector_product(f, x, v), x, name)
    assert_close(out, expected, rtol=1e-5, atol=1e-6, name=name)


def test_hessian_vector_product_of_a_linear_function_is_zero(impl):
    x, v = tf.constant([1.0, 2.0], tf.float64), tf.constant([0.5, -1.0], tf.float64)
    name = "hessian_vector_product(sum(3 * x), x, v)"
    out = _tensor(impl.hessian_vector_product(lambda t: tf.reduce_sum(3.0 * t), x, v), x, name)
    assert_close(out, [0.0, 0.0], rtol=0, atol=0, name=name)


def test_hessian_vector_product_of_a_variable(impl):
    var = tf.Variable([0.5, -1.0, 2.0], dtype=tf.float64)
    v = tf.constant([1.0, 2.0, -0.5], tf.float64)
    # f = sum(x)**2 + sum(x**3): H = 2 * ones + diag(6 x), so H v = 2 sum(v) + 6 x v.
    name = "hessian_vector_product(sum(x)**2 + sum(x**3), x, v) for a Variable x"
    out = _tensor(impl.hessian_vector_product(FUNCTIONS["sum(x)**2 + sum(x**3)"], var, v), var, name)
    assert_close(out, 2 * np.sum(v) + 6 * var.numpy() * v.numpy(), rtol=1e-12, atol=1e-12, name=name)


@pytest.mark.parametrize("v_shape", [(3,), (1, 4), (4,), (2, 2, 1)],
                         ids=["fewer_values", "same_size_wrong_shape", "flat", "extra_dim"])
def test_hessian_vector_product_rejects_a_v_of_another_shape(impl, v_shape):
    # x is (2, 2): (1, 4), (4,) and (2, 2, 1) hold as many values but are another shape.
    x = tf.constant([[1.0, 2.0], [0.5, -1.0]], tf.float64)
    assert_raises_naming(ValueError, "v", impl.hessian_vector_product, FUNCTIONS["logsumexp(x)"],
                         x, tf.ones(v_shape, tf.float64))


class _Recording(tf.keras.Model):
    """Two Dense layers, one weight the output never uses and a non-trainable weight the output
    uses; records each call's training flag."""

    def __init__(self):
        super().__init__(dtype="float64")
        self.hidden = tf.keras.layers.Dense(3, activation="tanh", dtype="float64")
        self.head = tf.keras.layers.Dense(2, dtype="float64")
        self.unused = self.add_weight(shape=(2,), initializer="ones", name="unused", dtype="float64")
        self.frozen = self.add_weight(shape=(2,), initializer="ones", name="frozen", dtype="float64",
                                      trainable=False)
        self.training_flags = []

    def call(self, x, training=None):
        self.training_flags.append(training)
        return self.head(self.hidden(x)) * self.frozen


def _model_and_input(seed: int = 0):
    tf.keras.utils.set_random_seed(seed)
    model = _Recording()
    x = tf.constant(np.random.default_rng(seed).standard_normal((5, 4)))
    model(x)  # build the weights
    model.training_flags.clear()
    return model, x


def _grads(impl, model, x):
    result = impl.two_losses_grads(model, x)
    assert isinstance(result, (tuple, list)) and len(result) == 2, (
        f"two_losses_grads must return a pair (grads_a, grads_b), got {type(result).__name__}")
    n = len(model.trainable_variables)
    for which, grads in zip("ab", result):
        assert len(grads) == n, (f"two_losses_grads: grads_{which} has {len(grads)} entries, expected "
                                 f"{n} (one per model.trainable_variables)")
        for var, g in zip(model.trainable_variables, grads):
            _tensor(g, var, f"two_losses_grads: grads_{which} for variable {var.path}")
    return result


@pytest.mark.points(2)
def test_two_losses_grads_match_finite_differences(impl):
    model, x = _model_and_input(1)
    grads_a, grads_b = _grads(impl, model, x)
    losses = {"a": lambda: tf.reduce_mean(tf.square(model(x, training=True))),
              "b": lambda: tf.reduce_mean(model(x, training=True))}
    for which, grads in (("a", grads_a), ("b", grads_b)):
        for var, g in zip(model.trainable_variables, grads):
            assert_close(g, central_differences(losses[which], var), rtol=1e-5, atol=1e-7,
                         name=f"two_losses_grads: grads_{which} for variable {var.path}")


def test_two_losses_grads_one_forward_pass_in_training_mode(impl):
    model, x = _model_and_input(2)
    _grads(impl, model, x)
    flags = model.training_flags
    assert len(flags) == 1, (f"two_losses_grads called the model {len(flags)} times; one forward "
                             "pass recorded on one persistent tape serves both losses")
    assert flags[0] is True, (f"two_losses_grads called the model with training={flags[0]!r}; "
                              "gradients for training need training=True")


def test_two_losses_grads_zeros_for_an_unused_variable(impl):
    model, x = _model_and_input(3)
    grads_a, grads_b = _grads(impl, model, x)
    index = next(i for i, v in enumerate(model.trainable_variables) if v is model.unused)
    for which, grads in (("a", grads_a), ("b", grads_b)):
        assert_close(grads[index], np.zeros(2), rtol=0, atol=0,
                     name=f"two_losses_grads: grads_{which} for a variable the output does not use")
