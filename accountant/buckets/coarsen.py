"""Coarsening: merging neighbouring buckets when a composed distribution outgrows the
memory budget (SPEC section 2: "coarsening ... unites" the intervals).

Bucket ``J'`` of width ``2w`` takes old buckets ``2J' - 1`` and ``2J'``. Old bucket ``J``
holds losses in ``[J w + lo, J w + hi]``; for ``J = 2J'`` that is ``[J' 2w + lo, J' 2w + hi]``
and for ``J = 2J' - 1`` it is ``[J' 2w + lo - w, J' 2w + hi - w]``, so the merged offsets are
``[lo - w, hi]``: the interval widens by one old width and stays certain. Masses add
(one more rounding), and the absolute error vector merges pairwise, growing its
2-norm by at most ``sqrt(2)``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.bucketed import BucketedPLD
from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = ["coarsen", "coarsen_to"]


def coarsen(pld: BucketedPLD) -> BucketedPLD:
    """``pld`` with buckets of twice the width."""
    new_first = -((-pld.first_index) // 2)  # ceil(J / 2)
    lead = pld.first_index - (2 * new_first - 1)  # 0 or 1 empty slot in front
    length = lead + pld.size
    length += length % 2

    def merge(values: np.ndarray) -> np.ndarray:
        padded = np.zeros(length)
        padded[lead : lead + values.size] = values
        return padded.reshape(-1, 2).sum(axis=1)

    return attrs.evolve(
        pld,
        width=2.0 * pld.width,
        first_index=new_first,
        mass_a=merge(pld.mass_a),
        mass_b=merge(pld.mass_b),
        offset_low=pld.offset_low - pld.width,
        relative_error=pld.relative_error + 1.01 * UNIT_ROUNDOFF * (1.0 + pld.relative_error),
        error_a=math.sqrt(2.0) * pld.error_a,
        error_b=math.sqrt(2.0) * pld.error_b,
        entry_error=2.0 * pld.entry_error,
        entry_errors=None
        if pld.entry_errors is None
        else merge(pld.entry_errors) * (1.0 + 2.0 * UNIT_ROUNDOFF),
    )


def coarsen_to(pld: BucketedPLD, width: float) -> BucketedPLD:
    """Coarsen until the bucket width reaches ``width`` (a power-of-two multiple)."""
    while pld.width < width * (1.0 - 1e-9):
        pld = coarsen(pld)
    return pld
