"""Gradient checks against finite differences, in float64, with learner-readable failures."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from grader import _crossings

BATCH = 256  # finite-difference evaluations asked of a submission's process per request


def as_float64_leaves(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Floating tensors become float64 leaves that require grad; everything else passes through."""
    return tuple(x.detach().to(torch.float64).requires_grad_(True)
                 if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs)


def _outputs(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> tuple[torch.Tensor, ...]:
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(o for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point())


def _jacobians(fn, inputs, eps: float):
    """Analytical (autograd) and numerical (central differences) Jacobians per (output, input)."""
    diff = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    outs = _outputs(fn, inputs)
    pairs = []
    for o_idx, out in enumerate(outs):
        for i in diff:
            x = inputs[i]
            analytical = torch.zeros(out.numel(), x.numel(), dtype=torch.float64)
            if out.requires_grad:
                for k in range(out.numel()):
                    grad, = torch.autograd.grad(out.reshape(-1)[k], x, retain_graph=True,
                                                allow_unused=True)
                    if grad is not None:
                        analytical[k] = grad.reshape(-1)
            numerical = torch.zeros_like(analytical)
            flat = x.detach().reshape(-1)
            for j in range(x.numel()):
                with torch.no_grad():
                    orig = flat[j].item()
                    probe = [t.detach() if isinstance(t, torch.Tensor) else t for t in inputs]
                    plus, minus = flat.clone(), flat.clone()
                    plus[j], minus[j] = orig + eps, orig - eps
                    probe[i] = plus.reshape(x.shape)
                    f_plus = _outputs(fn, tuple(probe))[o_idx].reshape(-1)
                    probe[i] = minus.reshape(x.shape)
                    f_minus = _outputs(fn, tuple(probe))[o_idx].reshape(-1)
                numerical[:, j] = (f_plus - f_minus) / (2 * eps)
            pairs.append((o_idx, i, analytical, numerical))
    return pairs


def _explain(fn, inputs, name: str, eps: float, atol: float, rtol: float) -> str:
    try:
        pairs = _jacobians(fn, inputs, eps)
    except Exception as exc:  # noqa: BLE001 - the learner's backward may raise
        return f"{name}: computing gradients raised {type(exc).__name__}: {exc!s:.300}"
    worst = None
    for o_idx, i, analytical, numerical in pairs:
        err = (analytical - numerical).abs() - rtol * numerical.abs()
        if err.numel() and (worst is None or err.max() > worst[0]):
            k, j = divmod(int(err.argmax()), err.shape[1])
            worst = (float(err.max()), o_idx, i, k, j, analytical[k, j].item(), numerical[k, j].item())
    if worst is None or worst[0] <= atol:
        return f"{name}: torch.autograd.gradcheck failed (gradients agree elementwise; " \
               "check that backward does not depend on state outside its inputs)"
    _, o_idx, i, k, j, a, n = worst
    return (f"{name}: gradient of output {o_idx} element {k} with respect to input {i} element {j} "
            f"is {a:.6g}, but finite differences give {n:.6g}")


def _weighted_grads(fn: Callable[..., Any], leaves: tuple[Any, ...]) -> list[torch.Tensor]:
    """Gradients of ``sum(w_k * out_k)`` w.r.t. each floating leaf, with fixed pseudo-random ``w``."""
    outs = _outputs(fn, leaves)
    gen = torch.Generator().manual_seed(0)
    total = sum((o * torch.randn(o.shape, generator=gen, dtype=o.dtype)).sum() for o in outs)
    diff = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad]
    grads = torch.autograd.grad(total, diff, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(diff, grads)]


class _Evaluations:
    """``fn`` as ``torch.autograd.gradcheck`` evaluates it at ``leaves``, and at each of its
    finite-difference points in turn (each element of each leaf that requires grad, minus then
    plus ``eps``).

    Where ``fn`` only forwards the leaves to one call of a submission's function graded in a
    process of its own (``grader.remote``) and returns that call's result, as its first two
    evaluations (at the leaves, and at the first point) show, the points after those are
    evaluated there in batches (``call_each_in_executor``): the same calls, in the same order,
    with a request per ``BATCH`` of them instead of one each. An evaluation that is not the
    next point, and every one after it, is ``fn``'s own call, as is each point the batch did
    not answer (its call raised, or changed an argument in place).
    """

    def __init__(self, fn: Callable[..., Any], leaves: tuple[Any, ...], eps: float) -> None:
        self.fn, self.leaves, self.eps = fn, leaves, eps
        self.diff = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.requires_grad]
        self.origins = {i: leaves[i].detach().clone() for i in self.diff}
        self.points = self._points()
        self.forwarded: tuple | None = None  # (handle, args, kwargs) of the call at the leaves
        self.served: deque = deque()  # (point, result) the batches answered, in order
        self.raised: tuple | None = None  # (point, exception) of the call a batch ended at
        self.more = True  # whether a batch may follow the ones asked for
        self.evaluations = 0
        self.off = False  # every evaluation from now on is fn's own call

    def _points(self) -> Iterator[dict[int, torch.Tensor]]:
        """gradcheck's points, in its order: each leaf's values, one element moved."""
        for i in self.diff:
            origin = self.origins[i]
            for index in itertools.product(*(range(n) for n in origin.shape)):
                entry = origin[index]
                for value in (entry - self.eps, entry + self.eps):
                    moved = origin.clone()
                    moved[index] = value
                    yield {**self.origins, i: moved}

    def __call__(self, *inputs: Any) -> Any:
        self.evaluations += 1
        if self.off or not (len(inputs) == len(self.leaves)
                            and all(x is y for x, y in zip(inputs, self.leaves, strict=True))):
            self.off = True
            return self.fn(*inputs)
        if self.evaluations <= 2:  # at the leaves, then at the first point: fn's own calls, watched
            point = None if self.evaluations == 1 else next(self.points, None)
            with _crossings.watched() as watch:
                result = self.fn(*inputs)
            self.off = point is not None and not self._at(point) or not self._watched(watch, result)
            if self.evaluations == 1 and not self.off:
                _expect_jacobian_rows(result)
            return result
        if not self.served and self.more:
            self._fetch()
        if self.served and self._at(self.served[0][0]):
            return self.served.popleft()[1]
        self.off = True
        if not self.served and self.raised is not None and self._at(self.raised[0]):
            raise self.raised[1]
        return self.fn(*inputs)

    def _at(self, point: dict[int, torch.Tensor]) -> bool:
        return all(torch.equal(self.leaves[i].detach(), point[i]) for i in self.diff)

    def _watched(self, watch: _crossings.Watch, result: Any) -> bool:
        """Whether this evaluation was one call of a handle that can batch, returning its
        result, with the leaves that require grad among its own arguments, and the same call
        as the evaluation before (the same objects but for the leaves)."""
        if watch.requests != 1 or len(watch.calls) != 1 or watch.calls[0][3] is not result:
            return False
        handle, args, kwargs, _ = watch.calls[0]
        call = (handle, args, kwargs)
        if self.forwarded is None:
            self.forwarded = call if self._forwards(call) else None
            return self.forwarded is not None
        return _same_call(self.forwarded, call)

    def _forwards(self, call: tuple) -> bool:
        handle, args, kwargs = call
        if getattr(type(handle), "call_each_in_executor", None) is None:
            return False
        given = [*args, *kwargs.values()]
        leaves = [self.leaves[i] for i in self.diff]
        if not all(x.device.type == "cpu" and x.layout == torch.strided and any(a is x for a in given)
                   for x in leaves):
            return False
        # Any other tensor among them shares no leaf's memory (a view of one moves with it).
        storages = {x.untyped_storage().data_ptr() for x in leaves}
        others = [a for a in given if not any(a is x for x in leaves)]
        return all(_plain(a, storages) for a in others)

    def _fetch(self) -> None:
        """Ask for the next batch of points, as the forwarded call makes them."""
        handle, args, kwargs = self.forwarded
        points = list(itertools.islice(self.points, BATCH))
        if not points:
            return
        place = {id(self.leaves[i]): i for i in self.diff}

        def moved(value: Any, point: dict) -> Any:
            i = place.get(id(value))
            return point[i] if i is not None and value is self.leaves[i] else value

        calls = [(tuple(moved(a, p) for a in args), {k: moved(v, p) for k, v in kwargs.items()}) for p in points]
        grad_at = [n for n, a in enumerate(args) if id(a) in place] + [k for k, v in kwargs.items() if id(v) in place]
        results, raised = handle.call_each_in_executor(calls, grad_at)
        self.served.extend(zip(points, results))
        if len(results) < len(points):  # the calls ended early: the ones after are fn's own
            self.more = False
            self.raised = None if raised is None else (points[len(results)], raised)


def _expect_jacobian_rows(out: Any) -> None:
    """Tell the node of a call into a submission's process that made ``out``, the one tensor
    that call returned, of the products gradcheck asks of it next: each row of the Jacobian,
    twice (the second time to see that backward gives the same), which it then asks for in
    one request (``expect_products``). Up to ``BATCH`` rows."""
    node = getattr(out, "grad_fn", None) if isinstance(out, torch.Tensor) else None
    expect = getattr(getattr(type(node), "_forward_cls", None), "expect_products", None)
    if expect is None or out.numel() > BATCH:
        return
    rows = []
    for j in range(out.numel()):
        row = torch.zeros_like(out, memory_format=torch.legacy_contiguous_format)
        row.view(-1)[j] = 1.0
        rows.append((row,))
    expect(node, rows * 2)


def _same_call(first: tuple, second: tuple) -> bool:
    """Whether two forwarded calls are of one handle with the same objects, the leaves apart
    (the point's values)."""
    (h1, a1, k1), (h2, a2, k2) = first, second
    if h1 is not h2 or len(a1) != len(a2) or k1.keys() != k2.keys():
        return False
    return all(x is y for x, y in zip((*a1, *k1.values()), (*a2, *k2.values()), strict=True))


def _plain(value: Any, storages: set[int]) -> bool:
    """A value whose evaluation at another point is the same: a string, number, dtype or None,
    or a tensor that requires no grad and shares no memory of ``storages``, or a tuple, list
    or dict of such."""
    if value is None or type(value) in (bool, int, float, str, torch.dtype):
        return True
    if isinstance(value, torch.Tensor):
        return (not value.requires_grad and value.device.type == "cpu" and value.layout == torch.strided
                and value.untyped_storage().data_ptr() not in storages)
    if type(value) in (tuple, list):
        return all(_plain(v, storages) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, storages) for k, v in value.items())
    return False


def check_gradients(fn: Callable[..., Any], *inputs: Any, name: str = "function",
                    second_order: bool = False, eps: float = 1e-6, atol: float = 1e-5,
                    rtol: float = 1e-3, reference: Callable[..., Any] | None = None) -> None:
    """Check ``fn``'s gradients w.r.t. every floating tensor input against finite differences.

    Floating tensor inputs are converted to float64 leaves first (so learners' code must accept
    float64). ``second_order`` also runs ``gradgradcheck``. With ``reference`` (an independent
    implementation, e.g. torch's own op), the gradients must also equal the reference's: a function
    whose autograd merely agrees with its own finite differences (zeros, say) does not pass.
    Raises ``AssertionError`` naming the output/input element whose gradient is wrong, or saying
    that the output is not connected to the inputs.
    """
    leaves = as_float64_leaves(inputs)
    outs = _outputs(fn, leaves)
    if not outs:
        raise AssertionError(f"{name}: returned no floating-point tensor to differentiate")
    if not any(o.requires_grad for o in outs):
        raise AssertionError(f"{name}: the output does not require grad, so no gradient can flow "
                             "back to the inputs (was it detached, or built with torch.tensor()?)")
    try:
        torch.autograd.gradcheck(_Evaluations(fn, leaves, eps), leaves, eps=eps, atol=atol, rtol=rtol)
    except GradcheckError:
        raise AssertionError(_explain(fn, leaves, name, eps, atol, rtol)) from None
    except RuntimeError as exc:
        raise AssertionError(f"{name}: backward raised RuntimeError: {exc!s:.300}") from None
    if second_order:
        try:
            torch.autograd.gradgradcheck(fn, leaves, eps=eps, atol=atol, rtol=rtol)
        except RuntimeError as exc:  # GradcheckError is a RuntimeError
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise AssertionError(f"{name}: second derivatives (double backward) do not match finite "
                                 f"differences: {first:.300}") from None
    if reference is not None:
        expected = _weighted_grads(reference, leaves)
        try:
            got = _weighted_grads(fn, leaves)
        except RuntimeError as exc:
            raise AssertionError(f"{name}: backward raised RuntimeError: {exc!s:.300}") from None
        for i, (g, e) in enumerate(zip(got, expected)):
            if g.shape != e.shape or not torch.allclose(g, e, rtol=rtol, atol=atol):
                err = (g - e).abs().max().item() if g.shape == e.shape else float("nan")
                raise AssertionError(f"{name}: gradient with respect to input {i} differs from the "
                                     f"correct gradient (largest difference {err:.3g})")


def autograd_function(t: torch.Tensor) -> type | None:
    """The ``torch.autograd.Function`` subclass whose ``apply`` made ``t`` (the class behind
    ``t.grad_fn``), or None when no such node made it (a leaf, a built-in op's node).

    A tensor a submission graded in a process of its own (``grader.remote``) returned is asked
    about there: the answer is that process's class (the very object ``impl.TheClass`` reads
    as), and the test that asks is marked as checked in that process.
    """
    node = t.grad_fn
    made_by = getattr(type(node), "_forward_cls", None) if node is not None else None
    there = getattr(made_by, "function_there", None)  # the node of a call into that process
    return there(node, t) if there is not None else made_by
