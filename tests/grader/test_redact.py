"""grader.engine.redact: what of the hidden tests' source a report's message may carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.engine.redact import DUMP_REMOVED, MAX_MESSAGE_CHARS, REDACTED, redact

HIDDEN = '''\
import torch
from grader.checks import assert_close, assert_raises_naming


def test_pairwise_distances_match_brute_force():
    expected = torch.cdist(a, b).square()
    assert_close(impl.pairwise_sq_dists(a, b), expected)


def test_default_dtype_is_respected():
    assert out.dtype == torch.float64, "after torch.set_default_dtype(torch.float64)"
'''
OTHER = '''\
def test_other_exercise():
    reference_value = secret_reference_of_the_other_exercise(x)
'''
PUBLIC = '''\
from grader.checks import assert_close, assert_raises_naming
'''


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in {"hidden": HIDDEN, "other": OTHER, "public": PUBLIC}.items():
        paths[name] = tmp_path / f"test_{name}.py"
        paths[name].write_text(text)
    return paths


def test_a_hidden_line_is_cut_and_the_rest_kept(files):
    message = "AssertionError at expected = torch.cdist(a, b).square() (values differ)"
    assert redact(message, [files["hidden"]]) == f"AssertionError at {REDACTED} (values differ)"


def test_every_hidden_file_is_searched(files):
    message = "reference_value = secret_reference_of_the_other_exercise(x)"
    assert redact(message, [files["hidden"], files["other"]]) == REDACTED


def test_lines_the_public_tests_hold_too_are_kept(files):
    message = "from grader.checks import assert_close, assert_raises_naming"
    assert redact(message, [files["hidden"]], [files["public"]]) == message
    assert redact(message, [files["hidden"]]) == REDACTED


def test_short_lines_are_not_a_leak(files):
    assert redact("import torch", [files["hidden"]]) == "import torch"


def test_a_line_the_tests_quote_is_cut_only_where_it_stands_alone(files):
    line = 'assert out.dtype == torch.float64, "after torch.set_default_dtype(torch.float64)"'
    quoted = "after torch.set_default_dtype(torch.float64)"
    assert redact(f"wrong dtype {quoted}: float32", [files["hidden"]]) == f"wrong dtype {quoted}: float32"
    assert redact(f"wrong dtype\n{line}", [files["hidden"]]) == f"wrong dtype\n{REDACTED}"


def test_three_distinct_lines_replace_the_message_whole(files):
    dump = HIDDEN.split("\n\n\n")[1]  # one test: its def line and two body lines
    assert redact(f"leaked:\n{dump}\ntail", [files["hidden"]]) == DUMP_REMOVED
    two = "\n".join(dump.splitlines()[:2])
    assert redact(two, [files["hidden"]]) == f"{REDACTED}\n    {REDACTED}"


def test_a_line_is_cut_whole_before_a_shorter_line_inside_it(files):
    message = "def test_pairwise_distances_match_brute_force():"
    assert redact(message, [files["hidden"], files["other"]]) == REDACTED


def test_messages_are_bounded_and_a_flood_is_searched_only_where_it_is_shown(files):
    line = "expected = torch.cdist(a, b).square()"
    out = redact(f"{line} " + "x" * 10_000_000 + line, [files["hidden"]])
    assert len(out) <= MAX_MESSAGE_CHARS and out.startswith(REDACTED) and line not in out
    assert out.endswith("[message shortened]")


def test_the_kits_own_frames_in_a_traced_calls_trace_are_cut(files):
    import grader

    kit = Path(grader.__file__).resolve().parent
    trace = (
        "ValueError in user code:\n\n"
        '    File "/home/student/exercise.py", line 6, in f  *\n'
        "        return layer(t)\n"
        f'    File "{kit}/remote/_keras.py", line 512, in __call__  **\n'
        '        return self._of_variables("_layer", args, kwargs)\n'
        f'    File "{kit}/remote/_callbacks.py", line 464, in call\n'
        f'    File "{kit}/remote/_tfgraph.py", line 118, in called\n'
        "        description, _ = caller._finish(message, out)\n\n"
        "    ValueError: in user code:\n"
        f'        File "{kit}/remote/_tfgraph.py", line 232, in call  *\n'
        "            return fn(*args, **kwargs)\n"
        '        File "/site-packages/keras/src/layers/input_spec.py", line 239, in check\n'
        "            raise ValueError(\n"
        "        ValueError: expected axis -1 of input shape to have value 3")
    message = redact(trace, [files["hidden"]])
    assert str(kit) not in message and "_of_variables" not in message and "caller._finish" not in message
    assert message == (
        "ValueError in user code:\n\n"
        '    File "/home/student/exercise.py", line 6, in f  *\n'
        "        return layer(t)\n\n"
        "    ValueError: in user code:\n"
        '        File "/site-packages/keras/src/layers/input_spec.py", line 239, in check\n'
        "            raise ValueError(\n"
        "        ValueError: expected axis -1 of input shape to have value 3")
