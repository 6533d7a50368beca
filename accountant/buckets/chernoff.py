"""Chernoff estimates of a composition from the sum of its releases' log-moment-generating
functions ``H(lambda) = sum_i n_i M_i(lambda)`` on :data:`~accountant.buckets.tails.LAMBDA_GRID`
(upper tails): where the bound ``P[L >= eps] <= e^{H(lambda) - lambda eps}`` reaches a delta,
and at which ``lambda``. The engine aims its widths with them (issue 26); they certify
nothing themselves.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.tails import LAMBDA_GRID

__all__ = ["ChernoffEstimate", "chernoff_eps", "chernoff_slope", "eps_slope"]


def _reach(high: np.ndarray, delta: float) -> np.ndarray:
    """``(H(lambda) - ln delta) / lambda`` (``inf`` where ``H`` is not finite)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(high), (high - math.log(delta)) / LAMBDA_GRID, np.inf)


def chernoff_eps(high: np.ndarray, delta: float) -> float:
    """The smallest eps at which the Chernoff bound reaches ``delta``: ``min (H(lambda) - ln
    delta) / lambda`` over the grid. An estimate of eps(delta) from above, for the ADP delta
    is at most the A-mass above eps."""
    return float(np.min(_reach(high, delta)))


def chernoff_slope(high: np.ndarray, delta: float) -> float:
    """The minimiser ``lambda`` of :func:`chernoff_eps` (``-d ln delta / d eps`` of the
    Chernoff bound there)."""
    return float(LAMBDA_GRID[int(np.argmin(_reach(high, delta)))])


def eps_slope(high: np.ndarray, eps: float) -> float:
    """The minimiser ``lambda`` of ``H(lambda) - lambda eps`` (0 when no grid point gives a
    bound below 1, or when the bound still falls at the grid's last point: eps lies at or
    above every loss the moments allow, where delta is 0 or beyond any bracket's reach, and
    no slope describes it; 8 releases of sigma 1.44, q 0.25 have A/B losses below 2.31, and
    a delta query at eps 3 read the grid's end, 10^7, as a slope and rendered its releases
    at a 300 times finer width)."""
    with np.errstate(invalid="ignore"):
        exponent = np.where(np.isfinite(high), high - LAMBDA_GRID * eps, np.inf)
    best = int(np.argmin(exponent))
    if best == LAMBDA_GRID.size - 1:
        return 0.0
    return float(LAMBDA_GRID[best]) if exponent[best] < 0.0 else 0.0


@attrs.frozen(eq=False)
class ChernoffEstimate:
    """The Chernoff estimates of a composition whose ``H`` is ``log_mgf_high``, with the
    interface of a :class:`~accountant.buckets.staged_plan.StagedPlan` the engine's aim
    reads (one stage: ``variance_factor`` 1), built before any release is rendered."""

    log_mgf_high: np.ndarray
    variance_factor: float = 1.0

    def chernoff_eps(self, delta: float) -> float:
        """:func:`chernoff_eps`."""
        return chernoff_eps(self.log_mgf_high, delta)

    def chernoff_slope(self, delta: float) -> float:
        """:func:`chernoff_slope`."""
        return chernoff_slope(self.log_mgf_high, delta)

    def eps_slope(self, eps: float) -> float:
        """:func:`eps_slope`."""
        return eps_slope(self.log_mgf_high, eps)
