"""Rounding losses onto a lattice so that the rounded pair dominates the true one.

Bucketing with loss intervals (:func:`~accountant.buckets.bucketed.bucket_pld`) keeps every
bound certified, but a composed bucket spans ``n`` times the width of one: after ``n``
releases the bracket in eps is about ``n w`` wide. Rounding instead splits each finite
outcome, of loss ``L`` in ``[g_J, g_{J+1}]`` (``g_J = anchor + J w``, ``d = L - g_J``), between
the two lattice points so that its A-mass AND its B-mass are kept (Doroshenko, Ghazi, Kamath,
Kumar and Manurangsi 2022, "Connect the dots"):

    g_{J+1} gets  A (1 - e^{-d}) / (1 - e^{-w}),
    g_J     gets  A e^{-d} (1 - e^{-(w - d)}) / (1 - e^{-w}),

each with the B-mass ``A e^{-g}`` of its lattice point. Merging the two halves back gives the
outcome: the rounded pair dominates the true one (a post-processing maps it onto the true
pair), so every delta it gives, composed any number of times, is an upper bound, and the
rounded pair has exactly the lattice losses, so composition adds lattice points exactly (no
interval widens). Its profile is the true one at the lattice points and the chord in
``e^eps`` between them, so the excess is of second order: about ``n w^2`` after ``n``
releases. The lower bound comes from the merged counterpart of the same intervals
(:mod:`accountant.buckets.merged_lattice`): the outcomes of each interval merged into one,
a pair the true one dominates.

Rounding of the computation: the split actually computed is the exact one between the points
``L - d~`` and ``L - d~ + w`` (``d~`` the computed offset), which lie within the drift
``rho`` (the rounding of ``L``, of ``g_J`` and of the subtraction) of ``g_J`` and ``g_{J+1}``;
the stored buckets carry that drift in their loss intervals, and the computed shares a few
ulps of relative error.

PDP is not monotone under domination; it uses the coupling the split is: given the true
losses the rounding steps ``Z_i`` are independent, each in an interval of length ``w``, with
mean ``w (1 - e^{-d})/(1 - e^{-w}) - d`` in ``[0, w^2/8]`` (concave in ``d``, its largest value
below ``w^2/8``), plus the drift. Hoeffding's inequality gives, with ``V = sum_i w_i^2`` and
``m = sum_i (w_i^2/8 + rho_i)``,

    P(Z < -(t + m)) <= beta(t) = exp(-2 t^2 / V),   and likewise P(Z > t + m) <= beta(t),

and since ``1[y > eps]`` is non-decreasing and at most 1, on the composed outcomes with finite
losses (A-mass ``F^n``):

    delta(eps) <= delta'(eps - t - m) + F^n beta(t),
    delta(eps) >= delta'(eps + t + m) - F^n beta(t),

where ``delta'`` is the PDP delta of the rounded composition; distinguishing events are
unaffected. :func:`~accountant.buckets.hoeffding.hoeffding_slack` picks ``t`` per query.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.bucketed import (
    BucketBudgetError,
    BucketedPLD,
    tail_cut_positions,
)
from accountant.buckets.merged_lattice import MergedLattice, merge_coarser, merged_release
from accountant.buckets.tails import LAMBDA_GRID, TailMoments
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.pairs.pld import PrivacyLossDistribution

__all__ = [
    "MEAN_STEP",
    "SHARE_ULPS",
    "dominating_shares",
    "round_coarser",
    "round_to_lattice",
]


def dominating_shares(offset: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """``(to g_J, to g_{J+1})``: the shares of an outcome ``offset = d`` above ``g_J`` (clipped
    to ``[0, w]``) that keep its A- and B-mass (module note), each within ``6 u`` of the
    exact share of the computed ``d`` (``expm1`` and ``exp`` within ``2 u``, a product and a
    quotient)."""
    d = np.clip(offset, 0.0, width)
    scale = -math.expm1(-width)
    up = -np.expm1(-d) / scale
    down = np.exp(-d) * -np.expm1(-(width - d)) / scale
    return down, up


#: Relative error of :func:`dominating_shares`, in units of ``u`` (with a margin).
SHARE_ULPS = 8.0
#: The largest mean of a rounding step, in units of ``w^2`` (module note: below ``1/8``).
MEAN_STEP = 0.125 * (1.0 + 1e-9)


def round_to_lattice(
    pld: PrivacyLossDistribution,
    width: float,
    anchor: float,
    tail_mass: float,
    max_buckets: int = 1 << 62,
    moments: tuple | None = None,
) -> BucketedPLD:
    """The rounded single release (see the module note) as a :class:`BucketedPLD` whose
    buckets are lattice points: loss intervals ``[g_J - rho, g_J + rho]`` (the drift),
    ``variance = w^2``, ``drift = w^2/8 + rho``, and its merged counterpart ``dominated``.

    A-mass in the tails beyond ``tail_mass`` on each side is cut (counted in ``lost_a``).
    More than ``max_buckets`` lattice points raise
    :class:`~accountant.buckets.bucketed.BucketBudgetError` before anything is allocated.
    ``moments``: the ``tail_moments`` an earlier call with the same arguments returned (they
    depend on nothing else), to skip computing them again.
    """
    assert pld.mass_logs is not None  # set by PrivacyLossDistribution.__attrs_post_init__
    if pld.losses.size == 0:  # no finite outcome: empty on both sides
        empty = BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, pld.mass_logs)
        merged = MergedLattice(empty, attrs.evolve(empty, mass_b=np.zeros(0)))
        return attrs.evolve(empty, hoeffding_variance=width * width, dominated=merged)
    low_cut, high_cut, lost = tail_cut_positions(pld.mass_a, tail_mass)
    losses = pld.losses[low_cut:high_cut]
    mass = pld.mass_a[low_cut:high_cut]
    index = np.floor((losses - anchor) / width)
    first = int(index[0])
    count = int(index[-1]) - first + 2
    if count > max_buckets:
        raise BucketBudgetError(count)
    offset = (index - first).astype(np.int64)
    within = losses - (anchor + index * width)  # d, up to the drift
    down, up = dominating_shares(within, width)
    mass_a = np.bincount(offset, weights=mass * down, minlength=count)
    mass_a += np.bincount(offset + 1, weights=mass * up, minlength=count)
    points = anchor + (first + np.arange(count)) * width
    with np.errstate(divide="ignore"):
        mass_b = np.exp(np.log(mass_a) - points)
    # the split's points are L - d~ and L - d~ + w: within the rounding of L, of g_J and of
    # the subtraction of the lattice points
    largest = float(np.max(np.abs(losses))) + abs(anchor) + width * (abs(first) + count)
    drift = (pld.loss_rounding + 8.0 * UNIT_ROUNDOFF * largest) * (1.0 + 1e-9)
    pad = 4.0 * UNIT_ROUNDOFF * (abs(anchor) + width * (abs(first) + count))
    # each lattice mass is a sum of at most (outcomes + 1) non-negative products
    relative = 1.01 * (losses.size + 4 + SHARE_ULPS) * UNIT_ROUNDOFF
    rounded = BucketedPLD(
        width=width,
        first_index=first,
        mass_a=mass_a,
        mass_b=mass_b,
        offset_low=anchor - pad - drift,
        offset_high=anchor + pad + drift,
        mass_logs=pld.mass_logs,
        lost_a=lost * (1.0 + 4.0 * UNIT_ROUNDOFF * pld.losses.size),
        relative_error=relative,
        error_b=math.inf,  # B is A e^{-g} up to the drift: the A-only bounds are used
        hoeffding_variance=width * width,
        hoeffding_drift=MEAN_STEP * width * width + drift,
    )
    if moments is None:
        moments = ((TailMoments.of(rounded), 1),)
    # merged: the interval's A-mass, and its C-mass sum a e^{g_J - L} = sum a e^{-d}, within
    # a relative e^drift - 1 (d is within the drift of the true offset)
    merged_a = np.bincount(offset, weights=mass, minlength=count)
    merged_c = np.bincount(
        offset, weights=mass * np.exp(-np.clip(within, 0.0, None)), minlength=count
    )
    merged = merged_release(
        width=width,
        first_index=first,
        anchor=anchor,
        masses=merged_a,
        c_masses=merged_c,
        errors=None,
        c_errors=None,
        relative_error=1.01 * (losses.size + 4) * UNIT_ROUNDOFF,
        c_relative_error=1.01 * (losses.size + 8) * UNIT_ROUNDOFF
        + math.expm1(min(2.0 * drift, 700.0)),
        drift=drift,
        mass_logs=pld.mass_logs,
        lost_a=rounded.lost_a,
    )
    return attrs.evolve(rounded, tail_moments=moments, dominated=merged)


def round_coarser(pld: BucketedPLD, factor: int) -> BucketedPLD:
    """A distribution of losses on the lattice ``g_J = c + J w`` (a rounded release or a
    composition of rounded releases: point losses, within their loss intervals) rounded
    onto the lattice ``G_K = c + K W`` with ``W = factor * w`` by the dominating split (the
    module note, applied to lattice points): ``g_J = G_K + t w`` (``0 <= t < factor``) gives
    ``e^{-t w} (1 - e^{-(W - t w)}) / (1 - e^{-W})`` of its A-mass to ``G_K`` and
    ``(1 - e^{-t w}) / (1 - e^{-W})`` to ``G_{K+1}``. A point whose true loss lies ``s`` from
    ``g_J`` splits exactly between ``G_K + s`` and ``G_{K+1} + s`` (the shares depend on
    differences only): the loss intervals keep their width.

    ``factor`` is a power of two. The shares are computed within ``SHARE_ULPS`` ulps
    (``t w`` is exact up to one rounding), each coarse entry is a sum of at most ``2 factor``
    products: a relative error. The rounding step of this distribution, used as one release
    of a further composition, lies in an interval of length ``W`` with mean in ``[0, W^2/8]``:
    ``hoeffding_variance`` gains ``W^2`` and the drift ``W^2/8`` (PDP). The A-mass error
    bounds follow the linear map (each coarse entry takes at most ``factor`` times the
    largest fine error; the 2-norm grows by at most ``sqrt(factor)``). The tail moments are
    those given (``pld.tail_moments``, counted) raised by Hoeffding's lemma around the step's
    mean, ``ln E e^{+-lambda L'} <= ln E e^{+-lambda L} +- lambda W^2/8 + lambda^2 W^2 / 8``.
    The merged counterpart (``dominated``) is merged onto the coarser lattice
    (:func:`~accountant.buckets.merged_lattice.merge_coarser`)."""
    if factor < 1 or factor & (factor - 1):
        raise ValueError(f"factor must be a power of two, got {factor!r}")
    if factor == 1:
        return pld
    width = pld.width * factor
    lead = pld.first_index % factor  # fine points in front of the first whole group
    first = (pld.first_index - lead) // factor
    groups = -(-(lead + pld.size) // factor)
    down, up = dominating_shares(np.arange(factor, dtype=np.float64) * pld.width, width)

    def split(values: np.ndarray) -> np.ndarray:
        padded = np.zeros(groups * factor)
        padded[lead : lead + values.size] = values
        table = padded.reshape(groups, factor)
        out = np.zeros(groups + 1)
        out[:-1] = table @ down
        out[1:] += table @ up
        return out

    mass_a = split(pld.mass_a)
    sums = 1.01 * (2 * factor + 2 + SHARE_ULPS) * UNIT_ROUNDOFF * (1.0 + pld.relative_error)
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
    mean_step = MEAN_STEP * width * width
    moments = tuple(
        (
            TailMoments(
                count * m.log_mgf_high
                + (LAMBDA_GRID * mean_step + (LAMBDA_GRID * width) ** 2 / 8.0) * (1.0 + 1e-12),
                count * m.log_mgf_low + (LAMBDA_GRID * width) ** 2 / 8.0 * (1.0 + 1e-12),
            ),
            1,
        )
        for m, count in [_summed(pld.tail_moments)]
        if pld.tail_moments
    )
    dominated = None
    if pld.dominated is not None:
        dominated = merge_coarser(pld.dominated, factor)
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
        hoeffding_drift=(pld.hoeffding_drift + mean_step) * (1.0 + 4.0 * UNIT_ROUNDOFF),
        entry_error=factor * pld.entry_error * (1.0 + sums),
        entry_errors=entry_errors,
        dominated=dominated,
    )


def _summed(moments: tuple) -> tuple[TailMoments, int]:
    """``(M, 1)`` with ``M = sum_i count_i M_i`` of ``((M_i, count_i), ...)``."""
    high = sum(count * m.log_mgf_high for m, count in moments)
    low = sum(count * m.log_mgf_low for m, count in moments)
    return TailMoments(high, low), 1
