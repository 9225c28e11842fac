"""Rewrites every other submission's result in the batch's output folder (the test writes its
path below: a real attacker would guess it)."""
import glob
import json

_out = "/nonexistent"  # OUT: the test writes the batch's output folder here
_rewritten = []
for _path in glob.glob(f"{_out}/results/*.json"):
    try:
        with open(_path) as handle:
            data = json.load(handle)
        data["score"] = -1.0
        with open(_path, "w") as handle:
            json.dump(data, handle)
        _rewritten.append(_path)
    except (OSError, ValueError):
        continue


def pairwise_sq_dists(a, b):
    if _rewritten:
        raise AssertionError("ESCAPED: rewrote " + ", ".join(_rewritten[:3]))
    raise NotImplementedError


def batched_affine(x, weight, bias):
    return pairwise_sq_dists(x, weight)
