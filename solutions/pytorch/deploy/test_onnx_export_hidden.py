"""Hidden tests for pytorch.deploy.onnx_export (the catalog's contract checks).

The references are independent of the learner's code: ``onnx.checker`` and ``onnx.load`` read
the file, ONNX Runtime runs it, and its outputs are compared with the kit's own eager model in
evaluation mode. The exporter is slow (seconds per file on a small CPU), so each configuration is
exported once per module by a fixture that keeps the outcome; the tests that read it re-raise a
failed export. onnx, onnxruntime and onnxscript (the kit's ``onnx`` extra) are imported inside the
tests: without them every test is skipped with a message naming the extra.

The exporter and torch.export warn (deprecations inside torch and onnxscript); no warning may fail
a correct answer, so this module ignores them.
"""

from __future__ import annotations

import importlib
import pathlib
import shutil
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from grader.checks import assert_close, assert_raises_naming

pytestmark = pytest.mark.filterwarnings("ignore")

EXTRA = ("onnx", "onnxruntime", "onnxscript")


def need_extra():
    """onnx and onnxruntime, or a skip naming the kit's extra that provides them."""
    for name in EXTRA:
        try:
            importlib.import_module(name)
        except ImportError:
            pytest.skip(f"needs the kit's onnx extra ({name} is not installed): pip install -e '.[onnx]'")
    import onnx
    import onnxruntime

    return onnx, onnxruntime


class DropoutBN(nn.Module):
    """Dropout and batch normalisation with non-trivial running statistics: training mode and
    evaluation mode give different outputs."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3))
        with torch.no_grad():
            for _ in range(5):
                self.net(torch.randn(16, 4) * 3 + 1)  # running statistics far from (0, 1)

    def forward(self, x):
        return self.net(x)


class TwoInTwoOut(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.linear = nn.Linear(3, 2)

    def forward(self, a, b):
        return self.linear(a) + b, a.sum(dim=1, keepdim=True) * b


@dataclass(frozen=True)
class Config:
    """One export: the model to build, the example's batch and dtype, the keyword arguments."""

    name: str
    model: type
    batch: int
    dtype: torch.dtype
    path_kind: str  # how the path is passed: "str", "Path", or "Path by keyword" (path=...)
    kwargs: dict

    def inputs(self, batch: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(batch)
        if self.model is TwoInTwoOut:
            return (torch.randn(batch, 3, generator=g, dtype=self.dtype),
                    torch.randn(batch, 2, generator=g, dtype=self.dtype))
        return (torch.randn(batch, 4, generator=g, dtype=self.dtype),)


# The exporter takes seconds per file, so four exports cover the contract: the defaults; two
# inputs and outputs with names, float64 and the low end of the opset range; an example of batch 1
# (alone, so that a failure there says only that); and a fixed batch with the high end, its path
# passed by keyword.
DEFAULTS = Config("DropoutBN float32, batch 3, default arguments", DropoutBN, 3, torch.float32, "str", {})
NAMED = Config("TwoInTwoOut float64, batch 2, names, opset 18", TwoInTwoOut, 2, torch.float64, "Path",
               dict(input_names=("a", "b"), output_names=("sum", "product"), opset_version=18))
BATCH_ONE = Config("DropoutBN float32, example of batch 1", DropoutBN, 1, torch.float32, "Path", {})
STATIC = Config("DropoutBN float32, batch 5, dynamic_batch=False, opset 23", DropoutBN, 5, torch.float32,
                "Path by keyword", dict(dynamic_batch=False, opset_version=23))


@dataclass
class Exported:
    config: Config
    model: nn.Module
    path: pathlib.Path
    result: object = None
    error: BaseException | None = None
    mode_after: bool | None = None
    state_before: dict | None = None
    state_after: dict | None = None

    def file(self) -> pathlib.Path:
        if self.error is not None:
            raise self.error
        return self.path

    def reference(self, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        mode = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model(*inputs)
        finally:
            self.model.train(mode)
        return out if isinstance(out, tuple) else (out,)


def build(config: Config) -> nn.Module:
    return config.model().to(config.dtype).train()


def state_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def export(impl, config: Config, folder: pathlib.Path) -> Exported:
    model = build(config)
    inputs = config.inputs(config.batch)
    example = inputs[0] if len(inputs) == 1 else inputs
    out = Exported(config, model, folder / "model.onnx", state_before=state_of(model))
    try:
        if config.path_kind == "Path by keyword":  # export_onnx(model, example, path, *, ...) names path
            out.result = impl.export_onnx(model, example, path=out.path, **config.kwargs)
        else:
            path = str(out.path) if config.path_kind == "str" else out.path
            out.result = impl.export_onnx(model, example, path, **config.kwargs)
    except Exception as exc:  # re-raised by every test that reads this export
        out.error = exc
    out.mode_after, out.state_after = model.training, state_of(model)
    return out


@pytest.fixture(scope="module")
def exported(impl, tmp_path_factory):
    """Each configuration's export, made on first use."""
    done: dict[str, Exported] = {}

    def get(config: Config) -> Exported:
        need_extra()
        if config.name not in done:
            done[config.name] = export(impl, config, tmp_path_factory.mktemp("onnx"))
        return done[config.name]

    return get


def run(ort, path: pathlib.Path, names: list[str], inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {n: t.numpy() for n, t in zip(names, inputs)})
    return [torch.from_numpy(o) for o in outputs]


def declared(value_info) -> tuple[int, list]:
    tensor_type = value_info.type.tensor_type
    dims = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in tensor_type.shape.dim]
    return tensor_type.elem_type, dims


def input_names_of(config: Config) -> list[str]:
    return list(config.kwargs.get("input_names", ("input",)))


def output_names_of(config: Config) -> list[str]:
    return list(config.kwargs.get("output_names", ("output",)))


# the file itself


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED], ids=["defaults", "named-float64"])
def test_file_passes_the_onnx_checker(impl, exported, config):
    onnx, _ = need_extra()
    path = exported(config).file()
    try:
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    except onnx.checker.ValidationError as exc:
        raise AssertionError(f"{config.name}: onnx.checker rejects the file: {str(exc)[:300]}") from None


@pytest.mark.points(2)
def test_file_is_self_contained_and_export_returns_none(impl, exported, tmp_path):
    _, ort = need_extra()
    done = exported(DEFAULTS)
    path = done.file()
    assert done.result is None, f"export_onnx returned {type(done.result).__name__}, expected None"
    beside = sorted(p.name for p in path.parent.iterdir())
    assert beside == [path.name], f"export_onnx left {beside} in the folder: the weights belong inside the one file"
    alone = tmp_path / "copied.onnx"
    shutil.copyfile(path, alone)
    inputs = DEFAULTS.inputs(2)
    assert_close(run(ort, alone, ["input"], inputs)[0], done.reference(inputs)[0],
                 name="ONNX Runtime's output for the file copied alone to another folder")


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED, STATIC], ids=["str", "Path", "Path-by-keyword"])
def test_path_may_be_str_or_pathlike(impl, exported, config):
    onnx, _ = need_extra()
    path = exported(config).file()
    assert path.is_file(), f"{config.name}: export_onnx given its path as {config.path_kind} wrote no file there"
    onnx.load(str(path))


# names, dtypes, axes


@pytest.mark.points(2)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED], ids=["defaults", "named-float64"])
def test_inputs_and_outputs_are_named_as_asked(impl, exported, config):
    onnx, _ = need_extra()
    graph = onnx.load(str(exported(config).file())).graph
    initializers = {i.name for i in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in initializers]
    outputs = [o.name for o in graph.output]
    assert (inputs, outputs) == (input_names_of(config), output_names_of(config)), (
        f"{config.name}: the graph's inputs are {inputs} and outputs {outputs}; expected "
        f"{input_names_of(config)} and {output_names_of(config)}")


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED], ids=["float32", "float64"])
def test_inputs_and_outputs_keep_the_dtype(impl, exported, config):
    onnx, _ = need_extra()
    graph = onnx.load(str(exported(config).file())).graph
    want = onnx.helper.np_dtype_to_tensor_dtype(torch.empty(0, dtype=config.dtype).numpy().dtype)
    for value in (*graph.input, *graph.output):
        if value.name in input_names_of(config) + output_names_of(config):
            elem_type, _ = declared(value)
            assert elem_type == want, (
                f"{config.name}: {value.name} is declared as {onnx.helper.tensor_dtype_to_string(elem_type)}, "
                f"expected {onnx.helper.tensor_dtype_to_string(want)} (the dtype of the example and model)")


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED, BATCH_ONE], ids=["defaults", "named-float64", "batch-one"])
def test_dynamic_batch_is_a_symbolic_dimension_zero(impl, exported, config):
    onnx, _ = need_extra()
    graph = onnx.load(str(exported(config).file())).graph
    names = input_names_of(config) + output_names_of(config)
    for value in (*graph.input, *graph.output):
        if value.name in names:
            _, dims = declared(value)
            assert dims and isinstance(dims[0], str) and dims[0], (
                f"{config.name}: {value.name}'s dimensions are {dims}; with dynamic_batch=True dimension 0 "
                "must be symbolic (a dim_param)")
            assert all(isinstance(d, int) and d > 0 for d in dims[1:]), (
                f"{config.name}: {value.name}'s dimensions are {dims}; only dimension 0 may be symbolic")


@pytest.mark.points(1)
def test_static_batch_fixes_every_dimension(impl, exported):
    onnx, _ = need_extra()
    graph = onnx.load(str(exported(STATIC).file())).graph
    dims = {v.name: declared(v)[1] for v in (*graph.input, *graph.output)}
    want = {"input": [5, 4], "output": [5, 3]}
    assert {k: dims.get(k) for k in want} == want, (
        f"{STATIC.name}: the declared dimensions are {dims}, expected {want}")


# what the file computes


@pytest.mark.points(5)
@pytest.mark.parametrize("batch", [1, 7])
@pytest.mark.parametrize("config", [DEFAULTS, NAMED, BATCH_ONE],
                         ids=["defaults-eval-mode", "named-float64", "example-of-batch-one"])
def test_onnxruntime_equals_the_model_in_eval_mode(impl, exported, config, batch):
    _, ort = need_extra()
    done = exported(config)
    inputs = config.inputs(batch)
    got = run(ort, done.file(), input_names_of(config), inputs)
    want = done.reference(inputs)
    assert len(got) == len(want), f"{config.name}: the file has {len(got)} output(s), the model {len(want)}"
    for name, g, w in zip(output_names_of(config), got, want):
        assert_close(g, w, name=f"{config.name}: ONNX Runtime's {name} at batch {batch} (the model in evaluation mode)")


@pytest.mark.points(2)
def test_static_file_equals_the_model_at_the_example_batch(impl, exported):
    _, ort = need_extra()
    done = exported(STATIC)
    inputs = STATIC.inputs(5)
    assert_close(run(ort, done.file(), ["input"], inputs)[0], done.reference(inputs)[0],
                 name=f"{STATIC.name}: ONNX Runtime's output at batch 5 (the model in evaluation mode)")


# opset


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED, STATIC], ids=["default-20", "18", "23"])
def test_file_declares_the_opset_asked_for(impl, exported, config):
    onnx, _ = need_extra()
    model = onnx.load(str(exported(config).file()))
    want = config.kwargs.get("opset_version", 20)
    default_domain = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    assert default_domain == [want], f"{config.name}: the file declares ai.onnx opset {default_domain}, expected {want}"


@pytest.mark.points(1)
@pytest.mark.parametrize("opset_version", [17, 24])
def test_opset_outside_18_to_23_raises_value_error(impl, tmp_path, opset_version):
    need_extra()
    path = tmp_path / "m.onnx"
    assert_raises_naming(ValueError, "opset_version", impl.export_onnx, nn.Linear(2, 2), torch.randn(2, 2), path,
                         opset_version=opset_version)
    assert not path.exists(), f"opset_version={opset_version} was refused, but a file was written"


# argument errors


@pytest.mark.points(1)
@pytest.mark.parametrize("dtype", [torch.float16, torch.int64])
def test_example_of_another_dtype_raises_type_error(impl, tmp_path, dtype):
    need_extra()
    assert_raises_naming(TypeError, "example", impl.export_onnx, nn.Linear(2, 2),
                         torch.ones(2, 2, dtype=dtype), tmp_path / "m.onnx")


@pytest.mark.points(1)
@pytest.mark.parametrize("argument", ["input_names", "output_names"])
def test_name_count_mismatch_raises_value_error(impl, tmp_path, argument):
    need_extra()
    path = tmp_path / "m.onnx"
    # The model takes 2 inputs and returns 2 outputs; one of the two name lists has the wrong length.
    names = {"input_names": ("a", "b"), "output_names": ("sum", "product")}
    names[argument] = {"input_names": ("a", "b", "c"), "output_names": ("sum",)}[argument]
    model = TwoInTwoOut().to(torch.float64)
    assert_raises_naming(ValueError, argument, impl.export_onnx, model, NAMED.inputs(2), path, **names)
    assert not path.exists(), f"a wrong number of {argument} was refused, but a file was written"


# what the export leaves behind


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [DEFAULTS, NAMED], ids=["float32-train-mode", "float64-train-mode"])
def test_model_left_as_found(impl, exported, config):
    done = exported(config)
    done.file()
    assert done.mode_after is True, f"{config.name}: export_onnx left model.training {done.mode_after}, it was True"
    for name, before in done.state_before.items():
        after = done.state_after[name]
        assert after.dtype == before.dtype and torch.equal(after, before), (
            f"{config.name}: export_onnx changed the model's {name} (dtype {before.dtype} -> {after.dtype})")
