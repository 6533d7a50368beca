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

Beyond ``e^eps``'s float range (eps above about 709, a Gaussian composed a million times),
the sums are taken with a shift ``c`` (``0`` below :data:`SHIFT_FROM`, else ``eps`` rounded
down to a multiple of :data:`SHIFT_STEP`): ``S_H^c[k] = sum_{j >= k} A_j e^{c - hi_j}`` and
``e^eps S_H = e^{eps - c} S_H^c``, one set of arrays per shift (a search stays on one or two).

Rounding: a suffix of ``m`` terms summed from the top is within ``m u`` of its exact value
relative to it, and each ``A e^{c - x}`` term within ``3 u`` of its own; so with
``gamma = (size + 8) u`` the upper bound takes ``S_A (1 + gamma) - e^{eps - c}_down S_H^c (1 -
gamma)`` and the lower one ``S_A (1 - gamma) - e^{eps - c}_up S_L^c (1 + gamma)`` (rounded
the safe way), each floored at 0 for the lower bound. A term that underflows loses at most the
smallest normal number (counted for the lower bound). Terms ``e^{c - x}`` beyond the float
range (losses below ``c - 709``) only enter suffixes that start below ``c <= eps``, which no
query at eps reads.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from accountant.buckets.bucketed import BucketedPLD, mass_suffix, suffix_sum
from accountant.numerics.floats import SMALLEST_NORMAL, UNIT_ROUNDOFF

__all__ = ["SuffixSums", "suffix_sums"]

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: From this eps on, the sums are shifted (module note) ...
SHIFT_FROM = 600.0
#: ... by eps rounded down to a multiple of this (``e^{eps - c} <= e^100``).
SHIFT_STEP = 100.0


class SuffixSums:
    """The suffix sums of one distribution and its edges (see the module note)."""

    __slots__ = ("_pld_mass", "_shifted", "gamma", "high", "low", "mass")

    def __init__(self, pld: BucketedPLD, edges: tuple[np.ndarray, np.ndarray]):
        self.low, self.high = edges
        self._pld_mass = pld.mass_a
        self.mass = mass_suffix(pld)
        self._shifted: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        self.gamma = (pld.size + 8) * UNIT_ROUNDOFF

    def _sums(self, shift: float) -> tuple[np.ndarray, np.ndarray]:
        """``(S_H^c, S_L^c)`` for the shift ``c`` (module note)."""
        if shift not in self._shifted:
            mass = self._pld_mass
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                self._shifted[shift] = (
                    suffix_sum(mass * np.exp(shift - self.high)),
                    suffix_sum(mass * np.exp(shift - self.low)),
                )
        return self._shifted[shift]

    def adp_a_only(self, eps: float) -> tuple[float, float, float, int]:
        """``(upper A-only, lower A-only, A-mass counted, buckets counted)`` at ``eps``."""
        first = int(np.searchsorted(self.high, eps, side="right"))
        surely = int(np.searchsorted(self.low, eps, side="left"))
        counted_a = float(self.mass[first])
        shift = 0.0 if eps < SHIFT_FROM else SHIFT_STEP * math.floor(eps / SHIFT_STEP)
        mass_high, mass_low = self._sums(shift)
        scale = math.exp(eps - shift)
        low_scale, high_scale = (
            scale * (1.0 - 2.0 * UNIT_ROUNDOFF),
            scale * (1.0 + 2.0 * UNIT_ROUNDOFF),
        )
        gamma = self.gamma
        upper = counted_a * (1.0 + gamma) - low_scale * float(mass_high[first]) * (1.0 - gamma)
        lower = float(self.mass[surely]) * (1.0 - gamma) - high_scale * (
            float(mass_low[surely]) * (1.0 + gamma) + SMALLEST_NORMAL * (self.mass.size - surely)
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
