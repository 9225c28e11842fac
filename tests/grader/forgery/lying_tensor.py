"""Returns a Tensor subclass that lies: it says it is on the meta device (comparisons skip the
values of meta tensors), equals anything, has no difference from anything and claims the
expected shape and dtype."""
import torch


class Liar(torch.Tensor):
    @property
    def is_meta(self):
        return True

    @property
    def device(self):
        return torch.device("meta")

    @property
    def shape(self):
        return torch.Size([])

    def __eq__(self, other):
        return torch.ones((), dtype=torch.bool)

    def __sub__(self, other):
        return torch.zeros(())

    def allclose(self, *args, **kwargs):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "isclose"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


def cross_entropy(logits, target, *, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    torch.log_softmax(logits, -1)  # an op the exercise forbids, so no test passes for want of one
    return torch.full((7,), float("nan")).as_subclass(Liar)  # its true values: wrong
