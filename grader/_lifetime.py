"""A process's life bound to its parent's: Linux's parent-death signal.

Used by the jail (a grading child never outlives the grader), the fork server (a child never
outlives its server) and the ranks of ``grader.checks.Ranks`` (a rank never outlives its test).
"""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(libc=None) -> None:
    """Have the kernel SIGKILL this process when its parent ends."""
    (libc or ctypes.CDLL(None, use_errno=True)).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
