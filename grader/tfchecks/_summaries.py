"""Reading back what ``tf.summary`` (and Keras's TensorBoard callback) wrote, with TensorBoard's
own reader.

TensorFlow 2 writes every summary as a *tensor* event whose metadata names the TensorBoard
plugin that draws it (``"scalars"``, ``"histograms"``...), not as the ``simple_value`` events of
``torch.utils.tensorboard``. TensorBoard's ``plugin_event_accumulator`` reads both kinds (it
migrates the old ones to tensors), so this module reads any run. It imports neither torch nor
TensorFlow: the ``tensorboard`` package, when a test calls it, and NumPy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

INSTALL_HINT = ("needs the tensorboard package, which tf.summary writes with: pip install tensorboard "
                "(or the kit's extra: pip install -e '.[tensorboard]')")


@dataclass
class SummaryEvents:
    """What TensorBoard reads from one run's directory, per tag in file order.

    ``scalars``: ``(step, value)`` of the tags TensorBoard draws as scalars; ``histograms``:
    ``(step, buckets)`` with ``buckets`` a ``(k, 3)`` array of (left edge, right edge, count);
    ``plugins``: every tag and the plugin its metadata names (``""`` for none: a tensor written
    with ``tf.summary.write`` and no metadata, which no dashboard draws).
    """

    scalars: dict[str, list[tuple[int, float]]]
    histograms: dict[str, list[tuple[int, np.ndarray]]]
    plugins: dict[str, str]


def read_summaries(log_dir: str | os.PathLike) -> SummaryEvents:
    """Every tensor event in ``log_dir`` (one run: the event files directly inside it), read by
    TensorBoard's ``plugin_event_accumulator`` keeping every event (no sampling, no purging of
    "orphaned" steps). A directory that does not exist reads as no events.

    Without the ``tensorboard`` package the calling test is skipped with the install command.
    """
    try:
        from tensorboard.backend.event_processing import plugin_event_accumulator as pea
        from tensorboard.util import tensor_util
    except ImportError:
        import pytest

        pytest.skip(INSTALL_HINT)
    if not os.path.isdir(log_dir):
        return SummaryEvents({}, {}, {})
    events = pea.EventAccumulator(os.fspath(log_dir), size_guidance={pea.TENSORS: 0}, purge_orphaned_data=False)
    events.Reload()
    plugins = {tag: (metadata.plugin_data.plugin_name if (metadata := events.summary_metadata.get(tag)) else "")
               for tag in events.Tags()[pea.TENSORS]}
    values = {tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in events.Tensors(tag)]
              for tag in plugins}
    return SummaryEvents(
        scalars={tag: [(step, float(v)) for step, v in pairs] for tag, pairs in values.items()
                 if plugins[tag] == "scalars"},
        histograms={tag: pairs for tag, pairs in values.items() if plugins[tag] == "histograms"},
        plugins=plugins)
