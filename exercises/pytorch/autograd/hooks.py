"""Hooks: looking at (and changing) what flows through a model without editing its code.

The question
------------
PyTorch lets you attach callbacks to a running model. ``module.register_forward_hook(fn)`` calls
``fn(module, inputs, output)`` after every forward pass of that module: the usual way to pull
out intermediate activations (feature extraction, debugging, visualisation).
``tensor.register_hook(fn)`` calls ``fn(grad)`` when the gradient of that tensor is computed in
the backward pass; if ``fn`` returns a tensor, that tensor replaces the gradient. (Module-level
backward hooks, ``register_full_backward_hook``, also exist; the old ``register_backward_hook`` is
deprecated.) Every ``register_*`` call returns a handle whose ``remove()`` detaches the hook again,
and hooks that are never removed keep firing (and keep tensors alive) for the life of the model:
interviewers ask how you make sure that does not happen.

Your task
---------
1. ``capture_activations(model, names)``: a context manager that records the outputs of the named
   submodules while it is active, and leaves no trace on the model afterwards.
2. ``clamp_grads(model, max_abs)``: tensor hooks that clamp every parameter's gradient as it is
   computed, returning the handles so the caller can take them off again.

Contract
--------
``with capture_activations(model, names) as acts:``

- ``names`` is a list (or other iterable) of submodule names as ``model.named_modules()`` spells
  them (e.g. ``"encoder.0"``; ``""`` is the model itself). A name that is not a submodule of
  ``model`` raises ``ValueError`` whose message contains that name, no later than entering the
  ``with`` block, and then no hook is left registered.
- ``acts`` is a ``dict`` that starts empty. Whenever a named module finishes a forward pass inside
  the block, ``acts[name]`` is set to a detached copy of its output (a single tensor): it does not
  require grad, and later in-place operations in the model (e.g. ``nn.ReLU(inplace=True)``) do not
  change it. If a module runs several times, the last call wins.
- Capturing changes nothing else: the model's outputs and all gradients of a backward pass are the
  same as without the block.
- When the block ends, normally or by an exception (which propagates unchanged), every hook the
  block registered is removed: later forward passes no longer touch ``acts``, which keeps the values
  it has. Hooks registered by anyone else stay where they are.

``clamp_grads(model, max_abs) -> list[RemovableHandle]``

- ``max_abs`` is a positive ``int`` or ``float``: 0, a negative number or NaN raises
  ``ValueError`` naming ``max_abs``; something that is not a number raises ``TypeError`` or
  ``ValueError`` naming ``max_abs``.
- Registers one tensor hook (``Tensor.register_hook``) on every parameter with
  ``requires_grad=True``, in ``model.parameters()`` order, and returns the handles in that order.
  Frozen parameters (``requires_grad=False``) are skipped.
- The hook clamps the gradient a backward pass computes for that parameter to
  ``[-max_abs, max_abs]`` before it is accumulated into ``.grad``: after one backward pass from
  ``.grad = None`` every entry lies in that range; a second backward pass adds another clamped
  gradient on top (``.grad == clamp(g1) + clamp(g2)``).
- Only parameter gradients change: the gradient with respect to the model's input is unaffected.
- After ``handle.remove()`` on every returned handle, backward passes produce plain gradients again.

Hints
-----
- ``contextlib.contextmanager`` turns a generator with one ``yield`` into a context manager. What
  happens to the code after the ``yield`` when the ``with`` body raises?
- A forward hook that *returns* a value replaces the module's output. Does yours need to?
- ``t.detach()`` shares memory with ``t``.
- A tensor hook must not modify its argument in place: return a new tensor.
"""

from contextlib import AbstractContextManager

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle


def capture_activations(model: nn.Module,
                        names: list[str]) -> AbstractContextManager[dict[str, Tensor]]:
    """Context manager yielding a dict of detached copies of the named modules' outputs."""
    raise NotImplementedError


def clamp_grads(model: nn.Module, max_abs: float) -> list[RemovableHandle]:
    """Clamp every trainable parameter's gradient to ``[-max_abs, max_abs]`` via tensor hooks."""
    raise NotImplementedError
