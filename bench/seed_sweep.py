"""Run every statistical hidden check over many seeds against the reference solutions.

Statistical checks (weight initialisation moments, dropout rates) use one fixed seed in the
hidden tests, with a tolerance meant to hold for *any* seed. This maintainer script proves it:
for each check it calls the very function the hidden test calls (imported from the test module
by file path), with seeds 0..N-1 plus the test's own seed, and prints the tolerance, the
statistic's standard deviation (for a correct solution, computed analytically), the worst
deviation seen and the margin left. Exit status 1 when any seed breaks any tolerance.

    .venv/bin/python bench/seed_sweep.py [--seeds N]

Seeded checks whose failure needs a probability-zero coincidence are not swept, only listed
here with their bound: two dropout masks of 256 (or 4096) elements being identical (2^-256),
a float output of a Linear layer being exactly 0, and a normal weight beyond 10 standard
deviations in the small hypothesis layers of ``test_small_layers_any_nesting`` (1.5e-23 per
weight; the same ``spread`` statistic is swept below on the nested model).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test modules import grader.checks


def load(relative: str) -> ModuleType:
    """Import a file of the kit by path (solutions and tests are not packages)."""
    path = ROOT / relative
    name = "_sweep_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Stat:
    """One bounded statistic: a seed passes when deviation < tolerance (<= when not strict)."""

    name: str
    tolerance: float
    sigma: float | None  # sd of the deviation for a correct solution; None where not meaningful
    strict: bool = True
    worst: float = -math.inf
    worst_seed: int = -1
    at_fixed_seed: float = math.nan
    failures: list[int] = field(default_factory=list)

    def record(self, seed: int, deviation: float, fixed_seed: int) -> None:
        if deviation > self.worst:
            self.worst, self.worst_seed = deviation, seed
        if seed == fixed_seed:
            self.at_fixed_seed = deviation
        if not (deviation < self.tolerance if self.strict else deviation <= self.tolerance):
            self.failures.append(seed)


@dataclass
class Probe:
    """One seeded run of a hidden test's statistical function, giving one deviation per stat."""

    test: str
    fixed_seed: int
    stats: list[Stat]
    run: Callable[[int], list[float]]


def weight_init_probes() -> list[Probe]:
    tests = load("solutions/pytorch/nn/test_weight_init_hidden.py")
    impl = load("solutions/pytorch/nn/weight_init.py")

    def moment_stats(n: int) -> list[Stat]:
        # sd of the sample std / target for n normal weights (uniform ones vary less), and of
        # the sample mean / target.
        return [Stat("|std / target - 1|", tests.TOL, 1 / math.sqrt(2 * n)),
                Stat("|mean| / target", tests.TOL, 1 / math.sqrt(n))]

    def moments(weight: torch.Tensor, target: float, _name: str) -> list[float]:
        return list(tests.moment_deviations(weight, target)[2:])

    probes = []
    for case in tests.INIT_CASES:
        weight, _, _ = tests.init_case(impl, case)
        probes.append(Probe(f"test_weight_init_hidden: init_case({case!r})", tests.SEED,
                            moment_stats(weight.numel()),
                            lambda seed, case=case: moments(*tests.init_case(impl, case, seed))))

    def nested(seed: int) -> list[float]:
        model = tests.init_nested(impl, seed)[0]
        spreads = [tests.spread(m.weight, tests.kaiming_std(m.weight)) for m in model.modules()
                   if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv3d))]
        return [*moments(*tests.nested_deep(model)), max(spreads)]

    n_deep = tests.nested_deep(tests.init_nested(impl)[0])[0].numel()
    probes.append(Probe("test_weight_init_hidden: init_nested (test_applied_recursively)",
                        tests.SEED,
                        [*moment_stats(n_deep),
                         Stat("max |w| / std over its Linear/Conv layers", 10.0, None)],
                        nested))
    return probes


def dropout_probes() -> list[Probe]:
    tests = load("solutions/pytorch/nn/test_dropout_batchnorm_hidden.py")
    impl = load("solutions/pytorch/nn/dropout_batchnorm.py")
    n = tests.DROPOUT_N
    x = torch.linspace(0.5, 1.5, n, dtype=torch.float64)  # the test's input, for the exact sd
    spread = math.sqrt(n * float((x * x).sum())) / float(x.sum())
    probes = []
    for p in (0.1, 0.5, 0.8):
        _, _, tol_rate, tol_ratio = tests.dropout_rate_and_mean(impl, p)

        def run(seed: int, p: float = p) -> list[float]:
            dropped, ratio, _, _ = tests.dropout_rate_and_mean(impl, p, seed)
            return [abs(dropped - p), abs(ratio - 1)]

        probes.append(Probe(f"test_dropout_batchnorm_hidden: dropout_rate_and_mean(p={p})", 1234,
                            [Stat("|dropped fraction - p|", tol_rate,
                                  math.sqrt(p * (1 - p) / n), strict=False),
                             Stat("|sum(out) / sum(x) - 1|", tol_ratio,
                                  math.sqrt(p / ((1 - p) * n)) * spread, strict=False)],
                            run))
    return probes


def mlp_probes() -> list[Probe]:
    tests = load("solutions/pytorch/nn/test_mlp_hidden.py")
    impl = load("solutions/pytorch/nn/mlp.py")
    p = tests.MLP_DROPOUT_P
    units = tests.mlp_hidden_dropout(impl)[0].numel()

    def run(seed: int) -> list[float]:
        return [abs(tests.mlp_hidden_dropout(impl, seed)[2] - p)]

    return [Probe("test_mlp_hidden: mlp_hidden_dropout", 1234,
                  [Stat("|dropped fraction - p|", tests.MLP_RATE_TOL,
                        math.sqrt(p * (1 - p) / units))],
                  run)]


# ---- pytorch.training: binary_classifier, imbalanced_data ------------------------------------
# Not swept (a correct solution fails only by a coincidence of the stated probability):
# binary_classifier's test_every_epoch_draws_a_fresh_order (every one of four seeded runs drawing
# the same order of 5 examples in both epochs: 120**-4 = 5e-9) and test_different_seeds_give_
# different_initial_weights (two float draws equal); imbalanced_data's samplers giving equal
# 50-index passes for different seeds or passes (about 3**-50).

def binary_classifier_probes() -> list[Probe]:
    tests = load("solutions/pytorch/training/test_binary_classifier_hidden.py")
    impl = load("solutions/pytorch/training/binary_classifier.py")
    return [Probe("test_binary_classifier_hidden: train_accuracy (test_reaches_high_accuracy_on_separable_data)",
                  tests.ACCURACY_SEED, [Stat("1 - training accuracy", 1 - tests.ACCURACY_BAR, None)],
                  lambda seed: [1 - tests.train_accuracy(impl, seed)])]


def imbalanced_data_probes() -> list[Probe]:
    tests = load("solutions/pytorch/training/test_imbalanced_data_hidden.py")
    impl = load("solutions/pytorch/training/imbalanced_data.py")
    classes = len(tests.COUNTS)
    p_class, p_example = 1 / classes, 1 / (classes * tests.COUNTS[-1])
    rare = Probe("test_imbalanced_data_hidden: class_deviations (test_sampled_classes_are_near_uniform, "
                 "test_examples_within_a_class_are_equally_likely)", tests.SAMPLER_SEED,
                 [Stat("max |class frequency - 1/P|", tests.CLASS_TOL,
                       math.sqrt(p_class * (1 - p_class) / tests.NUM_DRAWS)),
                  Stat("max |rare example draws / expected - 1|", tests.EXAMPLE_TOL,
                       math.sqrt((1 - p_example) / (p_example * tests.NUM_DRAWS)))],
                 lambda seed: list(tests.class_deviations(impl, seed)))
    replacement = Probe("test_imbalanced_data_hidden: rare_draws (test_draws_with_replacement)",
                        tests.SAMPLER_SEED,
                        [Stat("rare examples / rare-class draws (< 1: drawn more often than it has examples)",
                              1.0, None)],
                        lambda seed: [tests.COUNTS[-1] / max(tests.rare_draws(impl, seed), 1)])
    return [rare, replacement]

# ---- end of pytorch.training: binary_classifier, imbalanced_data ------------------------------


# --- pytorch.training: debug_not_learning and gan_step (convergence checks) ---------------------
def training_convergence_probes() -> list[Probe]:
    """The learning checks of two training exercises: the reference trains from seed ``s`` (data,
    initial weights and batch order all drawn from it) and must clear the hidden test's bar."""
    debug = load("solutions/pytorch/training/test_debug_not_learning_hidden.py")
    debug_impl = load("solutions/pytorch/training/debug_not_learning.py")
    gan = load("solutions/pytorch/training/test_gan_step_hidden.py")
    gan_impl = load("solutions/pytorch/training/gan_step.py")
    return [
        Probe("test_debug_not_learning_hidden: accuracy_after_training (test_learns_a_separable_task)",
              debug.LEARN_SEED, [Stat("1 - training accuracy", 1 - debug.MIN_ACCURACY, None)],
              lambda seed: [1 - debug.accuracy_after_training(debug_impl, seed)]),
        Probe("test_gan_step_hidden: learned_mean (test_learns_the_mean_of_a_gaussian)",
              gan.LEARN_SEED, [Stat("|mean of G's samples - data mean|", gan.MEAN_TOL, None)],
              lambda seed: [abs(gan.learned_mean(gan_impl, seed) - gan.DATA_MEAN)]),
    ]
# --- end of pytorch.training: debug_not_learning and gan_step --------------------------------------


# --- tensorflow.data.pipeline (shuffling checks) ----------------------------------------------------
def tf_data_pipeline_probes() -> list[Probe]:
    """The shuffling checks of tensorflow.data.pipeline: each fails a correct pipeline only by a
    coincidence of the shuffle drawn from ``seed`` (the largest: an epoch of 32 through a buffer of
    2 left in its original order, 2**-31). Each deviation is a count that must stay below 1."""
    tests = load("solutions/tensorflow/data/test_pipeline_hidden.py")  # imports TensorFlow
    impl = load("solutions/tensorflow/data/pipeline.py")

    def buffered(seed: int, shuffle_buffer: int) -> list[float]:
        epochs = tests.shuffled_orders(impl, seed, n=32, shuffle_buffer=shuffle_buffer)
        return [sum(rows == list(range(32)) for rows in epochs),
                sum(len(tests.beyond_the_buffer(rows, shuffle_buffer)) for rows in epochs)]

    def blocks(seed: int) -> list[float]:
        epochs = tests.shuffled_orders(impl, seed, n=32, batch_size=4, shuffle_buffer=32, epochs=2)
        return [max(len(tests.block_batches(rows, 4)) / 8 for rows in epochs)]

    def repeats(seed: int) -> list[float]:
        orders = tests.shuffled_orders(impl, seed)
        other = tests.shuffled_orders(impl, seed + 1, epochs=1)[0]
        again = tests.shuffled_orders(impl, seed)
        return [float(orders[0] == orders[1]) + float(orders[1] == orders[2]),
                float(orders[0] == other), float(sum(a != b for a, b in zip(orders, again)))]

    never = "epochs left in the original order"
    late = "examples beyond the buffer's reach"
    return [
        *(Probe(f"test_pipeline_hidden: shuffled_orders(shuffle_buffer={b}) "
                "(test_shuffle_buffer_bounds_how_far_an_example_moves)", tests.BUFFER_SEED,
                [Stat(never, 1.0, None), Stat(late, 1.0, None)],
                lambda seed, b=b: buffered(seed, b)) for b in (2, 5)),
        Probe("test_pipeline_hidden: block_batches (test_examples_not_batches_are_shuffled)",
              tests.BLOCKS_SEED, [Stat("fraction of batches that are blocks of consecutive rows", 1.0, None)],
              blocks),
        Probe("test_pipeline_hidden: shuffled_orders (test_order_is_reshuffled_every_epoch, "
              "test_another_seed_gives_another_order, test_same_arguments_give_the_same_batches)",
              tests.RESHUFFLE_SEED,
              [Stat("consecutive epochs in the same order", 1.0, None),
               Stat("seed and seed + 1 in the same order", 1.0, None),
               Stat("epochs differing between two equal pipelines", 1.0, None)],
              repeats),
    ]
# --- end of tensorflow.data.pipeline ------------------------------------------------------------------


# --- tensorflow.training.gan_step (the noise drawn when none is given) ----------------------------
# Not swept (a correct solution fails only by a coincidence of probability zero): two steps drawing
# the same 8192 normal values (test_noise_is_one_fresh_standard_normal_batch_per_step), and, in
# tensorflow.models.sequence_models, training=True giving the inference output although dropout
# 0.5 drops each of 120 values with probability 1/2 (2^-120; test_dropout_only_with_training_true).
def tf_gan_noise_probes() -> list[Probe]:
    tests = load("solutions/tensorflow/training/test_gan_step_hidden.py")
    impl = load("solutions/tensorflow/training/gan_step.py")
    n = tests.NOISE_BATCH * tests.NOISE_DIM

    def run(seed: int) -> list[float]:
        first, _ = tests.draw_noise(impl, seed)
        return list(tests.noise_deviations(first[0]))

    return [Probe("test_gan_step_hidden (tensorflow): noise_deviations "
                  "(test_noise_is_one_fresh_standard_normal_batch_per_step)", tests.NOISE_SEED,
                  [Stat("|mean of the noise|", tests.NOISE_MEAN_TOL, 1 / math.sqrt(n)),
                   Stat("|std of the noise - 1|", tests.NOISE_STD_TOL, 1 / math.sqrt(2 * n))],
                  run)]
# --- end of tensorflow.training.gan_step ------------------------------------------------------------


# --- tensorflow.keras.regularization (dropout rate of build_regularized) -------------------------
def keras_regularization_probes() -> list[Probe]:
    """test_dropout_only_when_training: the fraction of the 2048 units one training call drops,
    and the smallest unit before the identity output layer (the test reads any zero as dropped,
    so every unit must stay positive, with batch statistics and at inference alike)."""
    tests = load("solutions/tensorflow/keras/test_regularization_hidden.py")
    impl = load("solutions/tensorflow/keras/regularization.py")
    n = tests.DROPOUT_BATCH * tests.DROPOUT_UNITS
    probes = []
    for rate in (0.2, 0.5):

        def run(seed: int, rate: float = rate) -> list[float]:
            _, model, x, trained, undropped = tests.dropout_outputs(impl, rate, seed)
            inferred = float(np.min(model(x, training=False)))
            return [abs(float((trained == 0).mean()) - rate), math.exp(-min(float(undropped.min()), inferred))]

        probes.append(Probe(f"test_regularization_hidden: dropout_outputs(rate={rate})", tests.DROPOUT_SEED,
                            [Stat("|dropped fraction - rate|", tests.DROPOUT_RATE_TOL,
                                  math.sqrt(rate * (1 - rate) / n), strict=False),
                             Stat("exp(-smallest unit before the output) (< 1: all > 0)", 1.0, None)],
                            run))
    return probes
# --- end of tensorflow.keras.regularization ------------------------------------------------------


# --- tensorflow.performance.mixed_precision (convergence check) ------------------------------------
def mixed_precision_probes() -> list[Probe]:
    """``model.fit`` under each mixed precision policy: the reference model, trained from seed ``s``
    (data, initial weights and batch order all drawn from it), must reach the hidden test's
    training accuracy."""
    tests = load("solutions/tensorflow/performance/test_mixed_precision_hidden.py")
    impl = load("solutions/tensorflow/performance/mixed_precision.py")
    return [Probe(f"test_mixed_precision_hidden: train_accuracy(policy={policy!r}) "
                  "(test_fit_learns_and_variables_stay_float32)", tests.LEARN_SEED,
                  [Stat("1 - training accuracy", 1 - tests.MIN_ACCURACY, None, strict=False)],
                  lambda seed, policy=policy: [1 - tests.train_accuracy(impl, policy, seed)[2]])
            for policy in tests.POLICIES]
# --- end of tensorflow.performance.mixed_precision ----------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500, help="seeds 0..N-1 (default 500)")
    parser.add_argument("--only", default="", metavar="TEXT", help="sweep only the checks whose name contains TEXT")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small ops: threads only add overhead on a shared machine
    start = time.perf_counter()
    probes = (weight_init_probes() + dropout_probes() + mlp_probes()
              + binary_classifier_probes() + imbalanced_data_probes() + training_convergence_probes()
              + tf_data_pipeline_probes() + tf_gan_noise_probes() + keras_regularization_probes()
              + mixed_precision_probes())
    probes = [p for p in probes if args.only in p.test]
    failed = 0
    for probe in probes:
        t0 = time.perf_counter()
        seeds = sorted(set(range(args.seeds)) | {probe.fixed_seed})
        for seed in seeds:
            for stat, deviation in zip(probe.stats, probe.run(seed), strict=True):
                stat.record(seed, deviation, probe.fixed_seed)
        print(f"{probe.test}  ({len(seeds)} seeds, {time.perf_counter() - t0:.1f} s)")
        for s in probe.stats:
            failed += bool(s.failures)
            sig = (f"tol = {s.tolerance / s.sigma:.1f} sd, worst = {s.worst / s.sigma:.2f} sd"
                   if s.sigma else "")
            verdict = f"FAIL at seeds {s.failures[:10]}" if s.failures else "ok"
            print(f"  {s.name:44s} tol {s.tolerance:.4g}  worst {s.worst:.4g} (seed "
                  f"{s.worst_seed})  margin {s.tolerance - s.worst:.4g} "
                  f"({1 - s.worst / s.tolerance:.0%} of tol)  seed {probe.fixed_seed}: "
                  f"{s.at_fixed_seed:.4g}  {sig}  {verdict}")
    total = sum(len(p.stats) for p in probes)
    print(f"{total} statistics in {len(probes)} checks, seeds 0..{args.seeds - 1} plus each test's "
          f"own: {failed} failing, {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
