"""Kit-wide pytest configuration. The plugin itself lives in grader/pytest_plugin.py."""

# Wrong solutions and the bundled example are modules under test, never test files.
collect_ignore_glob = ["solutions/*/*/wrong/*", "examples/*", ".venv/*", "bench/*"]
