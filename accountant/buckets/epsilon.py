"""Certified bounds on the smallest eps with delta(eps) <= target (SPEC section 2).

``upper``: an eps whose certified upper delta is <= target (the smallest one, to the
bisection's tolerance); every larger eps is then certified too, because the true delta is
non-increasing in eps. ``lower``: the largest eps the bisection found whose certified
lower delta still exceeds the target (or 0): the certified lower delta is
non-increasing, so at it and at every smaller eps the true delta exceeds the target and
no such eps can be certified by anyone. The searches interpolate ``ln delta`` (regula falsi
with safeguards, :func:`_crossing`): a few evaluations rather than forty bisections.

Both searches may be confined to an eps bracket already certified (``within``, e.g. from
a coarser bucket width): the smallest eps of any certified bound lies inside it or the
bound adds nothing. A search stops when its range is below ``tolerance`` times its upper
end (and at most 4 ulp wide with ``tolerance = 0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from accountant.buckets.bounds import adp_interval, pdp_interval
from accountant.buckets.bucketed import BucketedPLD
from accountant.errors import InfeasibleTargetError

__all__ = ["epsilon_interval"]


def _crossing(
    value: Callable[[float], float],
    target: float,
    low: float,
    high: float,
    tolerance: float,
) -> tuple[float, float]:
    """``(last, first)`` with ``value(last) > target >= value(first)`` and ``first - last``
    at most ``tolerance * first`` (or a few ulp), assuming ``value(low) > target >=
    value(high)``. Each step evaluates where the line through ``ln value`` at the two ends
    meets ``ln target`` (regula falsi: delta is close to log-linear in eps), kept at least
    half the final width inside the bracket so that a good guess closes it on the next
    step; a bisection whenever two steps in a row failed to halve the bracket. Whatever the
    shape of ``value``, the pair returned satisfies the two inequalities (what soundness
    needs); the guesses only decide how fast."""
    log_target = math.log(target)

    def excess(v: float) -> float:
        return math.log(v) - log_target if v > 0.0 else -math.inf

    g_low, g_high = excess(value(low)), excess(value(high))
    slow = 0
    while True:
        span = high - low
        close = max(4.0 * math.ulp(high), tolerance * high)
        if span <= close:
            return low, high
        if slow < 2 and math.isfinite(g_low) and math.isfinite(g_high) and g_low > g_high:
            guess = high - g_high * span / (g_high - g_low)
            middle = min(max(guess, low + 0.5 * close), high - 0.5 * close)
        else:
            middle = 0.5 * (low + high)
        v = value(middle)
        if v <= target:
            high, g_high = middle, excess(v)
        else:
            low, g_low = middle, excess(v)
        slow = slow + 1 if high - low > 0.5 * span else 0


def epsilon_interval(
    pld: BucketedPLD,
    target: float,
    kind: str,
    within: tuple[float, float] | None = None,
    tolerance: float = 0.0,
) -> tuple[float, float]:
    """``(lower, upper)`` bounds on the smallest eps with delta(eps) <= ``target``; with
    ``within``, a certified ``(lower, upper)`` to search in (and to fall back on)."""

    edges = pld.edges()
    high_edges = edges[1]

    known: dict[float, tuple[float, float]] = {}

    def interval(eps: float) -> tuple[float, float]:
        if eps not in known:
            if kind == "ADP":
                low, high, _ = adp_interval(pld, eps, edges)
                known[eps] = (low, high)
            else:
                known[eps] = pdp_interval(pld, eps, edges)
        return known[eps]

    def upper(eps: float) -> float:
        return interval(eps)[1]

    def lower(eps: float) -> float:
        return interval(eps)[0]

    beyond = max(0.0, float(high_edges.max()) if high_edges.size else 0.0) * (1 + 1e-12) + 1e-300
    floor_low, floor_high = interval(beyond)
    if floor_low > target:
        raise InfeasibleTargetError(
            f"delta={target!r} is below the composed distinguishing mass "
            f"{float(pld.distinguishing_mass)!r}; no epsilon reaches it; a wider cut (a larger "
            "bound) or fewer releases lowers it"
        )
    if floor_high > target:
        raise InfeasibleTargetError(
            f"delta={target!r} cannot be certified: the distinguishing mass plus the mass the "
            f"engine could not place is {float(floor_high)!r}; ask for a larger delta or a "
            "smaller tail_mass"
        )
    start, stop = (0.0, beyond) if within is None else within

    def certifies(eps: float) -> bool:
        return interval(eps)[1] <= target

    def may_reach(eps: float) -> bool:
        return interval(eps)[0] <= target

    # certifies(stop) holds without ``within`` (the floor check above); with it, a bound
    # that does not certify ``stop`` adds nothing to the bracket already known.
    if within is None or certifies(stop):
        stop = start if certifies(start) else _crossing(upper, target, start, stop, tolerance)[1]
    # may_reach(stop) holds: certifies(stop) did, or ``stop`` is certified, so the true
    # delta there, and the certified lower bound, is <= target.
    if may_reach(start):
        # A tilted composition's lower bound is tight only near the eps it was tilted to:
        # it may vanish far below while it is certified, and above the target, nearer
        # ``stop``. Any eps where it exceeds the target is a lower bound; look for the
        # farthest one from ``stop`` on a geometric approach to it.
        for power in range(1, 48):
            probe = stop - (stop - start) * 2.0**-power
            if probe <= start or probe >= stop:
                break
            if not may_reach(probe):
                return _crossing(lower, target, probe, stop, tolerance)[0], stop
        return start, stop
    return _crossing(lower, target, start, stop, tolerance)[0], stop
