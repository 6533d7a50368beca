"""The two query walks of :class:`~accountant.buckets.engine.PrivacyBuckets`: delta at a
vector of eps, and eps at one delta, each down the refinement ladder of
:mod:`accountant.buckets.refinement`.

At every rung a direction's composition is the one its query needs: compositions of rounded
releases are tilted (:mod:`accountant.buckets.rounded_plan`) towards the eps asked for, or
towards the eps where the Chernoff bound reaches the delta asked for, so that the FFT's
round-off is small against the delta at that eps. A delta query whose eps call for
different tilts evaluates each group of entries on its own composition (at most
:data:`MAX_TILTS` of them, each entry on the tilt nearest below its own: a tilt below the
best one is still at least as good as none).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from accountant.buckets.bounds import adp_upper, pdp_atom
from accountant.buckets.epsilon import epsilon_interval
from accountant.buckets.gaussian_dominance import composed_gaussian, gaussian_epsilon_bounds
from accountant.buckets.refinement import (
    AIMED_WIDTHS,
    BUCKETING,
    MAX_RUNGS,
    SEARCH_TOLERANCE,
    START_ACCURACY,
    Intersection,
    bracket_terms,
    bucketing_gaps,
    eps_refinable,
    interval,
    intervals,
    largest_other,
    monotone_envelope,
    relative_bracket,
    worth_refining,
)
from accountant.errors import CertificationWarning, InfeasibleTargetError, InvalidInputError
from accountant.results import Bounds, EpsilonBounds
from accountant.validation import (
    Direction,
    Kind,
    OneDirection,
    check_direction,
    check_epsilons,
    check_target_delta,
    directions_of,
)

if TYPE_CHECKING:
    from accountant.buckets.engine import PrivacyBuckets

__all__ = ["MAX_TILTS", "delta_walk", "epsilon_walk"]

#: Largest number of differently tilted compositions one delta query evaluates per rung.
MAX_TILTS = 4


def _tilt_groups(tilts: np.ndarray) -> list[tuple[float, np.ndarray]]:
    """``[(tilt, entries)]``: entries grouped on at most :data:`MAX_TILTS` tilts, each entry
    on the largest chosen tilt not above its own."""
    distinct = np.unique(tilts)
    if distinct.size > MAX_TILTS:
        distinct = distinct[np.linspace(0, distinct.size - 1, MAX_TILTS).round().astype(int)]
    chosen = distinct[np.maximum(np.searchsorted(distinct, tilts, side="right") - 1, 0)]
    return [(float(t), np.flatnonzero(chosen == t)) for t in np.unique(chosen)]


def _compositions(buckets: PrivacyBuckets, direction: str, rung: int, eps: np.ndarray) -> None:
    """Compose (into the accountant's cache) what :func:`_direction_brackets` will read."""
    for tilt, _ in _tilt_groups(buckets._tilts(direction, rung, eps)):
        buckets._rung(direction, rung, tilt)


def _direction_brackets(
    buckets: PrivacyBuckets, direction: str, rung: int, eps: np.ndarray, kind: str
) -> list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]]:
    """``[(pld, entries, lower, upper)]`` of ``direction`` at ``rung`` for every eps."""
    tilts = buckets._tilts(direction, rung, eps)
    groups = []
    for tilt, entries in _tilt_groups(tilts):
        pld = buckets._rung(direction, rung, tilt)
        low, high = intervals(pld, eps[entries], kind)
        groups.append((pld, entries, low, high))
    return groups


def delta_walk(buckets: PrivacyBuckets, epsilon: Any, direction: Direction, kind: Kind) -> Bounds:
    """The work of :meth:`PrivacyBuckets.delta` and :meth:`~PrivacyBuckets.delta_pdp`.

    An ADP query at an accuracy coarser than
    :data:`~accountant.buckets.refinement.START_ACCURACY` aims its rungs at that accuracy
    as eps queries do (rung 0 from the model of
    :meth:`~accountant.buckets.engine.PrivacyBuckets._aim_delta`, later ones from the
    bracket measured); finer accuracies walk the fixed ladder, so that their brackets nest
    (a finer accuracy never gives a wider one)."""
    direction = check_direction("direction", direction)
    eps = check_epsilons("epsilon", epsilon)
    if kind != "ADP" or buckets.accuracy <= START_ACCURACY:
        return _delta_walk(buckets, eps, direction, kind, aimed=False)
    token = AIMED_WIDTHS.set({})  # this query's rungs: aimed at its accuracy
    try:
        return _delta_walk(buckets, eps, direction, kind, aimed=True)
    finally:
        AIMED_WIDTHS.reset(token)


def _delta_walk(
    buckets: PrivacyBuckets, eps: np.ndarray, direction: Direction, kind: Kind, aimed: bool
) -> Bounds:
    flat = eps.reshape(-1)
    directions: tuple[str, ...] = directions_of(direction)
    running = Intersection(directions, flat.size)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    brackets: dict = {}
    relevant = list(directions)
    pair = composed_gaussian(buckets.components) if kind == "ADP" else None
    closed = None
    if pair is not None:  # the closed form of the dominating Gaussian pair bounds each
        closed = np.array([pair.delta_bounds(float(e)) for e in flat]).reshape(-1, 2)
        if relative_bracket(closed[:, 0], closed[:, 1]) <= buckets.accuracy:
            return Bounds(
                lower=_reshape(closed[:, 0], eps.shape),
                upper=_reshape(closed[:, 1], eps.shape),
                epsilon=_reshape(flat, eps.shape),
                kind=kind,
                direction=direction,
                releases=buckets.releases,
                accuracy=buckets.accuracy,
                achieved_accuracy=relative_bracket(closed[:, 0], closed[:, 1]),
                bucket_width=0.0,  # the closed form alone: no bucket composed
                atom=_reshape(np.zeros(flat.size), eps.shape),
            )
    if aimed:
        for d in directions:
            buckets._aim_delta(d, flat)
    for rung in range(MAX_RUNGS + 1):
        # Directions that can no longer change the result, or whose width did not
        # change, are not recomputed.
        todo = [d for d in relevant if not rung or buckets._finer(d, rung)]
        buckets._in_parallel(
            [lambda d=d, r=rung: _compositions(buckets, d, r, flat) for d in todo], todo, rung
        )
        for d in todo:
            brackets[d] = _direction_brackets(buckets, d, rung, flat, kind)
            low, high = np.zeros(flat.size), np.full(flat.size, np.inf)
            for _, entries, group_low, group_high in brackets[d]:
                low[entries], high[entries] = group_low, group_high
            if closed is not None:
                low, high = np.maximum(low, closed[:, 0]), np.minimum(high, closed[:, 1])
            running.add(d, low, high)
        lower, upper = monotone_envelope(flat, *running.combined())
        terms = bracket_terms(lower, upper)
        refinable = _refinable(buckets, flat, kind, terms, brackets, running.limiting())
        relevant = running.relevant()
        if aimed:  # the next rung aimed (before _stop reads it)
            term = float(np.max(terms, initial=0.0))
            for d in relevant:
                buckets._aim(d, rung, term, _rounded(buckets, d), buckets.accuracy)
        reason = buckets._stop(terms, refinable, steps, relevant, rung)
        if reason is not None:
            break
        steps.append((terms, refinable))
    achieved = relative_bracket(lower, upper)
    atom = _atoms(flat, kind, brackets, running.limiting())
    decided = relative_bracket(lower, np.maximum(upper - atom, lower))
    if decided > buckets.accuracy:
        if not refinable[int(np.argmax(terms))]:
            reason = BUCKETING  # whatever stopped the walk, the widest one is not bucketing
        warnings.warn(
            f"PrivacyBuckets reached a relative bracket of {achieved:.3g}, not the requested "
            f"accuracy {buckets.accuracy:g}: {reason} (bounds still certified)",
            CertificationWarning,
            stacklevel=4,
        )
    shape = eps.shape
    return Bounds(
        lower=_reshape(lower, shape),
        upper=_reshape(upper, shape),
        epsilon=_reshape(flat, shape),
        kind=kind,
        direction=direction,
        releases=buckets.releases,
        accuracy=buckets.accuracy,
        achieved_accuracy=achieved,
        bucket_width=max(g[0].width for groups in brackets.values() for g in groups),
        atom=_reshape(atom, shape),
    )


def _atoms(eps: np.ndarray, kind: str, brackets: dict, limiting: list[str]) -> np.ndarray:
    """PDP: per eps, the A-mass of composed point losses at eps, within their rounding
    (:func:`~accountant.buckets.bounds.pdp_atom`), of the direction that sets the upper
    bound; 0 for ADP (whose integrand vanishes at eps) and for loss intervals."""
    atom = np.zeros(eps.size)
    if kind != "PDP":
        return atom
    for d, groups in brackets.items():
        mine = np.array([x == d for x in limiting], dtype=bool)
        for pld, entries, _, _ in groups:
            chosen = entries[mine[entries]]
            if chosen.size:
                edges = pld.edges()
                atom[chosen] = [pdp_atom(pld, float(e), edges) for e in eps[chosen]]
    return atom


def _refinable(
    buckets: PrivacyBuckets,
    eps: np.ndarray,
    kind: str,
    terms: np.ndarray,
    brackets: dict,
    limiting: list[str],
) -> np.ndarray:
    """Which entries are wider than the accuracy and worth refining in the direction
    that sets their upper bound (:func:`~accountant.buckets.refinement.worth_refining`
    of that direction's bracket at this rung)."""
    refinable = terms > buckets.accuracy
    for d, groups in brackets.items():
        mine = np.array([x == d for x in limiting], dtype=bool)
        for pld, entries, low, high in groups:
            picked = refinable[entries] & mine[entries]
            if picked.any():
                chosen = entries[picked]
                gaps = bucketing_gaps(pld, eps[chosen], kind, low[picked], high[picked])
                refinable[chosen] = worth_refining(gaps, high[picked] - low[picked])
    return refinable


def epsilon_walk(
    buckets: PrivacyBuckets, delta: float | np.ndarray, direction: Direction, kind: Kind
) -> EpsilonBounds:
    """The work of :meth:`PrivacyBuckets.epsilon` at one delta."""
    target = check_target_delta("delta", delta)
    direction = check_direction("direction", direction)
    if kind not in ("ADP", "PDP"):
        raise InvalidInputError(f"kind must be 'ADP' or 'PDP', got {kind!r}")
    token = AIMED_WIDTHS.set({})  # this query's rungs: aimed at its accuracy
    try:
        return _epsilon_walk(buckets, target, direction, kind)
    finally:
        AIMED_WIDTHS.reset(token)


def _epsilon_walk(buckets: PrivacyBuckets, target: float, direction: Direction, kind: Kind):
    directions = directions_of(direction)
    low = dict.fromkeys(directions, 0.0)
    high = dict.fromkeys(directions, math.inf)
    pair = composed_gaussian(buckets.components) if kind == "ADP" else None
    if pair is not None:  # the closed form of the dominating Gaussian pair bounds each
        floor, cap = gaussian_epsilon_bounds(pair, target)
        low, high = dict.fromkeys(directions, floor), dict.fromkeys(directions, cap)
        if cap - floor <= buckets.accuracy * cap:
            return _closed_form_epsilon(buckets, target, direction, floor, cap)
    if kind == "ADP":
        estimates = {d: buckets._aim_epsilon(d, target) for d in directions}
        buckets._aim_lesser(estimates)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    plds: dict = {}
    relevant = list(directions)
    for rung in range(MAX_RUNGS + 1):
        todo = [d for d in relevant if not rung or buckets._finer(d, rung)]
        buckets._in_parallel(
            [
                lambda d=d, r=rung: buckets._rung(d, r, buckets._tilt_for_delta(d, r, target))
                for d in todo
            ],
            todo,
            rung,
        )
        try:
            for d in _likely_largest_first(buckets, todo, rung, target):
                plds[d] = buckets._rung(d, rung, buckets._tilt_for_delta(d, rung, target))
                others = largest_other(low, d)
                if others > 0.0 and _certifies(plds[d], others, target, kind):
                    # eps_d <= the others' certified lower end: d cannot be the largest,
                    # and one evaluation says so (no search)
                    high[d] = min(high[d], others)
                    continue
                within = (low[d], high[d]) if rung else None
                try:
                    found = epsilon_interval(plds[d], target, kind, within, SEARCH_TOLERANCE)
                except InfeasibleTargetError:
                    if rung or not _only_too_coarse(plds[d], target, kind):
                        raise
                    continue  # an aimed start too coarse to certify it: the next rung will
                low[d], high[d] = max(low[d], found[0]), min(high[d], found[1])
        except InfeasibleTargetError:
            if rung == 0:
                raise
            reason = "a finer bucket width could not certify the target"
            break
        lower, upper = max(low.values()), max(high.values())
        term = np.array([_eps_bracket(lower, upper)])
        # a direction matters while its eps may exceed every other direction's lower end
        relevant = [d for d in directions if high[d] > largest_other(low, d)]
        refinable = term > buckets.accuracy
        if refinable[0] and math.isfinite(upper):  # (unbounded above: a finer rung may bound it)
            ends = np.array([upper, lower])
            refinable[0] = any(eps_refinable(plds[d], ends, kind) for d in relevant)
        held = 0
        for d in relevant:  # the next rung aimed (before _stop reads it)
            if _settled(buckets, plds[d], low[d], high[d], kind):
                buckets._hold(d, rung)
                held += 1
            else:
                buckets._aim(d, rung, *_aim_for(buckets, d, low, high, float(term[0])))
        reason = buckets._stop(term, refinable, steps, relevant, rung)
        if reason and held == len(relevant):
            reason = BUCKETING  # (not the memory budget: no direction was worth refining)
        if reason is not None:
            break
        steps.append((term, refinable))
    achieved = _eps_bracket(lower, upper)
    if achieved > buckets.accuracy:
        warnings.warn(
            f"PrivacyBuckets reached a relative eps bracket of {achieved:.3g} "
            f"([{lower:.6g}, {upper:.6g}]), not the requested accuracy {buckets.accuracy:g}: "
            f"{reason} (bounds still certified)",
            CertificationWarning,
            stacklevel=3,
        )
    return EpsilonBounds(
        lower=lower,
        upper=upper,
        delta=target,
        kind=kind,
        direction=direction,
        releases=buckets.releases,
        accuracy=buckets.accuracy,
        # the width of the composition that decided the answer (the largest upper end)
        bucket_width=plds[max(plds, key=lambda d: high[d])].width,
    )


def _eps_bracket(lower: float, upper: float) -> float:
    """``(upper - lower) / upper``; 0 for ``upper = 0`` or ``lower = upper`` (an infinite eps
    certified), and 1 for an infinite upper end above a finite lower one (refined, and said,
    like any other wide bracket: never a NaN that compares false)."""
    if upper <= 0.0 or lower >= upper:
        return 0.0
    return (upper - lower) / upper if math.isfinite(upper) else 1.0


def _closed_form_epsilon(
    buckets: PrivacyBuckets, target: float, direction: Direction, lower: float, upper: float
) -> EpsilonBounds:
    """The eps bounds of a composition that is a Gaussian pair, from its closed form alone
    (:mod:`~accountant.buckets.gaussian_dominance`): no bucket was composed
    (``bucket_width`` 0)."""
    return EpsilonBounds(
        lower=lower,
        upper=upper,
        delta=target,
        kind="ADP",
        direction=direction,
        releases=buckets.releases,
        accuracy=buckets.accuracy,
        bucket_width=0.0,
    )


def _only_too_coarse(pld: Any, target: float, kind: str) -> bool:
    """Whether a rounded composition fails to certify ``target`` only by its second-order
    terms (a coarse start: a finer width will), not by a distinguishing mass above it."""
    if pld.hoeffding_variance <= 0.0:
        return False
    top = float(pld.edges()[1].max()) if pld.size else 0.0
    beyond = max(0.0, top) * (1 + 1e-12) + 1e-300
    return interval(pld, beyond, pld.edges(), kind)[0] <= target


def _settled(buckets: PrivacyBuckets, pld, low: float, high: float, kind: str) -> bool:
    """Whether a finer width of this direction cannot narrow the query's eps bracket: its own
    bracket ``[low, high]`` meets the accuracy, or is not limited by bucketing
    (:func:`~accountant.buckets.refinement.eps_refinable` at its own ends). The query's
    bracket may still be wide because of another direction's upper end: refining this one
    does not lower that (sigma 0.7, q 1e-4, 10^6 steps: A/B at rel 5e-4, held by the FFT's
    round-off, was refined 8 times finer, 8 s for the same bracket, because B/A was not yet
    settled below it)."""
    if not math.isfinite(high):
        return False
    if _eps_bracket(low, high) <= buckets.accuracy:
        return True
    return not eps_refinable(pld, np.array([high, low]), kind)


def _aim_for(
    buckets: PrivacyBuckets, direction: str, low: dict, high: dict, term: float
) -> tuple[float, bool, float]:
    """``(bracket, rounded, goal)`` to aim ``direction``'s next rung with: the query's
    relative bracket and accuracy, except for a direction whose bracket's middle lies below
    another's: it only has to be settled below that one, so its own bracket is aimed at half
    the gap between the middles (a coarser width), not at the accuracy."""
    rounded = _rounded(buckets, direction)
    middle = {d: 0.5 * (low[d] + high[d]) for d in low if math.isfinite(high[d])}
    mine, others = middle.get(direction), largest_other(middle, direction)
    if mine is not None and 0.0 < mine < others:
        own = (high[direction] - low[direction]) / high[direction]
        gap = 0.5 * (others - mine) / others
        return own, rounded, max(buckets.accuracy, gap)
    return term, rounded, buckets.accuracy


def _rounded(buckets: PrivacyBuckets, direction: str) -> bool:
    """Whether ``direction``'s compositions are of rounded releases (brackets ``~ w^2``)."""
    return any(
        key[0] == buckets._canonical(direction) and pld.hoeffding_variance > 0.0
        for key, pld in buckets._memo.composed.items()
    )


def _likely_largest_first(
    buckets: PrivacyBuckets, todo: list[OneDirection], rung: int, target: float
) -> list[OneDirection]:
    """``todo`` ordered by the Chernoff estimate of eps at ``target`` (largest first), so
    that the direction that decides the query is searched first and the others may be
    settled by one evaluation (``_epsilon_walk``). Only the order, never a bound, depends
    on the estimate."""

    def estimate(direction: str) -> float:
        plan = buckets._rung_plan(direction, rung)
        return -math.inf if plan is None else plan.chernoff_eps(target)

    return sorted(todo, key=estimate, reverse=True)


def _certifies(pld, eps: float, target: float, kind: str) -> bool:
    """Whether the certified upper delta of ``pld`` at ``eps`` is at most ``target`` (then
    ``eps`` is a certified upper bound on its eps at ``target``: delta is non-increasing)."""
    if kind == "ADP":
        return adp_upper(pld, eps) <= target
    return interval(pld, eps, pld.edges(), kind)[1] <= target


def _reshape(values: np.ndarray, shape: tuple) -> float | np.ndarray:
    return float(values[0]) if shape == () else values.reshape(shape)
