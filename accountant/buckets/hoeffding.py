"""The Hoeffding slack of the PDP bounds of rounded compositions
(:mod:`accountant.buckets.rounding`): how far eps shifts so that the rounding steps' sum
exceeds the shift with probability at most ``beta``."""

from __future__ import annotations

import math

from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = ["SLACK_FRACTION", "hoeffding_slack"]

#: ``beta(t)`` is chosen as this fraction of the estimated delta (or of the smallest
#: positive float), so the concentration term is negligible against the bracket.
SLACK_FRACTION = 1e-6


def hoeffding_slack(variance: float, drift: float, scale: float) -> tuple[float, float]:
    """``(s, beta)``: the eps shift ``s = t + m`` and the mass ``beta = exp(-2 t^2 / V)`` for
    ``V = variance``, ``m = drift``, with ``beta = SLACK_FRACTION * scale`` (``scale``: an
    estimate of the delta asked for; any positive value keeps the bounds certified, a good
    one keeps them tight). ``(0, 0)`` when nothing was rounded (``V = 0``)."""
    if variance <= 0.0:
        return drift, 0.0
    beta = max(SLACK_FRACTION * scale, 1e-300)
    t = math.sqrt(0.5 * variance * -math.log(beta))
    return (t + drift) * (1.0 + 4.0 * UNIT_ROUNDOFF), beta
