"""The fork server: children forked from it grade exactly like fresh interpreters, in the same
jail, and one that hangs or dies does not take the server (or the next submission) with it."""

from __future__ import annotations

import os

import pytest

from grader import _forkserver, catalog
from grader.sandbox import Limits, preload_modules
from grader.scoring import score_submission
from tests.helpers import make_submission

BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")
HANGS = '''
def pairwise_sq_dists(a, b):
    while True:
        pass


def batched_affine(x, weight, bias):
    return x @ weight.T + bias
'''


@pytest.fixture(autouse=True)
def fresh_servers():
    yield
    _forkserver.close_all()


def _summary(report):
    return [(ex.id, ex.score, ex.max_score, [(t.name, t.status) for t in ex.tests])
            for ex in report.exercises]


def test_forked_and_fresh_children_grade_alike():
    for root in (catalog.KIT_ROOT / "solutions", catalog.KIT_ROOT / "exercises"):
        fresh = score_submission(root, [BROADCASTING.id])
        forked = score_submission(root, [BROADCASTING.id], fork=True)
        assert _summary(forked) == _summary(fresh)
        assert forked.sandbox == fresh.sandbox
        assert forked.problems == fresh.problems == []


def test_a_hanging_child_is_killed_and_the_server_serves_the_next(tmp_path):
    hanging = make_submission(tmp_path / "hangs", {BROADCASTING: HANGS})
    report = score_submission(hanging, [BROADCASTING.id], fork=True,
                              limits=Limits(wall_s=60, test_s=3))
    timed_out = [t for t in report.exercises[0].tests if "Timeout" in t.message]
    assert timed_out and report.exercises[0].score < report.exercises[0].max_score
    server = _forkserver.server_for(preload_modules([BROADCASTING]), {})
    assert server.alive()
    again = score_submission(catalog.KIT_ROOT / "solutions", [BROADCASTING.id], fork=True)
    assert again.score == again.max_score > 0


def test_a_child_killed_at_the_wall_clock_limit_scores_zero_with_the_reason(tmp_path):
    hanging = make_submission(tmp_path / "hangs", {BROADCASTING: HANGS})
    report = score_submission(hanging, [BROADCASTING.id], fork=True,
                              limits=Limits(wall_s=8, test_s=600))
    assert any("wall-clock limit" in p for p in report.problems)
    assert report.score < report.max_score


def test_the_server_preloads_only_the_frameworks_in_use():
    torch_only = preload_modules([BROADCASTING])
    assert "torch" in torch_only and "tensorflow" not in torch_only
    mixed = [ex for ex in catalog.load_catalog().values() if ex.framework == "crossframework"]
    if mixed:
        assert {"torch", "tensorflow"} <= set(preload_modules(mixed))


def test_the_server_exits_when_the_grader_goes_away():
    server = _forkserver.ForkServer(("json",), dict(os.environ))
    server._proc.stdin.close()  # what the grader's death does to the pipe
    assert server._proc.wait(timeout=10) == 0
    server.close()
