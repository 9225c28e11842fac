"""Tests in one process, submitted code in another: a verdict submitted code cannot forge.

An exercise marked ``separate_process`` in ``catalog.toml`` is graded with its submission
imported only in its executor (``grader.remote._executor``), a process forked from a zygote that
was forked from the grading child before the child held its signing key. Each exercise has its
own executor, and a fresh one after a test overran or the process ended, so a hang costs the
tests after it nothing. The tests, the checks, hypothesis and the report
stay in the grading child, which sees the submission through ``RemoteObject``s and receives
only plain data (``grader.remote._wire``). Nothing submitted code does in the executor (patching
pytest, the checks or torch, tracing, returning a lying tensor subclass) reaches the process
that decides and signs the verdict. Checks that must look inside the executor (the op counts of
``count_aten_ops``) run there, and report what the executor says.
"""

from grader.remote._client import Executor, ExecutorFailed, Executors, RemoteObject, Zygote

__all__ = ["Executor", "ExecutorFailed", "Executors", "RemoteObject", "Zygote"]
