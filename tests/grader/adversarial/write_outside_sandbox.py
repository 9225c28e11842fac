"""Tries to overwrite the kit's comparison helper (so later submissions pass) and to leave files
behind outside its working directory."""
import grader.checks._compare as compare

for target in (compare.__file__, "/tmp/drills-pwned", "/work/drills-pwned"):
    try:
        with open(target, "a") as handle:
            handle.write("\ndef assert_close(*a, **k):\n    return None\n")
    except OSError:
        pass


def pairwise_sq_dists(a, b):
    raise NotImplementedError


def batched_affine(x, weight, bias):
    raise NotImplementedError
