"""Tests in one process, submitted code in another: a verdict submitted code cannot forge.

An exercise marked ``separate_process`` in ``catalog.toml`` is graded with its submission
imported only in the executor (``grader.remote._executor``), a process forked from the grading
child before the child holds its signing key. The tests, the checks, hypothesis and the report
stay in the grading child, which sees the submission through ``RemoteObject``s and receives
only plain data (``grader.remote._wire``). Nothing submitted code does in the executor (patching
pytest, the checks or torch, tracing, returning a lying tensor subclass) reaches the process
that decides and signs the verdict. Checks that must look inside the executor (the op counts of
``count_aten_ops``) run there, and report what the executor says.
"""

from grader.remote._client import Executor, ExecutorFailed, RemoteObject

__all__ = ["Executor", "ExecutorFailed", "RemoteObject"]
