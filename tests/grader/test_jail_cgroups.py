"""The jail's cgroups (``grader.engine.jail``): each child gets a memory and a pids cgroup of its
own, named by its uid, removed by ``release`` when it is done."""

from __future__ import annotations

import os

import pytest

from grader.engine import jail

# A container without privileges lists its cgroups but mounts them read-only.
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not any(os.access(parent, os.W_OK)
                                                             for parent, _, _ in jail._cgroup_parents()),
                                reason="needs root and a cgroup file system this process may write")


def test_a_cgroup_left_by_a_killed_grader_is_used_with_its_limits_not_skipped():
    # A grader killed before release() leaves its child's groups behind; a later child given the
    # same uid must still get its limits.
    uid = jail.pick_uid()
    parent, controllers, version = next(p for p in jail._cgroup_parents() if os.access(p[0], os.W_OK))
    stale = os.path.join(parent, f"drills-{uid}")
    os.mkdir(stale)
    try:
        assert stale in jail._cgroups(uid, memory_mb=1234, nproc=56)
        knob = "memory" if "memory" in controllers else "pids"
        with open(os.path.join(stale, jail._CGROUP_LIMITS[knob][version])) as limit:
            assert limit.read().strip() == str(1234 << 20 if knob == "memory" else 56)
    finally:
        jail.release(uid)
    assert not os.path.exists(stale)
