"""Public tests for pytorch.training.tensorboard_logging: a few quick examples. Run with
``pytest exercises/pytorch/training/test_tensorboard_logging.py`` (needs ``pip install tensorboard``)."""

import torch
from torch import nn

from grader.checks import read_tensorboard, summary_writer


def test_log_metrics_reads_back(impl, tmp_path):
    writer = summary_writer(tmp_path)
    try:
        impl.log_metrics(writer, {"loss": torch.tensor(0.5), "acc": 0.75}, 4)
    finally:
        writer.close()
    scalars = read_tensorboard(tmp_path).scalars
    assert scalars == {"loss": [(4, 0.5)], "acc": [(4, 0.75)]}, f"read back {scalars}"


def test_train_with_logging_logs_each_step(impl, tmp_path):
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    batches = [(torch.randn(4, 2), torch.randn(4, 1)) for _ in range(3)]
    history = impl.train_with_logging(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.MSELoss(), batches,
                                      epochs=2, log_dir=tmp_path)
    assert len(history) == 2, f"expected one loss per epoch, got {history}"
    events = read_tensorboard(tmp_path)
    steps = [s for s, _ in events.scalars.get("train/loss", [])]
    assert steps == [0, 1, 2, 3, 4, 5], f"'train/loss' steps read back: {steps}"
    assert {"weights/weight", "weights/bias"} <= set(events.histograms), f"histograms: {sorted(events.histograms)}"
