"""Leaves state the host or a later submission would see: a System V shared memory segment under
a fixed key (and reads one left by an earlier run), markers in /dev and /dev/shm, a new hostname,
and opens host knobs (drop_caches, pid_max, cgroup limits) for writing."""
import ctypes
import os

KEY = 0x0D11115  # the test looks for this key on the host afterwards
_escaped = []
_libc = ctypes.CDLL(None, use_errno=True)
_first = "DRILLS_HOSTILE_LOADED" not in os.environ  # the module loads once per test file
os.environ["DRILLS_HOSTILE_LOADED"] = "1"
if _libc.shmget(KEY, 4096, 0) >= 0 and _first:
    _escaped.append("found an earlier submission's shared memory")
_libc.shmget(KEY, 4096, 0o1000 | 0o666)  # IPC_CREAT: left behind on purpose
for _marker in ("/dev/drills-marker", "/dev/shm/drills-marker"):
    try:
        with open(_marker, "x") as handle:
            handle.write("left by a submission")
    except FileExistsError:
        if _first:
            _escaped.append(f"found {_marker} from an earlier run")
    except OSError:
        pass
if _libc.sethostname(b"pwned", 5) == 0:
    _escaped.append("renamed the host")
for _knob in ("/proc/sys/vm/drop_caches", "/proc/sys/kernel/pid_max",
              "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
              "/sys/kernel/mm/transparent_hugepage/enabled"):
    try:
        os.close(os.open(_knob, os.O_WRONLY))
        _escaped.append(f"opened {_knob} for writing")
    except OSError:
        pass


def pairwise_sq_dists(a, b):
    if _escaped:
        raise AssertionError("ESCAPED: " + "; ".join(_escaped))
    raise NotImplementedError


def batched_affine(x, weight, bias):
    return pairwise_sq_dists(x, weight)
