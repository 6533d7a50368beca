"""Comparing two noises on the same grid."""

from __future__ import annotations

import math

import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise import GRID_TOLERANCE, NoiseDistribution
from accountant.noise.distribution import check_noise
from accountant.numerics.lazy import special

__all__ = ["kl_divergence"]


def kl_divergence(p: NoiseDistribution, q: NoiseDistribution) -> float:
    """``KL(p || q) = sum_i p_i ln(p_i / q_i)`` over ``p_i > 0``, in nats.

    Both noises must live on the same grid (size, step and start), else
    :class:`~accountant.errors.InvalidInputError`. Returns ``math.inf`` when some
    ``q_i = 0`` where ``p_i > 0`` (``p`` is not absolutely continuous w.r.t. ``q``).
    Terms are ``scipy.special.rel_entr``, summed with ``math.fsum``.
    """
    p = check_noise("p", p)
    q = check_noise("q", q)
    if p.size != q.size:
        raise InvalidInputError(
            f"p and q must have the same size, got p.size={p.size}, q.size={q.size}"
        )
    if not math.isclose(p.step, q.step, rel_tol=GRID_TOLERANCE):
        raise InvalidInputError(
            f"p and q must have the same step, got p.step={p.step!r}, q.step={q.step!r}"
        )
    if abs(p.start - q.start) > GRID_TOLERANCE * p.step:
        raise InvalidInputError(
            f"p and q must have the same start, got p.start={p.start!r}, q.start={q.start!r}"
        )
    terms = special.rel_entr(p.pmf, q.pmf)
    if not np.isfinite(terms).all():
        return math.inf
    return math.fsum(terms.tolist())
