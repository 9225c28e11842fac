"""Editing Python source text at the spans ``ast`` gives its nodes."""

from __future__ import annotations

import ast


def replace_node(source: str, node: ast.AST, text: str) -> str:
    """``source`` with ``node``'s exact text replaced by ``text``.

    ast's column offsets count UTF-8 bytes, so the span is cut from the encoded source.
    """
    raw = source.encode("utf-8")
    lines = raw.splitlines(keepends=True)
    start = sum(map(len, lines[:node.lineno - 1])) + node.col_offset
    end = sum(map(len, lines[:node.end_lineno - 1])) + node.end_col_offset
    return raw[:start].decode("utf-8") + text + raw[end:].decode("utf-8")
