"""The dominated counterpart of a rounded release: its outcomes merged per lattice interval.

A rounded release (:mod:`accountant.buckets.rounding`,
:mod:`accountant.buckets.analytic_lattice`) splits every outcome between the two lattice points
around its loss so that its A-mass and its B-mass are both kept: the rounded pair dominates the
true one, and every upper bound on delta it gives holds for the true pair. A lower bound needs
a pair the true one dominates. The same lattice intervals give one: the outcomes whose losses
lie in interval ``J`` (between ``g_J`` and ``g_{J+1}``, ``g_J = anchor + J w``) merged into one
outcome, with their A-mass ``a_J`` and B-mass ``b_J`` (a post-processing of the true pair).
Compositions of merged pairs are merged pairs of the composition (products of merged outcomes
merge products of outcomes), and merging the composed outcomes by their lattice index ``j`` is
a further post-processing, so with ``A_j``, ``B_j`` the composed merged masses

    delta(eps) >= Omega + sum_j (A_j - e^eps B_j)^+ >= Omega + sum_{j >= k} (A_j - e^eps B_j)

for every ``k`` (``Omega`` the distinguishing mass). Masses composed by FFT are the A-masses and
``C_J = b_J e^{g_J + s}`` (``B_j = C_j e^{-(g_j + S)}`` with ``g_j`` the composed lattice point
and ``S`` the sum of the releases' ``s``): ``C`` has the shape of ``A`` (``b_J = a_J e^{-L}`` for
losses ``L`` within the interval), so one tilt serves both, where ``B`` itself would need the
tilt plus one; ``s`` (any number, taken exactly as the float it is) makes C's total A's, so
that ``n`` releases neither underflow nor overflow (``b e^{g}`` alone sums to about
``e^{-w/2}`` times A's total, ``e^{-n w/2}`` after ``n``). The C-masses' lattice points
``g + s`` are the centres of their buckets' loss intervals.

Certified: with ``|m - t| <= r t + e_j`` for stored ``m`` and true ``t`` (``r`` the relative
error, ``e_j`` the per-entry absolute error), a true A-mass is at least ``(A_j - e_j) / (1 + r)``
and a true C-mass at most ``(C_j + e_j) / (1 - r)``; the composed lattice point is within
``rho_g`` (its rounding and the offsets' spread) of the exact one. The sum over ``j >= k`` is a
suffix, summed once per distribution from the top (non-negative terms: each suffix within
``(size + 8) u`` of its exact value), so that each eps costs one pass of multiply-adds over the
entries whose losses may exceed eps, taking the best ``k`` among them. Beyond ``e^eps``'s
float range the ``B`` suffix is taken with a shift, as :mod:`accountant.buckets.suffix_sums` does.

Errors of composing ``C`` by FFT only ever raise it where the circular convolution folds cut
tails back in (a larger ``B`` lowers the bound): its FFT round-off is what its errors bound.
"""

from __future__ import annotations

import math
import weakref

import attrs
import numpy as np

from accountant.buckets.bounds import bucket_interval
from accountant.buckets.bucketed import BucketedPLD
from accountant.buckets.suffix_sums import SHIFT_FROM, SHIFT_STEP
from accountant.buckets.tails import LAMBDA_GRID, TailMoments
from accountant.numerics.directed import distinguishing_bounds
from accountant.numerics.floats import SMALLEST_NORMAL, UNIT_ROUNDOFF
from accountant.numerics.norms import euclidean_norm

__all__ = ["MergedLattice", "dominated_point_moments", "merge_coarser", "merged_release"]


@attrs.frozen(eq=False)
class MergedLattice:
    """A merged (dominated) lattice pair: ``a`` holds the A-masses with the loss intervals of
    its entries (a valid bucketed distribution on its own, its B-masses unused where
    ``error_b`` is infinite), ``c`` the C-masses ``B e^{g}`` on the same lattice (its lattice
    points are its own edges' centres), or ``None`` when ``a`` carries the B-masses itself
    (``mass_b`` with a finite ``error_b``).

    ``points``: the offsets ``(low, high)`` of the entries' lattice points (``g_j`` lies in
    ``[j w + low, j w + high]``, inside the entry's loss interval). The tail moments of ``a``
    are those of its lattice points, not of its loss intervals (which span ``n w`` after
    ``n`` releases, where the points spread like ``sqrt(n)``): a window from them is tight,
    and sound for cutting buckets too, each bucket holding its point."""

    a: BucketedPLD
    c: BucketedPLD | None = None
    points: tuple[float, float] = (0.0, 0.0)

    @property
    def width(self) -> float:
        return self.a.width

    def lower(self, eps: float) -> float:
        """A certified lower bound on the ADP delta of the true pair at ``eps`` (module note):
        the larger of the C-suffix bound and what ``a`` gives on its own."""
        alone = bucket_interval(self.a, eps)[0]
        if self.c is None:
            return alone
        return max(alone, _suffixes(self).lower(eps))


class _Suffixes:
    """The suffix sums of one merged lattice pair (module note)."""

    __slots__ = ("_b_terms", "_shifted", "a_low", "gamma", "high_edges", "omega", "points")

    def __init__(self, merged: MergedLattice):
        a, c = merged.a, merged.c
        assert c is not None
        start = max(a.first_index, c.first_index)
        stop = min(a.first_index + a.size, c.first_index + c.size)
        if stop <= start:
            start = stop = a.first_index
        a_part = slice(start - a.first_index, stop - a.first_index)
        c_part = slice(start - c.first_index, stop - c.first_index)
        low = (a.mass_a[a_part] - _entry_errors(a)[a_part]) / (1.0 + a.relative_error)
        low = np.maximum(low, 0.0) * (1.0 - 2.0 * UNIT_ROUNDOFF)
        # (an entry may have underflowed on its way: the smallest normal float more)
        if c.relative_error < 1.0:
            high = (c.mass_a[c_part] + _entry_errors(c)[c_part]) / (1.0 - c.relative_error)
            high = (high + SMALLEST_NORMAL) * (1.0 + 4.0 * UNIT_ROUNDOFF)
        else:  # nothing is known of C
            high = np.full(stop - start, math.inf)
        # lattice points of c: its edges' centres; the exact point lies within half the
        # edges' spread (plus their slack) of the computed one
        c_low, c_high = c.edges()
        self.points = 0.5 * (c_low[c_part] + c_high[c_part])
        spread = 0.5 * float(np.max(c_high[c_part] - c_low[c_part], initial=0.0))
        self._b_terms = (high, spread)
        self.high_edges = a.edges()[1][a_part]
        self.a_low = _suffix(low)
        self.gamma = (low.size + 8) * UNIT_ROUNDOFF
        self._shifted: dict[float, np.ndarray] = {}
        self.omega = distinguishing_bounds(a.mass_logs)[0]

    def _b_suffix(self, shift: float) -> np.ndarray:
        """``sum_{j' >= j} C+_j' e^{shift - g_j' + spread}`` (rounded up)."""
        if shift not in self._shifted:
            high, spread = self._b_terms
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                terms = high * np.exp(shift - self.points + spread) * (1.0 + 4.0 * UNIT_ROUNDOFF)
            self._shifted[shift] = _suffix(terms)
        return self._shifted[shift]

    def lower(self, eps: float) -> float:
        """``Omega`` plus the largest suffix sum from an entry whose losses may exceed eps
        (the others' terms are not positive)."""
        first = int(np.searchsorted(self.high_edges, eps, side="right"))
        if first >= self.points.size:
            return self.omega
        shift = 0.0 if eps < SHIFT_FROM else SHIFT_STEP * math.floor(eps / SHIFT_STEP)
        scale = math.exp(eps - shift) * (1.0 + 2.0 * UNIT_ROUNDOFF)
        with np.errstate(invalid="ignore", over="ignore"):
            values = self.a_low[first:-1] * (1.0 - self.gamma)
            values -= self._b_suffix(shift)[first:-1] * (scale * (1.0 + self.gamma))
        best = float(np.max(np.nan_to_num(values, nan=-np.inf, neginf=-np.inf), initial=0.0))
        return (self.omega + best) * (1.0 - 4.0 * UNIT_ROUNDOFF)


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _suffixes(merged: MergedLattice) -> _Suffixes:
    if merged not in _CACHE:
        _CACHE[merged] = _Suffixes(merged)
    return _CACHE[merged]


def _suffix(values: np.ndarray) -> np.ndarray:
    """``out[k] = sum(values[k:])`` from the top, ``out[size] = 0``."""
    out = np.zeros(values.size + 1)
    out[:-1] = np.cumsum(values[::-1])[::-1]
    return out


def _entry_errors(pld: BucketedPLD) -> np.ndarray:
    """A bound on every entry's absolute error: its own (``entry_errors``), else the common
    one (``entry_error``), else the 2-norm (which bounds every entry)."""
    if pld.entry_errors is not None:
        return pld.entry_errors
    bound = min(pld.entry_error, pld.error_a)
    return np.full(pld.size, bound)


def merged_release(
    *,
    width: float,
    first_index: int,
    anchor: float,
    masses: np.ndarray,
    c_masses: np.ndarray,
    errors: np.ndarray | None,
    c_errors: np.ndarray | None,
    relative_error: float,
    c_relative_error: float,
    drift: float,
    mass_logs,
    lost_a: float,
    point_moments: TailMoments | None = None,
) -> MergedLattice:
    """One release merged per lattice interval: entry ``J`` holds the outcomes with losses in
    ``[g_J - drift, g_{J+1} + drift]``, their A-mass ``masses[J]`` and C-mass ``c_masses[J]
    = b_J e^{g_J}`` (stored times ``e^s``, module note), with absolute errors ``errors``,
    ``c_errors`` per entry (or none) on top of the relative ones. ``a`` also carries the
    B-masses ``C e^{-g}`` (with their rounding, ``4 u`` of the exponent's magnitudes), so it
    is a bucketed release on its own; its tail moments are its lattice points'
    (:class:`MergedLattice`), summed here at the points; or, where the caller holds upper
    bounds on them (``point_moments``, :func:`dominated_point_moments`), their upper side
    and, below, the smaller of theirs and the one summed here. The lower side is needed:
    raised by ``lambda w`` per release, the split's bound puts the lower end of the window of
    ``n`` releases ``n w`` down (at 10^7 steps, hundreds in loss), where the merged points
    lie about ``n w / 2`` down, and the merged composition outgrows the budget of its
    tilt."""
    size = masses.size
    pad = 4.0 * UNIT_ROUNDOFF * (abs(anchor) + width * (abs(first_index) + size))
    points = anchor + (first_index + np.arange(size)) * width
    # C on the points g_J + shift, so that its total is A's: a composition's C then neither
    # underflows nor overflows (b e^{g} sums to about e^{-w/2} times A; to e^{-n w/2} after n)
    # (any shift is sound: the one computed is the one used, its factor's rounding counted)
    total_a, total_c = float(np.sum(masses)), float(np.sum(c_masses))
    shift = math.log(total_a) - math.log(total_c) if total_a > 0.0 and total_c > 0.0 else 0.0
    factor = math.exp(shift)  # C b e^{g + shift} within 2u: 4u more relative error
    c_masses = c_masses * factor
    c_errors = None if c_errors is None else c_errors * factor
    c_relative_error = c_relative_error + 4.0 * UNIT_ROUNDOFF
    c_pad = pad + 4.0 * UNIT_ROUNDOFF * (abs(anchor) + abs(shift))
    with np.errstate(divide="ignore", over="ignore"):
        logs_c = np.log(c_masses)
        mass_b = np.minimum(np.exp(logs_c - (points + shift)), 1e300)
        finite_logs = np.abs(logs_c[c_masses > 0.0])
        scale = np.exp(-(points + shift))
    exponent = (
        4.0
        * UNIT_ROUNDOFF
        * (float(np.max(finite_logs, initial=0.0)) + float(np.max(np.abs(points), initial=0.0)))
    )
    relative_b = c_relative_error + exponent + 2.0 * UNIT_ROUNDOFF
    zeros = np.zeros(size)
    error_values = zeros if errors is None else errors
    c_error_values = zeros if c_errors is None else c_errors
    with np.errstate(over="ignore", invalid="ignore"):
        b_errors = c_error_values * scale
        error_b = float(euclidean_norm(b_errors)) if np.all(np.isfinite(b_errors)) else math.inf
    a = BucketedPLD(
        width=width,
        first_index=first_index,
        mass_a=masses,
        mass_b=mass_b,
        offset_low=anchor - drift - pad,
        offset_high=anchor + width + drift + pad,
        mass_logs=mass_logs,
        lost_a=lost_a,
        relative_error=max(relative_error, relative_b),
        error_a=1.01 * float(euclidean_norm(error_values)),
        error_b=1.01 * error_b * (1.0 + relative_b),
        entry_error=1.01 * float(np.max(error_values, initial=0.0)),
        entry_errors=None if errors is None else 1.01 * errors,
    )
    point_offsets = (anchor - pad, anchor + pad)
    at_points = attrs.evolve(a, offset_low=point_offsets[0], offset_high=point_offsets[1])
    if point_moments is None:
        point_moments = TailMoments.of(at_points)
    else:  # the lower side summed at the points too: both bound it, the smaller is kept
        point_moments = TailMoments(
            point_moments.log_mgf_high,
            np.minimum(point_moments.log_mgf_low, TailMoments.lower_of(at_points)),
        )
    a = attrs.evolve(a, tail_moments=((point_moments, 1),))
    c = BucketedPLD(
        width=width,
        first_index=first_index,
        mass_a=c_masses,
        mass_b=np.zeros(0),  # (B is C e^{-g}: never read from c)
        offset_low=anchor + shift - c_pad,
        offset_high=anchor + shift + c_pad,
        mass_logs=mass_logs,
        relative_error=c_relative_error,
        error_a=1.01 * float(euclidean_norm(c_error_values)),
        error_b=math.inf,
        entry_error=1.01 * float(np.max(c_error_values, initial=0.0)),
        entry_errors=None if c_errors is None else 1.01 * c_errors,
    )
    return MergedLattice(a, c, point_offsets)


def dominated_point_moments(dominating: TailMoments, width: float) -> TailMoments:
    """Upper bounds on the tail moments of a merged release's lattice points from those of
    its dominating split (:func:`~accountant.buckets.analytic_lattice.lattice_release`):
    interval ``K``'s mass ``m_- + m_+`` sits at its lower point ``g_K`` in the merged
    release, while the split puts ``m_-`` at ``g_K`` and ``m_+`` at ``g_{K+1} = g_K + w``
    (the same computed parts, so the same true masses; in either direction's loss scale).
    Hence ``sum (m_- + m_+) e^{lambda g_K} <= sum m_- e^{lambda g_K} + m_+ e^{lambda
    g_{K+1}}`` (the upper moments of the split bound the merged ones) and ``sum (m_- + m_+)
    e^{-lambda g_K} <= e^{lambda w}`` times the split's (the lower ones, raised by ``lambda
    w``, rounded up). The split's moments bound its true masses at edges outside its points,
    so these bound the merged true masses at their points."""
    with np.errstate(over="ignore", invalid="ignore"):
        raised = dominating.log_mgf_low + LAMBDA_GRID * width * (1.0 + 1e-12)
    low = np.where(np.isfinite(raised), np.nextafter(raised, np.inf), raised)
    return TailMoments(dominating.log_mgf_high, low)


def merge_coarser(merged: MergedLattice, factor: int) -> MergedLattice:
    """The merged pair on the lattice ``G_K = K W``, ``W = factor w`` (a power of two): each
    run of ``factor`` fine entries ``g_j = G_K + t w`` merged into ``K`` (a post-processing).
    A-masses add, and the loss intervals widen by ``W - w``; C-masses add as
    ``C_K = sum_t C_j e^{-t w}`` (``B_j e^{g_j} e^{G_K - g_j}``), each factor within ``2u`` and
    ``t w`` exact up to one rounding, so the C relative error gains ``(2 factor + 4) u`` and the
    exponent's rounding ``4 u (factor w)``. Absolute errors merge as the masses do. The tail
    moments of ``a`` (of its lattice points) rise by ``lambda (W - w)`` below (a coarse point
    lies at most ``W - w`` below its fine points, and not above them); the points keep their
    offsets."""
    if factor == 1:
        return merged
    a = _merge_group(merged.a, factor, None)
    c = None
    if merged.c is not None:
        weights = np.exp(-np.arange(factor) * merged.c.width)
        c = _merge_group(merged.c, factor, weights)
    return MergedLattice(a, c, merged.points)


def _merge_group(pld: BucketedPLD, factor: int, weights: np.ndarray | None) -> BucketedPLD:
    """Entries ``factor K + t`` of ``pld`` summed (times ``weights[t]``) into ``K``."""
    lead = pld.first_index % factor
    first = (pld.first_index - lead) // factor
    groups = -(-(lead + pld.size) // factor)

    def merge(values: np.ndarray) -> np.ndarray:
        padded = np.zeros(groups * factor)
        padded[lead : lead + values.size] = values
        table = padded.reshape(groups, factor)
        return table.sum(axis=1) if weights is None else table @ weights

    sums = 1.01 * (2 * factor + 4) * UNIT_ROUNDOFF * (1.0 + pld.relative_error)
    if weights is not None:
        sums += 4.0 * UNIT_ROUNDOFF * factor * pld.width
    width = pld.width * factor
    entry_errors = None if pld.entry_errors is None else merge(pld.entry_errors) * (1.0 + sums)
    grow = width - pld.width
    moments: tuple = ()
    if weights is not None:  # c keeps its lattice points: the edges' centres
        offset_low, offset_high = pld.offset_low, pld.offset_high
    else:
        offset_low, offset_high = pld.offset_low, pld.offset_high + grow
        if pld.tail_moments:  # one entry: the composed releases' moments, summed
            high = sum(count * m.log_mgf_high for m, count in pld.tail_moments)
            low = sum(count * m.log_mgf_low for m, count in pld.tail_moments)
            moments = ((TailMoments(high, low + LAMBDA_GRID * grow * (1.0 + 1e-12)), 1),)
    return attrs.evolve(
        pld,
        width=width,
        first_index=first,
        mass_a=merge(pld.mass_a),
        mass_b=np.zeros(groups if weights is None else 0),
        offset_low=offset_low,
        offset_high=offset_high,
        relative_error=pld.relative_error + sums,
        error_a=math.sqrt(factor) * pld.error_a * (1.0 + sums),
        error_b=math.inf,
        entry_error=factor * pld.entry_error * (1.0 + sums),
        entry_errors=entry_errors,
        tail_moments=moments,
        dominated=None,
    )
