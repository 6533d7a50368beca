"""The loop of :func:`accountant.learning.calibration.calibrate_noise_multiplier`: where to query
PrivacyBuckets next, what the queries so far certify, and when to stop.

A point is *meeting* when its certified upper delta is at most the target and *failing*
when its certified lower delta exceeds it; ``sigma`` is the smallest meeting point,
``sigma_low`` the largest failing point below it. The root estimates of
:mod:`accountant.learning.calibration_steps` only decide where to look.
"""

from __future__ import annotations

import math
import warnings

import attrs

from accountant.buckets.progress import tick
from accountant.dpsgd.accountant import DPSGDAccountant
from accountant.errors import CertificationWarning, InfeasibleTargetError
from accountant.learning import calibration_steps as steps_
from accountant.learning.calibration_results import CalibrationPoint, NoiseCalibration
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian

__all__ = ["MIN_SIGMA", "CalibrationSearch", "CalibrationSettings"]

#: Noise multipliers below this are not searched (nor below ``1/(2 cut)``, where the
#: mechanism is undefined).
MIN_SIGMA = 1e-3
_TINY = 1e-300  # logs of zero bounds


@attrs.frozen
class CalibrationSettings:
    """The checked arguments of one calibration."""

    epsilon: float
    delta: float
    sampling_rate: float
    steps: int
    dimension: int
    cut: float
    clip: float
    truncation: str
    tolerance: float
    accuracy: float | None
    search_accuracy: float
    max_sigma: float
    max_evaluations: int

    @property
    def log_window(self) -> float:
        """``ln(1 + tolerance)``: the widest ``ln(sigma / sigma_low)`` accepted."""
        return math.log1p(self.tolerance)

    @property
    def min_sigma(self) -> float:
        return max(MIN_SIGMA, 0.5 / self.cut * (1.0 + 1e-6))


class CalibrationSearch:
    """The state of one calibration: the points evaluated, in order."""

    def __init__(self, settings: CalibrationSettings) -> None:
        self.s = settings
        self.points: list[CalibrationPoint] = []
        self.reasons: dict[float, str] = {}  # sigma -> why its bracket stayed wide
        self.too_wide = ""  # why the tolerance cannot be met, once that is clear
        self.best_gap = math.inf  # the ln(sigma / sigma_low) that is then good enough

    # -- evaluating -------------------------------------------------------------------

    def evaluate(self, sigma: float, accuracy: float) -> CalibrationPoint:
        s = self.s
        mechanism = SubsampledTruncatedGaussian(
            sigma=sigma,
            sampling_rate=s.sampling_rate,
            cut=s.cut,
            clip=s.clip,
            truncation=s.truncation,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CertificationWarning)
            accountant = DPSGDAccountant(dimension=s.dimension, accuracy=accuracy)
            bounds = accountant.compose(mechanism, s.steps).delta(s.epsilon)
        for record in caught:
            if issubclass(record.category, CertificationWarning):
                self.reasons[sigma] = str(record.message)
            else:  # not ours to swallow
                warnings.warn_explicit(
                    record.message, record.category, record.filename, record.lineno
                )
        point = CalibrationPoint(
            sigma=sigma,
            lower=float(bounds.lower),
            upper=float(bounds.upper),
            accuracy=accuracy,
            achieved_accuracy=float(bounds.achieved_accuracy),
        )
        self.points.append(point)
        tick(f"sigma {sigma:.6g}: delta in [{point.lower:.3g}, {point.upper:.3g}]")
        return point

    def y(self, point: CalibrationPoint) -> float:
        """``ln delta - ln target`` at the point's geometric-mean delta (upper alone when
        the lower bound is 0)."""
        log_upper = math.log(max(point.upper, _TINY))
        centre = log_upper
        if point.lower > 0.0:
            centre = 0.5 * (math.log(max(point.lower, _TINY)) + log_upper)
        return centre - math.log(self.s.delta)

    # -- what is certified so far -----------------------------------------------------

    def meets(self) -> CalibrationPoint | None:
        """The smallest sigma whose certified upper delta meets the target."""
        good = [p for p in self.points if p.upper <= self.s.delta]
        return min(good, key=lambda p: p.sigma, default=None)

    def fails(self, below: float) -> CalibrationPoint | None:
        """The largest sigma below ``below`` whose certified lower delta exceeds it."""
        bad = [p for p in self.points if p.lower > self.s.delta and p.sigma < below]
        return max(bad, key=lambda p: p.sigma, default=None)

    def bracket(self) -> tuple[CalibrationPoint | None, CalibrationPoint | None]:
        high = self.meets()
        return high, self.fails(math.inf if high is None else high.sigma)

    def converged(self) -> bool:
        high, low = self.bracket()
        return (
            high is not None
            and low is not None
            and math.log(high.sigma / low.sigma) <= self.s.log_window
        )

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> NoiseCalibration:
        s = self.s
        estimate = steps_.gdp_start(s.epsilon, s.delta, s.sampling_rate, s.steps)
        x_min, x_max = math.log(s.min_sigma), math.log(s.max_sigma)
        stop = ""
        while not self.converged():
            if len(self.points) >= s.max_evaluations:
                stop = (
                    f"the budget of max_evaluations={s.max_evaluations} queries ran out; "
                    "raise max_evaluations"
                )
                break
            x, accuracy = self.propose(estimate)
            if self.too_wide and self.close_enough():
                stop = self.too_wide
                break
            x = min(max(x, x_min), x_max)
            sigma = math.exp(x)
            if any(p.sigma == sigma and p.accuracy <= accuracy for p in self.points):
                stop = self.stuck(sigma, x_min, x_max)
                break
            self.evaluate(sigma, accuracy)
            estimate = steps_.estimate_root(
                [(math.log(p.sigma), self.y(p)) for p in self.points],
                default_slope=estimate.slope,
            )
        high, _ = self.bracket()
        if (  # a given accuracy is what the returned sigma is certified at
            high is not None
            and s.accuracy is not None
            and high.achieved_accuracy > s.accuracy
            and not any(p.sigma == high.sigma and p.accuracy <= s.accuracy for p in self.points)
        ):
            self.evaluate(high.sigma, s.accuracy)
        return self.result(stop)

    def final_accuracy(self, slope: float) -> float:
        """``accuracy`` if given, else ``ln(1 + tolerance) |slope| / 2`` (at most the
        search accuracy): a bracket that decides a sigma a quarter window from the root."""
        s = self.s
        if s.accuracy is not None:
            return s.accuracy
        needed = 0.5 * s.log_window * abs(slope)
        return min(max(needed, 1e-6), s.search_accuracy)

    def propose(self, estimate: steps_.RootEstimate) -> tuple[float, float]:
        """The next ``(ln sigma, accuracy)``: the root estimate at the search accuracy
        while it is far from every point evaluated; then, at the final accuracy, ``sigma``
        just above where the upper bound crosses the target and ``sigma_low`` one window
        (``ln(1 + tolerance)``) below it, or just below where the lower bound crosses it
        when the brackets are too wide for one window (:attr:`too_wide` says why)."""
        s = self.s
        search = max(s.search_accuracy, s.accuracy or 0.0)
        self.too_wide = ""
        if not self.points:
            return estimate.x, search
        fine = self.final_accuracy(estimate.slope)
        resolution = s.log_window + search / abs(estimate.slope)
        nearest = min(abs(math.log(p.sigma) - estimate.x) for p in self.points)
        narrow = estimate.bracket is not None and (
            estimate.bracket[1] - estimate.bracket[0] <= 4.0 * resolution
        )
        if not (narrow or nearest <= resolution):
            return estimate.x, search
        spread, why, fine = self.spread(estimate, fine)
        window = s.log_window
        slack = max(window - spread, 0.0) / 2.0 if spread <= window else window / 4.0
        if spread > window:
            self.too_wide, self.best_gap = why, 1.25 * spread + window
        high, _ = self.bracket()
        target_high = estimate.x + spread / 2.0 + slack
        if high is None or math.log(high.sigma) > target_high + window / 2.0:
            return target_high, fine
        if not self.too_wide:
            return math.log(high.sigma) - window * (1.0 - 1e-9), fine
        return math.log(high.sigma) - spread - 2.0 * slack, fine

    def spread(self, estimate: steps_.RootEstimate, fine: float) -> tuple[float, str, float]:
        """How far apart (in ``ln sigma``) the upper and the lower bound cross the target,
        ``ln(upper / lower) / |slope|``, why that is wider than one window, and the
        accuracy to ask. The width is that of the latest point evaluated at the final
        accuracy or left wider than asked by PrivacyBuckets (before any: what ``fine``
        allows, or the latest bracket if that came out narrower). When
        PrivacyBuckets could not narrow a bracket, asking again for more than it reached
        only costs time: the accuracy asked is then what it reached."""
        limited = [p for p in self.points if p.achieved_accuracy > p.accuracy]
        ask = max(fine, min(limited[-1].achieved_accuracy, 0.5)) if limited else fine
        informative = [
            p
            for p in self.points
            if p.lower > 0.0
            and (p.accuracy <= ask * (1.0 + 1e-9) or p.achieved_accuracy > p.accuracy)
        ]
        width = -math.log1p(-ask)
        measured = [p for p in self.points if p.lower > 0.0]
        if measured and not informative:  # coarser queries that came out narrower
            width = min(width, math.log(measured[-1].upper / measured[-1].lower))
        if informative:
            width = math.log(informative[-1].upper / informative[-1].lower)
        why = (
            f"certified delta brackets of relative width {-math.expm1(-width):.3g} span "
            f"{width / abs(estimate.slope):.3g} in ln sigma, more than ln(1 + tolerance) = "
            f"{self.s.log_window:.3g}; "
        )
        if limited:
            latest = limited[-1]
            why += (
                f"at sigma={latest.sigma:.6g} PrivacyBuckets reached "
                f"{latest.achieved_accuracy:.3g}, not {latest.accuracy:.3g}: "
                f"{self.reasons.get(latest.sigma, 'it could not narrow the bracket')}"
            )
        else:
            why += "ask a finer accuracy"
        return width / abs(estimate.slope), why, ask

    def close_enough(self) -> bool:
        """With brackets too wide for the tolerance: whether ``sigma`` and ``sigma_low``
        are both certified (the best those brackets allow is then found)."""
        high, low = self.bracket()
        return (
            high is not None
            and low is not None
            and math.log(high.sigma / low.sigma) <= self.best_gap
        )

    def stuck(self, sigma: float, x_min: float, x_max: float) -> str:
        """Why the search proposes a sigma it already evaluated (at an end of its range,
        or with nothing left to learn there)."""
        high, _ = self.bracket()
        if math.log(sigma) >= x_max and high is None:
            point = next(p for p in self.points if p.sigma == sigma)
            raise _infeasible(self.s, point)
        if math.log(sigma) <= x_min and high is not None and high.sigma == sigma:
            return (
                f"the target is met at the smallest noise multiplier searched, "
                f"sigma={sigma:.6g} (MIN_SIGMA or 1/(2 cut)); no sigma_low exists there"
            )
        return f"the search returned to sigma={sigma:.6g} without new information"

    def result(self, stop: str) -> NoiseCalibration:
        s = self.s
        high, low = self.bracket()
        if high is None:
            top = max(self.points, key=lambda p: p.sigma)
            if top.sigma >= s.max_sigma * (1.0 - 1e-12):
                raise _infeasible(s, top)
            raise InfeasibleTargetError(
                f"no noise multiplier was certified to meet delta={s.delta!r} at "
                f"epsilon={s.epsilon!r} within {len(self.points)} PrivacyBuckets queries "
                f"(largest tried: sigma={top.sigma:.6g}, certified delta in "
                f"[{top.lower:.4g}, {top.upper:.4g}]): {stop}"
            )
        # every query at sigma is certified: report their intersection
        lower = max(p.lower for p in self.points if p.sigma == high.sigma)
        upper = min(p.upper for p in self.points if p.sigma == high.sigma)
        achieved = (upper - lower) / upper if upper > 0.0 else 0.0
        notes = []
        converged = self.converged()
        if not converged:
            width = "no sigma_low"
            if low is not None:
                width = f"sigma/sigma_low - 1 = {high.sigma / low.sigma - 1.0:.3g}"
            notes.append(
                f"sigma={high.sigma:.6g} is certified, but not within tolerance "
                f"{s.tolerance:g} of a sigma certified to fail ({width}): {stop}"
            )
        if s.accuracy is not None and achieved > s.accuracy:
            notes.append(
                f"the certified delta bracket at sigma={high.sigma:.6g} has relative width "
                f"{achieved:.3g}, not the requested accuracy {s.accuracy:g}: "
                f"{self.reasons.get(high.sigma, 'PrivacyBuckets gave no reason')}"
            )
        for note in notes:
            warnings.warn(note, CertificationWarning, stacklevel=4)
        return NoiseCalibration(
            sigma=high.sigma,
            sigma_low=None if low is None else low.sigma,
            delta_lower=lower,
            delta_upper=upper,
            sigma_low_delta_lower=None if low is None else low.lower,
            epsilon=s.epsilon,
            delta=s.delta,
            sampling_rate=s.sampling_rate,
            steps=s.steps,
            dimension=s.dimension,
            cut=s.cut,
            clip=s.clip,
            truncation=s.truncation,
            tolerance=s.tolerance,
            converged=converged,
            points=tuple(self.points),
            notes=tuple(notes),
        )


def _infeasible(s: CalibrationSettings, point: CalibrationPoint) -> InfeasibleTargetError:
    why = ""
    if point.lower <= s.delta:
        why = (
            "; its certified lower bound is below the target, so a larger sigma may meet "
            "it (raise max_sigma), unless the accountant cannot certify a delta this small"
        )
    return InfeasibleTargetError(
        f"no noise multiplier up to max_sigma={s.max_sigma:g} is certified to meet "
        f"delta={s.delta!r} at epsilon={s.epsilon!r} after {s.steps} steps with "
        f"sampling_rate={s.sampling_rate!r}: at sigma={point.sigma:.6g} the certified "
        f"delta is [{point.lower:.4g}, {point.upper:.4g}]{why}"
    )
