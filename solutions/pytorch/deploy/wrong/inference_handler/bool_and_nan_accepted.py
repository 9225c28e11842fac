"""Wrong: checks numbers with isinstance(v, (int, float)) only: bools, NaN and inf pass."""

from __future__ import annotations

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
            if not isinstance(v, (int, float)):
                return f'"input"[{i}] is not a number: {type(v).__name__}'
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
