"""Hidden tests for tensorflow.distributed.mirrored (the catalog's contract checks).

The reference every strategy must match is mini-batch SGD on the mean loss of each whole global
batch, computed in NumPy: what one device would do with the global batch.
"""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import assert_close, assert_raises_naming, logical_cpus

LR = 0.125  # exact in binary, so Keras' SGD step equals the reference's


def per_example_mse(y_true, y_pred):
    return tf.reduce_mean(tf.square(tf.cast(y_true, y_pred.dtype) - y_pred), axis=-1)


def per_example_logistic(y_true, y_pred):
    """Binary cross-entropy of labels ``y_true`` on logits ``y_pred``: unlike the MSE, it tells its
    two arguments apart."""
    y_true = tf.cast(y_true, y_pred.dtype)
    return tf.reduce_mean(tf.nn.softplus(y_pred) - y_true * y_pred, axis=-1)


def mse_and_gradient(pred, y):
    """A global batch's mean per-example MSE and its gradient with respect to ``pred``, in NumPy."""
    err = pred - y
    return np.mean(err ** 2), 2 * err / err.size


def logistic_and_gradient(pred, y):
    """A global batch's mean per-example logistic loss and its gradient with respect to ``pred``."""
    return np.mean(np.logaddexp(0, pred) - y * pred), (1 / (1 + np.exp(-pred)) - y) / pred.size


# The loss build_model compiles with -> (its NumPy twin, the labels it takes, made from data()'s y).
LOSSES = {
    per_example_mse: (mse_and_gradient, lambda y: y),
    per_example_logistic: (logistic_and_gradient, lambda y: (y > 0.5).astype(np.float64)),
}


class ModelBuilder:
    """``build_model`` for the exercise: a float64 linear model with fixed initial weights (then
    batch normalisation if asked), compiled with SGD and a per-example loss (the MSE unless told).
    Records every model it builds and the strategy in scope when it was called (the default
    strategy outside any scope)."""

    def __init__(self, in_dim: int, out_dim: int, seed: int = 0, loss=per_example_mse, batch_norm=False):
        self.loss, self.batch_norm = loss, batch_norm
        rng = np.random.default_rng(seed)
        self.kernel = rng.standard_normal((in_dim, out_dim))
        self.bias = rng.standard_normal(out_dim)
        self.models: list[tf.keras.Model] = []
        self.scopes: list[tf.distribute.Strategy] = []

    def __call__(self) -> tf.keras.Model:
        self.scopes.append(tf.distribute.get_strategy())
        dense = tf.keras.layers.Dense(
            self.kernel.shape[1], dtype="float64",
            kernel_initializer=tf.keras.initializers.Constant(self.kernel),
            bias_initializer=tf.keras.initializers.Constant(self.bias))
        # Batch normalisation's output in training mode (the batch's own statistics) differs from
        # its output outside it (the moving ones).
        norm = [tf.keras.layers.BatchNormalization(dtype="float64")] if self.batch_norm else []
        model = tf.keras.Sequential([tf.keras.Input((self.kernel.shape[0],), dtype="float64"), dense, *norm])
        model.compile(optimizer=tf.keras.optimizers.SGD(LR), loss=self.loss)
        self.models.append(model)
        return model

    def assert_built_in(self, strategy: tf.distribute.Strategy, when: str = "") -> None:
        assert all(scope is strategy for scope in self.scopes), (
            "train_distributed called build_model outside strategy.scope() (or in another "
            f"strategy's scope){when}: the strategy it is given must create the model's variables")

    def the_model(self, strategy: tf.distribute.Strategy) -> tf.keras.Model:
        assert len(self.models) == 1, (
            f"train_distributed called build_model {len(self.models)} times; the contract is "
            "exactly once, inside strategy.scope()")
        self.assert_built_in(strategy)
        return self.models[0]


def device_of(name: str) -> str:
    """``"CPU:1"`` for ``/device:CPU:1`` and ``/job:localhost/replica:0/task:0/device:CPU:1`` alike."""
    spec = tf.DeviceSpec.from_string(name)
    return f"{spec.device_type}:{spec.device_index}"


def data(n: int, in_dim: int, out_dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 100)
    x = rng.standard_normal((n, in_dim))
    return x, x @ rng.standard_normal((in_dim, out_dim)) + 0.5


def reference_sgd(w, b, x, y, batch, epochs, loss_and_gradient=mse_and_gradient):
    """SGD on the mean per-example loss of each global batch, in NumPy: final weights, history."""
    history = []
    for _ in range(epochs):
        batch_losses = []
        for start in range(0, len(x), batch):
            xb, yb = x[start:start + batch], y[start:start + batch]
            loss, dpred = loss_and_gradient(xb @ w + b, yb)  # dpred: d loss / d pred
            batch_losses.append(loss)
            w, b = w - LR * xb.T @ dpred, b - LR * dpred.sum(0)
        history.append(np.mean(batch_losses))
    return w, b, history


def train(impl, strategy, builder: ModelBuilder, x, y, batch: int, epochs: int) -> list[float]:
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    try:
        history = impl.train_distributed(strategy, builder, dataset, epochs)
    except Exception as exc:
        # Training a model built outside the scope fails inside TensorFlow: say why first.
        builder.assert_built_in(strategy, when=f", and then raised {type(exc).__name__}")
        raise
    assert isinstance(history, dict) and "loss" in history, (
        f"train_distributed must return a dict with a 'loss' list, got {history!r:.100}")
    losses = history["loss"]
    assert isinstance(losses, list) and len(losses) == epochs, (
        f"train_distributed: history['loss'] must be a list of {epochs} values (one per epoch), "
        f"got {losses!r:.200}")
    assert all(isinstance(v, float) for v in losses), (
        "train_distributed: history['loss'] must hold Python floats, got "
        f"{[type(v).__name__ for v in losses]}")
    return losses


def assert_single_device_training(impl, strategy, *, n, batch, epochs, in_dim=2, out_dim=1, seed=0,
                                  loss=per_example_mse):
    """Train under ``strategy`` and compare the weights, the number of updates and the history
    with single-device SGD on the global batches; return the trained model."""
    builder = ModelBuilder(in_dim, out_dim, seed, loss)
    loss_and_gradient, labels = LOSSES[loss]
    x, y = data(n, in_dim, out_dim, seed)
    y = labels(y)
    losses = train(impl, strategy, builder, x, y, batch, epochs)
    model = builder.the_model(strategy)
    w, b, history = reference_sgd(builder.kernel, builder.bias, x, y, batch, epochs, loss_and_gradient)
    sizes = [min(batch, n - start) for start in range(0, n, batch)]
    what = (f"{epochs} epoch(s) over global batches of {sizes} under "
            f"{type(strategy).__name__} with {strategy.num_replicas_in_sync} replica(s)")
    updates = int(model.optimizer.iterations.numpy())
    assert updates == epochs * len(sizes), (
        f"the optimizer made {updates} update(s) in {what}; expected one per global batch, "
        f"{epochs * len(sizes)}")
    # float32-level tolerances: the docstring does not forbid reducing the losses in float32.
    kernel, bias = model.trainable_variables
    assert_close(kernel, w, rtol=1e-5, atol=1e-6,
                 name=f"kernel after {what} (single-device SGD on each global batch's mean loss)")
    assert_close(bias, b, rtol=1e-5, atol=1e-6,
                 name=f"bias after {what} (single-device SGD on each global batch's mean loss)")
    assert_close(np.array(losses), history, rtol=1e-5, atol=1e-7,
                 name=f"history['loss'] after {what} (per epoch, the mean of the global batches' "
                      "mean losses)")
    return model


@pytest.fixture(scope="module")
def mirrored():
    # Summing through one device, not the default collective all-reduce: every MirroredStrategy
    # of a process numbers its collectives from the same key, so a second one (the public tests')
    # that all-reduces another dtype aborts (a TensorFlow limitation, not the learner's fault).
    return tf.distribute.MirroredStrategy(logical_cpus(2),
                                          cross_device_ops=tf.distribute.ReductionToOneDevice())


@pytest.mark.points(2)
@pytest.mark.parametrize("n, batch, epochs", [
    pytest.param(8, 4, 2, id="equal_shares"),  # 2 and 2
    pytest.param(10, 5, 1, id="unequal_shares"),  # 3 and 2, every batch
    pytest.param(10, 4, 2, id="short_last_batch"),  # 4, 4, then 2: shares 2 and 2, then 1 and 1
    pytest.param(9, 4, 1, id="empty_share"),  # the last global batch of 1: shares 1 and 0
])
def test_mirrored_equals_single_device_training_on_the_global_batch(impl, mirrored, n, batch, epochs):
    assert_single_device_training(impl, mirrored, n=n, batch=batch, epochs=epochs)


@pytest.mark.points(2)
def test_mirrored_builds_once_in_scope_with_mirrored_variables(impl, mirrored):
    builder = ModelBuilder(3, 2, seed=1)
    x, y = data(6, 3, 2, seed=1)
    train(impl, mirrored, builder, x, y, batch=6, epochs=1)
    model = builder.the_model(mirrored)
    devices = {device_of(d) for d in mirrored.extended.worker_devices}
    for variable in [*model.trainable_variables, model.optimizer.iterations]:
        copies = mirrored.experimental_local_results(variable.value)
        where = {device_of(c.device) for c in copies}
        assert len(copies) == 2 and where == devices, (
            f"{variable.path} is not a mirrored variable with one copy on each of the strategy's "
            f"devices: found {len(copies)} copy(ies) on {sorted(where)}")
        assert_close(copies[1], copies[0], rtol=0, atol=0,
                     name=f"the copy of {variable.path} on the second replica after training")


@pytest.mark.points(2)
def test_one_device_strategy_trains_on_its_device(impl):
    device = logical_cpus(2)[1]  # not the device TensorFlow places on by default
    strategy = tf.distribute.OneDeviceStrategy(device)
    model = assert_single_device_training(impl, strategy, n=7, batch=3, epochs=2, in_dim=3, seed=2)
    for variable in [*model.trainable_variables, model.optimizer.iterations]:
        assert device_of(variable.value.device) == device_of(device), (
            f"under OneDeviceStrategy({device!r}), {variable.path} lives on "
            f"{variable.value.device}: build the model inside strategy.scope()")


@pytest.mark.points(2)
@settings(max_examples=4)
@given(n=st.integers(1, 9), batch=st.integers(1, 4), in_dim=st.integers(1, 3),
       out_dim=st.integers(1, 2), epochs=st.integers(1, 2))
@example(n=5, batch=2, in_dim=2, out_dim=2, epochs=2)  # a short last batch
@example(n=1, batch=1, in_dim=1, out_dim=1, epochs=1)  # a single example
def test_default_strategy_equals_single_device_training(impl, n, batch, in_dim, out_dim, epochs):
    assert_single_device_training(impl, tf.distribute.get_strategy(), n=n, batch=batch,
                                  epochs=epochs, in_dim=in_dim, out_dim=out_dim, seed=3)


@pytest.mark.points(1)
def test_model_loss_takes_the_labels_first(impl):
    # The logistic loss of labels y on logits: model.loss(pred, y) gives another loss and update.
    assert_single_device_training(impl, tf.distribute.get_strategy(), n=7, batch=4, epochs=2,
                                  in_dim=2, out_dim=2, seed=4, loss=per_example_logistic)


def single_device_keras_training(model: tf.keras.Model, x, y, batch: int, epochs: int) -> None:
    """What training ``model`` on one device does to it: per batch, one SGD update on the gradient
    of the mean per-example loss of ``model(x, training=True)``."""
    for _ in range(epochs):
        for start in range(0, len(x), batch):
            xb, yb = x[start:start + batch], y[start:start + batch]
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(model.loss(yb, model(xb, training=True)))
            variables = model.trainable_variables
            model.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))


@pytest.mark.points(1)
def test_updates_are_those_of_training_mode(impl):
    # One replica (the default strategy): batch normalisation normalises by the global batch's own
    # statistics in training, as on one device.
    x, y = data(8, 3, 2, seed=5)
    builder = ModelBuilder(3, 2, seed=5, batch_norm=True)
    train(impl, tf.distribute.get_strategy(), builder, x, y, batch=4, epochs=2)
    model = builder.the_model(tf.distribute.get_strategy())
    expected = ModelBuilder(3, 2, seed=5, batch_norm=True)()
    single_device_keras_training(expected, x, y, batch=4, epochs=2)
    for got, want in zip(model.trainable_variables, expected.trainable_variables, strict=True):
        assert_close(got, want, rtol=1e-5, atol=1e-6,
                     name=f"{got.path} after 2 epochs of 2 global batches of a Dense + BatchNormalization "
                          "model, vs single-device training (the model called with training=True)")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("strategy", [None, "mirrored", tf.distribute.MirroredStrategy],
                         ids=["None", "a_name", "the_class"])
def test_bad_strategy_raises_type_error(impl, strategy):
    x, y = data(4, 1, 1)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    assert_raises_naming(TypeError, "strategy", impl.train_distributed, strategy,
                         ModelBuilder(1, 1), dataset, 1)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("epochs", [0, -1, 1.5, "3"])
def test_bad_epochs_raise_value_error(impl, epochs):
    x, y = data(4, 1, 1)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    assert_raises_naming(ValueError, "epochs", impl.train_distributed, tf.distribute.get_strategy(),
                         ModelBuilder(1, 1), dataset, epochs)
