"""What a grading report may tell a student: messages bounded, with no hidden-test source in them.

Runs in the grader's own process on what the grading child reported, so code under test cannot
switch it off. Submitted code can still smuggle test source out in an encoded form; keeping it from
reading that source at all is the sandbox's job.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

MAX_MESSAGE_CHARS = 2000
_MIN_LINE_CHARS = 16  # shorter source lines ("return out", "import torch") are not a leak
REDACTED = "[hidden test source removed]"
DUMP_REMOVED = "[this failure's message quoted the hidden tests' source and was removed]"


@cache
def _source_lines(path: Path) -> tuple[tuple[str, ...], frozenset[str]]:
    """The file's lines worth cutting, longest first (so a line is removed whole before any
    shorter line inside it), and those of them that its own string literals quote (a test's
    message may name an expression of its test)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return (), frozenset()
    lines = sorted({line.strip() for line in text.splitlines() if len(line.strip()) >= _MIN_LINE_CHARS},
                   key=len, reverse=True)
    try:
        literals = [n.value for n in ast.walk(ast.parse(text))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    except SyntaxError:
        literals = []
    return tuple(lines), frozenset(line for line in lines if any(line in literal for literal in literals))


def redact(message: str, hidden_tests: list[Path], public_tests: list[Path] = ()) -> str:
    """``message`` with the ``hidden_tests`` files' lines cut out (but those that the
    ``public_tests`` files hold as well), at most ``MAX_MESSAGE_CHARS`` long.

    A source line is cut wherever it occurs, but for one that the file's own string literals
    quote (a test's message may name an expression of its test: ``after
    torch.set_default_dtype(torch.float64)``), which is cut only where it stands as a line of the
    message. A message in which three or more source lines occur is replaced whole: what lies
    between the lines of a dump (``import math``) is the dump too.
    """
    message_lines = {line.strip() for line in message.splitlines()}
    public = {line for path in public_tests for line in _source_lines(path)[0]}
    found, quoted = [], set()
    for path in hidden_tests:
        lines, quotable = _source_lines(path)
        found += [line for line in lines if line in message and line not in public]
        quoted |= quotable
    if len(found) >= 3:
        return DUMP_REMOVED  # what remains between the lines of a dump is the dump too
    for line in found:
        if line in message_lines or line not in quoted:
            message = message.replace(line, REDACTED)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 30].rstrip() + "\n[message shortened]"
    return message
