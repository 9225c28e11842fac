"""The static scan: each way of reaching the grader's internals that issue 11's red team used is
flagged for review, written plainly or obfuscated, and ordinary solution code is not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from grader.engine.scan import scan_source

FLAGGED = {
    "settrace, imported by name": "from sys import settrace\nsettrace(None)\n",
    "threading.settrace": "import threading as t\nt.settrace(print)\n",
    "setitimer": "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\n",
    "vars(sys)": "import os\nns = vars(os.sys)\n",
    "__closure__": "def f(g):\n    return g.__closure__[0].cell_contents\n",
    "__code__ swap": "def f(a, b):\n    a.__code__ = b.__code__\n",
    "__globals__": "def f(g):\n    g.__globals__['x'] = 1\n",
    "getattr with a literal dunder": "def f(g):\n    return getattr(g, '__code__')\n",
    "dunder built by +": "def f(g):\n    return getattr(g, '__co' + 'de__')\n",
    "dunder built by an f-string": "def f(g, n):\n    name = f'__{n}__'\n    return name\n",
    "dunder built by join": "def f(g):\n    n = ''.join(['__', 'closure', '__'])\n    return n\n",
    "setattr with a computed name": "def f(g, n):\n    setattr(g, n.upper(), 1)\n",
    "dispatch-mode internals": "from torch.utils._python_dispatch import _disable_current_modes\n",
    "a tensor type intercepting ops": "import torch\nclass T(torch.Tensor):\n    @classmethod\n"
                                      "    def __torch_function__(cls, f, t, a=(), k=None):\n        return 0\n",
    "object.__getattribute__": "def f(g):\n    return object.__getattribute__(g, 'x')\n",
}

CLEAN = '''
import math
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, act: str = "ReLU"):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.act = getattr(nn, act)()

    def forward(self, x):
        name = f"{type(self).__name__}_{x.shape[0]}"
        return self.act(self.fc(x)) * math.sqrt(2), name
'''


@pytest.mark.parametrize("source", FLAGGED.values(), ids=FLAGGED.keys())
def test_obfuscated_access_is_flagged(source):
    assert scan_source(textwrap.dedent(source), "m.py"), "not flagged"


def test_ordinary_solution_code_is_not_flagged():
    assert scan_source(CLEAN, "m.py") == []


def test_modules_parse_in_many_threads_at_once():
    """CPython 3.11 builds an AST with a depth counter its threads share: a thread switch inside
    one parse (a garbage collection running Python callbacks, as hypothesis registers) made another
    parse fail with "SystemError: AST constructor recursion depth mismatch" in a two-job batch.
    The kit's parses take turns (``grader._source.parse``)."""
    import gc
    import threading

    from grader._source import parse

    source = Path(__file__).read_text(encoding="utf-8")
    errors: list[BaseException] = []

    def parse_often() -> None:
        try:
            for _ in range(25):
                parse(source)
        except SystemError as exc:
            errors.append(exc)

    def busy_callback(phase, info) -> None:
        sum(range(200))  # Python code inside a collection: where threads switch

    threshold = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    gc.callbacks.append(busy_callback)
    try:
        threads = [threading.Thread(target=parse_often) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.callbacks.remove(busy_callback)
        gc.set_threshold(*threshold)
    assert not errors, errors
