"""Hypothesis's character tables (``grader.engine.hypothesis_tables``): built once into the user's
cache, read from there by fork servers, and copied to each fresh child, whose copy no other
grading reads; without a cache, grading goes on and the children build them."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog
from grader._preload import TABLES_ENV
from grader.engine import hypothesis_tables
from grader.engine.scoring import score_submission
from tests.helpers import make_submission

BROADCASTING = catalog.get_exercise("pytorch.tensors.broadcasting")

# At import: what the child was given, and an attempt to overwrite every table of it.
TAMPERS = f'''
import json
import os
import pathlib

_WHERE = os.environ.get({TABLES_ENV!r}, "")
_FILES = sorted(str(p.relative_to(_WHERE)) for p in pathlib.Path(_WHERE).rglob("*") if p.is_file()) if _WHERE else []
for _name in _FILES:
    try:
        (pathlib.Path(_WHERE) / _name).write_bytes(b"forged")
    except OSError:
        pass
_SEEN = json.dumps({{"where": _WHERE, "files": _FILES}})


def pairwise_sq_dists(a, b):
    raise AssertionError("SEEN " + _SEEN)


batched_affine = pairwise_sq_dists
'''


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """An empty cache directory of the test's own, as if the grader had never run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(hypothesis_tables, "_built", {})
    return tmp_path / "cache"


def _digests(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}


def test_a_fresh_child_reads_a_copy_of_its_own_and_what_it_does_to_it_reaches_no_other_grading(
        own_cache, tmp_path):
    tables = hypothesis_tables.user_tables()
    assert tables is not None and tables.is_relative_to(own_cache)
    before = _digests(tables)
    assert any(name.endswith("charmap.json.gz") for name in before), before
    tamperer = make_submission(tmp_path / "tamperer", {BROADCASTING: TAMPERS})
    report = score_submission(tamperer, [BROADCASTING.id])
    seen = {t.message.split("SEEN ", 1)[1].splitlines()[0] for t in report.exercises[0].tests if "SEEN " in t.message}
    assert len(seen) == 1, [t.message for t in report.exercises[0].tests]
    seen = json.loads(seen.pop())
    assert not seen["where"].startswith(str(own_cache)) and seen["where"].endswith(hypothesis_tables.COPY_NAME)
    assert sorted(seen["files"]) == sorted(name for name in before if "tmp" not in name.split("/"))
    assert _digests(tables) == before
    honest = score_submission(catalog.KIT_ROOT / "solutions", [BROADCASTING.id])
    assert honest.score == honest.max_score > 0


def test_warm_reads_the_tables_the_environment_names(own_cache, tmp_path):
    """A doctored copy of the tables (one category's code points changed) is what hypothesis
    then draws from: they were read, not built."""
    tables = hypothesis_tables.user_tables()
    doctored = tmp_path / "doctored"
    for name in _digests(tables):
        (doctored / name).parent.mkdir(parents=True, exist_ok=True)
        (doctored / name).write_bytes((tables / name).read_bytes())
    [charmap] = doctored.rglob("charmap.json.gz")
    table = dict(json.loads(gzip.decompress(charmap.read_bytes())))
    table["Co"] = [[57344, 57345]]
    charmap.write_bytes(gzip.compress(json.dumps(sorted(table.items())).encode()))
    probe = ("from grader._preload import warm\nwarm(['hypothesis'])\n"
             "from hypothesis.internal.charmap import charmap\nprint(charmap()['Co'])\n")
    env = {**os.environ, TABLES_ENV: str(doctored), "HYPOTHESIS_NO_PLUGINS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                            timeout=120, cwd=catalog.KIT_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "((57344, 57345),)"


def test_without_a_cache_to_write_the_children_build_the_tables_and_grading_goes_on(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    monkeypatch.setattr(hypothesis_tables, "_built", {})
    assert hypothesis_tables.user_tables() is None
    assert hypothesis_tables.staged_in(tmp_path) == {} and hypothesis_tables.for_server() == {}
    report = score_submission(catalog.KIT_ROOT / "solutions", [BROADCASTING.id])
    assert report.score == report.max_score > 0 and report.problems == []


def test_a_relative_cache_folder_is_ignored_and_without_a_home_there_is_no_cache(tmp_path, monkeypatch):
    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(hypothesis_tables, "_built", {})
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec: ignored
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    tables = hypothesis_tables.user_tables()
    assert tables is not None and tables.is_relative_to(tmp_path / ".cache" / "tensor-drills")
    monkeypatch.setattr(Path, "home", no_home)
    monkeypatch.setattr(hypothesis_tables, "_built", {})
    assert hypothesis_tables.user_tables() is None
