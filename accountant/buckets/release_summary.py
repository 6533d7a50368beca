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

__all__ = [
    "RELATIVE_SHARE",
    "ReleaseSummary",
    "circular_slice",
    "max_factor",
    "recast_share",
    "residual_errors",
    "tilted",
]

_U = UNIT_ROUNDOFF
#: Entry errors at most this share of their stored mass (or of the release's own relative
#: error, if larger) are carried as a relative error (:func:`recast_share`).
RELATIVE_SHARE = 2.0**-40


def recast_share(mass_a: np.ndarray, entry_errors: np.ndarray, relative_error: float) -> float:
    """``s``: the largest ratio ``e_j / m_j`` (rounded up) among the entries whose error is at
    most ``max(RELATIVE_SHARE, relative_error)`` times their stored mass ``m_j > 0``; 0 if
    none. Those entries' errors are carried as a relative error instead
    (:meth:`ReleaseSummary.of`, :func:`residual_errors`).

    Why: a composition of ``n`` releases turns absolute entry errors into errors of order
    ``n |e|_1`` on every composed entry, which swamps deltas far below them (a rendering
    accurate to 1e-13 relative in tails of mass 1e-26, tilted by ``e^{lambda L}``, gave an
    absolute error of 7e-14 per release, 10^7 times over); a relative error ``s`` costs a
    relative ``n s`` of each delta instead."""
    share = max(RELATIVE_SHARE, relative_error)
    recast = (entry_errors > 0.0) & (entry_errors <= share * mass_a)
    if not recast.any():
        return 0.0
    return float(np.max(entry_errors[recast] / mass_a[recast])) * (1.0 + 2.0 * _U)


def residual_errors(mass_a: np.ndarray, entry_errors: np.ndarray, share: float) -> np.ndarray:
    """The entry errors not recast by :func:`recast_share` (``e_j > share m_j``); 0 elsewhere."""
    if share <= 0.0:
        return entry_errors
    return np.where(entry_errors <= share * mass_a, 0.0, entry_errors)


def _recast_relative(relative_error: float, share: float) -> float:
    """The relative error of a release whose entry errors ``e_j <= s m_j`` are recast: under
    the error model ``|m - t| <= r t + e`` (:mod:`accountant.buckets.bucketed`),
    ``e_j <= s m_j <= s (1 + r) t_j + s e_j``, so ``e_j <= s (1 + r) / (1 - s) t_j`` and
    ``r' = r + s (1 + r) / (1 - s)`` (rounded up) bounds the relative part."""
    if share <= 0.0:
        return relative_error
    return (relative_error + share * (1.0 + relative_error) / (1.0 - share)) * (1.0 + 4.0 * _U)


@attrs.frozen
class ReleaseSummary:
    """What the composition needs of a release once its masses are in the spectrum.

    ``relative_error`` and ``input_error`` (a bound on the 1-norm of the absolute error
    vector) are the release's own, except that entry errors at most ``share`` times their
    stored mass are carried in ``relative_error`` (:func:`recast_share`): ``input_error``
    then bounds the rest (:func:`residual_errors`)."""

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
    share: float = 0.0

    @classmethod
    def of(cls, single: BucketedPLD) -> ReleaseSummary:
        total = float(np.sum(single.mass_a))
        index = np.arange(single.size, dtype=np.float64)
        mean = float(np.dot(single.mass_a, index)) / total if total > 0.0 else 0.0
        input_error = single.absolute_error(single.size) if single.error_a > 0.0 else 0.0
        share = 0.0
        if single.entry_errors is not None and input_error > 0.0:
            share = recast_share(single.mass_a, single.entry_errors, single.relative_error)
            if share > 0.0:  # (any bound on the whole error vector bounds the residual too)
                residual = residual_errors(single.mass_a, single.entry_errors, share)
                slack = 1.0 + (single.size + 8) * _U
                input_error = min(input_error, float(np.sum(residual)) * slack)
        return cls(
            single.width,
            single.first_index,
            single.size,
            single.offset_low,
            single.offset_high,
            single.tail_moments,
            single.mass_logs,
            single.lost_a,
            _recast_relative(single.relative_error, share),
            input_error,
            single.releases,
            single.hoeffding_variance,
            single.hoeffding_drift,
            total,
            mean,
            share,
        )

    @property
    def reference(self) -> int:
        """``r_i``: the lattice index nearest the mean (absolute index)."""
        return self.first_index + round(self.mean_index)


def tilted(
    mass_a: np.ndarray, entry_errors: np.ndarray | None, summary: ReleaseSummary, tilt: float
) -> tuple[np.ndarray, float, float, float]:
    """``(x~, ln S, relative error, input error)`` of one release (its A-masses and their
    per-entry errors, if any) tilted by ``tilt``; errors recast as relative
    (``summary.share``) are in ``summary.relative_error``, not in the input error."""
    if entry_errors is not None:
        entry_errors = residual_errors(mass_a, entry_errors, summary.share)
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
