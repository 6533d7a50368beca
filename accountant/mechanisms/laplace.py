"""The Laplace family, untruncated and truncated to ``[-r, r]``: the Extended MA's closed
forms (SPEC section 3) and the PrivacyBuckets release (:class:`LaplaceRelease`, SPEC
section 2) in one place; the lattice rounding of its exponential loss density is in
:mod:`accountant.mechanisms.laplace_lattice`.

Laplace, ``t = s/b``, coordinate = loss: ``L = t`` for ``x <= 0`` and ``L = -t`` for
``x >= s`` (point masses), ``L = (s - 2x)/b`` in between, where A and B have the loss
densities ``e^((L - t)/2)/(4Z)`` and ``e^(-(L + t)/2)/(4Z)``: a loss interval
``(l1, l2]`` has A-mass ``e^((l2 - t)/2)(1 - e^(-(l2 - l1)/2))/(2Z)`` and B-mass
``e^(-(l1 + t)/2)(1 - e^(-(l2 - l1)/2))/(2Z)``. Truncation to ``[-r, r]``
(``Z = 1 - e^(-r/b)``) clips the middle to ``[max(0, s-r), min(s, r)]`` and scales the
point masses by ``1 - e^(-(r-s)/b)`` (none for ``s >= r``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from accountant.buckets.analytic_release import BASE_ERROR, AnalyticRelease, U
from accountant.mechanisms.laplace_lattice import laplace_parts
from accountant.mechanisms.symmetric import (
    DISTINGUISHING_RELATIVE_ERROR,
    LAPLACE_PAIR_SCALES,
    SymmetricMechanism,
    cover,
)
from accountant.noise import NoiseDistribution, truncated_laplace
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.gaussian import (
    exp_mean_offset,
    gl_moments,
    log1mexp,
    log1mexp_scalar,
    log_exp_integral,
    logsumexp_scalar,
)
from accountant.validation import check_positive_real

__all__ = ["LaplaceMechanism", "LaplaceRelease", "TruncatedLaplaceMechanism"]


def _positive_scale(value: float) -> float:
    return check_positive_real("scale", value)


def _positive_bound(value: float) -> float:
    return check_positive_real("bound", value)


def _positive_sensitivity(value: float) -> float:
    return check_positive_real("sensitivity", value)


@attrs.frozen
class LaplaceMechanism(SymmetricMechanism):
    """Laplace noise with density ``e^(-|x|/b) / (2b)``, sensitivity ``s``, ``t = s/b``::

    Gamma_lambda = ln[(lambda+1)/(2lambda+1) e^(lambda t) + lambda/(2lambda+1) e^(-(lambda+1) t)]

    (Mironov 2017, Rényi DP of Laplace with ``alpha = lambda + 1``), evaluated as
    ``lambda t + ln((lambda+1)/(2lambda+1)) + log1p(lambda/(lambda+1) e^(-(2lambda+1) t))``;
    ``omega = 0``, ``sup L = t``.
    """

    _name = "Laplace"
    _log_mass_error = 64.0 * UNIT_ROUNDOFF
    scale: float = attrs.field(converter=_positive_scale)
    sensitivity: float = attrs.field(default=1.0, converter=_positive_sensitivity)

    def _gamma(self, lam: float) -> float:
        t = self.sensitivity / self.scale
        g = lam / (lam + 1.0) * math.exp(-(2.0 * lam + 1.0) * t)
        return lam * t + math.log1p(lam) - math.log1p(2.0 * lam) + math.log1p(g)

    def _slope(self, lam: float) -> float:
        t = self.sensitivity / self.scale
        decay = math.exp(-(2.0 * lam + 1.0) * t)
        g = lam / (lam + 1.0) * decay
        dg = decay * (1.0 / (lam + 1.0) ** 2 - 2.0 * t * lam / (lam + 1.0))
        return t - 1.0 / ((lam + 1.0) * (2.0 * lam + 1.0)) + dg / (1.0 + g)

    def _max_loss(self) -> float:
        return self.sensitivity / self.scale

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_laplace(self.scale, cover(LAPLACE_PAIR_SCALES * self.scale, step), step)

    def bucket_release(self) -> LaplaceRelease:
        """The PrivacyBuckets release of one application (no grid)."""
        return LaplaceRelease(self, math.inf)


@attrs.frozen
class TruncatedLaplaceMechanism(SymmetricMechanism):
    """Laplace density ``e^(-|x|/b) / (2bZ)`` on ``[-r, r]``, ``Z = 1 - e^(-r/b)``,
    sensitivity ``s < 2r`` (SPEC section 4, continuous version). On the overlap
    ``[s-r, r]``, ``ln a^(1+lambda) b^(-lambda) + ln(2bZ) = alpha x + beta`` is piecewise
    linear with breakpoints 0 and ``s``::

        x < 0:      alpha = 1/b,             beta = lambda s/b      (L = s/b)
        0 <= x < s: alpha = -(2lambda+1)/b,  beta = lambda s/b      (L = (s - 2x)/b)
        x >= s:     alpha = -1/b,            beta = -lambda s/b     (L = -s/b)

    so ``Gamma_lambda = ln sum_pieces ∫ e^(alpha x + beta) dx - ln(2bZ)`` in closed
    form, and ``dGamma/dlambda = sum_p w_p (alpha'_p E_p[x] + beta'_p)`` (differentiating
    under the integral; ``w_p`` the pieces' shares, ``E_p`` the mean under ``e^(alpha x)``
    on the piece). ``omega`` = A-mass of ``[-r, s-r)``; ``sup L = L(s-r) = min(s, 2r-s)/b``.
    """

    _name = "truncated Laplace"
    _log_mass_error = DISTINGUISHING_RELATIVE_ERROR
    scale: float = attrs.field(converter=_positive_scale)
    bound: float = attrs.field(converter=_positive_bound)
    sensitivity: float = attrs.field(default=1.0, converter=_positive_sensitivity)

    def _log_norm(self) -> float:
        """``ln(2bZ)``."""
        return math.log(2.0 * self.scale) + log1mexp_scalar(-self.bound / self.scale)

    def _pieces(self, lam: float) -> list[tuple[float, float, float, float, float, float]]:
        """``(alpha, beta, lo, hi, dalpha/dlambda, L(midpoint))`` of the non-empty pieces.

        ``dbeta/dlambda + dalpha/dlambda * midpoint`` is the loss at the midpoint, exactly
        ``s/b``, ``0`` (the middle piece is always centred on ``s/2``) and ``-s/b``.
        """
        s, r, b = self.sensitivity, self.bound, self.scale
        rise = lam * s / b
        candidates = (
            (1.0 / b, rise, -math.inf, 0.0, 0.0, s / b),
            (-(2.0 * lam + 1.0) / b, rise, 0.0, s, -2.0 / b, 0.0),
            (-1.0 / b, -rise, s, math.inf, 0.0, -s / b),
        )
        pieces = []
        for alpha, beta, lo, hi, d_alpha, mid_loss in candidates:
            lo, hi = max(lo, s - r), min(hi, r)
            if hi > lo:
                pieces.append((alpha, beta, lo, hi, d_alpha, mid_loss))
        return pieces

    def _gamma(self, lam: float) -> float:
        logs = [log_exp_integral(a, be, lo, hi) for a, be, lo, hi, _, _ in self._pieces(lam)]
        return logsumexp_scalar(logs) - self._log_norm()

    def _slope(self, lam: float) -> float:
        pieces = self._pieces(lam)
        logs = [log_exp_integral(a, be, lo, hi) for a, be, lo, hi, _, _ in pieces]
        top = max(logs)
        shares = [math.exp(v - top) for v in logs]  # normalised below, not via ln(sum)
        slope = 0.0
        for share, (alpha, _, lo, hi, d_alpha, mid_loss) in zip(shares, pieces, strict=True):
            # alpha' E[x] + beta' = L(mid) + alpha' (E[x] - mid)
            width = hi - lo
            slope += share * (mid_loss + d_alpha * width * exp_mean_offset(alpha * width))
        max_loss = self._max_loss()
        return min(max(slope / math.fsum(shares), -max_loss), max_loss)

    def _omega(self) -> float:
        s, r, b = self.sensitivity, self.bound, self.scale
        logs = []
        for alpha, lo, hi in ((1.0 / b, -r, min(0.0, s - r)), (-1.0 / b, 0.0, s - r)):
            if hi > lo:
                logs.append(log_exp_integral(alpha, 0.0, lo, hi))
        return math.exp(logsumexp_scalar(logs) - self._log_norm())

    def _max_loss(self) -> float:
        return min(self.sensitivity, 2.0 * self.bound - self.sensitivity) / self.scale

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_laplace(self.scale, self.bound, step)

    def bucket_release(self) -> LaplaceRelease:
        """The PrivacyBuckets release of one application (no grid)."""
        return LaplaceRelease(self, self.bound)


class LaplaceRelease(AnalyticRelease):
    """(Truncated) Laplace: the coordinate is the loss itself on both sides."""

    def __init__(self, mechanism: Any, bound: float):
        super().__init__(mechanism)
        s, b = Fraction(mechanism.sensitivity), Fraction(mechanism.scale)
        self._t = mechanism.sensitivity / mechanism.scale
        self._alpha = Fraction(1)
        self._beta = {"A": Fraction(0), "B": Fraction(0)}
        # the middle x in [max(0, s - r), min(s, r)] has losses within +-top
        top = s / b
        if math.isfinite(bound) and s > 2 * Fraction(bound) - s:
            top = (2 * Fraction(bound) - s) / b
        self._support = {"A": (-top, top), "B": (-top, top)}
        self._bracket = (-float(top), float(top))
        self._log_2z = math.log(2.0)
        if math.isfinite(bound):
            self._log_2z += log1mexp_scalar(-bound / mechanism.scale)
        self._points = []
        if mechanism.sensitivity < bound:  # x <= 0 (loss t) and x >= s (loss -t)
            log_side = -self._log_2z
            if math.isfinite(bound):
                log_side += log1mexp_scalar(-(bound - mechanism.sensitivity) / mechanism.scale)
            t = self._t
            self._points = [(s / b, log_side, log_side - t), (-s / b, log_side - t, log_side)]

    def _lattice_parts(self) -> tuple:
        return laplace_parts(self)

    def _log_interval(self, lo, hi, width, side: str) -> np.ndarray:
        log_span = log1mexp(-0.5 * width) - self._log_2z
        return log_span + (0.5 * (hi - self._t) if side == "A" else -0.5 * (lo + self._t))

    def _log_tail(self, bound: float, below: bool) -> float:  # pragma: no cover - bounded
        raise AssertionError("Laplace losses are bounded")

    def _moments(self) -> tuple[float, float]:
        top = self._bracket[1]
        log_density = -math.log(2.0) - self._log_2z - 0.5 * self._t
        mass, mean, variance = gl_moments(
            max(-top, top - 200.0), top, lambda x: 0.5 * x + log_density, 1.0
        )
        parts = [(mass, mean, variance)] + [
            (math.exp(a), float(p), 0.0) for p, a, _ in self._points
        ]
        total = math.fsum(m for m, _, _ in parts)
        mean = math.fsum(m * x for m, x, _ in parts) / total
        variance = math.fsum(m * (v + (x - mean) ** 2) for m, x, v in parts) / total
        return mean, variance

    def _rounding(self, largest: float, width: float, anchor: float) -> float:
        return 8.0 * U * (largest + self._t + abs(anchor) + width + 1.0)

    def _relative_error(self, largest: float, width: float, delta: float) -> float:
        # the exponents (hi - t)/2 and -(lo + t)/2 are off by at most delta/2
        return 2.0 * delta + BASE_ERROR
