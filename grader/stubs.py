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
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from pathlib import Path

from grader import catalog

PACKAGED_STUBS = Path(__file__).resolve().parent / "_stubs"
GIT_HISTORY_DEPTH = 50


class StubError(ValueError):
    """No pristine stub can be found, or the target folder is unusable."""


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
        tree = ast.parse(source)
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
    doc = ast.get_docstring(ast.parse(source)) or ""
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


def _cmd_hint(args: argparse.Namespace) -> int:
    ex = catalog.get_exercise(args.id)
    text = hints(ex, Path(args.from_dir) if args.from_dir else None)
    print(f"{ex.id}: {ex.title}")
    print(f"{ex.difficulty}, about {ex.minutes} min; edit exercises/{ex.relpath.as_posix()}\n")
    print(f"Hints\n-----\n{text}" if text else "This exercise's stub has no Hints section: "
          "its docstring's Contract is the specification.")
    return 0


def reset(ex: catalog.Exercise, root: Path, from_dir: Path | None = None) -> tuple[Path, Path | None, str]:
    """Overwrite ``root/<module>`` with the pristine stub; returns (module, backup or None, origin).

    The previous file, when there was one and it differed, is kept as ``<module>.py.bak``.
    """
    if not root.is_dir():
        raise StubError(f"not a folder: {root}")
    text, origin = pristine_stub(ex, from_dir)
    target = root / ex.relpath
    backup = None
    if target.is_file():
        if target.read_text(encoding="utf-8", errors="replace") == text:
            return target, None, origin
        backup = target.with_name(target.name + ".bak")
        shutil.copy2(target, backup)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target, backup, origin


def _cmd_reset(args: argparse.Namespace) -> int:
    ex = catalog.get_exercise(args.id)
    root = Path(args.dir)
    from_dir = Path(args.from_dir) if args.from_dir else None
    target = root / ex.relpath
    if not args.yes:
        try:
            answer = input(f"Replace {target} with the untouched stub of {ex.id}? "
                           f"(your version is kept as {target.name}.bak) [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("not reset (pass --yes to skip this question)", file=sys.stderr)
            return 1
    module, backup, origin = reset(ex, root, from_dir)
    if backup is None and module.is_file():
        print(f"{module} is the untouched stub (from {origin})")
    else:
        print(f"reset {module} from {origin}" + (f"; your version is in {backup}" if backup else ""))
    return 0


def _guarded(func):
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except StubError as exc:
            print(f"grader: error: {exc}", file=sys.stderr)
            return 2
    return run


def register(sub) -> None:
    """Add the ``hint`` and ``reset`` subcommands to the CLI's subparsers."""
    hint = sub.add_parser(
        "hint", help="show the hints of an exercise",
        description="Print the Hints section of an exercise stub's docstring, with its title and "
                    "time estimate. The hints come from the pristine stub, so editing your copy "
                    "does not lose them.")
    hint.add_argument("id", metavar="ID", help="exercise id, e.g. pytorch.tensors.broadcasting")
    hint.add_argument("--from", dest="from_dir", metavar="DIR",
                      help="folder of untouched stubs to read the hints from (see `grader reset -h`)")
    hint.set_defaults(func=_guarded(_cmd_hint))

    rst = sub.add_parser(
        "reset", help="restore one exercise to its untouched stub",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Replace one exercise module in DIR with its untouched stub, leaving every "
                    "other file alone; your version is kept as <module>.py.bak.\n\n"
                    "The untouched stub comes from, in order:\n"
                    "  1. --from DIR, a folder laid out like exercises/ with untouched stubs;\n"
                    "  2. the kit's git history: the newest committed version that is still a\n"
                    "     stub (so committing your own work does not break reset);\n"
                    "  3. grader/_stubs/, the copies a `grader release` bundle ships.\n"
                    "Otherwise it stops with an error asking for --from.")
    rst.add_argument("id", metavar="ID", help="exercise id, e.g. pytorch.tensors.broadcasting")
    rst.add_argument("dir", nargs="?", default=str(catalog.KIT_ROOT / "exercises"), metavar="DIR",
                     help="folder laid out like exercises/ (default: the kit's exercises/)")
    rst.add_argument("--from", dest="from_dir", metavar="DIR",
                     help="folder laid out like exercises/ holding the untouched stubs")
    rst.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    rst.set_defaults(func=_guarded(_cmd_reset))
