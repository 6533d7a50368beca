"""The per-release pieces of a rounded composition (:mod:`accountant.buckets.rounded_plan`):
what the first pass keeps of each release (:class:`ReleaseSummary`), and its tilted
masses ``x~[j] = x[j] e^{lambda w (j - r)} / S`` with their rounding (:func:`tilted`)."""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets.bucketed import BucketedPLD
from accountant.numerics.directed import MassLogs
from accountant.numerics.floats import UNIT_ROUNDOFF

__all__ = ["ReleaseSummary", "circular_slice", "max_factor", "tilted"]

_U = UNIT_ROUNDOFF


@attrs.frozen
class ReleaseSummary:
    """What the composition needs of a release once its masses are in the spectrum."""

    width: float
    first_index: int
    size: int
    offset_low: float
    offset_high: float
    tail_moments: tuple
    mass_logs: MassLogs
    lost_a: float
    relative_error: float
    input_error: float
    releases: int
    hoeffding_variance: float
    hoeffding_drift: float
    total: float
    mean_index: float

    @classmethod
    def of(cls, single: BucketedPLD) -> ReleaseSummary:
        total = float(np.sum(single.mass_a))
        index = np.arange(single.size, dtype=np.float64)
        mean = float(np.dot(single.mass_a, index)) / total if total > 0.0 else 0.0
        return cls(
            single.width,
            single.first_index,
            single.size,
            single.offset_low,
            single.offset_high,
            single.tail_moments,
            single.mass_logs,
            single.lost_a,
            single.relative_error,
            single.absolute_error(single.size) if single.error_a > 0.0 else 0.0,
            single.releases,
            single.hoeffding_variance,
            single.hoeffding_drift,
            total,
            mean,
        )

    @property
    def reference(self) -> int:
        """``r_i``: the lattice index nearest the mean (absolute index)."""
        return self.first_index + round(self.mean_index)


def tilted(
    mass_a: np.ndarray, entry_errors: np.ndarray | None, summary: ReleaseSummary, tilt: float
) -> tuple[np.ndarray, float, float, float]:
    """``(x~, ln S, relative error, input error)`` of one release (its A-masses and their
    per-entry errors, if any) tilted by ``tilt``."""
    shifts = (
        tilt * summary.width * (np.arange(summary.size) + (summary.first_index - summary.reference))
    )
    with np.errstate(divide="ignore"):
        logs = np.log(mass_a) + shifts
    finite = np.isfinite(logs)
    if not finite.any():  # no finite outcome: nothing to tilt (and an exact zero spectrum)
        return np.zeros(summary.size), 0.0, summary.relative_error, summary.input_error
    top = float(np.max(logs[finite]))
    log_sum = top + math.log(float(np.sum(np.exp(logs[finite] - top))))
    values = np.exp(logs - log_sum)
    largest_log = float(np.max(np.abs(np.log(mass_a[finite]))))
    exponent = 4.0 * _U * (largest_log + float(np.max(np.abs(shifts))) + abs(log_sum) + 2.0)
    relative = (1.0 + summary.relative_error) * (1.0 + math.expm1(exponent) + 2.0 * _U) - 1.0
    margin = 1.0 + exponent + 4.0 * _U
    if entry_errors is not None:  # each entry's absolute error times its own factor
        with np.errstate(over="ignore"):
            weighted = float(np.dot(entry_errors, np.exp(shifts - log_sum)))
        error = weighted * (1.0 + (summary.size + 4) * _U) * margin
        return (
            values,
            log_sum,
            relative,
            min(error, summary.input_error * max_factor(shifts, log_sum) * margin),
        )
    return values, log_sum, relative, summary.input_error * max_factor(shifts, log_sum) * margin


def circular_slice(values: np.ndarray, offset: int, count: int) -> np.ndarray:
    """``values[(offset + k) mod size]`` for ``k < count <= size``, as a new array."""
    size = values.size
    begin = offset % size
    if begin + count <= size:
        return values[begin : begin + count].copy()
    return np.concatenate((values[begin:], values[: begin + count - size]))


def max_factor(shifts: np.ndarray, log_sum: float) -> float:
    """The largest tilting factor ``e^{a_j - ln S}`` of a release (inf if it overflows)."""
    top = float(np.max(shifts)) - log_sum
    return math.exp(top) if top < 709.0 else math.inf
