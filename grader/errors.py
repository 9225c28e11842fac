"""The errors a user can fix: each says what is wrong in words for people, and the ``grader``
command reports every one the same way, once (``grader: error: ...``, exit status 2, no
traceback). Each is a ``ValueError`` too, as the kit's errors always were.
"""

from __future__ import annotations


class GraderError(ValueError):
    """An input the grader cannot work with; its message names it and says what to do."""


class UsageError(GraderError):
    """An option or argument is unusable; reported before any work starts."""


class CatalogError(GraderError):
    """The catalog file is malformed, or an exercise id is unknown."""


class SubmissionError(GraderError):
    """The submission cannot be graded at all (missing, not a folder or zip, an empty zip)."""


class BatchError(GraderError):
    """The batch cannot start (the submissions folder is missing or not a folder)."""


class StubError(GraderError):
    """No pristine stub can be found, or the target folder is unusable."""


class ReleaseError(GraderError):
    """The selection is empty or does not fit, the output folder is in use, or a leak was found."""


class ExportError(GraderError):
    """An exercise cannot be turned into a notebook (a test needs an unsupported fixture)."""
