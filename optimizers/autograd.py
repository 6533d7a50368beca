"""torch.autograd wrappers over the accountant's bounds and their gradients.

No privacy mathematics here: the value and the gradient of every bound come from
:mod:`accountant` (numpy); this module only moves arrays between torch and numpy
and applies the chain rule of the additive pair ``A = (p, 0_m)``, ``B = (0_m, p)``:
``d delta / d p_i = d delta / dA_i + d delta / dB_{i + m}``.
"""

from __future__ import annotations

import numpy as np
import torch

from accountant import ExtendedMA, WorstCasePair
from accountant.noise import NoiseDistribution

__all__ = ["ExtendedMADelta", "extended_ma_delta"]


class ExtendedMADelta(torch.autograd.Function):
    """Extended Moments Accountant delta(eps) of additive noise ``p`` after ``times``
    releases (paper's ``l^MA``; SPEC section 3), with its exact gradient in ``p``."""

    @staticmethod
    def forward(ctx, pmf, step, sensitivity, epsilon, times, conversion, direction):
        values = pmf.detach().cpu().numpy().astype(np.float64)
        noise = NoiseDistribution(values, step, -step * (values.size // 2))
        steps = noise.shift_steps(sensitivity)
        pair = WorstCasePair._additive(noise, steps)
        accountant = ExtendedMA(conversion=conversion).compose(pair, times=times)
        result = accountant.delta_and_gradient(epsilon, direction)
        gradient = result.gradients[0][0]
        grad_pmf = gradient.a[: values.size] + gradient.b[steps:]
        ctx.save_for_backward(torch.as_tensor(grad_pmf, dtype=pmf.dtype, device=pmf.device))
        return pmf.new_tensor(result.delta)

    @staticmethod
    def backward(ctx, grad_output):
        (grad_pmf,) = ctx.saved_tensors
        return grad_output * grad_pmf, None, None, None, None, None, None


def extended_ma_delta(
    pmf: torch.Tensor,
    *,
    step: float,
    sensitivity: float,
    epsilon: float,
    times: int,
    conversion: str = "tight",
    direction: str = "max",
) -> torch.Tensor:
    """Differentiable Extended MA delta of noise ``pmf`` (centred grid with ``step``)."""
    return ExtendedMADelta.apply(pmf, step, sensitivity, epsilon, times, conversion, direction)
