"""Custom losses: focal loss and Huber loss.

The question
------------
"How do you implement a custom loss function in PyTorch? Give an example." A loss is just a
function of tensors that returns a (usually scalar) tensor built from differentiable ops; autograd
does the rest. The interview follow-ups are about getting the maths right and keeping it stable:
the focal loss (Lin et al., RetinaNet) down-weights easy examples of an imbalanced binary problem,
and the Huber loss is quadratic for small errors and linear for large ones, so outliers do not
dominate the gradient.

Your task
---------
1. ``focal_loss(logits, target, *, gamma, alpha, reduction)``: binary focal loss from logits.
2. ``huber(pred, target, delta, reduction)``: the Huber loss.

Contract
--------
Focal loss:
- ``logits``: floating-point tensor of any shape (raw scores, before the sigmoid). ``target``: a
  floating-point tensor of the same shape holding 0.0 or 1.0.
- With ``p = sigmoid(logits)``, ``p_t = p`` where ``target == 1`` and ``1 - p`` where
  ``target == 0``, and ``alpha_t = alpha`` where ``target == 1`` and ``1 - alpha`` where
  ``target == 0`` (``alpha_t = 1`` everywhere when ``alpha`` is ``None``), the elementwise loss is::

      FL = -alpha_t * (1 - p_t) ** gamma * log(p_t)

  With ``gamma=0`` and ``alpha=None`` this is exactly
  ``F.binary_cross_entropy_with_logits(logits, target, reduction=...)``.
- Numerically stable: float32 logits as large as ``|logit| = 100`` (either sign, either target)
  give finite, correct losses and finite, correct gradients (for the default ``gamma=2`` and for
  ``gamma=0``).
- ``gamma`` must be ``>= 0`` (``gamma = 0`` allowed): a negative or NaN ``gamma`` raises
  ``ValueError`` naming ``gamma``. ``alpha`` is ``None`` or in ``[0, 1]`` (both ends allowed;
  ``alpha = 0`` is not ``None``): anything else, NaN included, raises ``ValueError`` naming
  ``alpha``.

Huber loss (what ``F.huber_loss`` computes):
- ``pred`` and ``target`` are floating-point tensors of the same shape; with ``d = pred - target``
  the elementwise loss is ``0.5 * d**2`` where ``|d| <= delta`` and ``delta * (|d| - 0.5 * delta)``
  elsewhere. It is continuous with a continuous first derivative (``delta * sign(d)`` at
  ``|d| = delta``, from both sides). Careful: ``F.smooth_l1_loss(beta=delta)`` is this divided by
  ``delta``, a different loss unless ``delta == 1``.
- ``delta <= 0`` or NaN raises ``ValueError`` naming ``delta``.

Both functions:
- ``reduction="none"``: elementwise losses, the input's shape; ``"sum"``: their sum; ``"mean"``:
  their mean over all elements. Another value raises ``ValueError`` naming ``reduction``.
- A ``target`` whose shape differs from the input's (no broadcasting) raises ``ValueError`` naming
  ``target``.
- Gradients are correct w.r.t. ``logits`` (focal loss) and w.r.t. ``pred`` and ``target``
  (Huber), checked in float64 by finite differences and against torch; for Huber also at and next
  to ``|d| = delta``, and at ``d = 0`` (gradient 0).
- Outputs are on the input's device (``meta`` included) with the dtype of ``logits`` / ``pred``
  (``float16``, ``bfloat16``, ``float32`` or ``float64``), also when ``target`` has another
  floating dtype: a ``float64`` target does not promote a ``float16`` loss.

Hints
-----
- ``log(sigmoid(x))`` underflows to ``log(0) = -inf`` for ``x = -100`` in float32:
  ``F.logsigmoid`` (or ``-F.softplus(-x)``) does not. Note ``1 - sigmoid(x) == sigmoid(-x)``.
- ``torch.where`` picks between the two branches of the Huber loss elementwise.
"""

from torch import Tensor


def focal_loss(logits: Tensor, target: Tensor, *, gamma: float = 2.0, alpha: float | None = None,
               reduction: str = "mean") -> Tensor:
    """Binary focal loss ``-alpha_t * (1 - p_t) ** gamma * log(p_t)`` from logits."""
    raise NotImplementedError


def huber(pred: Tensor, target: Tensor, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    """Huber loss: quadratic for ``|pred - target| <= delta``, linear beyond."""
    raise NotImplementedError
