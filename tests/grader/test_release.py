"""grader release: a take-home bundle with stubs and public tests only, that runs on its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from grader import catalog
from grader.cli import main
from grader.workflows import release
from tests.helpers import make_submission

EX = catalog.get_exercise("pytorch.tensors.broadcasting")


def test_minutes_pick_is_deterministic_fits_and_takes_topics_in_turn():
    chosen = release.choose(minutes=60)
    assert chosen == release.choose(minutes=60)
    assert sum(ex.minutes for ex in chosen) <= 60
    assert len({ex.topic for ex in chosen}) >= 3  # round-robin, not one topic first
    order = list(catalog.load_catalog())
    assert [ex.id for ex in chosen] == sorted((ex.id for ex in chosen), key=order.index)


def test_requested_topics_are_covered_or_refused():
    chosen = release.choose(topics=["autograd", "pytorch.optim"], minutes=45)
    assert {ex.topic for ex in chosen} == {"autograd", "optim"}
    assert sum(ex.minutes for ex in chosen) <= 45
    cheapest = min(ex.minutes for ex in catalog.load_catalog().values() if ex.topic == "autograd")
    with pytest.raises(release.ReleaseError, match="fits"):
        release.choose(topics=["autograd"], minutes=cheapest - 1)
    with pytest.raises(release.ReleaseError, match="more than --minutes"):
        release.choose([EX.id], minutes=EX.minutes - 1)
    assert release.choose(patterns=["pytorch.tensors.b*"]) == [EX]


def _texts_of_solutions() -> list[str]:
    return [p.read_text().strip() for p in sorted((catalog.KIT_ROOT / "solutions").rglob("*.py"))
            if p.read_text().strip()]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "take-home"
    assert main(["release", str(out), "--exercise", EX.id, "--minutes", "30"]) == 0
    return out


def test_bundle_layout_readme_and_catalog(bundle):
    assert (bundle / "exercises" / EX.relpath).read_text() == EX.stub.read_text()
    assert (bundle / "exercises" / EX.relpath).with_name("test_broadcasting.py").is_file()
    assert (bundle / "grader" / "pytest_plugin.py").is_file()
    assert (bundle / "grader" / "_stubs" / EX.relpath).read_text() == EX.stub.read_text()
    entries = tomllib.loads((bundle / "catalog.toml").read_text())["exercise"]
    assert [e["id"] for e in entries] == [EX.id]
    project = tomllib.loads((bundle / "pyproject.toml").read_text())
    assert project["project"]["entry-points"] == {
        "pytest11": {"grader": "grader.pytest_plugin"},
        "hypothesis": {"grader": "grader.feedback:on_hypothesis_import"}}  # the learner's profile
    # No torch requirement: `pip install -e .` would take PyPI's CUDA build; install.py picks.
    assert not [d for d in project["project"]["dependencies"] if d.startswith("torch")]
    assert project["project"]["requires-python"] == ">=3.11"
    readme = (bundle / "README.md").read_text()
    assert EX.title in readme and "about 30 minutes" in readme
    assert "pip install -e ." in readme and "zipfile -c submission.zip exercises" in readme


def test_bundle_leaks_no_solution(bundle):
    secrets = _texts_of_solutions()
    assert secrets
    for path in bundle.rglob("*"):
        assert path.name not in ("solutions", "wrong"), path
        assert not path.name.endswith("_hidden.py"), path
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not any(secret in text for secret in secrets), path
    assert release.audit(bundle) == []


def test_audit_catches_a_leak(tmp_path):
    make_submission(tmp_path / "exercises", {EX: EX.reference})
    (tmp_path / "test_broadcasting_hidden.py").write_text(EX.hidden_tests.read_text())
    problems = "\n".join(release.audit(tmp_path))
    assert "hidden test file" in problems and "contains the text" in problems
    assert "not an untouched stub" in problems


def test_release_refuses_a_folder_in_use(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["release", str(tmp_path), "--exercise", EX.id]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def _pytest_in(bundle, *args):
    # The bundle's own grader package must be the one that runs: its folder comes first.
    env = {k: v for k, v in os.environ.items() if k != "DRILLS_KIT_ROOT"}
    env.update(PYTHONPATH=str(bundle), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], cwd=bundle, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def test_public_tests_run_inside_the_bundle(bundle):
    where = _pytest_in(bundle, "-c", "import grader; print(grader.__file__)")
    assert where.stdout.strip().startswith(str(bundle)), where.stdout + where.stderr
    stub_run = _pytest_in(bundle, "-m", "pytest")
    assert stub_run.returncode == 1, stub_run.stdout[-3000:] + stub_run.stderr[-3000:]
    assert f"{'not started':<18}  {EX.id}" in stub_run.stdout and "0/1 exercises done" in stub_run.stdout
    # "--impl-root=DIR" as one token: split in two, pytest takes DIR for a test path when it
    # looks for the rootdir, and runs the kit's tests instead of the bundle's.
    solved = _pytest_in(bundle, "-m", "pytest", f"--impl-root={catalog.KIT_ROOT / 'solutions'}")
    # Public tests alone are not done; a bundle has no hidden tests, so the summary says where they run.
    assert solved.returncode == 0 and "0/1 exercises done; 1 pass their tests here" in solved.stdout, \
        solved.stdout[-3000:]
    assert "the hidden tests run when your work is graded" in solved.stdout


PLATFORMS = {  # what packaging's markers see on each machine
    "linux-x86_64": {"sys_platform": "linux", "platform_machine": "x86_64"},
    "linux-aarch64": {"sys_platform": "linux", "platform_machine": "aarch64"},
    "macos-arm64": {"sys_platform": "darwin", "platform_machine": "arm64"},
    "windows": {"sys_platform": "win32", "platform_machine": "AMD64"},
}


def test_bundle_requires_the_extras_its_exercises_name(tmp_path):
    """onnx_export's tests import onnx and onnxruntime: its bundle installs the kit's onnx extra."""
    ex = catalog.get_exercise("pytorch.deploy.onnx_export")
    bundle = release.write_bundle(tmp_path / "onnx", [ex])
    dependencies = tomllib.loads((bundle / "pyproject.toml").read_text())["project"]["dependencies"]
    kit_extra = tomllib.loads((catalog.KIT_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["onnx"]
    assert set(kit_extra) <= set(dependencies), dependencies


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_tensorflow_requirements_pick_one_installable_wheel_per_platform(platform, tmp_path):
    """tensorflow-cpu has no macOS arm64 wheel: there (and on Linux aarch64) the bundle and the
    kit's own `tensorflow` extra ask for `tensorflow`; one TensorFlow requirement per machine."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    ex = catalog.get_exercise("tensorflow.basics.tensors_and_variables")
    bundle = release.write_bundle(tmp_path / "tf", [ex])
    project = tomllib.loads((bundle / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
    kit_extra = tomllib.loads((catalog.KIT_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["tensorflow"]
    env = dict(default_environment(), **PLATFORMS[platform])
    for requirements in (project["dependencies"], kit_extra):
        chosen = [Requirement(r) for r in requirements]
        chosen = {r.name for r in chosen if r.marker is None or r.marker.evaluate(env)}
        tensorflow = chosen & {"tensorflow", "tensorflow-cpu"}
        expected = "tensorflow-cpu" if platform in ("linux-x86_64", "windows") else "tensorflow"
        assert tensorflow == {expected}, requirements


def test_an_exercises_extras_are_installed_by_the_bundle_and_the_autograder(tmp_path):
    """tensorboard_logging declares the `tensorboard` extra: a take-home and a Gradescope
    autograder of it install that extra's requirements; other exercises' do not."""
    import zipfile

    from grader.workflows import gradescope

    ex = catalog.get_exercise("pytorch.training.tensorboard_logging")
    assert ex.extras == ("tensorboard",)
    kit_extra = tomllib.loads((catalog.KIT_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["tensorboard"]
    bundle = release.write_bundle(tmp_path / "tb", [ex])
    deps = tomllib.loads((bundle / "pyproject.toml").read_text())["project"]["dependencies"]
    assert set(kit_extra) <= set(deps)
    other = release.write_bundle(tmp_path / "plain", [catalog.get_exercise("pytorch.tensors.broadcasting")])
    assert not set(kit_extra) & set(tomllib.loads((other / "pyproject.toml").read_text())["project"]["dependencies"])
    gradescope.build(tmp_path / "ag.zip", [ex.id])
    with zipfile.ZipFile(tmp_path / "ag.zip") as archive:
        assert "kit[tensorboard]" in archive.read("setup.sh").decode()
