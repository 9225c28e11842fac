"""The machine-readable exercise catalog (``catalog.toml`` at the kit root).

An exercise id such as ``pytorch.tensors.broadcasting`` maps to these files:

- stub: ``exercises/pytorch/tensors/broadcasting.py``
- public tests: ``exercises/pytorch/tensors/test_broadcasting.py``
- reference: ``solutions/pytorch/tensors/broadcasting.py``
- hidden tests: ``solutions/pytorch/tensors/test_broadcasting_hidden.py``
- wrong solutions: ``solutions/pytorch/tensors/wrong/broadcasting/<mistake>.py``

A submission is any directory laid out like ``exercises/``: the module under test is
``<submission>/pytorch/tensors/broadcasting.py``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# The grader points a grading child at a staged copy of the kit's test files (DRILLS_KIT_ROOT), so
# the child never needs the real solutions/ folder, which the sandbox hides.
KIT_ROOT = Path(os.environ.get("DRILLS_KIT_ROOT") or Path(__file__).resolve().parent.parent).resolve()
CATALOG_FILE = KIT_ROOT / "catalog.toml"

DIFFICULTIES = ("easy", "medium", "hard")
FRAMEWORKS = ("pytorch", "tensorflow", "crossframework")


class CatalogError(ValueError):
    """The catalog file is malformed, or an exercise id is unknown."""


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

    @property
    def relpath(self) -> Path:
        """Path of the module under test relative to an implementation root."""
        return Path(*self.id.split(".")).with_suffix(".py")

    @property
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
    def wrong_solutions(self) -> list[Path]:
        folder = self.reference.parent / "wrong" / self.stem
        return sorted(folder.glob("*.py")) if folder.is_dir() else []

    @property
    def uses_tensorflow(self) -> bool:
        return self.framework in ("tensorflow", "crossframework")


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
    return Exercise(raw["id"], raw["title"], raw["framework"], raw["topic"], raw["difficulty"],
                    raw["minutes"], tuple(raw["seeds"]))


@cache
def load_catalog(path: Path = CATALOG_FILE) -> dict[str, Exercise]:
    """Return the exercises by id, in catalog order.

    Raises:
        CatalogError: the file is missing, not TOML, or an entry is malformed or duplicated.
    """
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(f"catalog file not found: {path}") from None
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


def exercise_for_test_file(path: Path) -> Exercise | None:
    """The exercise whose public or hidden tests live in ``path``, if any."""
    return _exercises_by_test_file().get(os.path.realpath(path))


@cache
def _exercises_by_test_file() -> dict[str, Exercise]:
    # Asked once per collected test: a lookup table, not a scan of the catalog each time.
    return {str(test_file): ex for ex in load_catalog().values()
            for test_file in (ex.public_tests, ex.hidden_tests)}
