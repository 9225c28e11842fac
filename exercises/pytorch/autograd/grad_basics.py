"""Autograd basics: gradients, Jacobians and gradient accumulation.

The question
------------
Autograd is PyTorch's reverse-mode automatic differentiation engine. Every operation on a tensor
that requires grad is recorded in a graph built on the fly; ``backward()`` (or
``torch.autograd.grad``) walks that graph from an output back to the inputs with the chain rule.
(Old code wraps tensors in ``Variable``: since PyTorch 0.4 a ``Variable`` is just a ``Tensor``.)
Interviewers ask what ``requires_grad`` does, what ends up in ``.grad``, why gradients add up until
you zero them, and how to get a derivative of a derivative. This exercise makes each answer
executable.

Your task
---------
1. ``gradient(f, x, *, create_graph=False)``: the gradient of a scalar function ``f`` at ``x``,
   computed as a pure function: the caller's ``x`` is left exactly as it was.
2. ``jacobian(f, x)``: the full Jacobian of a tensor-valued ``f`` at ``x``, built from reverse-mode
   gradients yourself.
3. ``accumulate(f, x, times)``: call ``backward`` on ``f(x)`` ``times`` times without zeroing, to
   show (and return) what piles up in ``x.grad``.

Contract
--------
``gradient(f, x, *, create_graph=False) -> Tensor``

- ``f`` maps a tensor shaped like ``x`` to a tensor with exactly one element (shape ``()`` or
  ``(1,)``, ...); anything else raises ``ValueError`` naming ``f``. ``x`` must be a floating-point
  tensor, otherwise ``TypeError`` naming ``x``.
- Returns ``df/dx`` with the shape, dtype and device of ``x``.
- ``x`` is not touched: ``x.requires_grad`` and ``x.grad`` are the same after the call as before
  (``x.grad`` stays ``None`` if it was ``None``), and so are its values.
- If ``x`` already requires grad (a leaf or the result of other operations), the gradient is taken
  with respect to ``x`` itself, so that with ``create_graph=True`` the returned gradient is part of
  the autograd graph and can be differentiated again, e.g. a second derivative is
  ``gradient(lambda z: gradient(f, z, create_graph=True).sum(), x)``.
- With ``create_graph=False`` the result carries no autograd history (``requires_grad`` is False).
- If ``f(x)`` does not depend on ``x`` at all (e.g. it returns a constant), the gradient is zeros.
- It works even when called inside ``torch.no_grad()`` (e.g. from a validation loop).

``jacobian(f, x) -> Tensor``

- ``f`` maps ``x`` (floating point, any shape) to a tensor of any shape ``out`` (0-dim included).
  Returns ``J`` of shape ``(*out.shape, *x.shape)`` with
  ``J[i..., j...] = d out[i...] / d x[j...]``, in ``x``'s dtype and on ``x``'s device, without
  autograd history.
- Outputs that do not depend on ``x`` give zero rows. ``x`` is not touched (as for ``gradient``).
- Do not use ``torch.autograd.functional`` or the ``torch.func`` transforms (``jacrev``,
  ``jacfwd``, ``vjp``, ...): build it from ``torch.autograd.grad``.

``accumulate(f, x, times) -> Tensor``

- ``x`` must be a leaf tensor that requires grad (``ValueError`` naming ``x`` otherwise);
  ``times`` a positive ``int`` (``ValueError`` naming ``times`` otherwise).
- Evaluates the scalar ``f(x)`` and calls ``backward`` on it, ``times`` times, never zeroing
  ``x.grad``: whatever ``x.grad`` held before the call is kept and added to.
- Returns ``x.grad`` after the last backward, i.e. ``old_grad + times * df/dx``.

Hints
-----
- ``torch.autograd.grad(outputs, inputs, ...)`` returns gradients instead of writing ``.grad``.
  Look at its ``create_graph``, ``allow_unused`` and ``materialize_grads`` arguments.
- ``x.detach().requires_grad_()`` gives a new leaf that shares ``x``'s data but not its flags.
  When is that the right thing to differentiate against, and when does it cut the graph a
  second derivative needs?
- A Jacobian row is a vector-Jacobian product with a one-hot vector.
- ``backward()`` frees the graph it walks: a second ``backward`` on the same output needs a new
  forward pass (or ``retain_graph=True``).
"""

from typing import Callable

from torch import Tensor


def gradient(f: Callable[[Tensor], Tensor], x: Tensor, *, create_graph: bool = False) -> Tensor:
    """``df/dx`` for a scalar ``f``, shaped like ``x``, leaving ``x.grad`` and flags untouched."""
    raise NotImplementedError


def jacobian(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """The Jacobian of ``f`` at ``x``, shape ``(*f(x).shape, *x.shape)``."""
    raise NotImplementedError


def accumulate(f: Callable[[Tensor], Tensor], x: Tensor, times: int) -> Tensor:
    """Call ``f(x).backward()`` ``times`` times without zeroing; return the resulting ``x.grad``."""
    raise NotImplementedError
