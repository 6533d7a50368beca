"""Releasing grid noise on a torch tensor (e.g. a summed gradient) with exactly the
audited law: :func:`release_tensor` hands the values to :func:`accountant.release.release`
(answers on the grid in exact arithmetic, quantised noise drawn from ``os.urandom``,
integer addition) and returns the noisy values as a tensor of the input's dtype and
device, with the :class:`~accountant.release.Release` that says what to audit.

All the mathematics is :mod:`accountant.release`'s; this module only moves tensors.
Each element is one release of :attr:`Release.pair` (per-coordinate noise; for a
gradient clipped to L2 norm ``C`` each coordinate moves at most ``C``).
"""

from __future__ import annotations

import numpy as np
import torch

from accountant.errors import InvalidInputError
from accountant.noise.distribution import NoiseDistribution
from accountant.noise.quantised import DEFAULT_BITS, QuantisedNoise
from accountant.release import Release, release

__all__ = ["release_tensor"]


def release_tensor(
    values: torch.Tensor,
    noise: NoiseDistribution | QuantisedNoise,
    *,
    sensitivity: float,
    snap: str = "refuse",
    bits: int = DEFAULT_BITS,
    rng: np.random.Generator | None = None,
) -> tuple[torch.Tensor, Release]:
    """``values + noise`` as :func:`accountant.release.release` computes it, element by
    element; returns the noisy tensor (same shape, dtype and device) and the release.

    A float32 (or narrower) tensor cannot hold every grid point exactly: the noisy values
    are computed in float64 and rounded once to the tensor's dtype, a post-processing of
    the released grid values (it cannot leak the answer, which the grid values no longer
    carry below the step)."""
    if not isinstance(values, torch.Tensor):
        raise InvalidInputError(f"values must be a torch.Tensor, got {type(values).__name__}")
    if not values.dtype.is_floating_point:
        raise InvalidInputError(f"values must have a floating dtype, got {values.dtype}")
    answers = values.detach().to(device="cpu", dtype=torch.float64).numpy()
    result = release(answers, noise, sensitivity=sensitivity, snap=snap, bits=bits, rng=rng)
    noisy = torch.from_numpy(result.values).to(device=values.device, dtype=values.dtype)
    return noisy, result
