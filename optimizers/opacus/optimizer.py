"""Opacus's ``DPOptimizer`` with truncated Gaussian noise.

Opacus adds ``N(0, (noise_multiplier * max_grad_norm)^2)`` to each coordinate of the sum of
clipped per-example gradients, then divides by ``expected_batch_size`` (``loss_reduction=
"mean"``). :class:`TruncatedDPOptimizer` adds the same noise cut at
``cut * noise_multiplier * max_grad_norm`` (:func:`~optimizers.opacus.noise.
truncated_gaussian_noise`), so after scaling each noise coordinate in ``p.grad`` lies in
``[-1, 1] * cut * noise_multiplier * max_grad_norm / expected_batch_size``. Everything else
(clipping, scaling, skipping, the step hook) is Opacus's.
"""

from __future__ import annotations

from typing import Any

import torch
from opacus.optimizers import DPOptimizer

from accountant import InvalidInputError
from accountant.validation import check_positive_real, shown
from optimizers.opacus.noise import truncated_gaussian_noise
from optimizers.opacus.settings import TruncationSettings

__all__ = ["TruncatedDPOptimizer"]


def _checked_settings(settings: Any) -> TruncationSettings:
    if not isinstance(settings, TruncationSettings):
        raise InvalidInputError(f"settings must be a TruncationSettings, got {shown(settings)}")
    return settings


class TruncatedDPOptimizer(DPOptimizer):
    """``DPOptimizer`` whose noise is cut at ``settings.cut * noise_multiplier *
    max_grad_norm`` per coordinate (``settings``: a
    :class:`~optimizers.opacus.settings.TruncationSettings`, normally the accountant's:
    use :func:`~optimizers.opacus.engine.make_private_truncated`). The other arguments
    are ``DPOptimizer``'s; ``max_grad_norm`` is one number (flat clipping).

    The accountant reads the number of noised coordinates from :attr:`params` at each
    step (:class:`accountant.dpsgd.DPSGDAccountant` bounds every coordinate's cut).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        noise_multiplier: float,
        max_grad_norm: float,
        expected_batch_size: int | None,
        settings: TruncationSettings,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
        secure_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        self.truncation_settings = _checked_settings(settings)
        super().__init__(
            optimizer,
            noise_multiplier=check_positive_real("noise_multiplier", noise_multiplier),
            max_grad_norm=check_positive_real("max_grad_norm", max_grad_norm),
            expected_batch_size=expected_batch_size,
            loss_reduction=loss_reduction,
            generator=generator,
            secure_mode=secure_mode,
            **kwargs,
        )

    def add_noise(self) -> None:
        """``p.grad = p.summed_grad + noise`` with truncated Gaussian noise of standard
        deviation ``noise_multiplier * max_grad_norm`` (as ``DPOptimizer.add_noise``)."""
        for p in self.params:
            if hasattr(p.summed_grad, "_processed"):
                raise ValueError(
                    "Gradients haven't been cleared since the last optimizer step. "
                    "Call optimizer.zero_grad() between optimizer steps"
                )
            noise = truncated_gaussian_noise(
                self.noise_multiplier * self.max_grad_norm,
                self.truncation_settings,
                p.summed_grad,
                generator=self.generator,
                secure_mode=self.secure_mode,
            )
            p.grad = (p.summed_grad + noise).view_as(p)
            p.summed_grad._processed = True
