"""The search behind the one-parameter baselines (:mod:`~accountant.learning.gaussian_baseline`,
:mod:`~accountant.learning.laplace_baseline`): the smallest scale of a family of truncated
noises on a fixed range and grid whose certified delta meets a target.

For a fixed range the certified delta first falls with the scale (the body spreads) and
then rises again (the truncation: the distinguishing events at the edges gain mass); the
L1 and L2 utility losses grow with the scale, so the best member is the smallest scale
meeting the target. The search **assumes delta(scale) is unimodal** (observed in
practice, not proved); if it is not, a smaller feasible scale may be missed.

1. A bounded scalar search on ``log(scale)`` (``xatol`` 1e-3) over ``[step / 2,
   10 * bound]`` finds the scale minimising the certified delta. If that minimum exceeds
   the target, an :class:`~accountant.errors.InfeasibleTargetError` names the best
   reachable delta and its scale.
2. On the falling branch, bisection on ``log(scale)`` finds the smallest scale meeting the
   target to relative tolerance ``rtol``; the feasible end is returned.

CertificationWarnings are silenced during the search but not in the final
:func:`~accountant.learning.certification.certify` of the returned noise.
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
    PairMap,
    buckets_of,
    certified_bounds,
    certify,
    check_pair_map,
)
from accountant.noise import NoiseDistribution
from accountant.validation import (
    Kind,
    check_choice,
    check_nonnegative_real,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)

__all__ = ["FamilyBaseline", "FamilyMember", "best_member"]

UTILITIES = ("L1", "L2")
#: Factor by which the search steps down from the minimiser to bracket the target crossing.
_BRACKET_FACTOR = 2.0
#: Absolute tolerance, in log(sigma), of the bounded refinement of the minimiser.
_MINIMISER_XATOL = 1e-3


@attrs.frozen
class FamilyBaseline:
    """What every baseline reports: the ``noise`` found, its ``certificate``, and the
    utility kind and target delta it was chosen for (subclasses add the family's scale)."""

    noise: NoiseDistribution
    certificate: Certificate
    utility_kind: str
    target_delta: float

    @property
    def utility(self) -> float:
        """The utility loss of kind ``utility_kind`` of the noise."""
        return self.certificate.utility(self.utility_kind)


@attrs.frozen
class FamilyMember:
    """The member found: its ``scale``, the ``noise`` and its ``certificate``."""

    scale: float
    noise: NoiseDistribution
    certificate: Certificate


def _grid_step(step: object, pair_map: PairMap) -> float:
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


def _minimise_log_scale(
    delta_at: Callable[[float], float], low: float, high: float
) -> tuple[float, float]:
    """The scale in ``[low, high]`` minimising ``delta_at``, by a bounded scalar search
    (Brent / golden section) on ``log(scale)``; returns ``(scale, delta)``. On an exactly
    flat stretch (e.g. delta 0) any point of it may be returned."""
    import scipy.optimize  # (imported when needed: it costs 0.2 s)

    result = scipy.optimize.minimize_scalar(
        lambda t: delta_at(math.exp(t)),
        bounds=(math.log(low), math.log(high)),
        method="bounded",
        options={"xatol": _MINIMISER_XATOL},
    )
    scale = min(max(math.exp(float(result.x)), low), high)
    return scale, delta_at(scale)


def _smallest_feasible_scale(
    delta_at: Callable[[float], float], low: float, scale_min: float, target: float, rtol: float
) -> float:
    """The smallest scale in ``[low, scale_min]`` with ``delta_at(scale) <= target``, where
    ``delta_at(scale_min) <= target`` and delta is non-increasing on ``[low, scale_min]``.

    The bracket is found by stepping down from ``scale_min`` by :data:`_BRACKET_FACTOR`
    (tiny scale, where delta is near 1, is rarely evaluated), then bisected on
    ``log(scale)`` until ``hi <= lo * (1 + rtol)``; the feasible end ``hi`` is returned,
    or ``low`` itself when it meets the target.
    """
    hi = scale_min
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


def best_member(
    build: Callable[[float, float, float], NoiseDistribution],
    name: str,
    parameter: str,
    *,
    bound: float,
    pair_map: PairMap,
    step: float | None,
    epsilon: float,
    times: int,
    target_delta: float,
    utility: str,
    kind: Kind,
    accuracy: float,
    rtol: float,
) -> FamilyMember:
    """The member ``build(scale, bound, step)`` of the family called ``name``, whose
    scale is called ``parameter`` (both in messages), with the smallest scale whose
    certified upper delta (``kind``, at ``epsilon``, after ``times`` releases of
    ``pair_map``, PrivacyBuckets ``accuracy``) is at most ``target_delta`` (module
    docstring: the search and its assumption). Every argument is checked, naming it."""
    bound = check_positive_real("bound", bound)
    pair_map = check_pair_map(pair_map)
    step = _grid_step(step, pair_map)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    times = check_positive_int("times", times)
    target_delta = check_target_delta("target_delta", target_delta)
    check_choice("utility", utility, UTILITIES)
    kind = check_choice("kind", kind, KINDS)
    rtol = check_open_fraction("rtol", rtol)
    buckets = buckets_of(accuracy)
    low, high = step / 2.0, 10.0 * bound
    build(low, bound, step)  # validates that bound is a whole number of steps

    seen: dict[float, float] = {}  # local to this call

    def delta_at(scale: float) -> float:
        if scale not in seen:
            noise = build(scale, bound, step)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CertificationWarning)
                bounds, _ = certified_bounds(buckets, noise, pair_map, epsilon, times, kind)
            seen[scale] = float(bounds.upper)
        return seen[scale]

    scale_min, delta_min = _minimise_log_scale(delta_at, low, high)
    if delta_min > target_delta:
        raise InfeasibleTargetError(
            f"target_delta={target_delta!r} is below the smallest certified {kind} delta "
            f"{delta_min:.6g} of any {name} on [-{bound:g}, {bound:g}] "
            f"(step {step:g}), reached near {parameter}={scale_min:.6g}; widen the range, "
            "raise epsilon or target_delta, or compose fewer releases"
        )
    scale = _smallest_feasible_scale(delta_at, low, scale_min, target_delta, rtol)
    noise = build(scale, bound, step)
    certificate = certify(  # warnings enabled here
        noise, pair_map, epsilon=epsilon, times=times, kind=kind, accuracy=accuracy
    )
    return FamilyMember(scale, noise, certificate)
