"""The check library: each helper catches what it claims and says so readably."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

from grader.checks import (
    AtenCall,
    GradientSpy,
    HeldTensor,
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    broadcastable_batch_shapes,
    check_gradients,
    count_aten_ops,
    device_params,
    nested_containers,
    read_tensorboard,
    record_aten_ops,
    record_calls,
    shapes,
    summary_writer,
    tensors,
    tensors_held_by,
)


def test_every_exported_name_resolves_and_no_other():
    """Some exports load when first asked for (``grader._lazy``): each one does, once."""
    import grader.checks

    assert [name for name in grader.checks.__all__ if not hasattr(grader.checks, name)] == []
    assert grader.checks.tensors is grader.checks.tensors
    with pytest.raises(AttributeError, match="has no attribute 'tensor'"):
        grader.checks.tensor  # noqa: B018 - the attribute access is what is tested


def test_assert_close_names_the_largest_error_and_where():
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 0.5
    with pytest.raises(AssertionError, match=r"f\(x\): 1 of 6 values differ .* at index \(1, 2\): "
                                             r"got 0.5, expected 0"):
        assert_close(actual, expected, name="f(x)")


@pytest.mark.parametrize("actual, message", [
    (torch.zeros(2, 2), r"shape \(2, 2\), expected \(2, 3\)"),
    (torch.zeros(2, 3, dtype=torch.float64), "dtype torch.float64, expected torch.float32"),
    ([0.0], "expected a torch.Tensor, got list"),
    (torch.full((2, 3), float("nan")), "6 of 6 values differ"),
])
def test_assert_close_checks_type_shape_dtype_and_nan(actual, message):
    with pytest.raises(AssertionError, match=message):
        assert_close(actual, torch.zeros(2, 3))


def test_assert_close_accepts_within_tolerance_and_skips_meta_values():
    assert_close(torch.ones(3) + 1e-7, torch.ones(3))
    assert_close(torch.empty(3, device="meta"), torch.empty(3, device="meta"))


def test_shape_and_device_helpers():
    assert_shape(torch.zeros(1, 2), (1, 2))
    with pytest.raises(AssertionError, match="on device meta, expected cpu"):
        assert_device(torch.zeros(1, device="meta"), "cpu")


class _WrongSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x  # should be 2 * x


def test_check_gradients_passes_correct_and_names_the_wrong_element():
    check_gradients(lambda x: x.sin() * x, torch.randn(3), name="ok")
    with pytest.raises(AssertionError, match="wrong_square: gradient of output 0 element 1 with "
                                             "respect to input 0 element 1 is 2, but finite differences give 4"):
        check_gradients(_WrongSquare.apply, torch.tensor([1.5, 2.0]), name="wrong_square")


def test_check_gradients_explains_a_detached_output():
    with pytest.raises(AssertionError, match="does not require grad"):
        check_gradients(lambda x: x.detach() * 2, torch.randn(3), name="detached")


def test_check_gradients_second_order():
    check_gradients(lambda x: (x ** 3).sum(), torch.randn(3), second_order=True)


def test_count_aten_ops_sees_python_loops():
    def looped(x):
        return torch.stack([row * 2 for row in x])

    _, small = count_aten_ops(looped, torch.randn(2, 3))
    _, large = count_aten_ops(looped, torch.randn(20, 3))
    assert sum(large.values()) > sum(small.values())
    _, ops = count_aten_ops(torch.mul, torch.randn(20, 3), 2)
    assert sum(ops.values()) == 1


def test_record_aten_ops_names_each_op_with_its_tensors_dtypes():
    a, b = torch.randn(2, 3, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, low = record_aten_ops(torch.matmul, a.float(), b.float())
    _, plain = record_aten_ops(torch.matmul, a, b)
    assert AtenCall("mm", (torch.bfloat16, torch.bfloat16)) in low
    assert plain == [AtenCall("mm", (torch.float64, torch.float64))]


def test_record_calls_knows_a_watched_function_however_it_was_reached():
    from torch.nn.utils import clip_grad_norm_ as renamed

    p = torch.ones(3, requires_grad=True)
    p.grad = torch.ones(3)
    watched = ["torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad._get_total_norm",
               "torch.optim.sgd.*"]
    _, called = record_calls(watched, lambda: renamed([p], 1.0))
    assert called == ["torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad._get_total_norm"]
    _, called = record_calls(watched, lambda: torch.optim.SGD([p], lr=0.1).step())
    assert called and all(name.startswith("torch.optim.sgd.") for name in called)
    _, called = record_calls(watched, torch.mul, p, 2)
    assert called == []
    with pytest.raises(TypeError, match="watched"):
        record_calls(["clip_grad_norm_"], torch.mul, p, 2)


def test_tensors_held_by_walks_attributes_and_containers_but_not_modules_it_reaches():
    class Holder:
        def __init__(self):
            self.model = torch.nn.Linear(4, 4)  # reached, not owned
            self.kind = torch.nn.Linear  # a class: not walked
            self.copies = {"w": [torch.zeros(4, 4)], "pair": (torch.ones(()), 3.0)}
            self.graph = torch.ones(2, requires_grad=True) * 2

    held = tensors_held_by(Holder())
    assert sorted(held) == sorted([HeldTensor((4, 4), torch.float32, False), HeldTensor((), torch.float32, False),
                                   HeldTensor((2,), torch.float32, True)])
    assert sorted(t.numel for t in held) == [1, 2, 16]
    assert len(tensors_held_by(torch.nn.Linear(2, 2))) == 2  # a module asked about is walked


def test_assert_raises_naming_reports_what_happened():
    def no_check(x):
        return x

    def wrong_type(x):
        raise TypeError("bad")

    def unnamed(x):
        raise ValueError("bad value")

    def good(x):
        raise ValueError("x must be positive")

    assert_raises_naming(ValueError, "x", good, 1)
    with pytest.raises(AssertionError, match="returned normally"):
        assert_raises_naming(ValueError, "x", no_check, 1)
    with pytest.raises(AssertionError, match="but raised TypeError"):
        assert_raises_naming(ValueError, "x", wrong_type, 1)
    with pytest.raises(AssertionError, match="should name 'size'"):
        assert_raises_naming(ValueError, "size", unnamed, 1)


def test_device_params_marks_cuda():
    params = device_params(meta=True)
    assert [p.id for p in params] == ["cpu", "meta", "cuda"]
    assert any(m.name == "cuda" for m in params[2].marks)


@settings(max_examples=20)
@given(shape=shapes(min_dims=1, max_dims=3), batch=broadcastable_batch_shapes(3))
def test_shape_strategies_are_valid(shape, batch):
    assert all(s >= 1 for s in shape)
    torch.broadcast_shapes(*batch)


@settings(max_examples=20)
@given(t=tensors(shapes(max_dims=2), dtype=torch.float32), nested=nested_containers(tensors((2,))))
def test_tensor_strategies(t, nested):
    assert t.dtype == torch.float32 and torch.isfinite(t).all()


def test_a_small_mismatch_is_shown_with_the_digits_that_tell_it_apart():
    with pytest.raises(AssertionError, match=r"got 4\.0000001, expected 4\b"):
        assert_close(torch.tensor([4.0000001], dtype=torch.float64),
                     torch.tensor([4.0], dtype=torch.float64), rtol=1e-12, atol=0, name="x")


def test_a_tensor_subclass_cannot_vouch_for_its_own_values():
    class Lying(torch.Tensor):
        @property
        def is_meta(self):
            return True

    wrong = torch.zeros(3).as_subclass(Lying)
    with pytest.raises(AssertionError, match="plain torch.Tensor, got the subclass Lying"):
        assert_close(wrong, torch.ones(3))
    assert_close(torch.nn.Parameter(torch.ones(3)), torch.ones(3))


def test_a_finite_value_where_infinity_is_expected_differs():
    with pytest.raises(AssertionError, match="1 of 2 values differ"):
        assert_close(torch.tensor([0.0, 1.0]), torch.tensor([float("inf"), 1.0]))
    assert_close(torch.tensor([float("-inf")]), torch.tensor([float("-inf")]))


def test_an_argument_is_named_as_a_word_of_its_own():
    def bad(b):
        raise ValueError("shapes differ between the inputs")

    with pytest.raises(AssertionError, match="should name 'b'"):
        assert_raises_naming(ValueError, "b", bad, 1)
    assert_raises_naming(ValueError, "b", lambda b: (_ for _ in ()).throw(ValueError("b: bad")), 1)


@pytest.mark.parametrize("zeroing", ["optimizer", "model", "set_to_none", "after_step", "never"])
def test_gradient_spy_sees_steps_on_old_gradients_however_they_are_zeroed(zeroing):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with GradientSpy(optimizer) as spy:
        for _ in range(3):
            if zeroing == "optimizer":
                optimizer.zero_grad(set_to_none=False)
            elif zeroing == "model":
                model.zero_grad()
            elif zeroing == "set_to_none":
                for p in model.parameters():
                    p.grad = None
            model(torch.randn(4, 3)).pow(2).sum().backward()
            optimizer.step()
            if zeroing == "after_step":
                optimizer.zero_grad()
    assert spy.steps == 3
    assert spy.stale_steps == ([1, 2] if zeroing == "never" else [])
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()  # after the spy closed: its hooks are gone
    assert spy.steps == 3


def test_gradient_spy_adds_up_backward_passes_since_the_last_step():
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with GradientSpy(optimizer) as spy:
        optimizer.zero_grad()
        for _ in range(2):  # gradient accumulation over two micro-batches is one honest step
            model(torch.randn(2, 3)).sum().backward()
        optimizer.step()
    assert spy.steps == 1 and not spy.stale_steps


def test_tensorboard_events_read_back(tmp_path):
    pytest.importorskip("tensorboard")
    writer = summary_writer(tmp_path)
    writer.add_scalar("loss", 0.5, global_step=3)
    writer.add_histogram("w", torch.tensor([1.0, 2.0, 4.0]), global_step=1)
    writer.close()
    events = read_tensorboard(tmp_path)
    assert events.scalars == {"loss": [(3, 0.5)]}
    (step, hist), = events.histograms["w"]
    assert step == 1 and (hist.num, hist.min, hist.max, hist.sum) == (3, 1.0, 4.0, 7.0)


# ----------------------------------------------------------------------------- Ranks

RANKS_MODULE = '''
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def double_(rank, t):
    t.mul_(2)
    return rank


def summed_(t):
    dist.all_reduce(t)


def hangs_on_rank_1(rank):
    while rank == 1:
        time.sleep(0.1)
    return rank


def raises(rank):
    raise ValueError(f"bad input on rank {rank}")


def stub(rank):
    raise NotImplementedError


def others_holding_the_group_after_ddp():
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    model(torch.ones(1, 2)).sum().backward()
    group = dist.group.WORLD
    dist.destroy_process_group()
    del model  # DDP's Reducer lets go of the group here
    return sys.getrefcount(group) - 2  # not counting this function's name and getrefcount's argument
'''


@pytest.fixture(scope="module")
def ranks_module(tmp_path_factory):
    """A module loaded from a file the way the ``impl`` fixture loads one."""
    import importlib.util
    import sys

    path = tmp_path_factory.mktemp("ranks") / "ranks_module.py"
    path.write_text(RANKS_MODULE)
    spec = importlib.util.spec_from_file_location("_drills_test_ranks_module", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def ranks():
    from grader.checks import Ranks

    with Ranks(2) as processes:
        yield processes


@pytest.mark.timeout(300)
def test_ranks_return_each_rank_s_result_and_arguments(ranks, ranks_module):
    results = ranks.run(ranks_module.double_, lambda rank, init: ((rank, torch.full((2,), float(rank + 1))), {}))
    assert [r.returned for r in results] == [0, 1]
    assert [r.args[1].tolist() for r in results] == [[2.0, 2.0], [4.0, 4.0]]
    summed = ranks.run(ranks_module.summed_, lambda rank, init: ((torch.full((2,), float(rank + 1)),), {}),
                       process_group=True)
    assert [r.args[0].tolist() for r in summed] == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.timeout(300)
def test_ranks_report_a_rank_s_exception_with_its_lines(ranks, ranks_module):
    from grader.checks import RankFailed

    with pytest.raises(RankFailed) as failed:
        ranks.run(ranks_module.raises, lambda rank, init: ((rank,), {}))
    assert failed.value.raised == "ValueError"
    assert "raised ValueError: bad input on rank" in str(failed.value)
    assert "ranks_module.py, line 26, in raises" in str(failed.value)


@pytest.mark.timeout(300)
def test_ranks_stop_a_hung_rank_within_the_job_s_time(ranks, ranks_module):
    import time

    from grader.checks import RankFailed

    ranks.run(ranks_module.double_, lambda rank, init: ((rank, torch.ones(1)), {}))  # started, warm
    procs = list(ranks._procs)
    start = time.monotonic()
    with pytest.raises(RankFailed, match=r"rank 1 of 2 had not finished 3 s after the job started") as failed:
        ranks.run(ranks_module.hangs_on_rank_1, lambda rank, init: ((rank,), {}), timeout_s=3)
    assert failed.value.raised is None and failed.value.rank == 1
    assert time.monotonic() - start < 20
    assert not any(p.is_alive() for p in procs), "a rank outlived its failed job"


@pytest.mark.timeout(300)
def test_ranks_hold_the_job_s_process_group_until_the_job_is_over(ranks, ranks_module):
    # Were DDP's Reducer the last holder, the group's destructor would run under the GIL when the
    # DDP module is freed and could deadlock with a gloo worker thread (see ``_keep_process_groups``).
    results = ranks.run(ranks_module.others_holding_the_group_after_ddp, lambda rank, init: ((), {}),
                        process_group=True)
    assert [r.returned for r in results] == [1, 1]


@pytest.mark.timeout(300)
def test_ranks_raise_an_untouched_stub_from_its_own_line(ranks, ranks_module):
    import traceback

    with pytest.raises(NotImplementedError) as raised:
        ranks.run(ranks_module.stub, lambda rank, init: ((rank,), {}))
    last = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert (last.filename, last.lineno, last.line) == (ranks_module.__file__, 30, "raise NotImplementedError")


def test_load_batches_is_one_epoch_of_a_data_loader_here_for_a_dataset_of_this_process():
    from torch.utils.data import DataLoader, TensorDataset

    from grader.checks import load_batches

    data = TensorDataset(torch.arange(10.0))
    batches = load_batches(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1))
    expected = list(DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(1)))
    assert len(batches) == len(expected) == 3
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batches, expected, strict=True))


def test_where_the_submission_lives_runs_here_for_a_module_of_this_process_and_names_its_functions(tmp_path):
    import types

    from grader.checks import where_the_submission_lives

    impl = types.ModuleType("impl")  # a submission imported by the tests' own process
    linear, x = torch.nn.Linear(2, 2), torch.randn(3, 2)
    scripted = where_the_submission_lives(impl, "torch.jit.script", linear)
    assert isinstance(scripted, torch.jit.ScriptModule)
    torch.jit.save(scripted, tmp_path / "m.pt")
    loaded = where_the_submission_lives(impl, "torch.jit.load", tmp_path / "m.pt")
    torch.testing.assert_close(loaded(x), linear(x))
    with pytest.raises(ValueError, match="name must be one of torch.jit.load"):
        where_the_submission_lives(impl, "torch.load", tmp_path / "m.pt")
