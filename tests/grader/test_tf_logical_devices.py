"""Every process that runs TensorFlow tests gets two logical CPU devices (for
tensorflow.distributed.mirrored's MirroredStrategy), set before TensorFlow's runtime starts: a
learner's pytest run, a fresh grading child, a child forked from a fork server after another
TensorFlow exercise ran in it, a notebook kernel. Where the runtime started first, the tests that
need the devices skip with the reason instead of giving a verdict (``grader.tfchecks._env``)."""

from __future__ import annotations

import json

import pytest

from grader import catalog
from grader.engine.scoring import score_submission
from tests.helpers import make_submission, run_python

pytest.importorskip("tensorflow")

MIRRORED = catalog.get_exercise("tensorflow.distributed.mirrored")
BASICS = catalog.get_exercise("tensorflow.basics.tensors_and_variables")

DEVICES = "import json, tensorflow as tf\nprint(json.dumps([d.name for d in tf.config.list_logical_devices('CPU')]))\n"


def _last_json(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


def test_collecting_a_tensorflow_exercises_tests_splits_the_cpu_first():
    """A learner's ``pytest exercises/``: the plugin imports grader.tfchecks before the first
    TensorFlow test module, which could run an op at import."""
    probe = ("import sys\nfrom pathlib import Path\nfrom grader import pytest_plugin\n"
             f"pytest_plugin.pytest_collect_file(Path({str(MIRRORED.public_tests)!r}))\n"
             "assert 'grader.tfchecks' in sys.modules, 'the plugin did not import grader.tfchecks'\n"
             + DEVICES)
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stderr[-2000:]
    assert _last_json(result.stdout) == ["/device:CPU:0", "/device:CPU:1"]


def test_after_an_op_ran_the_tests_that_need_two_devices_skip_and_say_why():
    probe = ("import pytest, tensorflow as tf\n"
             "tf.constant(1.0) + 1.0  # the runtime starts\n"
             "from grader.tfchecks import logical_cpus\n"
             "assert logical_cpus(1) == ['/device:CPU:0']\n"
             "try:\n    logical_cpus(2)\nexcept pytest.skip.Exception as exc:\n    print(exc.msg)\n"
             "else:\n    print('not skipped')\n")
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stderr[-2000:]
    message = result.stdout.strip().splitlines()[-1]
    assert message.startswith("needs 2 logical CPU devices, and TensorFlow has 1: TensorFlow's "
                              "runtime had already started"), message
    assert "imports grader.tfchecks before any TensorFlow op runs" in message, message


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "fresh"])
def test_a_grading_child_has_two_devices_after_another_tensorflow_exercise_ran(tmp_path, fork):
    """One child grades both exercises, BASICS first (its tests run TensorFlow ops, which start
    the runtime): the mirrored tests still find two devices, and neither exercise's verdict
    changes."""
    root = make_submission(tmp_path / "sub", {BASICS: BASICS.reference, MIRRORED: MIRRORED.reference})
    report = score_submission(root, [BASICS.id, MIRRORED.id], fork=fork)
    assert report.problems == []
    assert [ex.id for ex in report.exercises] == [BASICS.id, MIRRORED.id]
    for ex in report.exercises:
        not_passed = [(t.name, t.status, t.message) for t in ex.tests if t.status != "passed"]
        assert not_passed == [] and ex.score == ex.max_score > 0, (ex.id, not_passed)


def test_a_notebook_kernel_splits_the_cpu_when_the_tests_load():
    """nbgrader's order: the answer cell (which imports TensorFlow and runs no op), then the
    cells that load and run the tests."""
    probe = (f"answer = {{}}\nexec(open({str(MIRRORED.reference)!r}).read(), answer)\n"
             "from grader.notebook_runtime import TestModule\n"
             f"hidden = TestModule.from_kit({MIRRORED.id!r}, 'hidden')\n"
             "hidden.run('test_mirrored_builds_once_in_scope_with_mirrored_variables', answer)\n")
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "passed: test_mirrored_builds_once_in_scope_with_mirrored_variables" in result.stdout


def test_no_tensorflow_test_module_runs_an_op_when_imported():
    """A fork server imports every test module before it forks (``grader._preload``): a module
    that ran a TensorFlow op at import would start the runtime's threads in the server, and its
    forked children could hang, and the CPU could no longer be split for the mirrored exercise."""
    files = [str(path) for ex in catalog.load_catalog().values() if ex.uses_tensorflow
             for path in (ex.public_tests, ex.hidden_tests)]
    probe = ("import importlib.util, json\nimport grader.tfchecks\n"
             "from tensorflow.python.eager import context\n"
             f"for i, path in enumerate({files!r}):\n"
             "    spec = importlib.util.spec_from_file_location(f'probe_{i}', path)\n"
             "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
             "    if context.context()._context_handle is not None:  # the runtime has started\n"
             "        print(json.dumps(path))\n        break\n"
             "else:\n    print(json.dumps(None))\n")
    started_by = _last_json(run_python("-c", probe).stdout)
    assert started_by is None, f"importing {started_by} ran a TensorFlow op"
