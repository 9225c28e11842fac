"""The machine-readable exercise catalog (``catalog.toml`` at the kit root).

An exercise id such as ``pytorch.tensors.broadcasting`` maps to these files:

- stub: ``exercises/pytorch/tensors/broadcasting.py``
- public tests: ``exercises/pytorch/tensors/test_broadcasting.py``
- reference: ``solutions/pytorch/tensors/broadcasting.py``
- hidden tests: ``solutions/pytorch/tensors/test_broadcasting_hidden.py``
- wrong solutions: ``solutions/pytorch/tensors/wrong/broadcasting/<mistake>.py`` (a module) or
  ``<mistake>.toml`` (declared edits of the reference; see ``grader.wrong_solutions``)

A submission is any directory laid out like ``exercises/``: the module under test is
``<submission>/pytorch/tensors/broadcasting.py``.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from grader import wrong_solutions
from grader.errors import CatalogError

KIT_ENV = "DRILLS_KIT_ROOT"
CATALOG_NAME = "catalog.toml"


def _is_kit(folder: Path) -> bool:
    return (folder / CATALOG_NAME).is_file() and (folder / "exercises").is_dir()


def find_kit_root(cwd: Path | None = None) -> Path:
    """The kit the ``grader`` command and the pytest plugin work on.

    In order: ``$DRILLS_KIT_ROOT`` (``grader --kit DIR`` sets it; the grader also points each
    grading child at a staged copy of the kit's test files this way); the working directory or
    the nearest folder above it holding ``catalog.toml`` and ``exercises/`` (a clone or a take-home
    bundle you are in, whichever copy of the package is installed); the folder the ``grader``
    package sits in, when that is a kit (an editable install, run from elsewhere). Else the
    working directory, where ``load_catalog`` then says what is missing.
    """
    if os.environ.get(KIT_ENV):
        return Path(os.environ[KIT_ENV]).resolve()
    here = Path(cwd or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if _is_kit(folder):
            return folder
    package_home = Path(__file__).resolve().parent.parent
    return package_home if _is_kit(package_home) else here


KIT_ROOT = find_kit_root()
CATALOG_FILE = KIT_ROOT / CATALOG_NAME


def use_kit(root: Path) -> None:
    """Work on the kit at ``root`` from now on (``grader --kit DIR``); child processes too.

    Raises:
        CatalogError: ``root`` has no ``catalog.toml``.
    """
    global KIT_ROOT, CATALOG_FILE
    root = Path(root).resolve()
    if not (root / CATALOG_NAME).is_file():
        raise CatalogError(f"--kit {root}: no {CATALOG_NAME} there (give the folder of a "
                           "tensor-drills checkout or take-home bundle)")
    KIT_ROOT, CATALOG_FILE = root, root / CATALOG_NAME
    os.environ[KIT_ENV] = str(root)
    reload()


def reload() -> None:
    """Read the catalog file again when next asked (after ``grader new`` added an entry)."""
    _load_catalog.cache_clear()
    _exercises_by_test_file.cache_clear()

DIFFICULTIES = ("easy", "medium", "hard")
FRAMEWORKS = ("pytorch", "tensorflow", "crossframework")


@dataclass(frozen=True)
class Exercise:
    """One catalog entry. Paths are absolute, inside the kit."""

    id: str
    title: str
    framework: str
    topic: str
    difficulty: str
    minutes: int
    seeds: tuple[str, ...]
    # The kit's optional extras (pyproject's optional-dependencies) its tests need beyond the
    # framework's own: a take-home or autograder with this exercise installs them.
    extras: tuple[str, ...] = ()
    # Graded with the submission in a process apart from its tests (``grader.remote``): what the
    # submission does cannot change the verdict. Its hidden tests only call into the module.
    separate_process: bool = False

    @cached_property  # of the id alone; a grading child asks for it per test
    def relpath(self) -> Path:
        """Path of the module under test relative to an implementation root."""
        return Path(*self.id.split(".")).with_suffix(".py")

    @cached_property
    def stem(self) -> str:
        return self.id.rsplit(".", 1)[1]

    @property
    def stub(self) -> Path:
        return KIT_ROOT / "exercises" / self.relpath

    @property
    def public_tests(self) -> Path:
        return self.stub.with_name(f"test_{self.stem}.py")

    @property
    def reference(self) -> Path:
        return KIT_ROOT / "solutions" / self.relpath

    @property
    def hidden_tests(self) -> Path:
        return self.reference.with_name(f"test_{self.stem}_hidden.py")

    @property
    def wrong_solutions(self) -> list[wrong_solutions.WrongSolution]:
        """The exercise's mistakes, sorted by name.

        Raises:
            WrongSolutionError: a declared mistake is malformed.
        """
        return wrong_solutions.load(self.reference.parent / "wrong" / self.stem, self.reference)

    def wrong_solution(self, name: str) -> wrong_solutions.WrongSolution:
        """The mistake called ``name``.

        Raises:
            CatalogError: the exercise has no wrong solution of that name.
        """
        found = {w.name: w for w in self.wrong_solutions}
        if name not in found:
            raise CatalogError(f"{self.id} has no wrong solution {name!r} (it has {', '.join(found)})")
        return found[name]

    @property
    def uses_tensorflow(self) -> bool:
        return self.framework in ("tensorflow", "crossframework")


def required_extras(exercises: list[Exercise]) -> list[str]:
    """The kit's optional extras that grading ``exercises`` needs installed: ``tensorflow`` for
    TensorFlow and cross-framework ones, and those the catalog names for each."""
    return sorted({*(e for ex in exercises for e in ex.extras),
                   *(["tensorflow"] if any(ex.uses_tensorflow for ex in exercises) else [])})


_FIELDS = {"id": str, "title": str, "framework": str, "topic": str, "difficulty": str,
           "minutes": int, "seeds": list}


def _parse_entry(raw: dict, index: int) -> Exercise:
    missing = sorted(set(_FIELDS) - set(raw))
    if missing:
        raise CatalogError(f"catalog entry {index}: missing field(s) {', '.join(missing)}")
    for name, kind in _FIELDS.items():
        if not isinstance(raw[name], kind):
            raise CatalogError(f"catalog entry {index} ({raw.get('id')}): field {name!r} must be "
                               f"{kind.__name__}, got {type(raw[name]).__name__}")
    if raw["framework"] not in FRAMEWORKS:
        raise CatalogError(f"{raw['id']}: framework must be one of {FRAMEWORKS}")
    if raw["difficulty"] not in DIFFICULTIES:
        raise CatalogError(f"{raw['id']}: difficulty must be one of {DIFFICULTIES}")
    parts = raw["id"].split(".")
    # Cross-framework exercises have no topic level in their id (``crossframework.port_weights``).
    two_part = len(parts) == 2 and parts[0] == raw["framework"] == "crossframework"
    if not two_part and (len(parts) != 3 or parts[0] != raw["framework"] or parts[1] != raw["topic"]):
        raise CatalogError(f"{raw['id']}: id must be '<framework>.<topic>.<name>' matching its fields "
                           "(or 'crossframework.<name>')")
    extras = raw.get("extras", [])
    if not (isinstance(extras, list) and all(isinstance(e, str) for e in extras)):
        raise CatalogError(f"{raw['id']}: field 'extras' must be a list of the kit's optional extras")
    separate = raw.get("separate_process", False)
    if not isinstance(separate, bool):
        raise CatalogError(f"{raw['id']}: field 'separate_process' must be true or false")
    return Exercise(raw["id"], raw["title"], raw["framework"], raw["topic"], raw["difficulty"],
                    raw["minutes"], tuple(raw["seeds"]), tuple(extras), separate)


def load_catalog(path: Path | None = None) -> dict[str, Exercise]:
    """Return the exercises by id, in catalog order (of the kit's catalog unless ``path``).

    Raises:
        CatalogError: the file is missing, not TOML, or an entry is malformed or duplicated.
    """
    return _load_catalog(Path(path) if path is not None else CATALOG_FILE)


@cache
def _load_catalog(path: Path) -> dict[str, Exercise]:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(
            f"no tensor-drills kit here: catalog file not found: {path}. Run grader inside a "
            "checkout of the kit or an unpacked take-home bundle (or a folder below one), or "
            f"name it with `grader --kit DIR` or ${KIT_ENV}") from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"catalog file {path} is not valid TOML: {exc}") from None
    exercises: dict[str, Exercise] = {}
    for index, raw in enumerate(data.get("exercise", [])):
        ex = _parse_entry(raw, index)
        if ex.id in exercises:
            raise CatalogError(f"duplicate exercise id {ex.id!r} in {path}")
        exercises[ex.id] = ex
    return exercises


def get_exercise(exercise_id: str) -> Exercise:
    """Look an exercise up by id; unknown ids raise ``CatalogError`` naming the id."""
    catalog = load_catalog()
    try:
        return catalog[exercise_id]
    except KeyError:
        raise CatalogError(f"unknown exercise id {exercise_id!r} (see `grader list`)") from None


def in_topics(ex: Exercise, topics: list[str]) -> bool:
    """Whether ``ex`` is in one of ``topics``, each given as ``autograd`` or ``pytorch.autograd``."""
    return ex.topic in topics or f"{ex.framework}.{ex.topic}" in topics


def select(ids: list[str] | None = None, *, framework: str | None = None,
           topics: list[str] | None = None, patterns: list[str] | None = None,
           difficulty: str | None = None, max_minutes: int | None = None) -> list[Exercise]:
    """The exercises a command works on.

    ``ids``: exactly those, in the order given, each once (the filters do not apply). Otherwise
    the catalog's exercises, in catalog order, that match every filter given: ``framework``,
    ``topics`` (any of them; a topic is ``autograd`` or ``pytorch.autograd``), ``patterns`` (any
    of them, shell-style on ids: ``pytorch.autograd.*``), ``difficulty`` and at most
    ``max_minutes``.

    Raises:
        CatalogError: an id is not in the catalog.
    """
    if ids:
        return list(dict.fromkeys(get_exercise(i) for i in ids))
    return [ex for ex in load_catalog().values()
            if (not framework or ex.framework == framework)
            and (not topics or in_topics(ex, topics))
            and (not patterns or any(fnmatch.fnmatchcase(ex.id, p) for p in patterns))
            and (not difficulty or ex.difficulty == difficulty)
            and (max_minutes is None or ex.minutes <= max_minutes)]


def exercise_for_test_file(path: Path) -> Exercise | None:
    """The exercise whose public or hidden tests live in ``path``, if any."""
    return _exercises_by_test_file().get(os.path.realpath(path))


@cache
def _exercises_by_test_file() -> dict[str, Exercise]:
    # Asked once per collected test: a lookup table, not a scan of the catalog each time.
    return {str(test_file): ex for ex in load_catalog().values()
            for test_file in (ex.public_tests, ex.hidden_tests)}
