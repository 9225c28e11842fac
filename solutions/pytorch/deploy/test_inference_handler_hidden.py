"""Hidden tests for pytorch.deploy.inference_handler (the catalog's contract checks).

Expected answers come from the model itself in eval mode under ``torch.no_grad`` with
``torch.softmax``, ranked by a stable sort written here.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_close, assert_device, assert_raises_naming, device_params

LABELS = ["cat", "dog", "fox", "owl", "yak"]
IN = 4
MALFORMED = {
    "not-a-dict": [0.1, 0.2, 0.3, 0.4],
    "no-input": {"inputs": [0.1, 0.2, 0.3, 0.4]},
    "input-not-a-list": {"input": "0.1 0.2 0.3 0.4"},
    "too-short": {"input": [0.1, 0.2, 0.3]},
    "too-long": {"input": [0.1, 0.2, 0.3, 0.4, 0.5]},
    "a-string": {"input": [0.1, "0.2", 0.3, 0.4]},
    "a-none": {"input": [0.1, None, 0.3, 0.4]},
    "a-bool": {"input": [0.1, True, 0.3, 0.4]},
    "nan": {"input": [0.1, float("nan"), 0.3, 0.4]},
    "inf": {"input": [0.1, 0.2, float("-inf"), 0.4]},
}


def make_model(seed: int = 0, dropout: float = 0.5, norm: bool = True) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(IN, 8)]
    if norm:
        layers.append(nn.BatchNorm1d(8))
    layers += [nn.ReLU(), nn.Dropout(dropout), nn.Linear(8, len(LABELS))]
    model = nn.Sequential(*layers)
    if norm:  # running statistics far from any batch's own
        model[1].running_mean.fill_(3.0)
        model[1].running_var.fill_(4.0)
    return model


def expected(model: nn.Module, inputs, top_k: int):
    """Answers by the contract: eval mode, softmax, stable descending ranking."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor(inputs, dtype=torch.float32)), dim=-1)
    model.train(was_training)
    out = []
    for row in probs.tolist():
        order = sorted(range(len(row)), key=lambda i: (-row[i], i))[:top_k]
        out.append({"predictions": [{"label": LABELS[i], "probability": row[i]} for i in order]})
    return out


def check_answer(got, want, label):
    assert isinstance(got, dict) and "predictions" in got, f"{label}: expected a predictions dict, got {got!r:.200}"
    preds = got["predictions"]
    assert [p["label"] for p in preds] == [p["label"] for p in want["predictions"]], (
        f"{label}: labels {[p['label'] for p in preds]}, expected {[p['label'] for p in want['predictions']]} "
        "(the top_k most probable, most probable first)")
    for p, w in zip(preds, want["predictions"]):
        assert type(p["probability"]) is float, (
            f"{label}: probability of {p['label']} is a {type(p['probability']).__name__}, expected a Python float")
        assert math.isclose(p["probability"], w["probability"], rel_tol=1e-5, abs_tol=1e-7), (
            f"{label}: probability of {p['label']} is {p['probability']}, expected {w['probability']}")


def valid_inputs(n: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(n, IN, generator=gen) * 2).tolist()


# -- constructor ---------------------------------------------------------------------------------

@pytest.mark.points(1)
@pytest.mark.parametrize("top_k", [0, 6, -1, 2.0])
def test_top_k_outside_1_to_len_labels_raises_value_error(impl, top_k):
    assert_raises_naming(ValueError, "top_k", impl.Handler, make_model(), LABELS, input_size=IN, top_k=top_k)


@pytest.mark.points(1)
def test_empty_labels_raise_value_error(impl):
    assert_raises_naming(ValueError, "labels", impl.Handler, make_model(), [], input_size=IN)


@pytest.mark.points(2)
@pytest.mark.parametrize("top_k", [1, 5])
def test_top_k_at_both_ends(impl, top_k):
    model = make_model(1)
    handler = impl.Handler(model, LABELS, input_size=IN, top_k=top_k)
    inputs = valid_inputs(3, 1)
    got = handler.handle([{"input": x} for x in inputs])
    for i, (g, w) in enumerate(zip(got, expected(model, inputs, top_k))):
        check_answer(g, w, f"top_k={top_k}, request {i}")
    if top_k == len(LABELS):
        for i, g in enumerate(got):
            total = sum(p["probability"] for p in g["predictions"])
            assert abs(total - 1.0) < 1e-5, f"request {i}: probabilities of all labels sum to {total}, expected 1"


@pytest.mark.points(1)
def test_constructor_puts_the_model_in_eval_mode(impl):
    model = make_model(2).train()
    impl.Handler(model, LABELS, input_size=IN)
    assert not any(m.training for m in model.modules()), "the constructor must put the model in eval mode"


@pytest.mark.points(1)
@pytest.mark.parametrize("device", device_params())
def test_model_and_batch_on_the_device(impl, device):
    model = make_model(3)
    handler = impl.Handler(model, LABELS, input_size=IN, device=device)
    assert all(p.device.type == device for p in model.parameters()), f"the model is not on {device}"
    batch, errors = handler.preprocess([{"input": [1, 2, 3, 4]}, {"input": [0.5, 0.5, 0.5, 0.5]}])
    assert_device(batch, device, name="preprocess batch")
    got = handler.handle([{"input": [1, 2, 3, 4]}])
    check_answer(got[0], expected(model.cpu(), [[1, 2, 3, 4]], 3)[0], f"on {device}")


# -- requests ------------------------------------------------------------------------------------

@pytest.mark.points(1)
@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_each_kind_of_malformed_request_gets_an_error_entry(impl, kind):
    model = make_model(4)
    handler = impl.Handler(model, LABELS, input_size=IN)
    inputs = valid_inputs(2, 4)
    got = handler.handle([{"input": inputs[0]}, MALFORMED[kind], {"input": inputs[1]}])
    assert isinstance(got, list) and len(got) == 3, f"{kind}: expected 3 answers for 3 requests, got {got!r:.300}"
    assert set(got[1]) == {"error"} and isinstance(got[1]["error"], str) and got[1]["error"], (
        f"{kind}: the malformed request should get {{'error': <non-empty message>}}, got {got[1]!r:.200}")
    want = expected(model, inputs, 3)
    check_answer(got[0], want[0], f"{kind}: request 0 (valid, before the malformed one)")
    check_answer(got[2], want[1], f"{kind}: request 2 (valid, after the malformed one)")


@pytest.mark.points(1)
@pytest.mark.parametrize("container", [list, tuple], ids=["list", "tuple"])
def test_input_as_list_or_tuple_with_ints_and_floats(impl, container):
    model = make_model(5)
    handler = impl.Handler(model, LABELS, input_size=IN)
    got = handler.handle([{"input": container([1, -2, 0.5, 3])}])
    check_answer(got[0], expected(model, [[1.0, -2.0, 0.5, 3.0]], 3)[0], f"input as a {container.__name__}")


@pytest.mark.points(3)
@settings(max_examples=15)
@given(pattern=st.lists(st.one_of(st.none(), st.sampled_from(sorted(MALFORMED))), min_size=1, max_size=8),
       top_k=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_mixed_batches_keep_order_and_isolate_errors(impl, pattern, top_k, seed):
    model = make_model(seed % 7)
    handler = impl.Handler(model, LABELS, input_size=IN, top_k=top_k)
    inputs = valid_inputs(len(pattern), seed)
    requests = [{"input": x} if kind is None else MALFORMED[kind] for x, kind in zip(inputs, pattern)]
    got = handler.handle(requests)
    assert isinstance(got, list) and len(got) == len(requests), (
        f"{len(requests)} requests ({pattern}) gave {len(got) if isinstance(got, list) else got!r} answers")
    valid = [x for x, kind in zip(inputs, pattern) if kind is None]
    answers = iter(expected(model, valid, top_k) if valid else [])
    for i, (g, kind) in enumerate(zip(got, pattern)):
        if kind is None:
            check_answer(g, next(answers), f"requests {pattern}, top_k={top_k}: request {i}")
        else:
            assert set(g) == {"error"} and isinstance(g["error"], str) and g["error"], (
                f"requests {pattern}: request {i} ({kind}) should get an error entry, got {g!r:.200}")


@pytest.mark.points(1)
def test_requests_that_is_not_a_list_raises_type_error(impl):
    handler = impl.Handler(make_model(), LABELS, input_size=IN)
    assert_raises_naming(TypeError, "requests", handler.handle, {"input": [1, 2, 3, 4]})


# -- stages ---------------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_preprocess_returns_the_valid_batch_and_one_error_per_request(impl):
    handler = impl.Handler(make_model(), LABELS, input_size=IN)
    requests = [{"input": [1, 2, 3, 4]}, MALFORMED["too-short"], {"input": (0.5, -1.0, 2, 0)}, MALFORMED["nan"]]
    batch, errors = handler.preprocess(requests)
    assert_close(batch, torch.tensor([[1.0, 2, 3, 4], [0.5, -1, 2, 0]]), name="preprocess batch")
    assert len(errors) == 4 and errors[0] is None and errors[2] is None, f"errors: {errors!r:.300}"
    assert all(isinstance(e, str) and e for e in (errors[1], errors[3])), f"errors: {errors!r:.300}"


@pytest.mark.points(2)
def test_inference_gives_softmax_probabilities_without_a_graph(impl):
    model = make_model(6)
    handler = impl.Handler(model, LABELS, input_size=IN)
    grad_modes = []
    model.register_forward_hook(lambda *_: grad_modes.append(torch.is_grad_enabled()))
    x = torch.randn(3, IN)
    probs = handler.inference(x)
    assert grad_modes == [False], f"the model ran with gradients enabled (calls: {grad_modes})"
    assert not probs.requires_grad and probs.grad_fn is None, "inference's result carries an autograd graph"
    with torch.no_grad():
        want = torch.softmax(model.eval()(x), dim=-1)
    assert_close(probs, want, rtol=1e-5, atol=1e-6, name="inference probabilities")
    assert all(p.grad is None for p in model.parameters()), "inference must not compute gradients"


@pytest.mark.points(2)
def test_postprocess_ranks_and_keeps_label_order_on_ties(impl):
    handler = impl.Handler(make_model(), LABELS, input_size=IN, top_k=3)
    probs = torch.tensor([[0.1, 0.3, 0.1, 0.3, 0.2], [0.2, 0.2, 0.2, 0.2, 0.2], [0.05, 0.05, 0.1, 0.0, 0.8]])
    got = handler.postprocess(probs)
    want = [["dog", "owl", "yak"], ["cat", "dog", "fox"], ["yak", "fox", "cat"]]
    for i, (g, w) in enumerate(zip(got, want)):
        labels = [p["label"] for p in g["predictions"]]
        assert labels == w, f"row {i} {probs[i].tolist()}: labels {labels}, expected {w} (ties keep label order)"
        assert all(type(p["probability"]) is float for p in g["predictions"]), "probabilities must be Python floats"
        assert [p["probability"] for p in g["predictions"]] == [probs[i, LABELS.index(lbl)].item() for lbl in w]


@pytest.mark.points(1)
def test_a_model_with_equal_logits_ranks_in_label_order(impl):
    # 24 labels as well as 5: a sort that is not stable keeps short runs of ties in order but
    # reorders long ones (torch.sort(stable=False) on the CPU does from 17 values on).
    for labels, top_k in ((LABELS, 4), ([f"class{i}" for i in range(24)], 24)):
        model = nn.Linear(IN, len(labels))
        with torch.no_grad():
            model.weight.zero_()
            model.bias.zero_()
        got = impl.Handler(model, labels, input_size=IN, top_k=top_k).handle([{"input": [1, 2, 3, 4]}])
        ranked = [p["label"] for p in got[0]["predictions"]]
        assert ranked == labels[:top_k], (
            f"{len(labels)} labels, all equally probable, top_k={top_k}: ranked {ranked}, expected the "
            "labels in their order (ties keep label order)")


# -- batching and eval mode -----------------------------------------------------------------------

@pytest.mark.points(2)
@pytest.mark.parametrize("n_valid, n_malformed", [(3, 2), (0, 2), (0, 0)])
def test_model_runs_once_on_all_valid_requests_or_not_at_all(impl, n_valid, n_malformed):
    model = make_model(7)
    handler = impl.Handler(model, LABELS, input_size=IN)
    calls = []
    model.register_forward_hook(lambda m, args, out: calls.append(tuple(args[0].shape)))
    requests = [{"input": x} for x in valid_inputs(n_valid, 7)] + [MALFORMED["no-input"]] * n_malformed
    got = handler.handle(requests)
    want_calls = [(n_valid, IN)] if n_valid else []
    assert calls == want_calls, (f"{n_valid} valid and {n_malformed} malformed requests: the model ran on "
                                 f"batches of shapes {calls}, expected {want_calls}")
    assert len(got) == n_valid + n_malformed, f"{len(got)} answers for {n_valid + n_malformed} requests"


@pytest.mark.points(2)
def test_answers_are_deterministic_in_eval_mode_even_after_train(impl):
    model = make_model(8, dropout=0.9)
    handler = impl.Handler(model, LABELS, input_size=IN, top_k=5)
    inputs = valid_inputs(1, 8)  # one request: batch norm in training mode would fail or differ
    first = handler.handle([{"input": inputs[0]}])
    second = handler.handle([{"input": inputs[0]}])
    assert first == second, "two identical requests gave different answers (dropout on?)"
    check_answer(first[0], expected(model, inputs, 5)[0], "with dropout 0.9 and batch norm")
    assert not model.training, "handle put the model back in training mode"
