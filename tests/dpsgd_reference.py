"""Slow references for the subsampled truncated Gaussian, in mpmath at 40 digits:
distinguishing masses, the largest finite losses, log-moments, the exact delta of one
release and the exact masses of a loss interval. They follow the definitions (SPEC
section 1), not the library's formulas: densities on ``y = -x/sigma`` (clip 1), the pair
``A = noise``, ``B = (1 - q) noise + q (noise + 1)``, and the loss ``ln a/b`` where both
live."""

from __future__ import annotations

import mpmath as mp

from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian

DIGITS = 40


def parts(m: SubsampledTruncatedGaussian):
    """``(mu, q, k, Z, m0)``: ``Z`` the normaliser, ``m0`` the A-mass where only ``A``'s
    unshifted part lives besides the overlap (``[-r, 1 - r)`` and, clamped, the atoms)."""
    mp.mp.dps = DIGITS
    mu, q, k = 1 / mp.mpf(m.sigma), mp.mpf(m.sampling_rate), mp.mpf(m.cut)
    if mp.isinf(k):
        return mu, q, k, mp.mpf(1), mp.mpf(0)
    if m.truncation == "clamped":
        return mu, q, k, mp.mpf(1), mp.ncdf(mu - k) + mp.ncdf(-k)
    z = mp.ncdf(k) - mp.ncdf(-k)
    return mu, q, k, z, (mp.ncdf(mu - k) - mp.ncdf(-k)) / z


def _f(mu, q):
    """``ln(b/a)`` on the overlap as a function of ``y``."""
    return lambda y: mp.log(1 - q + q * mp.exp(-(mu * y + mu**2 / 2)))


def omega(m: SubsampledTruncatedGaussian, direction: str):
    """Mass of the outcomes only the numerator can produce."""
    mu, q, k, z, m0 = parts(m)
    if direction == "A/B":
        return m0 if q == 1 else mp.mpf(0)
    if mp.isinf(k):
        return mp.mpf(0)
    if m.truncation == "clamped":  # B-only: (r, 1 + r) and the atoms at 1 - r and 1 + r
        return q * (mp.ncdf(k) - mp.ncdf(k - mu) + 2 * mp.ncdf(-k))
    return q * (mp.ncdf(k) - mp.ncdf(k - mu)) / z


def sup_loss(m: SubsampledTruncatedGaussian, direction: str):
    """The largest finite loss (a supremum when there is no cut)."""
    mu, q, k, _, _ = parts(m)
    f = _f(mu, q)
    if direction == "A/B":
        return -mp.log(1 - q) if q < 1 else (mu * k - mu**2 / 2)
    return f(-k) if not mp.isinf(k) else mp.inf


def normal_mass(a, b):
    """``Phi(b) - Phi(a)`` without cancellation: by lower tails left of 0, upper right."""
    if b <= a:
        return mp.mpf(0)
    return mp.ncdf(b) - mp.ncdf(a) if a + b < 0 else mp.ncdf(-a) - mp.ncdf(-b)


def _support(k, mu):
    return (-k, k - mu) if not mp.isinf(k) else (-mp.inf, mp.inf)


def log_moment(m: SubsampledTruncatedGaussian, lam: float, direction: str):
    """``ln`` of the sum of ``A (A/B)^lambda`` over outcomes where both live."""
    mu, q, k, z, m0 = parts(m)
    lam = mp.mpf(lam)
    f = _f(mu, q)
    c = -lam if direction == "A/B" else 1 + lam
    lo, hi = _support(k, mu)
    peak = -c * mu  # the tilted mass sits between 0 and -c mu
    splits = (peak - 5, peak - 1, peak, peak + 1, peak + 5, -10, -3, 0, 3, 10)
    points = sorted({lo, hi} | {p for p in splits if lo < p < hi})
    total = mp.quad(lambda y: mp.npdf(y) * mp.exp(c * f(y)) / z, points)
    if q < 1:
        total += m0 * ((1 - q) ** (-lam) if direction == "A/B" else (1 - q) ** (1 + lam))
    return mp.log(total)


def exact_delta(m: SubsampledTruncatedGaussian, eps: float, direction: str):
    """``sum max(0, num - e^eps den)`` of one release (SPEC section 1)."""
    mu, q, k, z, m0 = parts(m)
    e = mp.e ** mp.mpf(eps)
    f = _f(mu, q)
    a = lambda y: mp.npdf(y) / z  # noqa: E731
    b = lambda y: ((1 - q) * mp.npdf(y) + q * mp.npdf(y + mu)) / z  # noqa: E731
    num, den, sign = (a, b, -1) if direction == "A/B" else (b, a, 1)
    loss = lambda y: sign * f(y)  # noqa: E731
    lo, hi = _support(k, mu)
    x0, x1 = max(lo, -60), min(hi, 60)
    rising = loss(x1) > loss(x0)
    if (loss(x0) - eps) * (loss(x1) - eps) < 0:  # the loss is monotone: bisect L = eps
        for _ in range(200):
            mid = (x0 + x1) / 2
            x0, x1 = (x0, mid) if (loss(mid) > eps) == rising else (mid, x1)
        cross = (x0 + x1) / 2
        interval = (cross, hi) if rising else (lo, cross)
    else:
        interval = (lo, hi) if loss(x0) > eps else None
    total = omega(m, direction)
    if interval is not None:
        a0, a1 = interval
        points = [a0] + [p for p in (-10, -5, -2, 0, 2, 5, 10) if a0 < p < a1] + [a1]
        total += mp.quad(lambda y: num(y) - e * den(y), points)
    if q < 1:
        atom = (m0, (1 - q) * m0) if direction == "A/B" else ((1 - q) * m0, m0)
        total += max(0, atom[0] - e * atom[1])
    return total


def interval_masses(m: SubsampledTruncatedGaussian, direction: str, low, high):
    """Exact numerator and denominator masses of the finite losses in ``(low, high]``
    (``low``, ``high``: :class:`fractions.Fraction`)."""
    mu, q, k, z, m0 = parts(m)
    lo_ab = mp.mpf(low.numerator) / low.denominator
    hi_ab = mp.mpf(high.numerator) / high.denominator
    if direction == "B/A":
        lo_ab, hi_ab = -hi_ab, -lo_ab

    def ell(loss):  # the inverse of L_{A/B} = -ln(1 - q + q e^-l)
        inside = (mp.e ** (-loss) - 1 + q) / q
        return mp.inf if inside <= 0 else -mp.log(inside)

    lo_y, hi_y = _support(k, mu)
    a_lo, a_hi = max(ell(lo_ab) / mu - mu / 2, lo_y), min(ell(hi_ab) / mu - mu / 2, hi_y)
    mass_a = normal_mass(a_lo, a_hi)
    mass_s = normal_mass(a_lo + mu, a_hi + mu)
    mass_a, mass_b = mass_a / z, ((1 - q) * mass_a + q * mass_s) / z
    if q < 1 and lo_ab < -mp.log(1 - q) <= hi_ab:
        mass_a, mass_b = mass_a + m0, mass_b + (1 - q) * m0
    return (mass_a, mass_b) if direction == "A/B" else (mass_b, mass_a)
