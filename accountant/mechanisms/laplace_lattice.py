"""The (truncated) Laplace mechanism rounded onto a lattice by the dominating
("connect-the-dots") split, keeping A- and B-masses, in closed form (for
:mod:`accountant.buckets.analytic_lattice`).

Between its two atoms (``L = +-t``, ``t = s/b``) the Laplace loss is the coordinate itself and
the A-mass has the density ``c e^(L/2)`` on ``[-top, top]``
(:mod:`accountant.buckets.analytic_release`:
``c = e^(-t/2) / (4 Z)``, ``2Z = 2`` or ``2 (1 - e^(-r/b))``). An outcome with loss ``L`` in
``[P, Q]`` (two neighbouring lattice points as floats, ``W = Q - P``) gives ``Q`` the share
``t = (1 - e^-(L - P)) / (1 - e^-W)`` of its mass and ``P`` the rest,
``e^-(L - P) (1 - e^-(Q - L)) / (1 - e^-W)`` (:mod:`accountant.buckets.lattice_quadrature`),
so that its A-mass and its B-mass ``e^-L`` are kept. An interval ``[a, b]`` inside ``[P, Q]``
gives

    m+ = c e^(a/2)     G(h, a - P) / (1 - e^-W),
    m- = c e^(P - b/2) G(h, Q - b) / (1 - e^-W),        h = b - a,

    G(h, x) = int_0^h e^(v/2) (1 - e^-x e^-v) dv
            = 2 expm1(h/2) (-expm1(-x)) + 8 e^-x sinh(h/4)^2

(``1 - e^-x e^-v = (1 - e^-x) + e^-x (1 - e^-v)`` and ``int_0^h (e^(v/2) - e^(-v/2)) dv =
8 sinh(h/4)^2``; for ``m-`` substitute ``v = b - y``): sums of positive terms, each with a
small relative error, and ``1 - e^-W = -expm1(-W)``. The split is exact at the float lattice
points, so the drift is their rounding, ``2u (|J w| + |g_J|)``. Relative error per interval:
the exponents ``ln c + a/2`` and ``ln c + P - b/2`` off by ``ln c``'s own error and
``2u (|ln c| + 2 max(|a|, |b|) + W + 1)``; ``h``, ``W`` and the differences ``a - P``, ``Q - b``
(one rounding each, through ``expm1`` (condition ``<= 1 + h/2``), ``-expm1(-x)`` (``<= 1``),
``e^-x`` (``x <= W`` times) and ``sinh^2`` (``<= 2 (1 + h/4)``)): ``u (2h + 2W + 4)``; the
functions, products, sums and the division: ``48u``.

The merged masses of an interval (:mod:`accountant.buckets.merged_lattice`): its A-mass
``2c e^(a/2) expm1(h/2)`` and its C-mass ``e^(g_K) int_a^b c e^(-v/2) dv = 2c e^(P - a/2)
(1 - e^(-h/2))`` (``P`` the float ``g_K``), within the same relative bound.
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


def _share_integral(h: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``G(h, x) = int_0^h e^(v/2) (1 - e^-x e^-v) dv`` as a sum of positive terms (module
    note)."""
    return 2.0 * np.expm1(0.5 * h) * -np.expm1(-x) + 8.0 * np.exp(-x) * np.sinh(0.25 * h) ** 2


@attrs.frozen
class ExponentialPart:
    """A-density ``e^(log_c + L/2)`` on ``support`` (float ends within ``support_error`` of
    the true ones; ``log_c`` within ``log_c_error``)."""

    log_c: float
    log_c_error: float
    support: tuple[float, float]
    support_error: float

    def round_onto(
        self, anchor: float, k0: int, k1: int, width: float, mirrored: bool = False
    ) -> LawRounding:
        """The dominating split of the density onto ``anchor + K width``, ``K = k0 .. k1``
        (module note), and the merged masses of each interval; intervals stop
        ``support_error`` inside the support. The Laplace release is the same both ways:
        only the A/B scale (``mirrored`` false) is split."""
        if mirrored:
            raise ValueError("the Laplace lattice is split in the A/B scale only")
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
        norm = -np.expm1(-span)
        plus = np.exp(self.log_c + 0.5 * a) * _share_integral(h, below) / norm
        minus = np.exp(self.log_c + (p - 0.5 * b)) * _share_integral(h, above) / norm
        size = np.maximum(np.abs(a), np.abs(b))
        relative = 2.0 * U * (abs(self.log_c) + 2.0 * size + span + 1.0) + self.log_c_error
        relative = (relative + U * (2.0 * h + 2.0 * span + 4.0) + 48.0 * U) * (1.0 + 1e-6)
        masses, errors = np.zeros(points.size), np.zeros(points.size)
        masses[used] += minus
        masses[used + 1] += plus
        errors[used] += relative * minus + TINY
        errors[used + 1] += relative * plus + TINY
        # merged: A = 2c e^(a/2) expm1(h/2), C = e^(g_K) B = 2c e^(P - a/2) (1 - e^(-h/2))
        merged, merged_c = np.zeros(points.size), np.zeros(points.size)
        merged[used] = 2.0 * np.exp(self.log_c + 0.5 * a) * np.expm1(0.5 * h)
        merged_c[used] = 2.0 * np.exp(self.log_c + (p - 0.5 * a)) * -np.expm1(-0.5 * h)
        merged_errors, merged_c_errors = np.zeros(points.size), np.zeros(points.size)
        merged_errors[used] = relative * merged[used] + TINY
        merged_c_errors[used] = relative * merged_c[used] + TINY
        zeros = np.zeros(points.size)
        return LawRounding(
            masses,
            errors,
            drift,
            ends,
            zeros,
            zeros,
            merged,
            merged_c,
            merged_errors,
            merged_c_errors,
            0.0,
        )

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
