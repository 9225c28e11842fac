"""No folder or module of the kit can shadow an installed package, whatever the import mode."""

import importlib.metadata
import json

from grader.catalog import KIT_ROOT
from tests.helpers import run_python

TREES = ("exercises", "solutions", "examples")


def test_no_init_files_make_exercise_folders_packages():
    # Without __init__.py a folder is at most a namespace package, which never wins over an
    # installed regular package such as tensorflow or torch.
    found = [str(p.relative_to(KIT_ROOT)) for t in TREES for p in (KIT_ROOT / t).rglob("__init__.py")]
    assert found == []


def test_no_module_is_named_like_an_installed_package():
    installed = set(importlib.metadata.packages_distributions())
    clashes = [str(p.relative_to(KIT_ROOT)) for t in TREES for p in (KIT_ROOT / t).rglob("*.py")
               if p.stem in installed]
    assert clashes == []


def test_real_packages_win_even_with_every_kit_folder_on_sys_path():
    folders = [str(d) for t in TREES for d in [KIT_ROOT / t, *(KIT_ROOT / t).rglob("*")]
               if d.is_dir()] + [str(KIT_ROOT)]
    probe = (
        "import sys, json, importlib.util\n"
        f"sys.path[:0] = {folders!r}\n"
        "out = {}\n"
        "for name in ('torch', 'numpy', 'pytest', 'hypothesis', 'tensorflow', 'keras'):\n"
        "    spec = importlib.util.find_spec(name)\n"
        "    out[name] = None if spec is None else (spec.origin or str(list(spec.submodule_search_locations)))\n"
        "print(json.dumps(out))\n"
    )
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stderr
    origins = json.loads(result.stdout)
    for name, origin in origins.items():
        if name in ("tensorflow", "keras") and origin and origin.startswith("["):
            # Not installed here: a kit folder may be found, but only as a namespace package,
            # which any installed package beats.
            continue
        assert origin is None or str(KIT_ROOT / "exercises") not in origin, (name, origin)
        assert origin is None or str(KIT_ROOT / "solutions") not in origin, (name, origin)


def test_a_pytorch_only_learner_run_never_imports_tensorflow():
    probe = (
        "import sys, pytest\n"
        "code = pytest.main(['-q', '-p', 'no:cacheprovider', '--impl-root', 'solutions',\n"
        "                    'exercises/pytorch/tensors/test_broadcasting.py'])\n"
        "print('TF_IMPORTED' if 'tensorflow' in sys.modules else 'TF_NOT_IMPORTED', int(code))\n"
    )
    result = run_python("-c", probe)
    assert "TF_NOT_IMPORTED 0" in result.stdout, result.stdout[-2000:] + result.stderr[-2000:]


def test_the_grader_cli_imports_no_framework():
    probe = ("import sys, grader.cli, grader.engine.scoring, grader.pytest_plugin, grader.reports.formats\n"
             "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))\n")
    result = run_python("-c", probe)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
