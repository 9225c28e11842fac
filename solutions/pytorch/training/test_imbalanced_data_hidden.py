"""Hidden tests for pytorch.training.imbalanced_data (the catalog's contract checks).

Class weights are compared with the formula computed in plain Python from the counts; the loss
with ``torch.nn.functional.nll_loss`` written out by hand. The sampler is checked by what it draws
through a real ``DataLoader``: class frequencies near 1/P, the examples of the rarest class near
equally often, more draws of a rare class than it has examples (so, with replacement). Each
statistical bound holds for every seed of ``bench/seed_sweep.py``'s sweep.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, Sampler, TensorDataset

from grader.checks import assert_close, assert_raises_naming, device_params

# The statistical checks' data: 500, 50 and 5 examples of classes 0, 1, 2, in a fixed shuffled order.
COUNTS = (500, 50, 5)
SAMPLER_SEED = 1234
NUM_DRAWS = 3000
CLASS_TOL = 0.05  # |frequency - 1/3|; the sd is sqrt(2/9/3000) = 0.0086
EXAMPLE_TOL = 0.4  # |draws of one rare example / expected - 1|; the sd is 0.068
FEW_DRAWS = 300  # fewer draws than examples: without replacement class 2 could appear 5 times at most


def imbalanced_labels() -> torch.Tensor:
    labels = torch.cat([torch.full((n,), c) for c, n in enumerate(COUNTS)])
    return labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))]


def expected_weights(labels: list[int], num_classes: int) -> list[float]:
    counts = Counter(labels)
    return [len(labels) / (len(counts) * counts[c]) if counts[c] else 0.0 for c in range(num_classes)]


def draw(impl, labels: torch.Tensor, num_samples: int, seed: int) -> list[int]:
    """The example indices a DataLoader over ``labels`` yields with the submission's sampler."""
    sampler = impl.balanced_sampler(labels, num_samples, generator=torch.Generator().manual_seed(seed))
    loader = DataLoader(TensorDataset(torch.arange(len(labels)), labels), batch_size=100, sampler=sampler)
    return [int(i) for index, _ in loader for i in index]


def class_deviations(impl, seed: int = SAMPLER_SEED) -> tuple[float, float]:
    """max |class frequency - 1/P| and, over the rarest class's examples, max |draws / expected - 1|."""
    labels = imbalanced_labels()
    drawn = draw(impl, labels, NUM_DRAWS, seed)
    per_class = Counter(int(labels[i]) for i in drawn)
    class_dev = max(abs(per_class[c] / NUM_DRAWS - 1 / len(COUNTS)) for c in range(len(COUNTS)))
    rare = (labels == len(COUNTS) - 1).nonzero().flatten().tolist()
    expected = NUM_DRAWS / len(COUNTS) / len(rare)
    per_example = Counter(drawn)
    return class_dev, max(abs(per_example[i] / expected - 1) for i in rare)


def rare_draws(impl, seed: int = SAMPLER_SEED) -> int:
    labels = imbalanced_labels()
    return sum(int(labels[i]) == len(COUNTS) - 1 for i in draw(impl, labels, FEW_DRAWS, seed))


# ------------------------------------------------------------------------------ class_weights


@pytest.mark.points(3)
@settings(max_examples=60, deadline=None)
@given(labels=st.lists(st.integers(0, 5), min_size=1, max_size=40), extra_classes=st.integers(0, 3))
def test_class_weights_follow_the_formula(impl, labels, extra_classes):
    num_classes = max(labels) + 1 + extra_classes
    got = impl.class_weights(torch.tensor(labels), num_classes)
    label = f"class_weights({labels}, num_classes={num_classes})"
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and tuple(got.shape) == (num_classes,), (
        f"{label}: expected a float32 tensor of shape ({num_classes},), got "
        f"{got.dtype if isinstance(got, torch.Tensor) else type(got).__name__} "
        f"{tuple(got.shape) if isinstance(got, torch.Tensor) else ''}")
    assert_close(got, torch.tensor(expected_weights(labels, num_classes)), name=label)
    total = float(got.double()[torch.tensor(labels)].sum())
    assert math.isclose(total, len(labels), rel_tol=1e-5), f"{label}: the weights of the labels add up to {total}"


@pytest.mark.points(2)
@pytest.mark.parametrize("labels, num_classes", [([0, 2, 2], 5), ([3, 3], 4), ([1], 3)], ids=str)
def test_absent_classes_weigh_zero(impl, labels, num_classes):
    got = impl.class_weights(torch.tensor(labels), num_classes)
    label = f"class_weights({labels}, num_classes={num_classes})"
    assert tuple(got.shape) == (num_classes,), f"{label} has shape {tuple(got.shape)}, expected ({num_classes},)"
    assert torch.isfinite(got).all(), f"{label} = {got.tolist()}: an absent class must weigh 0, not inf or NaN"
    assert_close(got, torch.tensor(expected_weights(labels, num_classes)), name=label)


LABEL_KINDS = {
    "int64": lambda v: torch.tensor(v), "int32": lambda v: torch.tensor(v, dtype=torch.int32),
    "int16": lambda v: torch.tensor(v, dtype=torch.int16), "int8": lambda v: torch.tensor(v, dtype=torch.int8),
    "uint8": lambda v: torch.tensor(v, dtype=torch.uint8), "list": list,
}


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", list(LABEL_KINDS))
def test_class_weights_of_any_label_kind(impl, kind):
    labels = [0, 1, 1, 1, 3, 3]
    got = impl.class_weights(LABEL_KINDS[kind](labels), 4)
    assert_close(got, torch.tensor(expected_weights(labels, 4)), name=f"class_weights of {kind} labels {labels}")


@pytest.mark.parametrize("device", device_params())
def test_class_weights_on_the_labels_device(impl, device):
    got = impl.class_weights(torch.tensor([0, 1, 1], device=device), 3)
    assert got.device.type == torch.device(device).type, f"labels on {device}, weights on {got.device}"
    assert got.dtype == torch.float32, f"weights are {got.dtype}, expected float32"


@pytest.mark.points(2)
@pytest.mark.parametrize("device", device_params())
def test_weights_work_in_cross_entropy(impl, device):
    gen = torch.Generator().manual_seed(3)
    labels = torch.tensor([0, 0, 0, 0, 0, 0, 2, 1, 0, 0])
    weights = impl.class_weights(labels.to(device), 4)
    logits = torch.randn(10, 4, generator=gen)
    got = torch.nn.CrossEntropyLoss(weight=weights)(logits.to(device), labels.to(device))
    want_w = torch.tensor(expected_weights(labels.tolist(), 4))[labels]
    nll = -F.log_softmax(logits.double(), 1)[torch.arange(10), labels]
    want = (want_w.double() * nll).sum() / want_w.double().sum()
    assert_close(got.cpu().double(), want, rtol=1e-5, atol=1e-6,
                 name="CrossEntropyLoss(weight=class_weights(labels, 4))(logits, labels)")


# -------------------------------------------------------------------------- balanced_sampler


@pytest.mark.parametrize("num_samples", [1, 7, 1000])
def test_sampler_yields_num_samples_int_indices(impl, num_samples):
    labels = torch.tensor([0, 1, 1, 2, 2, 2])
    sampler = impl.balanced_sampler(labels, num_samples, generator=torch.Generator().manual_seed(1))
    assert isinstance(sampler, Sampler), f"balanced_sampler returned a {type(sampler).__name__}, expected a Sampler"
    assert len(sampler) == num_samples, f"len(sampler) is {len(sampler)}, expected num_samples={num_samples}"
    drawn = list(sampler)
    assert len(drawn) == num_samples, f"one pass yielded {len(drawn)} indices, expected {num_samples}"
    bad = [i for i in drawn if type(i) is not int or not 0 <= i < len(labels)]
    assert not bad, f"the sampler yielded {bad[:5]}: expected Python ints in [0, {len(labels)})"


def test_classes_of_a_single_example(impl):
    """n_c = 1 for every present class: each index has probability 1 / P (a miss in 300 draws has
    probability at most 3 * (2/3)**300, so no seed can fail this)."""
    for labels in ([4], [2, 0, 5]):
        drawn = draw(impl, torch.tensor(labels), 300, seed=3)
        assert sorted(set(drawn)) == list(range(len(labels))), (
            f"with labels {labels} (one example per class) 300 draws took the indices "
            f"{sorted(Counter(drawn).items())}: every index in [0, {len(labels)}) has probability 1/{len(labels)}")


@pytest.mark.points(4)
def test_sampled_classes_are_near_uniform(impl):
    class_dev, _ = class_deviations(impl)
    assert class_dev < CLASS_TOL, (
        f"with {COUNTS} examples of classes 0, 1, 2, a DataLoader over {NUM_DRAWS} draws saw a class "
        f"frequency {class_dev:.3f} away from 1/3 (allowed {CLASS_TOL})")


@pytest.mark.points(2)
def test_examples_within_a_class_are_equally_likely(impl):
    _, example_dev = class_deviations(impl)
    assert example_dev < EXAMPLE_TOL, (
        f"over {NUM_DRAWS} draws, an example of the rarest class ({COUNTS[-1]} examples) was drawn "
        f"{example_dev:.0%} away from its expected count: the examples of a class should be equally likely")


@pytest.mark.points(2)
def test_draws_with_replacement(impl):
    got = rare_draws(impl)
    assert got > COUNTS[-1], (
        f"{FEW_DRAWS} draws from {sum(COUNTS)} examples took the rarest class (of {COUNTS[-1]} "
        f"examples) {got} times, expected about {FEW_DRAWS // 3}: draw with replacement")


def test_same_generator_seed_same_indices(impl):
    labels = imbalanced_labels()
    first = list(impl.balanced_sampler(labels, 50, generator=torch.Generator().manual_seed(9)))
    torch.manual_seed(555)
    torch.rand(100)
    second = list(impl.balanced_sampler(labels, 50, generator=torch.Generator().manual_seed(9)))
    assert first == second, ("two samplers with generators seeded alike gave different indices after the "
                             "global RNG was used in between: draw from the generator")
    other = list(impl.balanced_sampler(labels, 50, generator=torch.Generator().manual_seed(10)))
    assert other != first, "generators seeded 9 and 10 gave the same 50 indices: the generator is not used"


@pytest.mark.points(1)
def test_global_rng_without_a_generator(impl):
    sampler = impl.balanced_sampler(imbalanced_labels(), 50)
    torch.manual_seed(4)
    first = list(sampler)
    torch.manual_seed(4)
    second = list(sampler)
    assert first == second, "without a generator, the same global seed before a pass gave different indices"


@pytest.mark.parametrize("generator", ["given", "none"])
def test_every_pass_draws_afresh(impl, generator):
    gen = torch.Generator().manual_seed(2) if generator == "given" else None
    sampler = impl.balanced_sampler(imbalanced_labels(), 50, generator=gen)
    assert list(sampler) != list(sampler), "two passes over the sampler (two epochs) yielded the same 50 indices"


def test_sampler_of_any_label_kind(impl):
    labels = [0, 0, 0, 0, 1, 2, 2]
    want = list(impl.balanced_sampler(torch.tensor(labels), 40, generator=torch.Generator().manual_seed(5)))
    for kind, make in LABEL_KINDS.items():
        got = list(impl.balanced_sampler(make(labels), 40, generator=torch.Generator().manual_seed(5)))
        assert got == want, f"labels given as {kind} drew other indices than the same labels as an int64 tensor"


# ----------------------------------------------------------------------------------- errors

BAD_LABELS = {
    ValueError: {"empty tensor": torch.zeros(0, dtype=torch.int64), "empty list": [],
                 "2-D": torch.tensor([[0, 1], [1, 0]]), "negative": torch.tensor([0, -1, 1]),
                 "negative in a list": [0, -1]},
    TypeError: {"float32": torch.tensor([0.0, 1.0]), "bool": torch.tensor([True, False]),
                "a list with a float": [0, 1.0]},
}


@pytest.mark.points(1)
@pytest.mark.parametrize("function", ["class_weights", "balanced_sampler"])
@pytest.mark.parametrize("error", [ValueError, TypeError], ids=lambda e: e.__name__)
def test_bad_labels_raise_naming_labels(impl, function, error):
    call = (lambda labels: impl.class_weights(labels, 3)) if function == "class_weights" else (
        lambda labels: impl.balanced_sampler(labels, 3))
    for case, labels in BAD_LABELS[error].items():
        try:
            assert_raises_naming(error, "labels", call, labels)
        except AssertionError as exc:
            raise AssertionError(f"{function}, labels {case}: {exc}") from None


def test_class_index_of_num_classes_or_more_raises(impl):
    assert_raises_naming(ValueError, "labels", impl.class_weights, torch.tensor([0, 3, 1]), 3)
    assert_close(impl.class_weights(torch.tensor([0, 2, 1]), 3), torch.ones(3), name="class_weights([0, 2, 1], 3)")


def test_counts_below_one_raise(impl):
    assert_raises_naming(ValueError, "num_classes", impl.class_weights, torch.tensor([0, 0]), 0)
    assert_close(impl.class_weights(torch.tensor([0, 0]), 1), torch.ones(1), name="class_weights([0, 0], 1)")
    assert_raises_naming(ValueError, "num_samples", impl.balanced_sampler, torch.tensor([0, 1]), 0)
