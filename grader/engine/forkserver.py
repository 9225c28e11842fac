"""A fork server for grading children: pay the frameworks' imports once per batch, not per child.

``python -m grader.engine.forkserver FD POLICY SESSION MODULE ...`` imports the named modules (pytest,
hypothesis, torch and/or tensorflow) and collects the tests of the pytest command line SESSION (a
JSON list; its test modules stay imported, so a child's collection finds them loaded), runs no
tensor op (a process that ran multithreaded torch or TF ops cannot fork safely), prints ``ready``
and then serves requests on FD, one end of a socket pair the grader made: there is no socket
file, so no grading child (nor anyone else) can reach the server, and the server checks that
its peer is the grader's user. Each request carries
a pytest command line, an environment, the child's staged work directory and four descriptors
(output, report pipe, key pipe, and the socket the server answers on). The jail is the
server's: ``POLICY`` (``grader.engine.jail``), fixed when the server starts, with only the work
directory taken from the request, and only one the grader staged (``valid_workdir``). The
server forks one child per request; the child starts a new session, takes the descriptors,
replaces its environment, enters the jail (``grader.engine.jail.apply``) and runs ``pytest.main``.
The server answers with the child's pid, then with its exit status when it ends. It exits when
its stdin (a pipe from the grader) or its request socket closes.

The grader's side is ``ForkServer``; its children look like ``subprocess.Popen`` objects to the
supervisor (``pid``, ``stdout``, ``wait``).
"""

from __future__ import annotations

import gc
import importlib
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
from pathlib import Path

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


def _run_child(request: dict, policy: dict, fds: list[int]) -> None:
    """In the forked child: become the grading child, run pytest, never return."""
    code = 70
    try:
        os.setsid()
        from grader._lifetime import die_with_parent
        from grader.engine import jail

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
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # the server's may be cached; the child's TMPDIR differs
        workdir = request["workdir"]
        os.chdir(os.path.join(workdir, "rw", "cwd"))
        jail.apply({**policy, "workdir": workdir})
        sys.path[0] = os.getcwd()  # what `python -m pytest` run there would have
        import pytest

        args = [a.format(report_fd=report, key_fd=key) for a in request["args"]]
        code = int(pytest.main(args))
        sys.stdout.flush()
        sys.stderr.flush()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - report anything, the child must not return
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _peer_is_us(sock: socket.socket) -> bool:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.geteuid()


def serve(fd: int, policy: dict, session: list[str], modules: list[str]) -> None:
    """Preload ``modules`` and collect the tests of the pytest command line ``session``, then fork
    a jailed child per request on the socket ``fd`` until stdin or that socket closes."""
    from grader import _preload

    _preload.warm(modules)  # imports, and the caches its children's tests would otherwise each fill
    if session:
        _preload.collect(session)
    if "pytest" in sys.modules:  # pytest's own plugins, which every child's session loads
        from _pytest.config import default_plugins

        for name in default_plugins:
            importlib.import_module(f"_pytest.{name}")
    # Children never collect (or copy, on write) what was loaded here.
    gc.collect()
    gc.freeze()
    requests = socket.socket(fileno=fd)
    if not _peer_is_us(requests):
        sys.exit("fork server: the request socket is not the grader's")
    print("ready", flush=True)
    clients: dict[int, socket.socket] = {}  # child pid -> the socket to answer on
    while True:
        readable, _, _ = select.select([requests, sys.stdin], [], [], 0.05)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1024):
            return  # the grader is gone
        if requests in readable:
            try:
                message, fds, _, _ = socket.recv_fds(requests, MAX_REQUEST, len(FD_NAMES))
            except OSError:
                return
            if not message:
                return  # the grader closed its end
            try:
                request = json.loads(message)
                ok = len(fds) == len(FD_NAMES) and valid_workdir(request["workdir"])
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                for fd_ in fds:
                    os.close(fd_)
                continue
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                _run_child(request, policy, fds)
            for fd_ in fds[:3]:
                os.close(fd_)
            reply = clients[pid] = socket.socket(fileno=fds[3])
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
            reply = clients.pop(pid, None)
            if reply is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                try:
                    reply.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                reply.close()


# ----------------------------------------------------------------------------- grader side


class ForkedChild:
    """A child forked by the server, with the parts of ``subprocess.Popen`` the supervisor uses."""

    def __init__(self, conn: socket.socket, output_r: int):
        self._conn = conn
        self._pending = b""  # what arrived of a line a timeout interrupted
        self.stdout = os.fdopen(output_r, "rb")
        self.returncode: int | None = None
        self.pid = int(self._read_line(None).split()[1])

    def _read_line(self, timeout: float | None) -> str:
        self._conn.settimeout(timeout)
        while b"\n" not in self._pending:
            try:
                chunk = self._conn.recv(64)
            except TimeoutError:
                raise subprocess.TimeoutExpired("forked grading child", timeout) from None
            if not chunk:
                raise ConnectionError("the fork server went away")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = int(self._read_line(timeout).split()[1])
            self._conn.close()
        return self.returncode


class ForkServer:
    """A running fork server that preloads ``modules`` (e.g. ``("torch",)``) and jails its
    children by ``policy``."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str], policy: dict, session: list[str] = ()):
        self._requests, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "grader.engine.forkserver", str(theirs.fileno()),
                 json.dumps(policy), json.dumps(list(session)), *modules],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd="/",
                pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()
        line = self._proc.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise RuntimeError(f"the fork server did not start (it said {line!r})")

    def spawn(self, args: list[str], env: dict[str, str], workdir: Path,
              report_w: int, key_r: int) -> ForkedChild:
        """Fork a grading child running ``pytest.main(args)`` in ``workdir``'s jail.

        ``args`` may name the report and key descriptors as ``{report_fd}`` and ``{key_fd}``.
        """
        output_r, output_w = os.pipe()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            request = json.dumps({"args": args, "env": env, "workdir": str(workdir)})
            socket.send_fds(self._requests, [request.encode()], [output_w, report_w, key_r,
                                                                 theirs.fileno()])
        except OSError:
            mine.close()
            os.close(output_r)
            raise
        finally:
            os.close(output_w)
            theirs.close()
        return ForkedChild(mine, output_r)

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


_servers: dict[tuple, ForkServer] = {}
_lock = threading.Lock()


def server_for(modules: tuple[str, ...], env: dict[str, str], policy: dict,
               session: list[str] = ()) -> ForkServer:
    """The shared fork server preloading ``modules``, with the tests of the pytest command line
    ``session`` collected, and jailing by ``policy`` (started on first use, closed at exit)."""
    key = (modules, json.dumps(policy, sort_keys=True), tuple(session))
    with _lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            server = _servers[key] = ForkServer(modules, env, policy, session)
        return server


def close_all() -> None:
    """Stop every fork server this process started."""
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


if __name__ == "__main__":
    serve(int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4:])
