"""DataLoader worker processes inside the grading child never hang, within the sandbox's limits.

``pytorch.data.custom_dataset``'s hidden tests run a ``DataLoader`` with ``num_workers=2``, forked
(``multiprocessing_context="fork"``) from the grading child, which the fork server of
``grader batch`` forked in turn and which has run torch ops in earlier tests. A process forked
from one whose OpenMP threads are alive can hang in its first parallel op; a DataLoader worker
sets torch to one thread before it runs any dataset code, so it does not. This grades the
reference 20 times in a row through the fork server, half of the copies setting torch to two
threads and running multi-threaded ops when the module is imported (the worst case a learner's
module can make), and checks that every one scores full marks with no test killed, while
counting the jailed children's processes and threads against the unchanged process limit.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from grader import catalog
from grader.engine import jail
from grader.engine.sandbox import Limits
from grader.workflows.batch import run_batch
from tests.helpers import make_submission

DATASET = catalog.get_exercise("pytorch.data.custom_dataset")
# 20 gradings take about two minutes on an idle 2-core machine (the fork server's start included).
pytestmark = pytest.mark.timeout(900)
COPIES = 20
CUDA_ONLY = {"test_custom_dataset_hidden.py::test_samples_stay_on_the_series_device[cuda]"}  # not run without CUDA
# Imported before any test: torch's OpenMP pool then has two live threads when the DataLoader forks.
MULTITHREADED_PRELUDE = '''
import torch as _torch

_torch.set_num_threads(2)
_torch.randn(512, 512) @ _torch.randn(512, 512)
_torch.randn(1 << 20).exp().sum()
'''


class TaskCounter:
    """Samples, from the host, the processes and threads of every jailed uid (``UID_BASE`` up)
    and keeps the most any one uid had at once."""

    def __init__(self, period_s: float = 0.02):
        self.period_s = period_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        per_uid: dict[int, int] = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                uid = os.stat(f"/proc/{pid}").st_uid
                if uid >= jail.UID_BASE:
                    per_uid[uid] = per_uid.get(uid, 0) + len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue  # the process ended while we looked
        self.peak = max(self.peak, *per_uid.values(), 0)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.period_s)

    def __enter__(self) -> TaskCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def test_the_reference_grades_full_marks_twenty_times_in_a_row_through_the_fork_server(tmp_path: Path):
    reference = DATASET.reference.read_text(encoding="utf-8")
    folder = tmp_path / "submissions"
    for i in range(COPIES):
        text = reference if i % 2 == 0 else reference + MULTITHREADED_PRELUDE
        make_submission(folder / f"copy{i:02d}", {DATASET: text})
    # The per-test limit is well above the DataLoader test's second or so: a worker that hangs
    # is killed by it and shows as a failed test, not as a stuck batch.
    limits = Limits(wall_s=300, test_s=60)
    with TaskCounter() as tasks:
        started = time.monotonic()
        run_batch(folder, tmp_path / "out", exercise_ids=[DATASET.id], jobs=1, limits=limits, fork=True,
                  log=lambda message: None)
        elapsed = time.monotonic() - started
    results = {p.stem: json.loads(p.read_text()) for p in sorted((tmp_path / "out" / "results").glob("*.json"))}
    assert sorted(results) == [f"copy{i:02d}" for i in range(COPIES)]
    for name, result in results.items():
        (exercise,) = result["exercises"]
        failed = [(t["name"], t["status"], t["message"][:200]) for t in exercise["tests"]
                  if t["status"] != "passed" and t["name"] not in CUDA_ONLY]
        assert result["problems"] == [] and not failed, f"{name}: {result['problems']} {failed}"
        assert exercise["score"] == exercise["max_score"] > 0, name
    if jail.level() != "none":
        # Each child has a uid of its own; the DataLoader's workers and their queue threads fit
        # the unchanged budget with room to spare (a sample can miss the very peak).
        assert 0 < tasks.peak <= jail.NPROC_BUDGET // 2, f"peak tasks of a grading child: {tasks.peak}"
    durations = sorted(r["duration_s"] for r in results.values())
    print(f"{COPIES} gradings in {elapsed:.1f} s (each {durations[0]:.1f}-{durations[-1]:.1f} s); peak "
          f"processes+threads of one child: {tasks.peak} of {jail.NPROC_BUDGET}")
