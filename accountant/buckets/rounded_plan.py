"""Composing rounded releases at once, optionally under an exponentially tilted measure.

Releases rounded onto one lattice of width ``w`` (:mod:`accountant.buckets.rounding`)
compose by convolving their A-masses, ``n_i`` copies of each at once by
:func:`~accountant.buckets.fft_power.power_spectrum`. A :class:`RoundedPlan` holds what a
first pass over the releases learns (their sizes, offsets, errors, tail moments and the
composition's Chernoff window); :meth:`RoundedPlan.compose` makes a second pass for the
spectra. The plan is made once per direction and width and serves every tilt.

Tilting (Koskela et al.'s and the PRV accountant's round-off floor, removed). The FFT's
certified error is an absolute error ``e`` on every entry, of the order of ``n u`` times
the largest mass: it swamps deltas far below that. Composing instead the tilted releases

    x~_i[j] = x_i[j] e^{lambda w (j - r_i)} / S_i,      S_i = sum_j x_i[j] e^{lambda w (j - r_i)}

(``r_i`` a reference index near the release's mean, ``lambda >= 0``), whose composition is
``y~[k] = y[k] e^{lambda w (k - R) - C}`` with ``R = sum n_i r_i`` and ``C = sum n_i ln S_i``
exactly, and untilting

    y[k] = y~[k] e^{C - lambda w (k - R)},

turns the FFT's absolute error ``e`` on ``y~`` into ``e e^{C - lambda w (k - R)}`` on
``y[k]``: an error relative to the tilted density, which :meth:`RoundedPlan.tilt_for_eps`
centres near the eps queried (``lambda`` minimises the Chernoff exponent
``sum n_i M_i(lambda) - lambda eps`` of the A-mass above eps). Each entry then carries its own
error bound (``entry_errors``). The untilted masses are unchanged, so the window, the cut
tail masses and everything else are as without tilting, except that the window also reaches
where the tilted upper tail falls below ``tail_mass``:

    sum_{L > t} y~ <= exp(sum n_i M_i(g) - (g - lambda) t - lambda (o_low + w R) - C),

for every grid point ``g > lambda``,

and the tilted mass below the window is at most ``tail_mass e^{lambda w (start - R) - C}``.
``C`` is bounded below, before the second pass, by Jensen's inequality:
``ln S_i >= ln m_i + lambda w (mu_i - r_i)`` (``m_i`` the total mass, ``mu_i`` the mean index).

Rounding: computing ``x~`` from ``ln x + a - ln S`` moves each entry by a relative
``exp(4 u (|ln x| + |a| + |ln S|)) - 1`` (added to the release's relative error); the
untilting factor's exponent is off by at most ``err_C + 4 u (|lambda w (k - R)| + |C - ...|)``.
Entry errors are capped at ``max(y[k], T)`` with ``T`` the certified total mass: both the
stored and the true mass lie in ``[0, max(y[k], T)]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from accountant.buckets import chernoff
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD, sum_tail_moments
from accountant.buckets.fft_power import power_spectrum
from accountant.buckets.merged_lattice import MergedLattice
from accountant.buckets.progress import tick
from accountant.buckets.release_summary import (
    ReleaseSummary,
    circular_slice,
    tilted,
)
from accountant.buckets.tails import LAMBDA_GRID, chernoff_window
from accountant.numerics.directed import MassLogs, total_mass_up
from accountant.numerics.floats import UNIT_ROUNDOFF
from accountant.numerics.lazy import fft
from accountant.numerics.norms import euclidean_norm

__all__ = ["TILT_GROWTH", "Masses", "RoundedPlan", "compose_merged", "compose_releases"]

#: ``masses(i)``: release ``i``'s A-masses and per-entry errors (``None``: none kept).
Masses = Callable[[int], tuple[np.ndarray, "np.ndarray | None"]]

_U = UNIT_ROUNDOFF
_MARGIN = 1.0 + 1e-12
#: A tilt is lowered until its window is at most this many times the untilted one.
TILT_GROWTH = 2.0


@attrs.frozen(eq=False)
class RoundedPlan:
    """The first pass over ``counts[i]`` releases ``make(i)`` rounded onto one lattice."""

    summaries: tuple[ReleaseSummary, ...]
    counts: tuple[int, ...]
    moments: tuple
    start: int
    stop: int
    first: int
    last: int
    tail_mass: float
    max_buckets: int

    @classmethod
    def build(
        cls,
        make: Callable[[int], BucketedPLD],
        counts: list[int],
        tail_mass: float,
        max_buckets: int,
    ) -> RoundedPlan | None:
        """The plan, or ``None`` when composing at once does not apply (releases on different
        widths): the caller then composes pair by pair. A window wider than
        ``max_buckets / 2`` raises :class:`~accountant.buckets.bucketed.BucketBudgetError`
        (a coarser width fits; composing pair by pair would not do better)."""
        summaries = tuple(ReleaseSummary.of(make(index)) for index in range(len(counts)))
        return cls.of_summaries(summaries, counts, tail_mass, max_buckets)

    @classmethod
    def of_summaries(
        cls,
        summaries: tuple[ReleaseSummary, ...],
        counts: list[int],
        tail_mass: float,
        max_buckets: int,
    ) -> RoundedPlan | None:
        """:meth:`build` from the releases' summaries."""
        width = summaries[0].width
        if any(s.width != width for s in summaries):
            return None
        moments = sum_tail_moments(
            tuple((m, c * times) for m, c in single.tail_moments)
            for single, times in zip(summaries, counts, strict=True)
        )
        pairs = list(zip(summaries, counts, strict=True))
        first = sum(times * s.first_index for s, times in pairs)
        last = sum(times * (s.first_index + s.size - 1) for s, times in pairs)
        offset_low = sum(times * s.offset_low for s, times in pairs)
        offset_high = sum(times * s.offset_high for s, times in pairs)
        low, high = chernoff_window(moments, tail_mass)
        start = first
        if math.isfinite(low):
            start = max(first, math.floor((low - offset_high) / width) - 1)
        stop = last
        if math.isfinite(high):
            stop = min(last, math.ceil((high - offset_low) / width) + 1)
        if start > stop:
            # The two tails overlap: all the finite A-mass lies below ``low`` or above
            # ``high`` (at most ``2 tail_mass`` in all, e.g. a finite part that underflows).
            # One entry between them keeps each cut tail within its bound.
            start = stop = max(first, stop)
        if stop - start + 1 > max_buckets // 2:
            raise BucketBudgetError(stop - start + 1)
        return cls(
            summaries, tuple(counts), moments, start, stop, first, last, tail_mass, max_buckets
        )

    @property
    def width(self) -> float:
        return self.summaries[0].width

    def _sum(self, field: str) -> float:
        return sum(
            times * getattr(s, field) for s, times in zip(self.summaries, self.counts, strict=True)
        )

    def _log_mgf_high(self) -> np.ndarray | None:
        """``sum n_i M_i`` on :data:`~accountant.buckets.tails.LAMBDA_GRID` (upper tails)."""
        if not self.moments:
            return None
        return sum(count * m.log_mgf_high for m, count in self.moments)

    def tilt_for_eps(self, eps: float) -> float:
        """``lambda`` on the grid minimising ``sum n_i M_i(lambda) - lambda eps`` over
        ``lambda w <= 1`` (0 when no grid point gives a bound below 1, eps lying below the
        bulk of the losses, or when eps lies above every composed loss)."""
        high = self._log_mgf_high()
        if high is None:
            return 0.0
        top = self.last * self.width + self._sum("offset_high")
        if eps >= top:  # no finite loss above eps: nothing to resolve there
            return 0.0
        with np.errstate(invalid="ignore"):
            exponent = np.where(np.isfinite(high), high - LAMBDA_GRID * eps, np.inf)
        # beyond lambda w = 1 the tilted law sits on a few lattice points: no gain
        exponent[LAMBDA_GRID * self.width > 1.0] = np.inf
        best = int(np.argmin(exponent))
        return self.affordable(float(LAMBDA_GRID[best])) if exponent[best] < 0.0 else 0.0

    def chernoff_eps(self, delta: float) -> float:
        """:func:`~accountant.buckets.chernoff.chernoff_eps` of ``sum n_i M_i`` (``inf``
        without moments)."""
        high = self._log_mgf_high()
        return math.inf if high is None else chernoff.chernoff_eps(high, delta)

    def chernoff_slope(self, delta: float) -> float:
        """:func:`~accountant.buckets.chernoff.chernoff_slope` (0 without moments)."""
        high = self._log_mgf_high()
        return 0.0 if high is None else chernoff.chernoff_slope(high, delta)

    def eps_slope(self, eps: float) -> float:
        """:func:`~accountant.buckets.chernoff.eps_slope` (0 without moments)."""
        high = self._log_mgf_high()
        return 0.0 if high is None else chernoff.eps_slope(high, eps)

    def tilt_for_delta(self, delta: float) -> float:
        """``lambda`` on the grid where the Chernoff bound reaches ``delta`` at the smallest
        eps (:meth:`chernoff_eps`): the minimiser of ``(sum n_i M_i(lambda) - ln delta) /
        lambda``."""
        if self._log_mgf_high() is None:
            return 0.0
        return self.tilt_for_eps(self.chernoff_eps(delta))

    def _tilted_stop(self, tilt: float, log_scale_low: float) -> int:
        """The window's upper end when the tilted upper tail must fall below ``tail_mass``."""
        high = self._log_mgf_high()
        if high is None or tilt <= 0.0 or self.tail_mass <= 0.0:
            return self.stop  # (nothing is cut without a tail mass: stop is the last index)
        width, reference = self.width, self._sum("reference")
        base = tilt * (self._sum("offset_low") + width * reference) + log_scale_low
        steeper = tilt < LAMBDA_GRID
        with np.errstate(invalid="ignore", over="ignore"):
            ends = (high[steeper] - base - math.log(self.tail_mass)) / (LAMBDA_GRID[steeper] - tilt)
        ends = ends[np.isfinite(ends)]
        if ends.size == 0:
            return self.last
        end = float(np.min(ends)) + 1e-9 * (1.0 + abs(float(np.min(ends))))
        return max(
            self.stop, min(self.last, math.ceil((end - self._sum("offset_low")) / width) + 1)
        )

    def _window_stop(self, tilt: float) -> int:
        """The window's upper end under ``tilt``, with ``C`` bounded below by Jensen:
        ``ln S_i >= ln m_i + lambda w (mu_i - r_i)``."""
        if tilt <= 0.0:
            return self.stop
        width = self.width
        log_scale_low = sum(
            times
            * (math.log(s.total) + tilt * width * (s.first_index + s.mean_index - s.reference))
            for s, times in zip(self.summaries, self.counts, strict=True)
            if s.total > 0.0
        )
        log_scale_low -= 1e-9 * (1.0 + abs(log_scale_low))
        return self._tilted_stop(tilt, log_scale_low)

    def affordable(self, tilt: float) -> float:
        """``tilt``, or the largest grid tilt below it whose window is at most
        :data:`TILT_GROWTH` times the untilted one and fits ``max_buckets / 2`` (0 if none
        does): a smaller tilt resolves less far below the round-off, a heavy upper tail of
        the tilted law costs buckets."""
        budget = min(TILT_GROWTH * (self.stop - self.start + 1), self.max_buckets // 2)
        candidates = LAMBDA_GRID[tilt >= LAMBDA_GRID][::-1]
        for candidate in candidates[:24]:
            if self._window_stop(float(candidate)) - self.start + 1 <= budget:
                return float(candidate)
        return 0.0

    def compose(self, masses: Masses, tilt: float = 0.0, cap: bool = True) -> BucketedPLD | None:
        """The composition (second pass: one spectrum per release, whose A-masses and
        per-entry errors ``masses(i)`` gives), tilted by ``tilt`` (``0``: untilted).
        ``None`` when the tilted window exceeds ``max_buckets / 2``. ``cap``: untilted entries
        and their errors are capped at the total A-mass (not for the C-masses of merged
        releases, :mod:`accountant.buckets.merged_lattice`, which may exceed it)."""
        width, pairs = self.width, list(zip(self.summaries, self.counts, strict=True))
        reference = sum(times * s.reference for s, times in pairs)
        start, stop = self.start, self._window_stop(tilt)
        if stop - start + 1 > self.max_buckets // 2:
            return None
        size = fft.next_fast_len(stop - start + 1, real=True)
        logs_s: list[float] = []
        relatives: list[float] = []

        def parts():
            for index, (summary, times) in enumerate(pairs):
                mass_a, entry_errors = masses(index)
                if tilt == 0.0:
                    relatives.append(summary.relative_error)
                    yield mass_a, times, summary.input_error
                    continue
                values, log_sum, relative, error = tilted(mass_a, entry_errors, summary, tilt)
                logs_s.append(log_sum)
                relatives.append(relative)
                yield values, times, error

        powered = power_spectrum(parts(), size)
        tick(f"{sum(self.counts)} releases composed at width {width:.3g}")
        # entries start - first .. stop - first of the circular result (a copy of exactly
        # the window: the spectrum's full array is freed)
        assert powered.masses is not None  # power_spectrum gives them
        window = circular_slice(powered.masses, start - self.first, stop - start + 1)
        powered.masses = None
        cut_low, cut_high = start > self.first, stop < self.last
        logs = MassLogs()
        for summary, times in pairs:
            logs = logs + summary.mass_logs.times(times)
        relative = math.expm1(
            1.01 * sum(r * t for r, t in zip(relatives, self.counts, strict=True))
        )
        offset_low, offset_high = self._sum("offset_low"), self._sum("offset_high")
        fields: dict[str, Any] = {}
        if tilt == 0.0:
            folded = self.tail_mass * (cut_low + cut_high)
            fields["error_a"] = (powered.entry_error * math.sqrt(window.size) + folded) * _MARGIN
            fields["entry_error"] = (powered.entry_error + folded) * _MARGIN
        else:
            log_scale = math.fsum(t * s for t, s in zip(self.counts, logs_s, strict=True))
            scale_error = (
                4.0
                * _U
                * (
                    sum(t * (abs(s) + 1.0) for t, s in zip(self.counts, logs_s, strict=True))
                    + len(logs_s) * abs(log_scale)
                )
            )
            low_fold = self.tail_mass * math.exp(
                min(700.0, tilt * width * (start - reference) - log_scale + scale_error)
            )
            folded = low_fold * cut_low + self.tail_mass * cut_high
            # shifts (tilt w)(start - R + k) and exponents C - shifts, built in one array
            # (at 10^6 steps the window has millions of entries); their rounding slack
            # 4u(|shift| + |exponent| + 1) is convex in the shift: largest at an end
            factors = np.arange(window.size, dtype=np.float64)
            factors += start - reference
            factors *= tilt * width
            np.subtract(log_scale, factors, out=factors)
            ends = [tilt * width * (start - reference + k) for k in (0, window.size - 1)]
            growth = scale_error + 4.0 * _U * max(abs(e) + abs(log_scale - e) + 1.0 for e in ends)
            total = total_mass_up(logs) if cap else math.inf
            with np.errstate(over="ignore"):
                np.exp(factors, out=factors)
                np.multiply(window, factors, out=window, where=window > 0)
                np.minimum(window, total, out=window)
                errors = factors  # (powered.entry_error + folded) factors (1 + growth) margin
                errors *= powered.entry_error + folded
                errors *= 1.0 + growth
                errors *= _MARGIN
            # stored and true masses both lie in [0, max(y, T)] = [0, T]: errors capped at T
            fields["entry_errors"] = np.minimum(errors, total, out=errors)
            fields["entry_error"] = float(np.max(fields["entry_errors"]))
            fields["error_a"] = float(euclidean_norm(fields["entry_errors"])) * _MARGIN
            relative = (1.0 + relative) * (1.0 + math.expm1(growth) + 4.0 * _U) - 1.0
        points = np.arange(window.size, dtype=np.float64)
        points += start
        points *= width
        points += 0.5 * (offset_low + offset_high)
        with np.errstate(divide="ignore", over="ignore"):
            mass_b = np.log(window)
            mass_b -= points
            del points
            np.exp(mass_b, out=mass_b)
            np.minimum(mass_b, 1e300, out=mass_b)
        lost = self._sum("lost_a") + self.tail_mass * (cut_low + cut_high)
        return BucketedPLD(
            width=width,
            first_index=start,
            mass_a=window,
            mass_b=mass_b,
            offset_low=offset_low,
            offset_high=offset_high,
            mass_logs=logs,
            lost_a=lost * (1.0 + 4.0 * _U * (len(pairs) + 2)),
            relative_error=relative,
            error_b=math.inf,  # B is A e^{-g} on the lattice: the A-only bounds are exact
            releases=int(self._sum("releases")),
            tail_moments=self.moments,
            hoeffding_variance=self._sum("hoeffding_variance"),
            hoeffding_drift=self._sum("hoeffding_drift") * (1 + 1e-12),
            **fields,
        )


def compose_releases(
    plan: RoundedPlan, release: Callable[[int], BucketedPLD], tilt: float = 0.0
) -> BucketedPLD | None:
    """The composition of ``plan`` (whose releases ``release(i)`` gives again, for the second
    pass) tilted by ``tilt``, with its merged counterpart composed alongside
    (:func:`compose_merged`); ``None`` when the tilted window exceeds the budget."""
    composed = plan.compose(lambda index: _masses_of(release(index)), tilt)
    if composed is None or release(0).dominated is None:
        return composed
    return attrs.evolve(composed, dominated=compose_merged(plan, release, tilt))


def compose_merged(
    plan: RoundedPlan, release: Callable[[int], BucketedPLD], tilt: float
) -> MergedLattice:
    """The merged counterparts of ``plan``'s releases composed at once: their A-masses over
    their own Chernoff window, under the largest tilt up to ``tilt`` it affords, and their
    C-masses over the same window under the same tilt (no cap: they may exceed the total
    A-mass)."""
    counts = list(plan.counts)
    merged = [release(index).dominated for index in range(len(counts))]
    # planned on the entries' lattice points (the tail moments of a are theirs)
    a_summaries = tuple(
        attrs.evolve(ReleaseSummary.of(m.a), offset_low=m.points[0], offset_high=m.points[1])
        for m in merged
    )
    a_plan = RoundedPlan.of_summaries(a_summaries, counts, plan.tail_mass, plan.max_buckets)
    assert a_plan is not None  # one width
    c_plan = attrs.evolve(a_plan, summaries=tuple(ReleaseSummary.of(m.c) for m in merged))
    intervals = (
        math.fsum(t * m.a.offset_low for m, t in zip(merged, counts, strict=True)),
        math.fsum(t * m.a.offset_high for m, t in zip(merged, counts, strict=True)),
    )
    points = (a_plan._sum("offset_low"), a_plan._sum("offset_high"))
    del merged
    affordable = a_plan.affordable(tilt) if tilt > 0.0 else 0.0

    def part(name: str):
        def masses(index: int) -> tuple[np.ndarray, np.ndarray | None]:
            return _masses_of(getattr(release(index).dominated, name))

        return masses

    a = a_plan.compose(part("a"), affordable) if affordable > 0.0 else None
    if a is None:
        affordable = 0.0
        a = a_plan.compose(part("a"), 0.0)
    c = c_plan.compose(part("c"), affordable, cap=False)
    if c is None:
        c = c_plan.compose(part("c"), 0.0, cap=False)
    assert a is not None and c is not None  # untilted windows fit
    # the composed entries' loss intervals: the releases' summed (rounded outwards)
    slack = 4.0 * _U * (abs(intervals[0]) + abs(intervals[1]) + len(counts))
    a = attrs.evolve(a, offset_low=intervals[0] - slack, offset_high=intervals[1] + slack)
    return MergedLattice(a, c, points)


def _masses_of(single: BucketedPLD) -> tuple[np.ndarray, np.ndarray | None]:
    return single.mass_a, single.entry_errors
