"""The ``full`` jail's network: inside a graded submission 127.0.0.1 works (the namespace's own
loopback, which distributed training's ranks need) and nothing else is reachable, the grading
machine included.

The submission is the reference of ``pytorch.tensors.broadcasting`` behind a probe that runs when
the module is imported: it raises, failing every test with its reason, unless loopback carries a
connection, ``lo`` is the only interface and neither the host's own address nor an outside one
can be reached.
"""

from __future__ import annotations

import socket
import threading

import pytest

from grader import catalog
from grader.engine import jail
from grader.engine.sandbox import Limits
from grader.engine.scoring import score_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
OUTSIDE = "192.0.2.1"  # TEST-NET-1: routable nowhere, a stand-in for the internet

PROBE = '''
import socket as _socket


def _probe(host_ip, host_port):
    with _socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with _socket.create_connection(server.getsockname(), timeout=5) as client:
            conn, _ = server.accept()
            with conn:
                client.sendall(b"ping")
                if conn.recv(4) != b"ping":
                    raise AssertionError("PROBE: loopback connected but carried nothing")
    names = [name for _, name in _socket.if_nameindex()]
    if names != ["lo"]:
        raise AssertionError(f"PROBE: interfaces {{names}}, expected only lo")
    for target in (host_ip, "{outside}"):
        if target is None:
            continue
        try:
            _socket.create_connection((target, host_port), timeout=3).close()
        except OSError:
            continue
        raise AssertionError(f"PROBE: reached {{target}}:{{host_port}} from inside the jail")


_probe({host_ip!r}, {host_port})
'''


def _host_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((OUTSIDE, 9))
        except OSError:
            return None
        address = sock.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class _Listener:
    """A TCP server on every address of this machine that records each connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen()
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.close()
            self.connections += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.mark.timeout(600)
@pytest.mark.skipif(jail.level() != "full", reason="needs the full jail: root with CAP_SYS_ADMIN")
def test_inside_the_full_jail_only_loopback_works(tmp_path):
    listener = _Listener()
    host_ip = _host_address()
    target = tmp_path / "sub" / EX.relpath
    target.parent.mkdir(parents=True)
    probe = PROBE.format(host_ip=host_ip, host_port=listener.port, outside=OUTSIDE)
    target.write_text(EX.reference.read_text() + probe)
    try:
        report = score_submission(tmp_path / "sub", [EX.id], limits=Limits(wall_s=300, test_s=30))
    finally:
        listener.close()
    assert report.sandbox.get("level") == "full", report.sandbox
    messages = [t.message for ex in report.exercises for t in ex.tests if t.status != "passed"]
    assert report.score == report.max_score > 0, f"the probe failed inside the jail: {messages[:1]}"
    assert listener.connections == 0, "a connection from inside the jail reached the grading machine"
