"""Grade a batch on a Dask cluster: ``grader batch --cluster ADDRESS``, ``--scheduler-file FILE``
or ``--cluster local:N``.

The cluster is Dask's ``distributed`` scheduler: a ``LocalCluster`` of N worker processes on
this machine, or a running scheduler (``dask scheduler`` with ``dask worker`` processes on other
machines, ``dask-jobqueue`` on SLURM or PBS, the Dask Kubernetes operator). Workers need not
share the client's file system: each submission travels with its own task as a zip (a folder is
zipped, leaving out the environments and caches ``grader.workflows.batch.content_digest`` leaves out), and
its result comes back as the task's value. The worker's side is ``grader.workflows.dask_worker``.

Everything else is ``grader.workflows.batch.run_batch``'s: what is already graded, results written as they
arrive, the gradebook and feedback. A task whose worker dies is run again on another worker by
the scheduler; a submission that kills every worker that grades it ends, after the scheduler's
``distributed.scheduler.allowed-failures`` retries, as 0 points with the reason.

The option types below are cheap to import (the CLI's parser uses them); the rest imports
``grader.workflows.batch`` and ``distributed`` when a batch connects.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import uuid
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader import catalog
from grader.errors import UsageError

if TYPE_CHECKING:
    from grader.engine.sandbox import Limits
    from grader.workflows.batch import Entry

CONNECT_TIMEOUT_S = 10.0
# Tries of a task whose worker died before it is given up (the scheduler's setting; this is the
# value the local cluster gets, Dask's default).
LOCAL_ALLOWED_FAILURES = 3
# Submissions shipped but not yet graded: what the client holds in memory at once.
IN_FLIGHT = 256


def killed_reason(tries: int) -> str:
    """Why a submission whose grading killed its worker on each of ``tries`` tries has no grade."""
    return (f"not graded: the Dask worker grading it died on each of {tries} tries (the scheduler's "
            "distributed.scheduler.allowed-failures bounds them); the workers' logs say why (out "
            "of memory, a crash)")


_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d+)$")
_SCHEMES = ("tcp", "tls", "ws", "wss")


@dataclass(frozen=True)
class Cluster:
    """Where to grade: a scheduler's ``address`` (read from ``scheduler_file`` when that is
    given), or a LocalCluster of ``local_workers`` processes."""

    address: str = ""
    scheduler_file: str = ""
    local_workers: int = 0

    def __str__(self) -> str:
        if self.local_workers:
            return f"a local Dask cluster of {self.local_workers} worker process(es)"
        source = f" (from {self.scheduler_file})" if self.scheduler_file else ""
        return f"the Dask scheduler at {self.address}{source}"


def parse_cluster(text: str) -> Cluster:
    """The cluster ``text`` names (``grader batch --cluster``): ``local:N`` (N >= 1) or a scheduler
    address ``[tcp|tls|ws|wss://]HOST:PORT``.

    Raises:
        UsageError: ``text`` is neither.
    """
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise UsageError(
                f"{text!r}: expected local:N with N, the number of worker processes, 1 or more")
        return Cluster(local_workers=int(count))
    match = _ADDRESS.match(text)
    if not match or (match["scheme"] or "tcp") not in _SCHEMES or not 1 <= int(match["port"]) <= 65535:
        raise UsageError(
            f"{text!r} is not a scheduler address: expected tcp://HOST:PORT (or tls://, ws://, "
            "wss://) with a port from 1 to 65535, or local:N")
    return Cluster(address=text if match["scheme"] else f"tcp://{text}")


def read_scheduler_file(text: str) -> Cluster:
    """The cluster whose scheduler wrote the file at path ``text`` (``grader batch
    --scheduler-file``): the JSON file ``dask scheduler --scheduler-file FILE`` writes, holding
    the scheduler's address.

    Raises:
        UsageError: there is no such file, or it holds no scheduler address.
    """
    path = Path(text)
    if not path.is_file():
        raise UsageError(
            f"{text}: no such file (give the file that `dask scheduler --scheduler-file` wrote)")
    try:
        address = json.loads(path.read_text(encoding="utf-8"))["address"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        address = None
    if not isinstance(address, str) or not address:
        raise UsageError(f"{text} is not a Dask scheduler file: it holds no scheduler address")
    return Cluster(address=address, scheduler_file=text)


def pack(entry: Entry) -> tuple[bytes, bool]:
    """What to ship for ``entry``: a zip's bytes as handed in, or a zip of a folder's regular
    files (environments and caches, and symbolic links, which grading never follows, left out);
    and whether it was a folder."""
    from grader.workflows.batch import _NOT_CONTENT

    if entry.path.is_file():
        return entry.path.read_bytes(), False
    buffer = io.BytesIO()
    count = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for dirpath, dirnames, filenames in os.walk(entry.path):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOT_CONTENT)
            for name in sorted(filenames):
                file = Path(dirpath, name)
                if file.is_file() and not file.is_symlink():
                    archive.write(file, file.relative_to(entry.path).as_posix())
                    count += 1
    return (buffer.getvalue() if count else b""), True


def _has_worker_plugin(name: str, dask_scheduler=None) -> bool:
    return name in dask_scheduler.worker_plugins


def _done(value: tuple[dict, str]) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


class DaskGrading:
    """A connection to ``cluster`` that grades a batch (a context manager: ``close`` ends it).

    Raises:
        BatchError: the scheduler cannot be reached within ``CONNECT_TIMEOUT_S``, or a worker
            cannot run this kit's grader.
    """

    def __init__(self, cluster: Cluster, log: Callable[[str], None]) -> None:
        from grader.workflows.batch import BatchError

        try:
            import dask
            from distributed import Client, LocalCluster

            from grader.workflows.dask_worker import PLUGIN_NAME, GradingPlugin, kit_fingerprint
        except ImportError as exc:
            raise BatchError(f"grading on a cluster needs Dask's distributed package ({exc}): "
                             "pip install 'tensor-drills[distributed]'") from None

        self.cluster, self.log = cluster, log
        self._local = None
        self.client = None
        try:
            if cluster.local_workers:
                with dask.config.set({"distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES}):
                    self._local = LocalCluster(n_workers=cluster.local_workers, threads_per_worker=1,
                                               processes=True, host="127.0.0.1",
                                               dashboard_address=":0")  # no fixed port to clash on
                self.client = Client(self._local)
            else:
                self.client = Client(cluster.address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise BatchError(f"cannot reach {cluster} within {CONNECT_TIMEOUT_S:g} s ({exc}): is "
                             "the scheduler running there, and can this machine reach its port?") from None
        self.fingerprint = kit_fingerprint()
        try:
            # Once per cluster: registering it again would tear down the plugin, and the fork
            # servers, of a batch another client may be grading there.
            if not self.client.run_on_scheduler(_has_worker_plugin, PLUGIN_NAME):
                self.client.register_plugin(GradingPlugin(), name=PLUGIN_NAME)
            theirs = self.client.run(kit_fingerprint)
        except Exception as exc:  # noqa: BLE001 - whatever a worker raised, it cannot grade
            self.close()
            raise BatchError(f"the workers of {cluster} cannot run this kit's grader "
                             f"({type(exc).__name__}: {exc}): install the kit on every worker") from None
        other = sorted(addr for addr, fingerprint in theirs.items() if fingerprint != self.fingerprint)
        if other:
            self.close()
            raise BatchError(f"worker(s) {', '.join(other)} of {cluster} have another version of the "
                             f"kit than this one ({catalog.KIT_ROOT}): install the same kit everywhere")
        if not theirs:
            log(f"{cluster} has no worker yet: the batch waits for workers to join")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self._local is not None:
            self._local.close()

    def __enter__(self) -> DaskGrading:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def grade(self, todo: list[Entry], exercise_ids: list[str] | None, limits: Limits,
              hide: list[Path], fork: bool) -> Iterator[list[tuple[Entry, Future]]]:
        """Grade ``todo`` on the cluster, one task per submission; yield each entry with a done
        future of ``grade_entry``'s value as soon as its task ends (as ``grader.workflows.batch``'s local
        path yields what finished). An entry that cannot be graded at all (``Entry.problem``) is
        answered here, not shipped. An entry that reached a worker with another kit is logged
        and not yielded: a rerun grades it."""
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        from grader.workflows.batch import _error_result, grade_entry
        from grader.workflows.dask_worker import KitMismatch, grade_shipped

        exercises = [catalog.get_exercise(i) for i in exercise_ids] if exercise_ids else []
        running: dict = {}  # future -> entry
        finished = as_completed()

        def ship(entry: Entry) -> None:
            payload, is_folder = pack(entry)
            future = self.client.submit(
                grade_shipped, entry.name, entry.path.name, payload, is_folder, exercise_ids, limits,
                [str(p) for p in hide], fork, self.fingerprint,
                key=f"grade-{entry.name}-{uuid.uuid4().hex[:8]}", retries=0)
            running[future] = entry
            finished.add(future)

        try:
            for entry in (e for e in todo if e.problem):
                yield [(entry, _done(grade_entry(entry, exercise_ids, limits, hide)))]
            shippable = (e for e in todo if not e.problem)
            for entry in itertools.islice(shippable, IN_FLIGHT):
                ship(entry)
            for future in finished:
                entry = running.pop(future)
                following = next(shippable, None)
                if following is not None:
                    ship(following)
                if future.status == "finished":
                    result, feedback = future.result()
                    result["submission"] = str(entry.path)  # not the worker's copy
                    yield [(entry, _done((result, feedback)))]
                    continue
                exc = future.exception()
                if isinstance(exc, KitMismatch):
                    self.log(f"{entry.name}: not graded: {exc}; run the batch again to grade it")
                elif isinstance(exc, KilledWorker):
                    reason = killed_reason(exc.allowed_failures + 1)
                    yield [(entry, _done((_error_result(entry, reason, exercises),
                                          f"## {entry.name}\n\n{reason[0].upper()}{reason[1:]}\n")))]
                else:
                    failed: Future = Future()
                    failed.set_exception(exc)
                    yield [(entry, failed)]
        finally:
            if running:
                self.client.cancel(list(running))
