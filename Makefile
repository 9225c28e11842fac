# The kit's two everyday jobs, each from a fresh clone:
#   make example   create .venv, install the kit, grade the bundled example submission
#   make test      create .venv, install the kit, run the kit's own test suite
VENV ?= .venv
PYTHON ?= python3
# The CPU wheel; a machine with its own (e.g. CUDA) torch can pass TORCH_SPEC='torch>=2.4'.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin

.PHONY: setup example test lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: an unpinned install could pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@

example: setup
	$(BIN)/grader score examples/submission

# One worker per core; a test file's tests stay together (its module-scoped fixtures, such as the
# adversarial corpus's batch, run once).
test: setup
	$(BIN)/python -m pytest -n auto --dist loadfile --durations=25

lint: setup
	$(BIN)/ruff check grader tests bench

clean:
	rm -rf $(VENV) *.egg-info
