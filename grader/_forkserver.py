"""A fork server for grading children: pay the frameworks' imports once per batch, not per child.

``python -m grader._forkserver SOCKET MODULE ...`` imports the named modules (pytest, hypothesis,
torch and/or tensorflow), runs no tensor op (a process that ran multithreaded torch or TF ops
cannot fork safely), prints ``ready`` and then serves requests on the Unix socket SOCKET: each
request carries a pytest command line, an environment, a working directory, jail limits and
three file descriptors (output, report pipe, key pipe). The server forks one child per request;
the child starts a new session, takes the descriptors, replaces its environment, applies the
jail (``grader._jail.apply_limits``) and runs ``pytest.main``. The server answers with the
child's pid, then with its exit status when it ends. It exits when its stdin (a pipe from the
grader) closes.

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
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

MAX_REQUEST = 1 << 20
FD_NAMES = ("output", "report", "key")


# ----------------------------------------------------------------------------- server side


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the grading child, run pytest, never return."""
    code = 70
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        output, report, key = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        keep = sorted({0, 1, 2, report, key})
        for low, high in zip(keep, [*keep[1:], 65536]):
            os.closerange(low + 1, high)
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # the server's may be cached; the child's TMPDIR differs
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]  # what `python -m pytest` run there would have
        from grader._jail import apply_limits

        apply_limits(request["jail"])
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


def serve(path: str, modules: list[str]) -> None:
    """Preload ``modules``, then serve fork requests on the Unix socket ``path`` until stdin closes."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # preloading only saves time: the child imports what it needs
            print(f"fork server: not preloading {name}: {exc}", file=sys.stderr)
    if "pytest" in sys.modules:  # pytest's own plugins, which every child's session loads
        from _pytest.config import default_plugins

        for name in default_plugins:
            importlib.import_module(f"_pytest.{name}")
    # Children never collect (or copy, on write) what was loaded here.
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    clients: dict[int, socket.socket] = {}  # child pid -> the connection that asked for it
    conns: list[socket.socket] = []
    while True:
        readable, _, _ = select.select([listener, sys.stdin, *conns], [], [], 0.05)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1024):
            return  # the grader is gone
        if listener in readable:
            conn, _ = listener.accept()
            conns.append(conn)
        for conn in [c for c in conns if c in readable]:
            conns.remove(conn)
            try:
                message, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, len(FD_NAMES))
                request = json.loads(message)
            except (OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                _run_child(request, fds)
            for fd in fds:
                os.close(fd)
            clients[pid] = conn
            conn.sendall(f"pid {pid}\n".encode())
        while clients:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = clients.pop(pid, None)
            if conn is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                try:
                    conn.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                conn.close()


# ----------------------------------------------------------------------------- grader side


class ForkedChild:
    """A child forked by the server, with the parts of ``subprocess.Popen`` the supervisor uses."""

    def __init__(self, conn: socket.socket, output_r: int):
        self._conn = conn
        self.stdout = os.fdopen(output_r, "rb")
        self.returncode: int | None = None
        self.pid = int(self._read_line(None).split()[1])

    def _read_line(self, timeout: float | None) -> str:
        self._conn.settimeout(timeout)
        data = b""
        while not data.endswith(b"\n"):
            try:
                chunk = self._conn.recv(64)
            except TimeoutError:
                raise subprocess.TimeoutExpired("forked grading child", timeout) from None
            if not chunk:
                raise ConnectionError("the fork server went away")
            data += chunk
        return data.decode()

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = int(self._read_line(timeout).split()[1])
            self._conn.close()
        return self.returncode


class ForkServer:
    """A running fork server that preloads ``modules`` (e.g. ``("torch",)``)."""

    def __init__(self, modules: tuple[str, ...], env: dict[str, str]):
        self.modules = modules
        self._dir = tempfile.TemporaryDirectory(prefix="drills-forkserver-")
        self.path = os.path.join(self._dir.name, "socket")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "grader._forkserver", self.path, *modules],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=self._dir.name)
        line = self._proc.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise RuntimeError(f"the fork server did not start (it said {line!r})")

    def spawn(self, args: list[str], env: dict[str, str], cwd: Path, jail: dict,
              report_w: int, key_r: int) -> ForkedChild:
        """Fork a grading child running ``pytest.main(args)``.

        ``args`` may name the report and key descriptors as ``{report_fd}`` and ``{key_fd}``.
        """
        output_r, output_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(self.path)
            request = json.dumps({"args": args, "env": env, "cwd": str(cwd), "jail": jail})
            socket.send_fds(conn, [request.encode()], [output_w, report_w, key_r])
        except OSError:
            conn.close()
            os.close(output_r)
            raise
        finally:
            os.close(output_w)
        return ForkedChild(conn, output_r)

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
        self._dir.cleanup()


_servers: dict[tuple[str, ...], ForkServer] = {}
_lock = threading.Lock()


def server_for(modules: tuple[str, ...], env: dict[str, str]) -> ForkServer:
    """The shared fork server preloading ``modules`` (started on first use, closed at exit)."""
    with _lock:
        server = _servers.get(modules)
        if server is None or not server.alive():
            server = _servers[modules] = ForkServer(modules, env)
        return server


def close_all() -> None:
    """Stop every fork server this process started."""
    with _lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
