"""Hidden tests for pytorch.performance.memory_debugging (the catalog's contract checks).

``FakeDevice`` plays a GPU with a hidden capacity: ``try_batch(n)`` allocates a tensor, and raises
a real ``torch.OutOfMemoryError`` when ``n`` is above the threshold. It runs where the search
calls it: graded apart, in the submission's process, whose ``gc.collect()`` must free a failed
try's tensors; it is kept in step with its copy there (it has a state dict,
``grader.remote._kept``), so its records of the calls come back after each search.
"""

from __future__ import annotations

import gc
import math
import weakref

import pytest
import torch
from hypothesis import example, given, settings, strategies as st

from grader.checks import assert_raises_naming

# A search that never ends is this exercise's likeliest mistake (a start of 0 doubled stays 0): it
# fails in 10 s, not the default minute. Every test here takes the reference under a second.
pytestmark = pytest.mark.time_limit(10)


class FakeDevice:
    def __init__(self, threshold: int, *, cyclic: bool = False, max_calls: int | None = None) -> None:
        self.threshold = threshold
        self.cyclic = cyclic  # a failed try's tensors sit in a reference cycle: only gc frees them
        self.max_calls = max_calls  # past it, a try raises: a search that never ends fails at once
        self.calls: list[int] = []
        self.failed_tensors: list[weakref.ref] = []
        self.alive_at_call: list[int] = []

    def __call__(self, n: int) -> None:
        if self.max_calls is not None and len(self.calls) >= self.max_calls:
            raise RuntimeError(f"fake device: try_batch called more than {self.max_calls} times, "
                               "the search does not end")
        self.alive_at_call.append(sum(ref() is not None for ref in self.failed_tensors))
        self.calls.append(n)
        activations = torch.empty(min(n, 4096))  # what a real try would hold when it fails
        if n > self.threshold:
            self.failed_tensors.append(weakref.ref(activations))
            if self.cyclic:  # as a model's modules and hooks often are
                cycle = [activations]
                cycle.append(cycle)
            raise torch.OutOfMemoryError(f"fake: batch {n} does not fit")

    def state_dict(self) -> dict:  # its records are its plain attributes, kept in step as they are
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def bound(start: int, limit: int) -> int:
    return 2 * math.ceil(math.log2(limit - start + 1)) + 1


def expected(threshold: int, start: int, limit: int) -> int:
    return 0 if threshold < start else min(threshold, limit)


@st.composite
def searches(draw):
    start = draw(st.integers(1, 300))
    limit = draw(st.integers(start, 5000))
    threshold = draw(st.integers(0, limit + 100))
    return start, limit, threshold


@pytest.mark.points(3)
@settings(max_examples=12)  # every failed try runs gc.collect(), which is slow with torch loaded
@given(case=searches())
@example(case=(1, 65536, 40000))
@example(case=(1, 65536, 65536))
@example(case=(1, 65536, 1))
@example(case=(1, 65536, 0))
@example(case=(5, 5, 5))
@example(case=(5, 5, 4))
@example(case=(1000, 2000, 1500))
@example(case=(3, 100, 3))
@example(case=(7, 1000, 999))
def test_finds_exact_threshold_with_log_calls(impl, case):
    start, limit, threshold = case
    device = FakeDevice(threshold)
    got = impl.max_batch_size(device, start=start, limit=limit)
    call = f"max_batch_size(start={start}, limit={limit}) when sizes up to {threshold} fit"
    assert type(got) is int, f"{call} returned {type(got).__name__}, expected int"
    want = expected(threshold, start, limit)
    assert got == want, f"{call} returned {got}, expected {want}"
    outside = [n for n in device.calls if not start <= n <= limit]
    assert not outside, f"{call} tried sizes outside [start, limit]: {outside[:5]}"
    assert len(device.calls) <= bound(start, limit), (
        f"{call} called try_batch {len(device.calls)} times, more than {bound(start, limit)} "
        "(grow by doubling, then binary-search)")


def test_default_range(impl):
    device = FakeDevice(70000)
    got = impl.max_batch_size(device)
    assert got == 65536, f"max_batch_size with the defaults returned {got}, expected limit=65536 (everything fits)"
    assert min(device.calls) == 1, f"with the default start=1 the first sizes tried were {device.calls[:3]}"


@pytest.mark.points(2)
@pytest.mark.parametrize("error", [RuntimeError("CUDA error: device-side assert triggered"), ValueError("bad batch"),
                                   KeyError("labels")], ids=["RuntimeError", "ValueError", "KeyError"])
def test_other_errors_propagate(impl, error):
    calls = []

    def try_batch(n):
        calls.append(n)
        if n >= 4:  # sizes 1..3 work; from 4 on, try_batch has a bug
            raise error

    try:
        impl.max_batch_size(try_batch, start=1, limit=1000)
    except NotImplementedError:  # a RuntimeError too: an unfinished stub, not a propagated error
        raise
    except type(error) as exc:
        assert exc is error, f"max_batch_size replaced the {type(error).__name__} from try_batch by another"
    else:
        raise AssertionError(f"try_batch raised {type(error).__name__}, but max_batch_size returned normally")
    first = next(i for i, n in enumerate(calls) if n >= 4)
    assert first == len(calls) - 1, (
        f"after try_batch({calls[first]}) raised {type(error).__name__}, the search went on: calls {calls}")


@pytest.mark.points(2)
def test_failed_tries_are_released_before_the_next(impl):
    device = FakeDevice(700)
    assert impl.max_batch_size(device, start=1, limit=4096) == 700
    leaked = [(n, alive) for n, alive in zip(device.calls, device.alive_at_call, strict=True) if alive]
    assert not leaked, (f"when try_batch({leaked[0][0]}) started, {leaked[0][1]} tensor(s) of an earlier failed "
                        "try were still alive: drop the exception (and its traceback) before the next try")


def test_failed_tries_are_garbage_collected_before_the_next(impl):
    device = FakeDevice(700, cyclic=True)
    was_enabled = gc.isenabled()
    gc.disable()  # so that only a gc.collect() of the search itself frees the cycles
    try:
        got = impl.max_batch_size(device, start=1, limit=4096)
    finally:
        if was_enabled:
            gc.enable()
    assert got == 700, f"max_batch_size(start=1, limit=4096) returned {got}, expected 700"
    leaked = [(n, alive) for n, alive in zip(device.calls, device.alive_at_call, strict=True) if alive]
    assert not leaked, (f"when try_batch({leaked[0][0]}) started, {leaked[0][1]} tensor(s) of an earlier failed "
                        "try were still alive in a reference cycle: run gc.collect() after a failed try")


def test_rejects_start_and_limit_that_are_not_ints(impl):
    for bounds in (dict(start=2.0, limit=10), dict(start=1.5, limit=10), dict(start=1, limit=10.0),
                   dict(start=1, limit=9.5)):
        calls = []
        try:
            got = impl.max_batch_size(calls.append, **bounds)  # every size fits
        except ValueError:
            continue
        raise AssertionError(f"max_batch_size({', '.join(f'{k}={v!r}' for k, v in bounds.items())}) returned "
                             f"{got!r} after trying sizes {calls[:5]}: start and limit must be ints, otherwise "
                             "ValueError")


def test_rejects_bad_start(impl):
    # A search that accepts start=0 doubles 0 for ever: past 1000 tries (a correct one raises before
    # its first) the device raises, and the test fails at once, not at its time limit.
    for start in (0, -3):
        assert_raises_naming(ValueError, "start", impl.max_batch_size, FakeDevice(10, max_calls=1000),
                             start=start, limit=10)


def test_rejects_limit_below_start(impl):
    assert_raises_naming(ValueError, "limit", impl.max_batch_size, FakeDevice(10), start=8, limit=7)


def test_accepts_the_range_ends(impl):
    got = impl.max_batch_size(FakeDevice(10), start=1, limit=2)
    assert got == 2, f"max_batch_size(start=1, limit=2) returned {got}, expected 2 when everything fits"
    got = impl.max_batch_size(FakeDevice(5), start=8, limit=8)
    assert got == 0, f"max_batch_size(start=8, limit=8) returned {got}, expected 0 when 8 does not fit"


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "meta"], ids=["cpu", "cpu_device", "meta"])
def test_memory_report_rejects_non_cuda(impl, device):
    assert_raises_naming(ValueError, "device", impl.memory_report, device)


@pytest.mark.cuda
def test_memory_report_on_cuda(impl):
    x = torch.empty(1 << 20, device="cuda")
    report = impl.memory_report("cuda")
    assert set(report) == {"allocated", "reserved", "peak_allocated"}, f"keys {sorted(report)}"
    assert all(type(v) is int for v in report.values()), f"values must be ints: {report}"
    assert report["allocated"] == torch.cuda.memory_allocated() and report["reserved"] == torch.cuda.memory_reserved()
    assert report["peak_allocated"] == torch.cuda.max_memory_allocated()
    del x


@pytest.mark.cuda
def test_real_cuda_search_frees_the_cache(impl):
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()

    def try_batch(n):
        x = torch.empty(n, 1 << 18, device="cuda")  # 1 MiB per sample
        if n > 96:
            raise torch.OutOfMemoryError("fake limit of 96 MiB")
        del x

    assert impl.max_batch_size(try_batch, start=1, limit=1024) == 96
    assert torch.cuda.memory_allocated() == base, "tensors of the tries are still allocated after the search"
    assert torch.cuda.memory_reserved() <= 96 * (1 << 20) * 2, "the cache was not emptied after failed tries"
