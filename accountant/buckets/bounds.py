"""Certified lower and upper ADP / PDP delta of one direction of a bucketed PLD.

With ``Omega`` the distinguishing mass, ``lost`` the A-mass the engine could not
place, and bucket intervals ``[lo, hi]`` (SPEC section 2):

* upper ADP: ``Omega + lost + sum_{lo >= eps} (A - e^eps B)``
  ``+ sum_{lo < eps < hi} A (1 - e^{eps - hi})``;
* lower ADP: ``Omega + sum_{hi > eps} max(0, A - e^eps B)``
  (a bucket's outcomes cannot give less than their sum does), or without B
  ``Omega + sum_{lo >= eps} A (1 - e^{eps - lo})``, whichever is larger;
* upper PDP: ``Omega + lost + sum_{hi > eps} A``; lower PDP: ``Omega + sum_{lo > eps} A``.

Stored masses differ from true ones by at most ``relative_error`` times the mass
plus a vector of 2-norm ``error_a`` / ``error_b``; over ``k`` counted buckets that
is at most ``rel * sum + sqrt(k) * error``, added to upper and taken from lower.
"""

from __future__ import annotations

import math

import numpy as np

from accountant.buckets._kernels import adp_scan
from accountant.buckets.bucketed import BucketedPLD
from accountant.buckets.hoeffding import hoeffding_slack
from accountant.buckets.suffix_sums import suffix_sums
from accountant.numerics.directed import distinguishing_bounds, total_mass_up
from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = [
    "adp_interval",
    "adp_upper",
    "bucket_interval",
    "pdp_atom",
    "pdp_interval",
    "uncorrected_interval",
]

#: ``ln`` of the largest float: ``math.exp`` overflows above it.
_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def _sum_slack(terms: int) -> float:
    """Relative rounding of a sequential sum of ``terms`` non-negative numbers (plus the
    few operations around it): at most ``(terms + 64) u``."""
    return 1.0 + (terms + 64.0) * UNIT_ROUNDOFF


def _first_above(high_edges: np.ndarray, eps: float) -> int:
    """The first bucket whose upper edge exceeds eps (the edges increase): the scans skip
    every bucket before it, which counts in no bound at eps."""
    return int(np.searchsorted(high_edges, eps, side="right"))


def _omega_bounds(pld: BucketedPLD) -> tuple[float, float]:
    """Certified ``(low, high)`` of the composed distinguishing mass (masses as given)."""
    return distinguishing_bounds(pld.mass_logs)


def adp_interval(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[float, float, float]:
    """``(lower, upper, bucketing_gap)`` of the ADP delta of ``pld`` at ``eps``; the gap is the
    part of ``upper - lower`` due to the width (what a finer width improves). ``edges`` may pass
    precomputed :meth:`BucketedPLD.edges` for repeated calls. A rounded composition
    (:mod:`accountant.buckets.rounding`) dominates the true one: its buckets give the upper
    bound as they are, and its merged counterpart
    (:class:`~accountant.buckets.merged_lattice.MergedLattice`) the lower one (without it, only
    the distinguishing mass is certified below)."""
    edges = pld.edges() if edges is None else edges
    centre = _adp_at(pld, eps, edges)
    if pld.hoeffding_variance <= 0.0 and pld.hoeffding_drift <= 0.0:
        return centre
    upper = centre[1]
    # (without its merged pair, which every rounded composition carries: only Omega)
    below = _omega_bounds(pld)[0] if pld.dominated is None else pld.dominated.lower(eps)
    lower = min(upper, below)
    return lower, upper, max(0.0, upper - lower)


def adp_upper(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray] | None = None
) -> float:
    """The upper end of :func:`adp_interval` alone: a rounded composition's merged
    counterpart, which only the lower end reads, is not summed (half the work of a query that
    only asks whether delta at eps is at most a target)."""
    return _adp_at(pld, eps, pld.edges() if edges is None else edges)[1]


def bucket_interval(pld: BucketedPLD, eps: float) -> tuple[float, float]:
    """The ADP ``(lower, upper)`` of ``pld``'s buckets with their loss intervals, as they are:
    certified for a bucketed (not rounded) distribution."""
    low, high, _ = _adp_at(pld, eps, pld.edges())
    return low, high


def pdp_interval(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[float, float]:
    """``(lower, upper)`` of the PDP delta ``P_A[L > eps]`` (``+inf`` losses included).
    Losses rounded onto a lattice: the lower bound at ``eps + s``, the upper at ``eps - s``,
    each moved by ``F^n beta`` (the Hoeffding slack of :mod:`accountant.buckets.rounding`;
    the indicator has no second-order expansion)."""
    edges = pld.edges() if edges is None else edges
    centre = _pdp_at(pld, eps, edges)
    if pld.hoeffding_variance <= 0.0 and pld.hoeffding_drift <= 0.0:
        return centre
    shift, beta = hoeffding_slack(pld.hoeffding_variance, pld.hoeffding_drift, centre[1])
    term = beta * pld.finite_mass * (1.0 + 4.0 * UNIT_ROUNDOFF)
    upper = min(total_mass_up(pld.mass_logs), _pdp_at(pld, eps - shift, edges)[1] + term)
    lower = min(upper, max(0.0, _pdp_at(pld, eps + shift, edges)[0] - term))
    return lower, upper


#: Buckets whose loss intervals are at most this many widths wide hold point losses (up to
#: the rounding slack of their offsets).
POINT_LOSSES = 1e-3


def pdp_atom(pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray]) -> float:
    """The A-mass of composed point losses (losses on a lattice, computed to within their
    rounding; not rounded releases) whose loss interval contains ``eps``: the PDP bracket
    spans it, for whether such a loss exceeds eps is below the rounding of the losses
    computed from the masses as given. 0 where the buckets carry loss intervals (there the
    straddling mass is bucketing, which finer widths remove) or for rounded releases."""
    if pld.hoeffding_variance > 0.0 or pld.offset_high - pld.offset_low > POINT_LOSSES * pld.width:
        return 0.0
    possibly, surely, _ = suffix_sums(pld, edges).pdp(eps)
    return max(0.0, possibly - surely)


def uncorrected_interval(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray], kind: str
) -> tuple[float, float]:
    """The ADP or PDP ``(lower, upper)`` of the buckets as they are, without the
    second-order corrections or Hoeffding shifts of rounded losses: NOT certified for them
    (it is what the same masses would give with exact losses on the lattice)."""
    if kind == "ADP":
        low, high, _ = _adp_at(pld, eps, edges)
        return low, high
    return _pdp_at(pld, eps, edges)


def _adp_at(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float, float]:
    """:func:`adp_interval` of the composed buckets as they are (no Hoeffding shift)."""
    low_edges, high_edges = edges
    first = _first_above(high_edges, eps)
    if math.isinf(pld.error_b):
        # only the A-only sums count (B is A e^{-g} on a lattice): suffix sums answer them
        # in logarithmic time (a subtraction, rounded the safe way, of sums whose ratio is
        # about 1 + lambda at the tail eps a query reads); with B, buckets are summed term
        # by term
        upper_a_only, lower_a_only, counted_a, counted = suffix_sums(pld, edges).adp_a_only(eps)
        upper_sum, lower_sum = upper_a_only, lower_a_only
    else:
        upper_sum, upper_a_only, lower_sum, counted_a, counted, lower_a_only = adp_scan(
            pld.mass_a[first:], pld.mass_b[first:], low_edges[first:], high_edges[first:], eps
        )
    # Every finite eps >= 0 is a valid query, but math.exp raises OverflowError beyond
    # ~709.78 (reached e.g. by epsilon() on losses ~700 from masses near 1e-308): use inf.
    # The kernel keeps inf * 0 out of its sums; an infinite B error term below just makes
    # the A-only estimates win, which never use e^eps.
    scale = math.exp(eps) if eps < _LOG_FLOAT_MAX else math.inf
    root = math.sqrt(counted)
    error_a = pld.relative_error * counted_a + pld.absolute_error(counted)
    error_b = pld.relative_error * counted_a + root * pld.error_b
    error_b_scaled = scale * error_b if error_b > 0.0 else 0.0  # no inf * 0 = NaN
    # With B the estimates are tighter; without B they do not suffer e^eps * error_b
    # (which swamps the lower bound at large eps).
    upper_finite = min(upper_sum + error_a + error_b_scaled, upper_a_only + error_a)
    lower_finite = max(0.0, lower_sum - error_a - error_b_scaled, lower_a_only - error_a)
    omega_low, omega_high = _omega_bounds(pld)
    slack = _sum_slack(counted)
    upper = min(total_mass_up(pld.mass_logs), (omega_high + pld.lost_a + upper_finite) * slack)
    lower = min(upper, (omega_low + lower_finite) / slack)
    return lower, upper, max(0.0, upper_sum - lower_sum)


def _pdp_at(
    pld: BucketedPLD, eps: float, edges: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float]:
    """:func:`pdp_interval` of the composed buckets as they are (no Hoeffding shift)."""
    possibly, surely, counted = suffix_sums(pld, edges).pdp(eps)
    error = pld.relative_error * possibly + pld.absolute_error(counted)
    omega_low, omega_high = _omega_bounds(pld)
    slack = _sum_slack(counted)
    upper = min(total_mass_up(pld.mass_logs), (omega_high + pld.lost_a + possibly + error) * slack)
    lower = min(upper, max(0.0, omega_low + surely - error) / slack)
    return lower, upper
