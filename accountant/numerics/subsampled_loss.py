"""The privacy loss of the Poisson-subsampled Gaussian pair, and its tilted integrals.

In the standard-normal coordinate ``y`` of the noise under ``A`` (``y = -x/sigma``, clip
``C = 1``, ``mu = 1/sigma``) the Gaussian mechanism's loss is ``l = ln a(x)/a(x - 1) =
mu y + mu^2/2`` and the subsampled pair ``A = noise``, ``B = (1 - q) noise + q (noise + 1)``
has, where both have density, ``b/a = 1 - q + q e^(-l) = e^(f(l))``::

    f(l)      = ln(1 - q + q e^(-l)),           L_{A/B} = -f(l),   L_{B/A} = f(l),
    f'(l)     = -s(l),   s(l) = q e^(-l) / (1 - q + q e^(-l)) = expit(ln(q/(1-q)) - l),
    f^(-1)(v) = -ln(1 + expm1(v)/q)             (``l`` with ``f(l) = v``; ``v > ln(1-q)``).

``f`` is convex and decreasing (``0 < s < 1``), so ``L_{A/B}`` rises and ``L_{B/A}`` falls
with ``l``. Every log-moment is an integral of ``e^(v(y))`` with
``v(y) = -y^2/2 + c f(mu y + mu^2/2)`` (``c = -lambda`` for A/B, ``1 + lambda`` for B/A),
computed by :func:`tilted_integral` with a stated error.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import special
from accountant.numerics.quadrature import gauss_legendre

__all__ = ["TiltedIntegral", "inverse_loss", "loss_f", "tilt_share", "tilted_integral"]

U = UNIT_ROUNDOFF
_GL_NODES, _GL_WEIGHTS = gauss_legendre(24)
#: Beyond this distance past the stationary range the log-integrand falls at slope >= 40.
_REACH = 40.0
#: Relative quadrature tolerance (the adaptive loop stops below it).
_TOLERANCE = 1e-15
_MAX_ROUNDS = 60
#: No more panels than this (the stated error then carries what is left).
_MAX_PANELS = 1 << 12


#: Above this sampling rate the losses are computed in the logarithmic form of
#: :func:`loss_f` and :func:`inverse_loss` (``1 - q`` is exact: ``q`` is a float).
LOG_FORM_FROM = 0.5


def loss_f(ell: np.ndarray | float, q: float) -> np.ndarray:
    """``f(l) = ln(1 - q + q e^(-l))``: ``log1p(q expm1(-l))`` for ``l > -30``, else
    ``-l + ln q + log1p((1 - q) e^l / q)`` (no overflow). For ``q >`` :data:`LOG_FORM_FROM`,
    ``logaddexp(ln(1 - q), ln q - l)``: the first form loses ``1 / (1 - q)`` ulps where
    ``1 - q + q e^(-l)`` nears ``1 - q`` (``q = 1 - 1e-12``: an error of ``1e-4``), this one a
    few ulps of ``|ln(1 - q)| + |ln q| + |l|``."""
    ell = np.asarray(ell, dtype=np.float64)
    if q == 1.0:
        return -ell
    if q > LOG_FORM_FROM:
        return np.logaddexp(math.log1p(-q), math.log(q) - ell)
    safe = np.maximum(ell, -30.0)
    near = np.log1p(q * np.expm1(-safe))
    far = -ell + math.log(q) + np.log1p((1.0 - q) / q * np.exp(np.minimum(ell, -30.0)))
    return np.where(ell > -30.0, near, far)


def tilt_share(ell: np.ndarray | float, q: float) -> np.ndarray:
    """``s(l) = -f'(l) = q e^(-l) / (1 - q + q e^(-l))`` in ``(0, 1]``."""
    ell = np.asarray(ell, dtype=np.float64)
    if q == 1.0:
        return np.ones_like(ell)
    return special.expit(math.log(q) - math.log1p(-q) - ell)


def inverse_loss(loss_ab: np.ndarray, q: float) -> np.ndarray:
    """``l = h(L)`` with ``L_{A/B}(l) = -f(l) = L``: ``-log1p(expm1(-L)/q)`` for
    ``L >= -20``, ``L + ln q - log1p(-(1 - q) e^L)`` below (and everywhere for ``q >``
    :data:`LOG_FORM_FROM`); ``+inf`` for ``L >= -ln(1-q)`` (no continuous loss reaches it)."""
    loss_ab = np.asarray(loss_ab, dtype=np.float64)
    if q == 1.0:
        return loss_ab.copy()
    if q > LOG_FORM_FROM:  # the logarithmic form everywhere (see loss_f)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = (1.0 - q) * np.exp(loss_ab)
            return np.where(
                scaled < 1.0, loss_ab + math.log(q) - np.log1p(-np.minimum(scaled, 1.0)), np.inf
            )
    ell = np.maximum(loss_ab, -20.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.negative(ell, out=ell)
        np.expm1(ell, out=ell)
        ell /= q
        np.maximum(ell, -1.0, out=ell)  # -1 (e^-l = 0): beyond L_max, l = inf
        np.log1p(ell, out=ell)
        np.negative(ell, out=ell)
    far = np.flatnonzero(loss_ab < -20.0)
    if far.size:
        low = loss_ab[far]
        ell[far] = low + math.log(q) - np.log1p(-(1.0 - q) * np.exp(low))
    return ell


@attrs.frozen
class TiltedIntegral:
    """``ln`` of ``I = ∫ e^(v(y)) dy`` over the range asked, the mean of ``f`` under the
    weight ``e^v / I``, and a bound on the relative error of ``I`` (quadrature, cut
    tails, rounding of ``v``)."""

    log_value: float
    mean_f: float
    relative_error: float


class _Integrand:
    """``v(y) = -y^2/2 + c f(mu y + mu^2/2)`` and its first two derivatives."""

    def __init__(self, c: float, mu: float, q: float):
        self.c, self.mu, self.q = c, mu, q

    def ell(self, y):
        return self.mu * y + 0.5 * self.mu * self.mu

    def value(self, y):
        y = np.asarray(y, dtype=np.float64)
        f = loss_f(self.ell(y), self.q)
        return -0.5 * y * y + (self.c * f if self.c != 0.0 else 0.0), f

    def slope(self, y: float) -> float:
        return float(-y - self.c * self.mu * tilt_share(self.ell(y), self.q))

    def curvature(self, y: float) -> float:
        s = float(tilt_share(self.ell(y), self.q))
        return -1.0 + self.c * self.mu * self.mu * s * (1.0 - s)

    def inflections(self) -> list[float]:
        """Where ``v'' = 0``: ``s(1 - s) = 1/(c mu^2)`` (two points when ``c mu^2 > 4``)."""
        c, mu, q = self.c, self.mu, self.q
        if q == 1.0 or c * mu * mu <= 4.0:
            return []
        root = math.sqrt(1.0 - 4.0 / (c * mu * mu))
        points = []
        for s in (0.5 * (1.0 - root), 0.5 * (1.0 + root)):
            ell = math.log(q) - math.log1p(-q) + math.log((1.0 - s) / s)
            points.append(ell / mu - 0.5 * mu)
        return sorted(points)


def _peaks(v: _Integrand, lo: float, hi: float) -> list[float]:
    """Local maxima of ``v`` on ``[lo, hi]``: ``v'`` is monotone between the inflection
    points, so each decreasing stretch has at most one root of ``v'``."""
    from scipy.optimize import brentq  # (imported when needed: it costs 0.2 s)

    cuts = [lo] + [t for t in v.inflections() if lo < t < hi] + [hi]
    peaks = []
    for left, right in itertools.pairwise(cuts):
        if right <= left:
            continue
        if v.curvature(0.5 * (left + right)) > 0.0:
            continue  # v' rises here: the maxima are at the ends, already breakpoints
        d_left, d_right = v.slope(left), v.slope(right)
        if d_left > 0.0 > d_right:
            peaks.append(
                brentq(v.slope, left, right, xtol=1e-300, rtol=16.0 * UNIT_ROUNDOFF, maxiter=400)
            )
    return peaks


def _panels(v: _Integrand, points: list[float]) -> list[tuple[float, float]]:
    """Panels between consecutive ``points``, graded from both ends: the first is a
    quarter of the scale on which ``v`` changes by 1 there, each next one twice as wide."""
    panels = []
    for left, right in itertools.pairwise(points):
        if not right > left:
            continue
        middle = 0.5 * (left + right)
        for end, sign in ((left, 1.0), (right, -1.0)):
            scale = max(abs(v.slope(end)), math.sqrt(abs(v.curvature(end))), 1e-300)
            size = min(0.25 / scale, 0.5 * (right - left))
            here = end
            while True:
                nxt = here + sign * size
                if sign * (nxt - middle) >= 0.0 or size >= 0.5 * (right - left):
                    panels.append((min(here, middle), max(here, middle)))
                    break
                panels.append((min(here, nxt), max(here, nxt)))
                here, size = nxt, 2.0 * size
    # drop slivers a few ulps wide (their halves would be empty)
    return [p for p in panels if p[1] - p[0] > 8.0 * U * max(abs(p[0]), abs(p[1]), 1e-300)]


def _gl(v: _Integrand, lo: np.ndarray, hi: np.ndarray):
    """Per panel: ``ln`` of the 24-point Gauss-Legendre integral, node values and weights."""
    half = 0.5 * (hi - lo)
    y = (0.5 * (lo + hi))[:, None] + half[:, None] * _GL_NODES
    values, f = v.value(y)
    with np.errstate(divide="ignore"):
        log_terms = values + np.log(half[:, None] * _GL_WEIGHTS)
    return special.logsumexp(log_terms, axis=1), log_terms, y, f


def tilted_integral(c: float, mu: float, q: float, lo: float, hi: float) -> TiltedIntegral:
    """``∫_lo^hi e^(v(y)) dy`` for ``v(y) = -y^2/2 + c f(mu y + mu^2/2)`` (``lo``, ``hi``
    may be infinite), by adaptive composite Gauss-Legendre in log space.

    Every stationary point of ``v`` lies between 0 and ``-c mu`` (``v' = -y - c mu s``,
    ``0 < s <= 1``); ``REACH = 40`` beyond that range ``|v'| >= 40`` and ``v`` is concave, so
    each cut tail is at most ``e^(v(edge))/40``. Breakpoints: the range ends, the inflection
    points and the peaks; panels graded from each breakpoint (:func:`_panels`). Each panel is
    integrated by 24 points and by 24 points on each half; panels whose difference is not
    negligible are halved until the total difference is below ``1e-15`` of the integral (or
    ``64 u`` times the size of ``v`` at the breakpoints, where rounding dominates; at most
    4096 panels).
    Stated error: the summed differences, the tail bounds, and ``16 u`` times the largest
    ``y^2/2 + |c f| + |c| mu |y|`` among the nodes that carry weight (the rounding of ``v``).
    """
    v = _Integrand(c, mu, q)
    reach = (min(0.0, -c * mu) - _REACH, max(0.0, -c * mu) + _REACH)
    a, b = max(lo, reach[0]), min(hi, reach[1])
    log_tails = []
    if a > lo:
        log_tails.append(float(v.value(a)[0]) - math.log(_REACH))
    if b < hi:
        log_tails.append(float(v.value(b)[0]) - math.log(_REACH))
    points = sorted({a, b, *[t for t in v.inflections() if a < t < b], *_peaks(v, a, b)})
    panels = np.array(_panels(v, points))
    lo_p, hi_p = panels[:, 0], panels[:, 1]
    coarse = _gl(v, lo_p, hi_p)[0]
    # below the rounding of v no halving helps: stop there (the stated error keeps it)
    y_p = np.array([p for p in points if math.isfinite(p)])
    size = 0.5 * y_p**2 + abs(c) * (np.abs(loss_f(v.ell(y_p), q)) + mu * np.abs(y_p))
    tolerance = max(_TOLERANCE, 64.0 * U * float(np.max(size, initial=0.0)))
    for _ in range(_MAX_ROUNDS):
        mid = 0.5 * (lo_p + hi_p)
        left, right = _gl(v, lo_p, mid), _gl(v, mid, hi_p)
        fine = np.logaddexp(left[0], right[0])
        top = float(np.max(fine))
        diff = np.abs(np.exp(fine - top) - np.exp(coarse - top))
        total = float(np.sum(np.exp(fine - top)))
        bad = diff > 0.1 * tolerance * total / max(1, fine.size)
        bad &= (mid > lo_p) & (mid < hi_p)
        done = float(np.sum(diff)) <= tolerance * total or fine.size >= _MAX_PANELS
        if done or not bad.any():
            break
        keep = ~bad
        lo_p = np.concatenate([lo_p[keep], lo_p[bad], mid[bad]])
        hi_p = np.concatenate([hi_p[keep], mid[bad], hi_p[bad]])
        coarse = np.concatenate([fine[keep], left[0][bad], right[0][bad]])
    log_terms = np.concatenate([left[1], right[1]], axis=1)
    nodes = np.concatenate([left[2], right[2]], axis=1)
    f_values = np.concatenate([left[3], right[3]], axis=1)
    log_value = top + math.log(total)
    weights = np.exp(log_terms - log_value)
    mean_f = float(np.sum(weights * f_values))
    carried = weights > 1e-30
    y_c, f_c = nodes[carried], f_values[carried]
    size = 0.5 * y_c**2 + abs(c) * (np.abs(f_c) + mu * np.abs(y_c))
    rounding = 16.0 * U * (float(np.max(size, initial=0.0)) + 4.0 + math.log2(weights.size))
    error = float(np.sum(diff)) / total + rounding
    if log_tails:
        error += float(np.exp(special.logsumexp(log_tails) - log_value))
    return TiltedIntegral(log_value, mean_f, error)
