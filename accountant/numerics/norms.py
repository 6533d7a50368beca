"""The Euclidean norm of an error vector, without BLAS and without overflow.

``numpy.linalg.norm`` of a vector is a BLAS dot product: threads that cost more than they save
on a busy two-core machine, and squares that overflow past ``1e154`` (an untilted error vector
of a tilted composition reaches ``1e188``). Here: ``m sqrt(sum (x/m)^2)`` with ``m`` the largest
``|x|``, summed by ``einsum`` (no BLAS), within ``(size + 4) u`` of the exact norm relative to it,
and raised by that much: an upper bound, as error bounds need.
"""

from __future__ import annotations

import math

import numpy as np

from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = ["euclidean_norm"]


def euclidean_norm(values: np.ndarray) -> float:
    """An upper bound on ``sqrt(sum values^2)`` (``inf`` if any value is infinite or NaN)."""
    if values.size == 0:
        return 0.0
    largest = float(np.max(np.abs(values)))
    if largest == 0.0:
        return 0.0
    if not math.isfinite(largest):
        return math.inf
    scaled = values / largest
    total = float(np.einsum("i,i->", scaled, scaled))
    return largest * math.sqrt(total) * (1.0 + (values.size + 4) * UNIT_ROUNDOFF)
