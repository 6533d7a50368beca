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
from accountant.buckets.tails import LAMBDA_GRID, TailMoments
from accountant.pairs.pld import PrivacyLossDistribution

__all__ = ["SLACK_FRACTION", "hoeffding_slack", "round_coarser", "round_to_lattice"]

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


def round_coarser(pld: BucketedPLD, factor: int) -> BucketedPLD:
    """A distribution of losses on the lattice ``g_J = c + J w`` (a rounded release or a
    composition of rounded releases: point losses) rounded onto the lattice
    ``G_K = c + K W`` with ``W = factor * w``, keeping the mean (the module note, applied
    to lattice points): ``g_J = G_K + t w`` (``0 <= t < factor``) gives ``1 - t/factor`` of
    its A-mass to ``G_K`` and ``t/factor`` to ``G_{K+1}``.

    ``factor`` is a power of two, so every weight is a binary fraction and every product
    ``mass * weight`` is exact: the split adds no drift, only the rounding of the sums (at
    most ``2 factor - 1`` non-negative terms per entry, a relative error). The rounding step
    of this distribution, used as one release of a further composition, lies in an interval
    of length ``W`` with mean 0: ``hoeffding_variance`` gains ``W^2``. The A-mass error
    bounds follow the linear map (each coarse entry takes at most ``factor`` times the
    largest fine error; the 2-norm grows by at most ``sqrt(factor)``). The tail moments are
    those given (``pld.tail_moments``, counted) raised by Hoeffding's lemma,
    ``ln E e^{+-lambda L'} <= ln E e^{+-lambda L} + lambda^2 W^2 / 8``."""
    if factor < 1 or factor & (factor - 1):
        raise ValueError(f"factor must be a power of two, got {factor!r}")
    if factor == 1:
        return pld
    width = pld.width * factor
    lead = pld.first_index % factor  # fine points in front of the first whole group
    first = (pld.first_index - lead) // factor
    groups = -(-(lead + pld.size) // factor)
    share = np.arange(factor, dtype=np.float64) / factor  # t / factor, exact

    def split(values: np.ndarray) -> np.ndarray:
        padded = np.zeros(groups * factor)
        padded[lead : lead + values.size] = values
        table = padded.reshape(groups, factor)
        out = np.zeros(groups + 1)
        out[:-1] = table @ (1.0 - share)
        out[1:] += table @ share
        return out

    mass_a = split(pld.mass_a)
    sums = 1.01 * (2 * factor + 2) * UNIT_ROUNDOFF * (1.0 + pld.relative_error)
    centre = 0.5 * (pld.offset_low + pld.offset_high)
    points = centre + (first + np.arange(mass_a.size)) * width
    with np.errstate(divide="ignore", over="ignore"):
        mass_b = np.log(mass_a)
        mass_b -= points
        np.exp(mass_b, out=mass_b)
        np.minimum(mass_b, 1e300, out=mass_b)
    largest = abs(centre) + width * (abs(first) + mass_a.size)
    pad = 4.0 * UNIT_ROUNDOFF * largest
    entry_errors = None
    if pld.entry_errors is not None:
        entry_errors = split(pld.entry_errors) * (1.0 + sums)
    moments = tuple(
        (
            TailMoments(
                count * m.log_mgf_high + (LAMBDA_GRID * width) ** 2 / 8.0 * (1.0 + 1e-12),
                count * m.log_mgf_low + (LAMBDA_GRID * width) ** 2 / 8.0 * (1.0 + 1e-12),
            ),
            1,
        )
        for m, count in [_summed(pld.tail_moments)]
        if pld.tail_moments
    )
    return BucketedPLD(
        width=width,
        first_index=first,
        mass_a=mass_a,
        mass_b=mass_b,
        offset_low=centre - max(pad, centre - pld.offset_low),
        offset_high=centre + max(pad, pld.offset_high - centre),
        mass_logs=pld.mass_logs,
        lost_a=pld.lost_a,
        relative_error=pld.relative_error + sums,
        error_a=math.sqrt(factor) * pld.error_a * (1.0 + sums),
        error_b=math.inf,  # B is A e^{-G} on the lattice: only A-only bounds are used
        releases=pld.releases,
        tail_moments=moments,
        hoeffding_variance=(pld.hoeffding_variance + width * width) * (1.0 + 4.0 * UNIT_ROUNDOFF),
        hoeffding_drift=pld.hoeffding_drift,
        entry_error=factor * pld.entry_error * (1.0 + sums),
        entry_errors=entry_errors,
    )


def _summed(moments: tuple) -> tuple[TailMoments, int]:
    """``(M, 1)`` with ``M = sum_i count_i M_i`` of ``((M_i, count_i), ...)``."""
    high = sum(count * m.log_mgf_high for m, count in moments)
    low = sum(count * m.log_mgf_low for m, count in moments)
    return TailMoments(high, low), 1
