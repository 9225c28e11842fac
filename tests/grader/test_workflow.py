"""The GitHub Actions workflow (.github/workflows/grade.yml): it parses, and every grader, pytest
and pip command it runs exists in this kit."""

from __future__ import annotations

import shlex
import tomllib

import pytest

from grader.catalog import KIT_ROOT
from grader.cli import build_parser

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read the workflow")

WORKFLOW = KIT_ROOT / ".github" / "workflows" / "grade.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _commands(job: dict) -> list[list[str]]:
    """Each shell command of the job's ``run`` steps, split like the shell would."""
    commands = []
    for step in job["steps"]:
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(shlex.split(line))
    return commands


def test_triggers_and_jobs(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "push" in triggers and "pull_request" in triggers
    assert set(workflow["jobs"]) == {"public-tests", "grade"}
    assert workflow["permissions"] == {"contents": "read"}


def test_grader_commands_parse_with_the_real_cli(workflow):
    parser = build_parser()
    grader_commands = [argv for job in workflow["jobs"].values() for argv in _commands(job)
                       if argv[0] == "grader"]
    assert grader_commands
    for argv in grader_commands:
        try:
            args = parser.parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"the workflow runs an invalid grader command: {shlex.join(argv)}")
        if args.command == "score":
            assert (KIT_ROOT / args.submission).is_dir()


def test_grade_job_writes_junit_and_uploads_it(workflow):
    job = workflow["jobs"]["grade"]
    [score] = [build_parser().parse_args(argv[1:]) for argv in _commands(job) if argv[0] == "grader"]
    assert score.command == "score" and score.format == "junit"
    upload = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == score.output
    assert upload.get("if") == "always()"  # the report is uploaded even when grading fails


def test_public_tests_and_installs_are_real(workflow):
    extras = tomllib.loads((KIT_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for job in workflow["jobs"].values():
        commands = _commands(job)
        for argv in commands:
            if argv[:3] == ["python", "-m", "pytest"]:
                assert all((KIT_ROOT / p).exists() for p in argv[3:] if not p.startswith("-"))
            if argv[:4] == ["python", "-m", "pip", "install"] and "-e" in argv:
                spec = argv[argv.index("-e") + 1]
                assert spec.startswith(".[") and spec[2:-1] in extras
        assert any(a[:4] == ["python", "-m", "pip", "install"] and "torch==2.13.0" in a
                   for a in commands)
    public = _commands(workflow["jobs"]["public-tests"])
    assert ["python", "-m", "pytest", "exercises"] in public


def test_a_take_home_bundle_ships_a_public_tests_workflow(tmp_path):
    """The bundle's copy: it parses, installs with the bundle's own installer, and its grader
    command is valid; the summary it writes says only public tests ran (grader.reports.formats)."""
    from grader import catalog
    from grader.workflows import release

    bundle = release.write_bundle(tmp_path / "take-home", [catalog.get_exercise("pytorch.tensors.broadcasting")])
    flow = yaml.safe_load((bundle / ".github" / "workflows" / "grade.yml").read_text())
    commands = [argv for job in flow["jobs"].values() for argv in _commands(job)]
    assert ["python", "install.py"] in commands and (bundle / "install.py").is_file()
    [score] = [build_parser().parse_args(argv[1:]) for argv in commands if argv[0] == "grader"]
    assert score.command == "score" and (bundle / score.submission).is_dir()
    assert "Only the public tests run here" in (bundle / ".github" / "workflows" / "grade.yml").read_text()
