"""TensorFlow stays out of PyTorch runs, torch stays out of the TensorFlow checks, and a
TensorFlow learner run is quiet. (The PyTorch-only *learner* run is covered by
tests/test_layout.py::test_a_pytorch_only_learner_run_never_imports_tensorflow.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from grader import catalog
from grader.engine.scoring import score_submission
from tests.helpers import make_submission, run_python

# A submission whose every function fails with a message saying which frameworks the grading
# child has imported by the time submitted code runs.
PROBE = '''import sys


def _report(*args, **kwargs):
    loaded = sorted(m for m in ("tensorflow", "keras", "torch") if m in sys.modules)
    raise AssertionError(f"frameworks loaded: {loaded}")


pairwise_sq_dists = batched_affine = _report
'''


def test_a_pytorch_only_grading_run_never_imports_tensorflow(tmp_path):
    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    root = make_submission(tmp_path / "sub", {ex: PROBE})
    result = score_submission(root, [ex.id]).exercises[0]
    seen = {m for t in result.tests for m in re.findall(r"frameworks loaded: \[[^\]]*\]", t.message)}
    assert seen == {"frameworks loaded: ['torch']"}, [t.message for t in result.tests]


def test_the_tensorflow_checks_import_no_torch():
    result = run_python("-c", "import sys, grader.tfchecks\n"
                              "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))")
    assert result.stdout.strip() == "['tensorflow']", result.stdout + result.stderr


def test_a_tensorflow_learner_run_prints_no_tensorflow_log_noise():
    pytest.importorskip("tensorflow")
    ex = catalog.get_exercise("tensorflow.basics.tensors_and_variables")
    # Without the variables in the caller's environment: the kit's plugin must set them. -s lets
    # anything TensorFlow writes to the terminal through.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--impl-root",
         "solutions", str(ex.public_tests.relative_to(catalog.KIT_ROOT))],
        cwd=catalog.KIT_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stderr.strip() == "", f"TensorFlow wrote to stderr:\n{result.stderr[-2000:]}"
    assert "oneDNN" not in result.stdout, result.stdout[-2000:]
