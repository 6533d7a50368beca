"""Numerical helpers for the analytic mechanisms: log-space Gaussian masses, Mills
ratios, Gauss-Legendre quadrature on narrow intervals, integrals of exponentials.

Each is stable where the textbook formula cancels; see :mod:`accountant.mechanisms`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, erfc, erfcx

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)  # B_2..B_16
#: ``B_2n / (2n)!``, the coefficients of ``h(z) - 1/2 = sum_n c_n z^(2n-1)`` below.
_MEAN_SERIES = tuple(b / math.factorial(2 * n) for n, b in enumerate(_BERNOULLI, 1))


def _log1mexp(x: float) -> float:
    """``ln(1 - e^x)`` for ``x < 0`` (Mächler's two-branch rule)."""
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


def _mills(u: float) -> float:
    """Mills ratio ``M(u) = Q(u)/phi(u) = sqrt(pi/2) erfcx(u/sqrt 2)``."""
    return math.sqrt(math.pi / 2.0) * float(erfcx(u / _SQRT2))


def _mills_complement(u: float) -> float:
    """``1 - u M(u)`` for ``u >= 0`` (``~ 1/u^2``): directly for ``u < 4``, beyond by the
    Laplace continued fraction ``M = 1/(u + F)``, ``F = 1/(u + 2/(u + 3/(u + ...)))``,
    so that ``1 - u M = F/(u + F)`` carries no cancellation (40 terms: < 1e-15)."""
    if u < 4.0:
        return 1.0 - u * _mills(u)
    tail = 0.0
    for j in range(40, 1, -1):
        tail = j / (u + tail)
    f = 1.0 / (u + tail)
    return f / (u + f)


def _log_upper_gauss_scaled(lo: float, hi: float, width: float) -> float:
    """``ln[(Phi(hi) - Phi(lo)) e^(lo^2/2)]`` for ``0 <= lo < hi = lo + width``.

    Uses upper tails ``Q(u) e^(u^2/2) = erfcx(u/sqrt 2)/2``, so nothing underflows and
    the quadratic ``lo^2/2`` is left to the caller to cancel analytically.
    """
    log_lo = math.log(float(erfcx(lo / _SQRT2)))
    log_hi = math.log(float(erfcx(hi / _SQRT2)))
    return log_lo - math.log(2.0) + _log1mexp(log_hi - log_lo - 0.5 * width * (lo + hi))


def _narrow_gauss_integrals(centre: float, half: float) -> tuple[float, float] | None:
    """``(∫ e^(-m tau - tau^2/2), -∫ tau e^(-m tau - tau^2/2))`` over ``tau in [-h, h]``, i.e.
    ``2∫_0^h cosh(m tau) e^(-tau^2/2)`` and ``2∫_0^h tau sinh(m tau) e^(-tau^2/2)`` (no
    cancellation), by 24-point Gauss-Legendre; ``None`` unless ``h <= 1``, ``|m| h <= 2``
    (smooth integrands). Then ``Phi(m + h) - Phi(m - h) = phi(m)`` times the first."""
    if half > 1.0 or abs(centre) * half > 2.0:
        return None
    tau = half * (_GL_NODES + 1.0) / 2.0
    bell = half * _GL_WEIGHTS * np.exp(-0.5 * tau * tau)
    return (
        float(np.dot(bell, np.cosh(centre * tau))),
        float(np.dot(bell, tau * np.sinh(centre * tau))),
    )


def _log_gauss_mass(lo: float, hi: float, width: float) -> float:
    """``ln(Phi(hi) - Phi(lo))`` for ``lo < hi = lo + width``, stable for any arguments:
    quadrature for narrow intervals, else upper tails right of 0, lower tails left of 0,
    ``erf``/``erfc`` across 0."""
    centre = 0.5 * (lo + hi)
    narrow = _narrow_gauss_integrals(centre, 0.5 * width)
    if narrow is not None:
        return -0.5 * centre * centre - _LOG_SQRT_2PI + math.log(narrow[0])
    if lo >= 0.0:
        return _log_upper_gauss_scaled(lo, hi, width) - 0.5 * lo * lo
    if hi <= 0.0:
        return _log_upper_gauss_scaled(-hi, -lo, width) - 0.5 * hi * hi
    tails = 0.5 * (float(erfc(-lo / _SQRT2)) + float(erfc(hi / _SQRT2)))
    if tails < 0.5:
        return math.log1p(-tails)
    return math.log(0.5 * (float(erf(hi / _SQRT2)) + float(erf(-lo / _SQRT2))))


def _log_exp_integral(alpha: float, beta: float, lo: float, hi: float) -> float:
    """``ln ∫_lo^hi e^(alpha x + beta) dx`` for ``lo < hi``, stable for any ``alpha``.

    ``= beta + alpha*edge + ln(width * (1 - e^-z)/z)`` with ``z = |alpha| width`` and
    ``edge`` the end where the integrand is largest; ``(1 - e^-z)/z`` by ``expm1``,
    or its series for tiny ``z`` (including ``alpha = 0``).
    """
    width = hi - lo
    z = abs(alpha) * width
    base = beta + alpha * (hi if alpha > 0.0 else lo) + math.log(width)
    if z < 1e-8:
        return base + math.log1p(-z / 2.0 + z * z / 6.0)
    return base + math.log(-math.expm1(-z) / z)


def _exp_mean_offset(z: float) -> float:
    """``h(z) - 1/2`` with ``h(z) = 1/(1 - e^-z) - 1/z`` the mean of ``t`` under density
    ``∝ e^(z t)`` on ``[0, 1]``; by its Bernoulli series for ``|z| < 1/2`` (no cancellation)."""
    if abs(z) < 0.5:
        return z * math.fsum(c * z ** (2 * k) for k, c in enumerate(_MEAN_SERIES))
    if z > 0.0:
        return 1.0 / -math.expm1(-z) - 1.0 / z - 0.5
    return math.exp(z) / math.expm1(z) - 1.0 / z - 0.5
