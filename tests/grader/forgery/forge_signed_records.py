"""Looks for the grading child's record writer and signing key (in ``config.stash``, in the
writer's closure, on the key pipe, in the parent's memory) and, with whatever it finds, signs a
'passed' record for every collected test and 'finished', then exits."""
import gc
import json
import os

_found = []
for obj in gc.get_objects():
    try:
        if callable(obj) and getattr(obj, "__name__", "") == "write" and obj.__closure__:
            cells = [c.cell_contents for c in obj.__closure__]
            if any(isinstance(c, bytes) and len(c) == 32 for c in cells):
                _found.append(obj)
    except Exception:
        pass
for write in _found:
    for node in ("test_cross_entropy.py::test_uniform_logits_give_log_c",):
        write({"event": "result", "nodeid": node, "exercise": "pytorch.losses.cross_entropy",
               "status": "passed", "message": "", "not_started": False, "duration": 0.0})
    write({"event": "finished", "exitstatus": 0})
_line = json.dumps({"sig": "0" * 64, "body": "{}"}) + "\n"
for fd in range(3, 256):  # every descriptor the executor might still hold
    try:
        os.write(fd, _line.encode())
        _found.append(f"fd {fd}")
    except OSError:
        pass
for path in (f"/proc/{os.getppid()}/mem", f"/proc/{os.getppid()}/environ"):
    try:
        with open(path, "rb") as stream:
            stream.read(1)
        _found.append(path)
    except OSError:
        pass
for fd in range(3, 64):  # the parent's report and key pipes, reopened through /proc
    try:
        handle = os.open(f"/proc/{os.getppid()}/fd/{fd}", os.O_RDWR)
        os.write(handle, _line.encode())
        _found.append(f"parent fd {fd}")
    except OSError:
        pass


def cross_entropy(logits, target, *, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    if _found:
        raise ValueError(f"ESCAPED: reached {_found}")
    os._exit(0)  # 'finished', then gone
