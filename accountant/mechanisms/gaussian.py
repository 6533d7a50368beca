"""The Gaussian family, untruncated and truncated to ``[-r, r]``: everything both
accountants need in one place. The Extended MA's ``Gamma_lambda``, its slope and the
distinguishing mass in closed form (SPEC section 3; paper, Proposition "Numerical Extended
MA", with sums replaced by integrals), and the PrivacyBuckets release: masses of loss
intervals from normal CDFs (:class:`GaussianRelease`, SPEC section 2) and the smooth law
the engine rounds onto its lattice (:func:`gaussian_law`).

Gaussian, ``mu = s/sigma``: ``L = mu^2/2 + mu Y`` with ``Y = -x/sigma`` standard normal
under A, and ``L = mu Y' - mu^2/2`` with ``Y' = (s - x)/sigma`` standard normal under B,
so a loss ``l`` has coordinate ``alpha l + beta`` with ``alpha = 1/mu``, ``beta = -mu/2``
(A) or ``+mu/2`` (B), and the masses are normal masses. Truncation to ``[-r, r]``
restricts ``Y`` to ``[-rho, rho - mu]`` and ``Y'`` to ``[mu - rho, rho]``
(``rho = r/sigma``: the finite-loss outcomes ``[s-r, r]``), each divided by
``Z = Phi(rho) - Phi(-rho)``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from accountant.buckets.analytic_lattice import NormalPart
from accountant.buckets.analytic_release import BASE_ERROR, AnalyticRelease, U
from accountant.buckets.gaussian_dominance import GaussianDomination
from accountant.buckets.lattice_quadrature import SmoothLaw
from accountant.mechanisms.symmetric import (
    DISTINGUISHING_RELATIVE_ERROR,
    GAUSSIAN_PAIR_SIGMAS,
    SymmetricMechanism,
    cover,
)
from accountant.noise import NoiseDistribution, truncated_gaussian
from accountant.numerics.gaussian import (
    LOG_SQRT_2PI,
    gl_moments,
    log_gauss_mass,
    log_gauss_mass_scalar,
    log_upper_gauss_scaled,
    mills,
    mills_complement,
    narrow_gauss_integrals,
)
from accountant.numerics.lazy import special
from accountant.validation import check_positive_real

__all__ = ["GaussianMechanism", "GaussianRelease", "TruncatedGaussianMechanism", "gaussian_law"]


def _positive_sigma(value: float) -> float:
    return check_positive_real("sigma", value)


def _positive_bound(value: float) -> float:
    return check_positive_real("bound", value)


def _positive_sensitivity(value: float) -> float:
    return check_positive_real("sensitivity", value)


@attrs.frozen
class GaussianMechanism(SymmetricMechanism):
    """Gaussian noise ``N(0, sigma^2)``, sensitivity ``s``::

    Gamma_lambda = lambda (lambda + 1) s^2 / (2 sigma^2),   omega = 0,   sup L = inf

    (Mironov 2017, Rényi DP of order ``alpha = lambda + 1``; SPEC section 3).
    """

    _name = "Gaussian"
    sigma: float = attrs.field(converter=_positive_sigma)
    sensitivity: float = attrs.field(default=1.0, converter=_positive_sensitivity)

    def _rate(self) -> float:
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    def _gamma(self, lam: float) -> float:
        return lam * (lam + 1.0) * self._rate()

    def _slope(self, lam: float) -> float:
        return (2.0 * lam + 1.0) * self._rate()

    def _max_loss(self) -> float:
        return math.inf

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_gaussian(self.sigma, cover(GAUSSIAN_PAIR_SIGMAS * self.sigma, step), step)

    def bucket_release(self) -> GaussianRelease:
        """The PrivacyBuckets release of one application (no grid)."""
        return GaussianRelease(self, math.inf)

    @property
    def gaussian_domination(self) -> GaussianDomination:
        """The pair ``N(s/sigma, 1)`` against ``N(0, 1)`` itself (exact:
        :mod:`~accountant.buckets.gaussian_dominance`)."""
        return GaussianDomination(self.sensitivity / self.sigma, exact=True)


@attrs.frozen
class TruncatedGaussianMechanism(SymmetricMechanism):
    """Gaussian density restricted to ``[-r, r]`` and renormalised by
    ``Z = Phi(r/sigma) - Phi(-r/sigma)`` (paper, Example "Truncated Gaussian Noise",
    continuous version), sensitivity ``s < 2r``. On the overlap ``[s-r, r]``,
    ``a^(1+lambda) b^(-lambda) = e^(lambda(lambda+1)s^2/(2sigma^2)) phi((x + lambda s)/sigma)
    / (sigma Z)``, hence with ``u1 = (r + lambda s)/sigma``, ``u2 = (s - r + lambda s)/sigma``::

        Gamma_lambda = lambda(lambda+1) s^2/(2 sigma^2) + ln[Phi(u1) - Phi(u2)] - ln Z,
        omega        = [Phi((s-r)/sigma) - Phi(-r/sigma)] / Z,
        sup L        = L(s-r) = s (2r - s) / (2 sigma^2).

    For ``u2 >= 0`` the quadratic terms cancel analytically,
    ``lambda(lambda+1)s^2/(2sigma^2) - u2^2/2 = lambda sup L - (s-r)^2/(2sigma^2)``, and the
    rest uses ``erfcx``. The slope is ``E_w[L]`` under the tilted density, a normal
    ``N(-lambda s, sigma^2)`` truncated to the overlap:
    ``sup L - (s/sigma) [(phi(u2) - phi(u1))/(Phi(u1) - Phi(u2)) - u2]``.
    """

    _name = "truncated Gaussian"
    _log_mass_error = DISTINGUISHING_RELATIVE_ERROR
    sigma: float = attrs.field(converter=_positive_sigma)
    bound: float = attrs.field(converter=_positive_bound)
    sensitivity: float = attrs.field(default=1.0, converter=_positive_sensitivity)

    def _log_z(self) -> float:
        r = self.bound / self.sigma
        return log_gauss_mass_scalar(-r, r, 2.0 * r)

    def _arguments(self, lam: float) -> tuple[float, float, float]:
        s, r, sigma = self.sensitivity, self.bound, self.sigma
        return (r + lam * s) / sigma, (s - r + lam * s) / sigma, (2.0 * r - s) / sigma

    def _narrow(self, lam: float) -> tuple[float, float] | None:
        """For a narrow overlap, where the forms below cancel: with ``m = (u1 + u2)/2`` and
        ``tau = (x + lambda s)/sigma - m`` on ``[-w/2, w/2]``, ``Phi(u1) - Phi(u2) = phi(m) I0``
        and the slope is ``E_w[L] = (s/sigma) E[-tau] = (s/sigma) I1/I0`` (see
        :func:`narrow_gauss_integrals`). Returns ``(ln I0, slope)`` or ``None``."""
        u1, u2, width = self._arguments(lam)
        integrals = narrow_gauss_integrals(0.5 * (u1 + u2), 0.5 * width)
        if integrals is None:
            return None
        slope = self.sensitivity / self.sigma * integrals[1] / integrals[0]
        return math.log(integrals[0]), slope

    def _gamma(self, lam: float) -> float:
        u1, u2, width = self._arguments(lam)
        narrow = self._narrow(lam)
        if narrow is not None:  # lambda(lambda+1)s^2/(2sigma^2) - m^2/2 = -s^2/(8 sigma^2)
            quadratic = -(self.sensitivity**2) / (8.0 * self.sigma**2) - LOG_SQRT_2PI
            return quadratic + narrow[0] - self._log_z()
        if u2 >= 0.0:
            offset = (self.sensitivity - self.bound) ** 2 / (2.0 * self.sigma**2)
            log_mass = log_upper_gauss_scaled(u2, u1, width)
            return lam * self._max_loss() - offset + log_mass - self._log_z()
        quadratic = lam * (lam + 1.0) * self.sensitivity**2 / (2.0 * self.sigma**2)
        return quadratic + log_gauss_mass_scalar(u2, u1, width) - self._log_z()

    def _slope(self, lam: float) -> float:
        narrow = self._narrow(lam)
        if narrow is not None:
            return narrow[1]
        u1, u2, width = self._arguments(lam)
        if u2 >= 0.0:
            # excess = (phi(u2) - phi(u1))/(Phi(u1) - Phi(u2)) - u2; numerator and denominator
            # scaled by e^(u2^2/2)/phi(0), so phi(u1) -> e^-c, Q(u) -> M(u) e^(-(u^2 - u2^2)/2).
            decay = math.exp(-0.5 * width * (u1 + u2))
            mills1 = mills(u1)
            numerator = mills_complement(u2) - decay * (mills_complement(u1) + width * mills1)
            excess = numerator / (mills(u2) - decay * mills1)
        else:
            # phi(u2) - phi(u1) = phi(u2) (1 - e^-c), c = (u1^2 - u2^2)/2 = width (u1 + u2)/2
            log_phi2 = -0.5 * u2 * u2 - LOG_SQRT_2PI - log_gauss_mass_scalar(u2, u1, width)
            excess = math.exp(log_phi2) * -math.expm1(-0.5 * width * (u1 + u2)) - u2
        max_loss = self._max_loss()
        slope = max_loss - (self.sensitivity / self.sigma) * excess
        return min(max(slope, -max_loss), max_loss)  # E_w[L] lies in [inf L, sup L]

    def _omega(self) -> float:
        s, r, sigma = self.sensitivity, self.bound, self.sigma
        log_mass = log_gauss_mass_scalar(-r / sigma, (s - r) / sigma, s / sigma)
        return math.exp(log_mass - self._log_z())

    def _max_loss(self) -> float:
        s = self.sensitivity
        return s * (2.0 * self.bound - s) / (2.0 * self.sigma**2)

    def _noise(self, step: float) -> NoiseDistribution:
        return truncated_gaussian(self.sigma, self.bound, step)

    def bucket_release(self) -> GaussianRelease:
        """The PrivacyBuckets release of one application (no grid)."""
        return GaussianRelease(self, self.bound)


class GaussianRelease(AnalyticRelease):
    """(Truncated) Gaussian: coordinates ``Y = l/mu - mu/2`` (A), ``Y' = l/mu + mu/2`` (B)."""

    def __init__(self, mechanism: Any, bound: float):
        super().__init__(mechanism)
        s, sigma = Fraction(mechanism.sensitivity), Fraction(mechanism.sigma)
        self._mu = mechanism.sensitivity / mechanism.sigma
        self._bound = bound
        self._alpha = sigma / s
        self._beta = {"A": -s / (2 * sigma), "B": s / (2 * sigma)}
        if math.isinf(bound):
            self._support = {"A": (None, None), "B": (None, None)}
            self._log_z = 0.0
        else:
            r = Fraction(bound)
            self._support = {"A": (-r / sigma, (r - s) / sigma), "B": ((s - r) / sigma, r / sigma)}
            rho = bound / mechanism.sigma
            self._log_z = log_gauss_mass_scalar(-rho, rho, 2.0 * rho)
        top = mechanism.max_finite_loss("A/B")
        centre, mu = 0.5 * self._mu**2, self._mu
        self._bracket = (max(-top, centre - 40.0 * mu), min(top, centre + 40.0 * mu))
        self._points = []

    def _lattice_parts(self) -> tuple:
        return gaussian_law(self.mechanism, self._bound, self._log_z), []

    def _log_interval(self, lo, hi, width, side: str) -> np.ndarray:
        return log_gauss_mass(lo, hi, width) - self._log_z

    def _log_tail(self, bound: float, below: bool) -> float:
        return float(special.log_ndtr(bound if below else -bound)) - self._log_z

    def _moments(self) -> tuple[float, float]:
        mu = self._mu
        lo, hi = self._support["A"]
        if lo is None:
            return 0.5 * mu * mu, mu * mu
        assert hi is not None  # __init__ bounds the support on both sides or on neither
        low, high = float(lo), float(hi)
        peak = min(max(0.0, low), high)
        _, mean, variance = gl_moments(
            max(low, peak - 40.0), min(high, peak + 40.0), lambda y: -0.5 * y * y, 0.5
        )
        return 0.5 * mu * mu + mu * mean, mu * mu * variance

    def _zmax(self, largest: float, width: float) -> float:
        return (largest + width) / self._mu + 0.5 * self._mu

    def _rounding(self, largest: float, width: float, anchor: float) -> float:
        mu = self._mu
        return 16.0 * U * (self._zmax(largest, width) + mu + (abs(anchor) + width) / mu + 1.0)

    def _relative_error(self, largest: float, width: float, delta: float) -> float:
        # A translation by delta scales a normal mass by at most e^(delta z_max) (1.01 delta
        # z_max); the width's rounding (2u) changes it by 2u (1 + 2 z_max^2) at most, and
        # log_gauss_mass adds BASE_ERROR + 16 u z_max^2 (its test): both below
        # 2 delta (z_max + 1) >= 32 u (z_max + 1)^2.
        return 3.0 * delta * (self._zmax(largest, width) + 1.0) + BASE_ERROR


def gaussian_law(mechanism: Any, bound: float, log_norm: float) -> NormalPart:
    """The continuous part of the (truncated) Gaussian mechanism: ``q = 1`` (``L = l``),
    ``mu = s / sigma``, the A side; cut to ``[-r, r]`` the support is ``l`` in
    ``[mu (-r/sigma) + mu^2/2, mu (r - s)/sigma + mu^2/2]`` (exact rationals, rounded once),
    ``ln Z`` within ``BASE_ERROR + 16 u (rho + 1)^2``."""
    mu = mechanism.sensitivity / mechanism.sigma
    if math.isinf(bound):
        return NormalPart(
            SmoothLaw(mu, 1.0, (1.0, 0.0), 0.0, 0.0, (-math.inf, math.inf), 0.0), False
        )
    s, sigma, r = Fraction(mechanism.sensitivity), Fraction(mechanism.sigma), Fraction(bound)
    exact_mu = s / sigma
    ends = [exact_mu * (y / sigma) + exact_mu * exact_mu / 2 for y in (-r, r - s)]
    support = (float(ends[0]), float(ends[1]))
    error = 1.01 * U * max(abs(e) for e in support)
    rho = bound / mechanism.sigma
    norm_error = 256.0 * U + 16.0 * U * (rho + 1.0) ** 2
    return NormalPart(SmoothLaw(mu, 1.0, (1.0, 0.0), log_norm, norm_error, support, error), True)
