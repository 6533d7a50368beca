"""torch.autograd wrappers over the accountant's training losses and their gradients.

No privacy mathematics here: :func:`accountant.learning.training_losses.noise_bound` gives the
value of each bound and its exact gradient with respect to the noise pmf (the chain
rule through the additive or DP-SGD pair included); this module only moves arrays
between torch and numpy.

* :func:`extended_ma_delta`: the Extended Moments Accountant delta (paper's ``l^MA``);
* :func:`buckets_delta`: the smooth PrivacyBuckets ADP or PDP delta (``l^ADP``,
  ``l^PDP``; soft bucket assignment, see :mod:`accountant.learning.smooth_loss`).
"""

from __future__ import annotations

import numpy as np
import torch

from accountant.errors import InvalidInputError
from accountant.learning.training_losses import noise_bound
from accountant.pairs.pair_maps import (
    AdditivePairMap,
    AllShiftsPairMap,
    SubsampledPairMap,
    pair_map,
)
from accountant.validation import Direction, Kind, check_choice

__all__ = ["NoiseBoundFunction", "buckets_delta", "extended_ma_delta", "noise_bound_tensor"]


class NoiseBoundFunction(torch.autograd.Function):
    """``bound(p)`` as a torch function of the noise pmf tensor ``p``; ``options`` are the
    keyword arguments of :func:`accountant.learning.training_losses.noise_bound`."""

    @staticmethod
    def forward(ctx, pmf, step, mapping, options):
        """The bound's value at ``pmf``; its gradient is saved for :meth:`backward`."""
        values = pmf.detach().cpu().numpy().astype(np.float64)
        result = noise_bound(values, step, mapping, **options)
        ctx.save_for_backward(torch.as_tensor(result.gradient, dtype=pmf.dtype, device=pmf.device))
        return pmf.new_tensor(result.value)

    @staticmethod
    def backward(ctx, grad_output):
        """``grad_output`` times the saved gradient with respect to ``pmf`` (the other
        arguments get none)."""
        (gradient,) = ctx.saved_tensors
        return grad_output * gradient, None, None, None


def noise_bound_tensor(
    pmf: torch.Tensor,
    *,
    step: float,
    mapping: AdditivePairMap | SubsampledPairMap | AllShiftsPairMap,
    **options,
) -> torch.Tensor:
    """Differentiable ``noise_bound(pmf, step, mapping, **options).value``."""
    # A list or array would fail with a bare AttributeError, and an integer tensor would
    # have its values truncated to integers by ``new_tensor``.
    if not isinstance(pmf, torch.Tensor) or not pmf.is_floating_point():
        shown = f"tensor of dtype {pmf.dtype}" if isinstance(pmf, torch.Tensor) else type(pmf)
        raise InvalidInputError(
            f"pmf must be a floating-point torch.Tensor, got {getattr(shown, '__name__', shown)}"
        )
    return NoiseBoundFunction.apply(pmf, step, mapping, options)


def extended_ma_delta(
    pmf: torch.Tensor,
    *,
    step: float,
    sensitivity: float,
    epsilon: float,
    times: int,
    conversion: str = "tight",
    direction: Direction = "max",
    q: float | None = None,
) -> torch.Tensor:
    """Differentiable Extended MA delta of noise ``pmf`` (centred grid with ``step``),
    additive with ``sensitivity``, or DP-SGD with rate ``q`` and clip ``sensitivity``."""
    return noise_bound_tensor(
        pmf,
        step=step,
        mapping=pair_map(step, sensitivity, q),
        bound="MA",
        epsilon=epsilon,
        times=times,
        conversion=conversion,
        direction=direction,
    )


def buckets_delta(
    pmf: torch.Tensor,
    *,
    step: float,
    sensitivity: float,
    epsilon: float,
    times: int,
    kind: Kind = "ADP",
    direction: Direction = "max",
    q: float | None = None,
    width: float | None = None,
) -> torch.Tensor:
    """Differentiable smooth PrivacyBuckets delta (``kind`` ``"ADP"`` or ``"PDP"``) of noise
    ``pmf`` after ``times`` releases; a training loss, not a certified bound."""
    check_choice("kind", kind, ("ADP", "PDP"))  # ("MA" has no bound to differentiate)
    return noise_bound_tensor(
        pmf,
        step=step,
        mapping=pair_map(step, sensitivity, q),
        bound=kind,
        epsilon=epsilon,
        times=times,
        direction=direction,
        width=width,
    )
