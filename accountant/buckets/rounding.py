"""Mean-preserving rounding of losses onto a lattice, and the concentration it buys.

Bucketing with loss intervals (:func:`~accountant.buckets.bucketed.bucket_pld`) keeps every
bound certified, but a composed bucket spans ``n`` times the width of one: after ``n``
releases the bracket in eps is about ``n w`` wide. Rounding instead moves each finite
outcome's loss ``L`` to one of the two neighbouring lattice points ``g_J <= L < g_{J+1}``
(``g_J = anchor + J w``), splitting its A-mass so that the mean is kept (Gopi, Lee and
Wutschitz 2021, "Numerical composition of differential privacy", Section 5):

    g_J gets  A (g_{J+1} - L) / w,      g_{J+1} gets  A (L - g_J) / w,

and gives each lattice point the B-mass ``A_J e^{-g_J}``, so the rounded pair has exactly
the lattice losses. Composition then adds lattice points exactly (no interval widens). The
rounded composed loss is ``Y' = Y + Z`` with ``Z = sum_i Z_i``: given the true losses, the
``Z_i`` are independent, each in an interval of length ``w`` with mean ``-eta_i``, where
``|eta_i| <= rho`` is the rounding of the computed loss. Hoeffding's inequality gives, with
``V = sum_i w_i^2`` and ``m = sum_i rho_i``,

    P(Z < -(t + m)) <= beta(t) = exp(-2 t^2 / V),   and likewise P(Z > t + m) <= beta(t).

Since ``f(y) = (1 - e^{eps - y})^+`` (ADP) and ``1[y > eps]`` (PDP) are non-decreasing and at
most 1, on the composed outcomes with finite losses (A-mass ``F^n``):

    delta(eps) <= delta'(eps - t - m) + F^n beta(t),
    delta(eps) >= delta'(eps + t + m) - F^n beta(t),

where ``delta'`` is the delta of the rounded composition (bounded, with every other error,
by :mod:`accountant.buckets.bounds`); distinguishing events are unaffected. The eps slack
``t`` grows like ``w sqrt(n)``, not ``n w``. :func:`hoeffding_slack` picks ``t`` per query.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.bucketed import (
    UNIT_ROUNDOFF,
    BucketBudgetError,
    BucketedPLD,
    tail_cut_positions,
)
from accountant.buckets.tails import TailMoments
from accountant.pairs.pld import PrivacyLossDistribution

__all__ = ["SLACK_FRACTION", "hoeffding_slack", "round_to_lattice"]

#: ``beta(t)`` is chosen as this fraction of the estimated delta (or of the smallest
#: positive float), so the concentration term is negligible against the bracket.
SLACK_FRACTION = 1e-6


def hoeffding_slack(variance: float, drift: float, scale: float) -> tuple[float, float]:
    """``(s, beta)``: the eps shift ``s = t + m`` and the mass ``beta = exp(-2 t^2 / V)`` for
    ``V = variance``, ``m = drift``, with ``beta = SLACK_FRACTION * scale`` (``scale``: an
    estimate of the delta asked for; any positive value keeps the bounds certified, a good
    one keeps them tight). ``(0, 0)`` when nothing was rounded (``V = 0``)."""
    if variance <= 0.0:
        return drift, 0.0
    beta = max(SLACK_FRACTION * scale, 1e-300)
    t = math.sqrt(0.5 * variance * -math.log(beta))
    return (t + drift) * (1.0 + 4.0 * UNIT_ROUNDOFF), beta


def round_to_lattice(
    pld: PrivacyLossDistribution,
    width: float,
    anchor: float,
    tail_mass: float,
    max_buckets: int = 1 << 62,
    moments: tuple | None = None,
) -> BucketedPLD:
    """The rounded single release (see the module note) as a :class:`BucketedPLD` whose
    buckets are lattice points: zero-width loss intervals ``[g_J, g_J]`` widened only by
    the rounding of ``g_J`` itself, ``variance = w^2`` and ``drift`` the loss rounding.

    A-mass in the tails beyond ``tail_mass`` on each side is cut (counted in ``lost_a``).
    More than ``max_buckets`` lattice points raise
    :class:`~accountant.buckets.bucketed.BucketBudgetError` before anything is allocated.
    ``moments``: the ``tail_moments`` an earlier call with the same arguments returned (they
    depend on nothing else), to skip computing them again.
    """
    if pld.losses.size == 0:
        return BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, pld.mass_logs)
    low_cut, high_cut, lost = tail_cut_positions(pld.mass_a, tail_mass)
    losses = pld.losses[low_cut:high_cut]
    mass = pld.mass_a[low_cut:high_cut]
    position = (losses - anchor) / width
    index = np.floor(position)
    fraction = np.clip(position - index, 0.0, 1.0)
    first = int(index[0])
    count = int(index[-1]) - first + 2
    if count > max_buckets:
        raise BucketBudgetError(count)
    offset = (index - first).astype(np.int64)
    mass_a = np.bincount(offset, weights=mass * (1.0 - fraction), minlength=count)
    mass_a += np.bincount(offset + 1, weights=mass * fraction, minlength=count)
    points = anchor + (first + np.arange(count)) * width
    with np.errstate(divide="ignore"):
        mass_b = np.exp(np.log(mass_a) - points)
    # position, floor and the split are computed from the float loss: the split's own
    # rounding moves a mean by at most a few ulps of the loss, added to the drift.
    largest = float(np.max(np.abs(losses))) + abs(anchor) + width * (abs(first) + count)
    drift = pld.loss_rounding + 8.0 * UNIT_ROUNDOFF * largest
    # B = exp(ln A - g): a few ulps of |ln A| + |g| on top of A's own error
    with np.errstate(divide="ignore"):
        logs = np.abs(np.log(mass_a[mass_a > 0.0]))
    exponent_error = 4.0 * UNIT_ROUNDOFF * (float(np.max(logs, initial=0.0)) + largest)
    pad = 4.0 * UNIT_ROUNDOFF * (abs(anchor) + width * (abs(first) + count))
    rounded = BucketedPLD(
        width=width,
        first_index=first,
        mass_a=mass_a,
        mass_b=mass_b,
        offset_low=anchor - pad,
        offset_high=anchor + pad,
        mass_logs=pld.mass_logs,
        lost_a=lost * (1.0 + 4.0 * UNIT_ROUNDOFF * pld.losses.size),
        # each lattice mass is a sum of at most (outcomes + 1) non-negative products
        relative_error=1.01 * (losses.size + 4) * UNIT_ROUNDOFF + exponent_error,
        hoeffding_variance=width * width,
        hoeffding_drift=drift,
    )
    if moments is None:
        moments = ((TailMoments.of(rounded), 1),)
    return attrs.evolve(rounded, tail_moments=moments)
