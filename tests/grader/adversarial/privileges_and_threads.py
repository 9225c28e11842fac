"""Checks whether it runs as root (then rewrites the kit's comparison helper) and starts 600
threads against a process limit of far fewer."""
import os
import threading
import time

_escaped = []
if os.getuid() == 0 or os.geteuid() == 0:
    _escaped.append("runs as uid 0")
    import grader.checks._compare as compare

    try:
        with open(compare.__file__, "a") as handle:
            handle.write("\n# rewritten by a submission\n")
        _escaped.append("rewrote the kit")
    except OSError:
        pass
_stop = threading.Event()
_threads = 0
for _ in range(600):
    try:
        threading.Thread(target=_stop.wait, daemon=True).start()
        _threads += 1
    except RuntimeError:
        break
_stop.set()
time.sleep(0.2)
if _threads > 200:
    _escaped.append(f"started {_threads} threads")


def pairwise_sq_dists(a, b):
    if _escaped:
        raise AssertionError("ESCAPED: " + "; ".join(_escaped))
    raise NotImplementedError


def batched_affine(x, weight, bias):
    return pairwise_sq_dists(x, weight)
