"""Benchmark: the learner's loop, ``pytest exercises/<topic>/test_<name>.py``, and where its time goes.

Runs, each in a fresh interpreter of this venv with the kit as its working directory, ``--rounds``
times, and reports medians of the wall time of:

- the learner's run on the untouched stub and on the reference (``--impl-root solutions``), for
  one PyTorch and one TensorFlow exercise;
- its parts, each alone: the interpreter (``python -c pass``), ``import torch``,
  ``import tensorflow``, ``import pytest``, ``import hypothesis``, and the frameworks' imports
  again without the collection of every object at interpreter exit (``gc.freeze()`` first).

What a run costs beyond the interpreter and its framework's import is pytest, the kit's plugin
and the tests. ``--kit DIR`` measures another checkout with its own ``.venv`` (the kit before a
change).

    .venv/bin/python bench/bench_learner.py [--rounds 7] [--kit DIR] [--json FILE]

Timings on a busy machine are noisy: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
EXERCISES = {"pytorch": "exercises/pytorch/tensors/test_broadcasting.py",
             "tensorflow": "exercises/tensorflow/basics/test_tensors_and_variables.py"}
PARTS = {"interpreter": "pass", "import torch": "import torch", "import tensorflow": "import tensorflow",
         "import pytest": "import pytest", "import hypothesis": "import hypothesis",
         # The interpreter's last collection of every object, which the kit's plugin spares a run.
         "import torch, no exit collection": "import gc, torch; gc.freeze()",
         "import tensorflow, no exit collection": "import gc, tensorflow; gc.freeze()"}


def _wall(kit: Path, args: list[str]) -> float:
    python = kit / ".venv" / "bin" / "python"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
    start = time.perf_counter()
    subprocess.run([str(python), *args], cwd=kit, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--kit", type=Path, default=KIT, help="the checkout to measure (default: this one)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    kit = args.kit.resolve()
    cases = {f"pytest, {fw} stub": ["-m", "pytest", test] for fw, test in EXERCISES.items()}
    cases |= {f"pytest, {fw} reference": ["-m", "pytest", test, "--impl-root", "solutions"]
              for fw, test in EXERCISES.items()}
    cases |= {part: ["-c", code] for part, code in PARTS.items()}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved, so that a busy moment spreads over every case
        for name, command in cases.items():
            samples[name].append(_wall(kit, command))
    medians = {name: round(statistics.median(times), 3) for name, times in samples.items()}
    width = max(map(len, medians))
    for name, median in medians.items():
        print(f"{name:<{width}}  {median:6.3f} s")
    if args.json:
        args.json.write_text(json.dumps({"kit": str(kit), "rounds": args.rounds, "median_s": medians,
                                         "samples_s": samples, "python": sys.version.split()[0]}, indent=2) + "\n")


if __name__ == "__main__":
    main()
