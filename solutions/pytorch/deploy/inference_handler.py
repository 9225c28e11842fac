"""A model-serving handler: preprocess, inference, postprocess, with per-request errors.

The question
------------
How do you serve a trained classifier? Model servers (TorchServe, a Flask or FastAPI endpoint,
TensorFlow Serving) wrap the model in a handler with three stages: *preprocess* turns raw
requests into one batched tensor, *inference* runs the model in evaluation mode without building
an autograd graph, and *postprocess* turns the outputs into JSON-ready answers. The follow-ups an
interviewer asks: what if one request in the batch is malformed (the others must still be
answered), why ``model.eval()`` and ``torch.no_grad()``, and how to keep answers in request order.

Your task
---------
Write the class ``Handler(model, labels, *, input_size, device="cpu", top_k=3)`` with
``preprocess``, ``inference``, ``postprocess`` and ``handle``.

Contract
--------
- The constructor moves ``model`` to ``device`` and puts it in evaluation mode; ``labels`` is a
  non-empty list of strings, one per model output (an empty one raises ``ValueError`` naming
  ``labels``); ``top_k`` is an int from 1 to ``len(labels)`` inclusive, anything else raises
  ``ValueError`` naming ``top_k``.
- A request is valid when it is a dict with the key ``"input"`` holding a list or tuple of
  exactly ``input_size`` finite numbers (Python ints or floats; ``bool`` is not a number here).
  Anything else is malformed: not a dict, no ``"input"``, the wrong length, a non-number, NaN
  or inf.
- ``preprocess(requests)`` returns ``(batch, errors)``: ``batch`` is a float32 tensor of shape
  ``(number of valid requests, input_size)`` on ``device``, the valid inputs in request order;
  ``errors`` has one entry per request, ``None`` for a valid one and a non-empty message string
  for a malformed one.
- ``inference(batch)`` returns the softmax probabilities of ``model(batch)`` over the labels,
  shape ``(rows, len(labels))``, computed with gradients off (``torch.no_grad`` or
  ``torch.inference_mode``): the result carries no autograd graph.
- ``postprocess(probs)`` returns one dict per row: ``{"predictions": [{"label": str,
  "probability": float}, ...]}`` with the ``top_k`` most probable labels, most probable first;
  equal probabilities keep the order of ``labels`` (lower index first). Probabilities are Python
  floats.
- ``handle(requests)`` takes a list (anything else raises ``TypeError`` naming ``requests``) and
  returns one dict per request, in request order: the request's ``postprocess`` dict when valid,
  ``{"error": message}`` (a non-empty string) when malformed. A malformed request never affects
  the answers to the others.
- ``handle`` runs the model at most once per call, on all valid requests batched together, and
  not at all when none is valid (an empty list gives ``[]``). The model stays in evaluation mode:
  dropout is off and batch norm uses its running statistics, so answers are deterministic.

Hints
-----
- Validate each request on its own and collect the valid ones; remember their positions so the
  answers can be put back in order.
- ``torch.sort(probs, dim=-1, descending=True, stable=True)`` keeps ties in label order;
  ``torch.topk`` does not promise that.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn


class Handler:
    """Serve ``model`` (a classifier over ``labels``) on batches of JSON-like requests."""

    def __init__(self, model: nn.Module, labels: list[str], *, input_size: int,
                 device: str | torch.device = "cpu", top_k: int = 3) -> None:
        if len(labels) == 0:
            raise ValueError("labels must be a non-empty list of strings")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= len(labels):
            raise ValueError(f"top_k must be an int from 1 to {len(labels)}, got {top_k!r}")
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.labels = list(labels)
        self.input_size = input_size
        self.top_k = top_k

    def _problem(self, request: Any) -> str | None:
        """Why ``request`` is malformed, or None when it is valid."""
        if not isinstance(request, dict):
            return f"a request must be a dict, got {type(request).__name__}"
        if "input" not in request:
            return 'the request has no "input"'
        values = request["input"]
        if not isinstance(values, (list, tuple)):
            return f'"input" must be a list of numbers, got {type(values).__name__}'
        if len(values) != self.input_size:
            return f'"input" must hold {self.input_size} numbers, got {len(values)}'
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f'"input"[{i}] is not a number: {type(v).__name__}'
            if not math.isfinite(v):
                return f'"input"[{i}] is not finite: {v}'
        return None

    def preprocess(self, requests: list[Any]) -> tuple[Tensor, list[str | None]]:
        """The valid requests as one float32 batch, and one error (or None) per request."""
        errors = [self._problem(r) for r in requests]
        rows = [[float(v) for v in r["input"]] for r, e in zip(requests, errors) if e is None]
        batch = torch.tensor(rows, dtype=torch.float32, device=self.device).reshape(len(rows), self.input_size)
        return batch, errors

    def inference(self, batch: Tensor) -> Tensor:
        """Softmax probabilities of the model on ``batch``, without an autograd graph."""
        with torch.inference_mode():
            return torch.softmax(self.model(batch), dim=-1)

    def postprocess(self, probs: Tensor) -> list[dict[str, Any]]:
        """One ``{"predictions": [...]}`` dict (top-k labels, most probable first) per row."""
        values, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        values, order = values[:, :self.top_k].tolist(), order[:, :self.top_k].tolist()
        return [{"predictions": [{"label": self.labels[i], "probability": float(p)}
                                 for p, i in zip(row_p, row_i)]}
                for row_p, row_i in zip(values, order)]

    def handle(self, requests: list[Any]) -> list[dict[str, Any]]:
        """One answer per request, in order: predictions, or an error for a malformed request."""
        if not isinstance(requests, list):
            raise TypeError(f"requests must be a list, got {type(requests).__name__}")
        batch, errors = self.preprocess(requests)
        answers = iter(self.postprocess(self.inference(batch)) if len(batch) else [])
        return [next(answers) if error is None else {"error": error} for error in errors]
