"""Result classes of the PrivacyBuckets engine: certified intervals, never bare numbers."""

from __future__ import annotations

import attrs
import numpy as np

__all__ = ["Bounds", "EpsilonBounds"]


@attrs.frozen(eq=False)
class Bounds:
    """Certified ``lower <= true delta <= upper`` at ``epsilon`` (arrays when many eps).

    ``achieved_accuracy`` is the largest relative bracket ``(upper - lower) / upper`` over
    the eps asked for; ``accuracy`` is what was requested; ``bucket_width`` is the loss
    width the engine chose.
    """

    lower: float | np.ndarray
    upper: float | np.ndarray
    epsilon: float | np.ndarray
    kind: str
    direction: str
    releases: int
    accuracy: float
    achieved_accuracy: float
    bucket_width: float

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))


@attrs.frozen
class EpsilonBounds:
    """Certified bounds on the smallest eps with ``delta(eps) <= delta``: every eps at or
    above ``upper`` is certified; no eps below ``lower`` can be (arrays when many deltas)."""

    lower: float | np.ndarray
    upper: float | np.ndarray
    delta: float | np.ndarray
    kind: str
    direction: str
    releases: int
    accuracy: float
    bucket_width: float

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))
