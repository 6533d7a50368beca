"""ADP and PDP sums of a bucketed PLD at any eps from suffix sums, in logarithmic time.

The certified bounds of :mod:`accountant.buckets.bounds` sum over the buckets above eps. An
eps search evaluates them a hundred times or more, and a composition of many rounded
releases has millions of buckets: scanning them each time dominates a query. With the
bucket edges increasing, every sum the A-only bounds need is a suffix of one of three
arrays, summed once per distribution (from the top, so each suffix is a sum of
non-negative terms, never a difference):

    S_A[k] = sum_{j >= k} A_j,   S_H[k] = sum_{j >= k} A_j e^{-hi_j},
    S_L[k] = sum_{j >= k} A_j e^{-lo_j}.

With ``f`` the first bucket whose upper edge exceeds eps and ``g`` the first whose lower edge
is at least eps (and ``h`` the first whose lower edge exceeds it, for PDP):

    upper A-only ADP   sum_{hi_j > eps} A_j (1 - e^{eps - hi_j}) = S_A[f] - e^eps S_H[f],
    lower A-only ADP   sum_{lo_j >= eps} A_j (1 - e^{eps - lo_j}) = S_A[g] - e^eps S_L[g],
    PDP                possibly = S_A[f],   surely = S_A[h].

Rounding: a suffix of ``m`` terms summed from the top is within ``m u`` of its exact value
relative to it, and each ``A e^{-x}`` term within ``3 u`` of its own; so with
``gamma = (size + 8) u`` the upper bound takes ``S_A (1 + gamma) - e^eps_down S_H (1 -
gamma)`` and the lower one ``S_A (1 - gamma) - e^eps_up S_L (1 + gamma)`` (``e^eps`` rounded
the safe way), each floored at 0 for the lower bound. Terms ``e^{-x}`` beyond the float range
(losses below -709) only enter suffixes that start below eps >= 0, which no query reads.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from accountant.buckets.bucketed import UNIT_ROUNDOFF, BucketedPLD, mass_suffix, suffix_sum

__all__ = ["SuffixSums", "suffix_sums"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: What an underflowing term ``A e^{-x}`` may lose.
_SUBNORMAL = 2.0**-1022


class SuffixSums:
    """The suffix sums of one distribution and its edges (see the module note)."""

    __slots__ = ("gamma", "high", "low", "mass", "mass_high", "mass_low")

    def __init__(self, pld: BucketedPLD, edges: tuple[np.ndarray, np.ndarray]):
        self.low, self.high = edges
        mass = pld.mass_a
        self.mass = mass_suffix(pld)
        with np.errstate(over="ignore", invalid="ignore"):
            self.mass_high = suffix_sum(mass * np.exp(-self.high))
            self.mass_low = suffix_sum(mass * np.exp(-self.low))
        self.gamma = (pld.size + 8) * UNIT_ROUNDOFF

    def adp_a_only(self, eps: float) -> tuple[float, float, float, int]:
        """``(upper A-only, lower A-only, A-mass counted, buckets counted)`` at ``eps``."""
        first = int(np.searchsorted(self.high, eps, side="right"))
        surely = int(np.searchsorted(self.low, eps, side="left"))
        counted_a = float(self.mass[first])
        if eps >= 709.0:  # e^eps beyond the float range: the terms e^{eps - x} may be 1
            return counted_a * (1.0 + self.gamma), 0.0, counted_a, self.mass.size - 1 - first
        scale = math.exp(eps)
        low_scale, high_scale = (
            scale * (1.0 - 2.0 * UNIT_ROUNDOFF),
            scale * (1.0 + 2.0 * UNIT_ROUNDOFF),
        )
        gamma = self.gamma
        upper = counted_a * (1.0 + gamma) - low_scale * float(self.mass_high[first]) * (1.0 - gamma)
        lower = float(self.mass[surely]) * (1.0 - gamma) - high_scale * (
            float(self.mass_low[surely]) * (1.0 + gamma) + _SUBNORMAL * (self.mass.size - surely)
        )
        return max(upper, 0.0), max(lower, 0.0), counted_a, self.mass.size - 1 - first

    def pdp(self, eps: float) -> tuple[float, float, int]:
        """``(A-mass possibly above eps, surely above eps, buckets possibly above)``: the
        sums of :func:`~accountant.buckets._kernels.pdp_scan`."""
        first = int(np.searchsorted(self.high, eps, side="right"))
        surely = int(np.searchsorted(self.low, eps, side="right"))
        return float(self.mass[first]), float(self.mass[surely]), self.mass.size - 1 - first


def suffix_sums(pld: BucketedPLD, edges: tuple[np.ndarray, np.ndarray]) -> SuffixSums:
    """The :class:`SuffixSums` of ``pld`` (cached per distribution; ``edges`` must be its
    :meth:`~accountant.buckets.bucketed.BucketedPLD.edges`)."""
    if pld not in _CACHE:
        _CACHE[pld] = SuffixSums(pld, edges)
    return _CACHE[pld]
