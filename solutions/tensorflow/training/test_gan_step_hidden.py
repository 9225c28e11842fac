"""Hidden tests for tensorflow.training.gan_step (the catalog's contract checks)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_raises_naming,
    assert_shape,
    central_differences,
    shapes,
)

LR_G, LR_D = 0.25, 0.125  # exact in float32, and different: an optimizer used for the wrong network shows
NOISE_SEED = 11
NOISE_BATCH, NOISE_DIM = 4096, 2
NOISE_MEAN_TOL, NOISE_STD_TOL = 0.06, 0.05  # 5.4 and 6.4 standard deviations of the statistics


class NoiseRecorder:
    """Records every noise batch a generator receives, in a Variable (works inside a tf.function
    too), and the ``training`` flag of each call (at trace time inside a tf.function)."""

    def __init__(self, batch: int, noise_dim: int, capacity: int = 4):
        self.buffer = tf.Variable(tf.zeros((capacity, batch, noise_dim), tf.float64))
        self.calls = tf.Variable(0)

    def record(self, z):
        index = tf.minimum(self.calls.read_value(), self.buffer.shape[0] - 1)
        self.buffer.scatter_nd_update([[index]], [tf.cast(z, tf.float64)])
        self.calls.assign_add(1)

    def noises(self) -> np.ndarray:
        return self.buffer.numpy()[:int(self.calls.numpy())]


class Probe(keras.layers.Layer):
    """Identity layer that records the ``training`` flag it is called with, and passes its input
    to ``recorder`` when one is given."""

    def __init__(self, recorder: NoiseRecorder | None = None, **kwargs):
        super().__init__(**kwargs)
        self.recorder = [recorder]  # in a list: Keras does not track what is inside
        self.flags = []

    def call(self, x, training=None):
        self.flags.append(training)
        if self.recorder[0] is not None:
            self.recorder[0].record(x)
        return x


def mlp(in_shape, out_shape, *, hidden: int, seed: int, dtype: str = "float64", probe=None):
    """A small tanh MLP from ``in_shape`` to ``out_shape`` (Flatten and Reshape as needed)."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input(tuple(in_shape), dtype=dtype)
    h = inputs if probe is None else probe(inputs)
    if len(in_shape) > 1:
        h = keras.layers.Flatten(dtype=dtype)(h)
    h = keras.layers.Dense(hidden, activation="tanh", bias_initializer="random_normal", dtype=dtype)(h)
    h = keras.layers.Dense(math.prod(out_shape), bias_initializer="random_normal", dtype=dtype)(h)
    if len(out_shape) > 1:
        h = keras.layers.Reshape(tuple(out_shape), dtype=dtype)(h)
    return keras.Model(inputs, h)


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def reference_losses(generator, discriminator, real, noise) -> tuple[float, float]:
    """d_loss and g_loss in float64 NumPy from the networks' logits: BCE(1, l) = softplus(-l),
    BCE(0, l) = softplus(l)."""
    real_logits = np.asarray(discriminator(real, training=True), np.float64)
    fake_logits = np.asarray(discriminator(generator(noise, training=True), training=True), np.float64)
    d_loss = softplus(-real_logits).mean() + softplus(fake_logits).mean()
    return d_loss, softplus(-fake_logits).mean()


def snapshot(model) -> list[np.ndarray]:
    return [v.numpy().copy() for v in model.trainable_variables]


def run_step(impl, generator, discriminator, g_opt, d_opt, real, noise_dim, noise=None):
    kwargs = {} if noise is None else {"noise": noise}
    out = impl.gan_train_step(generator, discriminator, g_opt, d_opt, real, noise_dim, **kwargs)
    assert isinstance(out, dict) and set(out) >= {"d_loss", "g_loss"}, (
        f"gan_train_step must return a dict with 'd_loss' and 'g_loss', got {out!r:.120}")
    losses = {}
    for key in ("d_loss", "g_loss"):
        value = tf.convert_to_tensor(out[key])
        assert value.shape == () and value.dtype.is_floating, (
            f"gan_train_step: {key} must be a scalar float tensor, got shape {tuple(value.shape)} "
            f"dtype {value.dtype.name}")
        losses[key] = float(value)
    return losses


CASES = {
    "vector_samples": dict(batch=5, noise_dim=3, sample_shape=(2,)),
    "batch_of_one_matrix_samples": dict(batch=1, noise_dim=2, sample_shape=(2, 2)),
}


@pytest.mark.points(4)
@pytest.mark.parametrize("case", list(CASES))
def test_one_step_matches_finite_difference_reference(impl, case):
    batch, noise_dim, sample_shape = CASES[case].values()
    generator = mlp((noise_dim,), sample_shape, hidden=4, seed=1)
    discriminator = mlp(sample_shape, (1,), hidden=4, seed=2)
    rng = np.random.default_rng(3)
    real = tf.constant(rng.standard_normal((batch, *sample_shape)))
    noise = tf.constant(rng.standard_normal((batch, noise_dim)))
    d_loss, g_loss = reference_losses(generator, discriminator, real, noise)
    # Independent reference: the gradients of the two losses at the parameters before the step, by
    # central differences in float64 (each Variable nudged in place and restored).
    d_grads = [central_differences(lambda: reference_losses(generator, discriminator, real, noise)[0], v)
               for v in discriminator.trainable_variables]
    g_grads = [central_differences(lambda: reference_losses(generator, discriminator, real, noise)[1], v)
               for v in generator.trainable_variables]
    g_before, d_before = snapshot(generator), snapshot(discriminator)
    losses = run_step(impl, generator, discriminator, keras.optimizers.SGD(LR_G),
                      keras.optimizers.SGD(LR_D), real, noise_dim, noise=noise)
    what = f"one step with batch {batch}, noise_dim {noise_dim}, samples {sample_shape}"
    # float32-level tolerances: the docstring allows Keras' BinaryCrossentropy, which computes in float32.
    assert_close(losses["d_loss"], d_loss, rtol=1e-5, atol=1e-6,
                 name=f"d_loss of {what} (BCE(1, D(real)) + BCE(0, D(fake)), before the update)")
    assert_close(losses["g_loss"], g_loss, rtol=1e-5, atol=1e-6,
                 name=f"g_loss of {what} (non-saturating BCE(1, D(fake)), before the update)")
    for k, (v, before, grad) in enumerate(zip(discriminator.trainable_variables, d_before, d_grads)):
        assert_close(v.numpy() - before, -LR_D * grad, rtol=1e-3, atol=1e-7,
                     name=f"discriminator variable {k} ({v.path}): its update in {what}, expected "
                          f"-lr_d * d(d_loss)/d(variable)")
    for k, (v, before, grad) in enumerate(zip(generator.trainable_variables, g_before, g_grads)):
        assert_close(v.numpy() - before, -LR_G * grad, rtol=1e-3, atol=1e-7,
                     name=f"generator variable {k} ({v.path}): its update in {what}, expected "
                          f"-lr_g * d(g_loss)/d(variable) at the discriminator from before the step")


@pytest.mark.points(2)
@pytest.mark.parametrize("frozen", ["discriminator", "generator"])
def test_each_update_leaves_the_other_network_untouched(impl, frozen):
    generator = mlp((2,), (3,), hidden=5, seed=4)
    discriminator = mlp((3,), (1,), hidden=5, seed=5)
    real = tf.constant(np.random.default_rng(6).standard_normal((6, 3)))
    # The frozen network's own optimizer has learning rate 0: only the other update could move it.
    g_opt = keras.optimizers.SGD(0.0 if frozen == "generator" else LR_G)
    d_opt = keras.optimizers.SGD(0.0 if frozen == "discriminator" else LR_D)
    models = {"generator": generator, "discriminator": discriminator}
    before = {name: snapshot(m) for name, m in models.items()}
    run_step(impl, generator, discriminator, g_opt, d_opt, real, 2)
    moving = "generator" if frozen == "discriminator" else "discriminator"
    for k, (v, old) in enumerate(zip(models[frozen].trainable_variables, before[frozen])):
        assert np.array_equal(v.numpy(), old), (
            f"gan_train_step with the {frozen}'s optimizer at learning rate 0 changed {frozen} "
            f"variable {k} ({v.path}): the {moving}'s update must leave the {frozen} untouched "
            f"(gradients of each loss with respect to its own network's variables only)")
    assert any(not np.array_equal(v.numpy(), old)
               for v, old in zip(models[moving].trainable_variables, before[moving])), (
        f"gan_train_step did not update the {moving} (its optimizer has a learning rate > 0)")
    for name, opt in (("g_opt", g_opt), ("d_opt", d_opt)):
        assert int(opt.iterations.numpy()) == 1, (
            f"after one gan_train_step {name} has applied {int(opt.iterations.numpy())} updates; "
            "each optimizer applies exactly one per call")


@pytest.mark.points(2)
@settings(max_examples=4, deadline=None)
@given(batch=st.integers(1, 6), noise_dim=st.integers(1, 4),
       sample_shape=shapes(min_dims=1, max_dims=2, max_side=3))
@example(batch=1, noise_dim=1, sample_shape=(1,))  # the smallest of everything
@example(batch=3, noise_dim=2, sample_shape=(2, 3))  # samples that are matrices
def test_drawn_shapes_give_finite_losses_and_noise_of_shape_batch_noise_dim(impl, batch, noise_dim, sample_shape):
    recorder = NoiseRecorder(batch, noise_dim)
    generator = mlp((noise_dim,), sample_shape, hidden=3, seed=7, dtype="float32", probe=Probe(recorder))
    discriminator = mlp(sample_shape, (1,), hidden=3, seed=8, dtype="float32")
    real = tf.constant(np.random.default_rng(9).standard_normal((batch, *sample_shape)), tf.float32)
    shapes_before = [tuple(v.shape) for v in (*generator.trainable_variables, *discriminator.trainable_variables)]
    losses = run_step(impl, generator, discriminator, keras.optimizers.Adam(1e-2), keras.optimizers.Adam(1e-2),
                      real, noise_dim)
    what = f"gan_train_step with real {(batch, *sample_shape)} and noise_dim {noise_dim}"
    assert all(math.isfinite(v) for v in losses.values()), f"{what}: losses are not finite: {losses}"
    assert len(recorder.noises()) >= 1, f"{what}: the generator was never called"
    assert_shape(recorder.noises()[0], (batch, noise_dim), name=f"{what}: the noise the generator received")
    shapes_after = [tuple(v.shape) for v in (*generator.trainable_variables, *discriminator.trainable_variables)]
    assert shapes_after == shapes_before, f"{what}: variable shapes changed from {shapes_before} to {shapes_after}"
    for v in (*generator.trainable_variables, *discriminator.trainable_variables):
        assert np.all(np.isfinite(v.numpy())), f"{what}: variable {v.path} is not finite after the step"


def draw_noise(impl, seed: int = NOISE_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Two steps with ``noise=None`` on a batch of NOISE_BATCH: the noise batches the generator
    received in each (every call of the generator within a step, stacked)."""
    tf.random.set_seed(seed)
    recorder = NoiseRecorder(NOISE_BATCH, NOISE_DIM)
    generator = mlp((NOISE_DIM,), (1,), hidden=2, seed=seed, dtype="float32", probe=Probe(recorder))
    discriminator = mlp((1,), (1,), hidden=2, seed=seed + 1, dtype="float32")
    real = tf.zeros((NOISE_BATCH, 1))
    steps = []
    for _ in range(2):
        start = int(recorder.calls.numpy())
        run_step(impl, generator, discriminator, keras.optimizers.SGD(0.0), keras.optimizers.SGD(0.0),
                 real, NOISE_DIM)
        steps.append(recorder.noises()[start:])
    return steps[0], steps[1]


def noise_deviations(noise: np.ndarray) -> tuple[float, float]:
    """|mean| and |std - 1| of one noise batch."""
    return abs(float(noise.mean())), abs(float(noise.std()) - 1.0)


def test_noise_is_one_fresh_standard_normal_batch_per_step(impl):
    first, second = draw_noise(impl)
    for step, calls in (("first", first), ("second", second)):
        assert len(calls) >= 1, f"the generator was not called in the {step} step"
        assert all(np.array_equal(c, calls[0]) for c in calls[1:]), (
            f"the {step} step called the generator {len(calls)} times with different noise; one "
            "noise batch serves both losses")
    mean_dev, std_dev = noise_deviations(first[0])
    assert mean_dev < NOISE_MEAN_TOL and std_dev < NOISE_STD_TOL, (
        f"the noise drawn when noise=None has mean {first[0].mean():.3f} and standard deviation "
        f"{first[0].std():.3f} over {first[0].size} values; tf.random.normal gives 0 and 1")
    assert not np.array_equal(first[0], second[0]), (
        "two steps with noise=None used the same noise: each step draws a fresh batch")


def test_given_noise_is_what_the_generator_receives(impl):
    recorder = NoiseRecorder(3, 2)
    generator = mlp((2,), (2,), hidden=3, seed=12, dtype="float32", probe=Probe(recorder))
    discriminator = mlp((2,), (1,), hidden=3, seed=13, dtype="float32")
    noise = tf.constant(np.random.default_rng(14).standard_normal((3, 2)), tf.float32)
    run_step(impl, generator, discriminator, keras.optimizers.SGD(LR_G), keras.optimizers.SGD(LR_D),
             tf.ones((3, 2)), 2, noise=noise)
    assert len(recorder.noises()) >= 1, "the generator was never called"
    for received in recorder.noises():
        assert_close(received, noise, rtol=0, atol=0, name="the noise the generator received when noise= is given")


def test_both_networks_run_in_training_mode(impl):
    g_probe, d_probe = Probe(), Probe()
    generator = mlp((2,), (2,), hidden=3, seed=15, dtype="float32", probe=g_probe)
    discriminator = mlp((2,), (1,), hidden=3, seed=16, dtype="float32", probe=d_probe)
    g_probe.flags.clear()
    d_probe.flags.clear()
    run_step(impl, generator, discriminator, keras.optimizers.SGD(LR_G), keras.optimizers.SGD(LR_D),
             tf.ones((4, 2)), 2)
    for name, probe in (("generator", g_probe), ("discriminator", d_probe)):
        assert probe.flags, f"gan_train_step never called the {name}"
        bad = [f for f in probe.flags if f is not True]
        assert not bad, (f"gan_train_step called the {name} with training={bad[0]!r}; a training step "
                         "calls both networks with training=True (dropout, batch normalisation)")


def test_losses_are_stable_for_large_logits(impl):
    # The discriminator's logit is the sample itself; real samples score -150 and fakes +150 (a
    # discriminator that is confidently wrong): in float32, sigmoid(-150) rounds to 0 and
    # log(sigmoid(x)) written out gives infinity.
    discriminator = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="ones")])
    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(
        1, kernel_initializer="zeros", bias_initializer=keras.initializers.Constant(150.0))])
    real = tf.fill((4, 1), -150.0)
    losses = run_step(impl, generator, discriminator, keras.optimizers.SGD(1e-3), keras.optimizers.SGD(1e-3),
                      real, 2)
    # d_loss = softplus(150) + softplus(150) = 300 + 2e-65; g_loss = softplus(-150) = 7e-66.
    assert_close(losses["d_loss"], 300.0, rtol=1e-6, atol=0,
                 name="d_loss with real logits -150 and fake logits +150")
    assert_close(losses["g_loss"], 0.0, rtol=0, atol=1e-6, name="g_loss with fake logits +150")
    for v in (*generator.trainable_variables, *discriminator.trainable_variables):
        assert np.all(np.isfinite(v.numpy())), f"variable {v.path} is not finite after a step with large logits"


@pytest.mark.parametrize("noise_dim", [0, -1, 1.5, True, "2"])
def test_bad_noise_dim_raises_value_error(impl, noise_dim):
    generator = mlp((2,), (2,), hidden=2, seed=17, dtype="float32")
    discriminator = mlp((2,), (1,), hidden=2, seed=18, dtype="float32")
    assert_raises_naming(ValueError, "noise_dim", impl.gan_train_step, generator, discriminator,
                         keras.optimizers.SGD(LR_G), keras.optimizers.SGD(LR_D), tf.ones((3, 2)), noise_dim)


@pytest.mark.parametrize("noise_shape", [(3, 3), (4, 2), (3,), (3, 2, 1)])
def test_noise_of_the_wrong_shape_raises_value_error(impl, noise_shape):
    generator = mlp((2,), (2,), hidden=2, seed=19, dtype="float32")
    discriminator = mlp((2,), (1,), hidden=2, seed=20, dtype="float32")
    assert_raises_naming(ValueError, "noise", impl.gan_train_step, generator, discriminator,
                         keras.optimizers.SGD(LR_G), keras.optimizers.SGD(LR_D), tf.ones((3, 2)), 2,
                         noise=tf.zeros(noise_shape))
