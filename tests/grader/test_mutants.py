"""``grader mutants``: mutants of a reference, graded through the real grader."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader import catalog, cli
from grader.workflows import mutants
from tests.helpers import run_python

EX = catalog.get_exercise("pytorch.tensors.broadcasting")
BENCH = catalog.KIT_ROOT / "bench" / "mutants-full.json"  # every mutant, graded and reviewed (README: Mutation testing)
BENCH_SEED = 0

SOURCE = '''import torch


def f(x, y):
    """Doc."""
    with torch.no_grad():
        z = x.detach().sum(dim=-1, keepdim=True)
    y.add_(z)
    return torch.maximum(x, y)
'''


def _by_operator(source: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for m in mutants._tensor_mutants(EX, source):
        changed = [line[1:].strip() for line in m.diff.splitlines()[2:] if line.startswith("+")]
        found.setdefault(m.operator, []).extend(changed)
    return found


def test_tensor_operators_make_what_cosmic_ray_lacks():
    found = _by_operator(SOURCE)
    assert "z = x.sum(dim=-1, keepdim=True)" in found["drills/DropCall"]
    assert "z = x.detach().sum(dim=-1)" in found["drills/DropKeepdim"]
    assert 'with __import__("contextlib").nullcontext():' in found["drills/DropGradContext"]
    assert "return torch.maximum(y, x)" in found["drills/SwapArguments"]
    assert "pass" in found["drills/RemoveStatement"]  # y.add_(z) and the assignment


# Something for each of cosmic-ray's operators the kit uses, some of it nested and decorated.
EVERY_OPERATOR = '''import functools


@functools.lru_cache(maxsize=2)
@functools.wraps(print)
def f(a, b=3, *, c=-1.5):
    """Doc."""
    total = a + b - c * 2 / 4 ** 2 // 1
    for i in range(a):  # a comment
        if i < b and i <= c or not i > 0 and i >= -b:
            break
        elif a == b or a != c or a is None or b is not None:
            continue
        total += i if True else False
    while False:
        pass
    return [x * (x - 1) for x in (1, 2.5, 0x10)]
'''


def test_operators_occurrences_are_what_cosmic_rays_own_mutate_code_makes():
    # The kit finds each operator's occurrences in one walk and edits a copy of one node
    # (mutants._cosmic_ray_mutants); cosmic-ray parses and walks the module again for each.
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    expected = []
    for name in mutants.COSMIC_RAY_OPERATORS:
        occurrence = 0
        while (mutated := mutate_code(EVERY_OPERATOR, get_operator(name)(), occurrence)) is not None:
            occurrence += 1
            try:
                compile(mutated, "module.py", "exec")
            except SyntaxError:
                continue
            expected.append((name, mutated))
    found = [(m.operator, m.source) for m in mutants._cosmic_ray_mutants(EX, EVERY_OPERATOR)]
    assert {name for name, _ in expected} == set(mutants.COSMIC_RAY_OPERATORS)  # each one occurs
    assert found == expected


def test_every_mutant_compiles_differs_and_has_a_unique_stable_id():
    first, second = mutants.generate(EX), mutants.generate(EX)
    reference = EX.reference.read_text()
    assert first and [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == len(first)
    assert all(m.source != reference and m.diff.startswith("---") for m in first)
    assert {m.operator.split("/")[0] for m in first} >= {"core"}


def test_no_mutant_only_changes_message_text_or_which_parameters_go_by_keyword():
    # The learner neither writes the error messages' exact text nor the stub's signature.
    def same(reference: str, mutant: str) -> bool:
        return mutants._same_behaviour(mutants._Parsed(reference), mutants._Parsed(mutant))

    assert same('def f(a, *, b=1):\n    raise ValueError(f"{a} is 2")\n',
                'def f(a, /, b=1):\n    raise ValueError(f"{a} is 3")\n')
    assert not same("def f(a, *, b=1):\n    pass\n", "def f(a, *, b=2):\n    pass\n")
    assert not same("def f(a, b=1):\n    pass\n", "def f(a=1, b=None):\n    pass\n")
    # Decorators are part of their function; a statement more or less is another module.
    assert not same("@d(1)\ndef f():\n    pass\n", "@d(2)\ndef f():\n    pass\n")
    assert not same("x = 1\n", "x = 1\ny = 2\n")
    # Compound statements are compared block by block: an f-string deep inside is still text.
    nested = 'def f(a):\n    try:\n        if a:\n            raise ValueError(f"{a} is {1}")\n' \
             '    except KeyError:\n        pass\n'
    assert same(nested, nested.replace("{1}", "{2}"))
    assert not same(nested, nested.replace("KeyError", "IndexError"))
    assert not same(nested, nested.replace("if a:", "if not a:"))
    assert not same(nested, nested.replace("        pass\n", "        raise\n"))
    for m in mutants.generate(catalog.get_exercise("pytorch.tensors.numpy_bridge")):
        assert ", /," not in m.diff, m.diff  # from_numpy(a, *, share_memory=True) made positional


@pytest.mark.timeout(1800)
def test_sampled_mutation_check_over_the_catalog_finds_no_new_survivor(tmp_path, capsys):
    # The kit's CI check that no hidden suite's strength silently falls: one mutant of every
    # exercise, drawn with a fixed seed, graded through the real grader; the maintainers' run in
    # bench/ graded and reviewed every mutant, so any survivor but its GPU-only ones is new. The
    # command runs in this process, whose fork servers grade it (a process of its own started two,
    # 12 s of CPU); test_options_are_validated_before_any_work runs `python -m grader mutants`.
    out = tmp_path / "mutants.json"
    code = cli.main(["mutants", "--sample", "1", "--seed", str(BENCH_SEED), "--baseline", str(BENCH),
                     "--json", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.out[-5000:] + printed.err[-3000:]
    rows = json.loads(out.read_text())
    assert [row["exercise"] for row in rows] == list(catalog.load_catalog())
    assert all(len(r["killed"]) + len(r["timed_out"]) + len(r["survived"]) + len(r["equivalent"]) == 1
               for r in rows)
    # A reference edited since a review changes its mutants' ids: the old reasons no longer apply.
    # (The run generated every mutant of every exercise to draw its sample: the check costs nothing more.)
    stale = {r["exercise"]: r["stale"] for r in rows if r["stale"]}
    assert not stale, f"recorded equivalents no longer generated (fix the .mutants.toml files): {stale}"


def test_options_are_validated_before_any_work():
    result = run_python("-m", "grader", "mutants", EX.id, "--sample", "0")
    assert result.returncode == 2 and "--sample" in result.stderr and "out of range" in result.stderr
    result = run_python("-m", "grader", "mutants", "no.such.exercise")
    assert result.returncode == 2 and "unknown exercise id" in result.stderr
    result = run_python("-m", "grader", "mutants", EX.id, "--baseline", "no-such-file.json")
    assert result.returncode == 2 and "--baseline no-such-file.json: no such file" in result.stderr


def test_baseline_survivors_are_known_not_new(tmp_path):
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps([{"exercise": EX.id, "survived": ["core/NumberReplacer@1"]}]))
    row = mutants.ExerciseMutation(EX.id, survived=["core/NumberReplacer@1", "core/NumberReplacer@2"])
    row.known = [m for m in row.survived if m in mutants.read_baseline(baseline)[EX.id]]
    assert row.new_survivors == ["core/NumberReplacer@2"] and row.score == 0.0
    baseline.write_text('{"not": "rows"}')
    result = run_python("-m", "grader", "mutants", EX.id, "--baseline", str(baseline))
    assert result.returncode == 2 and "not the --json output" in result.stderr


def test_a_smaller_sample_is_part_of_a_larger_one_with_the_same_seed():
    generated = mutants.generate(catalog.get_exercise("pytorch.autograd.detach_and_no_grad"))
    for seed in range(5):
        small, large = mutants.choose(generated, 3, seed), mutants.choose(generated, 8, seed)
        assert len(small) == 3 and len(large) == 8 and set(small) <= set(large)
        assert large == [m for m in generated if m in large]  # in the reference's order
    assert mutants.choose(generated, None, 0) == generated == mutants.choose(generated, 10**6, 0)


def test_a_recorded_equivalent_the_reference_no_longer_yields_is_reported_stale(tmp_path, monkeypatch):
    # What the sampled check above reads for every exercise; budget 0: no mutant is graded.
    recorded = tmp_path / "broadcasting.mutants.toml"
    kept = mutants.generate(EX)[0].id
    recorded.write_text(f'[[equivalent]]\nmutant = "{kept}"\nreason = "reviewed"\n\n'
                        '[[equivalent]]\nmutant = "core/NumberReplacer@0000000000"\nreason = "an old review"\n')
    monkeypatch.setattr(mutants, "equivalents_file", lambda ex: recorded)
    with ThreadPoolExecutor(1) as pool:
        row = mutants._start_exercise(EX, tmp_path, pool, sample=1, seed=0, budget_s=0, wall_s=60, known=set(),
                                      on_mutant=None)()
    assert row.stale == ["core/NumberReplacer@0000000000"]
