"""Writing and reading TensorBoard event files, with TensorBoard's own reader.

The ``tensorboard`` package is optional (the kit's ``tensorboard`` extra): it is imported only
when a test calls these helpers, and its absence fails that test with a message saying what to
install, instead of breaking the collection of every test.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

INSTALL_HINT = ("this test needs the tensorboard package: pip install tensorboard "
                "(or the kit's extra: pip install -e '.[tensorboard]')")


def _require_tensorboard() -> None:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise AssertionError(INSTALL_HINT) from None


def summary_writer(log_dir: str | os.PathLike) -> Any:
    """A ``torch.utils.tensorboard.SummaryWriter`` writing into ``log_dir``."""
    _require_tensorboard()
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(os.fspath(log_dir))


@dataclass
class TensorBoardEvents:
    """What TensorBoard reads from a log directory: per tag, ``(step, value)`` pairs in file order;
    a histogram's value has ``min``, ``max``, ``num``, ``sum``, ``sum_squares``, ``bucket_limit``
    and ``bucket``."""

    scalars: dict[str, list[tuple[int, float]]]
    histograms: dict[str, list[tuple[int, Any]]]


def read_tensorboard(log_dir: str | os.PathLike) -> TensorBoardEvents:
    """Every scalar and histogram event in ``log_dir``, read by TensorBoard's ``EventAccumulator``
    with no sampling (it keeps every event)."""
    _require_tensorboard()
    from tensorboard.backend.event_processing.event_accumulator import (
        HISTOGRAMS,
        SCALARS,
        EventAccumulator,
    )

    events = EventAccumulator(os.fspath(log_dir), size_guidance={SCALARS: 0, HISTOGRAMS: 0})
    events.Reload()
    tags = events.Tags()
    return TensorBoardEvents(
        scalars={tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in tags[SCALARS]},
        histograms={tag: [(e.step, e.histogram_value) for e in events.Histograms(tag)]
                    for tag in tags[HISTOGRAMS]})
