"""grader.notebook_runtime: the runner that notebook test cells call, exercised in-process."""

from __future__ import annotations

import pytest

from grader.notebook_runtime import TestModule, answer_namespace

TESTS = '''
import os
import sys
import warnings

import pytest
from hypothesis import given, strategies as st


def double(x):  # a test helper named like nothing in the answer, kept out of its namespace
    return 2 * x


def test_add(impl):
    assert impl.add(2, 3) == 5, "add(2, 3) should be 5"


@given(x=st.integers(-5, 5))
def test_add_zero(impl, x):
    assert impl.add(x, 0) == x, f"add({x}, 0) should be {x}"


@pytest.mark.parametrize("a,b", [(1, 1), pytest.param(2, 3, id="two-three")])
@pytest.mark.parametrize("scale", [1, 10])
def test_parametrized(impl, a, b, scale):
    assert impl.add(a * scale, b * scale) == (a + b) * scale


def test_fixtures(impl, monkeypatch, tmp_path):
    monkeypatch.setenv("DRILLS_NOTEBOOK_PROBE", "1")
    assert os.environ["DRILLS_NOTEBOOK_PROBE"] == "1" and tmp_path.is_dir()


EVENTS = []


@pytest.fixture
def recorded(impl, tmp_path):
    EVENTS.append(("setup", impl.add(1, 1), tmp_path.is_dir()))
    yield "value"
    EVENTS.append(("teardown",))


def test_module_fixture(recorded):
    EVENTS.append(("test", recorded))


def test_noisy(impl):
    warnings.warn("careful")
    print("on stderr", file=sys.stderr)
    os.write(2, b"on fd 2\\n")
'''


def add(a, b):
    return a + b


def test_passing_tests_print_and_return_none(capsys):
    tests = TestModule("demo.demo.add", "public", TESTS)
    ns = {"add": add}
    assert tests.run("test_add", ns) is None
    tests.run("test_add_zero", ns)
    tests.run("test_parametrized", ns, params={"a": 1, "b": 1, "scale": 1})
    assert "passed: test_add\n" in capsys.readouterr().out


def test_parametrized_case_is_chosen_by_index():
    calls = []

    def recording_add(a, b):
        calls.append((a, b))
        return a + b

    TestModule("demo.demo.add", "public", TESTS).run(
        "test_parametrized", {"add": recording_add}, params={"a": 1, "b": 1, "scale": 1})
    assert calls == [(20, 30)]


def test_failure_raises_assertion_error_with_the_message():
    with pytest.raises(AssertionError, match=r"add\(2, 3\) should be 5") as info:
        TestModule("demo.demo.add", "hidden", TESTS).run("test_add", {"add": lambda a, b: a - b})
    assert "assert " not in str(info.value)  # the failing expression is not shown


def test_not_started_and_errors_are_named():
    def stub(a, b):
        raise NotImplementedError

    tests = TestModule("demo.demo.add", "public", TESTS)
    with pytest.raises(AssertionError, match="not started"):
        tests.run("test_add", {"add": stub})
    with pytest.raises(AssertionError, match="TypeError"):
        tests.run("test_add", {"add": lambda a: a})


def test_fixtures_are_provided_and_undone():
    import os

    TestModule("demo.demo.add", "public", TESTS).run("test_fixtures", {"add": add})
    assert "DRILLS_NOTEBOOK_PROBE" not in os.environ


def test_fixtures_of_the_test_module_run_with_their_teardown():
    tests = TestModule("demo.demo.add", "public", TESTS)
    tests.run("test_module_fixture", {"add": add})
    assert tests.module.EVENTS == [("setup", 2, True), ("test", "value"), ("teardown",)]


def test_warnings_and_stderr_go_to_stdout(capfd):
    TestModule("demo.demo.add", "public", TESTS).run("test_noisy", {"add": add})
    out, err = capfd.readouterr()
    assert err == ""
    assert "careful" in out and "on stderr" in out and "on fd 2" in out


def test_timeout_fails_the_test():
    def slow(a, b):
        while True:
            pass

    with pytest.raises(AssertionError, match="Timeout"):
        TestModule("demo.demo.add", "public", TESTS).run("test_add", {"add": slow}, timeout=0.5)


def test_answer_namespace_leaves_out_notebook_and_test_objects():
    tests = TestModule("demo.demo.add", "public", TESTS)
    module = answer_namespace({"add": add, "_helper": add, "In": [], "_": 1, "_i3": "",
                               "__name__": "__main__", "public_tests": tests})
    assert module.add is add and module._helper is add  # the learner's private helpers stay
    assert module.__name__ == "notebook_answer"
    assert not any(hasattr(module, n) for n in ("In", "_", "_i3", "public_tests"))
    assert not hasattr(module, "double")


FACTORY_TESTS = '''
import pytest


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return [tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("out")]


def test_factory_makes_fresh_folders(impl, folders, tmp_path_factory):
    assert folders[0].is_dir() and folders[1].is_dir() and folders[0] != folders[1]
    assert folders[0].parent == tmp_path_factory.getbasetemp()
    assert tmp_path_factory.mktemp("named", numbered=False).name == "named"
'''


def test_tmp_path_factory_is_provided_to_tests_and_module_fixtures():
    TestModule("demo.demo.add", "hidden", FACTORY_TESTS).run("test_factory_makes_fresh_folders", {"add": add})
