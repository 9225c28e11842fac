"""Framework-free failure messages shared by ``grader.checks`` and ``grader.tfchecks``, so a
learner reads the same wording whichever framework the exercise uses."""

from __future__ import annotations


def fmt(value: float) -> str:
    return f"{value:.6g}"


def shape_mismatch(name: str, got: tuple, expected: tuple) -> str:
    return f"{name}: shape {tuple(got)}, expected {tuple(expected)}"


def value_mismatch(name: str, *, count: int, total: int, rtol: float, atol: float,
                   index: tuple[int, ...], got: complex, expected: complex) -> str:
    """How many values differ, the tolerance, and the largest error with its index."""
    where = f" at index {index}" if index else ""
    return (f"{name}: {count} of {total} values differ (rtol={rtol:g}, atol={atol:g}); "
            f"largest error{where}: got {fmt(got)}, expected {fmt(expected)}")
