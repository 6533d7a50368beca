"""The best truncated Gaussian of a range and grid: the baseline learned noise is compared
against (paper, Section 6.2: "the best truncated Gaussian").

:func:`best_truncated_gaussian` searches the one-parameter family of truncated Gaussians
on a fixed range and grid for the smallest utility loss whose certified delta meets a
target.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import attrs

from accountant.errors import CertificationWarning, InfeasibleTargetError, InvalidInputError
from accountant.learning.certification import (
    KINDS,
    Certificate,
    buckets_of,
    certified_bounds,
    certify,
    check_pair_map,
)
from accountant.noise import NoiseDistribution, truncated_gaussian
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import (
    Kind,
    check_choice,
    check_nonnegative_real,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)

__all__ = ["GaussianBaseline", "best_truncated_gaussian"]

_UTILITIES = ("L1", "L2")
#: Factor by which the search steps down from the minimiser to bracket the target crossing.
_BRACKET_FACTOR = 2.0
#: Absolute tolerance, in log(sigma), of the bounded refinement of the minimiser.
_MINIMISER_XATOL = 1e-3


@attrs.frozen
class GaussianBaseline:
    """The truncated Gaussian with scale ``sigma`` found by :func:`best_truncated_gaussian`,
    its certificate, and the utility kind and target delta it was chosen for."""

    sigma: float
    noise: NoiseDistribution
    certificate: Certificate
    utility_kind: str
    target_delta: float

    @property
    def utility(self) -> float:
        """The utility loss of kind ``utility_kind`` of the noise."""
        return self.certificate.utility(self.utility_kind)


def _grid_step(step: object, pair_map: AdditivePairMap | SubsampledPairMap) -> float:
    """The grid step: the pair map's (built by :func:`~accountant.pairs.pair_maps.pair_map`);
    ``step`` may be given only for a map that has none, or equal to the map's."""
    if step is None:
        if pair_map.step is None:
            raise InvalidInputError(
                "step is needed: the pair map does not fix a grid step (build it with "
                "accountant.pairs.pair_maps.pair_map(step, sensitivity, q))"
            )
        return pair_map.step
    step = check_positive_real("step", step)
    if pair_map.step is not None and not math.isclose(step, pair_map.step, rel_tol=1e-9):
        raise InvalidInputError(
            f"step={step!r} disagrees with the pair map's grid step {pair_map.step!r} "
            f"(shift {pair_map.steps} steps = {pair_map.steps * pair_map.step:g}); give the "
            "step once, through pair_map(step, sensitivity, q)"
        )
    return step


def _minimise_log_sigma(
    delta_at: Callable[[float], float], low: float, high: float
) -> tuple[float, float]:
    """The sigma in ``[low, high]`` minimising ``delta_at``, by a bounded scalar search
    (Brent / golden section) on ``log(sigma)``; returns ``(sigma, delta)``. On an exactly
    flat stretch (e.g. delta 0) any point of it may be returned."""
    import scipy.optimize  # (imported when needed: it costs 0.2 s)

    result = scipy.optimize.minimize_scalar(
        lambda t: delta_at(math.exp(t)),
        bounds=(math.log(low), math.log(high)),
        method="bounded",
        options={"xatol": _MINIMISER_XATOL},
    )
    sigma = min(max(math.exp(float(result.x)), low), high)
    return sigma, delta_at(sigma)


def _smallest_feasible_sigma(
    delta_at: Callable[[float], float], low: float, sigma_min: float, target: float, rtol: float
) -> float:
    """The smallest sigma in ``[low, sigma_min]`` with ``delta_at(sigma) <= target``, where
    ``delta_at(sigma_min) <= target`` and delta is non-increasing on ``[low, sigma_min]``.

    The bracket is found by stepping down from ``sigma_min`` by :data:`_BRACKET_FACTOR`
    (tiny sigma, where delta is near 1, is rarely evaluated), then bisected on
    ``log(sigma)`` until ``hi <= lo * (1 + rtol)``; the feasible end ``hi`` is returned,
    or ``low`` itself when it meets the target.
    """
    hi = sigma_min
    while True:
        lo = max(hi / _BRACKET_FACTOR, low)
        if delta_at(lo) > target:
            break
        hi = lo
        if hi <= low:
            return low
    while hi > lo * (1.0 + rtol):
        mid = math.sqrt(lo * hi)
        if delta_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def best_truncated_gaussian(
    *,
    bound: float,
    pair_map: AdditivePairMap | SubsampledPairMap,
    step: float | None = None,
    epsilon: float,
    times: int,
    target_delta: float,
    utility: str = "L1",
    kind: Kind = "ADP",
    accuracy: float = 1e-3,
    rtol: float = 1e-4,
) -> GaussianBaseline:
    """The truncated Gaussian ``truncated_gaussian(sigma, bound, step)`` (grid
    ``[-bound, bound]``, spacing ``step``: the grid step of ``pair_map``, which fixes it;
    ``step`` may be repeated only if equal) with the smallest utility loss whose certified
    upper delta (``kind`` ``"ADP"`` or ``"PDP"``, at ``epsilon``, after ``times`` releases
    of ``pair_map``, PrivacyBuckets accuracy ``accuracy``) is at most ``target_delta``.

    "Best" means best among truncated Gaussians of this range and grid, found by a
    one-dimensional search over ``sigma`` in ``[step / 2, 10 * bound]``. The L1 and L2
    utility losses grow with sigma, so the best one is the smallest sigma meeting the
    target. For a fixed range the certified delta first falls with sigma (the Gaussian
    body spreads) and then rises again (the truncation: the distinguishing events at the
    edges gain mass). The search **assumes delta(sigma) is unimodal** (observed in
    practice, not proved); if it is not, a smaller feasible sigma may be missed.

    1. A bounded scalar search on ``log(sigma)`` (``xatol`` 1e-3) finds the sigma
       minimising the certified delta. If that minimum exceeds ``target_delta``, an
       :class:`~accountant.errors.InfeasibleTargetError` names the best reachable delta
       and its sigma.
    2. On the falling branch ``[step / 2, sigma_min]``, bisection on ``log(sigma)`` finds
       the smallest sigma meeting the target to relative tolerance ``rtol``; the feasible
       end is returned (``step / 2`` itself if that already meets the target).

    CertificationWarnings are silenced during the search but not in the final
    :func:`certify` of the returned noise. Nothing is cached between calls.
    """
    bound = check_positive_real("bound", bound)
    pair_map = check_pair_map(pair_map)
    step = _grid_step(step, pair_map)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    times = check_positive_int("times", times)
    target_delta = check_target_delta("target_delta", target_delta)
    utility = check_choice("utility", utility, _UTILITIES)
    kind = check_choice("kind", kind, KINDS)
    rtol = check_positive_real("rtol", rtol)
    if rtol >= 1.0:
        raise InvalidInputError(f"rtol must lie in (0, 1), got {rtol!r}")
    buckets = buckets_of(accuracy)
    low, high = step / 2.0, 10.0 * bound
    truncated_gaussian(low, bound, step)  # validates that bound is a whole number of steps

    seen: dict[float, float] = {}  # local to this call

    def delta_at(sigma: float) -> float:
        if sigma not in seen:
            noise = truncated_gaussian(sigma, bound, step)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificationWarning)
                bounds, _ = certified_bounds(buckets, noise, pair_map, epsilon, times, kind)
            seen[sigma] = float(bounds.upper)
        return seen[sigma]

    sigma_min, delta_min = _minimise_log_sigma(delta_at, low, high)
    if delta_min > target_delta:
        raise InfeasibleTargetError(
            f"target_delta={target_delta!r} is below the smallest certified {kind} delta "
            f"{delta_min:.6g} of any truncated Gaussian on [-{bound:g}, {bound:g}] "
            f"(step {step:g}), reached near sigma={sigma_min:.6g}; widen the range, "
            "raise epsilon or target_delta, or compose fewer releases"
        )
    sigma = _smallest_feasible_sigma(delta_at, low, sigma_min, target_delta, rtol)
    noise = truncated_gaussian(sigma, bound, step)
    certificate = certify(  # warnings enabled here
        noise, pair_map, epsilon=epsilon, times=times, kind=kind, accuracy=accuracy
    )
    return GaussianBaseline(sigma, noise, certificate, utility, target_delta)
