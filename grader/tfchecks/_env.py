"""Import TensorFlow quietly (its C++ start-up logs would bury the learner's test output), and split
the CPU into logical devices before its runtime starts.

Distributed exercises need several devices, and a CPU-only machine has one. TensorFlow can present
the CPU as several logical devices, but only before its runtime starts (the first op); after that
the setting raises. Every process that runs TensorFlow tests imports this module before any of
their ops: a fork server in its warm-up (which imports TensorFlow and runs no op), a grading child
in its pytest configuration (``--warm-import``), a learner's pytest run before it imports a
TensorFlow test module (the plugin's ``pytest_collect_file``), a notebook in the test cells' imports.
So the split happens here, at import, once per process; where the runtime had already started,
``logical_cpus`` says why the devices are missing.
"""

from __future__ import annotations

from grader.defaults import quiet_tensorflow

# Before the first TensorFlow import: level 2 drops INFO and WARNING from the C++ runtime, and
# without oneDNN's custom ops TensorFlow neither prints its round-off notice nor gives results
# that vary with the machine's CPU.
quiet_tensorflow()

import numpy as np  # noqa: E402 - after quiet_tensorflow()
import tensorflow as tf  # noqa: E402

__all__ = ["LOGICAL_CPUS", "VARIABLES", "as_numpy", "dtype_of", "logical_cpus", "np", "tf"]

# Keras 3 layers hold keras.Variable objects, which are not tf.Variable instances.
VARIABLES = (tf.Variable, tf.keras.Variable)

# Logical CPU devices every TensorFlow test process gets: a MirroredStrategy of two replicas on a
# CPU-only machine (tensorflow.distributed.mirrored). Operations without a device still run on
# the first one, and all of them share the CPU's thread pools, so other exercises see no change.
LOGICAL_CPUS = 2


def _split_the_cpu(count: int) -> str | None:
    """Configure ``count`` logical devices on the first physical CPU unless TensorFlow's runtime
    has started (or someone configured the CPU already); return why not, or ``None``."""
    cpu = tf.config.list_physical_devices("CPU")[0]  # lists devices; starts no runtime
    configured = tf.config.get_logical_device_configuration(cpu)
    if configured is not None:
        return None if len(configured) >= count else (
            f"the CPU was configured as {len(configured)} logical device(s) before grader.tfchecks "
            "was imported")
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    except RuntimeError:
        return ("TensorFlow's runtime had already started (a TensorFlow op ran) when grader.tfchecks "
                "was first imported, and the CPU can be split into logical devices only before that")
    return None


_CPU_SPLIT_FAILURE = _split_the_cpu(LOGICAL_CPUS)


def logical_cpus(count: int) -> list[str]:
    """The names of ``count`` logical CPU devices (``/device:CPU:0``, ...), for a test that needs
    several devices. Where this process has fewer (see the module's docstring), the calling test
    is skipped (``pytest.skip``) with the reason: its verdict could not be trusted, and it must
    never fail a correct answer for the kit's own set-up."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(devices) >= count:
        return devices[:count]
    import pytest

    why = _CPU_SPLIT_FAILURE or f"grader.tfchecks splits the CPU into {LOGICAL_CPUS}"
    pytest.skip(f"needs {count} logical CPU devices, and TensorFlow has {len(devices)}: {why}. Run "
                "the tests in a fresh process (pytest, a restarted notebook kernel) that imports "
                "grader.tfchecks before any TensorFlow op runs")


def dtype_of(value) -> tf.DType:
    """The ``tf.DType`` of a tensor or a (TensorFlow or Keras) Variable."""
    return tf.as_dtype(value.dtype)


def as_numpy(value, *, name: str) -> np.ndarray:
    """An eager tensor, a Variable, a NumPy array or a Python number as a NumPy array.

    Symbolic tensors (inside a ``tf.function`` or a Keras functional model) have no value: the
    message says so rather than TensorFlow's own about ``.numpy()``.
    """
    if isinstance(value, tf.keras.Variable):
        value = value.value  # the backing tf.Variable
    if isinstance(value, (tf.Tensor, tf.Variable)):
        if not hasattr(value, "numpy") or not tf.executing_eagerly():
            raise AssertionError(f"{name}: got a symbolic tensor without a value ({value!r}); "
                                 "return an eager tensor")
        try:
            return np.asarray(value.numpy())
        except (AttributeError, NotImplementedError, ValueError) as exc:
            raise AssertionError(f"{name}: got a symbolic tensor without a value ({exc!s:.150})") from None
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, bool, list, tuple)):
        try:
            return np.asarray(value)
        except ValueError as exc:
            raise AssertionError(f"{name}: cannot be read as an array: {exc!s:.150}") from None
    raise AssertionError(f"{name}: expected a tf.Tensor, a Variable, a NumPy array or a number, "
                         f"got {type(value).__name__}")
