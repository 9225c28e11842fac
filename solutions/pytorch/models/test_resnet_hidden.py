"""Hidden tests for pytorch.models.resnet (the catalog's contract checks).

Sizes are checked against ``nn.Conv2d`` itself (on the meta device); the block's forward against
the docstring's formula written with ``F.conv2d`` / ``F.batch_norm`` on the block's own weights.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, example, given, settings, strategies as st
from torch import nn

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           autocast, check_gradients, device_params)

F64 = dict(rtol=1e-9, atol=1e-9)
CONV_ARGS = ("size", "kernel", "stride", "padding", "dilation")
LOWEST = {"size": 1, "kernel": 1, "stride": 1, "padding": 0, "dilation": 1}
VALID = {"size": 9, "kernel": 3, "stride": 2, "padding": 2, "dilation": 1}  # no answer is 1 at a lowest value


def conv2d_length(size, kernel, stride, padding, dilation) -> int:
    conv = nn.Conv2d(1, 1, kernel, stride=stride, padding=padding, dilation=dilation, device="meta")
    return conv(torch.empty(1, 1, size, size, device="meta")).shape[-1]


@pytest.mark.points(2)
@given(size=st.integers(1, 24), kernel=st.integers(1, 6), stride=st.integers(1, 4),
       padding=st.integers(0, 3), dilation=st.integers(1, 3))
@example(size=3, kernel=3, stride=1, padding=0, dilation=1)
@example(size=7, kernel=3, stride=2, padding=1, dilation=1)
@example(size=8, kernel=3, stride=3, padding=0, dilation=2)
@example(size=1, kernel=1, stride=1, padding=0, dilation=1)
def test_conv_output_size_matches_conv2d(impl, size, kernel, stride, padding, dilation):
    assume(size + 2 * padding >= dilation * (kernel - 1) + 1)
    got = impl.conv_output_size(size, kernel, stride, padding, dilation)
    want = conv2d_length(size, kernel, stride, padding, dilation)
    call = f"conv_output_size({size}, {kernel}, stride={stride}, padding={padding}, dilation={dilation})"
    assert type(got) is int, f"{call} returned {type(got).__name__}, expected int"
    assert got == want, f"{call} returned {got}, but nn.Conv2d gives {want}"


def test_conv_output_size_defaults(impl):
    got = impl.conv_output_size(10, 3)
    assert got == 8, f"conv_output_size(10, 3) returned {got!r}, expected 8 (stride 1, padding 0, dilation 1)"


@pytest.mark.parametrize("arg", CONV_ARGS)
def test_conv_output_size_rejects_non_int(impl, arg):
    for bad in (2.0, True):
        assert_raises_naming(TypeError, arg, impl.conv_output_size, **{**VALID, arg: bad})


@pytest.mark.parametrize("arg", CONV_ARGS)
def test_conv_output_size_range_ends(impl, arg):
    low = LOWEST[arg]
    args = {**VALID, arg: low}
    got = impl.conv_output_size(**args)
    assert got == conv2d_length(**args), f"conv_output_size({args}) returned {got}, expected {conv2d_length(**args)}"
    assert_raises_naming(ValueError, arg, impl.conv_output_size, **{**VALID, arg: low - 1})


@pytest.mark.parametrize("args", [dict(size=2, kernel=3), dict(size=4, kernel=3, dilation=2),
                                  dict(size=1, kernel=5, padding=1)], ids=["kernel", "dilation", "padding"])
def test_conv_output_size_rejects_empty_output(impl, args):
    assert_raises_naming(ValueError, "size", impl.conv_output_size, **args)


def _assert_conv(conv, name, in_ch, out_ch, kernel, stride, padding):
    assert isinstance(conv, nn.Conv2d), f"{name} is {type(conv).__name__}, expected nn.Conv2d"
    got = (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.bias is None)
    want = (in_ch, out_ch, (kernel, kernel), (stride, stride), (padding, padding), True)
    assert got == want, (f"{name}: (in, out, kernel, stride, padding, no bias) = {got}, expected {want}")


@pytest.mark.parametrize("in_ch, out_ch, stride", [(4, 4, 1), (4, 6, 1), (4, 4, 2), (3, 6, 2)],
                         ids=["same", "wider", "strided", "both"])
def test_block_structure_and_projection_only_when_needed(impl, in_ch, out_ch, stride):
    block = impl.BasicBlock(in_ch, out_ch, stride)
    name = f"BasicBlock({in_ch}, {out_ch}, stride={stride})"
    _assert_conv(block.conv1, f"{name}.conv1", in_ch, out_ch, 3, stride, 1)
    _assert_conv(block.conv2, f"{name}.conv2", out_ch, out_ch, 3, 1, 1)
    for bn in ("bn1", "bn2"):
        assert isinstance(getattr(block, bn), nn.BatchNorm2d), f"{name}.{bn} must be nn.BatchNorm2d"
    if stride == 1 and in_ch == out_ch:
        assert block.shortcut is None, f"{name}: the shapes match, so the shortcut must be None (identity)"
        return
    sc = block.shortcut
    assert isinstance(sc, nn.Sequential) and len(sc) == 2, (
        f"{name}.shortcut must be nn.Sequential(Conv2d 1x1, BatchNorm2d), got {sc!r:.120}")
    _assert_conv(sc[0], f"{name}.shortcut[0]", in_ch, out_ch, 1, stride, 0)
    assert isinstance(sc[1], nn.BatchNorm2d), f"{name}.shortcut[1] must be nn.BatchNorm2d"


def randomise_bn(module: nn.Module, seed: int) -> None:
    """Trained-looking batch norms: random affine parameters and running statistics."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(torch.randn(n, generator=gen))
                m.bias.copy_(torch.randn(n, generator=gen))
                m.running_mean.copy_(torch.randn(n, generator=gen))
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)


def bn(x, m, training):
    return F.batch_norm(x, m.running_mean.clone(), m.running_var.clone(), m.weight, m.bias,
                        training=training, eps=m.eps)


def block_formula(block, x, *, training=False, stride=1, project=False):
    """relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), from the block's own weights."""
    out = torch.relu(bn(F.conv2d(x, block.conv1.weight, stride=stride, padding=1), block.bn1, training))
    out = bn(F.conv2d(out, block.conv2.weight, padding=1), block.bn2, training)
    if project:
        short = bn(F.conv2d(x, block.shortcut[0].weight, stride=stride), block.shortcut[1], training)
    else:
        short = x
    return torch.relu(out + short)


@pytest.mark.points(3)
@settings(max_examples=10)
@given(in_ch=st.integers(1, 4), out_ch=st.integers(1, 4), stride=st.integers(1, 2), n=st.integers(1, 3),
       h=st.integers(1, 7), w=st.integers(1, 7), training=st.booleans(), seed=st.integers(0, 2**16))
@example(in_ch=3, out_ch=3, stride=1, n=2, h=5, w=4, training=False, seed=0)
@example(in_ch=2, out_ch=4, stride=2, n=2, h=5, w=6, training=True, seed=1)
def test_block_forward_formula(impl, in_ch, out_ch, stride, n, h, w, training, seed):
    assume(not training or n * h * w > 1)
    torch.manual_seed(seed)
    block = impl.BasicBlock(in_ch, out_ch, stride).double()
    randomise_bn(block, seed)
    block.train(training)
    x = torch.randn(n, in_ch, h, w, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    project = stride != 1 or in_ch != out_ch
    want = block_formula(block, x, training=training, stride=stride, project=project)
    name = (f"BasicBlock({in_ch}, {out_ch}, stride={stride}) in {'train' if training else 'eval'} "
            f"mode on x{tuple(x.shape)}")
    assert_close(block(x), want, **F64, name=name)


@pytest.mark.points(2)
@pytest.mark.parametrize("in_ch, out_ch, stride", [(2, 2, 1), (2, 3, 2)], ids=["identity", "projection"])
def test_block_gradients(impl, in_ch, out_ch, stride):
    torch.manual_seed(0)
    block = impl.BasicBlock(in_ch, out_ch, stride).double().eval()
    randomise_bn(block, 0)
    project = stride != 1 or in_ch != out_ch
    check_gradients(block, torch.randn(1, in_ch, 2, 2, dtype=torch.float64),
                    reference=lambda x: block_formula(block, x, stride=stride, project=project),
                    name=f"BasicBlock({in_ch}, {out_ch}, stride={stride}) (eval) w.r.t. x")


def assert_resnet_structure(impl, model, num_classes, widths, blocks_per_stage, in_channels, label):
    """``model`` is the stem, stages and fc the docstring describes for these arguments."""
    stem = model.stem
    assert isinstance(stem, nn.Sequential) and len(stem) == 3, f"{label}: stem must be nn.Sequential(conv, bn, relu)"
    _assert_conv(stem[0], f"{label}.stem[0]", in_channels, widths[0], 3, 1, 1)
    assert isinstance(stem[1], nn.BatchNorm2d) and isinstance(stem[2], nn.ReLU), (
        f"{label}: stem must be (Conv2d, BatchNorm2d, ReLU)")
    assert isinstance(model.stages, nn.Sequential) and len(model.stages) == len(widths), (
        f"{label}: stages must hold one nn.Sequential per width ({len(widths)})")
    previous = widths[0]
    for i, (stage, width) in enumerate(zip(model.stages, widths, strict=True)):
        assert isinstance(stage, nn.Sequential) and len(stage) == blocks_per_stage, (
            f"{label}: stages[{i}] must hold blocks_per_stage={blocks_per_stage} blocks")
        for j, block in enumerate(stage):
            assert isinstance(block, impl.BasicBlock), (
                f"{label}: stages[{i}][{j}] is {type(block).__name__}, not BasicBlock")
            stride = 2 if (i > 0 and j == 0) else 1
            _assert_conv(block.conv1, f"{label}.stages[{i}][{j}].conv1", previous if j == 0 else width, width,
                         3, stride, 1)
        previous = width
    assert (isinstance(model.fc, nn.Linear)
            and (model.fc.in_features, model.fc.out_features) == (widths[-1], num_classes)), (
        f"{label}: fc must be nn.Linear(widths[-1]={widths[-1]}, num_classes={num_classes})")


@pytest.mark.points(2)
def test_resnet_structure(impl):
    model = impl.SmallResNet(5, widths=(3, 4, 6), blocks_per_stage=2, in_channels=2)
    assert_resnet_structure(impl, model, 5, (3, 4, 6), 2, 2, "SmallResNet(5, widths=(3, 4, 6), ...)")


def test_resnet_defaults(impl):
    model = impl.SmallResNet(5)
    assert_resnet_structure(impl, model, 5, (16, 32, 64), 2, 3,
                            "SmallResNet(5) (defaults widths=(16, 32, 64), blocks_per_stage=2, in_channels=3)")


@pytest.mark.points(2)
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_resnet_forward_is_pooled_logits(impl, training):
    torch.manual_seed(1)
    model = impl.SmallResNet(4, widths=(3, 5), blocks_per_stage=1, in_channels=2).double()
    randomise_bn(model, 2)
    model.train(training)
    x = torch.randn(3, 2, 6, 5, dtype=torch.float64)
    got = model(x)
    with torch.no_grad():
        feats = x
        for module in (*model.stem, *(b for stage in model.stages for b in stage)):
            feats = module(feats)
        want = model.fc(feats.mean(dim=(2, 3)))
    assert_close(got, want, **F64, name="SmallResNet logits vs fc(stages(stem(x)).mean(dim=(2, 3))) (no softmax)")


@pytest.mark.points(2)
@settings(max_examples=10)
@given(n=st.integers(1, 3), h=st.integers(1, 9), w=st.integers(1, 9), classes=st.integers(1, 4),
       widths=st.lists(st.integers(1, 4), min_size=1, max_size=3), blocks=st.integers(1, 2),
       in_ch=st.integers(1, 3))
@example(n=1, h=1, w=1, classes=3, widths=[2, 3, 4], blocks=1, in_ch=3)
def test_logits_shape_for_any_image_size(impl, n, h, w, classes, widths, blocks, in_ch):
    model = impl.SmallResNet(classes, widths=tuple(widths), blocks_per_stage=blocks, in_channels=in_ch).eval()
    out = model(torch.randn(n, in_ch, h, w))
    assert_shape(out, (n, classes), name=f"SmallResNet({classes}, widths={tuple(widths)}) on ({n}, {in_ch}, {h}, {w})")


@pytest.mark.points(2)
def test_every_parameter_gets_a_gradient(impl):
    torch.manual_seed(3)
    model = impl.SmallResNet(3, widths=(2, 3), blocks_per_stage=2, in_channels=1)
    x = torch.randn(4, 1, 6, 6)
    out = model(x)
    (out * torch.randn(out.shape)).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not bool(p.grad.abs().sum() > 0)]
    assert not missing, f"these parameters got no (or an all-zero) gradient: {missing[:6]}"


def test_channels_last_gives_same_logits(impl):
    torch.manual_seed(4)
    model = impl.SmallResNet(3, widths=(4, 6), blocks_per_stage=1).eval()
    randomise_bn(model, 4)
    x = torch.randn(2, 3, 8, 7)
    with torch.no_grad():
        got = model(x.to(memory_format=torch.channels_last))
        want = model.fc(model.stages(model.stem(x)).mean(dim=(2, 3)))
    assert_close(got, want, rtol=1e-4, atol=1e-5, name="SmallResNet logits for a channels_last input "
                                                       "(vs the contiguous input)")


@pytest.mark.parametrize("device", device_params())
def test_autocast_logits_dtype(impl, device):
    model = impl.SmallResNet(3, widths=(4, 6), blocks_per_stage=1).to(device).eval()
    x = torch.randn(2, 3, 8, 8, device=device)
    with torch.no_grad():
        want = model(x)
        with autocast(device) as low:
            got = model(x)
    assert got.dtype == low, f"SmallResNet under torch.autocast({device!r}) returned {got.dtype}, expected {low}"
    assert_close(got.float(), want, rtol=5e-2, atol=5e-2, name=f"SmallResNet logits under autocast ({low})")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_runs_on_input_device(impl, device):
    model = impl.SmallResNet(3, widths=(2, 4), blocks_per_stage=1).to(device)
    out = model(torch.randn(2, 3, 5, 5, device=device))
    assert_shape(out, (2, 3), name=f"SmallResNet logits on {device}")
    assert_device(out, device, name=f"SmallResNet logits on {device}")
