# The kit's two everyday jobs, each from a fresh clone:
#   make example   create .venv, install the kit, grade the bundled example submission
#   make test      create .venv, install the kit, run the kit's own test suite
VENV ?= .venv
PYTHON ?= python3
# The CPU wheel; a machine with its own (e.g. CUDA) torch can pass TORCH_SPEC='torch>=2.4'.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: setup bytecode example test lint clean

setup: $(VENV)/.installed

# The kit's own package compiled, as pip compiles the packages it installs: every grading child,
# fork server and CLI run imports it, and where PYTHONDONTWRITEBYTECODE is set (CI's machines) no
# process would ever write its bytecode, so each compiled it again (0.2 s of CPU a process).
bytecode: setup
	$(BIN)/python -m compileall -q grader

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: an unpinned install could pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

example: bytecode
	$(BIN)/grader score examples/submission

# One worker per core; a test file's tests stay together (its module-scoped fixtures, such as the
# adversarial corpus's batch, run once).
test: bytecode
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=25

lint: setup
	$(BIN)/ruff check grader tests bench

clean:
	rm -rf $(VENV) *.egg-info
