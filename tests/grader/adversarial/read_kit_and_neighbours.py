"""Looks for a reference implementation anywhere it can read: the kit's git objects, its
examples, its solutions, other submissions' staged copies (concurrent ones included) and the
batch's submissions folder (the test writes its path below); runs the first it finds as its own."""
import glob
import os
from pathlib import Path

import grader

_kit = Path(grader.__file__).resolve().parent.parent
_mine = Path(__file__).resolve()
_batch = "/nonexistent"  # BATCH: the test writes the batch's submissions folder here
_escaped = []
for _git in (_kit / ".git", _kit / ".git" / "objects"):
    try:
        if os.listdir(_git):
            _escaped.append(f"listed {_git}")
    except OSError:
        pass
_namespace: dict = {}
_patterns = [str(_kit / "examples" / "**" / "*.py"), str(_kit / "solutions" / "**" / "*.py"),
             "/tmp/drills-*/submission/**/*.py", f"{_batch}/**/*.py"]
for _pattern in _patterns:
    for _path in glob.glob(_pattern, recursive=True)[:200]:
        if Path(_path).resolve() == _mine:
            continue
        try:
            _source = Path(_path).read_text()
        except OSError:
            continue
        if "def pairwise_sq_dists" in _source and "NotImplementedError" not in _source:
            try:
                exec(_source, _namespace)
                _escaped.append(f"ran {_path}")
                break
            except Exception:  # noqa: BLE001
                _namespace.clear()
    if "pairwise_sq_dists" in _namespace:
        break


def pairwise_sq_dists(a, b):
    if "pairwise_sq_dists" in _namespace:
        return _namespace["pairwise_sq_dists"](a, b)
    if _escaped:
        raise AssertionError("ESCAPED: " + "; ".join(_escaped))
    raise NotImplementedError


def batched_affine(x, weight, bias):
    if "batched_affine" in _namespace:
        return _namespace["batched_affine"](x, weight, bias)
    raise NotImplementedError
