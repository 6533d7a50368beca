"""Analytic releases split onto a lattice without a grid, and merged per interval (issues 12,
26).

:func:`~accountant.buckets.rounding.round_to_lattice` splits the finite outcomes of a PLD;
this module does the same for a continuous loss law given by normal densities (the Gaussian
mechanism, plain or truncated, and the Poisson-subsampled Gaussian of DP-SGD), plus atoms:
each outcome with loss ``L = g_J + d`` in ``[g_J, g_{J+1})`` (``g_J = anchor + J w``) gives
``(1 - e^{-d}) / (1 - e^{-w})`` of its A-mass to ``g_{J+1}`` and the rest to ``g_J``, which
keeps its B-mass too (the dominating split of :mod:`accountant.buckets.rounding`; for the
B/A direction, whose law is given in the A/B scale, the mirror image, which keeps ``e^{+L}``
times it); the masses are integrals over ``l`` (:mod:`accountant.buckets.lattice_quadrature`).
The same integrals give each interval's merged masses: its A-mass ``m- + m+`` and its
C-mass ``e^{g_J - P_J} m- + e^{g_J - Q_J} m+`` (:mod:`accountant.buckets.merged_lattice`).

The interval ends are ``x_J``, floats near ``l`` with ``L(l) = g_J``, clipped to the
support. The split actually computed is the exact dominating split of each interval
``[x_J, x_{J+1}]`` between two points ``P_J = L(x_J) - c`` and ``Q_J = L(x_{J+1}) + c'``
(``c, c' >= 0`` only where an end is clipped, so that ``P_J`` and ``Q_J`` stay next to
``g_J`` and ``g_{J+1}``); masses are stored at ``g_J`` and ``g_{J+1}``, with the drift, the
largest ``|P_J - g_J|``, ``|Q_J - g_{J+1}|``, measured from the floats (``L(x_J)`` within
:meth:`~accountant.buckets.lattice_quadrature.SmoothLaw.loss_error`, ``g_J`` within
``2u (|J w| + |g_J|)``) after the fact and carried in the loss intervals, so the inverse map
``L -> l`` need not be accurate. An atom at ``L`` is split from exact rationals; its drift
is the rounding of ``L``. The float ends of a bounded support may lie ``support_error`` from
the true ones: the intervals stop that far inside, and the slivers left out count as lost.

Masses carry the quadrature's per-interval bounds; they are split into one relative error
and an absolute rest as the bucketed releases do
(:func:`~accountant.mechanisms.subsampled_gaussian_masses.split_errors`). The A-mass outside
the interval ends (tails the statistics cut, or an atom beyond the lattice) is lost: its
normal tails, with the ends moved outwards by their rounding, and :data:`LOST_SLACK` on top.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.lattice_quadrature import (
    DEAD_Y,
    TINY,
    SmoothLaw,
    U,
    interval_masses,
)
from accountant.buckets.merged_lattice import dominated_point_moments, merged_release
from accountant.buckets.rounding import MEAN_STEP, SHARE_ULPS, dominating_shares
from accountant.buckets.sources import LossStatistics
from accountant.buckets.tails import TailMoments
from accountant.numerics.directed import MassLogs
from accountant.numerics.gaussian import log_normal_between_scalar
from accountant.numerics.norms import euclidean_norm

__all__ = [
    "LOST_SLACK",
    "Atom",
    "LawRounding",
    "NormalPart",
    "lattice_release",
    "round_law",
    "split_errors",
    "tail_cutoff",
]

#: Relative slack on the lost tail masses (their routines are far more accurate).
LOST_SLACK = 1e-6


@attrs.frozen
class Atom:
    """A point mass of the numerator at the A/B loss ``loss`` (a float within ``loss_error``
    of the true loss), its mass within ``relative_error``."""

    loss: float
    mass: float
    relative_error: float
    loss_error: float


@attrs.frozen(eq=False)
class LawRounding:
    """Lattice masses ``k0 .. k1`` (A/B scale) of a law's continuous part, absolute error
    bounds per mass, the drift, and the interval ends ``x_K`` with the constants ``c`` of
    ``P_K = L(x_K) - c_low[K]`` and ``Q_{K-1} = L(x_K) + c_high[K]`` (module note); and the
    merged masses of each interval ``[x_K, x_{K+1}]`` (entry ``K``): its A-mass
    ``merged`` and C-mass ``merged_c`` (its B-mass times ``e^{g_K}``), their absolute errors,
    and the relative error of the C-masses' exponentials (``None``: not given)."""

    masses: np.ndarray
    errors: np.ndarray
    drift: float
    ends: np.ndarray
    c_low: np.ndarray
    c_high: np.ndarray
    merged: np.ndarray | None = None
    merged_c: np.ndarray | None = None
    merged_errors: np.ndarray | None = None
    merged_c_errors: np.ndarray | None = None
    merged_c_relative: float = 0.0

    @property
    def low_end(self) -> float:
        """The lowest ``l`` kept."""
        return float(self.ends[0])

    @property
    def high_end(self) -> float:
        """The highest ``l`` kept."""
        return float(self.ends[-1])


@attrs.frozen
class NormalPart:
    """The continuous part of a release given by a :class:`SmoothLaw`: ``bounded`` when the
    support ends are the law's own (else the mass beyond them is lost too)."""

    law: SmoothLaw
    bounded: bool

    def round_onto(
        self, anchor: float, k0: int, k1: int, width: float, mirrored: bool = False
    ) -> LawRounding:
        """:func:`round_law`."""
        return round_law(self.law, anchor, k0, k1, width, mirrored)

    def lost_beyond(self, rounded: LawRounding) -> float:
        """An upper bound on the mass outside ``rounded``'s interval ends."""
        return _tails(self.law, rounded.low_end, rounded.high_end, self.bounded)


def round_law(
    law: SmoothLaw, anchor: float, k0: int, k1: int, width: float, mirrored: bool = False
) -> LawRounding:
    """The continuous part of ``law`` split onto ``anchor + K width``, ``K = k0 .. k1``
    (module note), by the split that keeps the law's mass and its mass times ``e^{-L}``, or,
    ``mirrored`` (the law of the B/A numerator in the A/B loss scale), times ``e^{+L}``; the
    merged C-masses likewise (``e^{g_K - L}``, or ``e^{L - g_{K+1}}``)."""
    scaled = np.arange(k0, k1 + 1, dtype=np.float64) * width
    points = anchor + scaled
    point_error = 2.0 * U * (np.abs(scaled) + np.abs(points))
    low, high = law.support
    if law.support_error > 0.0:  # inside the true support: the slivers left out are lost
        low = math.nextafter(math.nextafter(low + law.support_error, math.inf), math.inf)
        high = math.nextafter(math.nextafter(high - law.support_error, -math.inf), -math.inf)
    with np.errstate(invalid="ignore"):
        raw = np.maximum.accumulate(law.inverse(points))
    below, above = raw < low, raw > high
    ends = np.clip(raw, low, high)
    loss = law.loss(ends)
    diff = loss - points
    miss = (law.loss_error(ends, loss) + point_error + U * np.abs(diff)) * (1.0 + 1e-9)
    c_lo = np.where(below, np.maximum(diff, 0.0), 0.0)
    c_hi = np.where(above, np.maximum(-diff, 0.0), 0.0)
    used = np.flatnonzero(ends[1:] > ends[:-1])
    plus, minus, err_plus, err_minus = interval_masses(
        law, ends[used], ends[used + 1], c_lo[used], c_hi[used + 1], mirrored
    )
    masses, errors = np.zeros(points.size), np.zeros(points.size)
    masses[used] += minus
    masses[used + 1] += plus
    errors[used] += err_minus
    errors[used + 1] += err_plus
    drift = 0.0
    merged, merged_c = np.zeros(points.size), np.zeros(points.size)
    merged_errors, merged_c_errors = np.zeros(points.size), np.zeros(points.size)
    c_relative = 0.0
    if used.size:
        low_gap = diff[used] - c_lo[used]  # P_K - g_K
        high_gap = diff[used + 1] + c_hi[used + 1]  # Q_K - g_{K+1}
        left = np.abs(low_gap) + miss[used]
        right = np.abs(high_gap) + miss[used + 1]
        drift = float(max(np.max(left), np.max(right)))
        # merged: A = m- + m+, C = e^{g_K - P_K} m- + e^{g_K - Q_K} m+ (mirrored:
        # e^{P_K - g_{K+1}} m- + e^{Q_K - g_{K+1}} m+); the exponents are within the points'
        # miss (and a few ulps of their size)
        merged[used] = minus + plus
        merged_errors[used] = err_minus + err_plus
        if mirrored:
            down_factor, up_factor = np.exp(low_gap - width), np.exp(high_gap)
        else:
            down_factor, up_factor = np.exp(-low_gap), np.exp(-(width + high_gap))
        merged_c[used] = down_factor * minus + up_factor * plus
        merged_c_errors[used] = down_factor * err_minus + up_factor * err_plus
        exponent = float(max(np.max(miss[used]), np.max(miss[used + 1])))
        exponent += (
            4.0 * U * (width + float(max(np.max(np.abs(low_gap)), np.max(np.abs(high_gap)))))
        )
        c_relative = math.expm1(1.01 * exponent) + 4.0 * U
    return LawRounding(
        masses,
        errors,
        drift,
        ends,
        c_lo,
        c_hi,
        merged,
        merged_c,
        merged_errors,
        merged_c_errors,
        c_relative,
    )


def _tails(law: SmoothLaw, low_end: float, high_end: float, bounded: bool) -> float:
    """An upper bound on the numerator mass of ``l`` below ``low_end`` and above
    ``high_end`` (to the support's ends when ``bounded``, else to infinity), each end moved
    outwards by its rounding in ``y``."""
    total = 0.0
    mu, slack = law.mu, law.support_error / law.mu
    for weight, offset in zip(law.weights, law.offsets, strict=True):
        if weight == 0.0:
            continue
        floor_y, ceiling_y = -math.inf, math.inf
        if bounded:
            floor_y = law.support[0] / mu + offset - slack
            ceiling_y = law.support[1] / mu + offset + slack
        low_y, high_y = low_end / mu + offset, high_end / mu + offset
        # y = l/mu + o: rounded twice, with mu's own rounding: 3u (|y| + |l|/mu + mu)
        low_y += 3.0 * U * (abs(low_y) + abs(low_end) / mu + mu)
        high_y -= 3.0 * U * (abs(high_y) + abs(high_end) / mu + mu)
        for a, b in ((floor_y, low_y), (high_y, ceiling_y)):
            if b > a:
                log_mass = log_normal_between_scalar(a, b)
                total += weight * math.exp(log_mass - law.log_norm + 2.0 * law.norm_error)
    return total * (1.0 + LOST_SLACK) + TINY


def _place_atoms(
    atoms: list[Atom],
    anchor: float,
    k0: int,
    k1: int,
    width: float,
    rounded: LawRounding,
    mirrored: bool,
) -> tuple[float, float]:
    """Split each atom between its two lattice neighbours by the dominating shares of its
    offset ``d`` above ``g_J`` (computed from exact rationals; mirrored: of ``w - d``), and add
    it to its interval's merged masses (C: ``e^{-d}``, mirrored ``e^{-(w - d)}``, within
    ``expm1`` of its loss error); returns ``(lost mass, drift)``. An atom on the top lattice
    point is merged into the interval below it (its upper end)."""
    lost, drift = 0.0, 0.0
    step = Fraction(width)
    masses, errors = rounded.masses, rounded.errors
    # lattice_release refuses a rounding without merged masses (all four come together)
    assert rounded.merged is not None and rounded.merged_c is not None
    assert rounded.merged_errors is not None and rounded.merged_c_errors is not None
    for atom in atoms:
        if atom.mass <= 0.0:
            continue
        offset = Fraction(atom.loss) - Fraction(anchor)
        index = math.floor(offset / step)
        within = float(offset - index * step)
        error = atom.relative_error + SHARE_ULPS * U
        if index == k1 and within == 0.0:
            index, within = k1 - 1, width
        if not k0 <= index < k1:
            lost += atom.mass * (1.0 + error)
            continue
        if mirrored:
            to_upper, to_lower = dominating_shares(np.array([width - within]), width)
        else:
            to_lower, to_upper = dominating_shares(np.array([within]), width)
        for position, share in (
            (index - k0, float(to_lower[0])),
            (index + 1 - k0, float(to_upper[0])),
        ):
            masses[position] += atom.mass * share
            errors[position] += error * atom.mass * share
        position = index - k0
        c_part = atom.mass * math.exp(-(width - within) if mirrored else -within)
        c_error = math.expm1(atom.loss_error + 2.0 * U * width) + 4.0 * U + atom.relative_error
        rounded.merged[position] += atom.mass
        rounded.merged_errors[position] += atom.relative_error * atom.mass
        rounded.merged_c[position] += c_part
        rounded.merged_c_errors[position] += c_error * c_part
        drift = max(drift, atom.loss_error + 2.0 * U * width)
    return lost, drift


def lattice_release(
    part: Any,
    atoms: list[Atom],
    direction: str,
    width: float,
    anchor: float,
    stats: LossStatistics,
    mass_logs: MassLogs,
    max_buckets: int = 1 << 62,
    moments: dict | None = None,
) -> BucketedPLD:
    """The rounded release of ``direction`` (the continuous ``part``, a :class:`NormalPart`
    or anything with its two methods, and ``atoms`` in the A/B loss scale, the numerator of
    ``direction``) on the lattice ``anchor + J width`` covering the statistics' range
    ``[low, high]``, as :func:`~accountant.buckets.rounding.round_to_lattice` returns it, with
    its merged counterpart. More than ``max_buckets`` lattice points raise
    :class:`~accountant.buckets.bucketed.BucketBudgetError` before anything is allocated.
    ``moments``: a dict the caller keeps per release, where the tail moments (which depend
    only on the arguments) are kept between calls."""
    step = Fraction(width)
    first = math.floor((Fraction(stats.low) - Fraction(anchor)) / step)
    last = max(first + 1, math.ceil((Fraction(stats.high) - Fraction(anchor)) / step))
    count = last - first + 1
    if count > max_buckets:
        raise BucketBudgetError(count)
    flip = direction == "B/A"
    k0, k1, anchor_ab = (-last, -first, -anchor) if flip else (first, last, anchor)
    rounded = part.round_onto(anchor_ab, k0, k1, width, mirrored=flip)
    if rounded.merged is None:  # pragma: no cover - every part gives its merged masses
        raise TypeError(f"{type(part).__name__}.round_onto gives no merged masses")
    masses, errors = rounded.masses, rounded.errors
    lost, atom_drift = _place_atoms(atoms, anchor_ab, k0, k1, width, rounded, flip)
    lost += part.lost_beyond(rounded)
    merged_arrays = [
        rounded.merged,
        rounded.merged_c,
        rounded.merged_errors,
        rounded.merged_c_errors,
    ]
    if flip:
        # A/B interval K (lower point g_K) is B/A interval -K-1: reversed, one step down
        masses, errors = masses[::-1].copy(), errors[::-1].copy()
        merged_arrays = [np.append(values[::-1][1:], 0.0) for values in merged_arrays]
    relative = split_errors([masses, masses], [errors, errors])
    absolute = np.maximum(errors - relative * np.maximum(masses - errors, 0.0), 0.0)
    absolute += np.where(masses < TINY, TINY, 0.0)
    points = anchor + (first + np.arange(count)) * width
    with np.errstate(divide="ignore", over="ignore"):
        mass_b = np.minimum(np.exp(np.log(masses) - points), 1e300)
    largest = abs(anchor) + width * (abs(first) + count)
    pad = 4.0 * U * largest
    drift = max(rounded.drift, atom_drift) * (1.0 + 1e-9)
    result = BucketedPLD(
        width=width,
        first_index=first,
        mass_a=masses,
        mass_b=mass_b,
        offset_low=anchor - pad - drift,
        offset_high=anchor + pad + drift,
        mass_logs=mass_logs,
        lost_a=lost,
        relative_error=relative + 2.0 * U,
        error_a=1.01 * float(euclidean_norm(absolute)),
        error_b=math.inf,  # B is A e^{-g} up to the drift: the A-only bounds are used
        entry_error=1.01 * float(np.max(absolute)),
        entry_errors=1.01 * absolute,  # where they lie: a tilt weighs each by its own factor
        hoeffding_variance=width * width,
        hoeffding_drift=MEAN_STEP * width * width + drift,
    )
    key = (direction, width, anchor, stats, max_buckets)
    known = None if moments is None else moments.get(key)
    if known is None:
        known = ((TailMoments.of(result), 1),)
        if moments is not None:
            moments[key] = known
    merged_a, merged_c, merged_errors, merged_c_errors = merged_arrays
    merged = merged_release(
        width=width,
        first_index=first,
        anchor=anchor,
        masses=merged_a,
        c_masses=merged_c,
        errors=merged_errors + np.where(merged_a < TINY, TINY, 0.0),
        c_errors=merged_c_errors + np.where(merged_c < TINY, TINY, 0.0),
        relative_error=2.0 * U,
        c_relative_error=rounded.merged_c_relative + 2.0 * U,
        drift=drift,
        mass_logs=mass_logs,
        lost_a=lost,
        point_moments=dominated_point_moments(known[0][0], width),
    )
    return attrs.evolve(result, tail_moments=known, dominated=merged)


def tail_cutoff(mu: float) -> float:
    """An ``l`` beyond which every side's ``|y|`` exceeds ``DEAD_Y + 1``."""
    return mu * (DEAD_Y + 2.0 + mu)


def _order_statistic(values: np.ndarray, share: float) -> float:
    """The value of rank ``floor(share (n - 1))`` of ``values`` (a partial sort: any choice of
    the candidate ``rho`` is sound, only its cost differs)."""
    rank = int(share * (values.size - 1))
    return float(np.partition(values, rank)[rank])


def split_errors(masses: list[np.ndarray], errors: list[np.ndarray]) -> float:
    """The shared relative error ``rho`` of a bucketed release; each bucket keeps
    ``max(0, E - rho (m - E))`` as absolute error. Candidates: twice the 99.9th percentile
    of the buckets' own ``E / (m - E)`` (among those holding ``1e-12`` of the largest mass)
    and the ratios of the heavy buckets above it (at most 64 of them); chosen is the one
    that costs least at a delta of ``1e-6``, ``1e-6 rho + |absolute|_2``; at most ``1e-9``."""
    ratios = []
    for mass, error in zip(masses, errors, strict=True):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(mass > error, error / (mass - error), np.where(error > 0, np.inf, 0))
        ratios.append(ratio)
    ratio = np.maximum(ratios[0], ratios[1])
    heavy = (masses[0] >= 1e-12 * float(np.max(masses[0], initial=0.0))) & (masses[0] > 0.0)
    base = 2.0 * _order_statistic(ratio[heavy], 0.999) if heavy.any() else 0.0
    above = np.flatnonzero(ratio > base)
    candidates = ratio[above][heavy[above] & np.isfinite(ratio[above])]
    if candidates.size > 64:
        candidates = np.quantile(candidates, np.linspace(0.0, 1.0, 64))
    candidates = np.unique(np.minimum(np.concatenate([[base], candidates]), 1e-9))

    def cost(rho: float) -> float:
        rest = max(
            float(
                euclidean_norm(np.maximum(e[above] - rho * np.maximum(m[above] - e[above], 0), 0))
            )
            for m, e in zip(masses, errors, strict=True)
        )
        return 1e-6 * rho + rest

    return float(min(candidates, key=cost))
