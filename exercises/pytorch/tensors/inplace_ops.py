"""In-place updates: an exponential moving average (EMA) of parameters.

The question
------------
PyTorch has two flavours of most operations: out of place (``x + y``, ``x.add(y)``) returns a new
tensor and leaves its inputs alone; in place (``x.add_(y)``, trailing underscore) overwrites ``x``
itself and returns it. Interviewers ask when each is right. In place saves memory and is how you
update state that other objects hold a reference to (an optimizer's parameters, a model's EMA
copy), but it interacts with autograd: every in-place op bumps the tensor's version counter, a leaf
that requires grad may not be modified in place while grad mode is on, and mixing a tensor that
requires grad into an in-place op silently records history on the updated tensor.

A common real use is an EMA of a model's weights ("Polyak averaging"): after each optimizer step,
``avg <- decay * avg + (1 - decay) * param`` for every parameter, updating the EMA model's own
tensors in place.

Your task
---------
1. ``ema(avg, new, decay)``: one EMA step, out of place.
2. ``ema_update_(avg_params, params, decay)``: the same step applied in place to every tensor of
   ``avg_params``, e.g. ``ema_update_(ema_model.parameters(), model.parameters(), 0.999)``.

Contract
--------
- ``decay`` is a Python float (or int) in ``[0, 1]``: the weight of the *old* average. The result
  is ``decay * avg + (1 - decay) * new``. Both ends are allowed: ``decay=0`` gives ``new`` and
  ``decay=1`` gives ``avg``. A ``decay`` outside ``[0, 1]`` (NaN and infinities included) raises
  ``ValueError`` naming ``decay`` (both functions).
- ``ema``: ``avg`` and ``new`` have the same shape, dtype and device; the result has them too. A
  shape mismatch raises ``ValueError`` naming ``new``, also when the shapes would broadcast or
  hold the same number of elements. It returns a new tensor and never modifies its inputs (their
  values and version counters are unchanged). It is differentiable with respect to ``avg`` and
  ``new`` like any out-of-place expression. Works on any device, ``meta`` included.
- ``ema_update_``: ``avg_params`` and ``params`` are iterables of tensors (lists, tuples or
  generators such as ``module.parameters()``) paired in order. Different lengths, or a pair with
  different shapes (even of the same number of elements), raise ``ValueError`` naming
  ``params``. Returns ``None``. For each pair:

  * the ``avg`` tensor object itself is updated, in the memory it already owns (same Python object,
    same storage), by real in-place operations that autograd's version counter sees
    (``avg._version`` increases). Assigning to ``.data`` or rebinding a name does neither;
  * no autograd history is recorded: even when ``params`` require grad, every ``avg`` keeps
    ``grad_fn is None`` and its ``requires_grad`` flag as it was. ``avg_params`` may themselves be
    leaves that require grad (an EMA model made with ``copy.deepcopy(model)``);
  * ``params`` are not modified.

Hints
-----
- ``torch.no_grad()`` is the tool for "update without history"; why does ``x.mul_(d)`` on a leaf
  that requires grad fail without it?
- ``x = x * d`` inside a loop rebinds the loop variable: the caller's tensor never changes.
- ``torch.lerp`` / ``Tensor.lerp_`` compute ``a + w * (b - a)``. What is ``w`` here?
"""

from collections.abc import Iterable

from torch import Tensor


def ema(avg: Tensor, new: Tensor, decay: float) -> Tensor:
    """Return ``decay * avg + (1 - decay) * new`` as a new tensor; inputs untouched."""
    raise NotImplementedError


def ema_update_(avg_params: Iterable[Tensor], params: Iterable[Tensor], decay: float) -> None:
    """In place, without autograd history: ``avg <- decay * avg + (1 - decay) * param``."""
    raise NotImplementedError
