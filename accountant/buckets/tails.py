"""Certified tail cuts by Chernoff bounds on the bucketed single releases.

If a single release is represented by bucket A-masses ``x_j`` whose losses are at
most ``hi_j`` and at least ``lo_j``, the ``k``-fold composition of that representation
has, for every ``lambda > 0``::

    A-mass{L > t} <= exp(k M_hi(lambda) - lambda t),   M_hi(lambda) = ln sum_j x_j e^{lambda hi_j}
    A-mass{L < t} <= exp(k M_lo(lambda) + lambda t),   M_lo(lambda) = ln sum_j x_j e^{-lambda lo_j}

(Markov's inequality on ``e^{+-lambda L}``; heterogeneous compositions add the
``k M``). Buckets lying wholly beyond the window where these bounds reach
``tail_mass`` are cut and ``tail_mass`` per cut side is counted as lost. Unlike
cutting by computed masses, this does not depend on FFT round-off in the tails.
Any lambda gives a valid bound, so a fixed grid of lambdas is sound.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import attrs
import numpy as np

from accountant.buckets._kernels import log_moment_generating

if TYPE_CHECKING:
    from accountant.buckets.bucketed import BucketedPLD

__all__ = ["TailMoments", "chernoff_window"]

LAMBDA_GRID = np.geomspace(1e-3, 1e7, 121)
#: Runs of consecutive buckets are merged into at most this many groups (each with its
#: summed mass and its extreme edges) before the moments are taken: an upper bound on
#: both sums, which keeps their cost bounded when a single release has millions of buckets.
MOMENT_GROUPS = 1 << 16
_UNIT_ROUNDOFF = 2.0**-53


@attrs.frozen(eq=False)
class TailMoments:
    """``M_hi`` and ``M_lo`` of one bucketed release on :data:`LAMBDA_GRID`."""

    log_mgf_high: np.ndarray
    log_mgf_low: np.ndarray

    @classmethod
    def of(cls, pld: BucketedPLD) -> TailMoments:
        """From a bucketed single release. Its stored masses may fall short of the true
        ones by the relative error ``rho`` and the absolute errors, which are added."""
        low_edges, high_edges = pld.edges()
        mass, group_low, group_high, per = _grouped(pld.mass_a, low_edges, high_edges)
        keep = mass > 0.0
        if not keep.any():
            empty = np.full(LAMBDA_GRID.size, -math.inf)
            return cls(empty, empty)
        log_mass = np.log(mass[keep])
        # + the rounding of the group sums of non-negative terms
        margin = math.log1p(2.0 * pld.relative_error) + math.log1p(1.01 * per * _UNIT_ROUNDOFF)
        mgf_high = log_moment_generating(log_mass, group_high[keep], LAMBDA_GRID) + margin
        mgf_low = log_moment_generating(log_mass, -group_low[keep], LAMBDA_GRID) + margin
        if pld.error_a > 0.0:
            # absolute errors e_j (|e|_2 <= error_a): sum_j |e_j| e^{lambda h_j}
            # <= sqrt(K) error_a e^{lambda max h}
            log_error = math.log(pld.error_a * math.sqrt(pld.size))
            mgf_high = np.logaddexp(mgf_high, log_error + LAMBDA_GRID * float(high_edges.max()))
            mgf_low = np.logaddexp(mgf_low, log_error - LAMBDA_GRID * float(low_edges.min()))
        return cls(mgf_high, mgf_low)


def _grouped(
    mass: np.ndarray, low_edges: np.ndarray, high_edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(masses, lowest edges, highest edges, buckets per group)`` of runs of consecutive
    buckets, at most :data:`MOMENT_GROUPS` of them: ``sum_j x_j e^{lambda h_j}`` is at most
    ``sum_g (sum_{j in g} x_j) e^{lambda max_{j in g} h_j}``, and likewise for the lows."""
    per = -(-mass.size // MOMENT_GROUPS)
    if per <= 1:
        return mass, low_edges, high_edges, 1
    starts = np.arange(0, mass.size, per)
    return (
        np.add.reduceat(mass, starts),
        np.minimum.reduceat(low_edges, starts),
        np.maximum.reduceat(high_edges, starts),
        per,
    )


def chernoff_window(
    moments: tuple[tuple[TailMoments, int], ...], tail_mass: float
) -> tuple[float, float]:
    """``(t_lo, t_hi)``: the composed A-mass below ``t_lo`` and above ``t_hi`` is each at
    most ``tail_mass``. ``(-inf, inf)`` when no bound reaches it."""
    if not moments or tail_mass <= 0.0:
        return -math.inf, math.inf
    high = sum(count * m.log_mgf_high for m, count in moments)
    low = sum(count * m.log_mgf_low for m, count in moments)
    log_tail = math.log(tail_mass)
    with np.errstate(invalid="ignore"):
        t_high = np.min(np.where(np.isfinite(high), (high - log_tail) / LAMBDA_GRID, np.inf))
        t_low = np.max(np.where(np.isfinite(low), (log_tail - low) / LAMBDA_GRID, -np.inf))
    return float(t_low), float(t_high)
