"""Wrong: puts the model in evaluation mode for the export and never puts it back."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import nn

OPSET_VERSIONS = range(18, 24)  # what torch 2.13's torch.export-based exporter writes
DTYPES = (torch.float32, torch.float64)


def _outputs(model: nn.Module, example: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    with torch.no_grad():
        out = model(*example)
    return out if isinstance(out, tuple) else (out,)


def export_onnx(model: nn.Module, example: torch.Tensor | tuple[torch.Tensor, ...], path: str | os.PathLike, *,
                dynamic_batch: bool = True, input_names: Sequence[str] = ("input",),
                output_names: Sequence[str] = ("output",), opset_version: int = 20) -> None:
    """Export ``model`` in evaluation mode to one ONNX file at ``path``."""
    example = example if isinstance(example, tuple) else (example,)
    if not example or not all(isinstance(t, torch.Tensor) for t in example):
        raise TypeError(f"example must be a tensor or a non-empty tuple of tensors, got {example!r}")
    bad = [t.dtype for t in example if t.dtype not in DTYPES]
    if bad:
        raise TypeError(f"example tensors must be float32 or float64, got {bad[0]}")
    if opset_version not in OPSET_VERSIONS:
        raise ValueError(f"opset_version must be an int from {OPSET_VERSIONS.start} to {OPSET_VERSIONS.stop - 1}, "
                         f"got {opset_version!r}")
    if len(input_names) != len(example):
        raise ValueError(f"input_names has {len(input_names)} name(s) for {len(example)} example tensor(s)")
    model.eval()
    try:
        n_outputs = len(_outputs(model, example))
        if len(output_names) != n_outputs:
            raise ValueError(f"output_names has {len(output_names)} name(s) for {n_outputs} model output(s)")
        dynamic_shapes = None
        if dynamic_batch:
            batch = torch.export.Dim("batch")
            dynamic_shapes = tuple({0: batch} for _ in example)
        torch.onnx.export(model, example, os.fspath(path), input_names=list(input_names),
                          output_names=list(output_names), opset_version=opset_version,
                          dynamic_shapes=dynamic_shapes, external_data=False, verbose=False)
    finally:
        pass  # the mode it was handed over in is forgotten
