"""Certified bounds on the smallest eps with delta(eps) <= target (SPEC section 2).

``upper``: the smallest eps found whose certified upper delta is <= target; every
larger eps is then certified too, because the true delta is non-increasing in eps.
``lower``: the smallest eps whose certified lower delta is <= target; the certified
lower delta is non-increasing, so for every smaller eps the true delta exceeds the
target and no smaller eps can be certified by anyone.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from accountant.buckets.bounds import adp_interval, pdp_interval
from accountant.buckets.bucketed import BucketedPLD
from accountant.errors import InfeasibleTargetError

__all__ = ["epsilon_interval"]


def _smallest(predicate: Callable[[float], bool], high: float) -> float:
    """Smallest eps in ``[0, high]`` with ``predicate`` true, assuming it holds at ``high``
    (bisection to a few ulp; the returned point always satisfies the predicate)."""
    if predicate(0.0):
        return 0.0
    low = 0.0
    while high - low > 4.0 * math.ulp(high):
        middle = 0.5 * (low + high)
        if predicate(middle):
            high = middle
        else:
            low = middle
    return high


def epsilon_interval(pld: BucketedPLD, target: float, kind: str) -> tuple[float, float]:
    """``(lower, upper)`` bounds on the smallest eps with delta(eps) <= ``target``."""

    edges = pld.edges()
    high_edges = edges[1]

    def interval(eps: float) -> tuple[float, float]:
        if kind == "ADP":
            low, high, _ = adp_interval(pld, eps, edges)
            return low, high
        return pdp_interval(pld, eps, edges)

    beyond = max(0.0, float(high_edges.max()) if high_edges.size else 0.0) * (1 + 1e-12) + 1e-300
    floor_low, floor_high = interval(beyond)
    # (reliability fix: float() so that messages show 0.5, not np.float64(0.5))
    if floor_low > target:
        raise InfeasibleTargetError(
            f"delta={target!r} is below the distinguishing mass "
            f"{float(pld.distinguishing_mass)!r}; no epsilon reaches it"
        )
    if floor_high > target:
        raise InfeasibleTargetError(
            f"delta={target!r} cannot be certified: the distinguishing mass plus the mass the "
            f"engine could not place is {float(floor_high)!r}; ask for a larger delta or a "
            "smaller tail_mass"
        )
    upper = _smallest(lambda eps: interval(eps)[1] <= target, beyond)
    lower = _smallest(lambda eps: interval(eps)[0] <= target, upper)
    return lower, upper
