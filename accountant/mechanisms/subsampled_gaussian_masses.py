"""Normal masses of many loss buckets of the subsampled Gaussian, with per-bucket error
bounds (for :mod:`accountant.mechanisms.subsampled_gaussian_release`).

A loss bucket maps to an interval of ``l`` (the Gaussian-mechanism loss, see
:mod:`accountant.numerics.subsampled_loss`) through ``l = h(L)``, and ``l`` to a standard-normal
coordinate ``y = l/mu + offset`` per side (``offset = -mu/2`` for the noise ``A``,
``+mu/2`` for the shifted noise). The masses are normal masses of ``y`` intervals.

Errors, per bucket (absolute, all sources):

* the edges: a float edge ``P`` is within ``dP`` of the exact real edge, and ``h`` is
  computed with rounding; :func:`edge_ell` bounds ``|l - h(P_exact)|`` by
  ``d = 2[dP e^(l - P)/q + 2u(2|1 - e^l| + |l| + 1)]`` (``h'(L) = e^(l - L)/q``);
* *translation model* (:func:`interior_pair`): the mass comes from the lower end and the
  width of the interval. A translation by ``d`` changes a normal mass by a factor within
  ``e^(+-(d z + d^2))`` (``z`` the largest ``|y|`` involved), a width off by ``eta`` by at
  most ``eta`` times the largest density near the upper end;
* *displacement model* (:func:`clipped_masses`): each end off by ``d`` moves the mass by
  at most ``d`` times the largest density within ``d`` of that end;
* the routines: the series of :func:`narrow_masses` (truncation bound below, ``u``-level
  rounding, ``exp`` of ``-m^2/2``) or :func:`~accountant.numerics.gaussian.log_gauss_mass`
  (``BASE_ERROR + 16 u z^2``, its tests).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from accountant.buckets.analytic_lattice import Atom, NormalPart, tail_cutoff
from accountant.buckets.lattice_quadrature import SmoothLaw
from accountant.mechanisms.subsampled_gaussian import LOG_NORMALISER_ERROR
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.gaussian import LOG_SQRT_2PI, log_gauss_mass, log_normal_between
from accountant.numerics.subsampled_loss import inverse_loss

__all__ = [
    "clipped_masses",
    "edge_ell",
    "interior_pair",
    "narrow_masses",
    "subsampled_law",
]

U = UNIT_ROUNDOFF
#: Relative error of ``log_gauss_mass`` beyond ``16 u z^2`` (as in ``accountant.buckets.analytic``).
BASE_ERROR = 256.0 * U
#: The series of :func:`narrow_masses` is used for ``w = sqrt(2) max(|m|, 1) h`` up to this.
SERIES_REACH = 0.5
_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_TERMS = math.log(2.0**-60)


def edge_ell(loss_ab: np.ndarray, d_loss: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """``(l, d)``: ``l = h(P)`` for float edges ``P`` (A/B losses) and a bound ``d`` on
    ``|l - h(P_exact)|`` when ``|P - P_exact| <= dP``; ``d = inf`` where ``l`` is infinite."""
    ell = inverse_loss(loss_ab, q)
    if q == 1.0:
        return ell, d_loss + 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        safe = np.minimum(ell, 700.0)
        sensitivity = np.exp(safe - loss_ab) / q
        rounding = 2.0 * U * (2.0 * np.abs(np.expm1(safe)) + np.abs(safe) + 1.0)
        d = 2.0 * (d_loss * sensitivity + rounding)
    far = np.flatnonzero(loss_ab < -20.0)
    if far.size:
        d[far] = 2.0 * (
            d_loss[far] * (1.0 + 1e-6) + 4.0 * U * (np.abs(loss_ab[far]) + abs(math.log(q)) + 1.0)
        )
    bad = ~np.isfinite(ell) | ~np.isfinite(d)
    if bad.any():
        d[bad] = math.inf
    return ell, d


def _series_terms(w_max: float) -> int:
    """The number ``J`` of even Hermite terms with ``2 e^w (J+1) w^(2J) / sqrt((2J)!) <=
    2^-60`` (see :func:`narrow_masses`)."""
    if w_max == 0.0:
        return 1
    for terms in range(1, 13):
        log_tail = math.log(2.0 * (terms + 1)) + w_max + 2 * terms * math.log(w_max)
        if log_tail - 0.5 * math.lgamma(2 * terms + 1.0) <= _LOG_TERMS:
            return terms
    return 13


#: The bulk of the buckets take two terms (``He_0, He_2``): enough up to this ``w``.
_BULK_REACH = 2.8e-5


def _series(m: np.ndarray, h: np.ndarray, terms: int) -> np.ndarray:
    """``Phi(m + h) - Phi(m - h)`` by the first ``max(terms, 2)`` even Hermite terms."""
    square, h2 = m * m, h * h
    total = square - 1.0
    total *= h2 / 6.0
    total += 1.0
    if terms > 2:
        previous, current = m * (square - 3.0), square * (square - 6.0) + 3.0  # He_3, He_4
        power = h2 * h2
        total += current * power / 120.0
        for j in range(3, terms):  # He_{2j-1}, He_{2j} from He_{2j-3}, He_{2j-2}
            odd = m * current - (2 * j - 2) * previous
            previous, current = odd, m * odd - (2 * j - 1) * current
            power = power * h2
            total += current * power / float(math.factorial(2 * j + 1))  # no int64 overflow
    total *= h
    total *= 2.0 / _SQRT_2PI
    square *= -0.5
    np.exp(square, out=square)
    total *= square
    return total


def narrow_masses(centre: np.ndarray, half: np.ndarray) -> np.ndarray:
    """``Phi(m + h) - Phi(m - h)`` elementwise, within a relative ``BASE_ERROR + 16 u z^2``
    (``z = |m| + h``).

    Where ``w = sqrt(2) max(|m|, 1) h <= SERIES_REACH``: ``phi(m) ∫_{-h}^{h} e^(-m t - t^2/2) dt``
    with ``e^(-m t - t^2/2) = sum_n He_n(m) (-t)^n / n!`` (Hermite generating function), so
    ``∫ = 2h sum_j He_2j(m) h^(2j) / (2j+1)!``. The terms ``n >= 2J`` are bounded by the
    coefficients of ``e^(|m| t + t^2/2)``, each at most ``w^n / sqrt(n!)`` (``k! 2^k >=
    sqrt((2k)!)``, ``i! (2k)! >= n! / 2^n``), ``n/2 + 1`` of them per ``n``; for ``w <= 1/2``
    they fall by half from term to term, and the integral is ``>= 2h e^(-w)``: dropping them
    costs a relative ``2 e^w (J+1) w^(2J) / sqrt((2J)!) <= 2^-60`` (``J = 2`` for the bulk,
    ``w <= 2.8e-5``). Rounding: ``64 u`` for the sum, ``2 u m^2`` for ``e^(-m^2/2)``.
    Elsewhere :func:`log_gauss_mass` (``BASE_ERROR + 16 u z^2``, its tests)."""
    m = np.asarray(centre, dtype=np.float64)
    h = np.asarray(half, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        w = _SQRT2 * np.maximum(np.abs(m), 1.0) * h
        mass = _series(m, h, 2)
        rest = np.flatnonzero(~(w <= _BULK_REACH) & np.isfinite(w))
    if rest.size:
        series = rest[w[rest] <= SERIES_REACH]
        if series.size:
            terms = _series_terms(float(np.max(w[series])))
            mass[series] = _series(m[series], h[series], terms)
        wide = rest[w[rest] > SERIES_REACH]
        if wide.size:
            mw, hw = m[wide], h[wide]
            mass[wide] = np.exp(log_gauss_mass(mw - hw, mw + hw, 2.0 * hw))
    return mass


def interior_pair(
    mu: float, ell_lo: np.ndarray, d_lo: np.ndarray, span: np.ndarray, eps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mass_A, mass_S, rel)``: the masses of ``y = l/mu -+ mu/2`` over
    ``[l_lo, l_lo + span]`` (``span`` with relative error ``eps``) and a bound on the
    relative error of both, by the translation model: with ``dy`` the error of the lower
    end, ``eta = eps * width`` that of the width and ``z`` the largest ``|y|`` involved (either
    side), ``rel = rho + spread + (eps + 4u) F (1 + spread)`` with ``F`` the sliver's density
    times the width over the mass (``e^(2 z (h + dy + eta))`` bounds it; where that exceeds 2,
    the ratio itself is taken, with the mass's error), ``spread =
    e^(2(dy z + dy^2)) - 1``, ``rho = BASE_ERROR + 16 u z^2``, all times ``1 + 2 rho + 1e-3``."""
    half = span / (2.0 * mu)
    centre = ell_lo / mu + (half - 0.5 * mu)
    mass_a = narrow_masses(centre, half)
    mass_s = narrow_masses(centre + mu, half)
    with np.errstate(invalid="ignore", over="ignore"):
        middle = np.abs(centre + 0.5 * mu)
        dy = d_lo / mu + 4.0 * U * (np.abs(ell_lo) / mu + 3.0 * mu + middle + half)
        slack = (eps + 4.0 * U) * (2.0 * half) + dy
        z = middle + (half + slack + 0.5 * mu)
        rho = BASE_ERROR + 16.0 * U * z * z
        spread = np.expm1(2.0 * dy * (z + dy))
        factor = np.exp(2.0 * z * (half + slack))
        wide = np.flatnonzero(factor > 2.0)
        if wide.size:  # the sliver's density against the interval's mass itself
            top = centre[wide] + half[wide] + np.array([[0.0], [mu]])
            log_sup = _log_density_near(top, slack[wide])
            log_mass = np.log(np.maximum(np.stack([mass_a[wide], mass_s[wide]]), 1e-300))
            ratio = np.max(np.exp(log_sup - log_mass), axis=0) * (2.0 * half[wide])
            factor[wide] = np.minimum(factor[wide], ratio * (1.0 + 4.0 * rho[wide]))
        sliver = (eps + 4.0 * U) * factor * (1.0 + spread)
        rel = (rho + spread + sliver) * (1.0 + 2.0 * rho + 1e-3)
    return mass_a, mass_s, rel


def _log_density_near(t: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """``ln`` of the largest standard normal density within ``radius`` of ``t``."""
    gap = np.maximum(np.abs(t) - radius, 0.0)
    gap = np.where(np.isfinite(gap), gap, math.inf)
    return -0.5 * gap * gap - LOG_SQRT_2PI


def clipped_masses(
    y_lo: np.ndarray, d_lo: np.ndarray, y_hi: np.ndarray, d_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(mass, error)`` of ``[y_lo, y_hi]`` whose ends are off by at most ``d_lo``, ``d_hi``
    (``0`` for exact ends, ends may be infinite), by the displacement model."""
    mass = np.exp(log_normal_between(y_lo, y_hi))
    reach = np.where(np.isfinite(y_lo), np.abs(y_lo), 0.0)
    reach = np.maximum(reach, np.where(np.isfinite(y_hi), np.abs(y_hi), 0.0))
    rho = BASE_ERROR + 16.0 * U * reach * reach
    error = mass * rho
    for end, d in ((y_lo, d_lo), (y_hi, d_hi)):
        moved = np.isfinite(end) & (d > 0.0)
        error[moved] += d[moved] * np.exp(_log_density_near(end[moved], d[moved]))
    return mass, error


def subsampled_law(mechanism: Any, numerator: tuple[float, float]) -> tuple:
    """``(part, atoms)`` of a subsampled truncated Gaussian whose numerator weighs
    the sides (A, shifted) by ``numerator``: support ``[-l*, l*]``
    (``l* = k/sigma - 1/(2 sigma^2)`` from exact rationals, rounded once), or up to
    :func:`tail_cutoff` uncut; the atom at ``L_max = -ln(1 - q)`` (``log1p``: 2 ulps) with the
    A-side weight."""
    g = mechanism.geometry
    mu, q = g.mu, g.q
    bounded = math.isfinite(g.cut)
    if bounded:
        sigma = Fraction(mechanism.sigma)
        star = float(Fraction(g.cut) / sigma - 1 / (2 * sigma * sigma))
        support = (-star, star)
        support_error = 1.01 * U * star
    else:
        support = (-math.inf, math.inf if q == 1.0 else tail_cutoff(mu))
        support_error = 0.0
    norm_error = LOG_NORMALISER_ERROR if g.log_norm != 0.0 else 0.0
    law = SmoothLaw(mu, q, numerator, g.log_norm, norm_error, support, support_error)
    atoms = []
    if q < 1.0 and g.log_atom > -math.inf:
        mass = numerator[0] * math.exp(g.log_atom)
        atoms.append(Atom(g.atom_loss, mass, g.atom_error + 2.0 * U, 2.0 * U * g.atom_loss))
    return NormalPart(law, bounded), atoms
