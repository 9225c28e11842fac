"""Apply a grading child's limits, then exec its command: ``python -m grader._jail LIMITS -- CMD``.

Runs between the grader and the child, so the grader's own (possibly multithreaded) process never
uses ``preexec_fn``. ``LIMITS`` is JSON with ``cpu_s``, ``memory_mb``, ``file_mb``, ``nproc``,
``network_off``, ``workdir`` (the only place the child may write), ``hide`` (directories covered
by an empty tmpfs: the kit's solutions/, other students' submissions) and ``drop_to`` (uid/gid
to become when started as root, or null when the interpreter is not reachable by that user).

Started as root, the jail also: unshares the mount and network namespaces, remounts the file
system read-only except ``workdir`` and a private /dev/shm, and, if it cannot drop to another
user, drops every capability (bounding set included) so that root in the child can neither write
outside ``workdir`` nor undo the mounts, and RLIMIT_NPROC applies. Not root: only the rlimits.
Imports only the standard library.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
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


def apply_limits(limits: dict) -> None:
    """Apply everything the module docstring lists, in an order that keeps each step possible."""
    _limit(resource.RLIMIT_CPU, int(limits["cpu_s"]))
    _limit(resource.RLIMIT_AS, int(limits["memory_mb"]) << 20)
    _limit(resource.RLIMIT_FSIZE, int(limits["file_mb"]) << 20)
    _limit(resource.RLIMIT_CORE, 0)
    if os.geteuid() == 0:
        libc = _libc()
        _isolate_filesystem(libc, limits["workdir"], limits.get("hide", []))
        if limits.get("network_off", True):
            libc.unshare(CLONE_NEWNET)
        if limits.get("drop_to"):
            uid, gid = limits["drop_to"]
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        else:
            _drop_capabilities(libc)
    # Counts the user's processes and threads; ignored while CAP_SYS_RESOURCE is held.
    _limit(resource.RLIMIT_NPROC, int(limits["nproc"]))


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m grader._jail LIMITS_JSON -- COMMAND [ARG ...]")
    apply_limits(json.loads(argv[0]))
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
