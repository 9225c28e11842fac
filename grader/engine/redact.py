"""What a grading report may tell a student: messages bounded, with no hidden-test source in them.

Runs in the grader's own process on what the grading child reported, so code under test cannot
switch it off. Submitted code can still smuggle test source out in an encoded form; keeping it from
reading that source at all is the sandbox's job.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

MAX_MESSAGE_CHARS = 2000
_MIN_LINE_CHARS = 16  # shorter source lines ("return out", "import torch") are not a leak
REDACTED = "[hidden test source removed]"


@cache
def _source_lines(path: Path) -> tuple[str, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ()
    lines = {line.strip() for line in text.splitlines()}
    # Longest first, so a line is removed whole before any shorter line inside it.
    return tuple(sorted((line for line in lines if len(line) >= _MIN_LINE_CHARS), key=len, reverse=True))


def redact(message: str, hidden_tests: list[Path]) -> str:
    """``message`` with the ``hidden_tests`` files' lines cut out, at most ``MAX_MESSAGE_CHARS``
    long.

    A source line is cut where it stands as a line of the message, and wherever it occurs once
    three or more source lines occur in the message: a test's own message may quote an
    expression of its test (``after torch.set_default_dtype(torch.float64)``), a dump may not.
    """
    sources = [line for path in hidden_tests for line in _source_lines(path)]
    message_lines = {line.strip() for line in message.splitlines()}
    found = [line for line in sources if line in message]
    cut = found if len(found) >= 3 else [line for line in found if line in message_lines]
    for line in cut:
        message = message.replace(line, REDACTED)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 30].rstrip() + "\n[message shortened]"
    return message
