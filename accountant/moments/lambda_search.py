"""Exact one-dimensional searches over the moment order lambda (SPEC section 3).

Both searches find the root of a monotone function by Brent's method in
``t = ln lambda`` after bracketing by doubling; no fixed grid of lambdas.

* delta for a given eps: minimise the convex ``f(lambda) = G(lambda) + ln c(lambda) - lambda eps``
  by solving ``f'(lambda) = 0`` (``f'`` is increasing).
* eps for a given delta: minimise ``N(lambda) / lambda`` with
  ``N = G + ln c - ln tau``; ``k(lambda) = lambda N' - N`` is increasing
  (``k' = lambda N'' >= 0``), its root is the minimiser and there ``eps = N'``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = ["LAMBDA_MAX", "LAMBDA_MIN", "increasing_root"]

#: Search range of lambda. Beyond LAMBDA_MAX the optimum is treated as lambda -> inf
#: (its limit is handled in closed form by the caller); below LAMBDA_MIN as lambda -> 0.
LAMBDA_MAX = 1e12
LAMBDA_MIN = 1e-12


def increasing_root(derivative: Callable[[float], float]) -> float:
    """Root of an increasing function of ``lambda > 0``.

    Returns ``0.0`` when the function is already >= 0 at ``LAMBDA_MIN`` and ``inf``
    when it is still < 0 at ``LAMBDA_MAX``.
    """
    lam = 1.0
    value = derivative(lam)
    if value == 0.0:
        return lam
    if value < 0.0:
        low = lam
        while True:
            lam = lam * 4.0
            if lam > LAMBDA_MAX:
                return math.inf
            value = derivative(lam)
            if value >= 0.0:
                high = lam
                break
            low = lam
    else:
        high = lam
        while True:
            lam = lam / 4.0
            if lam < LAMBDA_MIN:
                return 0.0
            value = derivative(lam)
            if value <= 0.0:
                low = lam
                break
            high = lam
    if value == 0.0:
        return lam
    from scipy.optimize import brentq  # (imported when needed: it costs 0.2 s)

    t = brentq(
        lambda t: derivative(math.exp(t)),
        math.log(low),
        math.log(high),
        xtol=1e-14,
        rtol=8 * UNIT_ROUNDOFF,
        maxiter=200,
    )
    return math.exp(t)
