"""The grader's terminal: rich tables and colour on a terminal, plain text everywhere else.

Commands print their plain-text rendering (stable, parseable: CI logs, pipes, files) unless
``Console.is_terminal``; rich itself honours ``NO_COLOR`` (no colour), ``FORCE_COLOR`` and
``TERM=dumb``. Tests get a terminal with ``Console(force_terminal=True)``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from grader.outcomes import State

if TYPE_CHECKING:
    from rich.console import Console

# One style per state, wherever a state is shown.
STATE_STYLES = {
    State.DONE: "bold green",
    State.PUBLIC_PASS: "cyan",
    State.FAILING: "red",
    State.NOT_STARTED: "yellow",
    State.MISSING: "magenta",
    State.ERROR: "bold magenta",
}


def console(file: TextIO | None = None, *, force_terminal: bool | None = None) -> Console:
    """A console on ``file`` (default: stdout) for the grader's output; ``force_terminal`` as
    rich's (None: whether ``file`` is a terminal)."""
    from rich.console import Console  # here: commands that print no table never import rich

    out = Console(file=file or sys.stdout, highlight=False, force_terminal=force_terminal)
    out.soft_wrap = not out.is_terminal  # a log keeps long lines whole; a terminal wraps them
    return out
