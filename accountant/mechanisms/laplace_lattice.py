"""The (truncated) Laplace mechanism rounded onto a lattice, keeping the mean, in closed form
(for :mod:`accountant.buckets.analytic_lattice`).

Between its two atoms (``L = +-t``, ``t = s/b``) the Laplace loss is the coordinate itself and
the A-mass has the density ``c e^(L/2)`` on ``[-top, top]``
(:mod:`accountant.buckets.analytic_release`:
``c = e^(-t/2) / (4 Z)``, ``2Z = 2`` or ``2 (1 - e^(-r/b))``). An interval ``[a, b]`` inside
``[P, Q]`` (two neighbouring lattice points as floats, ``W = Q - P``) gives ``Q`` and ``P``

    m+ = (c/W) e^(a/2) [4 phi(h/2) + 2 (a - P) expm1(h/2)],
    m- = (c/W) e^(b/2) [4 psi(h/2) + 2 (Q - b) (1 - e^(-h/2))],        h = b - a,

from ``int_0^h v e^(v/2) dv = 4 phi(h/2)``, ``phi(x) = 1 + (x - 1) e^x = sum_{k>=2} (k-1) x^k/k!``
and ``int_0^h v e^(-v/2) dv = 4 psi(h/2)``, ``psi(x) = e^-x (e^x - 1 - x) = e^-x sum_{k>=2}
x^k/k!``: sums of positive terms (the series to 24 terms for ``x <= 1``, whose rest is below
``2^-60`` of the first; the closed forms beyond, ``expm1(x) - x`` losing at most 2 bits). The
split is exact at the float lattice points, so the drift is their rounding,
``2u (|J w| + |g_J|)``. Relative error per interval: the exponent ``ln c + a/2`` off by
``ln c``'s own error and ``2u (|ln c| + |a| + 1)``, ``h`` and the differences to ``P``, ``Q``
(one rounding each: ``u (1 + x)`` through ``phi``, ``psi``), the series or closed forms
(``8u``), and the products and sums (``16u``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import Atom, LawRounding
from accountant.buckets.lattice_quadrature import TINY, U

__all__ = ["ExponentialPart", "laplace_parts"]

_TERMS = 24
_FACTORIALS = np.array([math.factorial(k) for k in range(_TERMS + 2)], dtype=np.float64)


def _phi(x: np.ndarray) -> np.ndarray:
    """``1 + (x - 1) e^x`` as a sum of positive terms."""
    out = np.empty_like(x)
    small = x <= 1.0
    xs = x[small]
    total, power = np.zeros_like(xs), xs * xs
    for k in range(2, _TERMS + 2):
        total += (k - 1) * power / _FACTORIALS[k]
        power = power * xs
    out[small] = total
    xl = x[~small]
    out[~small] = 1.0 + (xl - 1.0) * np.exp(xl)
    return out


def _psi(x: np.ndarray) -> np.ndarray:
    """``e^-x (e^x - 1 - x)`` as a product of positive terms."""
    out = np.empty_like(x)
    small = x <= 1.0
    xs = x[small]
    total, power = np.zeros_like(xs), xs * xs
    for k in range(2, _TERMS + 2):
        total += power / _FACTORIALS[k]
        power = power * xs
    out[small] = total
    xl = x[~small]
    out[~small] = np.expm1(xl) - xl
    return out * np.exp(-x)


@attrs.frozen
class ExponentialPart:
    """A-density ``e^(log_c + L/2)`` on ``support`` (float ends within ``support_error`` of
    the true ones; ``log_c`` within ``log_c_error``)."""

    log_c: float
    log_c_error: float
    support: tuple[float, float]
    support_error: float

    def round_onto(self, anchor: float, k0: int, k1: int, width: float) -> LawRounding:
        """The split of the density onto ``anchor + K width``, ``K = k0 .. k1`` (module
        note); intervals stop ``support_error`` inside the support."""
        scaled = np.arange(k0, k1 + 1, dtype=np.float64) * width
        points = anchor + scaled
        drift = float(np.max(2.0 * U * (np.abs(scaled) + np.abs(points)))) * (1.0 + 1e-9)
        low = math.nextafter(self.support[0] + self.support_error, math.inf)
        high = math.nextafter(self.support[1] - self.support_error, -math.inf)
        ends = np.clip(points, low, high)
        used = np.flatnonzero(ends[1:] > ends[:-1])
        a, b = ends[used], ends[used + 1]
        p, q = points[used], points[used + 1]
        span, h = q - p, b - a
        below, above = a - p, q - b  # >= 0, one rounding each
        half = 0.5 * h
        plus = np.exp(self.log_c + 0.5 * a) / span
        plus *= 4.0 * _phi(half) + 2.0 * below * np.expm1(half)
        minus = np.exp(self.log_c + 0.5 * b) / span
        minus *= 4.0 * _psi(half) - 2.0 * above * np.expm1(-half)
        size = np.maximum(np.abs(a), np.abs(b))
        relative = 2.0 * U * (abs(self.log_c) + size + 1.0) + self.log_c_error
        relative = (relative + U * (4.0 + half) + 32.0 * U) * (1.0 + 1e-6)
        masses, errors = np.zeros(points.size), np.zeros(points.size)
        masses[used] += minus
        masses[used + 1] += plus
        errors[used] += relative * minus + TINY
        errors[used + 1] += relative * plus + TINY
        zeros = np.zeros(points.size)
        return LawRounding(masses, errors, drift, ends, zeros, zeros)

    def lost_beyond(self, rounded: LawRounding) -> float:
        """The A-mass of ``[support low, low end]`` and ``[high end, support high]``
        (``2 c (e^(b/2) - e^(a/2))``, ends moved outwards by ``support_error``)."""
        total = 0.0
        for a, b in (
            (self.support[0] - self.support_error, rounded.low_end),
            (rounded.high_end, self.support[1] + self.support_error),
        ):
            if b > a:
                total += 2.0 * math.exp(self.log_c + 0.5 * b) * -math.expm1(-0.5 * (b - a))
        bound = 2.0 * U * (abs(self.log_c) + max(map(abs, self.support)) + 4.0)
        return total * (1.0 + bound + self.log_c_error) * (1.0 + 1e-6) + TINY


def laplace_parts(release: Any) -> tuple[ExponentialPart, list[Atom]]:
    """``(part, atoms)`` of a :class:`~accountant.buckets.analytic._LaplaceRelease`: ``ln c =
    -t/2 - ln 2Z - ln 2`` (``t`` and ``ln 2Z`` a few ulps each), support ``+-top`` (exact
    rationals rounded once), and the point masses at ``+-t`` from their log-masses."""
    t = release._t
    log_c = -0.5 * t - release._log_2z - math.log(2.0)
    log_c_error = 4.0 * U * (t + abs(release._log_2z) + 2.0)
    top = float(release._support["A"][1])
    part = ExponentialPart(log_c, log_c_error, (-top, top), U * top)
    atoms = []
    for loss, log_a, _ in release._points:
        error = 4.0 * U * (abs(log_a) + t + 2.0) + log_c_error
        atoms.append(Atom(float(Fraction(loss)), math.exp(log_a), error, U * abs(float(loss))))
    return part, atoms
