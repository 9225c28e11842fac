"""What the grader does for people, one module per job: score, batch (local or Dask), verify, status,
watch, stubs (hint, reset, attempts), take-home release, notebooks, nbgrader export, Gradescope,
mutants and the contract tables. Built on the engine and the reports; never on the CLI."""
