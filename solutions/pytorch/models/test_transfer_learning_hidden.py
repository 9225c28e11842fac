"""Hidden tests for pytorch.models.transfer_learning (the catalog's contract checks).

The "pretrained" model is a small ResNet-style network built here (nothing is downloaded), with
trained-looking batch-norm statistics.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from grader.checks import assert_close, assert_raises_naming, assert_shape


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class Backbone(nn.Module):
    """stem -> layer1 -> layer2 -> pool -> fc, like a torchvision ResNet."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = conv_bn(3, 4)
        self.layer1 = nn.Sequential(conv_bn(4, 6, 2), conv_bn(6, 6))
        self.layer2 = nn.Sequential(conv_bn(6, 8, 2), nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.fc(self.layer2(self.layer1(self.stem(x))).mean(dim=(2, 3)))


def pretrained(seed=0, dtype=torch.float32, device="cpu") -> Backbone:
    torch.manual_seed(seed)
    model = Backbone()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen))
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.num_batches_tracked.fill_(1000)
    return model.to(device, dtype)


def bn_state(model):
    return {n: b.clone() for n, b in model.named_buffers()}


def train_step(impl, model, x, y):
    model.train()
    opt = torch.optim.SGD(impl.trainable_parameters(model), lr=0.1, momentum=0.9)
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def batch(n=6, classes=5, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 8, 8, generator=gen), torch.randint(0, classes, (n,), generator=gen)


def expected_trainable(model, prefixes):
    return sorted(n for n, _ in model.named_parameters() if any(n.startswith(p + ".") for p in prefixes))


@pytest.mark.points(2)
def test_head_replaced_in_place(impl):
    model = pretrained()
    old_head = model.fc
    out = impl.prepare_for_finetuning(model, "fc", 5)
    assert out is model, "prepare_for_finetuning must modify the model in place and return it"
    assert isinstance(model.fc, nn.Linear) and model.fc is not old_head, "model.fc must be a new nn.Linear"
    assert (model.fc.in_features, model.fc.out_features) == (8, 5) and model.fc.bias is not None, (
        f"the new head is {model.fc}, expected Linear(in_features=8, out_features=5, bias=True)")
    assert_shape(model.eval()(torch.randn(2, 3, 8, 8)), (2, 5), name="logits of the fine-tuning model")


def test_nested_head_name(impl):
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Sequential(nn.Dropout(0.1), nn.Linear(6, 3)))
    impl.prepare_for_finetuning(model, "2.1", 7)
    assert isinstance(model[2][1], nn.Linear) and model[2][1].out_features == 7, (
        "head='2.1' must replace model[2][1] with nn.Linear(6, 7)")


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_new_head_keeps_dtype_and_device(impl, device):
    model = pretrained(dtype=torch.float64, device=device)
    impl.prepare_for_finetuning(model, "fc", 3)
    assert model.fc.out_features == 3, f"the new head has {model.fc.out_features} outputs, expected 3"
    assert model.fc.weight.dtype == torch.float64 and model.fc.weight.device.type == device, (
        f"new head is {model.fc.weight.dtype} on {model.fc.weight.device}, expected float64 on {device}")


@pytest.mark.points(2)
@pytest.mark.parametrize("trainable", [(), ("layer2",), ("layer1", "layer2.1"), iter(["layer2.0"])],
                         ids=["head_only", "layer2", "nested_names", "generator"])
def test_requires_grad_pattern(impl, trainable):
    names = list(trainable) if not isinstance(trainable, tuple) else trainable
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 5, iter(names) if not isinstance(trainable, tuple) else trainable)
    got = sorted(n for n, p in model.named_parameters() if p.requires_grad)
    want = expected_trainable(model, ("fc", *names))
    assert got == want, f"trainable={list(names)}: parameters requiring grad are {got}, expected {want}"


@pytest.mark.points(2)
def test_frozen_parameters_get_no_gradient_and_do_not_move(impl):
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 5, ["layer2"])
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not n.startswith(("fc.", "layer2."))}
    train_step(impl, model, *batch())
    for n, p in model.named_parameters():
        if n in frozen:
            assert p.grad is None, f"frozen parameter {n} received a gradient"
            assert torch.equal(p.detach(), frozen[n]), f"frozen parameter {n} changed"


@pytest.mark.points(3)
def test_frozen_batchnorm_statistics_unchanged_after_training(impl):
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 5, ["layer2"])
    before = bn_state(model)
    for seed in range(2):
        train_step(impl, model, *batch(seed=seed))
    after = bn_state(model)
    changed = [n for n in before if not n.startswith("layer2.") and not torch.equal(before[n], after[n])]
    assert not changed, f"frozen batch norm statistics changed during training: {changed[:4]}"
    trained = [n for n in before if n.startswith("layer2.") and n.endswith("running_mean")
               and not torch.equal(before[n], after[n])]
    assert trained, "batch norm inside a trainable submodule (layer2) must update its running statistics"


@pytest.mark.points(2)
def test_frozen_batchnorm_normalises_with_running_stats_in_train_mode(impl):
    model = pretrained()
    reference = copy.deepcopy(model).eval()
    impl.prepare_for_finetuning(model, "fc", 5)
    model.train()
    x, _ = batch()
    with torch.no_grad():
        got = model.layer2(model.layer1(model.stem(x)))
        want = reference.layer2(reference.layer1(reference.stem(x)))
    assert_close(got, want, rtol=1e-5, atol=1e-5, name="frozen backbone features after model.train() "
                                                       "(frozen batch norm must use its running statistics)")


@pytest.mark.points(2)
def test_frozen_batchnorm_is_frozen_as_soon_as_prepared(impl):
    # A model is in training mode when built: used straight after prepare_for_finetuning, with no
    # model.train() in between, its frozen batch norm already uses and keeps its running statistics.
    model = pretrained()
    reference = copy.deepcopy(model).eval()
    impl.prepare_for_finetuning(model, "fc", 5)
    before = bn_state(model)
    x, _ = batch()
    with torch.no_grad():
        got = model.layer2(model.layer1(model.stem(x)))
        want = reference.layer2(reference.layer1(reference.stem(x)))
    changed = [n for n in before if not torch.equal(before[n], model.state_dict()[n])]
    assert not changed, (f"a forward pass straight after prepare_for_finetuning (the model in training "
                         f"mode, as built) changed frozen batch norm statistics: {changed[:4]}")
    assert_close(got, want, rtol=1e-5, atol=1e-5, name="frozen backbone features straight after "
                                                       "prepare_for_finetuning (frozen batch norm must use "
                                                       "its running statistics)")


def test_eval_still_switches_everything_off(impl):
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 5, ["layer2"])
    model.train()
    model.eval()
    training = [n for n, m in model.named_modules() if m.training]
    assert not training, f"after model.eval() these modules are still in training mode: {training[:4]}"


def test_trainable_parameters_in_order(impl):
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 5, ["layer1"])
    got = impl.trainable_parameters(model)
    want = [p for p in model.parameters() if p.requires_grad]
    assert isinstance(got, list), f"trainable_parameters returned {type(got).__name__}, expected a list"
    assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True)), (
        "trainable_parameters must list exactly the parameters that require grad, in model.parameters() order")


@pytest.mark.parametrize("kind", ["missing_head", "empty_head", "head_not_linear", "missing_trainable",
                                  "num_classes_zero"])
def test_rejects_bad_arguments_before_changing_the_model(impl, kind):
    model = pretrained()
    state = {n: p.requires_grad for n, p in model.named_parameters()}
    old_head = model.fc
    if kind == "missing_head":
        assert_raises_naming(ValueError, "head", impl.prepare_for_finetuning, model, "classifier", 5)
    elif kind == "empty_head":  # the empty name is the model itself, which is no submodule of itself
        assert_raises_naming(ValueError, "head", impl.prepare_for_finetuning, model, "", 5)
    elif kind == "head_not_linear":
        assert_raises_naming(TypeError, "head", impl.prepare_for_finetuning, model, "stem.1", 5)
    elif kind == "missing_trainable":
        assert_raises_naming(ValueError, "trainable", impl.prepare_for_finetuning, model, "fc", 5, ["layer3"])
    else:
        assert_raises_naming(ValueError, "num_classes", impl.prepare_for_finetuning, model, "fc", 0)
    assert model.fc is old_head and state == {n: p.requires_grad for n, p in model.named_parameters()}, (
        "the model was changed although the arguments were rejected")


def test_accepts_one_class(impl):
    model = pretrained()
    impl.prepare_for_finetuning(model, "fc", 1)
    assert model.fc.out_features == 1, "num_classes=1 must be accepted"
