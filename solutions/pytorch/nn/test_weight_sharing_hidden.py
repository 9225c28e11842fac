"""Hidden tests for pytorch.nn.weight_sharing (the catalog's contract checks)."""

import copy
import io

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch.func import functional_call

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    autocast,
    check_gradients,
    device_params,
)


def assert_tied(model, where: str) -> None:
    assert model.output.weight is model.embedding.weight, (
        f"{where}: model.output.weight is not the same Parameter object as model.embedding.weight "
        "(the tie is lost or was never made; equal values are not enough)")
    n = len(list(model.parameters()))
    assert n == 3, f"{where}: parameters() yields {n} tensors, expected 3 (the shared matrix once)"


def reference_logits(model, tokens):
    """The contract's forward pass, from the model's own tensors."""
    e = model.embedding.weight
    h = torch.tanh(F.linear(e[tokens], model.hidden.weight, model.hidden.bias))
    return F.linear(h, e)


@pytest.mark.points(2)
def test_same_parameter_object_counted_once(impl):
    model = impl.TiedLM(13, 5)
    assert_tied(model, "TiedLM(13, 5)")
    count = sum(p.numel() for p in model.parameters())
    assert count == 13 * 5 + 5 * 5 + 5, (f"TiedLM(13, 5) has {count} parameter values, expected "
                                         f"{13 * 5 + 5 * 5 + 5} (vocab*dim + dim*dim + dim)")
    assert model.output.bias is None, "the output projection must have no bias"
    # The contract names the layer nn.Linear(dim, vocab): its metadata must say so, not only its
    # (tied) weight's shape.
    layers = {"hidden": (model.hidden, 5, 5), "output": (model.output, 5, 13)}
    for name, (layer, in_features, out_features) in layers.items():
        assert isinstance(layer, torch.nn.Linear), f"model.{name} is not an nn.Linear"
        got = (layer.in_features, layer.out_features)
        assert got == (in_features, out_features), (
            f"TiedLM(13, 5).{name} has (in_features, out_features) = {got}, expected "
            f"{(in_features, out_features)} (nn.Linear(dim, {'dim' if name == 'hidden' else 'vocab'}))")
    names = sorted(n for n, _ in model.named_parameters(remove_duplicate=False))
    assert names == ["embedding.weight", "hidden.bias", "hidden.weight", "output.weight"], (
        f"named_parameters(remove_duplicate=False) gives {names}, expected embedding.weight, "
        "hidden.bias, hidden.weight, output.weight")


@pytest.mark.points(2)
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
@given(vocab=st.integers(1, 8), dim=st.integers(1, 5),
       shape=st.lists(st.integers(1, 4), max_size=3), seed=st.integers(0, 2**16))
@example(vocab=1, dim=1, shape=[3], seed=0)  # the smallest sizes allowed
@example(vocab=5, dim=3, shape=[], seed=1)  # 0-d tokens
def test_logits_match_formula(impl, index_dtype, vocab, dim, shape, seed):
    torch.manual_seed(seed)
    model = impl.TiedLM(vocab, dim).double()
    tokens = torch.randint(0, vocab, tuple(shape), dtype=index_dtype)
    out = model(tokens)
    name = f"TiedLM({vocab}, {dim})({index_dtype} tokens{tuple(shape)})"
    assert_shape(out, (*shape, vocab), name=name)
    assert_close(out, reference_logits(model, tokens), rtol=1e-10, atol=1e-10,
                 name=name + " (output(tanh(hidden(embedding(tokens)))))")


@pytest.mark.points(2)
def test_gradient_is_sum_of_both_uses(impl):
    torch.manual_seed(0)
    model = impl.TiedLM(9, 4).double()
    tokens = torch.tensor([[0, 3, 3, 8], [1, 2, 0, 5]])
    weights = torch.randn(2, 4, 9, dtype=torch.float64)
    (model(tokens) * weights).sum().backward()
    # Independent: the same computation with the two uses as separate leaves.
    e_in = model.embedding.weight.detach().clone().requires_grad_(True)
    e_out = model.embedding.weight.detach().clone().requires_grad_(True)
    wh, bh = model.hidden.weight.detach(), model.hidden.bias.detach()
    logits = F.linear(torch.tanh(F.linear(e_in[tokens], wh, bh)), e_out)
    (logits * weights).sum().backward()
    grad = model.embedding.weight.grad
    assert grad is not None, "the shared weight received no gradient"
    assert_close(grad, e_in.grad + e_out.grad, rtol=1e-9, atol=1e-9,
                 name="gradient of the shared weight (must be embedding-use + output-use)")


@pytest.mark.points(2)
@settings(max_examples=5)
@given(vocab=st.integers(1, 4), dim=st.integers(1, 3), n=st.integers(1, 3))
def test_gradients_match_finite_differences(impl, vocab, dim, n):
    torch.manual_seed(0)
    model = impl.TiedLM(vocab, dim).double()
    tokens = torch.randint(0, vocab, (n,))

    def forward(e, wh, bh):
        return functional_call(model, {"embedding.weight": e, "hidden.weight": wh,
                                       "hidden.bias": bh}, (tokens,))

    def independent(e, wh, bh):
        return F.linear(torch.tanh(F.linear(e[tokens], wh, bh)), e)

    check_gradients(forward, model.embedding.weight.detach(), model.hidden.weight.detach(),
                    model.hidden.bias.detach(), reference=independent, name=f"TiedLM({vocab}, {dim}) forward")


@pytest.mark.points(2)
def test_tie_survives_state_dict_round_trip(impl):
    torch.manual_seed(0)
    source = impl.TiedLM(10, 6)
    buffer = io.BytesIO()
    torch.save(source.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(1)
    target = impl.TiedLM(10, 6)
    target.load_state_dict(torch.load(buffer, weights_only=True))
    assert_tied(target, "after load_state_dict(torch.load(saved state_dict))")
    tokens = torch.randint(0, 10, (3, 4))
    assert_close(target(tokens), reference_logits(source, tokens),
                 name="logits after the state_dict round trip (vs the source model's weights)")


def test_tie_survives_deepcopy(impl):
    model = impl.TiedLM(10, 6)
    clone = copy.deepcopy(model)
    assert_tied(clone, "copy.deepcopy(model)")
    assert clone.embedding.weight is not model.embedding.weight, (
        "copy.deepcopy(model) shares its embedding weight with the original")
    with torch.no_grad():
        clone.embedding.weight.add_(1.0)
    assert not torch.equal(clone.embedding.weight, model.embedding.weight), (
        "changing the deep copy's weight changed the original")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_tie_survives_dtype_conversion(impl, dtype):
    model = impl.TiedLM(10, 6).to(dtype)
    assert_tied(model, f"model.to({dtype})")
    assert model.embedding.weight.dtype == dtype, f"model.to({dtype}) left the weight {model.embedding.weight.dtype}"
    assert_tied(impl.TiedLM(10, 6).double(), "model.double()")


@pytest.mark.points(2)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_tie_survives_device_move_and_runs_there(impl, device):
    model = impl.TiedLM(10, 6).to(device)
    assert_tied(model, f"model.to({device!r})")
    tokens = torch.zeros(2, 3, dtype=torch.long, device=device)
    out = model(tokens)
    assert_shape(out, (2, 3, 10), name=f"logits on {device}")
    assert_device(out, device, name=f"logits on {device}")


def test_training_step_keeps_one_matrix(impl):
    torch.manual_seed(0)
    model = impl.TiedLM(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    tokens = torch.randint(0, 8, (5,))
    F.cross_entropy(model(tokens), torch.randint(0, 8, (5,))).backward()
    opt.step()
    assert_tied(model, "after an SGD step")


def test_autocast_logits_dtype(impl):
    model = impl.TiedLM(10, 6)
    with autocast("cpu") as low:
        out = model(torch.randint(0, 10, (2, 3)))
    assert out.dtype == low, f"TiedLM under torch.autocast('cpu') returned {out.dtype}, expected {low}"


# Each case breaks exactly one rule.
BAD_SIZES = {"vocab=0": ("vocab", 0, 4), "vocab=-1": ("vocab", -1, 4), "vocab=2.5": ("vocab", 2.5, 4),
             "dim=0": ("dim", 10, 0), "dim=-1": ("dim", 10, -1), "dim=3.0": ("dim", 10, 3.0)}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(BAD_SIZES))
def test_rejects_bad_sizes(impl, case):
    argname, vocab, dim = BAD_SIZES[case]
    assert_raises_naming(ValueError, argname, impl.TiedLM, vocab, dim)


BAD_TOKENS = {
    "float32": lambda: torch.zeros(2, 3),
    "float64": lambda: torch.zeros(2, 3, dtype=torch.float64),
    "bool": lambda: torch.zeros(2, 3, dtype=torch.bool),
    "uint8": lambda: torch.zeros(2, 3, dtype=torch.uint8),
    "list": lambda: [[0, 1, 2], [3, 4, 5]],
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
def test_rejects_non_index_tokens(impl, case):
    model = impl.TiedLM(10, 4)
    assert_raises_naming(TypeError, "tokens", model, BAD_TOKENS[case]())
