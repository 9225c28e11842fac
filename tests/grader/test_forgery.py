"""Submissions that try to forge their verdict from inside, graded where the submission runs in a
process apart from its tests (``grader.remote``; the exercise is marked ``separate_process``).

Each module of ``forgery/`` answers pytorch.losses.cross_entropy with one class of attack: the
signing key and writer, pytest's internals and the kit's checks patched, tracing, a lying tensor
subclass, hidden-test source echoed back, the op counter switched off. Graded in a batch (fork
server) and one by one with ``score`` (fresh interpreters), each scores 0 or is flagged for
review, an honest neighbour keeps full marks, and no message carries the hidden tests. One more
submission answers an exercise graded in the tests' own process too, whose code finds the
signing key there (``forgery/neighbours/``): it cannot reach the verdict of the exercise graded
apart. Every submission is graded on both exercises, and the honest one answers both.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.redact import DUMP_REMOVED, MAX_MESSAGE_CHARS
from grader.engine.sandbox import Limits
from grader.engine.scoring import score_submission
from grader.workflows.batch import run_batch

EX = catalog.get_exercise("pytorch.losses.cross_entropy")
CORPUS = Path(__file__).with_name("forgery")
NAMES = sorted(p.stem for p in CORPUS.glob("*.py"))
# Op counts are taken inside the executor (they must look at how the submission computes): a
# submission can switch the counter off there. The scan flags it for a person to review.
FLAGGED_ONLY = {"switch_off_op_counter": "getattr() with a computed name"}
# No forger hangs: the default limit per test, which the honest reference's gradient check (some
# 4 s alone) stays far under on a loaded machine too.
LIMITS = Limits(wall_s=300)
# Graded in the tests' own process: its code runs beside its child's signing key.
ONE_PROCESS = catalog.get_exercise("pytorch.autograd.micrograd")
NEIGHBOUR = CORPUS / "neighbours" / "forge_every_test.py"
IDS = [ONE_PROCESS.id, EX.id]  # catalog order: the neighbour's tests come first

pytestmark = pytest.mark.timeout(1200)


def _stage(folder: Path) -> None:
    """Each forger answers EX alone; ``neighbour``: EX's untouched stub and the key-finding
    forger for ONE_PROCESS; ``honest``: both references."""
    answers = {module.stem: {EX: module} for module in CORPUS.glob("*.py")}
    answers["neighbour"] = {EX: EX.stub, ONE_PROCESS: NEIGHBOUR}
    answers["honest"] = {EX: EX.reference, ONE_PROCESS: ONE_PROCESS.reference}
    for name, modules in answers.items():
        for ex, source in modules.items():
            target = folder / name / ex.relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> dict[str, dict]:
    folder, out = tmp_path_factory.mktemp("forgers"), tmp_path_factory.mktemp("forgers-out")
    _stage(folder)
    run_batch(folder, out, exercise_ids=IDS, jobs=2, limits=LIMITS, log=lambda m: None)
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("forgers-scored")
    _stage(folder)
    names = [*NAMES, "neighbour", "honest"]
    with ThreadPoolExecutor(2) as pool:
        reports = pool.map(lambda name: score_submission(folder / name, IDS, limits=LIMITS,
                                                         hide=[folder]).to_dict(), names)
        return dict(zip(names, reports))


def test_the_exercise_is_graded_in_a_separate_process():
    assert EX.separate_process


@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_an_honest_submission_keeps_full_marks(request, mode):
    result = request.getfixturevalue(mode)["honest"]
    lost = [(t["name"], t["status"], t["message"][:400]) for ex in result["exercises"]
            for t in ex["tests"] if t["status"] == "failed"]
    assert result["score"] == result["max_score"] > 0, (result["problems"], lost)
    for ex in (EX, ONE_PROCESS):  # an answer to each kind, each graded in a child of its own
        graded = _exercise(result, ex)
        assert graded["score"] == graded["max_score"] > 0, ex.id


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_each_forger_scores_zero_or_is_flagged(request, mode, name):
    result = request.getfixturevalue(mode)[name]
    messages = [t["message"] for ex in result["exercises"] for t in ex["tests"]]
    assert not [m for m in messages if "ESCAPED" in m], messages
    if name in FLAGGED_ONLY:
        assert any(FLAGGED_ONLY[name] in flag for flag in result["flags"]), result["flags"]
        return
    assert result["score"] == 0, (name, result["score"], result["problems"],
                                  [(t["name"], t["message"][:200]) for ex in result["exercises"]
                                   for t in ex["tests"] if t["status"] == "passed"])


@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_no_message_carries_the_hidden_tests(request, mode):
    result = request.getfixturevalue(mode)["echo_hidden_source"]
    source = {line.strip() for line in EX.hidden_tests.read_text().splitlines() if len(line.strip()) >= 10}
    messages = [t["message"] for ex in result["exercises"] for t in ex["tests"]]
    assert any(DUMP_REMOVED in m for m in messages)  # the forger did find the source
    for message in messages:
        assert not [line for line in source if line in message], message
        assert len(message) <= MAX_MESSAGE_CHARS


@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_a_test_that_took_op_counts_from_the_executor_says_so(request, mode):
    tests = {t["name"].split("::")[-1]: t for ex in request.getfixturevalue(mode)["honest"]["exercises"]
             for t in ex["tests"]}
    marked = sorted(name for name, t in tests.items() if t["checked_in_executor"])
    assert marked == ["test_does_not_call_torch_cross_entropy_log_softmax_or_nll_loss"], marked


def _exercise(result: dict, ex: catalog.Exercise) -> dict:
    return next(e for e in result["exercises"] if e["id"] == ex.id)


def test_the_neighbours_exercise_is_graded_in_the_tests_own_process():
    assert not ONE_PROCESS.separate_process


@pytest.mark.parametrize("mode", ["batch", "scored"])
def test_a_key_found_beside_one_exercise_forges_nothing_for_one_graded_apart(request, mode):
    result = request.getfixturevalue(mode)["neighbour"]
    apart = _exercise(result, EX)
    assert apart["score"] == 0 < apart["max_score"], [(t["name"], t["status"]) for t in apart["tests"]]
    # What it signed about its own exercise's tests is not prevented there: flagged for review.
    assert any("__closure__" in flag for flag in result["flags"]), result["flags"]
    # A test it signed it collected once submitted code ran is none, with its million points.
    own = _exercise(result, ONE_PROCESS)
    assert not [t["name"] for t in own["tests"] if t["name"].endswith("::test_forged")]
    assert result["max_score"] == request.getfixturevalue(mode)["honest"]["max_score"]


def test_only_a_module_present_is_graded_beside_its_tests(tmp_path):
    """An exercise graded in one process whose module was not staged runs no submitted code: its
    tests, reported not started, go with the exercises graded apart (no child of its own)."""
    from grader.engine.sandbox import _apart_first

    (tmp_path / EX.relpath).parent.mkdir(parents=True)
    shutil.copyfile(EX.reference, tmp_path / EX.relpath)
    assert _apart_first([ONE_PROCESS, EX], tmp_path) == [[ONE_PROCESS, EX]]
    (tmp_path / ONE_PROCESS.relpath).parent.mkdir(parents=True)
    shutil.copyfile(ONE_PROCESS.reference, tmp_path / ONE_PROCESS.relpath)
    assert _apart_first([ONE_PROCESS, EX], tmp_path) == [[EX], [ONE_PROCESS]]


TF_EX = catalog.get_exercise("tensorflow.autodiff.gradient_tape")
TF_FORGER = CORPUS / "tensorflow" / "gradient_tape_patches_its_checks.py"


def test_a_tensorflow_forger_graded_apart_earns_no_point_its_patches_would(tmp_path):
    """Zeros with the checks, TensorFlow's numerical gradient, NumPy and pytest patched in its own
    process: graded apart, it passes exactly the tests the same zeros pass unpatched, and the scan
    flags it for review."""
    assert TF_EX.separate_process
    plain = TF_EX.reference.parent / "wrong" / "gradient_tape" / "returns_zeros.py"
    results = {}
    for name, source in (("forger", TF_FORGER), ("plain", plain)):
        (tmp_path / name / TF_EX.relpath).parent.mkdir(parents=True)
        shutil.copyfile(source, tmp_path / name / TF_EX.relpath)
        results[name] = score_submission(tmp_path / name, [TF_EX.id], limits=LIMITS).to_dict()
    passed = {name: sorted(t["name"] for ex in result["exercises"] for t in ex["tests"] if t["status"] == "passed")
              for name, result in results.items()}
    assert passed["forger"] == passed["plain"], passed
    assert results["forger"]["score"] == results["plain"]["score"] < results["plain"]["max_score"]
    assert any("__code__" in flag for flag in results["forger"]["flags"]), results["forger"]["flags"]
