"""Public tests for pytorch.deploy.checkpointing: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_checkpointing.py``."""

import torch


def test_round_trip_restores_model_and_epoch(impl, tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    impl.save_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, epoch=5)
    fresh = torch.nn.Linear(3, 2)
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.1)
    epoch = impl.load_checkpoint(tmp_path / "ckpt.pt", fresh, fresh_opt)
    assert epoch == 5, f"load_checkpoint returned {epoch!r}, expected the saved epoch 5"
    assert torch.equal(fresh.weight, model.weight) and torch.equal(fresh.bias, model.bias), "model not restored"
    assert fresh_opt.state_dict()["state"], "the optimizer state (Adam's moments) was not restored"


def test_loads_with_weights_only(impl, tmp_path):
    model = torch.nn.Linear(2, 2)
    impl.save_checkpoint(tmp_path / "c.pt", model=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
                         epoch=0)
    state = torch.load(tmp_path / "c.pt", weights_only=True)
    keys = sorted(state) if isinstance(state, dict) else type(state).__name__
    assert isinstance(state, dict) and set(state) >= {"model", "optimizer", "scheduler", "epoch", "rng"}, (
        f"the checkpoint should be a dict with keys model, optimizer, scheduler, epoch, rng; got {keys}")
