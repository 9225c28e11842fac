"""Public tests for pytorch.tensors.device_transfer: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_device_transfer.py``.

``meta`` is a device with shapes and dtypes but no data: it lets a CPU-only machine check that
tensors really move."""

import torch


def test_move_dict_and_list_to_meta(impl):
    batch = {"x": torch.randn(2, 3), "y": [torch.tensor([1, 0]), "label"], "n": 2}
    out = impl.move_to(batch, "meta")
    assert type(out) is dict and list(out) == ["x", "y", "n"], (
        "move_to should return a dict with the same keys")
    assert out["x"].device.type == "meta" and out["y"][0].device.type == "meta", "tensors were not moved"
    assert out["y"][1] == "label" and out["n"] == 2, "non-tensor values must be left alone"


def test_no_copy_when_already_there(impl):
    t = torch.randn(3)
    assert impl.move_to([t], "cpu")[0] is t, "a tensor already on the device must be returned as is"


def test_pick_device_cpu(impl):
    assert impl.pick_device(("cpu",)) == torch.device("cpu"), "pick_device(('cpu',)) should be cpu"
