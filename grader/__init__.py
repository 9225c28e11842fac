"""tensor-drills grader: load, test and score PyTorch and TensorFlow exercises.

Public surface:
- ``grader.catalog``: the exercises that exist (``load_catalog``, ``Exercise``).
- ``grader.checks``: assertion helpers and hypothesis strategies for exercise tests (imports torch).
- ``grader.engine.scoring``: run the tests of a submission in a child process and score them.
- the ``grader`` command (``grader.cli``) and the pytest plugin (``grader.pytest_plugin``).

Importing this package imports neither torch nor TensorFlow.
"""

from pathlib import Path

__version__ = "0.1.0"
PACKAGE_DIR = Path(__file__).resolve().parent  # this grader package, wherever it is installed
