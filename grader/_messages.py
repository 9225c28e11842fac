"""Framework-free failure messages shared by ``grader.checks`` and ``grader.tfchecks``, so a
learner reads the same wording whichever framework the exercise uses."""

from __future__ import annotations


def shape_mismatch(name: str, got: tuple, expected: tuple) -> str:
    return f"{name}: shape {tuple(got)}, expected {tuple(expected)}"


def fmt_pair(got: complex, expected: complex) -> tuple[str, str]:
    """Both values with as few digits as tell them apart (6 up to 17), so a small error never
    reads as "got 4, expected 4"."""
    for digits in (6, 9, 12, 17):
        a, b = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if a != b:
            break
    return a, b


def value_mismatch(name: str, *, count: int, total: int, rtol: float, atol: float,
                   index: tuple[int, ...], got: complex, expected: complex) -> str:
    """How many values differ, the tolerance, and the largest error with its index."""
    where = f" at index {index}" if index else ""
    shown_got, shown_expected = fmt_pair(got, expected)
    return (f"{name}: {count} of {total} values differ (rtol={rtol:g}, atol={atol:g}); "
            f"largest error{where}: got {shown_got}, expected {shown_expected}")
