"""The Gaussian pair that dominates every uncut Gaussian release, in closed form (issue 26).

A release whose noise is Gaussian and uncut is a post-processing of the Gaussian mechanism
that releases the differing record's own contribution with the same noise: with shift
``s`` (the clip norm, or the sensitivity) and noise ``N(0, (sigma s)^2)``, i.e. the pair
``N(mu, 1)`` against ``N(0, 1)`` with ``mu = 1/sigma`` (``sensitivity / sigma`` for the
Gaussian mechanism). The Poisson-subsampled Gaussian of rate ``q`` is obtained from it by
keeping the draw with probability ``q`` and otherwise drawing fresh noise, and adding the
other records' sum (the same under both inputs): both directions of its pair are
post-processings of the Gaussian pair, so their hockey-stick divergences, delta(eps) at
every eps, are at most the Gaussian pair's (the data-processing inequality; paper,
Section 2; ``docs/theory/``). Independent releases compose into products, and the
product of Gaussian pairs ``N(mu_i, 1)`` is, through the sufficient statistic
``sum_i mu_i y_i``, the pair ``N(mu, 1)`` against ``N(0, 1)`` with
``mu^2 = sum_i n_i mu_i^2`` (Dong, Roth and Su 2019, mu-GDP), whose delta is

    delta_mu(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)

(Balle and Wang 2018, analytic Gaussian mechanism). It is exact for ``q = 1`` and loose
for small ``q``; :class:`~accountant.buckets.engine.PrivacyBuckets` takes it as one more
certified upper bound on ADP (both directions) whenever every component declares its
``dominating_gaussian_mu``, so that rates near 1 are as tight as the closed form.

``Phi`` is evaluated as ``exp(log_ndtr)``, whose relative error is declared as the normal
mass routines' ``256 u + 16 u z^2`` (:data:`PHI_ERROR_ULPS`, ``z`` the argument); the
exponentials and the final difference are rounded outwards
(:mod:`accountant.numerics.directed`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from accountant.numerics.directed import down, exp_down, exp_up, sum_down, sum_up, up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import special

__all__ = [
    "PHI_ERROR_ULPS",
    "ComposedGaussian",
    "GaussianDomination",
    "composed_gaussian",
    "gaussian_delta_bounds",
    "gaussian_epsilon_bounds",
]

_U = UNIT_ROUNDOFF
#: Declared relative error of ``Phi(z)`` as ``exp(log_ndtr(z))``: ``(a + b z^2) u``.
PHI_ERROR_ULPS = (256.0, 16.0)
#: Bisection of :func:`gaussian_epsilon_upper` stops at this relative width.
EPSILON_TOLERANCE = 1e-14


@attrs.frozen
class GaussianDomination:
    """What a mechanism declares (its ``gaussian_domination`` property): each release is
    a post-processing of the Gaussian pair ``N(mu, 1)`` against ``N(0, 1)`` (module note),
    ``mu`` the nearest float to its true value (a quotient such as ``1 / sigma``);
    ``exact``: it *is* that pair (both directions), e.g. the uncut Gaussian mechanism or
    a subsampled one at rate 1, so the closed form also bounds delta from below."""

    mu: float
    exact: bool = False


@attrs.frozen
class ComposedGaussian:
    """The Gaussian pair of a composition: its ``mu`` lies in ``[mu_low, mu_high]``
    (declared values moved an ulp outwards, then the sum and the root rounded outwards);
    ``exact`` when the composition is that pair, not only dominated by it."""

    mu_low: float
    mu_high: float
    exact: bool

    def delta_bounds(self, eps: float) -> tuple[float, float]:
        """Certified ``(lower, upper)`` on the composition's delta at ``eps``: the upper from
        ``mu_high`` (delta grows with ``mu``), the lower from ``mu_low`` when ``exact``,
        else 0."""
        upper = gaussian_delta_bounds(self.mu_high, eps)[1]
        lower = gaussian_delta_bounds(self.mu_low, eps)[0] if self.exact else 0.0
        return lower, upper


def composed_gaussian(components: Iterable[Any]) -> ComposedGaussian | None:
    """The Gaussian pair dominating the composition of ``components`` (each with
    ``mechanism`` and ``times``): ``mu^2 = sum_i n_i mu_i^2``, exact when every component
    is. ``None`` unless every mechanism declares a ``gaussian_domination`` with a finite
    positive ``mu``, or there is no component."""
    low, high, exact, seen = 0.0, 0.0, True, False
    for component in components:
        declared = getattr(component.mechanism, "gaussian_domination", None)
        if declared is None or not (math.isfinite(declared.mu) and declared.mu > 0.0):
            return None
        mu_low, mu_high = down(declared.mu, 1), up(declared.mu, 1)
        low = sum_down(low, down(component.times * down(mu_low * mu_low)))
        high = sum_up(high, up(component.times * up(mu_high * mu_high)))
        exact = exact and declared.exact
        seen = True
    if not seen or not math.isfinite(high):
        return None
    return ComposedGaussian(down(math.sqrt(low)), up(math.sqrt(high)), exact)


def _log_phi_bounds(z: float) -> tuple[float, float]:
    """``(lower, upper)`` on ``ln Phi(z)`` (module note)."""
    log_phi = float(special.log_ndtr(z))
    error = (PHI_ERROR_ULPS[0] + PHI_ERROR_ULPS[1] * z * z) * _U
    if not error < 0.5:
        return -math.inf, 0.0
    return down(log_phi + down(math.log1p(-error))), min(0.0, up(log_phi + up(math.log1p(error))))


def _difference_up(log_a: float, log_b: float) -> float:
    """A float ``>= e^log_a - e^log_b`` (0 if ``log_b >= log_a``), computed as ``e^log_a
    (1 - e^(log_b - log_a))`` so that nothing overflows."""
    gap = sum_down(log_b, -log_a) if math.isfinite(log_b) else -math.inf
    if gap >= 0.0 or log_a == -math.inf:
        return 0.0
    return min(1.0, up(exp_up(log_a) * up(-math.expm1(gap))))


def _difference_down(log_a: float, log_b: float) -> float:
    """A float ``<= e^log_a - e^log_b`` and ``>= 0`` (as :func:`_difference_up`)."""
    gap = sum_up(log_b, -log_a) if math.isfinite(log_b) else -math.inf
    if gap >= 0.0 or log_a == -math.inf:
        return 0.0
    return max(0.0, down(exp_down(log_a) * down(-math.expm1(gap))))


def gaussian_delta_bounds(mu: float, eps: float) -> tuple[float, float]:
    """Certified ``(lower, upper)`` on ``delta_mu(eps)`` (module note) for ``mu > 0``, ``eps
    >= 0``: ``Phi(a) - e^eps Phi(b)`` with ``a = mu/2 - eps/mu``, ``b = -mu/2 - eps/mu``, in
    logs (``e^eps`` overflows long before delta vanishes), each term bounded on the side
    its sign asks; the arguments' own rounding is covered by moving them outwards."""
    ratio_low, ratio_high = down(eps / mu), up(eps / mu)
    half_low, half_high = down(0.5 * mu, 1), up(0.5 * mu, 1)
    a_low, a_high = sum_down(half_low, -ratio_high), sum_up(half_high, -ratio_low)
    b_low, b_high = sum_down(-half_high, -ratio_high), sum_up(-half_low, -ratio_low)
    log_a_low, log_a_high = _log_phi_bounds(a_low)[0], _log_phi_bounds(a_high)[1]
    log_b_low, log_b_high = _log_phi_bounds(b_low)[0], _log_phi_bounds(b_high)[1]
    upper = _difference_up(log_a_high, sum_down(eps, log_b_low))
    lower = _difference_down(log_a_low, sum_up(eps, log_b_high))
    return min(lower, upper), upper


def gaussian_epsilon_bounds(pair: ComposedGaussian, delta: float) -> tuple[float, float]:
    """Certified ``(lower, upper)`` on the composition's ``eps(delta)``, the smallest eps
    with delta(eps) <= ``delta`` (``0 < delta < 1``), by bisection on the certified bounds
    of :meth:`ComposedGaussian.delta_bounds` (delta is non-increasing in eps): the upper
    end is an eps at which the upper bound on delta is at most ``delta``, the lower end
    one at which the lower bound on delta exceeds it (0 unless ``exact``); ``inf`` as the
    upper end if no eps is found."""
    upper = _bisect(lambda e: pair.delta_bounds(e)[1] <= delta, max(1.0, pair.mu_high**2))
    if not pair.exact:
        return 0.0, upper
    # the largest eps whose delta certainly exceeds the target: below it, every eps too
    above = _bisect(lambda e: not pair.delta_bounds(e)[0] > delta, max(1.0, pair.mu_low**2))
    lower = _largest_below(lambda e: pair.delta_bounds(e)[0] > delta, above)
    return min(lower, upper), upper


def _bisect(done, start: float) -> float:
    """The end of a bisection for the smallest eps >= 0 with ``done(eps)`` (``done``
    monotone: false below, true above), a point where it holds; ``inf`` if none."""
    high = start
    for _ in range(64):
        if done(high):
            break
        high *= 2.0
    else:
        return math.inf
    low = 0.0
    if done(low):
        return 0.0
    while high - low > EPSILON_TOLERANCE * high:
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if done(middle):
            high = middle
        else:
            low = middle
    return high


def _largest_below(holds, end: float) -> float:
    """The largest eps below ``end`` found by bisection at which ``holds`` (true below some
    point, false from it on); 0 when it does not even hold at 0."""
    if not math.isfinite(end) or not holds(0.0):
        return 0.0
    low, high = 0.0, end
    while high - low > EPSILON_TOLERANCE * high:
        middle = 0.5 * (low + high)
        if middle <= low or middle >= high:
            break
        if holds(middle):
            low = middle
        else:
            high = middle
    return low
