"""A second-order bound for ADP delta through mean-preserving rounding (issue 12).

:mod:`accountant.buckets.rounding` couples the true composed finite loss ``Y`` (under A,
on the outcomes with no distinguishing component, total mass ``F^n``) with the rounded
``Y' = Y + Z``, where given the true losses the ``Z_i`` are independent, each in an
interval of length ``w_i``, with ``|E[Z_i | Y]| <= rho_i`` (or, for compositions in
stages, :mod:`accountant.buckets.staged_plan`, martingale differences with those properties:
the Azuma-Hoeffding inequality gives the same ``G``, and ``E[Z^2 | Y] <= (sqrt(V)/2 + m)^2``).
With ``V = sum w_i^2``, ``m = sum rho_i`` and Hoeffding,
``P(|Z| > s | Y) <= G(s) = min(1, 2 e^{-2 (s - m)^2 / V})``.

Write the ADP integrand as a difference of convex functions,
``f(y) = (1 - e^{eps - y})^+ = c(y) - d(y)`` with ``c(y) = (y - eps)^+`` and
``d(y) = (y - eps - 1 + e^{eps - y})^+``, where ``0 <= c', d' <= 1[y > eps]`` and
``0 <= d'' <= min(1, e^{eps - y}) 1[y > eps]``. Taylor expansion around ``Y`` (the first-order
terms average to at most ``m`` times the slope) gives, for every ``T >= m``:

* upper: ``E f(Y) <= E f(Y') + 2 m P + (sqrt(V)/2 + m)^2/2 (E H(Y') + G(T) F^n) + F^n Q(T)``,
  where
  ``P = P(Y' > eps - T) + G(T) F^n`` bounds ``P(Y > eps)``, ``H(y) = min(1, e^{eps + 3T - y})
  1[y > eps - 3T]`` bounds ``d''`` near ``Y`` when ``|Z| <= T``, and
  ``Q(T) = E[Z^2 1(|Z| > T)] / 2`` (closed form below);
* lower: ``E f(Y) >= E f(Y') - 2 m P - E Psi((|Y' - eps| - T)^+) - G(T) Psi(0) F^n`` with
  ``Psi(a) = int_a^inf G(s) ds >= E[(|Z| - a)^+ | Y]``, since the hinge ``c`` has
  ``c(Y + Z) - c(Y) - c'(Y) Z <= (|Z| - |Y - eps|)^+``.

Both corrections are second order (``V`` and ``T sqrt(V)`` times the mass near eps), where
the Hoeffding shift of eps is first order. Every expectation over ``Y'`` is a sum over the
composed buckets of a non-negative function taken at its worst point of each bucket's
loss interval, with the masses' certified errors (:func:`bucket_sum`).
"""

from __future__ import annotations

import math

import numpy as np

from accountant.buckets.bucketed import UNIT_ROUNDOFF, BucketedPLD, error_suffix, mass_suffix
from accountant.numerics.lazy import special

__all__ = [
    "Corrections",
    "adp_corrections",
    "bucket_sum",
    "hoeffding_tail",
    "psi",
    "psi_one_sided",
    "second_moment_tail",
    "windowed_sum",
]

#: Relative margin on the closed forms below (erfc, exp: a few ulps each).
_MARGIN = 1.0 + 64.0 * UNIT_ROUNDOFF
#: ``Psi`` is summed exactly within ``T + REACH sqrt(V)`` of eps; beyond, it is below
#: ``Psi(REACH sqrt(V))``, about ``e^{-2 REACH^2}`` of ``sqrt(V)``.
_REACH = 12.0


def hoeffding_tail(s: np.ndarray | float, variance: float, drift: float) -> np.ndarray:
    """``G(s) = min(1, 2 exp(-2 (s - m)^2 / V))`` for ``s >= m``, else 1."""
    s = np.asarray(s, dtype=float)
    excess = np.maximum(s - drift, 0.0)
    return np.minimum(1.0, 2.0 * np.exp(-2.0 * excess**2 / variance) * _MARGIN)


def _knee(variance: float, drift: float) -> float:
    """Where ``2 e^{-2 (s - m)^2 / V}`` falls to 1: ``m + sqrt(V ln 2 / 2)``."""
    return drift + math.sqrt(0.5 * variance * math.log(2.0))


def psi(a: np.ndarray | float, variance: float, drift: float) -> np.ndarray:
    """``Psi(a) = int_a^inf G(s) ds``: ``(k - a) + Psi(k)`` below the knee ``k``, and above it
    ``2 sqrt(pi V / 8) erfc((a - m) sqrt(2 / V))`` (an upper bound, rounding included)."""
    a = np.asarray(a, dtype=float)
    knee = _knee(variance, drift)
    start = np.maximum(a, knee)
    scale = math.sqrt(2.0 / variance)
    tail = (
        2.0 * math.sqrt(math.pi * variance / 8.0) * special.erfc((start - drift) * scale) * _MARGIN
    )
    return tail + np.maximum(knee - a, 0.0)


def psi_one_sided(a: np.ndarray | float, variance: float, drift: float) -> np.ndarray:
    """``Psi_1(a) = int_a^inf min(1, e^{-2 (s - m)^2 / V}) ds >= E[(Z - a)^+ | Y]`` (and of
    ``(-Z - a)^+``: one-sided Hoeffding): ``(m - a)^+ + sqrt(pi V / 8) erfc((max(a, m) - m)
    sqrt(2 / V))`` (an upper bound, rounding included)."""
    a = np.asarray(a, dtype=float)
    start = np.maximum(a, drift)
    tail = math.sqrt(math.pi * variance / 8.0) * special.erfc(
        (start - drift) * math.sqrt(2.0 / variance)
    )
    return tail * _MARGIN + np.maximum(drift - a, 0.0)


def second_moment_tail(threshold: float, variance: float, drift: float) -> float:
    """``Q(T) >= E[Z^2 1(|Z| > T)] / 2`` for ``T`` above the knee:
    ``(1/2) [T^2 G(T) + int_T^inf 2 s G(s) ds]`` with
    ``int_T^inf 2 s G = 4 (V/4) e^{-2 u^2/V} + 4 m sqrt(pi V / 8) erfc(u sqrt(2/V))``,
    ``u = T - m``."""
    u = threshold - drift
    gauss = math.exp(-2.0 * u * u / variance)
    integral = variance * gauss + 4.0 * drift * math.sqrt(math.pi * variance / 8.0) * float(
        special.erfc(u * math.sqrt(2.0 / variance))
    )
    at_t = threshold * threshold * float(hoeffding_tail(threshold, variance, drift))
    return 0.5 * (at_t + integral) * _MARGIN


def bucket_sum(pld: BucketedPLD, weights: np.ndarray, bound: float) -> float:
    """An upper bound on ``sum_k t_k h_k`` over the true bucket masses ``t_k`` of ``pld``,
    given ``weights[k] >= h`` on bucket ``k`` (``0 <= h <= bound``): the stored masses'
    errors ``|m - t| <= rel t + e`` give ``(sum m h + |e|_2 |h|_2) / (1 - rel)``; the lost
    A-mass counts at ``bound``."""
    return windowed_sum(pld, 0, pld.size, weights, 0.0, 0.0, bound)


def windowed_sum(
    pld: BucketedPLD,
    start: int,
    stop: int,
    weights: np.ndarray,
    before: float,
    after: float,
    bound: float,
) -> float:
    """:func:`bucket_sum` with ``weights`` given on buckets ``start:stop`` only, and the
    function bounded by ``before`` on the buckets below and by ``after`` above (their masses
    from prefix sums): the same certified bound at the cost of the window alone."""
    # the mass below the window is at most the whole mass (``before`` is negligible)
    suffix = mass_suffix(pld)
    below, above = float(suffix[0]), float(suffix[stop])
    # einsum, not np.dot: no BLAS threads (they cost more than they save on a busy machine)
    main = _dot(pld.mass_a[start:stop], weights) + before * below + after * above
    norm = math.sqrt(_dot(weights, weights))
    norm += before * math.sqrt(start) + after * math.sqrt(pld.size - stop)
    weight_sum = float(np.sum(weights)) + before * start + after * (pld.size - stop)
    error = min(pld.error_a * norm, pld.entry_error * weight_sum)
    if pld.entry_errors is not None:
        later = error_suffix(pld)
        weighted = _dot(pld.entry_errors[start:stop], weights)
        weighted += before * float(later[0]) + after * float(later[stop])
        error = min(error, weighted * (1.0 + 2.0 * (pld.size + 8) * UNIT_ROUNDOFF))
    total = main + error
    total = total * (1.0 + (pld.size + 8) * UNIT_ROUNDOFF) / (1.0 - pld.relative_error)
    return total + pld.lost_a * bound


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """``sum_i x_i y_i`` (rounding: at most ``len(x) u`` of the sum of the absolute terms)."""
    return float(np.einsum("i,i->", x, y))


#: The lower correction tries ``G(T)`` at these fractions of the delta and keeps the best
#: (a larger ``T`` costs ``T sqrt(V)`` times the mass near eps, a smaller one ``G(T)``).
_LOWER_FRACTIONS = (1e-2, 1e-4, 1e-6, 1e-9, 1e-12)


def _hinge_term(pld: BucketedPLD, eps: float, edges: tuple, beta: float, finite: float) -> float:
    """``E Psi_1((|Y' - eps| - T)^+) + G(T) Psi_1(0) F^n`` with ``G(T) = beta``: the hinge
    ``c(Y + Z) - c(Y) - c'(Y) Z`` is ``(-Z - (Y - eps))^+`` above eps and ``(Z - (eps -
    Y))^+`` below, each at most ``Psi_1(|Y - eps|)`` in expectation; ``|Y - eps| >= |Y' -
    eps| - T`` unless ``|Z| > T`` (probability ``G(T)``). Exact within ``T + REACH sqrt(V)``
    of eps, bounded by ``Psi_1(REACH sqrt(V))`` beyond."""
    variance, drift = pld.hoeffding_variance, pld.hoeffding_drift
    low_edges, high_edges = edges
    beta = max(beta, 1e-300)
    threshold = drift + math.sqrt(0.5 * variance * math.log(2.0 / beta))
    threshold = max(threshold, _knee(variance, drift)) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    tail = float(hoeffding_tail(threshold, variance, drift))
    reach = threshold + _REACH * math.sqrt(variance)
    start = int(np.searchsorted(high_edges, eps - reach, side="right"))
    stop = max(start, int(np.searchsorted(low_edges, eps + reach, side="right")))
    distance = np.maximum(
        np.maximum(low_edges[start:stop] - eps, eps - high_edges[start:stop]), 0.0
    )
    shortfall = psi_one_sided(np.maximum(distance - threshold, 0.0), variance, drift)
    outside = float(psi_one_sided(_REACH * math.sqrt(variance), variance, drift))
    top = float(psi_one_sided(0.0, variance, drift))
    windowed = windowed_sum(pld, start, stop, shortfall, outside, outside, top)
    return windowed + tail * top * finite * _MARGIN


class Corrections:
    """``(down, up)``: what to take from the rounded composition's lower ADP bound and add
    to its upper one at one eps (see the module note)."""

    __slots__ = ("down", "up")

    def __init__(self, down: float, up: float):
        self.down, self.up = down, up


def adp_corrections(pld: BucketedPLD, eps: float, edges: tuple, scale: float) -> Corrections:
    """The second-order corrections at ``eps`` for a composition of rounded releases, with
    ``T`` chosen so that ``G(T) = 1e-12 * scale`` for the upper one, and the best of
    :data:`_LOWER_FRACTIONS` of ``scale`` for the lower one (``scale``: an estimate of delta;
    any positive value keeps the bounds certified)."""
    variance, drift = pld.hoeffding_variance, pld.hoeffding_drift
    if variance <= 0.0:
        return Corrections(2.0 * drift, 2.0 * drift)
    high_edges = edges[1]
    beta = max(1e-12 * scale, 1e-300)
    threshold = drift + math.sqrt(0.5 * variance * math.log(2.0 / beta))
    threshold = max(threshold, _knee(variance, drift)) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    tail = float(hoeffding_tail(threshold, variance, drift))
    finite = pld.finite_mass
    # P(Y > eps) <= P(Y' > eps - T) + G(T) F^n: a suffix of the buckets
    first = int(np.searchsorted(high_edges, eps - threshold, side="right"))
    probability = windowed_sum(pld, first, first, np.zeros(0), 0.0, 1.0, 1.0) + tail * finite
    # E H(Y') <= P(Y' > eps - 3T): H = min(1, e^{eps + 3T - y}) 1[y > eps - 3T] <= 1 there
    # (its decay above eps + 3T would only tighten a second-order term further)
    start = int(np.searchsorted(high_edges, eps - 3.0 * threshold, side="right"))
    curve_sum = windowed_sum(pld, start, start, np.zeros(0), 0.0, 1.0, 1.0)
    second = (0.5 * math.sqrt(variance) + drift) ** 2 * 0.5  # E[Z^2 | Y] <= (sqrt(V)/2 + m)^2
    up = 2.0 * drift * probability
    up += second * (curve_sum + tail * finite)
    up += finite * second_moment_tail(threshold, variance, drift)
    down = min(_hinge_term(pld, eps, edges, scale * f, finite) for f in _LOWER_FRACTIONS)
    down += 2.0 * drift * probability
    return Corrections(down * _MARGIN, up * _MARGIN)
