"""Parsing Python source, and editing it at the spans ``ast`` gives its nodes."""

from __future__ import annotations

import ast
import threading

# CPython 3.11 keeps the depth of the AST it is building in state its threads share: two threads
# parsing at once can fail with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905). The grader parses in threads (a batch's jobs, the static scan beside a
# running child), so every parse of the kit's goes through one lock.
_PARSING = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time."""
    with _PARSING:
        return ast.parse(source, filename=filename)


def replace_node(source: str, node: ast.AST, text: str) -> str:
    """``source`` with ``node``'s exact text replaced by ``text``.

    ast's column offsets count UTF-8 bytes, so the span is cut from the encoded source.
    """
    raw = source.encode("utf-8")
    lines = raw.splitlines(keepends=True)
    start = sum(map(len, lines[:node.lineno - 1])) + node.col_offset
    end = sum(map(len, lines[:node.end_lineno - 1])) + node.end_col_offset
    return raw[:start].decode("utf-8") + text + raw[end:].decode("utf-8")
