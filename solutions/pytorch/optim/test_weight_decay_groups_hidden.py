"""Hidden tests for pytorch.optim.weight_decay_groups (the catalog's contract checks).

Models are built from layer "kinds" that each know which of their parameters the contract
decays, so the expected classification never comes from inspecting the model the way a
solution would.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
from hypothesis import given, strategies as st
from torch import nn

from grader.checks import assert_device, assert_raises_naming, device_params

WD = 0.1


class Custom(nn.Module):
    """A module with bare parameters: a learned position table and a scale (never decayed)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.pos = nn.Parameter(torch.zeros(1, 3, d))
        self.scale = nn.Parameter(torch.ones(d))


class Blockish(nn.Module):
    """Nested modules: a Linear subclass and a norm inside a ModuleDict."""

    class MyLinear(nn.Linear):
        pass

    def __init__(self, d: int) -> None:
        super().__init__()
        self.parts = nn.ModuleDict({"proj": Blockish.MyLinear(d, d), "norm": nn.LayerNorm(d)})


class MyConv2d(nn.Conv2d):
    """A convolution subclass: still a convolution, so its weight is decayed."""


# kind -> (builder(d), names of the parameters that are decayed)
KINDS: dict[str, tuple[Callable[[int], nn.Module], set[str]]] = {
    "Linear": (lambda d: nn.Linear(d, d), {"weight"}),
    "Linear(bias=False)": (lambda d: nn.Linear(d, d, bias=False), {"weight"}),
    "Conv1d": (lambda d: nn.Conv1d(d, d, 3), {"weight"}),
    "Conv2d": (lambda d: nn.Conv2d(d, d, 1), {"weight"}),
    "Conv3d": (lambda d: nn.Conv3d(d, 2, 1, bias=False), {"weight"}),
    "ConvTranspose1d": (lambda d: nn.ConvTranspose1d(d, d, 2), {"weight"}),
    "ConvTranspose2d": (lambda d: nn.ConvTranspose2d(d, d, 2), {"weight"}),
    "ConvTranspose3d": (lambda d: nn.ConvTranspose3d(d, 2, 1), {"weight"}),
    "MyConv2d(Conv2d subclass)": (lambda d: MyConv2d(d, d, 1), {"weight"}),
    "BatchNorm1d": (lambda d: nn.BatchNorm1d(d), set()),
    "BatchNorm2d": (lambda d: nn.BatchNorm2d(d), set()),
    "BatchNorm3d": (lambda d: nn.BatchNorm3d(d), set()),
    "LayerNorm": (lambda d: nn.LayerNorm(d), set()),
    "GroupNorm": (lambda d: nn.GroupNorm(1, d), set()),
    "InstanceNorm1d(affine)": (lambda d: nn.InstanceNorm1d(d, affine=True), set()),
    "InstanceNorm2d(affine)": (lambda d: nn.InstanceNorm2d(d, affine=True), set()),
    "InstanceNorm3d(affine)": (lambda d: nn.InstanceNorm3d(d, affine=True), set()),
    "RMSNorm": (lambda d: nn.RMSNorm(d), set()),
    "Embedding": (lambda d: nn.Embedding(7, d), set()),
    "EmbeddingBag": (lambda d: nn.EmbeddingBag(7, d), set()),
    "Custom(pos, scale)": (Custom, set()),
    "Blockish(MyLinear, LayerNorm)": (Blockish, {"parts.proj.weight"}),
}


# The tied and shared models live here, not inside their tests: graded in a separate process
# (catalog: separate_process), a model crosses by pickle, which finds classes by module and name.
class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(11, 4)
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 11, bias=False)
        self.head.weight = self.emb.weight  # weight tying


class HeadFirst(nn.Module):
    """The output Linear registered before the Embedding that shares its weight."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 11, bias=False)
        self.body = nn.Linear(4, 4)
        self.emb = nn.Embedding(11, 4)
        self.emb.weight = self.head.weight


class SharedLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = self.a


def build(kinds: list[str], frozen: list[bool], d: int = 3):
    """A model with one layer per kind (layer i frozen when frozen[i]) and, per parameter name,
    whether it is trainable and whether the contract decays it."""
    model = nn.Module()
    expected: dict[str, tuple[bool, bool]] = {}  # name -> (trainable, decayed)
    for i, (kind, freeze) in enumerate(zip(kinds, frozen)):
        make, decayed = KINDS[kind]
        layer = make(d)
        model.add_module(f"layer{i}", layer)
        for name, p in layer.named_parameters():
            p.requires_grad_(not freeze)
            expected[f"layer{i}.{name}"] = (not freeze, name in decayed)
    return model, expected


def groups_of(impl, model, weight_decay=WD):
    groups = impl.param_groups(model, weight_decay)
    assert isinstance(groups, list), f"param_groups returned {type(groups).__name__}, expected a list"
    for i, g in enumerate(groups):
        assert isinstance(g, dict), f"group {i} is a {type(g).__name__}, expected a dict"
        assert set(g) == {"params", "weight_decay"}, (
            f"group {i} has keys {sorted(g)}; expected exactly 'params' and 'weight_decay' (the rest "
            "comes from the optimizer's defaults)")
        assert isinstance(g["params"], list), (
            f"group {i}['params'] is a {type(g['params']).__name__}, expected a list")
    return groups


def check_classification(impl, model, expected, label: str) -> None:
    groups = groups_of(impl, model)
    names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
    seen: dict[int, float] = {}
    for g in groups:
        for p in g["params"]:
            assert id(p) in names, (f"{label}: a group holds a tensor of shape {tuple(p.shape)} that "
                                    "is not one of the model's parameters (copied or detached?)")
            assert id(p) not in seen, f"{label}: {names[id(p)]} appears in more than one group / twice"
            seen[id(p)] = g["weight_decay"]
    for name, p in model.named_parameters():
        trainable, decayed = expected[name]
        if not trainable:
            assert id(p) not in seen, f"{label}: {name} is frozen (requires_grad=False) but is in a group"
            continue
        assert id(p) in seen, f"{label}: {name} is trainable but in no group"
        want = WD if decayed else 0.0
        assert seen[id(p)] == want, (f"{label}: {name} is in a group with weight_decay="
                                     f"{seen[id(p)]}, expected {want}")


@pytest.mark.points(2)
def test_classifies_every_layer_kind(impl):
    kinds = list(KINDS)
    model, expected = build(kinds, [False] * len(kinds))
    check_classification(impl, model, expected, "a model with one layer of every kind")


@pytest.mark.points(2)
@given(kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=6),
       data=st.data(), d=st.integers(1, 4))
def test_disjoint_complete_and_classified_on_drawn_models(impl, kinds, data, d):
    frozen = data.draw(st.lists(st.booleans(), min_size=len(kinds), max_size=len(kinds)), "frozen")
    model, expected = build(kinds, frozen, d)
    layers = ", ".join(f"{k}{' (frozen)' if f else ''}" for k, f in zip(kinds, frozen))
    check_classification(impl, model, expected, f"model [{layers}]")


def test_frozen_parameters_are_left_out(impl):
    model, expected = build(["Linear", "LayerNorm", "Embedding", "Conv2d"], [True, False, True, False])
    model.layer3.bias.requires_grad_(False)  # a frozen bias inside a trainable layer
    expected["layer3.bias"] = (False, False)
    check_classification(impl, model, expected, "a partly frozen model")
    everything_frozen, expected = build(["Linear", "LayerNorm"], [True, True])
    groups = groups_of(impl, everything_frozen)
    assert not any(g["params"] for g in groups), "with every parameter frozen, no group may hold one"


@pytest.mark.points(2)
def test_tied_weights_appear_once_and_are_not_decayed(impl):
    model = TinyLM()
    expected = {"emb.weight": (True, False), "body.weight": (True, True), "body.bias": (True, False)}
    check_classification(impl, model, expected, "a model whose output Linear shares the Embedding weight")
    torch.optim.AdamW(groups_of(impl, model), lr=1e-3)  # raises if a parameter is in two groups

    shared = SharedLinear()  # the same Linear used twice: its weight is still decayed
    check_classification(impl, shared, {"a.weight": (True, True), "a.bias": (True, False)},
                         "a model holding the same Linear twice")


@pytest.mark.points(2)
def test_adamw_decays_exactly_the_decayed_group(impl):
    """With zero gradients, AdamW's update is pure decoupled decay: decayed parameters shrink by
    (1 - lr * weight_decay), the others do not move."""
    model, expected = build(["Embedding", "Linear", "BatchNorm1d", "Conv1d", "Custom(pos, scale)"],
                            [False, False, False, False, True])
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.linspace(-1.0, 2.0, p.numel()).reshape(p.shape))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    lr = 0.5
    opt = torch.optim.AdamW(groups_of(impl, model), lr=lr)
    for p in model.parameters():
        p.grad = torch.zeros_like(p) if p.requires_grad else None
    opt.step()
    for name, p in model.named_parameters():
        trainable, decayed = expected[name]
        factor = 1 - lr * WD if (trainable and decayed) else 1.0
        assert torch.allclose(p.detach(), before[name] * factor, rtol=1e-6, atol=1e-7), (
            f"after one AdamW step with zero gradients, {name} was scaled by "
            f"{(p.detach() / before[name]).nanmean().item():.6g}, expected {factor:g}")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_works_on_any_device(impl, device):
    model, expected = build(["Linear", "LayerNorm", "Conv2d", "Embedding"], [False] * 4)
    model = model.to(device)
    check_classification(impl, model, expected, f"a model on {device}")
    for g in groups_of(impl, model):
        for p in g["params"]:
            assert_device(p, device, name="a parameter in the groups")


@pytest.mark.parametrize("weight_decay", [0.25, 0.0, 3.0], ids=["0.25", "0", "3"])
def test_weight_decay_value_is_used(impl, weight_decay):
    """0 is inside the allowed range: the groups are built the same way."""
    model, _ = build(["Linear", "LayerNorm"], [False, False])
    try:
        groups = groups_of(impl, model, weight_decay)
    except ValueError as exc:
        raise AssertionError(f"param_groups(model, {weight_decay}) raised ValueError "
                             f"({str(exc)[:200]}), but {weight_decay} is an allowed weight_decay") from None
    decays = {id(p): g["weight_decay"] for g in groups for p in g["params"]}
    got = tuple(decays.get(id(p)) for p in (model.layer0.weight, model.layer0.bias,
                                            model.layer1.weight))
    want = (weight_decay, 0.0, 0.0)
    assert got == want, (f"param_groups(model, {weight_decay}) put a Linear's weight and bias and a "
                         f"LayerNorm's weight in groups with weight_decay {got}, expected {want}")


@pytest.mark.parametrize("bad", [-0.1, -1e-12, float("nan")], ids=["-0.1", "-1e-12", "nan"])
def test_bad_weight_decay_raises_value_error(impl, bad):
    model, _ = build(["Linear"], [False])
    assert_raises_naming(ValueError, "weight_decay", impl.param_groups, model, bad)


@pytest.mark.parametrize("bad", ["list of tensors", "None", "state_dict"])
def test_model_that_is_not_a_module_raises_type_error(impl, bad):
    module, _ = build(["Linear"], [False])
    model = {"list of tensors": [torch.zeros(2)], "None": None, "state_dict": module.state_dict()}[bad]
    assert_raises_naming(TypeError, "model", impl.param_groups, model, 0.1)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_layer_kind(impl, kind):
    """One kind at a time, next to a plain Linear, so a failure names the kind that is wrong."""
    model, expected = build([kind, "Linear"], [False, False])
    check_classification(impl, model, expected, f"a model with a {kind} and a Linear")


@pytest.mark.points(2)
def test_tied_weight_is_not_decayed_whichever_owner_comes_first(impl):
    """The output Linear is registered before the Embedding that shares its weight:
    model.named_parameters() names the shared weight after the Linear, but the Embedding still
    exempts it."""
    model = HeadFirst()
    expected = {"head.weight": (True, False), "body.weight": (True, True), "body.bias": (True, False)}
    check_classification(impl, model, expected,
                         "an output Linear registered first, sharing its weight with an Embedding")
