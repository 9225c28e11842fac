"""The worker's side of grading on a Dask cluster (``grader.workflows.dask_batch`` is the client's).

Every Dask worker that grades runs ``GradingPlugin``, which the client registers on the
cluster (workers that join later get it too). It gives the worker a private folder for the
submissions shipped to it and closes the worker's fork servers when the worker stops. Between
tasks, and from one batch to the next, the fork servers (``grader.engine.forkserver``, each its
own process started with ``subprocess``, never a fork of the threaded worker) stay alive, so a
task pays only for forking its grading child, as on the local path; as in any grader process,
a server no child has run in for ``forkserver.IDLE_S`` is closed.

``grade_shipped`` is the task, one per submission: it writes the submission's bytes into that
folder, grades them with ``grader.workflows.batch.grade_entry`` (the same sandbox as a local batch) and
returns the result and the feedback. Importing this module imports ``distributed``.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import tempfile
from pathlib import Path

from distributed import WorkerPlugin, get_worker

from grader import PACKAGE_DIR, __version__, catalog
from grader.engine import forkserver
from grader.engine.intake import unpack
from grader.engine.sandbox import Limits, kill_all
from grader.workflows.batch import Entry, grade_entry

PLUGIN_NAME = "tensor-drills-grading"


class KitMismatch(RuntimeError):
    """This worker's kit (grader, catalog, tests) is not the client's: it must not grade."""


@functools.cache
def kit_fingerprint() -> str:
    """SHA-256 of what decides a grade besides the submission: the kit's version, its catalog and
    pytest configuration, the ``grader`` package's code and every exercise's public and hidden
    tests. A client and its workers must agree on it. Computed once per process."""
    digest = hashlib.sha256(__version__.encode())
    grader_dir = PACKAGE_DIR
    files = [catalog.KIT_ROOT / name for name in ("catalog.toml", "pyproject.toml", "conftest.py")]
    files += sorted(grader_dir.rglob("*.py"))
    files += [p for ex in catalog.load_catalog().values() for p in (ex.public_tests, ex.hidden_tests)]
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class GradingPlugin(WorkerPlugin):
    """Per worker: a private folder for shipped submissions; the worker's fork servers are
    closed when it stops."""

    name = PLUGIN_NAME

    def setup(self, worker) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="grader-dask-"))

    def teardown(self, worker) -> None:
        kill_all()
        forkserver.close_all()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)


def grade_shipped(name: str, filename: str, payload: bytes, is_folder: bool,
                  exercise_ids: list[str] | None, limits: Limits, hide: list[str], fork: bool,
                  fingerprint: str) -> tuple[dict, str]:
    """Grade one shipped submission on this worker; return (result, feedback) as
    ``grade_entry`` does.

    ``payload``: the zip the submission was handed in as (``filename``), or, when ``is_folder``,
    a zip of the folder ``name``, which is unpacked back into a folder of that name first.
    ``hide``: the client's folders that the grading child must not see, should this worker
    share the client's file system; the worker's folder of shipped submissions is hidden too.

    Raises:
        KitMismatch: this worker's ``kit_fingerprint`` is not ``fingerprint``.
    """
    if kit_fingerprint() != fingerprint:
        raise KitMismatch(f"the worker at {get_worker().address} has another version of the kit "
                          f"({catalog.KIT_ROOT}) than the client: install the same kit on every worker")
    plugin = get_worker().plugins[PLUGIN_NAME]
    # Hidden from the grading child by its jail, which each request to the fork server names:
    # one server serves every batch whatever it hides.
    hide_paths = [Path(p) for p in hide] + [plugin.root]
    with tempfile.TemporaryDirectory(dir=plugin.root) as tmp:
        if is_folder:
            path = Path(tmp, name)
            path.mkdir()
            if payload:  # empty: the folder held nothing but environments and caches
                shipped = Path(tmp, ".shipped.zip")
                shipped.write_bytes(payload)
                unpack(shipped, path)  # the client zipped the folder's regular files: none is left out
                shipped.unlink()
        else:
            path = Path(tmp, filename)
            path.write_bytes(payload)
        return grade_entry(Entry(name, path), exercise_ids, limits, hide_paths, fork=fork)
