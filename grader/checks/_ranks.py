"""Run functions of the module under test on several ranks: processes that meet on loopback,
watched from the test's process so that a rank that raises, crashes or hangs fails the test with a
clear message within its time limit. A rank is never forked from the test's process, which has
run multi-threaded torch ops, but from a fork server of multiprocessing's (``_context``)."""

from __future__ import annotations

import contextlib
import datetime
import gc
import importlib.util
import multiprocessing
import multiprocessing.connection
import os
import pickle
import re
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType
from typing import Any

# The line an untouched stub raises from (as the plugin tells a stub that is "not started").
_STUB_RAISE = re.compile(r"raise\s+NotImplementedError\b")
_MESSAGE_CHARS = 1500  # a gloo error can run to pages
_SETTLE_S = 3.0  # after a rank's error, how long the others may take to answer before being stopped


class RankFailed(AssertionError):
    """A rank raised, ended without a result, or did not finish in time. ``rank`` is the rank
    (the first still running, for a time-out) and ``raised`` the name of the exception's type
    when the rank raised one (else ``None``)."""

    def __init__(self, message: str, *, rank: int, raised: str | None = None) -> None:
        super().__init__(message)
        self.rank, self.raised = rank, raised


@dataclass
class RankResult:
    """What one rank's call gave: its return value and its arguments as the call left them."""

    returned: Any
    args: tuple
    kwargs: dict


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Ranks:
    """``size`` processes (forked by ``_context``'s server) that each load the module ``fn``'s
    come from, once, and then run calls of its functions, one job at a time (starting them costs
    milliseconds once the server runs, a job a fraction of a second). A job in which a rank fails
    stops them all unless every rank answered within ``_SETTLE_S`` of the first error; the next
    job then starts fresh ones."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._procs: list = []
        self._conns: list = []
        self._ready: set[int] = set()  # processes whose imports are done
        self._module: tuple[str, str] | None = None

    def __enter__(self) -> Ranks:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def run(self, fn: FunctionType, calls: Callable[[int, str], tuple[tuple, dict]], *, ranks: int | None = None,
            process_group: bool = False, timeout_s: float = 40.0) -> list[RankResult]:
        """Call ``fn(*args, **kwargs)`` in processes ``0 .. ranks - 1`` (default: all), process ``r``
        with ``args, kwargs = calls(r, init_method)``, and return what each gave, by process.

        ``fn`` is a function of a module loaded from a file (the ``impl`` fixture's); each process
        loads that file under the same module name and runs with one intra-op thread and
        ``GLOO_SOCKET_IFNAME=lo``. ``init_method`` is ``tcp://127.0.0.1:PORT`` with a free port: the
        ranks meet on loopback. With ``process_group`` each process first joins a gloo default
        process group there as rank ``r`` of ``ranks`` (timeout ``timeout_s``) and leaves it after
        the call; otherwise ``fn`` makes its own (a group it leaves behind is destroyed after the
        job). Arguments and results travel pickled.

        Raises:
            RankFailed: a rank raised (the message gives its exception and the lines of ``fn``'s
                module it came through), ended without a result, or the job had not finished
                ``timeout_s`` after it started (the time to start the processes not counted).
            NotImplementedError: a rank ran into an untouched stub's ``raise NotImplementedError``;
                it is raised again from that line, so the test reads as not started.
        """
        module = sys.modules[fn.__module__]
        self._start((module.__name__, module.__file__))
        count = self.size if ranks is None else ranks
        init_method = f"tcp://127.0.0.1:{free_loopback_port()}"
        jobs = []
        for rank in range(count):
            args, kwargs = calls(rank, init_method)
            jobs.append(pickle.dumps((fn.__name__, tuple(args), dict(kwargs), process_group, rank, count,
                                      init_method, timeout_s)))
        try:
            self._wait_ready()
            for conn, job in zip(self._conns, jobs):
                conn.send_bytes(job)
            return self._collect(count, module.__file__, timeout_s)
        except (RankFailed, NotImplementedError):
            raise  # _collect stopped the processes if they might still be busy
        except BaseException:
            self.close()  # interrupted (the test's time limit): the ranks may be mid-job
            raise

    def close(self) -> None:
        """Stop the processes (killed when they do not end on their own)."""
        for conn in self._conns:
            conn.close()  # a waiting process reads the end of its jobs and exits
        for proc in self._procs:
            proc.join(1)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        self._procs, self._conns, self._ready, self._module = [], [], set(), None

    def start(self, fn: FunctionType) -> Ranks:
        """Start the processes for ``fn``'s module now and wait until they are ready (a fixture's
        setup can pay for it, outside any test's own time); ``run`` does this when needed."""
        module = sys.modules[fn.__module__]
        self._start((module.__name__, module.__file__))
        self._wait_ready()
        return self

    def _start(self, module: tuple[str, str]) -> None:
        if self._procs and self._module == module:
            return
        self.close()
        ctx = _context()
        for index in range(self.size):
            here, there = ctx.Pipe()
            proc = ctx.Process(target=_rank_loop, args=(*module, there), name=f"rank-{index}", daemon=True)
            proc.start()
            there.close()
            self._procs.append(proc)
            self._conns.append(here)
        self._module = module

    def _wait_ready(self, limit_s: float = 120.0) -> None:
        """Wait for each new process's "ready" (its imports done): starting is not the job's time."""
        for index, conn in enumerate(self._conns):
            if index in self._ready:
                continue
            if not conn.poll(limit_s):
                raise RankFailed(f"process {index} did not start within {limit_s:g} s", rank=index)
            try:
                conn.recv_bytes()
            except EOFError:
                raise RankFailed(f"process {index} ended while starting (exit code {self._procs[index].exitcode})",
                                 rank=index) from None
            self._ready.add(index)

    def _collect(self, count: int, module_file: str, timeout_s: float) -> list[RankResult]:
        """Each rank's result; on a rank's error, the first one raised once every rank has answered
        (the processes then stay for the next job) or ``_SETTLE_S`` later (the rest are stuck)."""
        deadline = time.monotonic() + timeout_s
        records: dict[int, tuple] = {}
        waiting = dict(enumerate(self._conns[:count]))
        first_error: int | None = None
        while waiting:
            ready = multiprocessing.connection.wait(list(waiting.values()),
                                                    timeout=max(deadline - time.monotonic(), 0))
            if not ready:
                if first_error is not None:
                    break
                ranks = ", ".join(map(str, sorted(waiting)))
                self.close()
                raise RankFailed(
                    f"rank {ranks} of {count} had not finished {timeout_s:g} s after the job started; "
                    "the ranks were stopped (a rank waiting for a collective call that another rank "
                    "never makes waits forever: every rank must make the same collective calls in the "
                    "same order)", rank=min(waiting))
            for conn in ready:
                rank = next(r for r, c in waiting.items() if c is conn)
                del waiting[rank]
                try:
                    records[rank] = pickle.loads(conn.recv_bytes())
                except EOFError:
                    self._procs[rank].join(5)
                    records[rank] = ("ended", self._procs[rank].exitcode)
                if records[rank][0] != "ok" and first_error is None:
                    first_error = rank
                    deadline = min(deadline, time.monotonic() + _SETTLE_S)
        if first_error is None:
            return [RankResult(*records[rank][1:]) for rank in range(count)]
        if waiting or any(r[0] == "ended" for r in records.values()):
            self.close()
        record = records[first_error]
        if record[0] == "ended":
            raise RankFailed(f"rank {first_error} of {count} ended (exit code {record[1]}) without returning "
                             "a result", rank=first_error)
        _raise_rank_error(first_error, count, module_file, *record[1:])


def run_ranks(fn: FunctionType, world_size: int, calls: Callable[[int, str], tuple[tuple, dict]], *,
              process_group: bool = False, timeout_s: float = 40.0) -> list[RankResult]:
    """``Ranks(world_size).run(fn, calls, ...)`` in processes started for this one job."""
    with Ranks(world_size) as ranks:
        return ranks.run(fn, calls, process_group=process_group, timeout_s=timeout_s)


# What a rank imports before any job's time starts (DDP imports torch._dynamo when it first wraps
# a model: seconds); the fork server imports it once.
_PRELOAD = [__name__, "torch", "torch._dynamo", "torch.distributed", "torch.nn.parallel"]


def _context() -> multiprocessing.context.BaseContext:
    """The context ranks start in: multiprocessing's fork server, one fresh interpreter per test
    process (started on first use, ending with it) that imports ``_PRELOAD`` and runs no torch op,
    so a rank forked from it is safe to fork and starts in milliseconds. Spawning each rank instead
    cost an interpreter importing torch (seconds of CPU) per rank, again after every job that
    stopped the ranks."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


def _raise_rank_error(rank: int, world_size: int, module_file: str, kind: str, text: str,
                      frames: list[tuple[str, int, str, str]]) -> None:
    if kind == "NotImplementedError" and frames and frames[-1][0] == module_file and _STUB_RAISE.match(frames[-1][3]):
        _raise_from_line(module_file, frames[-1][1], text)
    text = text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + " [...]"
    lines = [f"rank {rank} of {world_size} raised {kind}: {text}"]
    own = [f for f in frames if f[0] == module_file]
    if own:
        lines.append("raised in your code:")
        for filename, lineno, name, line in own[-4:]:
            lines.append(f"  {Path(filename).name}, line {lineno}, in {name}")
            if line:
                lines.append(f"    {line}")
    raise RankFailed("\n".join(lines), rank=rank, raised=kind)


def _raise_from_line(filename: str, lineno: int, text: str) -> None:
    """Raise NotImplementedError from a frame at ``filename:lineno``: a rank's untouched stub then
    reads, in the test's process, as the stub it is (the plugin tells a stub by that frame)."""
    code = compile("\n" * (lineno - 1) + "raise NotImplementedError(text)", filename, "exec")
    exec(code, {"text": text})  # noqa: S102 - fixed source, only placed at the stub's line


def _rank_loop(module_name: str, module_file: str, conn) -> None:
    """A rank's process: import torch and what distributed jobs use (before any job's time
    starts), say ready, then run each job sent until the pipe closes."""
    from grader._lifetime import die_with_parent

    die_with_parent()  # its parent, the fork server, ends with the test process that watches the rank
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    for name in _PRELOAD:  # the fork server imported them, unless one failed to import there
        importlib.import_module(name)
    import torch

    torch.set_num_threads(1)  # the ranks share the machine's cores
    _keep_process_groups()
    gc.freeze()  # what the imports made: a collection after a job then costs milliseconds
    conn.send_bytes(b"ready")
    module = None
    while True:
        try:
            job = conn.recv_bytes()
        except EOFError:
            return
        try:
            if module is None:
                module = _load(module_name, module_file)
            record = _run_job(module, *pickle.loads(job))
        except BaseException as exc:  # noqa: BLE001 - every failure of the rank is the test's to report
            record = _failure(exc)
        try:
            data = pickle.dumps(record)
        except Exception as exc:  # noqa: BLE001 - a result that cannot travel is the rank's failure
            data = pickle.dumps(("raised", type(exc).__name__, f"its result could not be pickled: {exc}", []))
        conn.send_bytes(data)
        _release_process_groups()  # after the answer: not the job's time


# The default process groups made while ``_keep_process_groups`` was in effect.
_GROUPS_OF_THE_JOB: list = []


def _keep_process_groups() -> Callable[[Any], None]:
    """Hold a Python reference to every default process group made from now on until
    ``_release_process_groups``, so that its C++ destructor never runs under the GIL. Returns
    torch's own function this wraps (``process_groups_kept`` puts it back).

    Why: ``DistributedDataParallel``'s C++ ``Reducer`` holds the group too, and when the learner's
    function returns after ``destroy_process_group()`` the Reducer (freed with the DDP module, under
    the GIL) can hold its last reference. ``~ProcessGroupGloo`` then joins its worker threads with
    the GIL held, while a worker may still be releasing the all-reduce it just finished, whose
    captured thread-local state holds a Python object (the autograd engine stashes a context there
    during ``backward``) and so needs the GIL: a deadlock whenever that worker is late (at random,
    on a loaded machine), which no time limit in that process can interrupt. A process group whose
    last reference is a Python one releases the GIL before its destructor runs.
    ``init_process_group`` and ``destroy_process_group`` both set the default group through
    ``distributed_c10d._update_default_pg``, however the learner imported them; wrapping it sees
    every default group."""
    import torch.distributed.distributed_c10d as c10d

    update = c10d._update_default_pg

    def _update_default_pg(pg) -> None:
        if pg is not None:
            _GROUPS_OF_THE_JOB.append(pg)
        update(pg)

    c10d._update_default_pg = _update_default_pg
    return update


def _release_process_groups() -> None:
    """After a job that made process groups: free what it left (a DDP module in a reference cycle
    holds its group through its Reducer), then drop the job's groups, the last references, without
    the GIL (above)."""
    if _GROUPS_OF_THE_JOB:
        gc.collect()
        _GROUPS_OF_THE_JOB.clear()


@contextlib.contextmanager
def process_groups_kept() -> Iterator[None]:
    """For a test that runs the learner's distributed code in its own process (a one-rank group):
    the default process groups made in the block are kept until it ends and then freed without
    the GIL, as a rank's are after each job (``_keep_process_groups`` says why)."""
    import torch.distributed.distributed_c10d as c10d

    update = _keep_process_groups()
    try:
        yield
    finally:
        c10d._update_default_pg = update
        _release_process_groups()


def _load(module_name: str, module_file: str):
    spec = importlib.util.spec_from_file_location(module_name, module_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # so that pickles name its classes
    spec.loader.exec_module(module)
    return module


def _run_job(module, fn_name: str, args: tuple, kwargs: dict, process_group: bool, rank: int, world_size: int,
             init_method: str, timeout_s: float) -> tuple:
    import torch.distributed as dist

    try:
        if process_group:
            dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size,
                                    timeout=datetime.timedelta(seconds=timeout_s))
        returned = getattr(module, fn_name)(*args, **kwargs)
        return ("ok", returned, args, kwargs)
    except BaseException as exc:  # noqa: BLE001 - reported by the caller
        return _failure(exc)
    finally:
        if dist.is_initialized():  # ours, or one the function left behind: the next job starts clean
            dist.destroy_process_group()


def _failure(exc: BaseException) -> tuple:
    frames = [(f.filename, f.lineno, f.name, f.line or "") for f in traceback.extract_tb(exc.__traceback__)]
    return ("raised", type(exc).__name__, str(exc), frames)
