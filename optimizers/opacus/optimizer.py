"""Opacus's DP optimisers with truncated Gaussian noise.

Opacus adds ``N(0, (noise_multiplier * max_grad_norm)^2)`` to each coordinate of the sum of
clipped per-example gradients, then divides by ``expected_batch_size`` (``loss_reduction=
"mean"``). :class:`TruncatedDPOptimizer` adds the same noise cut at
``cut * noise_multiplier * max_grad_norm`` (:func:`~optimizers.opacus.noise.
truncated_gaussian_noise`), so after scaling each noise coordinate in ``p.grad`` lies in
``[-1, 1] * cut * noise_multiplier * max_grad_norm / expected_batch_size``. Everything else
(clipping, scaling, skipping, the step hook) is Opacus's.

Opacus picks one optimiser class per way of training (``opacus.optimizers.
get_optimizer_class``); each has a truncated twin here (:data:`TRUNCATED_CLASSES`), the
Opacus class with :meth:`TruncatedDPOptimizer.add_noise` placed where its own Gaussian
draw was, so that everything the Opacus class does around the draw stays:

* ``DistributedDPOptimizer`` (``DistributedDataParallel``, flat clipping) and
  ``SimpleDistributedPerLayerOptimizer`` (DDP, per-layer clipping) draw on rank 0 only
  (the other ranks add nothing) and then sum the ranks' gradients: the noise is added
  once per step, each coordinate cut once;
* ``DPPerLayerOptimizer`` clips each parameter tensor to its own ``max_grad_norm[i]`` and
  noises with ``max_grad_norm = ||(max_grad_norm[i])_i||_2``, the L2 sensitivity;
* ``DPOptimizerFastGradientClipping`` and its distributed twin (ghost clipping,
  ``grad_sample_mode="ghost"``) clip inside the backward pass and noise the summed
  gradient the same way.

Opacus's other classes (adaptive clipping, FSDP's ghost clipping, whose ranks each add
a share of the noise) have no twin: :func:`truncated_optimizer_class` refuses them by name.
"""

from __future__ import annotations

from typing import Any

import torch
from opacus.optimizers import (
    DistributedDPOptimizer,
    DistributedDPOptimizerFastGradientClipping,
    DPOptimizer,
    DPOptimizerFastGradientClipping,
    DPPerLayerOptimizer,
    SimpleDistributedPerLayerOptimizer,
)

from accountant import InvalidInputError
from accountant.validation import check_positive_real, shown
from optimizers.opacus.noise import truncated_gaussian_noise
from optimizers.opacus.settings import TruncationSettings

__all__ = [
    "TRUNCATED_CLASSES",
    "TruncatedDPOptimizer",
    "TruncatedDPOptimizerFastGradientClipping",
    "TruncatedDPPerLayerOptimizer",
    "TruncatedDistributedDPOptimizer",
    "TruncatedDistributedDPOptimizerFastGradientClipping",
    "TruncatedDistributedPerLayerOptimizer",
    "truncated_optimizer_class",
]


def _checked_settings(settings: Any) -> TruncationSettings:
    if not isinstance(settings, TruncationSettings):
        raise InvalidInputError(f"settings must be a TruncationSettings, got {shown(settings)}")
    return settings


class TruncatedDPOptimizer(DPOptimizer):
    """``DPOptimizer`` whose noise is cut at ``settings.cut * noise_multiplier *
    max_grad_norm`` per coordinate (``settings``: a
    :class:`~optimizers.opacus.settings.TruncationSettings`, normally the accountant's:
    use :class:`~optimizers.opacus.engine.TruncatedPrivacyEngine`). The other arguments
    are ``DPOptimizer``'s; ``max_grad_norm`` is one number (flat clipping). ``settings``
    is required (``None`` is accepted only where a subclass has set it already).

    Every truncated optimiser class derives from this one; the accountant reads the
    number of noised coordinates from :attr:`params` at each step
    (:class:`accountant.dpsgd.DPSGDAccountant` bounds every coordinate's cut).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        noise_multiplier: float,
        max_grad_norm: float,
        expected_batch_size: float | None,
        settings: TruncationSettings | None = None,
        loss_reduction: str = "mean",
        generator: torch.Generator | None = None,
        secure_mode: bool = False,
        **kwargs: Any,
    ) -> None:
        if settings is None:  # set before by a subclass whose Opacus base drops keywords
            settings = getattr(self, "truncation_settings", None)
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
        if hasattr(self, "_adjusted_noise_multiplier"):
            raise InvalidInputError(
                "_adjusted_noise_multiplier is set (Opacus's adaptive clipping changes the "
                "noise of each step); truncated noise is accounted at noise_multiplier "
                f"only, got {self._adjusted_noise_multiplier!r}"
            )
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


class TruncatedDistributedDPOptimizer(DistributedDPOptimizer, TruncatedDPOptimizer):
    """Opacus's ``DistributedDPOptimizer`` (flat clipping under DDP) with truncated noise:
    rank 0 draws it (:meth:`TruncatedDPOptimizer.add_noise`), the other ranks add none,
    and the ranks' gradients are summed, so each step adds the noise once."""


class TruncatedDPPerLayerOptimizer(DPPerLayerOptimizer, TruncatedDPOptimizer):
    """Opacus's ``DPPerLayerOptimizer`` with truncated noise: ``max_grad_norm`` is the
    list of per-parameter clip norms, the noise's ``max_grad_norm`` their L2 norm."""


class TruncatedDistributedPerLayerOptimizer(
    SimpleDistributedPerLayerOptimizer, TruncatedDPOptimizer
):
    """Opacus's ``SimpleDistributedPerLayerOptimizer`` (per-layer clipping under DDP) with
    truncated noise, drawn on rank 0 only (as :class:`TruncatedDistributedDPOptimizer`)."""

    def __init__(
        self, optimizer: torch.optim.Optimizer, *, settings: TruncationSettings, **kwargs: Any
    ) -> None:
        # SimpleDistributedPerLayerOptimizer passes no further keyword on to its bases:
        # the settings go round it
        self.truncation_settings = _checked_settings(settings)
        super().__init__(optimizer, **kwargs)


class TruncatedDPOptimizerFastGradientClipping(
    TruncatedDPOptimizer, DPOptimizerFastGradientClipping
):
    """Opacus's ``DPOptimizerFastGradientClipping`` (ghost clipping) with truncated noise."""


class TruncatedDistributedDPOptimizerFastGradientClipping(
    DistributedDPOptimizerFastGradientClipping,
    TruncatedDPOptimizer,
    DPOptimizerFastGradientClipping,
):
    """Opacus's ``DistributedDPOptimizerFastGradientClipping`` (ghost clipping under DDP)
    with truncated noise, drawn on rank 0 only."""


#: Opacus's optimiser class -> its truncated twin.
TRUNCATED_CLASSES: dict[type[DPOptimizer], type[TruncatedDPOptimizer]] = {
    DPOptimizer: TruncatedDPOptimizer,
    DistributedDPOptimizer: TruncatedDistributedDPOptimizer,
    DPPerLayerOptimizer: TruncatedDPPerLayerOptimizer,
    SimpleDistributedPerLayerOptimizer: TruncatedDistributedPerLayerOptimizer,
    DPOptimizerFastGradientClipping: TruncatedDPOptimizerFastGradientClipping,
    DistributedDPOptimizerFastGradientClipping: (
        TruncatedDistributedDPOptimizerFastGradientClipping
    ),
}


def truncated_optimizer_class(opacus_class: type) -> type[TruncatedDPOptimizer]:
    """The truncated twin of the optimiser class Opacus picked (``get_optimizer_class``);
    refused, naming it, when there is none (module docstring)."""
    if opacus_class not in TRUNCATED_CLASSES:
        known = ", ".join(sorted(c.__name__ for c in TRUNCATED_CLASSES))
        raise InvalidInputError(
            f"Opacus's optimiser {getattr(opacus_class, '__name__', shown(opacus_class))} "
            f"has no truncated twin (it draws other noise than one truncated Gaussian per "
            f"step); supported: {known}"
        )
    return TRUNCATED_CLASSES[opacus_class]
