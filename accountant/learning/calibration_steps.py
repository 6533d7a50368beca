"""Where to evaluate next when calibrating a noise multiplier: pure functions on numbers.

The calibration (:mod:`accountant.learning.calibration`) looks for the root of

    y(x) = ln delta(e^x) - ln delta_target,    x = ln sigma,

which is smooth and decreasing (more noise, less delta). These helpers never call an
accountant: they turn the points evaluated so far into a start (:func:`gdp_start`) and a
root estimate (:func:`estimate_root`). Nothing here is certified, and nothing needs to
be: a poor estimate costs evaluations, never soundness, because every sigma the
calibration returns or rejects is judged by certified bounds alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from accountant.numerics.lazy import special

__all__ = ["RootEstimate", "estimate_root", "gdp_log_delta", "gdp_start"]

#: Largest step in ``ln sigma`` taken outside a bracket (a factor of about 20).
MAX_LOG_STEP = 3.0
#: Slope ``dy/dx`` assumed when the points give none (it only sizes the first step).
DEFAULT_SLOPE = -10.0


def gdp_log_delta(epsilon: float, mu: float) -> float:
    """``ln delta`` of mu-GDP at ``epsilon`` (Dong, Roth, Su 2019, Corollary 2.13)::

        delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),

    in log space: ``ln Phi(a) + ln(1 - e^r)`` with ``r = eps + ln Phi(b) - ln Phi(a) < 0``
    (``-inf`` where the difference rounds to zero)."""
    log_a = float(special.log_ndtr(-epsilon / mu + mu / 2.0))
    log_b = float(special.log_ndtr(-epsilon / mu - mu / 2.0))
    r = epsilon + log_b - log_a
    if not r < 0.0:
        return -math.inf
    return log_a + math.log(-math.expm1(r))


def _gdp_mu(epsilon: float, log_target: float) -> float:
    """The ``mu`` at which mu-GDP's delta at ``epsilon`` is ``e^log_target`` (bisection
    on ``ln mu``; delta rises with ``mu``)."""
    low, high = math.log(1e-6), math.log(1e3)
    for _ in range(80):
        middle = 0.5 * (low + high)
        if gdp_log_delta(epsilon, math.exp(middle)) > log_target:
            high = middle
        else:
            low = middle
    return math.exp(0.5 * (low + high))


def _gdp_sigma(mu: float, sampling_rate: float, steps: int) -> float:
    """The noise multiplier that the central limit theorem of Bu, Dong, Long, Su (2020)
    maps to ``mu``: ``mu = q sqrt(n (e^(1/sigma^2) - 1))``; without subsampling
    (``q = 1``) the exact ``mu = sqrt(n) / sigma``."""
    if sampling_rate == 1.0:
        return math.sqrt(steps) / mu
    return 1.0 / math.sqrt(math.log1p((mu / sampling_rate) ** 2 / steps))


def gdp_start(epsilon: float, delta: float, sampling_rate: float, steps: int) -> RootEstimate:
    """A first guess of the noise multiplier, from the Gaussian-DP central limit theorem
    (no accountant query, microseconds), with the slope ``dy/dx`` of that approximation
    at the guess to size the first step. It ignores the cut and is optimistic for few
    steps; the calibration corrects it from certified evaluations."""
    log_target = math.log(delta)
    sigma = _gdp_sigma(_gdp_mu(epsilon, log_target), sampling_rate, steps)
    x = math.log(sigma)
    h = 1e-3
    mu_up = _mu_of(math.exp(x + h), sampling_rate, steps)
    mu_down = _mu_of(math.exp(x - h), sampling_rate, steps)
    slope = (gdp_log_delta(epsilon, mu_up) - gdp_log_delta(epsilon, mu_down)) / (2.0 * h)
    if not (math.isfinite(slope) and slope < 0.0):
        slope = DEFAULT_SLOPE
    return RootEstimate(x=x, slope=slope, bracket=None)


def _mu_of(sigma: float, sampling_rate: float, steps: int) -> float:
    if sampling_rate == 1.0:
        return math.sqrt(steps) / sigma
    return sampling_rate * math.sqrt(steps * math.expm1(1.0 / sigma**2))


@attrs.frozen
class RootEstimate:
    """Where ``y`` is estimated to cross 0 (``x``, in ``ln sigma``), the slope ``dy/dx``
    there (negative), and the closest evaluated pair ``(x with y > 0, x with y <= 0)``
    around it, if any (``bracket``)."""

    x: float
    slope: float
    bracket: tuple[float, float] | None


def estimate_root(
    points: Sequence[tuple[float, float]], default_slope: float = DEFAULT_SLOPE
) -> RootEstimate:
    """The next root estimate from ``points``, ``(x, y)`` in the order they were evaluated.

    Bracketed (some ``y > 0`` left of some ``y <= 0``): regula falsi on the innermost
    pair with the Illinois rule (the end kept ``k >= 2`` times in a row enters with its
    ``y`` divided by ``2^(k - 1)``), so the estimate converges superlinearly instead of
    creeping from one side. Not bracketed: a secant step from the point nearest the root
    through its neighbour (``default_slope`` if there is no usable neighbour), at most
    :data:`MAX_LOG_STEP` long, away from the evaluated points in the direction ``y``
    asks for.
    """
    if not points:
        raise ValueError("estimate_root needs at least one point")
    above = [(x, y) for x, y in points if y > 0.0]  # delta too large: sigma too small
    left = max(above, default=None)
    right = min(
        ((x, y) for x, y in points if y <= 0.0 and (left is None or x > left[0])), default=None
    )
    if left is not None and right is not None:
        return _illinois(points, left, right)
    if left is not None:  # every usable point has y > 0: go up
        near, neighbours = left, sorted(above, reverse=True)[1:2]
        direction = 1.0
    else:
        near = min(points)  # every point has y <= 0: go down
        neighbours = sorted(points)[1:2]
        direction = -1.0
    slope = default_slope
    if neighbours:
        (x1, y1), (x0, y0) = near, neighbours[0]
        secant = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
        if math.isfinite(secant) and secant < 0.0:
            slope = secant
    # a secant that fell short twice in a row (y curves away) is stretched
    step = -near[1] / slope * min(2.0 ** max(_same_side_run(points) - 2, 0), 8.0)
    step = direction * min(max(direction * step, 0.0), MAX_LOG_STEP)
    return RootEstimate(x=near[0] + step, slope=slope, bracket=None)


def _same_side_run(points: Sequence[tuple[float, float]]) -> int:
    """How many of the latest points lie on the same side of ``y = 0`` as the last."""
    side = points[-1][1] > 0.0
    run = 0
    for _, y in reversed(points):
        if (y > 0.0) != side:
            break
        run += 1
    return run


def _illinois(
    points: Sequence[tuple[float, float]], left: tuple[float, float], right: tuple[float, float]
) -> RootEstimate:
    (xa, ya), (xb, yb) = left, right
    slope = (yb - ya) / (xb - xa)
    kept = _same_side_run(points)  # the other end was kept this often
    side = points[-1][1] > 0.0
    if kept >= 2 and side:  # the right end was kept: halve its weight
        yb = yb / 2.0 ** (kept - 1)
    elif kept >= 2:
        ya = ya / 2.0 ** (kept - 1)
    x = (xa * yb - xb * ya) / (yb - ya)
    x = min(max(x, xa + 1e-3 * (xb - xa)), xb - 1e-3 * (xb - xa))
    if not math.isfinite(slope) or slope >= 0.0:
        slope = DEFAULT_SLOPE
    return RootEstimate(x=x, slope=slope, bracket=(xa, xb))
