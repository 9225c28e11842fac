"""Hidden tests for pytorch.nn.dropout_batchnorm (the catalog's contract checks)."""

from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st
from torch.func import functional_call

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    check_gradients,
    count_aten_ops,
    device_params,
    shapes,
    tensors,
)

# Torch's own dropout/normalisation kernels, as they show up in the dispatcher.
FORBIDDEN_OPS = ("dropout", "batch_norm", "layer_norm", "group_norm", "instance_norm")
# Hypothesis' explain phase re-runs a failing example dozens of times; on a loaded 2-core machine
# that alone can outlast the per-test time limit, so a wrong answer would read as a timeout.
NO_EXPLAIN = tuple(phase for phase in Phase if phase is not Phase.explain)


def raises_naming_word(error, word, fn, *args, **kwargs):
    """Like ``assert_raises_naming`` but ``word`` must appear as a whole word: the argument
    names here (``p``, ``x``) are single letters that any message contains as a substring."""
    exc = assert_raises_naming(error, word, fn, *args, **kwargs)
    if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", str(exc)):
        raise AssertionError(f"{getattr(fn, '__name__', 'the call')}(...) raised "
                             f"{type(exc).__name__} as expected, but its message should name the "
                             f"argument {word!r} as a word: {exc!s:.200}")


def forbidden_ops(fn, *args):
    _, ops = count_aten_ops(fn, *args)
    return sorted(op for op in ops if any(bad in op for bad in FORBIDDEN_OPS))


# ----------------------------------------------------------------------------------- Dropout


@pytest.mark.points(2)
@settings(phases=NO_EXPLAIN)
@given(x=tensors(shapes(max_dims=4), dtype=torch.float64),
       p=st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.01, 0.99)),
       seed=st.integers(0, 2**16))
def test_dropout_each_element_is_zero_or_rescaled(impl, x, p, seed):
    layer = impl.Dropout(p).train()
    before = x.clone()
    torch.manual_seed(seed)
    out = layer(x)
    name = f"Dropout(p={p:.3g}) in training, x{tuple(x.shape)}"
    assert_shape(out, tuple(x.shape), name=name)
    assert_close(x, before, name=f"{name}: the input after the call (it must not change)")
    if p == 1.0:
        assert_close(out, torch.zeros_like(x), name=f"{name}: p=1 drops everything")
        return
    expected = torch.where(out == 0, torch.zeros_like(x), x / (1 - p))
    assert_close(out, expected, rtol=1e-9, atol=1e-12,
                 name=f"{name}: each element must be 0 or x / (1 - p)")
    nonzero = x != 0
    if p <= 0.5 and int(nonzero.sum()) >= 64:  # all dropped: probability <= 0.5^64 when correct
        assert bool((out[nonzero] != 0).any()), f"{name}: every non-zero element was zeroed"


DROPOUT_N = 200_000


def dropout_rate_and_mean(impl, p: float, seed: int = 1234) -> tuple[float, float, float, float]:
    """Dropout(p) in training on DROPOUT_N values after torch.manual_seed(seed). Returns the
    dropped fraction, sum(output) / sum(input) and their tolerances, 6 standard deviations of each
    statistic for a correct layer (``bench/seed_sweep.py`` runs this over many seeds)."""
    n = DROPOUT_N
    # Deterministic positive values: no accidental zeros, and (unlike torch.rand data) no chance
    # of coinciding with the random stream the mask is drawn from.
    x = torch.linspace(0.5, 1.5, n, dtype=torch.float64)
    torch.manual_seed(seed)
    out = impl.Dropout(p).train()(x)
    dropped = float((out == 0).double().mean())
    sd_rate = math.sqrt(p * (1 - p) / n)
    ratio = float(out.sum() / x.sum())
    # sd of the ratio is sqrt(p / ((1 - p) n)) * sqrt(n sum(x^2)) / sum(x); that last factor is
    # sqrt(13 / 12) = 1.04 for this x; 1.2 makes the tolerance 6.9 standard deviations.
    sd_ratio = math.sqrt(p / ((1 - p) * n)) * 1.2
    return dropped, ratio, 6 * sd_rate, 6 * sd_ratio


@pytest.mark.points(2)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_rate_and_mean_are_right(impl, p):
    dropped, ratio, tol_rate, tol_ratio = dropout_rate_and_mean(impl, p)
    assert abs(dropped - p) <= tol_rate, (
        f"Dropout(p={p}): dropped a fraction {dropped:.4f} of {DROPOUT_N} elements, expected about {p} "
        f"(tolerance {tol_rate:.4f}); p is the probability to DROP an element")
    assert abs(ratio - 1) <= tol_ratio, (
        f"Dropout(p={p}): sum(output) / sum(input) is {ratio:.4f}, expected about 1 "
        f"(tolerance {tol_ratio:.4f}): survivors must be scaled by 1 / (1 - p)")


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_eval_mode_is_identity(impl, p):
    layer = impl.Dropout(p).eval()
    x = torch.randn(3, 5, 2)
    assert_close(layer(x), x, name=f"Dropout(p={p}).eval()(x)")


def test_dropout_p0_is_identity_in_training(impl):
    x = torch.randn(4, 7)
    assert_close(impl.Dropout(0.0).train()(x), x, name="Dropout(p=0) in training")


def test_dropout_p1_gives_zeros_and_zero_gradient(impl):
    x = torch.randn(4, 7, requires_grad=True)
    out = impl.Dropout(1.0).train()(x)
    assert_close(out, torch.zeros(4, 7), name="Dropout(p=1) in training (must be zeros, not NaN)")
    assert out.requires_grad, ("Dropout(p=1): the output must stay connected to the input's graph "
                               "(multiply by the mask rather than building a new zeros tensor)")
    out.sum().backward()
    assert_close(x.grad, torch.zeros(4, 7), name="gradient of Dropout(p=1)")


@pytest.mark.points(2)
@pytest.mark.parametrize("p", [0.2, 0.6])
def test_dropout_gradients_match_finite_differences(impl, p):
    layer = impl.Dropout(p).train()

    def reseeded(x):
        torch.manual_seed(0)  # the same mask on every call, so the function is deterministic
        return layer(x)

    check_gradients(reseeded, torch.randn(3, 4), name=f"Dropout(p={p}) with a fixed seed")
    x = torch.randn(50, dtype=torch.float64, requires_grad=True)
    out = reseeded(x)
    out.sum().backward()
    assert_close(x.grad * x.detach(), out.detach(), rtol=1e-9, atol=1e-12,
                 name=f"Dropout(p={p}): gradient * x (must equal the output: grad = mask / (1-p))")
    kept = out.detach() != 0  # P(all 50 dropped) <= 0.6^50: a correct layer keeps some
    assert bool(kept.any()), f"Dropout(p={p}) in training zeroed all 50 elements"
    assert_close(out.detach()[kept], x.detach()[kept] / (1 - p), rtol=1e-9, atol=1e-12,
                 name=f"Dropout(p={p}): kept elements (x / (1 - p))")


def test_dropout_is_reproducible_with_manual_seed(impl):
    layer, x = impl.Dropout(0.5).train(), torch.randn(64)
    torch.manual_seed(3)
    first = layer(x)
    torch.manual_seed(3)
    second = layer(x)
    assert_close(second, first, name="Dropout after the same torch.manual_seed (use torch's "
                                      "default generator, not one of your own)")


def test_dropout_draws_a_fresh_mask_every_call(impl):
    layer, x = impl.Dropout(0.5).train(), torch.randn(256)
    torch.manual_seed(5)
    first, second = layer(x), layer(x)
    assert not torch.equal(first == 0, second == 0), (
        "Dropout: two calls in a row dropped exactly the same elements; draw a new mask each call")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_dropout_stays_on_device(impl, device):
    x = torch.randn(3, 4, 5, device=device)
    for mode in ("train", "eval"):
        layer = getattr(impl.Dropout(0.5), mode)()
        out = layer(x)
        assert_shape(out, (3, 4, 5), name=f"Dropout in {mode} mode on {device}")
        assert_device(out, device, name=f"Dropout in {mode} mode on {device}")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("p", [-0.1, 1.5, math.nan], ids=str)
def test_dropout_rejects_bad_p(impl, p):
    raises_naming_word(ValueError, "p", impl.Dropout, p)


@pytest.mark.parametrize("p", [None, 0.0, 0.25, 1.0], ids=str)
def test_dropout_stores_p(impl, p):
    # None: Dropout() with no argument, whose p is the default 0.5.
    layer, call, want = (impl.Dropout(), "Dropout()", 0.5) if p is None else (impl.Dropout(p), f"Dropout({p})", p)
    assert getattr(layer, "p", None) == want, f"{call}.p is {getattr(layer, 'p', None)!r}, expected {want}"


@pytest.mark.points(0.5)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_dropout_keeps_dtype(impl, dtype):
    x = torch.linspace(0.5, 1.5, 64, dtype=dtype)
    torch.manual_seed(0)
    out = impl.Dropout(0.5).train()(x)
    assert out.dtype == dtype, f"Dropout(0.5) in training on {dtype} input returned {out.dtype}"
    kept = out != 0  # P(all 64 dropped) = 2^-64 for a correct layer
    assert bool(kept.any()), f"Dropout(0.5) in training on {dtype} input zeroed all 64 elements"
    assert_close(out[kept], x[kept] * 2, name=f"Dropout(0.5) on {dtype}: kept elements (x / (1 - p))")


def test_dropout_uses_no_builtin_dropout(impl):
    bad = forbidden_ops(impl.Dropout(0.5).train(), torch.randn(8, 8))
    assert not bad, f"Dropout calls torch's own kernels {bad}: write the masking yourself"


# ------------------------------------------------------------------------------- BatchNorm1d

momenta = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 0.1]), st.floats(0.01, 0.99))


def make_pair(impl, c, eps, momentum, seed, dtype=torch.float64):
    """The learner's layer and torch's, with the same random affine parameters."""
    ours = impl.BatchNorm1d(c, eps=eps, momentum=momentum).to(dtype)
    ref = torch.nn.BatchNorm1d(c, eps=eps, momentum=momentum).to(dtype)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in (ours, ref):
            gen.manual_seed(seed)
            module.weight.copy_(torch.randn(c, generator=gen, dtype=dtype))
            module.bias.copy_(torch.randn(c, generator=gen, dtype=dtype))
    return ours, ref


def forward_backward(module, x, upstream):
    x = x.clone().requires_grad_(True)
    for param in module.parameters():
        param.grad = None
    out = module(x)
    (out * upstream).sum().backward()
    return out.detach(), x.grad, module.weight.grad, module.bias.grad


@pytest.mark.points(3)
@settings(max_examples=12, phases=NO_EXPLAIN)
@given(three_d=st.booleans(), n=st.integers(1, 5), c=st.integers(1, 5), length=st.integers(1, 4),
       eps=st.sampled_from([1e-5, 1e-3, 0.5]), momentum=momenta, seed=st.integers(0, 2**16),
       n_eval=st.integers(1, 4))
def test_batchnorm_matches_torch_over_a_batch_sequence(impl, three_d, n, c, length, eps, momentum,
                                                       seed, n_eval):
    shape = (n, c, length) if three_d else (n, c)
    assume(math.prod(shape) // c > 1)  # training needs more than one value per channel
    ours, ref = make_pair(impl, c, eps, momentum, seed)
    gen = torch.Generator().manual_seed(seed)
    label = f"BatchNorm1d({c}, eps={eps}, momentum={momentum})"
    for step in range(3):
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * (step + 1) + step - 1
        upstream = torch.randn(shape, generator=gen, dtype=torch.float64)
        got = forward_backward(ours.train(), x, upstream)
        want = forward_backward(ref.train(), x, upstream)
        where = f"{label}, training batch {step + 1} x{shape}"
        for what, g, w in zip(("output", "gradient wrt x", "gradient wrt weight",
                               "gradient wrt bias"), got, want):
            assert_close(g, w, rtol=1e-7, atol=1e-9, name=f"{where}: {what}")
        assert_close(ours.running_mean, ref.running_mean, rtol=1e-9, atol=1e-12,
                     name=f"{where}: running_mean")
        assert_close(ours.running_var, ref.running_var, rtol=1e-9, atol=1e-12,
                     name=f"{where}: running_var")
        assert_close(ours.num_batches_tracked, ref.num_batches_tracked,
                     name=f"{where}: num_batches_tracked")
    eval_shape = (n_eval, *shape[1:])
    x = torch.randn(eval_shape, generator=gen, dtype=torch.float64)
    upstream = torch.randn(eval_shape, generator=gen, dtype=torch.float64)
    got = forward_backward(ours.eval(), x, upstream)
    want = forward_backward(ref.eval(), x, upstream)
    for what, g, w in zip(("output", "gradient wrt x"), got, want):
        assert_close(g, w, rtol=1e-7, atol=1e-9,
                     name=f"{label}, eval mode after 3 batches, x{eval_shape}: {what}")


def test_batchnorm_state_matches_torch_names_and_initial_values(impl):
    ours, ref = impl.BatchNorm1d(4), torch.nn.BatchNorm1d(4)
    got, want = ours.state_dict(), ref.state_dict()
    assert sorted(got) == sorted(want), (f"BatchNorm1d(4).state_dict() keys are {sorted(got)}, "
                                         f"expected {sorted(want)}")
    for key, value in want.items():
        assert_close(got[key], value, name=f"initial BatchNorm1d(4).state_dict()[{key!r}]")
    params = dict(ours.named_parameters())
    assert sorted(params) == ["bias", "weight"], (
        f"BatchNorm1d's parameters are {sorted(params)}, expected ['bias', 'weight'] "
        "(running statistics are buffers, not parameters)")
    # Loading torch's trained state must work too: the layouts are the same.
    ref(torch.randn(6, 4))
    ours.load_state_dict(ref.state_dict())


def test_batchnorm_eval_uses_running_stats_and_changes_no_state(impl):
    layer = impl.BatchNorm1d(3, momentum=0.5)
    for _ in range(2):
        layer.train()(torch.randn(8, 3, 2) * 3 + 1)
    frozen = {k: v.clone() for k, v in layer.state_dict().items()}
    layer.eval()
    x = torch.randn(1, 3, 4)  # a single example works in eval mode
    out = layer(x)
    rm, rv = frozen["running_mean"], frozen["running_var"]
    expected = ((x - rm[None, :, None]) / torch.sqrt(rv[None, :, None] + layer.eps)
                * frozen["weight"][None, :, None] + frozen["bias"][None, :, None])
    assert_close(out, expected, name="BatchNorm1d in eval mode, x(1, 3, 4)")
    for key, value in layer.state_dict().items():
        assert_close(value, frozen[key], name=f"{key} after an eval-mode call (must not change)")


@pytest.mark.points(2)
@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 3), (1, 2, 4)])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_batchnorm_gradients_match_finite_differences(impl, shape, mode):
    c = shape[1]
    layer = impl.BatchNorm1d(c, momentum=0.3).double()
    layer.train()(torch.randn(5, *shape[1:], dtype=torch.float64))  # non-trivial running stats
    getattr(layer, mode)()

    def fn(x, weight, bias):
        return functional_call(layer, {"weight": weight, "bias": bias}, (x,), strict=False)

    running_mean, running_var = layer.running_mean.clone(), layer.running_var.clone()

    def independent(x, weight, bias):  # torch's own batch norm, its running stats left alone
        return torch.nn.functional.batch_norm(x, running_mean.clone(), running_var.clone(), weight,
                                              bias, training=mode == "train", eps=layer.eps)

    x = torch.randn(shape) * 2 + 1
    check_gradients(fn, x, torch.randn(c), torch.randn(c), reference=independent,
                    name=f"BatchNorm1d in {mode} mode, x{shape}, w.r.t. (x, weight, bias)")


def test_batchnorm_running_stats_carry_no_autograd_history(impl):
    layer = impl.BatchNorm1d(3)
    x = torch.randn(6, 3, requires_grad=True)
    layer(x).sum().backward()
    for key in ("running_mean", "running_var"):
        buf = getattr(layer, key)
        assert not buf.requires_grad and buf.grad_fn is None, (
            f"BatchNorm1d.{key} requires grad after a training step (grad_fn={buf.grad_fn}): "
            "update the running statistics under torch.no_grad() or from detached statistics, "
            "or every batch's graph stays alive through them")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)])
@pytest.mark.parametrize("momentum", [None, 0.0, 1.0, 0.1], ids=str)
def test_batchnorm_every_momentum_kind_matches_torch(impl, momentum, shape):
    """momentum None (cumulative average), both ends of [0, 1] and the default, on both input
    ranks: three training batches then one eval batch, against torch.nn.BatchNorm1d."""
    ours, ref = make_pair(impl, shape[1], 1e-5, momentum, seed=7)
    gen = torch.Generator().manual_seed(3)
    label = f"BatchNorm1d({shape[1]}, momentum={momentum})"
    for step in range(3):
        x = torch.randn(shape, generator=gen, dtype=torch.float64) * (step + 2) + step
        assert_close(ours.train()(x), ref.train()(x), rtol=1e-7, atol=1e-9,
                     name=f"{label}, training batch {step + 1} x{shape}: output")
        for key in ("running_mean", "running_var"):
            assert_close(getattr(ours, key), getattr(ref, key), rtol=1e-9, atol=1e-12,
                         name=f"{label}, after training batch {step + 1} x{shape}: {key}")
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    assert_close(ours.eval()(x), ref.eval()(x), rtol=1e-7, atol=1e-9,
                 name=f"{label}, eval mode after 3 batches x{shape}: output")


def test_batchnorm_trains_on_one_example_with_length(impl):
    """N == 1 is fine in training when L > 1: the statistics are over N * L values."""
    ours, ref = make_pair(impl, 3, 1e-5, 0.1, seed=5)
    x = torch.randn(1, 3, 4, dtype=torch.float64)
    assert_close(ours.train()(x), ref.train()(x), rtol=1e-7, atol=1e-9,
                 name="BatchNorm1d(3) in training on x(1, 3, 4) (N == 1, L == 4): output")
    assert_close(ours.running_var, ref.running_var, rtol=1e-9, atol=1e-12,
                 name="BatchNorm1d(3) after training on x(1, 3, 4): running_var")


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1)])
def test_batchnorm_training_on_one_value_per_channel_raises(impl, shape):
    layer = impl.BatchNorm1d(3).train()
    raises_naming_word(ValueError, "x", layer, torch.randn(shape))


def test_batchnorm_rejects_bad_input_shapes(impl):
    layer = impl.BatchNorm1d(3)
    raises_naming_word(ValueError, "x", layer, torch.randn(4, 3, 2, 2))  # 4-D
    raises_naming_word(ValueError, "x", layer, torch.randn(6))  # 1-D
    raises_naming_word(ValueError, "x", layer, torch.randn(4, 5))  # wrong channel count
    raises_naming_word(ValueError, "x", layer.eval(), torch.randn(4, 2, 3))


# Each case breaks exactly one rule.
BAD_BN_ARGUMENTS = {
    "num_features=0": ("num_features", (0,), {}),
    "num_features=2.0": ("num_features", (2.0,), {}),
    "eps=0.0": ("eps", (3,), {"eps": 0.0}),
    "eps=-1e-5": ("eps", (3,), {"eps": -1e-5}),
    "eps=nan": ("eps", (3,), {"eps": math.nan}),
    "momentum=1.5": ("momentum", (3,), {"momentum": 1.5}),
    "momentum=-0.1": ("momentum", (3,), {"momentum": -0.1}),
    "momentum=nan": ("momentum", (3,), {"momentum": math.nan}),
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(BAD_BN_ARGUMENTS))
def test_batchnorm_rejects_bad_constructor_arguments(impl, case):
    argname, args, kwargs = BAD_BN_ARGUMENTS[case]
    assert_raises_naming(ValueError, argname, impl.BatchNorm1d, *args, **kwargs)


@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_batchnorm_stays_on_device(impl, device, shape):
    layer = impl.BatchNorm1d(3, momentum=None).to(device)
    x = torch.randn(shape, device=device)
    for mode in ("train", "eval"):
        out = getattr(layer, mode)()(x)
        assert_shape(out, shape, name=f"BatchNorm1d in {mode} mode on {device}")
        assert_device(out, device, name=f"BatchNorm1d in {mode} mode on {device}")
    for key, value in layer.state_dict().items():
        assert_device(value, device, name=f"BatchNorm1d.{key} after .to({device!r}) and a step")


def test_batchnorm_float32_matches_torch(impl):
    ours, ref = make_pair(impl, 4, 1e-5, 0.1, seed=11, dtype=torch.float32)
    for step in range(2):
        x = torch.randn(16, 4, 3) * 5 + 2
        assert_close(ours.train()(x), ref.train()(x), rtol=1e-4, atol=1e-5,
                     name=f"float32 BatchNorm1d batch {step + 1}")
    assert_close(ours.running_var, ref.running_var, rtol=1e-5, atol=1e-6,
                 name="float32 running_var after 2 batches")
    x = torch.randn(3, 4, 3)
    assert_close(ours.eval()(x), ref.eval()(x), rtol=1e-4, atol=1e-5,
                 name="float32 BatchNorm1d in eval mode")


def test_batchnorm_uses_no_builtin_normalisation(impl):
    layer = impl.BatchNorm1d(3)
    bad = forbidden_ops(layer.train(), torch.randn(5, 3, 2)) + forbidden_ops(layer.eval(),
                                                                              torch.randn(5, 3, 2))
    assert not bad, f"BatchNorm1d calls torch's own kernels {sorted(set(bad))}: compute the " \
                    "statistics yourself"
