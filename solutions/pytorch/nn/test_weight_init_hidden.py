"""Hidden tests for pytorch.nn.weight_init (the catalog's contract checks).

Statistical checks draw weights after ``torch.manual_seed(SEED)``. TOL (relative to the target
std) is at least 7 standard deviations of each statistic for the smallest layer checked (n = 30720
weights): sd(std / target) = sqrt(1 / (2n)) = 0.0040 for normal weights (less for uniform ones),
sd(mean / target) = 1 / sqrt(n) = 0.0057. ``bench/seed_sweep.py`` runs the same statistics
(``init_case``, ``init_nested``, ``moment_deviations``, ``spread``) over many seeds.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_close, assert_raises_naming, device_params, shapes

SEED = 0
TOL = 0.04  # |std / target - 1| and |mean| / target


def moment_deviations(weight: torch.Tensor, target: float) -> tuple[float, float, float, float]:
    """(std, mean, |std / target - 1|, |mean| / target) of the weight's entries."""
    w = weight.detach().double()
    mean, std = w.mean().item(), w.std().item()
    return std, mean, abs(std / target - 1), abs(mean) / target


def check_moments(weight: torch.Tensor, target: float, name: str) -> None:
    std, mean, std_dev, mean_dev = moment_deviations(weight, target)
    assert std_dev < TOL, (
        f"{name}: weight std is {std:.5f}, expected {target:.5f} (within {TOL:.0%})")
    assert mean_dev < TOL, (
        f"{name}: weight mean is {mean:.5f}, expected 0 (within {TOL:.0%} of the std {target:.5f})")


# ---------------------------------------------------------------- fan_in_and_fan_out

@pytest.mark.points(2)
@given(shape=shapes(min_dims=2, max_dims=5, max_side=6), device=st.sampled_from(["cpu", "meta"]))
def test_fans_match_formula_over_shapes(impl, shape, device):
    w = torch.empty(shape, device=device)
    r = math.prod(shape[2:])
    expected = (shape[1] * r, shape[0] * r)
    got = impl.fan_in_and_fan_out(w)
    assert tuple(got) == expected, (
        f"fan_in_and_fan_out(weight{shape}) returned {got}, expected {expected} "
        "(fan_in = in * prod(kernel), fan_out = out * prod(kernel))")
    assert all(type(v) is int for v in got), (
        f"fan_in_and_fan_out(weight{shape}) returned {tuple(type(v).__name__ for v in got)}, "
        "expected two Python ints")


def test_fans_of_real_layers(impl):
    cases = {
        "nn.Linear(7, 3)": (nn.Linear(7, 3), (7, 3)),
        "nn.Conv1d(4, 6, 5)": (nn.Conv1d(4, 6, 5), (20, 30)),
        "nn.Conv2d(8, 12, (3, 5), groups=4)": (nn.Conv2d(8, 12, (3, 5), groups=4), (30, 180)),
        "nn.Conv3d(2, 3, 2)": (nn.Conv3d(2, 3, 2), (16, 24)),
    }
    for name, (layer, expected) in cases.items():
        got = tuple(impl.fan_in_and_fan_out(layer.weight))
        assert got == expected, f"fan_in_and_fan_out({name}.weight) returned {got}, expected {expected}"


def test_fans_reject_1d(impl):
    assert_raises_naming(ValueError, "weight", impl.fan_in_and_fan_out, torch.empty(5))
    assert_raises_naming(ValueError, "weight", impl.fan_in_and_fan_out, torch.tensor(1.0))


# ---------------------------------------------------------------- init_weights: statistics

# The large layers whose weight statistics the tests below check: name -> (description, layer
# factory, scheme (None: the default), target std).
INIT_CASES = {
    "kaiming_linear": ("init_weights(nn.Linear(512, 256), 'kaiming')",
                       lambda: nn.Linear(512, 256), "kaiming", math.sqrt(2 / 512)),
    "xavier_linear": ("init_weights(nn.Linear(300, 500), 'xavier')",
                      lambda: nn.Linear(300, 500), "xavier", math.sqrt(2 / (300 + 500))),
    "default_scheme": ("init_weights(nn.Linear(512, 256)) (default scheme)",
                       lambda: nn.Linear(512, 256), None, math.sqrt(2 / 512)),
    "conv_kaiming": ("init_weights(nn.Conv2d(64, 64, 3), 'kaiming') (fan_in = 64 * 3 * 3)",
                     lambda: nn.Conv2d(64, 64, 3), "kaiming", math.sqrt(2 / (64 * 9))),
    "grouped_conv_xavier": (("init_weights(nn.Conv1d(128, 192, 5, groups=4), 'xavier') "
                             "(fans from the weight shape (192, 32, 5))"),
                            lambda: nn.Conv1d(128, 192, 5, groups=4), "xavier",
                            math.sqrt(2 / (32 * 5 + 192 * 5))),
}


def init_case(impl, case: str, seed: int = SEED) -> tuple[torch.Tensor, float, str]:
    """Seed, build the case's layer and initialise it; returns (weight, target std, description)."""
    name, build, scheme, target = INIT_CASES[case]
    torch.manual_seed(seed)
    layer = impl.init_weights(build()) if scheme is None else impl.init_weights(build(), scheme)
    return layer.weight, target, name


@pytest.mark.points(2)
def test_kaiming_std_of_large_linear(impl):
    check_moments(*init_case(impl, "kaiming_linear"))


@pytest.mark.points(2)
def test_xavier_std_of_large_linear(impl):
    check_moments(*init_case(impl, "xavier_linear"))


def test_default_scheme_is_kaiming(impl):
    check_moments(*init_case(impl, "default_scheme"))


@pytest.mark.points(2)
def test_conv_fans_include_the_kernel(impl):
    check_moments(*init_case(impl, "conv_kaiming"))


def test_grouped_conv_xavier(impl):
    check_moments(*init_case(impl, "grouped_conv_xavier"))


# ---------------------------------------------------------------- init_weights: structure

def nested_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(16, 32), nn.ReLU(),
        nn.Sequential(
            nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8),
            nn.ModuleList([nn.Linear(400, 200), nn.LayerNorm(200), nn.GroupNorm(2, 8)]),
            nn.Sequential(nn.Conv3d(2, 4, 2, bias=False), nn.InstanceNorm1d(4, affine=True),
                          nn.BatchNorm1d(4, affine=False), nn.LayerNorm(4, bias=False)),
        ),
        nn.Embedding(10, 8),
    )


NORM_CLASSES = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm,
                nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)

SCRAMBLED = 1000.0


def scramble_(model: nn.Module) -> None:
    """Move every parameter far away from the values init_weights must produce."""
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(SCRAMBLED)


def kaiming_std(weight: torch.Tensor) -> float:
    shape = weight.shape
    return math.sqrt(2 / (shape[1] * math.prod(shape[2:])))


def spread(weight: torch.Tensor, std: float) -> float:
    """The largest |entry| in units of ``std``."""
    return float(weight.detach().abs().max()) / std


def check_initialised(weight: torch.Tensor, std: float, name: str) -> None:
    """Zero-mean entries with std ``std``: none beyond 10 std (probability < 1e-20 for a normal,
    0 for a uniform), so a weight left at SCRAMBLED (or scaled wildly wrong) fails; and drawn at
    random: not all equal (two independent continuous draws coincide with probability 0), and not
    exactly 0, so a constant or zero "initialisation" fails too."""
    w = weight.detach()
    biggest = float(w.abs().max())
    assert spread(weight, std) < 10, (f"{name}: weight entries up to {biggest:.4g}, far beyond 10x the "
                                f"target std {std:.4g}; was this weight initialised?")
    assert biggest > 0, f"{name}: every weight entry is 0; the entries must be drawn at random"
    if w.numel() > 1:
        assert bool((w != w.reshape(-1)[0]).any()), (
            f"{name}: every weight entry equals {float(w.reshape(-1)[0]):.4g}; the entries must be "
            "drawn independently at random")


def init_nested(impl, seed: int = SEED):
    """Seed, build and scramble nested_model(), then init_weights(model, 'kaiming'). Returns the
    model, its parameters and embedding weight from before the call, and what the call returned."""
    torch.manual_seed(seed)
    model = nested_model()
    scramble_(model)
    before = {n: p for n, p in model.named_parameters()}
    emb = model[3].weight.detach().clone()
    return model, before, emb, impl.init_weights(model, "kaiming")


def nested_deep(model: nn.Module) -> tuple[torch.Tensor, float, str]:
    """The nested nn.Linear(400, 200) whose statistics are checked: (weight, target std, name)."""
    return model[2][2][0].weight, math.sqrt(2 / 400), "nn.Linear(400, 200) nested three levels deep"


@pytest.mark.points(2)
def test_applied_recursively(impl):
    model, before, emb, out = init_nested(impl)
    assert out is model, "init_weights must return the module it was given"
    check_moments(*nested_deep(model))
    for name, m in model.named_modules():
        if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv3d)):
            check_initialised(m.weight, kaiming_std(m.weight), f"{name} ({type(m).__name__})")
            if m.bias is not None:
                assert bool((m.bias == 0).all()), f"{name} ({type(m).__name__}): bias is not zero"
        if isinstance(m, NORM_CLASSES):
            if m.weight is not None:
                assert bool((m.weight == 1).all()), f"{name} ({type(m).__name__}): weight is not 1"
            if m.bias is not None:
                assert bool((m.bias == 0).all()), f"{name} ({type(m).__name__}): bias is not 0"
    assert_close(model[3].weight.detach(), emb, name="nn.Embedding weight (must be left unchanged)")
    after = {n: p for n, p in model.named_parameters()}
    for n, p in before.items():
        assert after.get(n) is p, (f"parameter {n} was replaced by a new object; initialise it in "
                                   "place so that existing optimizers keep training it")
        assert p.requires_grad, f"parameter {n} no longer requires grad"
        assert p.grad_fn is None, f"parameter {n} has autograd history after init_weights"


LAYER_KINDS = {"linear": nn.Linear, "conv1d": nn.Conv1d, "conv2d": nn.Conv2d, "conv3d": nn.Conv3d}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("scheme", ["kaiming", "xavier"])
@pytest.mark.parametrize("kind", sorted(LAYER_KINDS))
@given(cin=st.integers(1, 6), cout=st.integers(1, 6), k=st.integers(1, 3), bias=st.booleans(),
       wrap=st.integers(0, 3))
def test_small_layers_any_nesting(impl, kind, scheme, cin, cout, k, bias, wrap):
    torch.manual_seed(SEED)
    cls = LAYER_KINDS[kind]
    layer = cls(cin, cout, bias=bias) if kind == "linear" else cls(cin, cout, k, bias=bias)
    model = layer
    for _ in range(wrap):
        model = nn.Sequential(nn.Identity(), model)
    scramble_(model)
    weight = layer.weight
    name = f"{type(layer).__name__} wrapped in {wrap} nn.Sequential(s), scheme={scheme!r}"
    impl.init_weights(model, scheme=scheme)
    assert layer.weight is weight, f"{name}: the weight Parameter was replaced"
    fan_in = cin * k ** (0 if kind == "linear" else int(kind[4]))
    fan_out = cout * k ** (0 if kind == "linear" else int(kind[4]))
    std = math.sqrt(2 / fan_in) if scheme == "kaiming" else math.sqrt(2 / (fan_in + fan_out))
    check_initialised(layer.weight, std, name)
    if bias:
        assert bool((layer.bias == 0).all()), f"{name}: bias is not zero"


# name -> (factory, whether it has weight, whether it has bias); every norm class the contract
# lists, with affine parameters, and the parts that are None skipped.
NORM_CASES = {
    "BatchNorm1d(4)": (lambda: nn.BatchNorm1d(4), True, True),
    "BatchNorm2d(4)": (lambda: nn.BatchNorm2d(4), True, True),
    "BatchNorm3d(4)": (lambda: nn.BatchNorm3d(4), True, True),
    "LayerNorm(4)": (lambda: nn.LayerNorm(4), True, True),
    "LayerNorm((2, 4), bias=False)": (lambda: nn.LayerNorm((2, 4), bias=False), True, False),
    "GroupNorm(2, 4)": (lambda: nn.GroupNorm(2, 4), True, True),
    "InstanceNorm1d(4, affine=True)": (lambda: nn.InstanceNorm1d(4, affine=True), True, True),
    "InstanceNorm2d(4, affine=True)": (lambda: nn.InstanceNorm2d(4, affine=True), True, True),
    "InstanceNorm3d(4, affine=True)": (lambda: nn.InstanceNorm3d(4, affine=True), True, True),
    "BatchNorm2d(4, affine=False)": (lambda: nn.BatchNorm2d(4, affine=False), False, False),
    "InstanceNorm2d(4) (no affine)": (lambda: nn.InstanceNorm2d(4), False, False),
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(NORM_CASES))
def test_norm_layers_start_at_identity(impl, case):
    build, has_weight, has_bias = NORM_CASES[case]
    norm = build()
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(norm))
    scramble_(model)
    impl.init_weights(model)
    if has_weight:
        assert bool((norm.weight == 1).all()), f"nested {case}: weight is not 1 after init_weights"
    if has_bias:
        assert bool((norm.bias == 0).all()), f"nested {case}: bias is not 0 after init_weights"


# Modules the contract does not list: their parameters must come out exactly as they went in.
OTHER_MODULES = {
    "nn.Embedding(10, 8)": lambda: nn.Embedding(10, 8),
    "nn.Bilinear(3, 4, 5)": lambda: nn.Bilinear(3, 4, 5),
    "nn.ConvTranspose2d(3, 4, 3)": lambda: nn.ConvTranspose2d(3, 4, 3),
    "nn.PReLU(4)": lambda: nn.PReLU(4),
}


@pytest.mark.points(0.5)
@pytest.mark.parametrize("case", sorted(OTHER_MODULES))
def test_other_modules_left_unchanged(impl, case):
    torch.manual_seed(SEED)
    other = OTHER_MODULES[case]()
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(other))
    before = {n: p.detach().clone() for n, p in other.named_parameters()}
    impl.init_weights(model, "xavier")
    for n, p in other.named_parameters():
        assert_close(p.detach(), before[n], rtol=0, atol=0,
                     name=f"{case}.{n} after init_weights (a module the contract does not list "
                          "must be left unchanged)")


def test_frozen_parameters_stay_frozen(impl):
    model = nn.Sequential(nn.Linear(5, 4), nn.LayerNorm(4))
    for p in model.parameters():
        p.requires_grad_(False)
    params = list(model.parameters())
    impl.init_weights(model)
    for (n, p), before in zip(model.named_parameters(), params):
        assert p is before, f"parameter {n} was replaced by a new object"
        assert not p.requires_grad, (f"parameter {n} had requires_grad=False and requires grad "
                                     "after init_weights (keep each parameter's requires_grad)")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_keeps_device_and_dtype(impl, device, dtype):
    model = nn.Sequential(nn.Linear(6, 5), nn.LayerNorm(5), nn.Conv1d(2, 3, 3)).to(device, dtype)
    impl.init_weights(model, "xavier")
    for n, p in model.named_parameters():
        assert p.device.type == device, f"parameter {n} moved to {p.device} (expected {device})"
        assert p.dtype == dtype, f"parameter {n} became {p.dtype} (expected {dtype})"
    if device != "meta":
        assert bool((model[0].bias == 0).all()), f"Linear bias on {device} is not zero"


def test_rejects_unknown_scheme(impl):
    assert_raises_naming(ValueError, "scheme", impl.init_weights, nn.Linear(3, 2), "he_uniform")
    assert_raises_naming(ValueError, "scheme", impl.init_weights, nn.Linear(3, 2), "Kaiming ")
    assert_raises_naming(ValueError, "scheme", impl.init_weights, nn.Linear(3, 2), scheme="xavier_normal")
