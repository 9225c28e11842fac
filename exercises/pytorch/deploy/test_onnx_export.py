"""Public tests for pytorch.deploy.onnx_export: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_onnx_export.py``.

They need the kit's onnx extra (``pip install -e '.[onnx]'``) and are skipped without it. The
exporter warns about deprecations inside torch; these tests ignore warnings."""

import importlib

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore")


def need_extra():
    for name in ("onnx", "onnxruntime", "onnxscript"):
        try:
            importlib.import_module(name)
        except ImportError:
            pytest.skip(f"needs the kit's onnx extra ({name} is not installed): pip install -e '.[onnx]'")
    import onnx
    import onnxruntime

    return onnx, onnxruntime


def test_export_checks_and_runs_at_another_batch_size(impl, tmp_path):
    onnx, ort = need_extra()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    path = tmp_path / "model.onnx"
    impl.export_onnx(model, torch.randn(2, 3), path, input_names=("features",), output_names=("scores",))
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["features"], "the input should be named 'features'"
    assert [o.name for o in session.get_outputs()] == ["scores"], "the output should be named 'scores'"
    x = torch.randn(5, 3)
    (scores,) = session.run(None, {"features": x.numpy()})
    with torch.no_grad():
        assert torch.allclose(torch.from_numpy(scores), model(x), atol=1e-5), (
            "ONNX Runtime's output at batch 5 differs from the model's (exported at batch 2)")
