"""Hidden tests for pytorch.tensors.device_transfer (the catalog's contract checks)."""

import dataclasses
from collections import OrderedDict, namedtuple
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, check_gradients,
                           device_params, record_aten_ops, shapes)

# Each error case isolates one rule, so there are many of them; together they must not outweigh
# the value tests (a submission returning constants passes every one).
ERROR_CASE_POINTS = 0.5


Pair = namedtuple("Pair", "first second")


class Point(NamedTuple):
    x: Any
    y: Any


@dataclasses.dataclass
class Box:
    value: Any
    tag: str = "box"


@dataclasses.dataclass(frozen=True)
class FrozenBox:
    value: Any
    extra: Any = None


# ------------------------------------------------------------------------------------ helpers

def tensor_leaves():
    def build(args):
        shape, dtype, seed = args
        values = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        return values.to(dtype) if dtype is not torch.bool else values > 0
    return st.tuples(shapes(min_dims=0, max_dims=3, max_side=3),
                     st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]),
                     st.integers(0, 2**16)).map(build)


def other_leaves():
    return st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=False), st.text(max_size=4),
                     st.none(), st.binary(max_size=3), st.booleans(),
                     st.integers(0, 5).map(lambda n: np.arange(n)))


def structures():
    return st.recursive(
        st.one_of(tensor_leaves(), other_leaves()),
        lambda kids: st.one_of(
            st.lists(kids, max_size=3),
            st.lists(kids, max_size=3).map(tuple),
            st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), kids, max_size=3),
            st.dictionaries(st.text("abcxyz", min_size=1, max_size=3), kids, max_size=3)
              .map(lambda d: OrderedDict(reversed(list(d.items())))),
            st.builds(Pair, kids, kids),
            st.builds(Point, kids, kids),
            st.builds(Box, kids),
            st.builds(FrozenBox, kids, kids),
        ),
        max_leaves=8,
    )


def children(obj):
    """(label, child) pairs of a container this exercise walks, else None."""
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if isinstance(obj, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f".{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    return None


def fingerprint(obj, path="obj"):
    """Identity of every container and leaf, to prove the input was not modified."""
    kids = children(obj)
    own = [(path, id(obj), type(obj).__name__)]
    if isinstance(obj, torch.Tensor):
        own.append((path + ".device", obj.device.type, None))
    if kids is None:
        return own
    if isinstance(obj, dict):
        own.append((path + ".keys", tuple(obj), None))
    return own + [item for label, child in kids for item in fingerprint(child, path + label)]


def check_moved(orig, out, device, path="obj"):
    """``out`` must be ``orig`` with every tensor on ``device`` and every container type kept."""
    want = torch.device(device)
    if isinstance(orig, torch.Tensor):
        assert isinstance(out, torch.Tensor), f"{path}: a tensor came back as {type(out).__name__}"
        assert_device(out, want, name=path)
        assert out.dtype == orig.dtype and out.shape == orig.shape, (
            f"{path}: {out.dtype}{tuple(out.shape)}, expected {orig.dtype}{tuple(orig.shape)}")
        if orig.device.type == want.type and (want.index is None or orig.device == want):
            assert out is orig, (f"{path}: the tensor was already on {want} but a different tensor "
                                 "object came back: return it as is (Tensor.to does not copy then)")
        elif not out.is_meta:
            assert_close(out.cpu(), orig.cpu(), name=path, check_device=False)
        return
    kids = children(orig)
    if kids is None:
        assert out is orig, (f"{path}: the {type(orig).__name__} {orig!r:.40} must come back unchanged "
                             f"(the same object), got {type(out).__name__} {out!r:.40}")
        return
    assert type(out) is type(orig), (f"{path}: a {type(orig).__name__} came back as "
                                     f"{type(out).__name__} (keep the container type)")
    out_kids = children(out)
    if isinstance(orig, dict):
        assert list(out) == list(orig), (f"{path}: keys {list(out)!r:.80}, expected "
                                         f"{list(orig)!r:.80} in that order")
    assert len(out_kids) == len(kids), f"{path}: {len(out_kids)} items, expected {len(kids)}"
    for (label, child), (_, out_child) in zip(kids, out_kids):
        check_moved(child, out_child, device, path + label)


def call(what, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{what} raised {type(exc).__name__}: {exc!s:.300}") from exc


def describe(obj) -> str:
    text = repr(obj).replace("\n", " ")
    return text if len(text) < 200 else text[:200] + "..."


# ------------------------------------------------------------------------------------ move_to

@pytest.mark.points(2)
@given(obj=structures(), device=st.sampled_from(["meta", torch.device("meta"), "cpu",
                                                 torch.device("cpu")]))
def test_move_to_walks_nested_structures(impl, obj, device):
    before = fingerprint(obj)
    what = f"move_to({describe(obj)}, {device!r})"
    out = call(what, impl.move_to, obj, device)
    check_moved(obj, out, device)
    assert fingerprint(obj) == before, f"{what} modified its input: it must build new containers"


@pytest.mark.points(2)
def test_move_to_keeps_namedtuple_and_dataclass_types(impl):
    batch = {
        "pair": Pair(torch.zeros(2), "a"),
        "point": Point(x=torch.ones(1), y=[torch.zeros(3), 7]),
        "box": Box(torch.arange(3), tag="t"),
        "frozen": FrozenBox(value=(torch.zeros(1),), extra={"z": torch.ones(2)}),
        "ordered": OrderedDict([("b", torch.ones(1)), ("a", 1)]),
    }
    out = call("move_to(batch with namedtuples and dataclasses, 'meta')", impl.move_to, batch, "meta")
    check_moved(batch, out, "meta", path="batch")


@pytest.mark.points(2)
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")], ids=["str", "torch.device"])
def test_move_to_returns_same_tensors_when_already_there(impl, device):
    x, y = torch.randn(2, 3), torch.arange(4)
    batch = {"x": x, "rest": [Pair(y, "id"), Box(x)]}
    out = call(f"move_to(batch, {device!r})", impl.move_to, batch, device)
    assert out["x"] is x and out["rest"][0].first is y and out["rest"][1].value is x, (
        f"move_to(batch, {device!r}): tensors already on cpu came back as new objects "
        "(a copy): return them as they are")
    assert impl.move_to(x, device) is x, f"move_to(tensor, {device!r}) copied a tensor already on cpu"


def test_move_to_moves_values_not_keys(impl):
    key = torch.zeros(1)  # tensors hash by identity, so a tensor can be a dict key
    value = torch.ones(2)
    for kind in (dict, OrderedDict):
        batch = kind([(key, value), ("name", value)])
        what = f"move_to({kind.__name__} with a tensor key, 'meta')"
        out = call(what, impl.move_to, batch, "meta")
        assert type(out) is kind, f"{what}: returned {type(out).__name__}, expected {kind.__name__}"
        keys = list(out)
        assert len(keys) == 2 and keys[0] is key and keys[1] == "name", (
            f"{what}: the keys changed ({keys!r:.80}); keys are not moved, only values")
        assert_device(out[key], "meta", name=f"{what}[key]")
        assert_device(out["name"], "meta", name=f"{what}['name']")


def test_move_to_leaves_non_tensors_alone(impl):
    arr = np.arange(3.0)
    values = ["text", "", b"bytes", 3.5, 12345678901, None, True, arr]
    out = call(f"move_to({values!r}, 'meta')", impl.move_to, values, "meta")
    assert type(out) is list and len(out) == len(values), "move_to changed a list of non-tensors"
    for i, (v, o) in enumerate(zip(values, out)):
        assert o is v, f"move_to: element {i} ({v!r:.30}) came back as {o!r:.30}, not the same object"


def test_move_to_does_not_modify_its_input(impl):
    x, y, z = torch.randn(2), torch.randn(3), torch.randn(1)
    batch = {"x": x, "list": [y, "s"], "box": Box(z)}
    keep = batch["list"], batch["box"]
    out = call("move_to(batch, 'meta')", impl.move_to, batch, "meta")
    assert batch["x"] is x and keep[0][0] is y and keep[1].value is z, (
        "move_to(batch, 'meta') changed the caller's batch (its containers now hold other "
        "tensors): build new containers instead of assigning into the old ones")
    check_moved(batch, out, "meta", path="batch")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_move_to_device(impl, device):
    batch = {"x": torch.randn(2, 3), "y": (torch.tensor([1, 2]), "ids"), "meta": Box(torch.ones(1))}
    out = call(f"move_to(batch, {device!r})", impl.move_to, batch, device)
    check_moved(batch, out, device, path="batch")
    again = impl.move_to(out, device)
    assert again["x"] is out["x"] and again["y"][0] is out["y"][0], (
        f"move_to(..., {device!r}) copied tensors that were already on {device}")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_move_to_keeps_autograd_link(impl, device):
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    out = impl.move_to({"x": [x]}, device)["x"][0]
    if device == "cpu":
        assert out is x, "move_to to the tensor's own device must return the same tensor"
    else:
        assert out.requires_grad and out.grad_fn is not None, (
            f"move_to(x, {device!r}) cut the autograd graph (requires_grad={out.requires_grad}, "
            f"grad_fn={out.grad_fn}): use Tensor.to, which stays differentiable; no detach")
    if device != "meta":
        # Back to cpu inside the function: gradcheck compares Jacobians on the input's device.
        check_gradients(lambda t: impl.move_to({"x": [t]}, device)["x"][0].cpu(), x,
                        name=f"move_to(x, {device!r})")


# None: the argument left out, so the signature's default (False) applies.
@pytest.mark.parametrize("non_blocking", [True, False, None], ids=["True", "False", "default"])
def test_move_to_passes_non_blocking(impl, non_blocking):
    batch = [torch.randn(2), {"b": torch.randn(3)}]
    kwargs = {} if non_blocking is None else {"non_blocking": non_blocking}
    # Tensor.to, .cuda() and the like dispatch _to_copy; a copy into a tensor made first, copy_.
    _, ops = record_aten_ops(impl.move_to, batch, "meta", **kwargs)
    flags = [op.non_blocking for op in ops if op.name in ("_to_copy", "copy_")]
    if non_blocking:
        assert sum(flags) >= 2, (
            f"move_to(batch of 2 tensors, 'meta', non_blocking=True) passed non_blocking=True to "
            f"{sum(flags)} tensor transfers: pass it on to every .to(...) call")
    else:
        what = ("move_to(..., non_blocking=False)" if non_blocking is False
                else "move_to(batch, 'meta') (non_blocking defaults to False)")
        assert not any(flags), f"{what} requested a non-blocking copy"


# -------------------------------------------------------------------------------- pick_device

def patch_availability(monkeypatch, *, cuda=False, mps=False, xpu=False):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    monkeypatch.setattr(torch.xpu, "is_available", lambda: xpu)


def test_pick_device_default_on_this_machine(impl):
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() \
        else "cpu"
    got = impl.pick_device()
    assert isinstance(got, torch.device), (
        f"pick_device() returned {type(got).__name__}, not torch.device")
    assert got == torch.device(expected), f"pick_device() returned {got}, expected {expected} here"


@pytest.mark.points(2)
@pytest.mark.parametrize("available, prefer, expected", [
    ({"cuda": True, "mps": True}, None, "cuda"),
    ({"mps": True}, None, "mps"),
    ({}, None, "cpu"),
    ({"cuda": True, "mps": True}, ("mps", "cuda", "cpu"), "mps"),
    ({"cuda": True}, ("cpu", "cuda"), "cpu"),
    ({"xpu": True, "cuda": True}, ("xpu", "cuda"), "xpu"),
    ({"cuda": True}, ("mps", "xpu", "cuda"), "cuda"),
    ({}, ("xpu", "mps", "cuda", "cpu"), "cpu"),
    ({"mps": True}, ["cuda", "mps"], "mps"),
    ({"xpu": True}, ["cpu"], "cpu"),
], ids=["cuda-first", "mps-when-no-cuda", "cpu-fallback", "order-mps-cuda", "order-cpu-cuda", "xpu",
        "skips-mps-xpu", "none-but-cpu", "list-prefer", "list-only-cpu"])
def test_pick_device_follows_preference_and_availability(impl, monkeypatch, available, prefer,
                                                        expected):
    patch_availability(monkeypatch, **available)
    args = () if prefer is None else (prefer,)
    what = f"pick_device({'' if prefer is None else prefer}) with {available or 'only cpu'} available"
    got = call(what, impl.pick_device, *args)
    assert isinstance(got, torch.device), f"{what} returned {type(got).__name__}, not torch.device"
    assert got == torch.device(expected), f"{what} returned {got!r}, expected device({expected!r})"


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("available, prefer", [
    ({}, ()),
    ({}, []),
    ({}, ("gpu", "cpu")),
    ({}, ("cpu", "gpu")),
    ({"cuda": True}, ("cuda", "tpu")),
    ({}, ["mps", "CUDA", "cpu"]),
    ({}, ("cuda", "mps")),
    ({}, ("xpu",)),
], ids=["empty-tuple", "empty-list", "unknown-first", "unknown-after-available-cpu",
        "unknown-after-available-cuda", "wrong-case", "none-available", "xpu-unavailable"])
def test_pick_device_rejects_bad_prefer(impl, monkeypatch, available, prefer):
    patch_availability(monkeypatch, **available)
    assert_raises_naming(ValueError, "prefer", impl.pick_device, prefer)
