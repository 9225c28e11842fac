"""The record protocol between a pytest child and the grader: event names, the writer the
child's plugin uses, and the verifier the grader reads with.

A line is ``{"sig": HMAC-SHA256(key, body), "body": "<json>"}``, whose body is one record (a JSON
object) or several (a list of them, signed together: a child grading the whole catalog reports
thousands of tests collected, and most as not started, at once). The key reaches the child
once, over a pipe of its own, and lives only in the writer's closure, so a line that submitted
code writes to the report pipe itself does not verify and is counted as forged. Events, in the
order a child sends them: ``sandbox`` (the child's view of its jail), ``collected`` (one per
test, with its points), ``started`` / ``result`` (around each test), ``tamper`` (a canary saw
the checks changed), ``finished`` (the session's exit status).

Framework-free and engine-free: imported by the pytest plugin inside the grading child.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable, Iterable
from enum import StrEnum


class Event(StrEnum):
    """The ``event`` field of a record."""

    SANDBOX = "sandbox"
    COLLECTED = "collected"
    STARTED = "started"
    RESULT = "result"
    TAMPER = "tamper"
    FINISHED = "finished"


# What a grading child writes to its output just before its ``finished`` record: the grader keeps
# the output up to here (what follows, pytest's closing lines, may still be on its way when the
# grader stops waiting for the child).
OUTPUT_END = b"\n[the test session's output ends here]\n"


def new_key() -> bytes:
    return secrets.token_bytes(32)


def key_pipe(key: bytes) -> int:
    """A pipe holding ``key`` for the child (``--report-key-fd``); returns its read end, which the
    caller passes to the child and closes after starting it."""
    read_end, write_end = os.pipe()
    os.write(write_end, key.hex().encode())
    os.close(write_end)
    return read_end


def _sign(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


class Encoded(str):
    """Records already encoded: the JSON text of one record or of a list of them, which the writer
    signs as it is (a fork server encodes each collected test's records once, for all its children)."""


def encoded_list(records: Iterable[str]) -> Encoded:
    """A list of records, each already encoded as JSON, as one ``Encoded`` list."""
    return Encoded("[" + ",".join(records) + "]")


def writer(fd: int, key_fd: int | None) -> Callable[[dict | list[dict] | Encoded], None]:
    """A function that writes signed records to the grader's pipe ``fd``, one line per call (a
    record, a list of records, or ``Encoded`` ones, as one line), with the key read once from
    ``key_fd`` (no key: signed with the empty key, which no verifier with a key accepts)."""
    key = b""
    if key_fd is not None:
        with os.fdopen(key_fd, "rb") as stream:
            key = bytes.fromhex(stream.read().decode())
    stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")
    owner = os.getpid()

    def write(record: dict | list[dict] | Encoded) -> None:
        if os.getpid() != owner:
            return  # a forked copy of the test process never speaks for it
        body = record if isinstance(record, Encoded) else json.dumps(record)
        stream.write(json.dumps({"sig": _sign(key, body), "body": body}) + "\n")

    return write


def verify(key: bytes, line: str) -> list[dict] | None:
    """The records of one signed line; None if it is not ours (forged, torn or not JSON)."""
    try:
        outer = json.loads(line)
        body = outer["body"]
        if not hmac.compare_digest(_sign(key, body), outer["sig"]):
            return None
        records = json.loads(body)
    except (ValueError, KeyError, TypeError):
        return None
    records = records if isinstance(records, list) else [records]
    return records if all(isinstance(r, dict) for r in records) else None


def verify_all(key: bytes, lines: Iterable[str]) -> list[dict]:
    """The records of ``lines`` that verify, in order (a torn last line of a killed child is
    dropped with the forged ones)."""
    return [record for line in lines for record in verify(key, line) or ()]


def of(records: Iterable[dict], event: Event) -> list[dict]:
    """The records of one event, in order."""
    return [r for r in records if r.get("event") == event]


def first(records: Iterable[dict], event: Event) -> dict:
    """The first record of ``event``, or ``{}``."""
    return next((r for r in records if r.get("event") == event), {})
