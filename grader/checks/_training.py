"""Watching a training loop from outside: what each ``optimizer.step()`` was given."""

from __future__ import annotations

import torch


class GradientSpy:
    """Records, at every ``step()`` of ``optimizer``, whether each parameter's ``.grad`` held only
    the gradients of the backward passes since the previous step.

    A loop that never zeroes its gradients (no ``optimizer.zero_grad()``, ``model.zero_grad()`` or
    ``p.grad = None``) hands its second step the sum of two batches' gradients: that step is
    *stale*. How the loop zeroes them, and whether before ``backward`` or after ``step``, does not
    matter. Use as a context manager; the hooks go when it closes::

        with GradientSpy(optimizer) as spy:
            train(model, optimizer, ...)
        assert spy.steps == 6 and not spy.stale_steps
    """

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        self.params = [p for group in optimizer.param_groups for p in group["params"]]
        self.steps = 0
        self.stale_steps: list[int] = []  # 0-based indices of the steps that saw old gradients
        self._fresh: dict[int, torch.Tensor] = {}
        self._handles = [p.register_hook(lambda grad, i=i: self._record(i, grad))
                         for i, p in enumerate(self.params) if p.requires_grad]
        self._handles.append(optimizer.register_step_pre_hook(lambda *_: self._check()))

    def _record(self, index: int, grad: torch.Tensor) -> None:
        grad = grad.detach().clone()
        self._fresh[index] = grad if index not in self._fresh else self._fresh[index] + grad

    def _check(self) -> None:
        for index, p in enumerate(self.params):
            fresh = self._fresh.get(index)
            if p.grad is None:
                continue
            if fresh is None:
                stale = bool(p.grad.count_nonzero())  # zeros left by zero_grad(set_to_none=False)
            else:
                stale = not torch.allclose(p.grad, fresh, rtol=1e-5, atol=1e-7)
            if stale:
                self.stale_steps.append(self.steps)
                break
        self._fresh.clear()
        self.steps += 1

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> GradientSpy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
