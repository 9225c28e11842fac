"""Dynamic computation graphs: a refinement loop whose length depends on the data.

The question
------------
PyTorch builds the autograd graph while your Python code runs ("define by run"): every forward
call records the operations it actually executed, and backward walks exactly that record. So a
model may use ordinary ``if``/``while`` statements that depend on the values it computes, take a
different number of steps for different inputs, and still be trained by backpropagation. Static-
graph frameworks (TensorFlow 1.x, or a traced model) need the graph fixed up front and express
loops with special operators. Interviewers ask what "dynamic graph" means and why it matters; here
you make it concrete.

Your task
---------
Write ``Refiner``, an ``nn.Module`` that refines its input by applying one shared ``block`` over
and over until the updates become small:

    h = x
    for step = 1, 2, ...:
        u = block(h)          # the update proposed at this step
        h = h + u
        stop after this step if ||u|| < tol, or if step == max_steps
    return h, number of steps taken

Contract
--------
- ``Refiner(block, *, tol=1e-4, max_steps=50)``: ``block`` is an ``nn.Module`` mapping a tensor to
  an update of the same shape. Keep the module you were given (not a copy) as a registered
  submodule, so ``.parameters()``, ``.state_dict()`` and ``.to()`` see it. It is the *only* set of
  parameters: the same block is reused at every step, however many steps a call takes (no
  per-step copies).
- ``tol`` is a number ``>= 0`` (``tol=0`` never stops early, so every call takes ``max_steps``
  steps, even when an update is exactly zero); ``max_steps`` is an ``int >= 1``. The constructor
  raises ``ValueError`` naming the argument for a ``tol`` that is not ``>= 0`` (negative or NaN)
  or a ``max_steps`` that is not an ``int >= 1`` (a float such as ``2.0`` included).
- ``forward(x)`` returns ``(h, steps)``: ``h`` has ``x``'s shape, dtype and device; ``steps`` is a
  Python ``int`` in ``[1, max_steps]``, the number of times ``block`` was applied.
- ``||u||`` is the Euclidean (L2) norm over *all* elements of ``u`` (the whole batch at once,
  ``torch.linalg.vector_norm(u)``), so one call takes one number of steps for the whole batch.
  The stopping rule is checked after applying the step, so the small final update is included.
  The comparison is strict: an update whose norm equals ``tol`` does not stop the loop.
- ``h`` is differentiable with respect to ``x`` and to the block's parameters through *every*
  step taken: for inputs where the number of steps does not change under a small perturbation,
  the gradients equal finite differences. (The decision to stop is not differentiated.)

Hints
-----
- The loop is plain Python; comparing a 0-dim tensor with a float gives a Python ``bool``.
- Do not wrap the steps in ``torch.no_grad()`` or ``.detach()`` the state between steps: the
  gradient must flow through all of them.
"""

from torch import Tensor, nn


class Refiner(nn.Module):
    """Apply one shared ``block`` as ``h = h + block(h)`` until the update is small."""

    def __init__(self, block: nn.Module, *, tol: float = 1e-4, max_steps: int = 50) -> None:
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> tuple[Tensor, int]:
        """Refine ``x``; return ``(refined, steps)``."""
        raise NotImplementedError
