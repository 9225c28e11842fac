"""grader.remote: a real executor process, forked as the grading child forks it, serving a real
module; the codec's refusals on frames a hostile executor could send."""

from __future__ import annotations

import collections
import copy
import ctypes
import dataclasses
import gc
import os
import pickle
import random
import signal
import textwrap
import threading
import time
import weakref
from pathlib import Path

import pytest
import torch

from grader._loader import ImplementationError, MissingImplementation, StubRaised
from grader._timelimit import TestTimeout, time_limit
from grader.remote import Executor, ExecutorFailed, Executors, RemoteObject, Zygote, _patches
from grader.remote import _wire as wire
from grader.remote._callbacks import class_of_tests

EXERCISE = "pytorch.losses.cross_entropy"  # any id: its module is the helper below
MODULE = textwrap.dedent('''
    import collections
    import contextlib
    import dataclasses
    import gc
    import io
    import os
    import random
    import time
    import types
    import torch

    class Mistake(ValueError):
        pass

    class Liar(torch.Tensor):
        @property
        def is_meta(self):
            return True

    class Box:
        def __init__(self, value):
            self.value = value

        def double(self):
            return self.value * 2

    calls = 0

    def square(x):
        return x * x

    def same(x):
        return x

    def add_one_in_place(x):
        x.add_(1)

    def backward_inside(x):
        (x * x).sum().backward()

    def backward_with_graph(model, x):
        model(x).pow(2).sum().backward(create_graph=True)

    def two_steps(model, x):
        model(x).sum().backward()
        model(x).mean().backward()

    def step_after(fn, opt):
        fn()
        opt.step()

    def loss_through(loss_fn, x):
        loss = loss_fn(x * 2)
        loss.backward()
        return loss.item()

    def draws(n):
        return torch.randn(n)

    def python_draws(n):
        return [random.random() for _ in range(n)]

    def restores_the_random_state(draw):
        saved = random.getstate(), torch.get_rng_state()
        draw()
        random.setstate(saved[0])
        torch.set_rng_state(saved[1])

    def rebuilt(obj):
        if dataclasses.is_dataclass(obj):
            return dataclasses.replace(obj)
        return type(obj)(*obj)

    def type_name(obj):
        return type(obj).__name__

    def gc_enabled():
        return gc.isenabled()

    def call_through(fn, *args):
        return fn(*args)

    def exit_status_of_a_child(status):
        import signal
        import subprocess
        import sys
        code = subprocess.run([sys.executable, "-c", f"raise SystemExit({status})"]).returncode
        return code, signal.getsignal(signal.SIGCHLD) is signal.SIG_DFL

    def own_pid():
        return os.getpid()

    class Windows(torch.utils.data.Dataset):
        def __init__(self, n):
            self.data = torch.arange(float(n))

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            if not -len(self.data) <= i < len(self.data):
                raise IndexError(i)
            return self.data[i].clone(), os.getpid()

    def is_a_function(f):
        return isinstance(f, types.FunctionType)

    def reversed_copy(d):
        return type(d).__name__, collections.OrderedDict(reversed(list(d.items())))

    def cuda_available():
        return torch.cuda.is_available()

    def environment(name):
        return os.environ.get(name)

    def parameter_count(optimizer):
        return sum(p.numel() for group in optimizer.param_groups for p in group["params"])

    def default_dtype():
        return torch.get_default_dtype()

    def in_autocast(device="cpu"):
        return torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)

    def matmul(a, b):
        return a @ b

    def sgd(params, lr):
        return torch.optim.SGD(params, lr=lr, momentum=0.5)

    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2 if ctx.needs_input_grad[0] else None

    def twice(x):
        return Twice.apply(x)

    @contextlib.contextmanager
    def recording(model):
        seen = {}
        handle = model.register_forward_hook(lambda m, a, o: seen.__setitem__("out", o.detach().clone()))
        try:
            yield seen
        finally:
            handle.remove()

    class Swallows:
        def __enter__(self):
            return self

        def __exit__(self, kind, exc, traceback):
            self.seen = None if exc is None else type(exc).__name__
            return True

    STORE = {"n": 0}

    def kept_dict():
        return STORE

    def bump():
        STORE["n"] += 1

    def keep_doubled(x):
        STORE["doubled"] = x * 2

    def fresh_dict():
        return {"n": 0}

    def holding_the_kept():
        return {"kept": STORE}

    def clamp_hooks(model, bound):
        return [p.register_hook(lambda g: g.clamp(-bound, bound)) for p in model.parameters()]

    def clear_forward_hooks(model):
        model._forward_hooks.clear()

    def write_to(sink, value):
        sink.write(value)

    def value_of(obj):
        return obj.value

    def set_attribute(obj, name, value):
        setattr(obj, name, value)

    def append_to_first(obj, name, value):
        getattr(obj, name)[0].append(value)

    def step_then_clear_through_data(params, lr):
        for p in params:
            p.data -= lr * p.grad
            p.grad.data.zero_()

    def value_of_named(obj, name):
        return object.__getattribute__(obj, "_attribute")(name)

    WATCHED = {}

    def watch(model, name):
        part = dict(model.named_modules())[name]
        part.register_forward_hook(lambda m, a, o: WATCHED.__setitem__(name, o.detach()))
        return WATCHED

    from torch.nn.utils import clip_grad_norm_ as bound_before

    def clipped(params, max_norm):
        return bound_before(params, max_norm)

    def scaled_step(model, opt, scaler, x):
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)
        scaler.update()

    def checkpointed(blocks, x):
        from torch.utils.checkpoint import checkpoint

        for block in blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x

    class Keeper:
        def __init__(self):
            self.kept = []
            self.model = torch.nn.Linear(30, 30)  # a module it reaches: not what it holds

        def keep(self, x):
            self.kept.append({"x": x})

    class Slices:
        def __init__(self, series):
            self.series = series

        def window(self, start, clone=False):
            x = self.series[start:start + 2]
            return x.clone() if clone else x

        def reach(self, start, length):
            return self.series.as_strided((length,), (1,), start)

    def grad_enabled():
        return torch.is_grad_enabled()

    def detached(x):
        return (x * 2).detach()

    def mixed(x):
        return {"y": (x.sum(), [x * 3, 7]), "n": torch.arange(3), "s": "text", "f": float("nan")}

    def lying(x):
        return (x * 0 + 5).as_subclass(Liar)

    def raise_mistake():
        raise Mistake("m is wrong")

    def stub():
        raise NotImplementedError

    def exit_now():
        raise SystemExit(3)

    def die():
        os._exit(7)

    def sleep(s):
        time.sleep(s)

    def counted(x):
        return x + 1

    def takes_iterable(values):
        return [v * 2 for v in values]

    def long_error():
        raise ValueError(("where it was made" + chr(10)) * 5000 + "decay must be in [0, 1]")

    def sets_of(values):
        return set(values), frozenset(values), {v: 0 for v in values}.keys()

    def train(model, optimizer, x, y):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    def manual_sgd_all(model, lr):
        for p in model.parameters():
            p.data -= lr * (p.grad if p.grad is not None else 0)

    def manual_sgd(model, lr):
        for p in model.parameters():
            p.data -= lr * p.grad

    def output_sum(model, x):
        return model(x).sum()

    def to_eval(model):
        model.eval()
        return model

    def replace_head(model):
        model[0] = torch.nn.Linear(3, 2)

    def scale_grads(params, factor):
        params = list(params)
        for p in params:
            p.grad.mul_(factor)
        return type(params[0].grad).__name__

    def kind_of(values):
        return type(values).__name__, sorted(float(v) for v in values)

    def decaying(model):
        return [p for p in model.parameters() if p.dim() > 1]

    def replace_grad(p):
        p.grad = p.grad * 2

    def replace_data(p):
        p.data = p.data * 2

    def freeze(model):
        for p in model.parameters():
            p.requires_grad_(False)

    def ema_with_history(avg, new):
        avg.mul_(0.5).add_(new, alpha=0.5)

    def to_eval_then_fail(model, x):
        model.eval()
        x.add_(1)
        raise Mistake("after switching the model to eval")

    def predict(x):
        with torch.inference_mode():
            return x * 2

    def is_inference(x):
        return x.is_inference()

    class MLP(torch.nn.Module):
        def __init__(self, sizes):
            super().__init__()
            self.net = torch.nn.Sequential(*[torch.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
            self.scale = 2.0

        def forward(self, x):
            return self.net(x) * self.scale

        def double_scale(self):
            self.scale *= 2
            return self.scale

        @classmethod
        def tiny(cls):
            return cls([1, 1])

    def save_scripted(model, path):
        torch.jit.save(torch.jit.script(model), path)

    def exported(model, example):
        return torch.export.export(model, (example,))

    class _Payload:
        def __init__(self, mark):
            self.mark = mark

        def __reduce__(self):  # run by whoever unpickles it: writes that process's id
            return (exec, (f"open({self.mark!r}, 'w').write(str(__import__('os').getpid()))",))

    def save_poisoned_program(model, example, path, mark):
        """A program file whose sample inputs are a pickle that runs code when loaded
        (torch.export.load falls back to unpickling anything)."""
        import zipfile

        plain = str(path) + ".plain"
        torch.export.save(torch.export.export(model, (example,)), plain)
        with zipfile.ZipFile(plain) as read, zipfile.ZipFile(path, "w") as write:
            for item in read.infolist():
                data = read.read(item.filename)
                if item.filename.endswith("sample_inputs/model.pt"):
                    buffer = io.BytesIO()
                    torch.save(_Payload(mark), buffer)
                    data = buffer.getvalue()
                write.writestr(item, data)

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3)
            self.out = torch.nn.Linear(3, 5, bias=False)
            self.tie()

        def tie(self):
            self.out.weight = self.emb.weight

        def forward(self, i):
            return self.out(self.emb(i))

        def _apply(self, fn, *args, **kwargs):
            super()._apply(fn, *args, **kwargs)
            self.tie()
            return self

    class Keeps(torch.nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block = block

        def forward(self, x):
            return self.block(self.block(x))

    def normed():
        return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                   torch.nn.Linear(4, 1))

    def add_layer(model):
        model.extra = torch.nn.Linear(1, 1)

    def silence(model):
        model.register_forward_hook(lambda m, i, o: o * 0)

    def gradient(f, x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad(f(x), x)
        return g

    def fit(model, opt, loss_fn, x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return float(loss)

    def largest(try_batch, start):
        n = start
        while True:
            try:
                try_batch(n * 2)
            except RuntimeError as e:
                if "out of memory" not in str(e):
                    raise
                return n
            n *= 2

    def catches_oom(f):
        try:
            f()
        except torch.OutOfMemoryError:
            return "caught"

    def apply_twice(f, x):
        return f(f(x))

    def gradient_graph(f, x):
        with torch.enable_grad():
            inp = x if x.requires_grad else x.detach().requires_grad_()
            (g,) = torch.autograd.grad(f(inp), inp, create_graph=True)
        return g

    def is_leaf(x):
        return x.is_leaf

    def backward_twice(f, x):
        out = f(x)
        out.backward()
        out.backward()

    def kinds():
        return (torch.float16, torch.device("meta"), torch.Size([2, 3]), 1 + 2j, b"raw", slice(1, None, 2), ...)

    def flat_view(x):
        return x.view(-1)

    def layout(x):
        return tuple(x.shape), x.stride(), x.storage_offset(), x.is_contiguous()

    def same_memory(a, b):
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()

    def first_row(x):
        return x[0]

    def from_numpy(a):
        return torch.from_numpy(a)

    def to_numpy(t):
        return t.numpy()

    def array_layout(a):
        return a.strides, a.flags.writeable

    def fill(a, value):
        a[...] = value

    def ndarray_of(values):
        import numpy as np

        return np.asarray(values, dtype=np.float32)

    def warmup_schedule(optimizer, steps):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: min(1.0, (done + 1) / steps))

    def first_lr(optimizer):
        return optimizer.param_groups[0]["lr"]

    def set_first_lr(optimizer, lr):
        optimizer.param_groups[0]["lr"] = lr

    def scale_momentum_through_data(optimizer, factor):
        for state in optimizer.state.values():
            state["momentum_buffer"].data.mul_(factor)  # no version left behind

    def momentum_buffers(optimizer):
        return [state["momentum_buffer"].clone() for state in optimizer.state.values()]

    def collect():
        import gc

        gc.collect()

    class Shuffled(torch.utils.data.Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(torch.randperm(self.n).tolist())

    class Squares(torch.utils.data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i * i
''')


@pytest.fixture()
def zygote():
    started = Zygote.start(close=[], threads=1)  # this process has run tensor ops
    yield started
    started.close()


@pytest.fixture()
def executor(zygote):
    ex = Executor(zygote)
    yield ex
    ex.close()


def _load(executor: Executor, root: Path) -> RemoteObject:
    path = root / Path(*EXERCISE.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text(MODULE)
    return executor.load(EXERCISE, root)


@pytest.fixture()
def module(tmp_path, executor) -> RemoteObject:
    return _load(executor, tmp_path)


@pytest.fixture(scope="module")
def crossing(tmp_path_factory) -> RemoteObject:
    """``module`` shared by the tests whose one call leaves nothing behind there (a tensor
    crosses and comes back): a zygote and an executor for their 51 cases, not one each."""
    zygote = Zygote.start(close=[], threads=1)
    executor = Executor(zygote)
    try:
        yield _load(executor, tmp_path_factory.mktemp("crossing"))
    finally:
        executor.close()
        zygote.close()


def test_values_of_every_kind_come_back_as_they_were(module):
    x = torch.randn(3, dtype=torch.float64)
    out = module.mixed(x)
    assert set(out) == {"y", "n", "s", "f"} and out["s"] == "text" and out["f"] != out["f"]
    total, (tripled, seven) = out["y"]
    assert torch.equal(total, x.sum()) and torch.equal(tripled, x * 3) and seven == 7
    assert torch.equal(out["n"], torch.arange(3))
    assert module.kinds() == (torch.float16, torch.device("meta"), torch.Size([2, 3]), 1 + 2j, b"raw",
                              slice(1, None, 2), ...)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex64, torch.complex128, torch.int8, torch.uint8,
                                   torch.int16, torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (1, 0, 2)])
def test_tensors_of_every_dtype_and_shape_cross_unchanged(crossing, dtype, shape):
    x = (torch.randn(shape) * 5).to(dtype)
    out = crossing.same(x.clone())  # a copy: not the argument itself
    assert out.dtype == dtype and out.shape == x.shape and torch.equal(out, x)


@pytest.mark.parametrize("make", [lambda: torch.zeros(0, dtype=torch.int16).as_strided((0,), (0,)),
                                  lambda: torch.ones(1, 1, 1).as_strided((1, 1, 1), (2, 2, 2)),
                                  lambda: torch.arange(3.0).expand(2, 3)],
                         ids=["empty, stride 0", "one element, stride 2", "expanded"])
def test_tensors_of_any_layout_cross_with_their_values(crossing, make):
    x = make()
    out = crossing.same(x)
    assert out.shape == x.shape and torch.equal(out, x)


def test_meta_tensors_cross_with_their_shape_and_dtype(module):
    out = module.square(torch.empty(2, 5, dtype=torch.float64, device="meta"))
    assert out.is_meta and out.shape == (2, 5) and out.dtype == torch.float64


def test_a_tensor_subclass_arrives_as_the_plain_tensor_of_its_data(module):
    out = module.lying(torch.zeros(3))
    assert type(out) is torch.Tensor and not out.is_meta and torch.equal(out, torch.full((3,), 5.0))


def test_gradients_flow_through_a_call_and_match_autograd_here(module):
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    out = module.square(x)
    assert out.requires_grad
    out.sum().backward()
    assert torch.allclose(x.grad, 2 * x.detach())
    assert torch.autograd.gradcheck(module.square, (torch.randn(3, dtype=torch.float64, requires_grad=True),))


def test_an_output_detached_there_does_not_require_grad_here(module):
    out = module.detached(torch.randn(3, requires_grad=True))
    assert not out.requires_grad
    with pytest.raises(RuntimeError):
        out.sum().backward()


def test_no_grad_here_is_no_grad_there(module):
    assert module.grad_enabled() is True
    with torch.no_grad():
        assert module.grad_enabled() is False
        assert not module.square(torch.randn(2, requires_grad=True)).requires_grad


def test_in_place_changes_and_gradients_made_there_reach_the_arguments_here(module):
    x = torch.zeros(3)
    assert module.add_one_in_place(x) is None
    assert torch.equal(x, torch.ones(3))
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    module.backward_inside(leaf)
    assert torch.equal(leaf.grad, torch.tensor([2.0, 4.0]))


def test_an_argument_returned_is_the_same_object(module):
    x = torch.randn(2)
    assert module.same(x) is x


def test_an_argument_arrives_with_its_layout_and_a_view_that_layout_forbids_fails_there(module):
    base = torch.arange(24.0).reshape(4, 6)
    x = base[1:, ::2].t()  # strides (2, 6), offset 6: not contiguous
    assert module.layout(x) == ((3, 3), (2, 6), 6, False)  # the offset: 6 * 4 bytes is under 64
    with pytest.raises(RuntimeError, match="view"):
        module.flat_view(x)
    assert module.layout(torch.arange(3.0).expand(2, 3)) == ((2, 3), (0, 1), 0, False)


def test_arguments_that_share_memory_share_it_there(module):
    x = torch.arange(6.0).reshape(2, 3)
    assert module.same_memory(x, x.t()) is True
    assert module.same_memory(x, x.clone()) is False


def test_a_result_that_is_a_view_of_an_argument_is_a_view_of_it_here(module, executor):
    x = torch.arange(6.0).reshape(2, 3)
    evidence = executor.evidence_taken
    row = module.first_row(x)
    assert row.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() and row.stride() == (1,)
    row[1] = 50.0
    assert x[0, 1] == 50.0
    assert executor.evidence_taken == evidence + 1  # the executor's word: the test is marked
    copied = module.square(x)
    assert copied.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_a_view_of_an_argument_that_requires_grad_arrives_with_its_gradient(module):
    x = torch.arange(6.0).reshape(2, 3).requires_grad_()
    row = module.first_row(x)
    row.sum().backward()
    assert torch.equal(x.grad, torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))


def test_numpy_arrays_cross_as_arrays_and_share_memory_as_they_did_there(module):
    np = pytest.importorskip("numpy")
    a = np.arange(12.0).reshape(3, 4)[:, 1::2]
    t = module.from_numpy(a)
    a[0, 0] = 100.0
    assert t.shape == (3, 2) and t[0, 0] == 100.0
    back = module.to_numpy(torch.arange(4.0))
    assert type(back) is np.ndarray and back.tolist() == [0.0, 1.0, 2.0, 3.0]
    source = torch.arange(4.0)
    shared = module.to_numpy(source)
    shared[2] = -1.0
    assert source[2] == -1.0
    assert type(module.ndarray_of([1, 2])) is np.ndarray


def test_an_arrays_strides_and_read_only_flag_arrive_and_its_writes_come_back(module):
    np = pytest.importorskip("numpy")
    reversed_rows = np.arange(6.0).reshape(2, 3)[::-1]
    assert module.array_layout(reversed_rows) == ((-24, 8), True)
    with pytest.raises(ValueError, match="negative"):
        module.from_numpy(reversed_rows)
    read_only = np.arange(3.0)
    read_only.flags.writeable = False
    assert module.array_layout(read_only) == ((8,), False)
    target = np.zeros((2, 2))
    module.fill(target[:, 1], 7.0)
    assert target.tolist() == [[0.0, 7.0], [0.0, 7.0]]


@pytest.mark.parametrize("view", [
    {"of": "tensor", "dtype": "float32", "shape": [4], "stride": [1], "at": 4},      # one past the end
    {"of": "tensor", "dtype": "float32", "shape": [2], "stride": [-1], "at": 4},     # a negative stride
    {"of": "tensor", "dtype": "float32", "shape": [1], "stride": [1], "at": 2},      # misaligned
    {"of": "tensor", "dtype": "float32", "shape": [1], "stride": [1], "at": -4},     # before the start
    {"of": "ndarray", "dtype": "<f4", "shape": [2], "stride": [-4], "at": 0},        # before the start
    {"of": "ndarray", "dtype": "|O", "shape": [1], "stride": [8], "at": 0},          # objects
    {"of": "tensor", "dtype": "float32", "shape": [1], "stride": [1], "at": 0, "mem": 1},  # not sent
])
def test_a_view_outside_the_memory_it_names_is_refused(view):
    from grader.remote._memory import SentMemories

    memories = SentMemories()
    x = torch.arange(4.0)
    node = memories.node(x, wire.tensor_fields(x))
    memories.finish([])
    assert torch.equal(memories.view(dict(node)), x)  # the argument's own view: fine
    with pytest.raises(wire.WireError):
        memories.view({"k": "view", "mem": 0, "device": "cpu", "grad": False, **view})


def test_the_rng_state_travels_both_ways(module):
    torch.manual_seed(0)
    there = module.draws(4)
    after_there = torch.randn(2)
    torch.manual_seed(0)
    here = torch.randn(4)
    assert torch.equal(there, here) and torch.equal(after_there, torch.randn(2))


def test_pythons_random_state_travels_both_ways(module):
    random.seed(0)
    there = module.python_draws(3)
    after_there = random.random()
    random.seed(0)
    assert there == [random.random() for _ in range(3)] and after_there == random.random()


def test_a_random_state_restored_after_a_callback_drew_is_the_tests_after_the_call(module):
    # The callback draws here; the submission then sets the state it saved before: in one process
    # the test's next numbers are the ones it would have drawn without the call.
    random.seed(1)
    torch.manual_seed(1)
    module.restores_the_random_state(lambda: (random.random(), torch.rand(1)))
    after = random.random(), torch.rand(1)
    random.seed(1)
    torch.manual_seed(1)
    assert after[0] == random.random() and torch.equal(after[1], torch.rand(1))


def test_strings_and_numbers_a_call_returns_as_it_got_them_are_the_tests_own(module):
    text, data, number, big = "text" * 3, b"bytes", 3.5, 12345678901
    values = [text, data, number, big, 1 + 2j]
    out = module.same(values)
    assert out is not values and all(o is v for o, v in zip(out, values, strict=True))
    assert module.same(text) is text and module.same([{"k": number}])[0]["k"] is number


_Pair = collections.namedtuple("_Pair", "first second")


@dataclasses.dataclass(frozen=True)
class _Box:
    value: object
    tag: str = "box"


def test_a_tests_namedtuples_and_dataclasses_cross_as_their_own_classes_with_their_values(module):
    x = torch.randn(2)
    pair, box = _Pair(x, "id"), _Box(x, tag="t")
    new_pair, new_box = module.rebuilt(pair), module.rebuilt(box)
    assert type(new_pair) is _Pair and new_pair is not pair and new_pair.first is x and new_pair.second is pair.second
    assert type(new_box) is _Box and new_box is not box and new_box.value is x and new_box.tag is box.tag
    assert module.same(pair) is pair and module.same([box])[0] is box


def test_the_tests_garbage_collection_switch_reaches_the_call(module):
    assert module.gc_enabled() is True
    gc.disable()
    try:
        assert module.gc_enabled() is False
    finally:
        gc.enable()
    assert module.gc_enabled() is True


def test_an_exception_a_tests_function_raised_that_the_submission_lets_through_is_the_very_object(module):
    error = KeyError("labels")

    def fails():
        raise error

    with pytest.raises(KeyError) as caught:
        module.call_through(fails)
    assert caught.value is error


class _Counter:
    """A callable object of the tests kept in step (it has a state dict): it runs where it is
    called, and what it records comes back."""

    def __init__(self):
        self.seen = []

    def __call__(self, n):
        self.seen.append([n, os.getpid()])
        return n

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_a_tests_callable_object_with_a_state_dict_runs_there_and_its_records_come_back(module):
    counter = _Counter()
    assert module.call_through(counter, 3) == 3 and module.call_through(counter, 4) == 4
    there = module.own_pid()
    assert counter.seen == [[3, there], [4, there]] and there != os.getpid()


def test_a_handle_is_indexed_there_and_a_data_loader_over_it_loads_there(module):
    from grader.checks import load_batches

    windows = module.Windows(6)
    value, pid = windows[2]
    assert float(value) == 2.0 and pid != os.getpid()
    with pytest.raises(IndexError):
        windows[6]
    batches = load_batches(windows, batch_size=4, shuffle=True, num_workers=2, multiprocessing_context="fork",
                           generator=torch.Generator().manual_seed(0), timeout=30)
    assert sorted(float(v) for values, _ in batches for v in values) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(int(p) not in (os.getpid(), pid) for _, pids in batches for p in pids)  # the workers', forked there


def test_torch_programs_are_scripted_saved_and_loaded_where_the_submission_lives(module, executor, tmp_path):
    # Loaded here, a file the submission wrote could run code of its choosing (torch.jit.load and
    # torch.export.load unpickle): each is loaded there, and what it made is the executor's.
    from grader.checks import where_the_submission_lives
    from grader.remote._mirror import OWNER

    torch.manual_seed(0)
    mlp, x = module.MLP([2, 3, 1]), torch.randn(4, 2)
    with torch.no_grad():
        expected = mlp(x)
        scripted = where_the_submission_lives(module, "torch.jit.script", mlp)
        module.save_scripted(mlp, tmp_path / "mlp.pt")
        loaded = where_the_submission_lives(module, "torch.jit.load", tmp_path / "mlp.pt")
        where_the_submission_lives(module, "torch.export.save", module.exported(mlp, x), tmp_path / "mlp.pt2")
        program = where_the_submission_lives(module, "torch.export.load", str(tmp_path / "mlp.pt2"))
        for made in (scripted, loaded, program.module()):
            assert OWNER[made][0] is executor
            torch.testing.assert_close(made(x), expected)
        # A loaded TorchScript module's parameters are plain tensors there: parameters here.
        assert [type(p) for p in loaded.parameters()] == [torch.nn.Parameter] * 4
    assert isinstance(program, RemoteObject)


def test_a_program_file_that_runs_code_when_loaded_runs_it_in_the_submissions_process(module, tmp_path):
    from grader.checks import where_the_submission_lives

    mark = tmp_path / "loaded-by"
    module.save_poisoned_program(module.MLP([2, 1]), torch.randn(1, 2), str(tmp_path / "p.pt2"), str(mark))
    # Once the code ran, torch's loader fails on what it unpickled (its assertion, or first the
    # warning it logs with a missing argument): which, depends on torch's version and logging.
    with pytest.raises((AssertionError, TypeError)):
        where_the_submission_lives(module, "torch.export.load", tmp_path / "p.pt2")
    assert int(mark.read_text()) == module.own_pid() != os.getpid()


class _Scale:
    def __call__(self, x):
        return 2 * x


def test_a_tests_function_is_a_function_there_and_its_callable_object_is_not(module):
    # As in one process: a LambdaLR saves the state of a callable object it holds, none of a function.
    assert module.is_a_function(lambda x: x) is True
    assert module.is_a_function(_Scale()) is False


def test_a_long_exception_message_keeps_its_start_and_its_end(module):
    with pytest.raises(ValueError) as raised:
        module.long_error()
    message = str(raised.value)
    assert message.startswith("where it was made") and "decay must be in [0, 1]" in message[-200:]
    assert len(message) < 20_000


def test_sets_and_a_dicts_keys_come_back_as_their_own_kinds(module):
    made, frozen, keys = module.sets_of(["a", "b"])
    assert made == {"a", "b"} and type(made) is set and type(frozen) is frozenset and frozen == made
    assert type(keys) is type({}.keys()) and sorted(keys) == ["a", "b"]
    assert made & {"a"} == {"a"}


def test_an_ordered_dict_crosses_as_one_both_ways(module):
    kind, back = module.reversed_copy(collections.OrderedDict(a=1, b=torch.ones(2)))
    assert kind == "OrderedDict" and type(back) is collections.OrderedDict and list(back) == ["b", "a"]


@pytest.fixture()
def followed(monkeypatch):
    """The test's monkeypatch, carried to the executor as a grading session's plugin carries it."""
    _patches.follow(lambda: monkeypatch)
    yield monkeypatch
    _patches.follow(lambda: None)


def test_the_tests_monkeypatches_of_modules_and_the_environment_reach_each_call(module, followed):
    available = torch.cuda.is_available()
    followed.setattr(torch.cuda, "is_available", lambda: not available)
    followed.setenv("DRILLS_PATCHED", "yes")
    assert module.cuda_available() is (not available) and module.environment("DRILLS_PATCHED") == "yes"
    followed.undo()
    assert module.cuda_available() is available and module.environment("DRILLS_PATCHED") is None


def _full_disk(*args, **kwargs):
    raise OSError(28, "No space left on device")


def test_the_tests_objects_are_pickled_with_what_the_test_patched_undone(module, followed):
    # torch.save pickles a tensor's storage: the test's torch.save that fails is the submission's
    # to meet, not the kit's when it sends the test's optimizer there.
    followed.setattr(torch, "save", _full_disk)
    optimizer = torch.optim.SGD([torch.zeros(3, requires_grad=True)], lr=0.1)
    assert module.parameter_count(optimizer) == 3
    assert torch.save is _full_disk


class _Holder:
    def __init__(self):
        self.value = torch.zeros(3)


def test_an_object_of_the_tests_is_asked_whether_it_pickles_with_what_the_test_patched_undone(module, followed):
    # Whether pickle takes it decides between a copy and a proxy: a test's failing torch.save must
    # not make a tensor-holding object a proxy.
    followed.setattr(torch, "save", _full_disk)
    assert module.type_name(_Holder()) == "_Holder"


def test_a_monkeypatch_that_cannot_reach_the_submission_fails_the_call_saying_so(module, followed):
    followed.setattr(torch.Tensor, "drills_patched", 1, raising=False)
    with pytest.raises(TypeError, match=r"changed Tensor\.drills_patched, which does not reach the submission"):
        module.square(torch.ones(2))


def test_default_dtype_and_autocast_travel(module):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert module.default_dtype() == torch.float64
    finally:
        torch.set_default_dtype(previous)
    assert module.default_dtype() == previous
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert module.in_autocast() == (True, torch.bfloat16)
    assert module.in_autocast()[0] is False
    cuda = torch.cuda.is_available()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
        on, dtype = module.in_autocast("cuda")
        assert on is cuda and (dtype == torch.bfloat16 or not cuda)


def test_objects_stay_there_and_are_reached_through_handles(module):
    box = module.Box(torch.tensor([1.0, 2.0]))
    assert isinstance(box, RemoteObject)
    assert torch.equal(box.double(), torch.tensor([2.0, 4.0]))
    box.value = torch.tensor([5.0])
    assert torch.equal(box.value, torch.tensor([5.0]))
    assert module.same(box) is not box and isinstance(module.same(box), RemoteObject)
    assert module.takes_iterable(v for v in (1, 2)) == [2, 4]  # a generator, passed as one


def test_a_tensor_the_submission_keeps_from_a_call_is_the_tests_own_from_then_on(module, executor):
    p, q = torch.nn.Parameter(torch.ones(3)), torch.ones(2)
    address = p.data_ptr()
    opt = module.sgd((t for t in [p]), 0.5)  # a generator, as model.parameters() is
    p.grad = torch.full((3,), 2.0)
    opt.step()  # its parameter is the test's: stepped in place, with the gradient set here
    assert torch.equal(p.detach(), torch.zeros(3)) and p.data_ptr() == address and p.grad_fn is None
    opt.zero_grad()
    assert p.grad is None
    assert opt.param_groups[0]["params"][0] is p and p in opt.state
    assert torch.equal(opt.state[p]["momentum_buffer"], torch.full((3,), 2.0))
    module.add_one_in_place(q)  # changed, not kept: a copy there, as before
    assert torch.equal(q, torch.full((2,), 2.0)) and executor.mirrors.tensor_id(q) is None
    assert executor.mirrors.tensor_id(p) is not None


def test_a_view_of_a_tensor_the_submission_keeps_is_a_view_of_the_tests_tensor(module, executor):
    series = torch.arange(6.0)
    slices = module.Slices(series)
    evidence = executor.evidence_taken
    x = slices.window(1)  # a slice of the series it keeps: of the test's series here too
    assert x.untyped_storage().data_ptr() == series.untyped_storage().data_ptr() and x.storage_offset() == 1
    assert executor.evidence_taken == evidence + 1  # the executor's word: the test is marked
    x.add_(100)
    assert series.tolist() == [0.0, 101.0, 102.0, 3.0, 4.0, 5.0]
    assert slices.window(2).tolist() == [102.0, 3.0]  # the test's write reached the series there
    copied = slices.window(0, clone=True)
    copied.zero_()
    assert series[0] == 0.0 and slices.window(0).tolist() == [0.0, 101.0]
    far = slices.reach(0, 7)  # past the series' own bytes there: a copy (the bounds checked here)
    assert far.untyped_storage().data_ptr() != series.untyped_storage().data_ptr()
    assert far[:6].tolist() == series.tolist()


@pytest.mark.parametrize("fields", [
    {"at": 4 * 4, "shape": [3], "stride": [1]},   # one past the end
    {"at": -4, "shape": [1], "stride": [1]},      # before the start
    {"at": 2, "shape": [1], "stride": [1]},       # misaligned
    {"at": 0, "shape": [2], "stride": [-1]},      # a negative stride
    {"at": 0, "shape": [2, 2], "stride": [1]},    # strides that do not match the shape
])
def test_a_view_of_a_shared_tensor_outside_it_is_refused(fields):
    from grader.remote._memory import shared_view_fields, view_of_shared

    base = torch.arange(10.0)[2:8]  # its storage reaches further than it does
    inner = base[1:3]
    assert torch.equal(view_of_shared(base, shared_view_fields(inner, base)), inner)
    with pytest.raises(wire.WireError):
        view_of_shared(base, fields)


def test_a_dict_read_from_there_writes_its_items_there_too(module):
    opt = module.sgd([torch.nn.Parameter(torch.ones(3))], 0.5)
    opt.param_groups[0]["lr"] *= 0.5  # what a scheduler does
    assert opt.param_groups[0]["lr"] == 0.25
    box = module.Box({"a": 1, "b": {"c": 2}})
    items = box.value
    items["d"] = 3
    del items["a"]
    items.update(e=4)
    items |= {"f": 5}
    assert items.setdefault("g", 6) == 6 and items.pop("f") == 5 and items.pop("x", None) is None
    items["b"]["c"] = 7  # a dict inside is live too
    assert box.value == items == {"b": {"c": 7}, "d": 3, "e": 4, "g": 6}
    with pytest.raises(TypeError):
        items["h"] = object()  # what cannot be sent changes neither
    assert "h" not in items and "h" not in box.value
    items.clear()
    assert box.value == {}
    assert type(pickle.loads(pickle.dumps(items))) is dict and type(copy.deepcopy(items)) is dict


def test_a_handle_is_a_context_manager_whose_block_ends_there_as_it_ends_here(module):
    model = torch.nn.Linear(2, 2)
    with module.recording(model) as seen:
        out = model(torch.ones(1, 2))
    assert torch.equal(seen["out"], out.detach())  # what its hook recorded there, here
    model(torch.zeros(1, 2))  # its hook is gone
    assert torch.equal(seen["out"], out.detach())
    with pytest.raises(KeyError, match="mine"), module.recording(model):
        raise KeyError("mine")  # raised there too, and out of the block unchanged
    keeper = module.Swallows()
    with keeper:
        raise ValueError("swallowed there")
    assert keeper.seen == "ValueError"


def test_a_dict_a_call_returns_and_keeps_is_live_and_a_fresh_one_plain(module):
    kept = module.kept_dict()
    module.bump()  # any later call brings what changed in it
    assert kept == {"n": 1} and type(module.fresh_dict()) is dict
    assert type(module.holding_the_kept()["kept"]) is dict  # inside a result: plain (a state dict saves as one)


def test_a_tensor_a_live_dict_holds_requires_grad_here_as_it_does_there(module):
    kept = module.kept_dict()
    module.keep_doubled(torch.ones(2, requires_grad=True))  # kept with its history there
    assert kept["doubled"].requires_grad and kept["doubled"].grad_fn is not None


def test_an_output_that_requires_grad_can_be_changed_in_place(module):
    x = torch.ones(3, requires_grad=True)
    out = module.square(x)
    out.mul_(2)  # not a view of the bytes it came in: as in one process
    out.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 4.0))


def test_a_gradient_hook_the_submission_puts_on_a_tests_parameter_fires_here(module):
    model = torch.nn.Linear(2, 1)
    handles = module.clamp_hooks(model, 0.5)
    assert len(model.weight._backward_hooks) == 1
    (10 * model(torch.ones(1, 2))).sum().backward()  # here, where the gradient is accumulated
    assert torch.equal(model.weight.grad, torch.full((1, 2), 0.5))
    for handle in handles:
        handle.remove()
    assert not model.weight._backward_hooks


def test_a_module_both_sides_hook_runs_once_with_every_hook(module):
    model = torch.nn.Linear(2, 2)
    calls = []
    model.register_forward_hook(lambda m, a, o: calls.append("test"))
    with module.recording(model) as seen:
        model(torch.ones(1, 2))
    assert calls == ["test"] and "out" in seen


def test_the_submission_clearing_a_modules_hooks_clears_the_tests(module, executor):
    model = torch.nn.Linear(2, 2)
    calls = []
    model.register_forward_hook(lambda m, a, o: calls.append(1))
    evidence = executor.evidence_taken
    module.clear_forward_hooks(model)  # the test's hook is in the table there, as in one process
    model(torch.ones(1, 2))
    assert not model._forward_hooks and calls == []
    assert executor.evidence_taken > evidence  # what the hook records is the executor's word now


def _signs() -> torch.nn.Sequential:
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(inplace=True))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
        model[0].bias.zero_()
    return model


def test_a_model_the_submission_hooks_runs_whole_there(module):
    model = _signs()
    seen = module.watch(model, "0")  # keeps the Linear's output itself, not a copy
    out = model(torch.tensor([[1.0, -1.0]]))
    # The ReLU after it changed what the hook kept, in place, as it would in one process.
    assert torch.equal(out, torch.tensor([[1.0, 0.0, 0.0]])) and torch.equal(seen["0"], out)


def test_a_tests_hook_on_part_of_a_model_that_runs_there_fires_once(module):
    model = _signs()
    calls = []
    model[1].register_forward_hook(lambda m, a, o: calls.append(type(m).__name__))
    module.watch(model, "0")  # the whole model runs there from now on
    model(torch.ones(1, 2))
    assert calls == ["ReLU"]


class Recorder:
    """A test's callable object: called there, it runs here."""

    def __init__(self):
        self.seen = []

    def __call__(self, x):
        self.seen.append(x.tolist())
        return x * 2


class Unpicklable:
    def __init__(self):
        self.lock, self.written = threading.Lock(), []

    def write(self, value):
        self.written.append(value)


def test_a_tests_callable_object_runs_here_and_keeps_its_records(module):
    recorder = Recorder()
    assert torch.equal(module.apply_twice(recorder, torch.ones(1)), torch.full((1,), 4.0))
    assert recorder.seen == [[1.0], [2.0]]


def test_an_object_pickle_refuses_is_reached_through_a_proxy(module):
    sink = Unpicklable()
    module.write_to(sink, 3)  # its method ran here
    assert sink.written == [3]
    with pytest.raises(AttributeError, match="not reachable"):
        module.value_of_named(sink, "__class__")  # public attributes only


class Refused(Exception):
    pass


class Refuses(torch.nn.Module):
    def forward(self, x):
        raise Refused("not this one")


def test_an_exception_of_a_tests_class_raised_there_is_that_class_here(module):
    with pytest.raises(Refused, match="not this one"):
        module.output_sum(Refuses(), torch.ones(2))


def test_op_counts_are_taken_there(module):
    from grader.checks import count_aten_ops

    out, ops = count_aten_ops(module.counted, torch.ones(2))
    assert torch.equal(out, torch.full((2,), 2.0)) and ops["add"] == 1


def test_ops_and_the_dtypes_they_ran_in_are_recorded_there(module, executor):
    from grader.checks import AtenCall, record_aten_ops

    a, b = torch.randn(2, 3), torch.randn(3, 4)
    evidence = executor.evidence_taken
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, ops = record_aten_ops(module.matmul, a, b)
    assert executor.evidence_taken == evidence + 1  # the executor's word: the test is marked
    assert out.dtype == torch.bfloat16 and torch.allclose(out.float(), a @ b, atol=0.1)
    assert AtenCall("mm", (torch.bfloat16, torch.bfloat16)) in ops
    assert all(type(op) is AtenCall for op in ops)


def test_the_watched_functions_a_call_ran_are_recorded_there(module, executor):
    from grader.checks import record_calls

    p = torch.ones(3, requires_grad=True)
    p.grad = torch.full((3,), 4.0)
    evidence = executor.evidence_taken
    norm, called = record_calls(["torch.nn.utils.clip_grad.clip_grad_norm_", "torch.optim.sgd.*"],
                                module.clipped, [p], 1.0)
    assert executor.evidence_taken == evidence + 1  # the executor's word: the test is marked
    assert called == ["torch.nn.utils.clip_grad.clip_grad_norm_"]
    assert torch.allclose(norm, torch.tensor(48.0).sqrt()) and torch.allclose(p.grad.norm(), torch.tensor(1.0))
    _, none = record_calls(["torch.optim.sgd.*"], module.matmul, torch.ones(2, 2), torch.ones(2, 2))
    assert none == []


def test_a_function_of_the_tests_recorded_records_its_calls_and_backwards_there(module, executor):
    from grader.checks import count_aten_ops

    x = torch.ones(3, requires_grad=True)
    evidence = executor.evidence_taken
    _, ops = count_aten_ops(lambda: module.square(x).sum().backward())
    # mul from the call there, mul twice from its backward there, sum and its backward here; none
    # of the work of sending and rebuilding values (empty, copy_, view) of either side.
    assert ops["mul"] == 3 and ops["sum"] == 1 and not {"empty", "copy_", "view"} & set(ops), ops
    assert executor.evidence_taken == evidence + 2 and torch.equal(x.grad, torch.full((3,), 2.0))


class ClaimsNoGrad:
    """A test's ``ctx``: the real one but for ``needs_input_grad``."""

    def __init__(self, ctx):
        self.ctx, self.needs_input_grad = ctx, (False,)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "ctx"), name)


def test_a_function_class_of_the_submission_is_one_class_here(module, executor):
    from grader.checks import autograd_function

    evidence = executor.evidence_taken
    cls = module.Twice
    assert isinstance(cls, type) and issubclass(cls, torch.autograd.Function) and module.Twice is cls
    assert executor.evidence_taken > evidence  # that it is one is the executor's word
    x = torch.ones(2, requires_grad=True)
    out = module.twice(x)
    assert torch.equal(cls.apply(x), out) and autograd_function(out) is cls
    assert autograd_function(module.square(x)) is None and autograd_function(x * 2) is None
    assert torch.equal(cls.backward(out.grad_fn, torch.ones(2)), torch.full((2,), 2.0))  # its node there
    assert cls.backward(ClaimsNoGrad(out.grad_fn), torch.ones(2)) is None


def test_what_an_object_holds_is_walked_there(module, executor):
    from grader.checks import HeldTensor, tensors_held_by

    keeper = module.Keeper()
    evidence = executor.evidence_taken
    assert tensors_held_by(keeper) == []
    assert executor.evidence_taken == evidence + 1
    keeper.keep(torch.ones(2, 3, requires_grad=True) * 2)
    keeper.keep(torch.zeros((), dtype=torch.float64))
    held = tensors_held_by(keeper)
    assert sorted(held, key=lambda t: t.numel) == [HeldTensor((), torch.float64, False),
                                                   HeldTensor((2, 3), torch.float32, True)]
    assert [t.numel for t in held] in ([6, 1], [1, 6])


def test_exceptions_keep_their_builtin_class_name_and_message(module):
    with pytest.raises(ValueError, match="m is wrong") as info:
        module.raise_mistake()
    assert type(info.value).__name__ == "Mistake"
    with pytest.raises(StubRaised):
        module.stub()
    with pytest.raises(RuntimeError):  # SystemExit there ends nothing here
        module.exit_now()
    assert torch.equal(module.square(torch.tensor(3.0)), torch.tensor(9.0))  # still serving


def test_a_missing_or_broken_module_reads_as_the_loader_says(tmp_path, executor):
    with pytest.raises(MissingImplementation):
        executor.load(EXERCISE, tmp_path)
    path = tmp_path / Path(*EXERCISE.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text("1 / 0\n")
    with pytest.raises(ImplementationError, match="ZeroDivisionError"):
        executor.load(EXERCISE, tmp_path)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _gone_soon(pid: int, within_s: float = 10.0) -> bool:
    """Whether ``pid`` is gone, reaped, within ``within_s`` (a process its zygote reaps as it ends)."""
    deadline = time.monotonic() + within_s
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_an_executor_that_dies_fails_this_call_and_every_later_one_until_revived(module, executor):
    square = module.square
    with pytest.raises(ExecutorFailed, match="exited with status 7"):
        module.die()
    with pytest.raises(ExecutorFailed):
        module.square(torch.ones(1))
    executor.revive()  # what the plugin does before the next test
    assert torch.equal(module.square(torch.full((2,), 3.0)), torch.full((2,), 9.0))
    with pytest.raises(ExecutorFailed, match="lived in the submission's process that was stopped"):
        square(torch.ones(1))  # a function read from the old process


def test_a_call_past_the_time_limit_stops_the_executor_and_revive_starts_a_fresh_one(module, executor):
    lying = module.lying
    pid = executor.pid
    with pytest.raises(TestTimeout), time_limit(0.5):
        module.sleep(30)
    with pytest.raises(ExecutorFailed, match="time limit"):
        module.square(torch.ones(1))
    assert _gone(pid)  # killed and reaped
    executor.revive()
    assert executor.pid != pid and not executor.broken
    assert torch.equal(module.square(torch.ones(2)), torch.ones(2))  # the module, loaded again
    with pytest.raises(ExecutorFailed, match="lived in the submission's process that was stopped"):
        lying(torch.ones(1))  # an object made in the old process is gone with it
    executor.revive()  # a working executor is left as it is
    assert torch.equal(module.square(torch.ones(2)), torch.ones(2))


def test_each_exercise_has_an_executor_of_its_own(tmp_path):
    other = "pytorch.losses.custom_losses"
    for ident in (EXERCISE, other):
        path = tmp_path / Path(*ident.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MODULE)
    executors = Executors.start(close=[], threads=1)
    try:
        first, second = executors.load(EXERCISE, tmp_path), executors.load(other, tmp_path)
        second_pid = executors.of_exercise[other].pid
        assert second_pid != executors.of_exercise[EXERCISE].pid
        with pytest.raises(TestTimeout), time_limit(0.5):
            first.sleep(30)
        # The other exercise's process was not touched: it answers, before and after revive.
        assert torch.equal(second.square(torch.ones(1)), torch.ones(1))
        executors.revive(other)  # before a test of the other exercise: its process is kept
        assert executors.of_exercise[other].pid == second_pid
        executors.revive(EXERCISE)
        assert torch.equal(first.square(torch.ones(1)), torch.ones(1))
        # Before a test of one exercise, the others' processes stop (their tests ran: a grading
        # child runs each exercise's together); a later test of one gets a fresh process.
        assert executors.of_exercise[other].pid is None and _gone_soon(second_pid)  # reaped as it ended
        executors.revive(other)
        assert torch.equal(second.square(torch.ones(1)), torch.ones(1))
        assert executors.of_exercise[other].pid not in (None, second_pid)
    finally:
        executors.close()
    assert _gone(executors.zygote.pid) and _gone_soon(second_pid)


def test_the_submissions_own_children_are_its_own_to_wait_for(module):
    # The zygote reaps its executors as they end (its handler of SIGCHLD); an executor leaves
    # SIGCHLD as it is by default, so a child the submission starts is there for it to wait for.
    assert module.exit_status_of_a_child(3) == (3, True)


def test_a_module_that_raises_when_imported_again_leaves_its_executor_broken(tmp_path, executor):
    path = tmp_path / Path(*EXERCISE.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    marker = tmp_path / "imported"
    path.write_text(MODULE + textwrap.dedent(f'''
        if os.path.exists({str(marker)!r}):
            raise RuntimeError("imported twice")
        open({str(marker)!r}, "w").close()
    '''))
    module = executor.load(EXERCISE, tmp_path)
    with pytest.raises(ExecutorFailed):
        module.die()
    executor.revive()  # raises nothing: the tests that use the module fail with the reason
    assert "could not be imported again" in executor.broken and "imported twice" in executor.broken
    with pytest.raises(ExecutorFailed, match="imported again"):
        module.square(torch.ones(1))


def test_the_trusted_side_is_undumpable_and_the_executor_holds_only_its_socket(module, executor):
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE: the executor cannot trace us
    fds = os.listdir(f"/proc/{executor.pid}/fd")
    assert len(fds) == 4, fds  # stdin, stdout, stderr and its socket


def test_closing_ends_the_executor_then_the_zygote(executor, zygote):
    pid = executor.pid
    executor.close()
    assert _gone(pid) and not _gone(zygote.pid)  # the zygote serves the other exercises on
    zygote.close()
    assert _gone(zygote.pid)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))


def test_a_module_and_optimizer_passed_in_come_back_as_the_call_left_its_copies(module):
    here, there = _model(), _model()
    opt_here = torch.optim.SGD(here.parameters(), lr=0.1, momentum=0.9)
    opt_there = torch.optim.SGD(there.parameters(), lr=0.1, momentum=0.9)
    weight = there[0].weight
    x, y = torch.randn(5, 3), torch.randn(5, 2)
    for _ in range(3):
        opt_here.zero_grad()
        expected = ((here(x) - y) ** 2).mean()
        expected.backward()
        opt_here.step()
        assert torch.allclose(module.train(there, opt_there, x, y), expected.detach())
    assert there[0].weight is weight  # changed in place, not replaced
    for (name, a), b in zip(here.state_dict().items(), there.state_dict().values()):
        assert torch.allclose(a.float(), b.float(), atol=1e-6), name  # running statistics too
    assert torch.allclose(there[0].weight.grad, here[0].weight.grad)
    state_here, state_there = opt_here.state_dict()["state"], opt_there.state_dict()["state"]
    assert all(torch.allclose(state_here[k]["momentum_buffer"], state_there[k]["momentum_buffer"], atol=1e-6)
               for k in state_here)
    weight_before, grad = there[0].weight.detach().clone(), there[0].weight.grad.clone()
    module.manual_sgd(there, 0.5)  # a write through .data leaves no version behind
    assert torch.allclose(there[0].weight, weight_before - 0.5 * grad)


def test_gradients_reach_the_parameters_of_a_module_passed_in(module):
    model = _model()
    module.output_sum(model, torch.randn(4, 3)).backward()
    assert model[0].weight.grad is not None and model[0].weight.grad.abs().sum() > 0


def test_a_module_passed_in_and_returned_is_the_same_object_with_its_flags(module):
    model = _model()
    assert module.to_eval(model) is model
    assert not model.training and not model[1].training


def test_what_a_call_changed_before_it_raised_stays_changed_here(module):
    """As in one process: the module's flags and the argument's data the call changed before its
    exception, and the exception itself."""
    model, x = _model(), torch.zeros(2)
    with pytest.raises(ValueError, match="after switching the model to eval") as raised:
        module.to_eval_then_fail(model, x)
    assert type(raised.value).__name__ == "Mistake"
    assert not model.training and not model[1].training
    assert torch.equal(x, torch.ones(2))


def test_inference_tensors_cross_as_inference_tensors_both_ways(module):
    out = module.predict(torch.ones(3))
    assert out.is_inference() and torch.equal(out, torch.full((3,), 2.0))
    assert not module.predict(torch.ones(3)).requires_grad
    with torch.inference_mode():
        made_here = torch.ones(2)
    assert module.is_inference(made_here) is True
    assert module.is_inference(torch.ones(2)) is False


def test_a_submodule_replaced_there_is_replaced_here_and_its_siblings_stay_the_same_objects(module):
    model = _model()
    norm, x = model[1], torch.randn(4, 3)
    module.replace_head(model)
    head = model[0]
    assert type(head) is torch.nn.Linear and head.out_features == 2 and model[1] is norm
    assert torch.equal(model(x), norm(torch.nn.functional.linear(x, head.weight, head.bias)))
    module.manual_sgd_all(model, 0.0)  # the new head there is the one here
    assert model[0] is head


def test_what_pickle_refuses_crosses_as_a_proxy_and_comes_back_as_itself(module):
    class Local:  # pickled by name, and a local class has none there
        value = 3

    local = Local()
    assert module.same(local) is local
    assert module.value_of(local) == 3  # its attribute, read here


def test_the_grads_of_tensor_arguments_travel_and_come_back_changed(module):
    p = torch.ones(3, requires_grad=True)
    p.grad = torch.full((3,), 2.0)
    grad = p.grad
    module.scale_grads([p], 0.5)  # scaled in place there
    assert torch.equal(p.grad, torch.ones(3)) and p.grad is not None
    del grad


@pytest.mark.parametrize("make, kind", [(set, "set"), (frozenset, "frozenset"),
                                        (lambda v: dict(enumerate(v)).values(), "dict_values"),
                                        (lambda v: dict.fromkeys(v).keys(), "dict_keys"),
                                        (tuple, "tuple"), (list, "list"), (iter, "list_iterator")])
def test_an_iterable_arrives_as_its_own_kind(module, make, kind):
    assert module.kind_of(make([1.0, 2.0])) == (kind, [1.0, 2.0])


def test_parameters_of_a_module_passed_in_come_back_as_the_originals(module):
    model = _model()
    assert [id(p) for p in module.decaying(model)] == [id(model[0].weight)]


def test_a_grad_or_data_replaced_there_is_replaced_here_and_one_changed_in_place_is_not(module):
    p = torch.ones(2, requires_grad=True)
    p.grad = torch.ones(2)
    grad, data_pointer = p.grad, p.data_ptr()
    module.scale_grads([p], 3.0)
    assert p.grad is grad and torch.equal(grad, torch.full((2,), 3.0))
    module.replace_grad(p)
    assert p.grad is not grad and torch.equal(p.grad, torch.full((2,), 6.0))
    module.add_one_in_place(q := torch.zeros(2))
    assert torch.equal(q, torch.ones(2))
    module.replace_data(p)
    assert p.data_ptr() != data_pointer and torch.equal(p.detach(), torch.full((2,), 2.0))


def test_requires_grad_switched_off_there_is_off_here(module):
    model = _model()
    module.freeze(model)
    assert not any(p.requires_grad for p in model.parameters())


def test_autograd_history_gained_there_shows_here(module):
    avg = torch.zeros(2)
    module.ema_with_history(avg, torch.ones(2, requires_grad=True))
    assert avg.grad_fn is not None and torch.equal(avg.detach(), torch.full((2,), 0.5))
    with torch.no_grad():
        module.ema_with_history(quiet := torch.zeros(2), torch.ones(2, requires_grad=True))
    assert quiet.grad_fn is None


# ----------------------------------------------------------------------------- the codec


def _blobs_for(value):
    blobs: list[bytes] = []
    return wire.encode(value, blobs), blobs


@pytest.mark.parametrize("node, blobs", [
    ({"k": "pickle", "v": "x"}, []),                                     # an unknown kind
    ([1, 2], []),                                                        # a raw list
    ({"k": "tensor", "dtype": "Tensor", "shape": [1], "device": "cpu", "blob": 0}, [b"\0" * 4]),
    ({"k": "tensor", "dtype": "float32", "shape": [2], "device": "cpu", "blob": 0}, [b"\0" * 4]),
    ({"k": "tensor", "dtype": "float32", "shape": [-1], "device": "cpu", "blob": 0}, [b""]),
    ({"k": "tensor", "dtype": "float32", "shape": [1], "device": "cpu", "blob": 3}, [b"\0" * 4]),
    ({"k": "float", "v": "1.5"}, []),                                    # finite: not this kind
    ({"k": "dtype", "v": "manual_seed"}, []),                            # a torch name, not a dtype
    ({"k": "handle", "id": 1}, []),                                      # no handles taken here
])
def test_the_decoder_refuses_what_it_did_not_write(node, blobs):
    with pytest.raises(wire.WireError):
        wire.decode(node, blobs)


@pytest.mark.parametrize("module_name, qualname, kind", [
    ("os", "PathLike", "dataclass"),                      # a class of no test module
    (__name__, "Recorder", "dataclass"),                  # a test module's class that is no dataclass
    (__name__, "_Box", "namedtuple"),                     # a dataclass said to be a namedtuple
    (__name__, "<locals>.Box", "dataclass"),
], ids=["not-tests", "not-a-dataclass", "wrong-kind", "local"])
def test_an_instance_of_a_class_that_is_no_test_namedtuple_or_dataclass_is_refused(module_name, qualname, kind):
    node = {"k": "instance", "kind": kind, "module": module_name, "qualname": qualname, "v": []}
    with pytest.raises(wire.WireError):
        wire.decode(node, [], classes=class_of_tests)
    with pytest.raises(wire.WireError):
        wire.decode({**node, "module": __name__, "qualname": "_Box"}, [])  # no classes taken here


def test_the_decoder_refuses_deep_nesting():
    node = 1
    for _ in range(100):
        node = {"k": "list", "v": [node]}
    with pytest.raises(wire.WireError, match="nested"):
        wire.decode(node, [])


def test_a_frame_nested_past_the_parser_is_refused():
    import socket

    ours, theirs = socket.socketpair()
    wire.send(theirs, {"value": "[" * 5000 + "]" * 5000}, [])
    head = b"[" * 5000 + b"]" * 5000  # deeper than the JSON parser recurses
    theirs.sendall(wire._LENGTH.pack(len(head)) + head)
    wire.receive(ours)  # a string value: fine
    with pytest.raises(wire.WireError, match="malformed"):
        wire.receive(ours)


class _OneProcess:
    """A zygote that hands out one process the test forked itself (an executor that lies)."""

    def __init__(self, pid: int, sock) -> None:
        self.pid, self.sock = pid, sock

    def spawn(self, first_ident):
        return self.pid, self.sock

    def reap(self, child):
        return os.waitpid(child, 0)[1]


def test_an_executor_answering_out_of_protocol_fails_the_test():
    import socket

    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        wire.receive(theirs)
        wire.send(theirs, {"seq": 1, "value": {"k": "pickle", "v": "cos\nsystem\n"}}, [])
        os._exit(0)

    executor = Executor(_OneProcess(pid, ours))
    with pytest.raises(ExecutorFailed, match="out of protocol"):
        executor.getattr(executor.base + 1, "anything")
    assert executor.broken
    with pytest.raises(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


_NO_TENSORFLOW = """
import sys
from pathlib import Path

import torch

from grader.remote import Executor, Zygote

zygote = Zygote.start(close=[], threads=1)
executor = Executor(zygote)
module = executor.load("pytorch.losses.cross_entropy", Path(sys.argv[1]))
x = torch.randn(3, requires_grad=True)
module.twice(x).sum().backward()
assert module.call_back(lambda t: t + 1, x).tolist() == (x + 1).tolist()
assert not module.tensorflow_loaded(), "the executor imported TensorFlow"
assert "tensorflow" not in sys.modules, "the trusted side imported TensorFlow"
executor.close()
zygote.close()
print("all held")
"""


def test_a_pytorch_crossing_imports_no_tensorflow_on_either_side(tmp_path):
    # TensorFlow's import takes seconds: a PyTorch exercise's first test paid it twice when an
    # empty list of Keras variables was taken on each side of every message.
    import subprocess
    import sys

    path = tmp_path / "pytorch" / "losses" / "cross_entropy.py"
    path.parent.mkdir(parents=True)
    path.write_text("import sys\n\ndef twice(x):\n    return 2 * x\n\ndef call_back(f, x):\n    return f(x)\n\n"
                    "def tensorflow_loaded():\n    return 'tensorflow' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", _NO_TENSORFLOW, str(tmp_path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "all held" in done.stdout, done.stderr[-3000:]


def test_an_executor_assigning_to_a_variable_it_was_never_sent_fails_the_test():
    import socket

    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        wire.receive(theirs)
        node = {"k": "tf_tensor", "dtype": "float32", "shape": [1], "device": "", "blob": 0}
        wire.send(theirs, {"seq": 1, "value": None, "keras": [[12345, node]]}, [bytes(4)])
        os._exit(0)

    executor = Executor(_OneProcess(pid, ours))
    with pytest.raises(ExecutorFailed, match="out of protocol.*not shared"):
        executor.getattr(executor.base + 1, "anything")
    assert executor.broken


# ----------------------------------------------------------------------------- in a grading run

_COUNTS_CHILDREN = '''
import os

# The grading process's own children when this module is imported (in it: not graded apart).
_children = open(f"/proc/self/task/{os.getpid()}/children").read().split()


def pairwise_sq_dists(a, b):
    raise RuntimeError(f"{len(_children)} child process(es)")
'''


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_a_run_grading_no_separate_exercise_forks_no_executor(tmp_path, fork):
    from grader import catalog
    from grader.engine.scoring import score_submission
    from tests.helpers import make_submission

    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    assert not ex.separate_process
    root = make_submission(tmp_path / "sub", {ex: _COUNTS_CHILDREN})
    result = score_submission(root, [ex.id], fork=fork, select={ex.id: ["test_pairwise_rejects_feature_mismatch"]})
    messages = {t.message for t in result.exercises[0].tests}
    assert messages and all("RuntimeError: 0 child process(es)" in m for m in messages), messages


@pytest.mark.parametrize("fork", [False, True], ids=["fresh", "forkserver"])
def test_a_hang_costs_only_the_tests_that_hang(tmp_path, fork):
    # coordinate_grid loops forever: its tests time out, and each test after one gets a fresh
    # executor, so sinusoidal_positions keeps its points, and so does another exercise graded
    # apart in the same run (its executor was never touched).
    from grader import catalog
    from grader.engine.sandbox import Limits
    from grader.engine.scoring import score_submission
    from tests.helpers import make_submission

    creation, inplace = (catalog.get_exercise(f"pytorch.tensors.{n}") for n in ("creation_ops", "inplace_ops"))
    assert creation.separate_process and inplace.separate_process
    head = "def coordinate_grid(h: int, w: int, *, device: str | torch.device | None = None) -> Tensor:\n"
    hangs = "import time\n" + creation.reference.read_text().replace(head, head + "    time.sleep(3600)\n")
    root = make_submission(tmp_path / "sub", {creation: hangs, inplace: inplace.reference})
    # A public grid test that hangs, a sinusoidal test after it, a hidden grid test that hangs
    # (every test of the exercise would wait out a dozen time limits).
    chosen = ["test_coordinate_grid_corners", "test_sinusoidal_first_rows", "test_grid_x_varies_along_width"]
    # The other exercise's quick tests: a hypothesis test of its could overrun 1 s on a busy machine.
    quick = ["test_ema_small_example", "test_ema_update_is_in_place_on_the_same_memory"]
    graded, other = score_submission(root, [creation.id, inplace.id], limits=Limits(test_s=1), fork=fork,
                                     select={creation.id: chosen, inplace.id: quick}).exercises
    assert other.score == other.max_score > 0
    assert {t.name.split("::")[-1]: t.status for t in graded.tests} == {
        "test_coordinate_grid_corners": "failed", "test_sinusoidal_first_rows": "passed",
        "test_grid_x_varies_along_width": "failed"}


# ----------------------------------------------------------------------------- mirrors


def test_a_module_built_there_is_a_module_here_of_the_same_shape(module):
    model = module.MLP([3, 4, 2])
    assert isinstance(model, torch.nn.Module) and type(model).__name__ == "MLP"
    assert type(model.net) is torch.nn.Sequential and [type(m) for m in model.net] == [torch.nn.Linear] * 2
    assert [n for n, _ in model.named_parameters()] == ["net.0.weight", "net.0.bias", "net.1.weight", "net.1.bias"]
    assert model.scale == 2.0  # read there
    assert "Linear(in_features=3, out_features=4" in repr(model)


def test_a_tensor_freed_in_the_request_that_lists_its_change_is_skipped_there(module, executor):
    # What a garbage collection between listing the mirrors' changes and sending the request
    # does: a shared tensor's change and the freeing of its id travel together.
    model = module.MLP([3, 4, 2])
    weight = model.net[0].weight
    with torch.no_grad():
        weight.add_(1.0)
    executor.release(executor.mirrors.tensor_id(weight))
    with torch.no_grad():  # a dead tensor is no input of the call's autograd node
        assert module.square(torch.ones(2)).tolist() == [1.0, 1.0]


def test_a_module_class_there_is_a_class_here_that_builds_there(module):
    cls = module.MLP
    assert isinstance(cls, type) and issubclass(cls, torch.nn.Module)
    assert isinstance(cls([2, 1]), cls) and isinstance(cls.tiny(), cls)  # a classmethod, there
    assert type(cls.tiny()).__name__ == "MLP"


def test_the_ops_of_a_mirror_are_counted_there_where_its_forward_runs(module):
    from grader.checks import count_aten_ops

    _, ops = count_aten_ops(module.MLP([2, 2]), torch.randn(3, 2))
    assert ops["addmm"] == 1 and ops["mul"] == 1


def test_a_mirror_computes_there_and_gradients_reach_its_parameters_here(module):
    model, x = module.MLP([3, 4, 2]), torch.randn(5, 3)
    same = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    same.load_state_dict(model.net.state_dict())
    assert torch.allclose(model(x), same(x) * 2)
    model(x).sum().backward()
    (same(x) * 2).sum().backward()
    assert all(torch.allclose(a.grad, b.grad) for a, b in zip(model.parameters(), same.parameters()))
    assert module.MLP([2, 1]).double_scale() == 4.0  # a method of the submission's class, there


def test_parameters_functional_call_swaps_in_and_back_reach_the_module_there_each_time(module):
    model, x = module.MLP([3, 2]), torch.randn(4, 3)
    own = {name: p.detach().clone() for name, p in model.named_parameters()}
    other = {name: torch.randn_like(p) for name, p in own.items()}
    for params in (other, own, other, own):  # swapped in for the call there, then back here
        got = torch.func.functional_call(model, params, (x,))
        assert torch.allclose(got, 2 * torch.nn.functional.linear(x, params["net.0.weight"], params["net.0.bias"]))
        assert torch.allclose(model(x), 2 * torch.nn.functional.linear(x, own["net.0.weight"], own["net.0.bias"]))


def test_what_the_test_changes_in_a_mirror_reaches_the_module_there(module):
    model, x = module.MLP([3, 2]), torch.randn(4, 3)
    with torch.no_grad():
        model.net[0].weight.data.zero_()  # through .data: no version bump
    model.net[0].bias.data = torch.ones(2)  # replaced
    assert torch.equal(model(x), torch.full((4, 2), 2.0))
    model.double()
    assert model(x.double()).dtype == torch.float64
    model.to("meta")  # new parameters here: they replace the old ones there
    assert model(torch.randn(4, 3, dtype=torch.float64, device="meta")).is_meta


def test_writes_that_leave_no_version_reach_there_in_grads_and_in_odd_layouts(module):
    torch.manual_seed(0)
    model, x = module.MLP([3, 3]), torch.randn(4, 3)
    model(x).sum().backward()
    weight, bias = model.net[0].weight, model.net[0].bias
    weight.grad.data.zero_()  # a .grad written through .data
    module.scale_grads(model.parameters(), 2.0)
    assert torch.equal(weight.grad, torch.zeros(3, 3))
    assert torch.equal(bias.grad, torch.full((3,), 16.0))  # 4 rows, times 2, times 2
    weight.data = weight.data.t()  # the same memory, another layout: not contiguous from now on
    assert torch.allclose(model(x), 2 * torch.nn.functional.linear(x, weight.detach(), bias.detach()))
    weight.data.mul_(3)  # through .data again, now on a tensor snapshotted on its own
    assert torch.allclose(model(x), 2 * torch.nn.functional.linear(x, weight.detach(), bias.detach()))


def test_a_grad_set_here_alone_and_one_set_beside_data_written_through_dot_data_both_reach_there(module):
    """A step whose parameter only got a new .grad here takes it without its data (as it was); one
    whose data was also written here through .data (no version bump) takes both."""
    p, twin = torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(3))
    opt, ref = module.sgd([p], 0.5), torch.optim.SGD([twin], lr=0.5, momentum=0.5)
    for step in range(4):
        for q in (p, twin):
            q.grad = torch.full((3,), float(step + 1))
            if step == 2:
                q.data.mul_(10)
        opt.step()
        ref.step()
        assert torch.equal(p.detach(), twin.detach()), f"after step {step + 1}"


def test_a_grad_written_there_through_dot_data_beside_a_step_reaches_here_and_one_left_alone_stays(module):
    """The parameters a call steps come back with their data; the .grad it wrote through .data
    (no version bump) comes back too, and one it did not touch stays the test's."""
    p = torch.nn.Parameter(torch.ones(3))
    opt = module.sgd([p], 0.5)
    p.grad = torch.full((3,), 2.0)
    opt.step()  # data changed there, the .grad left as it was
    assert torch.equal(p.detach(), torch.zeros(3)) and torch.equal(p.grad, torch.full((3,), 2.0))
    grad = p.grad
    module.step_then_clear_through_data([p], 1.0)
    assert torch.equal(p.detach(), torch.full((3,), -2.0)) and torch.equal(p.grad, torch.zeros(3))
    assert p.grad is grad  # changed in place there: in place here


def test_a_tensor_given_another_dtype_over_the_same_bytes_is_seen_to_change_with_its_data():
    from grader.remote._sync import Snapshots

    t = torch.ones(4)
    snapshots = Snapshots()
    snapshots.take([(1, t)])
    t.data = t.data.view(torch.int32)  # the same place, shape and bytes
    assert [tid for tid, _ in snapshots.differing([(1, t)])] == [1]
    change = snapshots.describe(1, t, out := [])
    assert wire.decode(change["data"], out).dtype == torch.int32


class Flagged(torch.nn.Module):
    """A module of the tests with plain data of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.linear, self.flag, self.history = torch.nn.Linear(2, 2), 1, ([],)


def test_plain_data_the_submission_sets_on_the_tests_module_reaches_it_with_its_type(module):
    model = Flagged()
    for value in (True, 1.0, 1, "1", (1,)):  # each equal to the last, or nearly: another type
        module.set_attribute(model, "flag", value)
        assert type(model.flag) is type(value) and model.flag == value
    for n in range(3):  # a list inside a tuple, appended to there
        module.append_to_first(model, "history", n)
        assert model.history == (list(range(n + 1)),)


def test_an_optimizer_whose_step_hook_holds_it_is_freed_on_both_sides_once_the_test_drops_it(module):
    model, x, y = _model(), torch.randn(5, 3), torch.randn(5, 2)

    class Spy:  # holds the optimizer it spies on; its bound method is the hook
        def __init__(self, opt):
            self.opt, self.steps = opt, []
            opt.register_step_pre_hook(self.seen)

        def seen(self, *_):
            self.steps.append(self.opt.param_groups[0]["lr"])

    spy = Spy(torch.optim.SGD(model.parameters(), lr=0.1))
    module.train(model, spy.opt, x, y)
    executor = object.__getattribute__(module, "_executor")
    assert spy.steps == [0.1] and len(executor.kept.objects) == 1
    freed = weakref.ref(spy.opt)
    del spy
    gc.collect()  # here, the call's graph: its node going tells the executor to free the call's
    module.collect()  # there, that graph, and the graphs of the hook's calls with it (said dropped)
    gc.collect()
    # Held by the callbacks' registry, the hook kept its optimizer alive here, that its copy
    # there, and that the hook's stand-in: neither side could ever free them.
    assert freed() is None
    module.collect()  # the copy is freed there, and the hook's stand-in with it
    assert not executor.kept.objects and not executor.callbacks.weak and not executor.callbacks.functions


def test_a_model_of_the_test_whose_hooks_hold_it_is_freed_on_both_sides_once_the_test_drops_it(module):
    class Spy:  # holds the model it spies on; its bound methods are the hooks
        def __init__(self, model):
            self.model, self.seen = model, []
            model.register_forward_hook(self.forward)  # the model's forward then runs here
            model.weight.register_hook(self.gradient)  # and this fires there, as a callback

        def forward(self, *_):
            self.seen.append("forward")

        def gradient(self, _):
            self.seen.append("gradient")

    spy = Spy(torch.nn.Linear(3, 2))
    module.two_steps(spy.model, torch.randn(4, 3))
    assert spy.seen == ["forward", "gradient"] * 2
    executor = object.__getattribute__(module, "_executor")
    freed = weakref.ref(spy.model)
    del spy
    gc.collect()  # here, the call's graph: its node going tells the executor to free the call's
    module.collect()  # there, that graph, and the graphs of the forward's calls here with it (said dropped)
    gc.collect()
    assert freed() is None
    module.collect()  # the copy is freed there, and the hooks' stand-ins with it
    assert not executor.mirrors.modules and not executor.callbacks.weak and not executor.callbacks.functions


def test_training_there_with_an_optimizer_here_changes_the_mirror(module):
    model = module.normed()
    assert type(model[1]) is torch.nn.BatchNorm1d  # torch's own: runs here
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    weight, mean = model[0].weight, model[1].running_mean.clone()
    before = model[3].weight.detach().clone()
    module.train(model, opt, torch.randn(8, 3), torch.randn(8, 1))
    assert model[0].weight is weight and not torch.equal(before, model[3].weight)
    assert not torch.equal(mean, model[1].running_mean)  # a kernel's update: no version bump there
    assert opt.state[model[3].weight]["momentum_buffer"] is not None
    trained, grad = model[3].weight.detach().clone(), model[3].weight.grad.clone()
    module.manual_sgd_all(model, 1.0)  # the .grad the call left there, and a write through .data
    assert torch.equal(model[3].weight.detach(), trained - grad)


def test_tied_weights_stay_tied_and_an_overridden_apply_runs_there(module):
    tied = module.Tied()
    assert tied.out.weight is tied.emb.weight and len(list(tied.parameters())) == 1
    tied(torch.tensor([1, 2])).sum().backward()
    assert tied.emb.weight.grad is not None
    tied.to("meta")  # the submission's _apply ties them again
    assert tied.out.weight is tied.emb.weight and tied.out.weight.is_meta


def test_a_module_of_the_test_kept_there_is_the_same_object_here(module):
    block = torch.nn.Linear(2, 2)
    kept = module.Keeps(block)
    assert kept.block is block and list(kept.parameters()) == list(block.parameters())
    kept(torch.randn(3, 2)).sum().backward()
    assert block.weight.grad is not None and block.weight.grad.abs().sum() > 0


def test_a_module_reshaped_or_hooked_there_is_so_here(module):
    model = module.MLP([1, 1])
    module.add_layer(model)
    assert type(model.extra) is torch.nn.Linear
    module.silence(model.net)
    assert isinstance(model.net, torch.nn.Sequential) and type(model.net) is not torch.nn.Sequential
    assert torch.equal(model(torch.ones(2, 1)), torch.zeros(2, 1))  # the hook ran there


def test_a_deep_copy_of_a_mirror_is_made_there_and_is_another_module(module):
    model = module.MLP([2, 2])
    twin = copy.deepcopy(model)
    assert type(twin).__name__ == "MLP" and twin is not model and twin.net[0].weight is not model.net[0].weight
    with torch.no_grad():
        twin.net[0].weight.zero_()
    assert not torch.equal(model.net[0].weight, twin.net[0].weight)
    with pytest.raises(TypeError, match="cannot be pickled here"):
        pickle.dumps(model)


# ----------------------------------------------------------------------------- callbacks


def test_a_function_of_the_test_runs_here_and_gradients_flow_through_it(module):
    x, seen = torch.randn(4), []

    def square_sum(z):
        seen.append(type(z))
        return (z ** 2).sum()

    assert torch.allclose(module.gradient(square_sum, x), 2 * x)
    assert torch.allclose(module.gradient(lambda z: (z ** 3).sum(), x), 3 * x ** 2)
    assert seen == [torch.Tensor]  # it ran here, on a plain tensor


def test_a_loss_function_of_the_test_sees_the_output_and_the_step_reaches_the_model(module):
    model, shapes = torch.nn.Linear(3, 1), []
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_fn(out, y):
        shapes.append(tuple(out.shape))
        return ((out - y) ** 2).mean()

    x, y = torch.randn(5, 3), torch.randn(5, 1)
    here = copy.deepcopy(model)
    expected = ((here(x) - y) ** 2).mean()
    expected.backward()
    with torch.no_grad():
        for p in here.parameters():
            p -= 0.1 * p.grad
    assert module.fit(model, opt, loss_fn, x, y) == pytest.approx(expected.item())
    assert shapes == [(5, 1)]
    assert torch.allclose(model.weight, here.weight) and torch.allclose(model.weight.grad, here.weight.grad)


def test_an_exception_of_a_test_function_is_raised_there_as_its_own_class(module):
    def try_batch(n):
        if n > 16:
            raise RuntimeError("CUDA out of memory")

    assert module.largest(try_batch, 2) == 16

    def broken(n):
        raise ValueError("not a memory error")

    with pytest.raises(ValueError, match="not a memory error"):
        module.largest(broken, 2)

    def oom():
        raise torch.OutOfMemoryError("out of memory")

    assert module.catches_oom(oom) == "caught"


def test_callbacks_nest_and_a_function_handed_back_is_the_same_function(module):
    def outer(t):
        return module.apply_twice(lambda u: u + 1, t) * 2

    assert torch.equal(module.apply_twice(outer, torch.zeros(2)), torch.full((2,), 12.0))
    fn = lambda: 1  # noqa: E731
    assert module.same(fn) is fn


def test_a_double_backward_through_a_call_there_matches_autograd_here(module):
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradgradcheck(module.square, (x,))
    (g,) = torch.autograd.grad(module.square(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad((g ** 2).sum(), x)
    assert torch.allclose(h, 8 * x)


def test_a_second_derivative_through_a_function_of_the_test_called_there(module):
    x = torch.tensor([-1.5, 0.0, 0.5, 2.0], dtype=torch.float64)

    def first(z):
        return module.gradient_graph(lambda t: (t ** 3).sum(), z)

    assert torch.allclose(module.gradient(lambda z: first(z).sum(), x), 6 * x)


def test_a_result_of_autograd_arrives_as_one_not_as_a_leaf(module):
    leaf = torch.randn(2, requires_grad=True)
    assert module.is_leaf(leaf) is True and module.is_leaf(leaf * 2) is False


def test_a_second_backward_through_a_freed_graph_raises_as_in_one_process(module):
    x = torch.randn(3, requires_grad=True)
    out = module.square(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()
    with pytest.raises(RuntimeError, match="second time"):
        module.backward_twice(lambda z: (z * 3).sum(), torch.randn(2, requires_grad=True))


class Counting(torch.nn.Module):
    """A model of the tests that records its forward passes."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(3, 1)
        self.modes: list[bool] = []

    def forward(self, x):
        self.modes.append(self.training)
        return self.inner(x)


class Logged(torch.nn.Module):
    """A block of the tests that logs each forward into a list it shares, with batch norm."""

    def __init__(self, log: list) -> None:
        super().__init__()
        self.log = log
        self.linear, self.norm = torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)

    def forward(self, x):
        self.log.append(len(self.log))
        return self.norm(self.linear(x))


def test_a_backward_that_recomputes_the_tests_modules_brings_what_it_changed_here(module, executor):
    from torch.utils.checkpoint import checkpoint

    blocks = torch.nn.ModuleList([Logged([]), Logged([])])
    blocks[1].log = log = blocks[0].log
    local = copy.deepcopy(blocks)  # the same, checkpointed in this process
    x = torch.randn(4, 3, requires_grad=True)
    x_here = x.detach().clone().requires_grad_(True)
    out, want = module.checkpointed(blocks, x), x_here
    for block in local:
        want = checkpoint(block, want, use_reentrant=False)
    assert log == local[0].log == [0, 1]
    weights = torch.randn(4, 3)  # batch norm's outputs sum to a constant: a plain sum has no gradient
    evidence = executor.evidence_taken
    (out * weights).sum().backward()
    (want * weights).sum().backward()
    assert log == local[0].log == [0, 1, 2, 3] and blocks[1].log is log  # the recomputation's forwards
    assert executor.evidence_taken > evidence  # the log, as the executor's copies wrote it
    for block, same in zip(blocks, local, strict=True):  # batch norm's statistics, updated again
        assert torch.allclose(block.norm.running_mean, same.norm.running_mean)
        assert int(block.norm.num_batches_tracked) == int(same.norm.num_batches_tracked) == 2
    # Batch norm's backward sums in an order that depends on the threads each process runs with:
    # the two differ by a few ulps of the largest value (5e-7 seen beside values of 7.6).
    torch.testing.assert_close(x.grad, x_here.grad, rtol=1e-5, atol=1e-5)


class RecordingScaler(torch.amp.GradScaler):
    """A GradScaler of the tests that records the calls made to it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []
        self.dtypes: list[torch.dtype] = []

    def scale(self, outputs):
        self.calls.append("scale")
        self.dtypes.append(outputs.dtype)
        return super().scale(outputs)

    def step(self, optimizer, *args, **kwargs):
        self.calls.append("step")
        return super().step(optimizer, *args, **kwargs)


def test_a_kept_object_of_a_class_of_the_tests_keeps_the_data_it_adds_in_step(module, executor):
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    evidence = executor.evidence_taken
    module.scaled_step(model, opt, torch.amp.GradScaler("cpu"), torch.randn(2, 3))
    assert executor.evidence_taken == evidence  # torch's own classes: their state dicts only
    scaler = RecordingScaler("cpu", init_scale=4.0, growth_interval=1)
    calls = scaler.calls
    module.scaled_step(model, opt, scaler, torch.randn(2, 3))
    assert executor.evidence_taken > evidence  # what the spy recorded is the executor's word
    assert calls == ["scale", "step"] and scaler.calls is calls and scaler.dtypes == [torch.float32]
    assert scaler.get_scale() == 8.0  # its state dict, as before
    calls.clear()  # what the test changes reaches the copy there
    module.scaled_step(model, opt, scaler, torch.randn(2, 3))
    assert calls == ["scale", "step"] and scaler.dtypes == [torch.float32] * 2


def test_the_data_a_class_of_the_tests_adds_to_a_kept_kind_is_its_own_plain_data_only():
    from grader.remote._kept import own_data

    class Spy(torch.optim.SGD):
        def __init__(self, params, **kwargs) -> None:
            super().__init__(params, **kwargs)
            self.seen, self._mine, self.weights = [], [1], torch.ones(1)

    spy = Spy([torch.zeros(1, requires_grad=True)], lr=0.1)
    assert own_data(spy) == {"seen": []}  # not param_groups, defaults or state; nothing private, no tensor
    assert own_data(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)) == {}


def test_saved_tensors_are_counted_there(module, executor):
    from grader.checks import count_saved_tensors

    x = torch.randn(3, requires_grad=True)
    evidence = executor.evidence_taken
    out, there = count_saved_tensors(module.square, x)
    assert executor.evidence_taken == evidence + 1
    assert there == count_saved_tensors(lambda t: t * t, x)[1] == 2 and torch.equal(out, x * x)


def test_what_a_module_of_the_tests_records_there_it_records_here_and_an_optimizer_hook_fires(module):
    model = Counting()
    modes = model.modes
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps, grads = [], []
    opt.register_step_pre_hook(lambda o, a, k: grads.append(model.inner.weight.grad.clone()))
    opt.register_step_post_hook(lambda *_: steps.append(1))
    before = model.inner.weight.detach().clone()
    module.fit(model, opt, lambda out, y: ((out - y) ** 2).mean(), torch.randn(4, 3), torch.randn(4, 1))
    assert modes == [True] and model.modes is modes and steps == [1]  # the test's own list, changed in place
    assert torch.allclose(model.inner.weight, before - 0.1 * grads[0])  # the grads the step saw here


def test_the_hooks_of_a_test_module_fire_once_here_when_the_submission_calls_it(module):
    model, seen = torch.nn.Sequential(torch.nn.Linear(3, 1)), []
    model.register_forward_hook(lambda m, args, out: seen.append((m, tuple(out.shape))))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    module.fit(model, opt, lambda out, y: ((out - y) ** 2).mean(), torch.randn(4, 3), torch.randn(4, 1))
    assert seen == [(model, (4, 1))]


def test_a_scheduler_made_there_on_an_optimizer_here_sets_its_learning_rates(module):
    weight = torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([weight], lr=1.0)
    sched = module.warmup_schedule(opt, 4)
    assert isinstance(sched, torch.optim.lr_scheduler.LambdaLR) and type(sched).__name__ == "LambdaLR"
    assert sched.optimizer is opt  # the kept copy comes back as the test's own
    assert opt.param_groups[0]["lr"] == 0.25 and opt.param_groups[0]["initial_lr"] == 1.0
    for done in range(1, 6):
        opt.step()
        sched.step()
        assert opt.param_groups[0]["lr"] == min(1.0, (done + 1) / 4)
    opt.param_groups[0]["lr"] = 0.125  # set here, read there
    assert module.first_lr(opt) == 0.125
    copy_state = opt.state_dict()
    resumed = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=9.0)
    resumed.load_state_dict(copy_state)
    assert module.first_lr(resumed) == 0.125  # another optimizer: a copy of its own


def test_a_kept_optimizers_state_changed_only_in_its_bits_or_in_a_values_type_crosses_both_ways(module):
    weight = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([weight], lr=1, momentum=0.5)
    weight.grad = torch.ones(3)
    opt.step()  # a momentum buffer of ones
    assert module.first_lr(opt) == 1  # sent: kept in step from now on
    module.scale_momentum_through_data(opt, 2.0)
    assert torch.equal(opt.state[weight]["momentum_buffer"], torch.full((3,), 2.0))
    with torch.no_grad():
        opt.state[weight]["momentum_buffer"].data.add_(1.0)  # here, likewise without a version
    assert torch.equal(module.momentum_buffers(opt)[0], torch.full((3,), 3.0))
    for lr in (1.0, True, -0.0, 0.0, float("nan")):  # each equal to the one before it, or NaN
        module.set_first_lr(opt, lr)
        got = opt.param_groups[0]["lr"]
        assert type(got) is type(lr) and repr(got) == repr(lr)
    opt.param_groups[0]["lr"] = 0.5
    assert module.first_lr(opt) == 0.5


def test_a_kept_copy_is_freed_there_with_its_original(module, executor):
    import gc

    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    assert module.first_lr(opt) == 0.5
    (ident,) = executor.kept.objects
    del opt
    gc.collect()
    assert ident in executor.to_free and not executor.kept.objects
    module.first_lr(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.25))


def test_a_handle_is_an_instance_of_the_torch_class_its_object_derives_from(module, executor):
    squares = module.Squares()
    before = executor.evidence_taken
    assert type(squares).__name__ == "Squares" and len(squares) == 3
    assert executor.evidence_taken == before  # nothing asked of its class yet
    assert isinstance(squares, torch.utils.data.Dataset)
    assert executor.evidence_taken > before  # the executor's word decided it
    assert not isinstance(squares, torch.utils.data.Sampler)
    box = module.Box(1)
    assert not isinstance(box, torch.utils.data.Dataset) and box.__class__ is type(box)


@pytest.mark.parametrize("claim", [["os", "system"], ["torch.optim.optimizer", "os"],
                                   ["torch.optim", "lr_scheduler"], ["torch.optimx", "Optimizer"],
                                   ["torch.optim.sgd", "Optimizer"], [1, 2], "torch.optim.Optimizer",
                                   ["torch.utils.data.datapipes.datapipe", "IterDataPipe"]])
def test_a_claim_of_a_class_that_is_not_a_claimable_torch_class_is_refused(executor, claim):
    node = {"k": "handle", "id": executor.base + 1, "type": "X", "callable": False, "claim": claim}
    with pytest.raises(wire.WireError):
        executor._object(node, [])


def test_iterating_there_draws_from_the_rng_as_here(module):
    sampler = module.Shuffled(20)
    assert isinstance(sampler, torch.utils.data.Sampler) and type(sampler).__name__ == "Shuffled"
    torch.manual_seed(4)
    first = list(sampler)
    after_first = torch.rand(1)  # the state the pass left, taken here
    torch.manual_seed(4)
    assert list(sampler) == first and torch.equal(torch.rand(1), after_first)
    torch.manual_seed(4)
    assert first == torch.randperm(20).tolist()
    assert list(sampler) != first  # a second pass without reseeding draws afresh


def test_a_gradient_made_with_create_graph_there_requires_grad_here(module):
    torch.manual_seed(0)
    model, x = torch.nn.Linear(3, 2), torch.randn(4, 3)
    local = copy.deepcopy(model)
    local(x).pow(2).sum().backward(create_graph=True)
    module.backward_with_graph(model, x)
    for p, q in zip(model.parameters(), local.parameters()):
        assert p.grad.requires_grad and p.grad.grad_fn is None  # a leaf: its graph stays there
        assert torch.allclose(p.grad.detach(), q.grad.detach())
    model.zero_grad(set_to_none=True)
    module.train(model, torch.optim.SGD(model.parameters(), lr=0.1), x, torch.zeros(4, 2))
    assert all(not p.grad.requires_grad for p in model.parameters())


def test_a_callback_graph_the_call_freed_there_is_freed_here_when_it_returns(module):
    import gc
    import weakref

    refs = {}

    def loss_fn(out):
        loss = out.pow(2).sum()
        refs["output"], refs["loss"] = weakref.ref(out), weakref.ref(loss)
        return loss

    x = torch.randn(3, requires_grad=True)
    assert module.loss_through(loss_fn, x) == pytest.approx(float((2 * x.detach()).pow(2).sum()))
    assert torch.allclose(x.grad, 8 * x.detach())
    gc.collect()
    assert refs and all(ref() is None for ref in refs.values())


def test_a_gradient_hook_of_the_test_fires_once_where_the_backward_runs(module):
    torch.manual_seed(0)
    model, x = torch.nn.Linear(3, 2), torch.randn(4, 3)
    seen = []
    handle = model.weight.register_hook(lambda grad: seen.append(grad.clone()))
    halved = model.bias.register_hook(lambda grad: grad / 2)  # a hook's result replaces the gradient
    module.two_steps(model, x)  # the backward runs there
    assert len(seen) == 2 and torch.allclose(seen[0], torch.ones(4, 2).T @ x)
    assert torch.allclose(model.bias.grad, torch.full((2,), 4.0 / 2 + 0.5 / 2))
    model.zero_grad()
    model(x).sum().backward()  # the backward runs here, through the call's node: here only
    assert len(seen) == 3 and torch.allclose(model.bias.grad, torch.full((2,), 2.0))
    handle.remove()
    halved.remove()
    module.two_steps(model, x)
    assert len(seen) == 3
    built_there = module.MLP([3, 2])  # its forward runs there: the product is asked of it
    built_there.net[0].weight.register_hook(lambda grad: seen.append(grad))
    built_there(x).sum().backward()
    assert len(seen) == 4 and torch.allclose(seen[-1], 2 * torch.ones(4, 2).T @ x)


def test_step_hooks_added_or_removed_after_an_optimizer_was_sent_follow_it(module):
    model, x, y = _model(), torch.randn(5, 3), torch.randn(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = []
    first = opt.register_step_pre_hook(lambda *_: steps.append("first"))
    module.train(model, opt, x, y)
    second = opt.register_step_post_hook(lambda *_: steps.append("second"))
    module.train(model, opt, x, y)
    first.remove()
    module.train(model, opt, x, y)
    second.remove()
    module.train(model, opt, x, y)
    assert steps == ["first", "first", "second", "second"]


def test_a_gradient_hook_fires_once_when_the_forward_ran_here_and_the_backward_there(module):
    torch.manual_seed(0)
    model, x = torch.nn.Linear(3, 2), torch.randn(4, 3)
    model.register_forward_hook(lambda *_: None)  # a hooked module's forward runs here
    seen = []
    model.weight.register_hook(lambda grad: seen.append(grad.clone()))
    module.two_steps(model, x)
    assert len(seen) == 2 and torch.allclose(seen[0], torch.ones(4, 2).T @ x)
    assert torch.allclose(model.weight.grad, 1.125 * torch.ones(4, 2).T @ x)  # a sum, then a mean of 8


def test_a_step_hook_sent_with_a_call_that_calls_back_into_the_submission_is_removed_there_too(module):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    steps = []
    handle = opt.register_step_pre_hook(lambda *_: steps.append("step"))
    other = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.5)
    module.step_after(lambda: module.first_lr(other), opt)  # a call inside the call
    handle.remove()
    module.step_after(lambda: None, opt)
    assert steps == ["step"]


def test_a_method_read_again_of_a_class_read_before_is_read_there_at_the_next_request(module):
    from grader import _crossings

    box = module.Box(3)
    assert box.double() == 6  # the first read of Box's method asks
    with _crossings.watched() as watch:
        method = box.double
        other = module.Box(5).double
    assert watch.requests == 1  # the second Box's making alone
    with _crossings.watched() as watch:
        assert method() == 6 and other() == 10
    assert watch.requests == 2  # each read with its call
    assert type(method).__name__ == "method" and callable(method)
    # An attribute of the instance that hides the method since is what a read gives, as in one process.
    box.double = module.same
    assert box.double(7) == 7
    assert module.Box(2).double() == 4
