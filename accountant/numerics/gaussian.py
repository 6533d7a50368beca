"""Gaussian numerics shared by the analytic mechanisms and their releases: log-space normal
masses of an interval (one float, or many intervals at once), Mills ratios, Gauss-Legendre
quadrature on narrow intervals and of densities, integrals of exponentials.

Every routine is stable where the textbook formula cancels: every branch keeps a small
relative error for intervals of any width and position, including masses far below the
float range of ``Phi`` itself (``ln`` down to ``-1e5``). :func:`log_gauss_mass` is the
array form of :func:`log_gauss_mass_scalar` (same branches, same reasoning). See
:mod:`accountant.mechanisms` and :mod:`accountant.buckets.analytic_release`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from accountant.numerics.lazy import special
from accountant.numerics.quadrature import gauss_legendre

__all__ = [
    "LOG_SQRT_2PI",
    "exp_mean_offset",
    "gl_moments",
    "log1mexp",
    "log1mexp_scalar",
    "log_exp_integral",
    "log_gauss_mass",
    "log_gauss_mass_scalar",
    "log_normal_between",
    "log_normal_between_scalar",
    "log_upper_gauss_scaled",
    "logsumexp_scalar",
    "mills",
    "mills_complement",
    "narrow_gauss_integrals",
    "normal_mass_between",
]

_SQRT2 = math.sqrt(2.0)
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_GL_NODES, _GL_WEIGHTS = gauss_legendre(24)

# -- one float ---------------------------------------------------------------------------

_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)  # B_2..B_16
#: ``B_2n / (2n)!``, the coefficients of ``h(z) - 1/2 = sum_n c_n z^(2n-1)`` below.
_MEAN_SERIES = tuple(b / math.factorial(2 * n) for n, b in enumerate(_BERNOULLI, 1))


def log1mexp_scalar(x: float) -> float:
    """``ln(1 - e^x)`` for ``x < 0`` (Mächler's two-branch rule)."""
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def logsumexp_scalar(values: list[float]) -> float:
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


def mills(u: float) -> float:
    """Mills ratio ``M(u) = Q(u)/phi(u) = sqrt(pi/2) erfcx(u/sqrt 2)``."""
    return math.sqrt(math.pi / 2.0) * float(special.erfcx(u / _SQRT2))


def mills_complement(u: float) -> float:
    """``1 - u M(u)`` for ``u >= 0`` (``~ 1/u^2``): directly for ``u < 4``, beyond by the
    Laplace continued fraction ``M = 1/(u + F)``, ``F = 1/(u + 2/(u + 3/(u + ...)))``,
    so that ``1 - u M = F/(u + F)`` carries no cancellation (40 terms: < 1e-15)."""
    if u < 4.0:
        return 1.0 - u * mills(u)
    tail = 0.0
    for j in range(40, 1, -1):
        tail = j / (u + tail)
    f = 1.0 / (u + tail)
    return f / (u + f)


def log_upper_gauss_scaled(lo: float, hi: float, width: float) -> float:
    """``ln[(Phi(hi) - Phi(lo)) e^(lo^2/2)]`` for ``0 <= lo < hi = lo + width``.

    Uses upper tails ``Q(u) e^(u^2/2) = erfcx(u/sqrt 2)/2``, so nothing underflows and
    the quadratic ``lo^2/2`` is left to the caller to cancel analytically.
    """
    log_lo = math.log(float(special.erfcx(lo / _SQRT2)))
    log_hi = math.log(float(special.erfcx(hi / _SQRT2)))
    return log_lo - math.log(2.0) + log1mexp_scalar(log_hi - log_lo - 0.5 * width * (lo + hi))


def narrow_gauss_integrals(centre: float, half: float) -> tuple[float, float] | None:
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


#: Intervals narrower than this hold ``width phi(centre)`` to rounding (and the quadrature's
#: products would underflow).
_POINT_WIDTH = 1e-150


def log_gauss_mass_scalar(lo: float, hi: float, width: float) -> float:
    """``ln(Phi(hi) - Phi(lo))`` for ``lo < hi = lo + width``, stable for any arguments:
    quadrature for narrow intervals, else upper tails right of 0, lower tails left of 0,
    ``erf``/``erfc`` across 0."""
    centre = 0.5 * (lo + hi)
    if width < _POINT_WIDTH:  # 2h phi(m) (1 + O(h^2 m^2)): exact in floats
        return math.log(width) - 0.5 * centre * centre - LOG_SQRT_2PI
    narrow = narrow_gauss_integrals(centre, 0.5 * width)
    if narrow is not None:
        return -0.5 * centre * centre - LOG_SQRT_2PI + math.log(narrow[0])
    if lo >= 0.0:
        return log_upper_gauss_scaled(lo, hi, width) - 0.5 * lo * lo
    if hi <= 0.0:
        return log_upper_gauss_scaled(-hi, -lo, width) - 0.5 * hi * hi
    tails = 0.5 * (float(special.erfc(-lo / _SQRT2)) + float(special.erfc(hi / _SQRT2)))
    if tails < 0.5:
        return math.log1p(-tails)
    return math.log(0.5 * (float(special.erf(hi / _SQRT2)) + float(special.erf(-lo / _SQRT2))))


def log_exp_integral(alpha: float, beta: float, lo: float, hi: float) -> float:
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


def exp_mean_offset(z: float) -> float:
    """``h(z) - 1/2`` with ``h(z) = 1/(1 - e^-z) - 1/z`` the mean of ``t`` under density
    ``∝ e^(z t)`` on ``[0, 1]``; by its Bernoulli series for ``|z| < 1/2`` (no cancellation)."""
    if abs(z) < 0.5:
        return z * math.fsum(c * z ** (2 * k) for k, c in enumerate(_MEAN_SERIES))
    if z > 0.0:
        return 1.0 / -math.expm1(-z) - 1.0 / z - 0.5
    return math.exp(z) / math.expm1(z) - 1.0 / z - 0.5


# -- many intervals at once ---------------------------------------------------------------

#: Rows per block of the quadrature branch (bounds the temporary (rows, 24) arrays).
_BLOCK = 1 << 15


def log1mexp(x: np.ndarray) -> np.ndarray:
    """``ln(1 - e^x)`` for ``x < 0`` elementwise (Mächler's two-branch rule)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    near = x > -math.log(2.0)
    out[near] = np.log(-np.expm1(x[near]))
    out[~near] = np.log1p(-np.exp(x[~near]))
    return out


def _log_narrow(centre: np.ndarray, half: np.ndarray) -> np.ndarray:
    """``ln(Phi(m + h) - Phi(m - h))`` for ``h <= 1``, ``|m| h <= 2``: ``phi(m)`` times
    ``2∫_0^h cosh(m tau) e^(-tau^2/2) dtau`` (positive integrand, no cancellation) by
    24-point Gauss-Legendre, exact to rounding for these entire, slowly varying integrands."""
    out = np.empty(centre.size)
    for start in range(0, centre.size, _BLOCK):
        m = centre[start : start + _BLOCK, None]
        h = half[start : start + _BLOCK, None]
        tau = h * (_GL_NODES + 1.0) / 2.0
        integral = np.sum(h * _GL_WEIGHTS * np.exp(-0.5 * tau * tau) * np.cosh(m * tau), axis=1)
        out[start : start + _BLOCK] = -0.5 * m[:, 0] ** 2 - LOG_SQRT_2PI + np.log(integral)
    return out


def _log_upper(lo: np.ndarray, hi: np.ndarray, width: np.ndarray) -> np.ndarray:
    """``ln(Phi(hi) - Phi(lo))`` for ``0 <= lo < hi`` by scaled upper tails
    ``Q(u) = erfcx(u/sqrt 2) e^(-u^2/2) / 2``: ``Q(hi)/Q(lo)`` has the exponent
    ``-(hi^2 - lo^2)/2 = -width (lo + hi)/2``, so nothing underflows."""
    log_lo = np.log(special.erfcx(lo / _SQRT2))
    log_hi = np.log(special.erfcx(hi / _SQRT2))
    ratio = log_hi - log_lo - 0.5 * width * (lo + hi)
    return log_lo - math.log(2.0) - 0.5 * lo * lo + log1mexp(ratio)


def _log_across(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``ln(Phi(hi) - Phi(lo))`` for ``lo < 0 < hi``: ``1 - tails`` by ``log1p`` while the
    tails are below 1/2, else as a sum of two positive ``erf`` terms."""
    tails = 0.5 * (special.erfc(-lo / _SQRT2) + special.erfc(hi / _SQRT2))
    out = np.empty_like(tails)
    small = tails < 0.5
    out[small] = np.log1p(-tails[small])
    big = ~small
    out[big] = np.log(0.5 * (special.erf(hi[big] / _SQRT2) + special.erf(-lo[big] / _SQRT2)))
    return out


def log_gauss_mass(lo: np.ndarray, hi: np.ndarray, width: np.ndarray) -> np.ndarray:
    """``ln(Phi(hi) - Phi(lo))`` elementwise for finite ``lo < hi``, ``width = hi - lo``
    (passed separately, so narrow intervals keep their width to full relative precision).

    Intervals are reflected to have a centre ``>= 0`` (``Phi(b) - Phi(a) = Phi(-a) - Phi(-b)``),
    then: quadrature when narrow, upper tails when right of 0, ``erf``/``erfc`` across 0.
    """
    lo, hi, width = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(lo, hi, width))
    flip = lo + hi < 0.0
    a = np.where(flip, -hi, lo).ravel()
    b = np.where(flip, -lo, hi).ravel()
    w = width.ravel()
    centre = 0.5 * (a + b)
    half = 0.5 * w
    out = np.empty(a.size)
    point = w < _POINT_WIDTH  # w phi(m) (1 + O(w^2 m^2)): exact in floats
    out[point] = np.log(w[point]) - 0.5 * centre[point] ** 2 - LOG_SQRT_2PI
    narrow = ~point & (half <= 1.0) & (centre * half <= 2.0)
    out[narrow] = _log_narrow(centre[narrow], half[narrow])
    upper = ~point & ~narrow & (a >= 0.0)
    out[upper] = _log_upper(a[upper], b[upper], w[upper])
    across = ~point & ~narrow & ~upper
    out[across] = _log_across(a[across], b[across])
    return out.reshape(lo.shape)


def gl_moments(
    lo: float, hi: float, log_density: Callable[[np.ndarray], np.ndarray], piece: float
) -> tuple[float, float, float]:
    """``(mass, mean, variance)`` of ``e^log_density`` on ``[lo, hi]`` by 24-point
    Gauss-Legendre on pieces no longer than ``piece`` (the scale on which the density
    varies by a bounded factor), so each piece is integrated to rounding."""
    if not hi > lo:
        return 0.0, 0.0, 0.0
    pieces = max(1, math.ceil((hi - lo) / piece))
    step = (hi - lo) / pieces
    starts = lo + step * np.arange(pieces)
    x = (starts[:, None] + step * (_GL_NODES + 1.0) / 2.0).ravel()
    weights = np.tile(0.5 * step * _GL_WEIGHTS, pieces) * np.exp(log_density(x))
    mass = float(np.sum(weights))
    if mass == 0.0:
        return 0.0, 0.0, 0.0
    mean = float(np.dot(weights, x)) / mass
    return mass, mean, float(np.dot(weights, (x - mean) ** 2)) / mass


def log_normal_between(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``ln(Phi(hi) - Phi(lo))`` for ``lo <= hi`` (either may be infinite; ``-inf`` if
    ``hi <= lo``)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    out = np.full(lo.shape, -math.inf)
    upper = np.isinf(hi) & (hi > 0) & np.isfinite(lo)
    lower = np.isinf(lo) & (lo < 0) & np.isfinite(hi)
    both = np.isinf(lo) & np.isinf(hi) & (lo < 0) & (hi > 0)
    finite = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    out[upper] = special.log_ndtr(-lo[upper])
    out[lower] = special.log_ndtr(hi[lower])
    out[both] = 0.0
    if finite.any():
        out[finite] = log_gauss_mass(lo[finite], hi[finite], hi[finite] - lo[finite])
    return out


def log_normal_between_scalar(lo: float, hi: float) -> float:
    """:func:`log_normal_between` of two floats, without building arrays (the same
    routines: ``log_ndtr`` for a half-line, :func:`log_gauss_mass_scalar` for an
    interval)."""
    if not hi > lo:
        return -math.inf
    if math.isinf(hi):
        return 0.0 if math.isinf(lo) else float(special.log_ndtr(-lo))
    if math.isinf(lo):
        return float(special.log_ndtr(hi))
    return log_gauss_mass_scalar(lo, hi, hi - lo)


def normal_mass_between(lo: float, hi: float) -> float:
    """``Phi(hi) - Phi(lo)`` for scalars by :func:`log_normal_between_scalar`; 0 if
    ``hi <= lo``."""
    if not hi > lo:
        return 0.0
    return math.exp(log_normal_between_scalar(lo, hi))
