"""Similarity to the reference, and of submissions to each other (winnowing): renamed or
reformatted copies are caught, independent work and the stub are not."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from grader import catalog
from grader.engine import similarity
from grader.engine.scoring import ExerciseResult, Report

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
REFERENCE = EX.reference.read_text()

# Correct, but written the other way round: broadcast differences instead of the expansion.
INDEPENDENT = '''
import torch


def pairwise_sq_dists(a, b):
    """Mine."""
    for name, t in (("a", a), ("b", b)):
        if t.ndim < 2:
            raise ValueError(f"{name} needs at least two dims")
    if b.size(-1) != a.size(-1):
        raise ValueError("b: feature size differs from a")
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    return diff.pow(2).sum(dim=-1)


def batched_affine(x, weight, bias):
    if weight.ndim != 2 or weight.size(1) != x.size(-1):
        raise ValueError("weight does not fit x")
    if bias.ndim != 1 or bias.numel() != weight.size(0):
        raise ValueError("bias does not fit weight")
    return torch.nn.functional.linear(x, weight, bias)
'''


def _disguise(source: str) -> str:
    """The reference with its local names renamed, comments added and layout changed."""
    for old, new in (("a_sq", "left_norms"), ("b_sq", "right_norms"), ("weight", "w"), ("bias", "b0")):
        source = source.replace(old, new)
    return source.replace("\n    return", "\n    # my own idea\n\n    return").replace(", ", ",  ")


def test_a_disguised_copy_is_a_near_copy():
    assert similarity.ratio(_disguise(REFERENCE), REFERENCE) >= 0.99


def test_docstrings_comments_and_blank_lines_do_not_count():
    bare = 'def f(x):\n    return x + 1\n'
    dressed = '"""Module doc."""\n\n\ndef f(x):\n    """Adds one."""\n    # comment\n\n    return x + 1\n'
    assert similarity.normalized_tokens(bare) == similarity.normalized_tokens(dressed)


def test_independent_work_and_the_stub_are_not_flagged():
    assert similarity.ratio(INDEPENDENT, REFERENCE) < similarity.NEAR_COPY_THRESHOLD
    assert similarity.ratio(EX.stub.read_text(), REFERENCE) < similarity.NEAR_COPY_THRESHOLD


def test_untokenizable_source_has_no_ratio():
    assert similarity.ratio("def f(:\n    (((", REFERENCE) is None


def test_to_reference_and_flag_a_report(tmp_path):
    other = catalog.get_exercise("pytorch.tensors.from_data")
    mine, missing = similarity.to_reference(EX, _disguise(REFERENCE)), similarity.to_reference(other, None)
    assert mine.near_copy and mine.ratio >= 0.99
    assert missing.ratio is None and missing.note == "no module submitted"
    assert similarity.to_reference(EX, "def f(:\n").note == "does not tokenize"
    report = SimpleNamespace(submission=str(tmp_path), flags=[],
                             exercises=[SimpleNamespace(id=EX.id, code=_disguise(REFERENCE), similarity=None),
                                        SimpleNamespace(id=other.id, code=None, similarity=None)])
    similarity.flag_near_copies(report)
    assert len(report.flags) == 1 and "near copy of the reference solution" in report.flags[0]
    assert report.flags[0].startswith(EX.id)


def test_to_reference_gives_the_ratio_of_each_module_alone():
    """The reference's matcher is kept between comparisons: each one still measures its own
    module, in any order."""
    sources = [_disguise(REFERENCE), INDEPENDENT, EX.stub.read_text(), _disguise(REFERENCE)]
    assert [similarity.to_reference(EX, s).ratio for s in sources] == \
        [round(similarity.ratio(s, REFERENCE), 3) for s in sources]


def test_similarity_comes_from_the_code_kept_in_the_report_not_from_a_path(tmp_path):
    """A notebook's or a zip's staged copy is gone when the report is rendered: the code the
    report kept is what counts."""
    report = Report(str(tmp_path / "gone.zip"), 0, 1, [ExerciseResult(EX.id, code=REFERENCE)], 1.0)
    similarity.flag_near_copies(report)
    assert report.exercises[0].similarity["near_copy"] is True
    assert report.flags and report.flags[0].startswith(EX.id)


def test_tiny_modules_are_never_flagged():
    tiny = similarity.Similarity("x", 1.0, tokens=similarity.MIN_TOKENS - 1)
    assert not tiny.near_copy


# --- Submissions compared with each other ----------------------------------------------------

# A second independent solution, in its own words (einsum; whether it is fully correct is beside the
# point here: only its likeness to the others is measured).
INDEPENDENT_TOO = '''
import torch


def pairwise_sq_dists(a, b):
    if min(a.dim(), b.dim()) < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError("expected (..., N, D) and (..., M, D) with the same D")
    norms_a = torch.einsum("...nd,...nd->...n", a, a)[..., :, None]
    norms_b = torch.einsum("...md,...md->...m", b, b)[..., None, :]
    cross = torch.einsum("...nd,...md->...nm", a, b)
    out = norms_a + norms_b - 2.0 * cross
    return torch.clamp(out, min=0.0)


def batched_affine(x, weight, bias):
    out_features, in_features = weight.shape if weight.dim() == 2 else (None, None)
    if in_features != x.shape[-1]:
        raise ValueError(f"weight {tuple(weight.shape)} does not fit x {tuple(x.shape)}")
    if tuple(bias.shape) != (out_features,):
        raise ValueError(f"bias {tuple(bias.shape)} does not fit weight {tuple(weight.shape)}")
    return torch.matmul(x, weight.transpose(0, 1)) + bias
'''
STUB = EX.stub.read_text()


def _pairs(code_by_name: dict[str, str | None], **kwargs) -> list[similarity.Pair]:
    return similarity.near_copy_pairs({name: {EX.id: code} for name, code in code_by_name.items()}, **kwargs)


def test_six_identical_submissions_are_flagged_pairwise():
    pairs = _pairs({f"cand{i}": INDEPENDENT for i in range(6)})
    assert {(p.first, p.second) for p in pairs} == {(f"cand{i}", f"cand{j}") for i in range(6) for j in range(i + 1, 6)}
    assert all(p.similarity == 1.0 and p.exercise == EX.id for p in pairs)


def test_renamed_and_reformatted_copies_are_flagged():
    pairs = _pairs({"ann": REFERENCE, "bob": _disguise(REFERENCE)})
    assert [(p.first, p.second) for p in pairs] == [("ann", "bob")] and pairs[0].similarity >= 0.99


def test_independent_solutions_the_stub_and_missing_modules_are_not_flagged():
    assert _pairs({"ann": REFERENCE, "bob": INDEPENDENT, "cy": INDEPENDENT_TOO}) == []
    assert _pairs({f"stub{i}": STUB for i in range(4)}) == []  # what everyone got is no copy
    assert _pairs({"ann": INDEPENDENT, "bob": None, "cy": "def f(:\n"}) == []


def test_the_stubs_fingerprints_never_count():
    """Two submissions that share only the stub's text beside their own independent code."""
    mine = STUB.split("def ", 1)[0] + INDEPENDENT
    theirs = STUB.split("def ", 1)[0] + INDEPENDENT_TOO
    assert _pairs({"ann": mine, "bob": theirs}) == []
    common = similarity.fingerprints(STUB)
    assert common and not (common & (similarity.fingerprints(INDEPENDENT) - common))


def test_identifiers_and_literals_are_one_symbol_each():
    assert similarity.fingerprint_tokens("total = count + 1  # note\n") == \
        similarity.fingerprint_tokens("s = n + 'x'\n") == ["I", "=", "I", "+", "L", "NEWLINE"]


@pytest.mark.parametrize("threshold", [1.0, 0.5, 1e-9])
def test_thresholds_in_range_are_accepted(threshold):
    assert similarity.check_threshold(threshold) == threshold
    assert _pairs({"a": INDEPENDENT, "b": INDEPENDENT}, threshold=threshold)


@pytest.mark.parametrize("threshold", [0, 0.0, -0.1, 1.0001, math.nan, math.inf, True, "0.8"])
def test_thresholds_out_of_range_are_rejected(threshold):
    with pytest.raises(ValueError, match="above 0 and at most 1"):
        similarity.near_copy_pairs({}, threshold)


def test_containment_catches_a_copy_with_additions():
    padded = INDEPENDENT + "\n\ndef helper(x):\n    return [v * 2 for v in x if v]\n"
    assert _pairs({"ann": INDEPENDENT, "bob": padded})
