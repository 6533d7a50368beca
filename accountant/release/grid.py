"""Query answers on the noise grid, in exact arithmetic.

A release adds grid noise to an answer that lies on the same grid, so that the output
is ``(k + j) step`` for integers ``k`` (the answer) and ``j`` (the noise): no float noise
is added to a float, and nothing below the grid can carry the answer's low-order bits
(Mironov 2012). Answers are converted with :class:`fractions.Fraction`, exactly:

* ``snap="refuse"``: the answer must be ``k step`` exactly, else an error;
* ``snap="nearest"``: ``k = floor(v / step + 1/2)`` (ties upwards).

Either way two answers at most ``s`` apart land at most ``m = ceil(s / step)`` steps
apart (the ratio taken exactly): on the grid, ``|k - k'| step <= s``; snapped,
``floor(x) - floor(y) < x - y + 1`` is an integer. So the mechanism released is the
additive one with sensitivity ``m step`` (:func:`audited_sensitivity`), which is what
gets audited. (A sensitivity of ``0.3`` on a grid of step ``0.1`` gives ``m = 3``; one a
hair above a whole number of steps, e.g. ``1 + 2^-52`` on step 1, gives one step more,
and the release says so.)
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from accountant.errors import InvalidInputError
from accountant.noise.distribution import GRID_TOLERANCE
from accountant.validation import check_choice, check_positive_real

__all__ = ["SNAPS", "audited_sensitivity", "grid_steps", "start_steps"]

#: How an answer off the grid is treated.
SNAPS = ("refuse", "nearest")


def start_steps(start: float, step: float) -> int:
    """The noise grid's first point in whole steps, ``round(start / step)``, when ``start``
    is one within :data:`~accountant.noise.GRID_TOLERANCE` (families on a symmetric grid
    are); the noise released is then ``(start_steps + i) step`` for grid index ``i``."""
    ratio = start / step
    steps = round(ratio)
    if abs(ratio - steps) > GRID_TOLERANCE * max(1.0, abs(ratio)):
        raise InvalidInputError(
            f"noise start={start!r} is not a whole number of grid steps (step={step!r}); a "
            "release needs a noise grid through 0"
        )
    return int(steps)


def audited_sensitivity(sensitivity: float, step: float) -> float:
    """``m step`` with ``m = ceil(s / step)`` (the ratio exact): how far two answers at
    most ``s`` apart can be on the grid, refused or snapped (module docstring)."""
    sensitivity = check_positive_real("sensitivity", sensitivity)
    step = check_positive_real("step", step)
    ratio = Fraction(sensitivity) / Fraction(step)
    return math.ceil(ratio) * step


def grid_steps(values: np.ndarray, step: float, snap: str) -> tuple[np.ndarray, bool]:
    """The integers ``k`` with answer ``k step`` (module docstring) and whether any answer
    was moved. ``values`` must be finite floats; ``|k|`` must fit in 62 bits."""
    snap = check_choice("snap", snap, SNAPS)
    fraction_step = Fraction(step)
    steps = np.empty(values.shape, dtype=np.int64)
    moved = False
    flat_values, flat_steps = values.reshape(-1), steps.reshape(-1)
    for index, value in enumerate(flat_values.tolist()):
        ratio = Fraction(value) / fraction_step
        if ratio.denominator == 1:
            k = int(ratio)
        elif snap == "refuse":
            raise InvalidInputError(
                f"value={value!r} (at index {index}) is not on the noise grid (step={step!r}); "
                "pass snap='nearest' to round it and audit the snapped sensitivity"
            )
        else:
            k = math.floor(ratio + Fraction(1, 2))
            moved = True
        if abs(k) >= 1 << 62:
            raise InvalidInputError(
                f"value={value!r} is {k} grid steps from 0, beyond the 2^62 this release supports"
            )
        flat_steps[index] = k
    return steps, moved
