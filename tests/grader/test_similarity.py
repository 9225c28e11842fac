"""Similarity to the reference: renamed or reformatted copies are caught, independent work is not."""

from __future__ import annotations

from types import SimpleNamespace

from grader import catalog, similarity
from tests.helpers import make_submission

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


def test_compare_and_flag_a_report(tmp_path):
    other = catalog.get_exercise("pytorch.tensors.from_data")
    root = make_submission(tmp_path, {EX: _disguise(REFERENCE)})
    results = {r.id: r for r in similarity.compare(root, [EX, other])}
    assert results[EX.id].near_copy and results[EX.id].ratio >= 0.99
    assert results[other.id].ratio is None and results[other.id].note == "no module submitted"
    report = SimpleNamespace(submission=str(root), flags=[],
                             exercises=[SimpleNamespace(id=EX.id), SimpleNamespace(id=other.id)])
    similarity.flag_near_copies(report)
    assert len(report.flags) == 1 and "near copy of the reference solution" in report.flags[0]
    assert report.flags[0].startswith(EX.id)


def test_tiny_modules_are_never_flagged():
    tiny = similarity.Similarity("x", 1.0, tokens=similarity.MIN_TOKENS - 1)
    assert not tiny.near_copy
