"""What a candidate or student hands in, turned into a folder laid out like ``exercises/``.

A submission arrives as a folder or a ``.zip``, wrapped however its author zipped it: the
``exercises`` folder itself, the whole take-home folder, a zip made from the parent folder, or a
``name-submission/exercises/...`` wrapper. ``open_submission`` unpacks a zip safely and
``find_exercise_root`` finds the folder that holds the exercise modules.

A take-home bundle (``grader release``) carries a manifest, ``exercises/take-home.json``
(``{"exercises": [...], "kit_version": ...}``), so that grading a returned bundle grades exactly
the take-home's exercises. It travels inside the ``exercises`` folder that candidates zip.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader import catalog
from grader.errors import SubmissionError

MANIFEST_NAME = "take-home.json"
MAX_UNZIPPED_BYTES = 64 << 20
MAX_SEARCH_DEPTH = 4
# Folders that never hold the graded modules: copies of the stubs, environments, caches, the
# kit's own references (a mistaken ``grader score .`` in the kit must not grade solutions/).
_NEVER_ROOTS = {"_stubs", "solutions", "wrong", "site-packages", "node_modules", "__MACOSX",
                "__pycache__", "venv"}


@dataclass
class Opened:
    """A submission ready to grade: the folder laid out like ``exercises/`` and what to say."""

    root: Path
    problems: list[str] = field(default_factory=list)  # e.g. zip entries that were not extracted
    manifest: dict | None = None


def unpack(zip_path: Path, dest: Path) -> list[str]:
    """Extract ``zip_path`` into ``dest`` safely; return one problem per entry left out.

    Entries with an absolute path, a ``..`` component or a symbolic link are never extracted.

    Raises:
        SubmissionError: not a zip, empty, or larger than ``MAX_UNZIPPED_BYTES`` unpacked.
    """
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError):
        raise SubmissionError(f"{zip_path.name} is not a valid zip file") from None
    left_out: list[str] = []
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if not members:
            raise SubmissionError(f"{zip_path.name} is an empty zip file: nothing to grade")
        if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
            raise SubmissionError(f"{zip_path.name} unpacks to more than {MAX_UNZIPPED_BYTES >> 20} MiB")
        for member in members:
            name = member.filename.replace("\\", "/")
            rel = PurePosixPath(name)
            if rel.is_absolute() or ".." in rel.parts or (len(name) > 1 and name[1] == ":"):
                left_out.append(f"zip entry {member.filename!r} points outside the submission "
                                "folder: not extracted, not graded")
                continue
            if (member.external_attr >> 16) & 0o170000 == 0o120000:
                left_out.append(f"zip entry {member.filename!r} is a symbolic link: not extracted, "
                                "not graded")
                continue
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return left_out


def _module_count(folder: Path, exercises: list[catalog.Exercise]) -> int:
    return sum((folder / ex.relpath).is_file() for ex in exercises)


def find_exercise_root(folder: Path, exercises: list[catalog.Exercise]) -> Path | None:
    """The folder under ``folder`` (itself included) laid out like ``exercises/``, or None.

    ``folder`` itself when it holds any of the exercises' modules; otherwise the shallowest
    folder that holds the most of them (a folder named ``exercises`` first among equals),
    looking ``MAX_SEARCH_DEPTH`` levels down and never into copies of the stubs, virtual
    environments or caches.
    """
    if _module_count(folder, exercises):
        return folder
    level = [folder]
    for _ in range(MAX_SEARCH_DEPTH):
        level = [child for parent in level for child in sorted(parent.iterdir())
                 if child.is_dir() and not child.is_symlink() and child.name not in _NEVER_ROOTS
                 and not child.name.startswith(".")]
        scored = [(_module_count(d, exercises), d.name == "exercises", d) for d in level]
        best = max(scored, key=lambda s: (s[0], s[1]), default=(0, False, None))
        if best[0]:
            return best[2]
    return None


def read_manifest(root: Path) -> dict | None:
    """The take-home manifest beside the exercise modules (in ``root`` or its parent), if any.

    Raises:
        SubmissionError: a manifest is there but unreadable.
    """
    for path in (root / MANIFEST_NAME, root.parent / MANIFEST_NAME):
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise SubmissionError(f"{path.name} in the submission is not valid JSON ({exc})") from None
            ids = data.get("exercises") if isinstance(data, dict) else None
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
                raise SubmissionError(f"{path.name} in the submission has no list of exercise ids")
            return data
    return None


def _manifest_home(folder: Path) -> Path:
    """Where a manifest lies when no exercise module does (a candidate who handed in nothing
    still gets the take-home's exercises graded, as not started)."""
    found = sorted((p for p in folder.rglob(MANIFEST_NAME)
                    if len(p.relative_to(folder).parts) <= MAX_SEARCH_DEPTH + 1
                    and not _NEVER_ROOTS & set(p.relative_to(folder).parts)),
                   key=lambda p: len(p.parts))
    return found[0].parent if found else folder


def looked_for(exercises: list[catalog.Exercise], limit: int = 3) -> str:
    names = [ex.relpath.as_posix() for ex in exercises]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


@contextlib.contextmanager
def open_submission(path: Path, exercises: list[catalog.Exercise] | None = None) -> Iterator[Opened]:
    """Yield the submission at ``path`` (a folder or a ``.zip``) ready to grade.

    ``exercises``: the modules to look for (default: the take-home manifest's, else the whole
    catalog). The yielded root is ``path`` itself when no exercise module is found anywhere (it
    is then graded as not started, with a problem saying what was looked for).

    Raises:
        SubmissionError: ``path`` is missing or neither a folder nor a zip, or the zip is unusable.
    """
    path = Path(path)
    if not path.exists():
        raise SubmissionError(f"submission not found: {path}")
    with contextlib.ExitStack() as stack:
        problems: list[str] = []
        if path.is_dir():
            folder = path
        elif path.suffix.lower() == ".zip" or zipfile.is_zipfile(path):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="drills-unzip-")))
            problems += unpack(path, folder)
        else:
            raise SubmissionError(f"a submission is a folder laid out like exercises/ or a .zip of "
                                  f"one, not this file: {path}")
        search = exercises or list(catalog.load_catalog().values())
        root = find_exercise_root(folder, search)
        manifest = read_manifest(root if root is not None else _manifest_home(folder))
        if root is None:
            if manifest is not None and not exercises:
                known = catalog.load_catalog()
                search = [known[i] for i in manifest["exercises"] if i in known] or search
            problems.insert(0, f"no exercise module found; looked for {looked_for(search)} "
                               f"(at the top of {path.name} and up to {MAX_SEARCH_DEPTH} folders down)")
            root = folder
        yield Opened(root, problems, manifest)
