"""The random state that travels with each call and callback: torch's CPU generator's and that
of Python's ``random`` module, as one ``bytes`` value both sides compare and take.

A test that seeds ``random`` and shuffles with it (a training loop's batch order) and a
submission that saves and restores ``random.getstate()`` (a checkpoint) then see one state, as
in one process.
"""

from __future__ import annotations

import random
import struct

from grader.remote._wire import WireError

# Python's Mersenne Twister: 624 words and an index, then whether a gauss() value is pending
# and that value.
_PYTHON_STATE = struct.Struct("<625I?d")


def state() -> bytes:
    """This process's random state."""
    import torch

    _, words, gauss = random.getstate()
    pending = gauss is not None
    return _PYTHON_STATE.pack(*words, pending, gauss if pending else 0.0) + torch.get_rng_state().numpy().tobytes()


def set_state(value: bytes) -> None:
    """Take ``value`` (another process's ``state()``) as this process's random state;
    ``WireError`` for bytes that are not one."""
    import torch

    if type(value) is not bytes or len(value) <= _PYTHON_STATE.size:
        raise WireError("a random state that is not one")
    *words, pending, gauss = _PYTHON_STATE.unpack_from(value)
    try:
        random.setstate((3, tuple(words), gauss if pending else None))
        torch.set_rng_state(torch.frombuffer(bytearray(value[_PYTHON_STATE.size:]), dtype=torch.uint8))
    except (ValueError, TypeError, RuntimeError) as exc:
        raise WireError(f"a random state that is not one ({exc})") from None
