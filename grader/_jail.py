"""Apply a grading child's limits, then exec its command: ``python -m grader._jail LIMITS -- CMD``.

Runs between the grader and the child, so the grader's own (possibly multithreaded) process never
uses ``preexec_fn``. ``LIMITS`` is JSON with ``cpu_s``, ``memory_mb``, ``file_mb``, ``nproc``,
``network_off``, ``workdir`` (the only place the child may write), ``hide`` (directories covered
by an empty tmpfs: the kit's solutions/, other students' submissions) and ``drop_to`` (uid/gid
to become when started as root, or null when the interpreter is not reachable by that user).

Started as root, the jail also: unshares the mount, network and PID namespaces and forks, so the
child is PID 1 of its own namespace (it cannot see or signal the grader, and when it exits every
process it left behind dies with it); remounts the file system read-only except ``workdir`` and
a private /dev/shm; and, if it cannot drop to another user, drops every capability (bounding set
included) so that root in the child can neither write outside ``workdir`` nor undo the mounts,
and RLIMIT_NPROC applies. The jail process itself waits and passes the child's exit status on.
Not root: only the rlimits.
Imports only the standard library.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x40000000, 0x20000000
NPROC_BUDGET = 128  # processes and threads the child may add to those its user already has
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x20, 0x1000, 0x4000, 0x40000
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        pass  # a hard limit already lower than ours: keep it


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target: str, fstype, flags: int, data) -> bool:
    enc = lambda v: os.fsencode(v) if isinstance(v, str) else v  # noqa: E731
    return libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) == 0


def _isolate_filesystem(libc, workdir: str, hide: list[str]) -> bool:
    """Private mount namespace: hidden dirs empty, everything read-only but ``workdir``."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    if not _mount(libc, None, "/", None, MS_REC | MS_PRIVATE, None):
        return False
    for path in hide:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", MS_RDONLY, "size=64k,mode=0555")
    _mount(libc, "tmpfs", "/dev/shm", "tmpfs", 0, "size=512m,mode=1777")
    _mount(libc, workdir, workdir, None, MS_BIND, None)  # its own mount: stays writable
    return _mount(libc, None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)


def _drop_capabilities(libc) -> None:
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # fails past the last cap: harmless
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
    libc.capset(header, data)


def _tasks_of(uid: int) -> int:
    """Processes and threads ``uid`` runs now (RLIMIT_NPROC counts them all, machine-wide)."""
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue
    return count


def _wait_and_exit(pid: int) -> None:
    """The jail's own end: wait for the child and exit the way it did."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


def apply_limits(limits: dict) -> None:
    """Apply everything the module docstring lists, in an order that keeps each step possible.

    As root this forks: only the child returns; the jail process waits and exits with it.
    """
    _limit(resource.RLIMIT_CPU, int(limits["cpu_s"]))
    _limit(resource.RLIMIT_AS, int(limits["memory_mb"]) << 20)
    _limit(resource.RLIMIT_FSIZE, int(limits["file_mb"]) << 20)
    _limit(resource.RLIMIT_CORE, 0)
    uid = os.geteuid()
    if uid == 0:
        libc = _libc()
        _isolate_filesystem(libc, limits["workdir"], limits.get("hide", []))
        if limits.get("network_off", True):
            libc.unshare(CLONE_NEWNET)
        if libc.unshare(CLONE_NEWPID) == 0:
            pid = os.fork()
            if pid:
                _wait_and_exit(pid)
            _mount(libc, "proc", "/proc", "proc", 0, None)  # this namespace's processes only
        if limits.get("drop_to"):
            uid, gid = limits["drop_to"]
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        else:
            _drop_capabilities(libc)
    # Counts the user's processes and threads machine-wide; ignored while CAP_SYS_RESOURCE is held.
    _limit(resource.RLIMIT_NPROC, _tasks_of(uid) + int(limits.get("nproc", NPROC_BUDGET)))


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m grader._jail LIMITS_JSON -- COMMAND [ARG ...]")
    apply_limits(json.loads(argv[0]))
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
