"""``check_gradients`` of a submission graded apart (``grader.remote``): a function of the test's
that only forwards its inputs to one call there has its finite-difference evaluations, and its
Jacobian's rows, made there in batches. Each test checks the same source both ways, imported
here and served by a real executor, and the two must agree: the verdict, the message, and the
calls the submission saw, in order."""

from __future__ import annotations

import textwrap
import types
from pathlib import Path

import pytest
import torch

from grader import _crossings
from grader.checks import check_gradients
from grader.remote import Executor, RemoteObject, Zygote

EXERCISE = "pytorch.losses.cross_entropy"  # any id: its module is the source below
SOURCE = textwrap.dedent('''
    import torch

    seen = []  # the value of x at each call, and each backward's grad, in order
    calls = 0

    def smooth(x, y, scale=1.0):
        seen.append(x.detach().clone())
        return torch.sin(x) * y * scale

    def mean_loss(x, target):
        seen.append(x.detach().clone())
        return ((x - target) ** 2).mean()

    def raises_at_the_ninth_call(x):
        global calls
        calls += 1
        if calls == 9:
            raise ValueError(f"call {calls} of a broken function")
        return x * x

    def changes_its_target(x, target):
        seen.append(x.detach().clone())
        out = (x * target.clone()).sum()
        target.mul_(1.0)  # in place: the calls after it are the test's own
        return out

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            seen.append(grad.clone())
            return 4 * x * grad  # twice the gradient

    def wrong_square(x):
        return Doubled.apply(x)

    class Drifting(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, grad):
            global calls
            calls += 1
            return grad * (3 + 1e-3 * calls)  # a backward that is not the same twice

    def drifting(x):
        return Drifting.apply(x)

    class BreaksLater(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            global calls
            calls += 1
            if calls == 3:
                raise ValueError(f"backward {calls} broke")
            return grad * 2

    def breaks_later(x):
        return BreaksLater.apply(x)
''')


@pytest.fixture()
def remote(tmp_path) -> RemoteObject:
    zygote = Zygote.start(close=[], threads=1)
    executor = Executor(zygote)
    path = tmp_path / Path(*EXERCISE.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text(SOURCE)
    yield executor.load(EXERCISE, tmp_path)
    executor.close()
    zygote.close()


@pytest.fixture()
def local() -> types.ModuleType:
    module = types.ModuleType("local_submission")
    exec(compile(SOURCE, "local_submission.py", "exec"), module.__dict__)  # noqa: S102 - the kit's own source
    return module


def _checked(module, check) -> tuple[str | None, int]:
    """(the check's failure, None when it passed; the requests it made of another process)."""
    with _crossings.watched() as watch:
        try:
            check(module)
        except (AssertionError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}", watch.requests
    return None, watch.requests


def _seen(module) -> list[torch.Tensor]:
    return list(module.seen)


def _data(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_a_forwarding_function_is_checked_in_a_few_requests_making_the_calls_one_process_makes(remote, local):
    x, y = _data(4, 5, seed=0), _data(4, 5, seed=1)

    def check(module):
        check_gradients(lambda a, b: module.smooth(a, b, scale=0.5), x, y,
                        reference=lambda a, b: torch.sin(a) * b * 0.5, name="smooth")

    here, _ = _checked(local, check)
    there, requests = _checked(remote, check)
    assert here is None and there is None
    # 80 points of finite differences and 20 rows of the Jacobian, twice: a request each
    # without batches; the batches leave the checks' own calls and products.
    assert requests <= 12
    assert len(_seen(remote)) == len(_seen(local)) > 80
    for k, (a, b) in enumerate(zip(_seen(remote), _seen(local), strict=True)):
        assert torch.equal(a, b), f"call {k} saw other values there"


def test_a_scalar_loss_is_checked_in_a_few_requests(remote, local):
    x, target = _data(6, 5, seed=2), _data(6, 5, seed=3)

    def check(module):
        check_gradients(lambda a: module.mean_loss(a, target), x, name="mean_loss")

    assert _checked(local, check)[0] is None
    there, requests = _checked(remote, check)
    assert there is None and requests <= 12
    assert [v.tolist() for v in _seen(remote)] == [v.tolist() for v in _seen(local)]


def test_a_wrong_gradient_fails_with_the_message_of_one_process(remote, local):
    x = _data(3, 4, seed=4)

    def check(module):
        check_gradients(lambda a: module.wrong_square(a), x, name="square")

    here, _ = _checked(local, check)
    there, _ = _checked(remote, check)
    assert here is not None and "finite differences give" in here
    assert there == here
    assert [v.tolist() for v in _seen(remote)] == [v.tolist() for v in _seen(local)]


def test_a_call_that_raises_at_a_point_raises_as_in_one_process(remote, local):
    def check(module):
        check_gradients(lambda a: module.raises_at_the_ninth_call(a), _data(3, 3, seed=5), name="f")

    here, _ = _checked(local, check)
    there, requests = _checked(remote, check)
    assert here == there == "ValueError: call 9 of a broken function"
    assert requests == 5  # the function read, two calls of the check's own, the first point, one batch


def test_a_call_that_changes_an_argument_in_place_leaves_the_calls_after_it_to_the_test(remote, local):
    x, target = _data(2, 3, seed=6), _data(2, 3, seed=7)

    def check(module):
        check_gradients(lambda a: module.changes_its_target(a, target), x, name="f")

    assert _checked(local, check)[0] is None
    there, requests = _checked(remote, check)
    assert there is None and requests > 12  # each point a call of its own
    assert [v.tolist() for v in _seen(remote)] == [v.tolist() for v in _seen(local)]


def test_a_backward_that_is_not_the_same_twice_fails_as_in_one_process(remote, local):
    def check(module):
        check_gradients(lambda a: module.drifting(a), _data(2, 2, seed=8), name="drifting")

    here, _ = _checked(local, check)
    assert here is not None
    assert _checked(remote, check)[0] == here


def test_a_function_that_makes_a_new_argument_at_each_call_is_called_at_each_point(remote, local):
    x = _data(2, 3, seed=9)

    def check(module):
        check_gradients(lambda a: module.smooth(a, torch.ones(2, 3, dtype=torch.float64)), x, name="f")

    assert _checked(local, check)[0] is None
    there, requests = _checked(remote, check)
    assert there is None and requests > 12
    assert [v.tolist() for v in _seen(remote)] == [v.tolist() for v in _seen(local)]


def test_a_backward_that_raises_at_a_row_raises_as_in_one_process(remote, local):
    def check(module):
        check_gradients(lambda a: module.breaks_later(a), _data(2, 3, seed=10), name="f")

    here, _ = _checked(local, check)
    there, requests = _checked(remote, check)
    assert here == there == "ValueError: backward 3 broke"
    assert requests <= 6  # the rows asked for at once, the third raising there
