"""Run a block under a Keras mixed precision policy, restoring the previous one afterwards."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from grader.tfchecks._env import tf


@contextlib.contextmanager
def mixed_precision(policy_name: str) -> Iterator[object]:
    """Set the Keras global policy (``"mixed_bfloat16"``, ``"mixed_float16"``, ``"float32"``...)
    for the block and yield it; the previous policy comes back even if the block raises, so one
    test cannot leak low precision into the next."""
    mp = tf.keras.mixed_precision
    previous = mp.global_policy()
    mp.set_global_policy(policy_name)
    try:
        yield mp.global_policy()
    finally:
        mp.set_global_policy(previous)
