"""The random state that travels with each call and callback: torch's CPU generator's and that
of Python's ``random`` module, as one ``bytes`` value.

A test that seeds ``random`` and shuffles with it (a training loop's batch order) and a
submission that saves and restores ``random.getstate()`` (a checkpoint) then see one state, as
in one process. Each side keeps an ``Agreed``: the state both processes last had, so a request
sends the state only when it changed since, and reading it to find out costs no packing.
"""

from __future__ import annotations

import ctypes
import random
import struct
import sys

from grader.remote._wire import WireError

# Python's Mersenne Twister: 624 words and an index, then whether a gauss() value is pending
# and that value.
_PYTHON_STATE = struct.Struct("<625I?d")


def _torch_state() -> bytes:
    import torch

    return torch.get_rng_state().numpy().tobytes()


# CPython's RandomObject: the object header, then an int index and the 624 words.
_OFFSET, _RAW_SIZE = object.__basicsize__, 4 + 4 * 624


def _in_place_matches() -> bool:
    _, words, _ = random.getstate()
    raw = ctypes.string_at(id(random._inst) + _OFFSET, _RAW_SIZE)
    return raw == struct.pack("=i624I", words[624], *words[:624])


_IN_PLACE = sys.implementation.name == "cpython" and _in_place_matches()


def _python_fingerprint() -> bytes | tuple:
    """What tells whether Python's random state changed, cheaply: the bytes of the generator's
    index and words in CPython's ``RandomObject`` and the pending gauss() value, read in place
    (a fifth of ``random.getstate()``'s cost); ``random.getstate()`` itself where that layout
    is not the one this interpreter has."""
    inst = random._inst  # the generator behind the module's functions
    if _IN_PLACE:
        return ctypes.string_at(id(inst) + _OFFSET, _RAW_SIZE) + repr(inst.gauss_next).encode()
    return random.getstate()


class Agreed:
    """The random state both processes last had (one side's, sent to or taken from the other)."""

    def __init__(self) -> None:
        self._python: bytes | tuple | None = None  # its _python_fingerprint()
        self._torch: bytes | None = None

    def now(self) -> bytes:
        """This process's state, to send: both have it once the other takes it."""
        return self._agree(_python_fingerprint(), _torch_state())

    def change(self) -> bytes | None:
        """This process's state when it is not the agreed one (then as ``now``), else None."""
        python, torch_state = _python_fingerprint(), _torch_state()
        if python == self._python and torch_state == self._torch:
            return None
        return self._agree(python, torch_state)

    def _agree(self, python: bytes | tuple, torch_state: bytes) -> bytes:
        self._python, self._torch = python, torch_state
        _, words, gauss = random.getstate()
        pending = gauss is not None
        return _PYTHON_STATE.pack(*words, pending, gauss if pending else 0.0) + torch_state

    def take(self, value: bytes) -> None:
        """Take ``value`` (the other process's ``now``) as this process's state; ``WireError``
        for bytes that are not one."""
        import torch

        if type(value) is not bytes or len(value) <= _PYTHON_STATE.size:
            raise WireError("a random state that is not one")
        *words, pending, gauss = _PYTHON_STATE.unpack_from(value)
        torch_state = value[_PYTHON_STATE.size:]
        try:
            random.setstate((3, tuple(words), gauss if pending else None))
            torch.set_rng_state(torch.frombuffer(bytearray(torch_state), dtype=torch.uint8))
        except (ValueError, TypeError, RuntimeError) as exc:
            raise WireError(f"a random state that is not one ({exc})") from None
        self._python, self._torch = _python_fingerprint(), torch_state
