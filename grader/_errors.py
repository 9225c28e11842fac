"""Assert that bad arguments are rejected with an error that names them.

Framework-free: re-exported by ``grader.checks`` and ``grader.tfchecks``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def assert_raises_naming(errors: type[BaseException] | tuple[type[BaseException], ...],
                         argname: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> BaseException:
    """``fn(*args, **kwargs)`` must raise one of ``errors`` with ``argname`` in its message, as a
    word of its own (``b`` is not named by "between").

    Returns the exception. The failure message says what happened instead (returned, or raised
    another type, or a message that does not name the argument).
    """
    errors = errors if isinstance(errors, tuple) else (errors,)
    wanted = " or ".join(e.__name__ for e in errors)
    call = f"{getattr(fn, '__name__', 'the call')}(...)"
    try:
        fn(*args, **kwargs)
    except errors as exc:
        if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(argname)}(?![A-Za-z0-9_])", str(exc), re.I):
            raise AssertionError(f"{call} raised {type(exc).__name__} as expected, but its message "
                                 f"should name {argname!r}: {exc!s:.200}") from None
        return exc
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{call} should raise {wanted} naming {argname!r}, but raised "
                             f"{type(exc).__name__}: {exc!s:.200}") from None
    raise AssertionError(f"{call} should raise {wanted} naming {argname!r} for a bad {argname}, "
                         "but it returned normally")
