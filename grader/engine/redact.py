"""What a grading report may tell a student: messages bounded, with no hidden-test source in them.

Runs in the grader's own process on what the grading child reported, so code under test cannot
switch it off. Submitted code can still smuggle test source out in an encoded form; keeping it from
reading that source at all is the sandbox's job.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path

from grader._source import parse

MAX_MESSAGE_CHARS = 2000
_MIN_LINE_CHARS = 16  # shorter source lines ("return out", "import torch") are not a leak
REDACTED = "[hidden test source removed]"
_SEARCHED_CHARS = 4 * MAX_MESSAGE_CHARS
DUMP_REMOVED = "[this failure's message quoted the hidden tests' source and was removed]"
# A frame of the kit's own package as a message quotes it (TensorFlow's "in user code:" traces
# list each frame a traced call went through: ``File "<path>", line N, in f``, then its source
# line, indented deeper): the kit's internals, not what the student wrote.
_KIT_FRAME = re.compile(r'^([ \t]*)File "' + re.escape(str(Path(__file__).resolve().parents[1])) +
                        r'/[^"\n]*", line \d+, in [^\n]*(?:\n\1[ \t]+(?!File ")[^\n]*)?\n?', re.MULTILINE)


@cache
def _source_lines(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The file's lines worth cutting, and those of them that its own string literals quote (a
    test's message may name an expression of its test)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset(), frozenset()
    lines = frozenset(line.strip() for line in text.splitlines() if len(line.strip()) >= _MIN_LINE_CHARS)
    try:
        literals = [n.value for n in ast.walk(parse(text))
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    except SyntaxError:
        literals = []
    return lines, frozenset(line for line in lines if any(line in literal for literal in literals))


class _Needles:
    """The lines to look for in a message, indexed by their first ``_MIN_LINE_CHARS`` characters
    so that one pass over a message finds every line it contains: each of some 3000 messages of a
    whole-catalog report against the thousands of lines of 68 hidden files, one ``in`` at a time,
    took seconds."""

    def __init__(self, hidden_tests: tuple[Path, ...], public_tests: tuple[Path, ...]):
        public = frozenset().union(*(_source_lines(p)[0] for p in public_tests))
        lines = frozenset().union(*(_source_lines(p)[0] for p in hidden_tests)) - public
        self.quoted = frozenset().union(*(_source_lines(p)[1] for p in hidden_tests))
        self.by_head: dict[str, list[str]] = {}
        for line in lines:
            self.by_head.setdefault(line[:_MIN_LINE_CHARS], []).append(line)

    def found_in(self, message: str) -> list[str]:
        """The lines that occur in ``message``, longest first (so a line is removed whole before
        any shorter line inside it)."""
        found = set()
        for start in range(len(message) - _MIN_LINE_CHARS + 1):
            for line in self.by_head.get(message[start:start + _MIN_LINE_CHARS], ()):
                if message.startswith(line, start):
                    found.add(line)
        return sorted(found, key=lambda line: (-len(line), line))


@lru_cache(maxsize=64)
def _needles(hidden_tests: tuple[Path, ...], public_tests: tuple[Path, ...]) -> _Needles:
    return _Needles(hidden_tests, public_tests)


def redact(message: str, hidden_tests: list[Path], public_tests: list[Path] = ()) -> str:
    """``redactor(hidden_tests, public_tests)(message)``."""
    return redactor(hidden_tests, public_tests)(message)


def redactor(hidden_tests: list[Path], public_tests: list[Path] = ()) -> Callable[[str], str]:
    """What redacts a message: cuts the frames of the kit's own code that it quotes (a traced
    call's "in user code:" trace) and the ``hidden_tests`` files' lines out of it (but those that
    the ``public_tests`` files hold as well), and bounds it to ``MAX_MESSAGE_CHARS``.

    A source line is cut wherever it occurs, but for one that the file's own string literals
    quote (a test's message may name an expression of its test: ``after
    torch.set_default_dtype(torch.float64)``), which is cut only where it stands as a line of the
    message. A message in which three or more distinct source lines occur is replaced whole: what
    lies between the lines of a dump (``import math``) is the dump too.
    """
    needles = _needles(tuple(hidden_tests), tuple(public_tests))
    done: dict[str, str] = {}  # a report repeats messages: every test of an untouched stub says the same

    def redact_one(message: str) -> str:
        # Only the head is shown, so only the head is searched (which bounds the cost of a
        # flood): at most two lines are replaced, so what is shown lies well inside it.
        message = message[:_SEARCHED_CHARS]
        if message not in done:
            done[message] = _redacted(message, needles)
        return done[message]

    return redact_one


def _redacted(message: str, needles: _Needles) -> str:
    message = _KIT_FRAME.sub("", message)
    found = needles.found_in(message)
    if len(found) >= 3:
        return DUMP_REMOVED  # what remains between the lines of a dump is the dump too
    message_lines = {line.strip() for line in message.splitlines()}
    for line in found:
        if line in message_lines or line not in needles.quoted:
            message = message.replace(line, REDACTED)
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 30].rstrip() + "\n[message shortened]"
    return message
