"""Wrong: RunningMean.update returns the float64 mean it accumulates instead of a float32 one."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


# The signature fixes dtype and rank but leaves the length free (None): one trace serves every
# length, and a Python float for ``decay`` is converted to a tensor instead of becoming part of
# the cache key (which would retrace for every new value).
@tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.float32)])
def ema_scan(x: tf.Tensor, decay: tf.Tensor) -> tf.Tensor:
    """Exponential moving average along ``x``: ``y[0] = x[0]``, ``y[t] = decay*y[t-1] + (1-decay)*x[t]``."""
    # A graph cannot raise from a Python ``if`` on a tensor value: the check must be an op.
    tf.debugging.assert_greater_equal(decay, 0.0, message="decay must be in [0, 1]")
    tf.debugging.assert_less_equal(decay, 1.0, message="decay must be in [0, 1]")
    n = tf.shape(x)[0]
    out = tf.TensorArray(tf.float32, size=n)
    y = tf.constant(0.0)
    # ``tf.range`` (not ``range(x.shape[0])``, which is None here): AutoGraph turns the loop into
    # one While op whose trip count is only known when the graph runs.
    for t in tf.range(n):
        y = x[t] if t == 0 else decay * y + (1.0 - decay) * x[t]
        out = out.write(t, y)
    return out.stack()


def op_types(fn, *specs: tf.TensorSpec) -> set[str]:
    """Op types in the top-level graph of ``fn`` traced for ``specs``."""
    if not hasattr(fn, "get_concrete_function"):
        raise TypeError(f"fn must be a tf.function, got {type(fn).__name__}")
    graph = fn.get_concrete_function(*specs).graph
    return {op.type for op in graph.get_operations()}


def run_in_session(x, decay: float) -> np.ndarray:
    """``ema_scan`` built as a TF1-style graph with a placeholder and run in a ``tf.compat.v1.Session``."""
    graph = tf.Graph()
    with graph.as_default():
        xs = tf.compat.v1.placeholder(tf.float32, shape=[None], name="x")
        d = tf.compat.v1.placeholder(tf.float32, shape=[], name="decay")
        n = tf.shape(xs)[0]

        def body(t, y, out):
            # tf.equal, not ==: on tensors of a TF1-style graph, == compares object identity.
            y = tf.where(tf.equal(t, 0), xs[t], d * y + (1.0 - d) * xs[t])
            return t + 1, y, out.write(t, y)

        _, _, out = tf.while_loop(lambda t, y, out: t < n, body,
                                  (tf.constant(0), tf.constant(0.0), tf.TensorArray(tf.float32, size=n)))
        result = out.stack()
    with tf.compat.v1.Session(graph=graph) as sess:
        return sess.run(result, feed_dict={xs: np.asarray(x, np.float32), d: decay})


class RunningMean(tf.Module):
    """Mean of every value passed to ``update`` so far, kept in Variables."""

    def __init__(self, log_path: str | None = None) -> None:
        super().__init__()
        self.log_path = log_path
        # State lives in Variables: a Python number changed inside a tf.function changes once,
        # while tracing, and never again.
        self.total = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def update(self, values: tf.Tensor) -> tf.Tensor:
        """Add ``values``; return the mean of all values so far (0.0 before any), float32."""
        self.total.assign_add(tf.reduce_sum(tf.cast(values, tf.float64)))
        self.count.assign_add(tf.size(values, out_type=tf.int64))
        mean = tf.math.divide_no_nan(self.total, tf.cast(self.count, tf.float64))
        if self.log_path is not None:  # a Python value: decided once, at trace time
            # tf.print is an op, so it runs on every call; Python's print runs only while tracing.
            tf.print("mean:", mean, output_stream="file://" + self.log_path)
        return mean
