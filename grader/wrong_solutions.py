"""An exercise's wrong solutions: the mistakes ``grader verify`` proves its tests catch.

They live in ``solutions/<path>/wrong/<stem>/``, one per mistake, in one of two forms:

- ``<mistake>.py``: a whole module (a genuine rewrite of the reference), whose docstring starts
  ``Wrong: <why>``.
- ``<mistake>.toml``: a declared mistake, the reference with a few exact edits::

      why = "batched_affine checks weight but not bias, ..."
      caught_by = ["test_affine_rejects_bad_weight_and_bias"]   # tests that must fail

      [[edit]]
      old = "    if bias.shape != ...\\n"   # exact text of the reference
      new = ""                              # what replaces it
      count = 1                             # optional (default 1): how often ``old`` occurs

  Its module text is the reference with its docstring replaced by ``Wrong: <why>`` and each edit
  applied in order; an edit whose ``old`` text no longer occurs ``count`` times fails loudly
  (``WrongSolutionError``), so a changed reference cannot silently turn a mistake into a copy of it.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

from grader._source import parse, replace_node
from grader.errors import GraderError

_KEYS = {"why", "caught_by", "edit"}
_EDIT_KEYS = {"old", "new", "count"}


class WrongSolutionError(GraderError):
    """A declared mistake is malformed, or its edits no longer apply to the reference."""


@dataclass(frozen=True)
class Edit:
    """Replace every one of the ``count`` occurrences of ``old`` with ``new``."""

    old: str
    new: str
    count: int = 1


@dataclass(frozen=True)
class WrongSolution:
    """One mistake: a module file, or declared edits of the reference (``edits`` non-empty)."""

    name: str
    path: Path  # the ``.py`` module or the ``.toml`` declaration
    reference: Path
    why: str = ""  # declared mistakes only; a module states it in its docstring
    caught_by: tuple[str, ...] = ()  # declared mistakes only: test functions, or one ``name[case]``
    edits: tuple[Edit, ...] = ()

    @property
    def declared(self) -> bool:
        return bool(self.edits)

    def source(self) -> str:
        """The wrong module's text.

        Raises:
            WrongSolutionError: an edit's ``old`` text does not occur ``count`` times, or the
                reference has no module docstring to replace.
        """
        if not self.declared:
            return self.path.read_text(encoding="utf-8")
        text = _replace_docstring(self.reference.read_text(encoding="utf-8"), self.why, self.path)
        for index, edit in enumerate(self.edits, start=1):
            found = text.count(edit.old)
            if found != edit.count:
                times = "once" if edit.count == 1 else f"{edit.count} times"
                raise WrongSolutionError(
                    f"the reference changed: edit {index} of {self.path.name} expects its `old` "
                    f"text {times}, found {found} ({self.path})")
            text = text.replace(edit.old, edit.new)
        return text


def _replace_docstring(text: str, why: str, origin: Path) -> str:
    body = parse(text).body
    first = body[0] if body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        raise WrongSolutionError(f"{origin}: the reference has no module docstring to replace")
    return replace_node(text, first, f'"""Wrong: {why}"""')


def load(folder: Path, reference: Path) -> list[WrongSolution]:
    """The wrong solutions in ``folder`` (of the exercise whose reference is ``reference``), by name.

    Raises:
        WrongSolutionError: a declaration is malformed, or a mistake is both a file and declared.
    """
    if not folder.is_dir():
        return []
    found: dict[str, WrongSolution] = {}
    for path in sorted([*folder.glob("*.py"), *folder.glob("*.toml")]):
        if path.stem in found:
            raise WrongSolutionError(f"{folder}: {path.stem} is both a .py and a .toml; keep one")
        found[path.stem] = (_declared(path, reference) if path.suffix == ".toml"
                            else WrongSolution(path.stem, path, reference))
    return [found[name] for name in sorted(found)]


def _declared(path: Path, reference: Path) -> WrongSolution:
    def bad(what: str) -> WrongSolutionError:
        return WrongSolutionError(f"{path}: {what}")

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise bad(f"not valid TOML: {exc}") from None
    if unknown := sorted(set(data) - _KEYS):
        raise bad(f"unknown key(s) {', '.join(unknown)} (a declared mistake has {', '.join(sorted(_KEYS))})")
    why, caught_by, raw_edits = data.get("why"), data.get("caught_by"), data.get("edit")
    if not isinstance(why, str) or not why.strip():
        raise bad("'why' must be a non-empty string: the mistake, in words")
    if not (isinstance(caught_by, list) and caught_by and all(isinstance(t, str) and t for t in caught_by)):
        raise bad("'caught_by' must be a non-empty list of the test names that must fail")
    if not (isinstance(raw_edits, list) and raw_edits):
        raise bad("needs at least one [[edit]] (old, new, optional count)")
    edits = []
    for index, raw in enumerate(raw_edits, start=1):
        if unknown := sorted(set(raw) - _EDIT_KEYS):
            raise bad(f"edit {index}: unknown key(s) {', '.join(unknown)} (an edit has old, new, count)")
        old, new, count = raw.get("old"), raw.get("new"), raw.get("count", 1)
        if not isinstance(old, str) or not old:
            raise bad(f"edit {index}: 'old' must be non-empty text of the reference")
        if not isinstance(new, str):
            raise bad(f"edit {index}: 'new' must be a string (empty to delete)")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise bad(f"edit {index}: 'count' must be a positive whole number")
        edits.append(Edit(old, new, count))
    return WrongSolution(path.stem, path, reference, why, tuple(caught_by), tuple(edits))
