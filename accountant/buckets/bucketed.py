"""A bucketed privacy-loss distribution with everything needed to certify bounds.

Bucket ``J`` (array position ``J - first_index``) holds outcomes whose losses surely
lie in ``[J * width + offset_low, J * width + offset_high]`` (SPEC section 2: each
bucket carries an interval that surely contains its losses). Composition adds
indices and offsets, so the intervals of composed buckets stay exact; only their
width ``offset_high - offset_low`` grows (by at most ``width`` per release, and by
nothing for losses on a lattice aligned with the buckets).

Error model, kept through every operation: a stored mass ``m`` and the true mass
``t`` of the same bucket satisfy ``|m - t| <= relative_error * t + e`` with an error
vector ``e`` of Euclidean norm at most ``error_a`` (A-masses) or ``error_b``
(B-masses). ``lost_a`` bounds the A-mass no longer represented (tails cut off);
it counts in full towards every upper bound. Losses rounded onto a lattice
(:mod:`accountant.buckets.rounding`) carry ``hoeffding_variance`` (``sum_i w_i^2``) and
``hoeffding_drift`` (``sum_i rho_i``), by which the PDP bounds shift eps, and their merged
counterpart (``dominated``), from which the lower ADP bound comes.
``entry_error`` bounds every entry of the A-mass error vector (``inf``: only the norm is
known); ``entry_errors``, when given, bounds each entry separately (compositions of a tilted
measure, :mod:`accountant.buckets.tilting`, whose absolute errors fall off like ``e^{-lambda L}``).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import attrs
import numpy as np

from accountant.buckets._kernels import bucket_indices, bucket_sums
from accountant.buckets.tails import TailMoments, chernoff_window
from accountant.numerics.directed import MassLogs, exp_up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.pairs.pld import PrivacyLossDistribution

__all__ = [
    "BucketedPLD",
    "bucket_pld",
    "cut_to_chernoff_window",
    "error_suffix",
    "mass_suffix",
    "merge_tail_moments",
    "suffix_sum",
    "sum_tail_moments",
    "tail_cut_positions",
]

#: Points this close (relative to the width) to a bucket edge snap onto it, so losses
#: on an aligned lattice do not spill into the next bucket through rounding. Soundness
#: does not depend on it: the offsets are measured after the assignment.
EDGE_SNAP = 1e-6


@attrs.frozen(eq=False)
class BucketedPLD:
    """One direction of a (composed) privacy-loss distribution in buckets."""

    width: float
    first_index: int
    mass_a: np.ndarray
    mass_b: np.ndarray
    offset_low: float
    offset_high: float
    mass_logs: MassLogs
    lost_a: float = 0.0
    relative_error: float = 0.0
    error_a: float = 0.0
    error_b: float = 0.0
    releases: int = 1
    tail_moments: tuple = ()
    hoeffding_variance: float = 0.0
    hoeffding_drift: float = 0.0
    entry_error: float = math.inf
    entry_errors: np.ndarray | None = None
    #: a rounded (dominating) release or composition: its merged counterpart, which the true
    #: pair dominates (:class:`~accountant.buckets.merged_lattice.MergedLattice`), for the
    #: lower ADP bound; ``None`` otherwise
    dominated: Any = None

    def absolute_error(self, counted: int) -> float:
        """A bound on ``sum |e_k|`` over the last ``counted`` buckets of the A-mass error
        vector (the buckets a query at some eps counts): ``sqrt(counted) |e|_2``, or
        ``counted`` times ``entry_error`` (a bound on every ``|e_k|``, which compositions by
        :mod:`~accountant.buckets.fft_power` know), or the sum of ``entry_errors`` over those
        buckets, whichever is smallest."""
        bound = min(math.sqrt(counted) * self.error_a, counted * self.entry_error)
        if self.entry_errors is not None and counted > 0:
            suffix = error_suffix(self)
            bound = min(bound, float(suffix[self.size - counted]) * _prefix_slack(self))
        return bound

    @property
    def distinguishing_mass(self) -> float:
        """``Omega = prod S_i^{n_i} - prod F_i^{n_i}`` (masses as given; ``1 - prod (1 -
        omega_i)^{n_i}`` for pmfs summing to 1), a point estimate; certified bounds come from
        :func:`accountant.numerics.directed.distinguishing_bounds` of :attr:`mass_logs`."""
        return self.mass_logs.distinguishing_mass

    @property
    def finite_mass(self) -> float:
        """``prod F_i^{n_i}``: the A-mass with no distinguishing component (an upper bound)."""
        return exp_up(self.mass_logs.log_finite_mass.high)

    @property
    def size(self) -> int:
        """Number of buckets stored."""
        return int(self.mass_a.size)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper loss edges of every stored bucket, widened by a rounding slack:
        ``c_j + o_low - s_j`` and ``c_j + o_high + s_j``, ``c_j = (first + j) w``, ``s_j = 8 u
        (|c_j| + |o_low| + |o_high|)``. Computed once per distribution (read-only arrays)."""
        if self not in _EDGES:
            centre = np.arange(self.size, dtype=np.float64)
            centre += self.first_index
            centre *= self.width
            slack = np.abs(centre)
            slack += abs(self.offset_low)
            slack += abs(self.offset_high)
            slack *= 8.0 * UNIT_ROUNDOFF
            low = centre + self.offset_low
            low -= slack
            high = centre
            high += self.offset_high
            high += slack
            low.flags.writeable = False
            high.flags.writeable = False
            _EDGES[self] = (low, high)
        return _EDGES[self]


_EDGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ERROR_SUFFIX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MASS_SUFFIX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def error_suffix(pld: BucketedPLD) -> np.ndarray:
    """``suffix[k] = sum(entry_errors[k:])``, summed from the top (non-negative terms, never
    a difference: the errors of low-loss entries of a tilted composition are large, those
    of the entries a query counts tiny). Cached per distribution; multiply by
    :func:`_prefix_slack` for a certified bound; ``suffix[0]`` bounds any prefix."""
    if pld not in _ERROR_SUFFIX:
        assert pld.entry_errors is not None  # asked only of a distribution that has them
        _ERROR_SUFFIX[pld] = suffix_sum(pld.entry_errors)
    return _ERROR_SUFFIX[pld]


def mass_suffix(pld: BucketedPLD) -> np.ndarray:
    """``suffix[k] = sum(mass_a[k:])`` summed from the top (cached per distribution)."""
    if pld not in _MASS_SUFFIX:
        _MASS_SUFFIX[pld] = suffix_sum(pld.mass_a)
    return _MASS_SUFFIX[pld]


def suffix_sum(values: np.ndarray) -> np.ndarray:
    """``out[k] = sum(values[k:])`` summed from the top, with ``out[size] = 0``."""
    out = np.zeros(values.size + 1)
    out[:-1] = np.cumsum(values[::-1])[::-1]
    return out


def _prefix_slack(pld: BucketedPLD) -> float:
    """Relative rounding of a sequential sum of at most ``size`` non-negative terms."""
    return 1.0 + (pld.size + 8) * UNIT_ROUNDOFF


class BucketBudgetError(Exception):
    """Internal: an array would need more than the allowed number of buckets."""


def bucket_pld(
    pld: PrivacyLossDistribution,
    width: float,
    anchor: float,
    tail_mass: float,
    max_buckets: int = 1 << 62,
) -> BucketedPLD:
    """Put the finite outcomes of ``pld`` into buckets of ``width`` whose upper edges sit
    at ``anchor + J * width``: ``J = ceil((L - anchor) / width)``, or the nearest edge
    within :data:`EDGE_SNAP`.

    A-mass in the tails beyond ``tail_mass`` on each side is cut off and counted in
    ``lost_a``. The offsets are the observed extremes of ``L - J * width``, widened by
    the rounding error of the losses. More than ``max_buckets`` buckets raise
    :class:`BucketBudgetError` before anything is allocated.
    """
    assert pld.mass_logs is not None  # set by PrivacyLossDistribution.__attrs_post_init__
    if pld.losses.size == 0:
        return BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, pld.mass_logs)
    low_cut, high_cut, lost = tail_cut_positions(pld.mass_a, tail_mass)
    losses = pld.losses[low_cut:high_cut]
    index = bucket_indices(losses, anchor, width, EDGE_SNAP)
    first = int(index[0])
    count = int(index[-1]) - first + 1
    if count > max_buckets:
        raise BucketBudgetError(count)
    offsets = losses - index * width
    rounding = pld.loss_rounding + 4.0 * UNIT_ROUNDOFF * float(np.max(np.abs(losses)))
    mass_a, mass_b, terms = bucket_sums(
        index, first, count, pld.mass_a[low_cut:high_cut], pld.mass_b[low_cut:high_cut]
    )
    # Each bucket sum of non-negative terms has relative error <= (terms) * u.
    bucketed = BucketedPLD(
        width=width,
        first_index=first,
        mass_a=mass_a,
        mass_b=mass_b,
        offset_low=float(offsets.min()) - rounding,
        offset_high=float(offsets.max()) + rounding,
        mass_logs=pld.mass_logs,
        lost_a=lost * (1.0 + 4.0 * UNIT_ROUNDOFF * pld.losses.size),
        relative_error=1.01 * terms * UNIT_ROUNDOFF,
    )
    return attrs.evolve(bucketed, tail_moments=((TailMoments.of(bucketed), 1),))


def tail_cut_positions(mass: np.ndarray, tail_mass: float) -> tuple[int, int, float]:
    """``(start, stop, cut)``: keep ``mass[start:stop]``; each cut tail has mass <= tail_mass."""
    if tail_mass <= 0.0 or mass.size <= 1:
        return 0, mass.size, 0.0
    head = np.cumsum(mass)
    tail = np.cumsum(mass[::-1])
    start = int(np.searchsorted(head, tail_mass, side="right"))
    stop = mass.size - int(np.searchsorted(tail, tail_mass, side="right"))
    if start >= stop:  # everything is tail: keep the heaviest entry
        heaviest = int(np.argmax(mass))
        start, stop = heaviest, heaviest + 1
    cut = float(head[start - 1] if start > 0 else 0.0) + float(
        tail[mass.size - stop - 1] if stop < mass.size else 0.0
    )
    return start, stop, cut


def cut_to_chernoff_window(pld: BucketedPLD, tail_mass: float) -> BucketedPLD:
    """Cut buckets wholly outside the window of :func:`~accountant.buckets.tails.chernoff_window`;
    each side cut adds ``tail_mass`` (its certified bound) to ``lost_a``."""
    low, high = chernoff_window(pld.tail_moments, tail_mass)
    if not (math.isfinite(low) or math.isfinite(high)):
        return pld
    low_edges, high_edges = pld.edges()
    keep = np.flatnonzero((high_edges >= low) & (low_edges <= high))
    if keep.size == 0 or (keep[0] == 0 and keep[-1] == pld.size - 1):
        return pld
    start, stop = int(keep[0]), int(keep[-1]) + 1
    lost = tail_mass * ((start > 0) + (stop < pld.size))
    return attrs.evolve(
        pld,
        first_index=pld.first_index + start,
        mass_a=pld.mass_a[start:stop],
        mass_b=pld.mass_b[start:stop],
        lost_a=(pld.lost_a + lost) * (1.0 + 4.0 * UNIT_ROUNDOFF),
        entry_errors=None if pld.entry_errors is None else pld.entry_errors[start:stop],
    )


def merge_tail_moments(first: tuple, second: tuple) -> tuple:
    """Counts of the same single-release moments add under composition. If either side
    has none, the composition has none (a window from some components only would be
    too narrow), and no Chernoff cut happens."""
    return sum_tail_moments((first, second))


def sum_tail_moments(groups) -> tuple:
    """:func:`merge_tail_moments` of any number of compositions at once, in time linear in
    their entries (the same moments object, by identity, gathers its counts; first
    appearance keeps the order)."""
    counts: dict[int, list] = {}
    for group in groups:
        if not group:
            return ()
        for moments, count in group:
            entry = counts.get(id(moments))
            if entry is None:
                counts[id(moments)] = [moments, count]
            else:
                entry[1] += count
    return tuple((moments, count) for moments, count in counts.values())
