"""Refining the bucket width: a fixed ladder of widths whose certified brackets intersect.

Rung 0 is the width the engine starts from; it does not depend on the requested accuracy.
Rung ``k`` has width ``w_0 * WIDTH_RATIO**k``, snapped to a loss lattice and never finer
than the memory budget allows. A query (delta or eps, ADP or PDP) walks the ladder from
rung 0 and intersects the certified bracket of every rung it visits: each contains the
true value, so their intersection does too, and a finer rung can never make the answer
wider, even where round-off grows with the number of buckets.

The walk stops at the first rung where one of these holds (:func:`stop_reason`):

* every bracket meets the accuracy;
* no bracket wider than the accuracy is worth refining (:func:`worth_refining`): for the
  direction that sets its upper bound, the part of the rung's bracket that finer buckets
  remove (:func:`bucketing_gaps`) is too small a share of it to expect the next rung to
  halve it, since the rest (round-off, cut tails, a loss atom at eps) stays or grows;
* the last :data:`PATIENCE` steps shrank none of the brackets they were taken for to
  :data:`MIN_SHRINK` of their width (the gain has run out);
* the next rung is no finer (memory budget, or the lattice spacing), or the walk has taken
  :data:`MAX_RUNGS` steps.

Each rule fires for a finer accuracy no earlier than for a coarser one, so a finer accuracy
visits every rung a coarser one visits (and maybe more): its bracket lies inside the
coarser one's. Compositions are cached per width, so a later query on the same accountant
re-reads the rungs already composed instead of recomputing them.
"""

from __future__ import annotations

import math
from contextvars import ContextVar

import attrs
import numpy as np

from accountant.buckets._kernels import pdp_scan
from accountant.buckets.bounds import (
    POINT_LOSSES,
    adp_interval,
    pdp_interval,
    uncorrected_interval,
)
from accountant.buckets.bucketed import BucketedPLD

__all__ = [
    "BUCKETING",
    "FLOOR_GROWTH",
    "MAX_RUNGS",
    "MIN_SHRINK",
    "NO_GAIN",
    "PATIENCE",
    "SEARCH_TOLERANCE",
    "START_ACCURACY",
    "WIDTH_RATIO",
    "Intersection",
    "aimed_ratio",
    "bracket_terms",
    "bucketing_gaps",
    "collapsed",
    "eps_refinable",
    "interval",
    "intervals",
    "largest_other",
    "monotone_envelope",
    "relative_bracket",
    "stop_reason",
    "worth_refining",
]

#: Each rung's width is this fraction of the previous one's (before snapping).
WIDTH_RATIO = 0.25
#: Largest number of refinement steps of one query (4**8 = 65,536 times finer than rung 0).
MAX_RUNGS = 8
#: A step must bring some bracket it was taken for to at most this fraction of its width.
MIN_SHRINK = 0.5
#: How much the part of a bracket that is not bucketing may grow from one rung to the next:
#: the round-off term ``sqrt(K) |e|_2`` grows with the number K of buckets counted unless
#: the error norm shrinks as fast (it does for spread-out masses, not for a spike).
FLOOR_GROWTH = 2.0
#: The walk stops after this many steps in a row without such a gain (one is not enough:
#: where a loss sits in a bucket depends on the anchor, and an interval may not shrink at
#: one step and vanish at the next).
PATIENCE = 2
#: The accuracy rung 0 is chosen for, whatever the accuracy asked (see the module note).
START_ACCURACY = 1e-4
#: eps searches stop when their range is below this fraction of eps (whatever the accuracy,
#: so that every accuracy takes the same steps until it stops).
SEARCH_TOLERANCE = 1e-12
#: An eps query aims its next rung at this fraction of the accuracy asked (the bracket's
#: decay with the width is a model: the margin absorbs its error).
AIM_MARGIN = 0.5
#: An aimed rung is at most this fraction of the width before it.
LARGEST_RATIO = 0.85
#: ``(direction, rung) -> width`` an eps query aimed at (:func:`aimed_ratio`), for the
#: query running in this context; other queries walk the fixed ladder.
AIMED_WIDTHS: ContextVar[dict | None] = ContextVar("aimed_widths", default=None)

BUCKETING = "bucketing no longer limits it (FFT round-off, cut tails or a loss atom at eps do)"
NO_GAIN = "a finer bucket width no longer narrowed it"


def aimed_ratio(term: float, accuracy: float, rounded: bool) -> float:
    """The ratio of the next rung's width to this one's expected to bring a relative eps
    bracket ``term`` to :data:`AIM_MARGIN` times ``accuracy``: the bracket of rounded losses
    is dominated by second-order terms of order ``n w^2`` and shrinks like ``w^2``, that of
    bucketed loss intervals like ``w``. Within ``[WIDTH_RATIO, LARGEST_RATIO]``."""
    if not (math.isfinite(term) and term > 0.0):
        return WIDTH_RATIO
    ratio = AIM_MARGIN * accuracy / term
    if rounded:
        ratio = math.sqrt(ratio)
    return min(LARGEST_RATIO, max(WIDTH_RATIO, ratio))


def interval(pld: BucketedPLD, eps: float, edges: tuple, kind: str) -> tuple[float, float]:
    """The certified ``(lower, upper)`` ADP or PDP delta of one direction at ``eps``."""
    if kind == "ADP":
        low, high, _ = adp_interval(pld, eps, edges)
        return low, high
    return pdp_interval(pld, eps, edges)


def collapsed(pld: BucketedPLD) -> BucketedPLD:
    """``pld`` with every bucket's loss interval shrunk to its midpoint and no rounding
    slack: NOT certified; its bracket is what the same masses and error terms would give
    with exact losses."""
    middle = 0.5 * (pld.offset_low + pld.offset_high)
    return attrs.evolve(
        pld, offset_low=middle, offset_high=middle, hoeffding_variance=0.0, hoeffding_drift=0.0
    )


def bucketing_gaps(
    pld: BucketedPLD, eps: np.ndarray, kind: str, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """The part of each bracket ``upper - lower`` of ``pld`` at ``eps`` that finer buckets
    would remove (a prediction that steers the refinement; soundness never depends on it).

    PDP: the A-mass of the buckets straddling eps (counted by the upper bound, not by the
    lower one). ADP, and PDP of rounded losses: the bracket minus that of
    :func:`collapsed`, which keeps the round-off, the lost mass and the distinguishing-mass
    margins but has exact losses. A loss atom at eps stays in the PDP gap (no width removes
    it), which the no-gain rule then detects.
    """
    gaps = np.empty(eps.size)
    if kind == "PDP" and pld.hoeffding_variance <= 0.0:
        low_edges, high_edges = pld.edges()
        for k, e in enumerate(eps):
            possibly, surely, _ = pdp_scan(pld.mass_a, low_edges, high_edges, float(e))
            gaps[k] = min(max(0.0, possibly - surely), upper[k] - lower[k])
        return gaps
    if pld.offset_high - pld.offset_low <= POINT_LOSSES * pld.width:
        # losses on lattice points (rounded): the collapsed buckets are these buckets
        # without the second-order terms; no copy of a distribution of millions of entries
        edges = pld.edges()
        brackets = [uncorrected_interval(pld, float(e), edges, kind) for e in eps]
    else:
        point = collapsed(pld)
        edges = point.edges()
        brackets = [interval(point, float(e), edges, kind) for e in eps]
    for k, (low, high) in enumerate(brackets):
        gaps[k] = max(0.0, (upper[k] - lower[k]) - max(0.0, high - low))
    return gaps


def worth_refining(gaps: np.ndarray, brackets: np.ndarray) -> np.ndarray:
    """Whether the next rung is expected to shrink each bracket to :data:`MIN_SHRINK` of it:
    the bucketing gap shrinks at least like the width (:data:`WIDTH_RATIO`), the rest of
    the bracket grows by at most :data:`FLOOR_GROWTH`."""
    floors = np.maximum(brackets - gaps, 0.0)
    expected = WIDTH_RATIO * gaps + FLOOR_GROWTH * floors
    return (gaps > 0.0) & (expected <= MIN_SHRINK * brackets)


def intervals(pld: BucketedPLD, eps: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(lower, upper)`` arrays of one direction's ``pld`` at every ``eps``."""
    edges = pld.edges()
    pairs = [interval(pld, float(e), edges, kind) for e in eps]
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def eps_refinable(pld: BucketedPLD, ends: np.ndarray, kind: str) -> bool:
    """Whether the delta bracket of ``pld`` at either end of an eps bracket is
    :func:`worth_refining`."""
    low, high = intervals(pld, ends, kind)
    return bool(np.any(worth_refining(bucketing_gaps(pld, ends, kind, low, high), high - low)))


def largest_other(values: dict, direction: str) -> float:
    """The largest of ``values`` over the other directions (``-inf`` if there are none)."""
    return max((v for d, v in values.items() if d != direction), default=-math.inf)


class Intersection:
    """Running intersection of certified brackets, per direction, over the rungs visited;
    ``combined`` bounds ``max`` over the directions."""

    def __init__(self, directions: tuple[str, ...], size: int):
        self.lower = {d: np.zeros(size) for d in directions}
        self.upper = {
            d: np.full(size, np.inf) for d in directions
        }  # masses as given: S^n may exceed 1

    def add(self, direction: str, lower: np.ndarray, upper: np.ndarray) -> None:
        """Intersect with a certified bracket of ``direction``."""
        np.maximum(self.lower[direction], lower, out=self.lower[direction])
        np.minimum(self.upper[direction], upper, out=self.upper[direction])

    def combined(self) -> tuple[np.ndarray, np.ndarray]:
        """``(max_d lower_d, max_d upper_d)``: certified bounds on ``max_d delta_d``."""
        lower = np.max(np.stack(list(self.lower.values())), axis=0)
        upper = np.max(np.stack(list(self.upper.values())), axis=0)
        return np.minimum(lower, upper), upper

    def relevant(self) -> list[str]:
        """Directions whose upper bound exceeds, at some entry, every other direction's
        lower bound: only they can still change :meth:`combined`."""
        names = list(self.upper)
        keep = []
        for d in names:
            others = [self.lower[o] for o in names if o != d]
            if not others or (self.upper[d] > np.max(np.stack(others), axis=0)).any():
                keep.append(d)
        return keep

    def limiting(self) -> list[str]:
        """Per entry, the direction whose upper bound is the combined one."""
        names = list(self.upper)
        return [names[i] for i in np.argmax(np.stack(list(self.upper.values())), axis=0)]


def stop_reason(
    terms: np.ndarray,
    refinable: np.ndarray,
    accuracy: float,
    history: list[tuple[np.ndarray, np.ndarray]],
) -> str | None:
    """Why the walk stops at this rung (``""`` when every bracket meets the accuracy), or
    ``None`` to go on. ``terms``: relative brackets now; ``refinable``: which of them are
    wider than the accuracy and limited by bucketing; ``history``: the terms and refinable
    masks of the rungs before, oldest first."""
    if not (terms > accuracy).any():
        return ""
    steps = [*history, (terms, refinable)]
    recent = range(len(steps) - PATIENCE, len(steps))
    if len(steps) > PATIENCE and not any(_gained(steps[k - 1], steps[k]) for k in recent):
        return NO_GAIN
    if not refinable.any():
        return BUCKETING
    return None


def _gained(before: tuple[np.ndarray, np.ndarray], after: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether a step shrank some bracket it was taken for to :data:`MIN_SHRINK` or less."""
    (old, wanted), (new, _) = before, after
    return bool((new[wanted] <= MIN_SHRINK * old[wanted]).any())


def monotone_envelope(
    eps: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ADP and PDP delta are non-increasing in eps, so a lower bound at a larger eps holds at
    every smaller one and an upper bound at a smaller eps at every larger one: tighten both
    to their monotone envelope over the eps asked for. This also makes the certified lower
    bound non-increasing (the error terms alone, which shrink as fewer buckets count, can
    make the raw lower bound rise by rounding-sized amounts)."""
    order = np.argsort(eps, kind="stable")
    tight_lower = np.empty_like(lower)
    tight_upper = np.empty_like(upper)
    tight_lower[order] = np.maximum.accumulate(lower[order][::-1])[::-1]
    tight_upper[order] = np.minimum.accumulate(upper[order])
    return tight_lower, tight_upper


def bracket_terms(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``(upper - lower) / upper`` per entry, 0 where ``upper`` is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(upper > 0.0, (upper - lower) / np.where(upper > 0, upper, 1.0), 0.0)


def relative_bracket(lower: np.ndarray, upper: np.ndarray) -> float:
    """The largest of :func:`bracket_terms` (0 for no entries)."""
    return float(np.max(bracket_terms(lower, upper))) if lower.size else 0.0
