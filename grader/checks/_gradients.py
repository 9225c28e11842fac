"""Gradient checks against finite differences, in float64, with learner-readable failures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError


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
        torch.autograd.gradcheck(fn, leaves, eps=eps, atol=atol, rtol=rtol)
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
