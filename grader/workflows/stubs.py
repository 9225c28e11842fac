"""Pristine exercise stubs: ``grader hint`` (the stub's Hints) and ``grader reset`` (start over).

The learner edits the stubs in place, so the pristine text must come from somewhere those edits
do not reach. In order:

1. ``--from DIR``: a folder laid out like exercises/ holding untouched stubs (a fresh clone's
   exercises/, or an unpacked release bundle's).
2. The kit's git history: the newest committed version of ``exercises/<path>`` that is still a
   stub (every function ends in ``raise NotImplementedError``), so a learner who commits their
   work in the kit's checkout still gets the stub back, not their own last commit.
3. ``grader/_stubs/<path>``: copies that ``grader release`` ships inside a bundle's grader
   package (a bundle has no git history). The kit's repository keeps no second copy.

``reset`` and ``restore`` never lose a learner's code: the version they replace is kept first, as
a numbered attempt in the kit's learner state (``.grader/attempts/<id>/<n>-<UTC time>.py``, see
``grader.progress.state_dir``); ``grader attempts`` lists them and ``grader restore`` brings one
back.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from grader import PACKAGE_DIR, catalog, progress
from grader._source import parse
from grader.errors import StubError

PACKAGED_STUBS = PACKAGE_DIR / "_stubs"
GIT_HISTORY_DEPTH = 50


def _given_functions(tree: ast.Module) -> set[str]:
    """The names in a module-level ``GIVEN = ("name", ...)``: working functions an exercise hands
    the learner as part of its stub (the buggy loop of ``pytorch.training.debug_not_learning``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "GIVEN" for t in node.targets):
            try:
                names = ast.literal_eval(node.value)
            except ValueError:
                return set()
            return {n for n in names if isinstance(n, str)} if isinstance(names, tuple | list) else set()
    return set()


def looks_like_stub(source: str) -> bool:
    """True when every function of ``source`` ends in ``raise NotImplementedError``, apart from
    the top-level functions its ``GIVEN`` names (see ``_given_functions``), and one at least does."""
    try:
        tree = parse(source)
    except SyntaxError:
        return False
    given = _given_functions(tree)
    kept = [n for n in tree.body if not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name in given)]
    functions = [n for top in kept for n in ast.walk(top) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return bool(functions) and all(
        isinstance(fn.body[-1], ast.Raise) and fn.body[-1].exc is not None
        and "NotImplementedError" in ast.unparse(fn.body[-1].exc) for fn in functions)


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(catalog.KIT_ROOT), *args], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _from_git(ex: catalog.Exercise) -> tuple[str, str] | None:
    rel = (Path("exercises") / ex.relpath).as_posix()
    commits = _git("log", f"-n{GIT_HISTORY_DEPTH}", "--format=%H", "--", rel)
    for commit in (commits or "").split():
        text = _git("show", f"{commit}:{rel}")
        if text is not None and looks_like_stub(text):
            return text, f"git {commit[:10]}:{rel}"
    return None


def pristine_stub(ex: catalog.Exercise, from_dir: Path | None = None) -> tuple[str, str]:
    """The untouched stub of ``ex`` and where it came from (see the module docstring).

    Raises:
        StubError: ``from_dir`` lacks the file, or no pristine copy can be found.
    """
    if from_dir is not None:
        path = Path(from_dir) / ex.relpath
        if not path.is_file():
            raise StubError(f"--from {from_dir}: no file {ex.relpath} there")
        return path.read_text(encoding="utf-8"), str(path)
    found = _from_git(ex)
    if found:
        return found
    packaged = PACKAGED_STUBS / ex.relpath
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8"), str(packaged)
    raise StubError(f"no pristine copy of {ex.relpath}: the kit is not a git checkout with it "
                    "committed, and no copy ships in grader/_stubs; pass --from DIR (a folder "
                    "laid out like exercises/ with untouched stubs, e.g. a fresh clone's)")


def untouched_stub(ex: catalog.Exercise) -> str:
    """The stub as learners get it, for what is shipped to them (``release``, ``nbgrader export``):
    the pristine copy (``pristine_stub``), else the kit's ``exercises/`` file when it still is a
    stub. Never a maintainer's work in progress in ``exercises/``.

    Raises:
        StubError: no untouched stub can be found.
    """
    try:
        return pristine_stub(ex)[0]
    except StubError:
        text = ex.stub.read_text(encoding="utf-8") if ex.stub.is_file() else ""
        if looks_like_stub(text):
            return text
        raise


def hints(ex: catalog.Exercise, from_dir: Path | None = None) -> str:
    """The "Hints" section of the stub's docstring (empty when it has none)."""
    try:
        source, _ = pristine_stub(ex, from_dir)
    except StubError:
        source = ex.stub.read_text(encoding="utf-8")  # the learner's copy: better than nothing
    doc = ast.get_docstring(parse(source)) or ""
    lines = doc.splitlines()
    out: list[str] = []
    inside = False
    for i, line in enumerate(lines):
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if underline and line.strip():
            if inside:
                break
            inside = line.strip().lower() == "hints"
            continue
        if inside and set(line.strip()) != {"-"}:
            out.append(line)
    return "\n".join(out).strip()


@dataclass(frozen=True)
class Attempt:
    """A kept version of a learner's module."""

    number: int
    path: Path
    saved_at: str  # "2026-11-24 00:51:09 UTC"


_ATTEMPT_NAME = re.compile(r"^(\d+)-(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z\.py$")


def attempts_dir(ex: catalog.Exercise) -> Path:
    return progress.state_dir() / "attempts" / ex.id


def attempts(ex: catalog.Exercise) -> list[Attempt]:
    """The kept versions of ``ex``, oldest first."""
    folder = attempts_dir(ex)
    found = []
    for path in folder.iterdir() if folder.is_dir() else ():
        match = _ATTEMPT_NAME.match(path.name)
        if match:
            year, month, day, hour, minute, second = match.groups()[1:]
            found.append(Attempt(int(match[1]), path, f"{year}-{month}-{day} {hour}:{minute}:{second} UTC"))
    return sorted(found, key=lambda a: a.number)


def keep(ex: catalog.Exercise, content: bytes) -> Attempt:
    """Keep ``content`` as the next attempt of ``ex`` (or return the attempt already holding
    exactly these bytes).

    Raises:
        StubError: the attempts folder cannot be written.
    """
    existing = attempts(ex)
    for attempt in existing:
        if attempt.path.read_bytes() == content:
            return attempt
    number = existing[-1].number + 1 if existing else 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        progress.ensure_state_dir()
        attempts_dir(ex).mkdir(parents=True, exist_ok=True)
        while True:
            path = attempts_dir(ex) / f"{number:03d}-{stamp}.py"
            try:
                with open(path, "xb") as handle:  # never overwrite: a racing reset takes the next number
                    handle.write(content)
                    handle.flush()
                    os.fsync(handle.fileno())
                break
            except FileExistsError:
                number += 1
    except OSError as exc:
        raise StubError(f"cannot keep your version of {ex.relpath} in {attempts_dir(ex)} ({exc}); "
                        "nothing was changed") from exc
    return next(a for a in attempts(ex) if a.path == path)


def reset(ex: catalog.Exercise, root: Path, from_dir: Path | None = None) -> tuple[Path, Attempt | None, str]:
    """Overwrite ``root/<module>`` with the pristine stub; returns (module, kept attempt or None,
    origin of the stub).

    The previous file, when there was one and it differed from the stub, is kept first as an
    attempt (``keep``): if it cannot be kept, nothing changes.
    """
    if not root.is_dir():
        raise StubError(f"not a folder: {root}")
    text, origin = pristine_stub(ex, from_dir)
    target = root / ex.relpath
    kept = None
    if target.is_file():
        current = target.read_bytes()
        if current == text.encode("utf-8"):
            return target, None, origin
        kept = keep(ex, current)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target, kept, origin


def restore(ex: catalog.Exercise, root: Path, number: int | None = None) -> tuple[Path, Attempt, Attempt | None]:
    """Put attempt ``number`` (default: the newest) back in ``root/<module>``; returns (module,
    restored attempt, the attempt now keeping the replaced version or None).

    The replaced version is kept first, unless it is the untouched stub or already kept.

    Raises:
        StubError: no such attempt, or the replaced version cannot be kept.
    """
    if not root.is_dir():
        raise StubError(f"not a folder: {root}")
    kept_versions = attempts(ex)
    if not kept_versions:
        raise StubError(f"no kept attempt of {ex.id} in {attempts_dir(ex)}")
    chosen = kept_versions[-1] if number is None else next((a for a in kept_versions if a.number == number), None)
    if chosen is None:
        numbers = ", ".join(str(a.number) for a in kept_versions)
        raise StubError(f"{ex.id} has no attempt {number} (kept: {numbers}; see `grader attempts {ex.id}`)")
    target = root / ex.relpath
    content = chosen.path.read_bytes()
    kept = None
    if target.is_file() and target.read_bytes() != content:
        current = target.read_bytes()
        try:
            pristine = pristine_stub(ex)[0].encode("utf-8")
        except StubError:
            pristine = None
        if current != pristine:
            kept = keep(ex, current)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return target, chosen, kept
