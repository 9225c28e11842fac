"""A fork server for grading children: pay the imports and the collection once per batch, not per child.

``python -m grader.engine.forkserver FD SESSION MODULE ...`` imports the named modules (pytest,
hypothesis, torch and/or tensorflow), starts the pytest session of the command line SESSION (a
JSON list) and collects its tests, runs no test and no tensor op (a process that ran
multithreaded torch or TF ops cannot fork safely), prints ``ready`` and then, in place of the
session's test loop, serves requests on FD, one end of a socket pair the grader made: there is
no socket file, so no grading child (nor anyone else) can reach the server, and the server checks
that its peer is the grader's user. Each request carries an environment, the child's staged work
directory, the jail it is graded in (a ``grader.engine.jail`` policy: limits, what it may read) and
four descriptors (output, report pipe, key pipe, and the socket the server answers on). Only the
grader can send one (see above), and only a work directory the grader staged is taken
(``valid_workdir``): one server serves submissions under any limits and hidden paths. The
server forks one child per request (where the jail is ``full``, as the first process of a PID
namespace of its own); the child starts a new session, takes the descriptors,
replaces its environment, enters the jail (``grader.engine.jail.apply``),
narrows the collected session to the tests its work directory's ``CHILD_OPTIONS`` name, with the
submission they test (``grader.pytest_plugin.start_forked_session``), and runs pytest's own test
loop and the rest of the session. Every child is a fresh fork of a server that never ran a test:
nothing one submission does reaches the next. The server answers with the child's pid, then with
its exit status when it ends. It exits when its stdin (a pipe from the grader) or its request
socket closes.

The grader's side is ``ForkServer``; its children look like ``subprocess.Popen`` objects to the
supervisor (``pid``, ``stdout``, ``wait``). A grader process shares its servers among all its
gradings (``server_for``), and closes each once it has had no child running for ``IDLE_S``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

# Imported here, by the server once, not by each child it forks (11 ms a child, page copies included).
from grader._lifetime import die_with_parent
from grader.engine import jail

MAX_REQUEST = 1 << 20
FD_NAMES = ("output", "report", "key", "reply")
WORKDIR_PREFIX = "drills-"  # what ``grader.engine.sandbox`` names the directories it stages


# ----------------------------------------------------------------------------- server side


def valid_workdir(path: str) -> bool:
    """Whether ``path`` is a work directory the grader staged: a real directory directly in the
    temporary directory, named by the grader, owned by the server's own user."""
    try:
        info = os.lstat(path)
    except (OSError, TypeError, ValueError):
        return False
    parent, name = os.path.split(os.path.normpath(path))
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and name.startswith(WORKDIR_PREFIX)
            and os.path.realpath(parent) == os.path.realpath(tempfile.gettempdir())
            and os.path.isdir(os.path.join(path, "rw", "cwd")))


CHILD_OPTIONS = "child.json"  # in the work directory: what ``start_forked_session`` takes, descriptors aside


def _become_child(request: dict, fds: list[int], first_of_pid_namespace: bool) -> dict:
    """In the forked child: take the request's descriptors, environment and jail, what a fresh
    grading child gets; return the child's options (``CHILD_OPTIONS``) with its descriptors.
    ``first_of_pid_namespace``: the server forked it as the first process of a PID namespace
    (``grader.engine.jail.fork_first_of_pid_namespace``)."""
    os.setsid()
    die_with_parent()  # a child never outlives its server
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    output, report, key = fds[:3]
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    keep = sorted({0, 1, 2, report, key})
    for low, high in zip(keep, [*keep[1:], 65536]):
        os.closerange(low + 1, high)  # the request socket and every other child's included
    workdir = request["workdir"]
    with open(os.path.join(workdir, CHILD_OPTIONS), encoding="utf-8") as stream:
        options = json.load(stream)
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the server's may be cached; the child's TMPDIR differs
    os.chdir(os.path.join(workdir, "rw", "cwd"))
    jail.apply({**request["policy"], "workdir": workdir}, first_of_pid_namespace=first_of_pid_namespace)
    sys.path[0] = os.getcwd()  # what `python -m pytest` run there would have
    return {**options, "report_fd": report, "key_fd": key}


def _peer_is_us(sock: socket.socket) -> bool:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.geteuid()


def _serve(requests: socket.socket, ready: int) -> dict | None:
    """Say ``ready`` on the descriptor ``ready``, then fork a child per request on ``requests``.
    Returns in each child, jailed, with its options (``_become_child``); returns None in the
    server when stdin or the request socket closes (the grader is gone)."""
    # Where the jail is full, each child is forked the first process of a PID namespace of its
    # own: the jail then needs no second fork. Its exit status reads as the jail process's would.
    in_namespace = jail.level() == "full"
    fork = jail.fork_first_of_pid_namespace if in_namespace else os.fork
    os.write(ready, b"ready\n")
    os.close(ready)
    clients: dict[int, socket.socket] = {}  # child pid -> the socket to answer on
    exits: dict[int, int] = {}  # child pid -> a descriptor readable once it ends (pidfd_open)
    while True:
        # A child's end wakes the loop through its pidfd; one without (a kernel or sandbox that
        # refuses pidfd_open) is polled every 50 ms, which a child's grader would wait out.
        polled = len(exits) < len(clients)
        readable, _, _ = select.select([requests, sys.stdin, *exits.values()], [], [], 0.05 if polled else None)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1024):
            return None  # the grader is gone
        if requests in readable:
            try:
                message, fds, _, _ = socket.recv_fds(requests, MAX_REQUEST, len(FD_NAMES))
            except OSError:
                return None
            if not message:
                return None  # the grader closed its end
            try:
                request = json.loads(message)
                ok = (len(fds) == len(FD_NAMES) and valid_workdir(request["workdir"])
                      and isinstance(request["policy"], dict))
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                for fd_ in fds:
                    os.close(fd_)
                continue
            sys.stdout.flush()
            pid = fork()
            if pid == 0:
                try:
                    return _become_child(request, fds, in_namespace)
                except BaseException:  # noqa: BLE001 - report anything, the child must not serve
                    import traceback

                    traceback.print_exc()
                    os._exit(70)
            for fd_ in fds[:3]:
                os.close(fd_)
            reply = clients[pid] = socket.socket(fileno=fds[3])
            with contextlib.suppress(AttributeError, OSError):
                exits[pid] = os.pidfd_open(pid)
            try:
                reply.sendall(f"pid {pid}\n".encode())
            except OSError:
                pass
        while clients:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in exits:
                os.close(exits.pop(pid))
            reply = clients.pop(pid, None)
            if reply is not None:
                if os.WIFSIGNALED(status):
                    code = 128 + os.WTERMSIG(status) if in_namespace else -os.WTERMSIG(status)
                else:
                    code = os.WEXITSTATUS(status)
                try:
                    reply.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                reply.close()


def _serving_plugin(requests: socket.socket, ready: int):
    """The pytest plugin that turns the server's collected session into a loop of forks: its
    ``pytest_runtestloop`` serves requests, and in each child hands the session, narrowed to that
    child's tests (``grader.pytest_plugin.start_forked_session``), to pytest's own test loop."""
    import pytest

    from grader import pytest_plugin

    class ServeRequests:
        serving = False  # whether the session got as far as its test loop

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
            self.serving = True
            # pytest's output capture holds descriptors of the server's (saved outputs, files):
            # it stops here and starts over in each child, on the child's own output.
            capture = session.config.pluginmanager.get_plugin("capturemanager")
            capture.stop_global_capturing()
            for item in session.items:
                item.location  # noqa: B018 - a cached property pytest fills per test: once here, not per child
            pytest_plugin.index_session(session)  # once here, not per child
            gc.collect()
            gc.freeze()  # children never collect (or copy, on write) what was loaded here
            options = _serve(requests, ready)
            if options is None:
                return True  # the grader is gone: no test runs in the server
            capture.start_global_capturing()
            capture.suspend_global_capture()
            pytest_plugin.start_forked_session(session, **options)
            return None  # pytest's own loop runs the child's tests

    return ServeRequests()


def serve(fd: int, session: list[str], modules: list[str]) -> None:
    """Preload ``modules`` and collect the tests of the pytest command line ``session``, then fork
    a jailed child per request on the socket ``fd`` until stdin or that socket closes; each child
    runs its own tests of that one collected session."""
    from grader import _preload

    _preload.warm(modules)  # imports, and the caches its children's tests would otherwise each fill
    requests = socket.socket(fileno=fd)
    if not _peer_is_us(requests):
        sys.exit("fork server: the request socket is not the grader's")
    server = os.getpid()
    ready, errors = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the session's own output is nobody's; a child's goes to its grader
    os.dup2(devnull, 2)
    os.close(devnull)
    import pytest

    plugin = _serving_plugin(requests, ready)
    code = 70
    try:
        code = int(pytest.main(session, plugins=[plugin]))
    finally:
        if os.getpid() != server:  # a child, at the end of its session
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    if not plugin.serving:
        os.write(errors, f"fork server: the pytest session ended (exit status {code}) before its "
                         "test loop: its tests did not collect\n".encode())
        sys.exit(1)


# ----------------------------------------------------------------------------- grader side


class ForkedChild:
    """A child forked by the server, with the parts of ``subprocess.Popen`` the supervisor uses.
    ``on_end()`` is called once, when its end is known (or its server is gone)."""

    def __init__(self, conn: socket.socket, output_r: int, on_end: Callable[[], None]):
        self._conn = conn
        self._pending = b""  # what arrived of a line a timeout interrupted
        self._on_end: Callable[[], None] | None = on_end
        self.stdout = os.fdopen(output_r, "rb")
        self.returncode: int | None = None
        try:
            self.pid = int(self._read_line(None).split()[1])
        except ConnectionError:
            self._ended()
            raise

    def _ended(self) -> None:
        if self._on_end is not None:
            self._on_end, on_end = None, self._on_end
            on_end()

    def _read_line(self, timeout: float | None) -> str:
        self._conn.settimeout(timeout)
        while b"\n" not in self._pending:
            try:
                chunk = self._conn.recv(64)
            except (TimeoutError, BlockingIOError):  # the latter: timeout 0, nothing there yet
                raise subprocess.TimeoutExpired("forked grading child", timeout) from None
            if not chunk:
                raise ConnectionError("the fork server went away")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                self.returncode = int(self._read_line(timeout).split()[1])
            except ConnectionError:
                self._ended()
                raise
            self._conn.close()
            self._ended()
        return self.returncode


class ForkServer:
    """A running fork server that preloads ``modules`` (e.g. ``("torch",)``) and has the tests of
    the pytest command line ``session`` collected."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str], session: list[str]):
        self._requests, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "grader.engine.forkserver", str(theirs.fileno()),
                 json.dumps(list(session)), *modules],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd="/",
                pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()
        line = self._proc.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise RuntimeError(f"the fork server did not start (it said {line!r})")
        self._running = 0  # children forked whose end the grader has not learned
        self._counting = threading.Lock()
        self.idle_since: float | None = time.monotonic()  # since its last child ended; None while one runs

    def spawn(self, env: dict[str, str], workdir: Path, policy: dict, report_w: int, key_r: int) -> ForkedChild:
        """Fork a grading child, jailed by ``policy`` in ``workdir``, that runs the tests its
        ``CHILD_OPTIONS`` file chooses (``grader.pytest_plugin.start_forked_session``'s keywords
        but the descriptors)."""
        output_r, output_w = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with self._counting:
            self._running += 1
            self.idle_since = None
        try:
            request = json.dumps({"env": env, "workdir": str(workdir), "policy": policy})
            socket.send_fds(self._requests, [request.encode()], [output_w, report_w, key_r,
                                                                 theirs.fileno()])
        except OSError:
            mine.close()
            os.close(output_r)
            self._child_ended()
            raise
        finally:
            os.close(output_w)
            theirs.close()
        return ForkedChild(mine, output_r, self._child_ended)

    def touch(self) -> None:
        """Start its idle time over (unless a child runs)."""
        with self._counting:
            if self.idle_since is not None:
                self.idle_since = time.monotonic()

    def idle_for(self, now: float) -> float:
        """Seconds since its last child ended (0 while one runs)."""
        with self._counting:
            return 0.0 if self.idle_since is None else now - self.idle_since

    def _child_ended(self) -> None:
        with self._counting:
            self._running -= 1
            if not self._running:
                self.idle_since = time.monotonic()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._requests.close()


# A server no child of which has run for this long is closed, its frameworks' memory given back
# (as joblib's reusable executor lets its idle workers go). Until then the next grading of the
# process (a batch's next submission, the next batch, verify's next round) forks from it.
IDLE_S = 60.0
_REAP_EVERY_S = 1.0

_servers: dict[tuple, ForkServer] = {}
_lock = threading.Lock()
_reaper: list[threading.Thread] = []


def server_for(modules: tuple[str, ...], env: dict[str, str], session: list[str]) -> ForkServer:
    """The shared fork server preloading ``modules``, with the tests of the pytest command line
    ``session`` collected: started on first use, closed after ``IDLE_S`` seconds without a
    running child (``close_idle``), or at exit. Its idle time starts over now."""
    key = (modules, json.dumps(env, sort_keys=True), tuple(session))
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            server = _servers[key] = ForkServer(modules, env, session)
        server.touch()
        if not _reaper:
            _reaper.append(threading.Thread(target=_reap, name="drills-fork-server-reaper", daemon=True))
            _reaper[0].start()
        return server


def close_idle() -> None:
    """Stop every fork server of this process that no child has run in for ``IDLE_S`` seconds."""
    now = time.monotonic()
    with _lock:
        idle = [key for key, server in _servers.items() if server.idle_for(now) >= IDLE_S]
        closing = [_servers.pop(key) for key in idle]
    for server in closing:
        server.close()


def _reap() -> None:
    while True:
        time.sleep(_REAP_EVERY_S)
        close_idle()


def close_all() -> None:
    """Stop every fork server this process started (and any child of theirs still running)."""
    with _lock:
        closing = list(_servers.values())
        _servers.clear()
    for server in closing:
        server.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3:])
