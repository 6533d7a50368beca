"""Audit an existing mechanism: every bound the accountant has, in one report.

This is what ``accountant audit`` prints; it is also usable from Python::

    from accountant import noise
    from accountant.report.audit import audit_additive
    report = audit_additive(noise.truncated_gaussian(100.0, 500.0, 0.5), 1.0, times=128)
    print(report.format_table())
    report.to_dict()        # the JSON form, see accountant.report.audit_results

For a delta query (``epsilon`` given) the report holds, in both directions: the
distinguishing mass of one release and after ``times`` releases, the exact ADP and PDP
delta of one release, the Extended MA delta after ``times`` releases under both
conversions (with the optimal lambda) and, for a single pair, the certified
PrivacyBuckets ADP and PDP brackets. For an eps query (``target_delta`` given) the
same quantities are the smallest eps meeting the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast, overload

import attrs

from accountant.buckets import PrivacyBuckets
from accountant.dpsgd import DPSGDAccountant
from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.moments.extended_ma import ExtendedMA
from accountant.noise import NoiseDistribution
from accountant.pairs.pld import privacy_loss_distribution
from accountant.pairs.worst_case import WorstCasePair, additive_shift_pairs
from accountant.report.audit_results import (
    AuditMechanism,
    AuditQuery,
    AuditReport,
    AuditResults,
    Bracket,
    BucketsResult,
    Directional,
    MomentsResult,
)
from accountant.validation import (
    ONE_DIRECTION,
    Direction,
    Kind,
    OneDirection,
    check_direction,
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_target_delta,
)

__all__ = [
    "GRID_FREE_OPTIONS",
    "AuditReport",
    "Progress",
    "audit_additive",
    "audit_pairs",
    "audit_query",
    "audited_accountant",
    "buckets_result",
    "is_dp_sgd_pair",
    "moments_results",
    "one_coordinate_note",
    "too_many_releases",
]


#: ``progress(stage, done, total)`` is called before each stage of an audit.
Progress = Callable[[str, int, int], None]

#: The grid-free DP-SGD audit's options, for :func:`one_coordinate_note`.
GRID_FREE_OPTIONS = "--noise-multiplier S --sampling-rate Q --steps N --cut K"


def one_coordinate_note(options: str = GRID_FREE_OPTIONS) -> str:
    """What a one-dimensional DP-SGD result bounds: a 1-coordinate model from above, a
    model of ``d > 1`` coordinates only from below (``docs/guide/dp-sgd.md``); and the
    audit that certifies ``D`` coordinates (``options``: the grid-free audit's, with the
    values when they are known)."""
    return (
        "upper bound for a 1-coordinate model only; for d > 1 coordinates it is a lower "
        f"bound — use {options} --dimension D"
    )


def is_dp_sgd_pair(pair: WorstCasePair) -> bool:
    """Whether ``pair`` is the one-dimensional DP-SGD mixture pair, as
    :meth:`WorstCasePair.subsampled` describes it (``"DP-SGD with ..."``, or its
    flipped pair)."""
    return pair.description.startswith(("DP-SGD", "flipped(DP-SGD"))


@attrs.define
class _Stages:
    """Calls ``progress`` with a running stage count (a no-op without a callback)."""

    progress: Progress | None
    total: int
    done: int = 0

    def __call__(self, stage: str) -> None:
        if self.progress is not None:
            self.progress(stage, self.done, self.total)
        self.done += 1


def audit_pairs(
    pairs: WorstCasePair | Sequence[WorstCasePair],
    times: int,
    *,
    epsilon: float | None = 0.3,
    target_delta: float | None = None,
    direction: Direction = "max",
    shift_note: str = "one pair given",
    progress: Progress | None = None,
) -> AuditReport:
    """Audit ``times`` releases of a pair (or the worst case over several pairs).

    Give exactly one of ``epsilon`` (delta query) and ``target_delta`` (eps query). An
    eps query whose target lies below the distinguishing mass after ``times`` releases,
    in a requested direction, raises :class:`~accountant.errors.InfeasibleTargetError`
    quoting that composed floor; in a direction that was not requested the value is
    ``inf`` and a note says why. PrivacyBuckets rows need a single pair (there is no
    single composed PLD for a worst case over shifts); with several they are ``None``.
    A DP-SGD mixture pair (:func:`is_dp_sgd_pair`) is one-dimensional: the report's
    ``upper_bound_dimension`` is 1 and its first note says so (:func:`one_coordinate_note`).
    """
    pair_list = (pairs,) if isinstance(pairs, WorstCasePair) else tuple(pairs)
    query = audit_query(check_positive_int("times", times), epsilon, target_delta, direction)
    epsilon, target_delta = query.epsilon, query.target_delta
    stages = _Stages(progress, 6 if len(pair_list) == 1 else 3)
    notes: list[str] = []

    stages("privacy-loss distributions of one release")
    plds = {d: [privacy_loss_distribution(p, d) for p in pair_list] for d in ONE_DIRECTION}
    stages(f"Extended MA, n = {times}")
    tight = ExtendedMA(conversion="tight").compose(pair_list, times)
    paper = ExtendedMA(conversion="paper").compose(pair_list, times)
    one = Directional(*(max(p.distinguishing_mass for p in plds[d]) for d in ONE_DIRECTION))
    composed = Directional(*(tight.distinguishing_mass(d) for d in ONE_DIRECTION))
    if target_delta is not None:
        _check_composed_floor(target_delta, query, one, composed, notes)

    def each(label: str, compute: Callable[[OneDirection], Any]) -> Directional:
        return Directional(*(_guarded(label, compute, d, query, notes) for d in ONE_DIRECTION))

    stages("exact values of one release")
    if epsilon is not None:
        eps = epsilon
        exact_adp = each("one release", lambda d: max(p.delta(eps) for p in plds[d]))
        exact_pdp = each("one release", lambda d: max(p.delta_pdp(eps) for p in plds[d]))
    else:
        target = target_delta
        assert target is not None  # audit_query gives exactly one of epsilon, target_delta
        exact_adp = each("one release", lambda d: max(p.epsilon(target) for p in plds[d]))
        exact_pdp = each("one release", lambda d: max(p.epsilon_pdp(target) for p in plds[d]))
    ma = moments_results({"tight": tight, "paper": paper}, query, notes)
    buckets = None
    if len(pair_list) == 1:
        accountant = audited_accountant(pair_list[0], query.compositions)
        buckets = buckets_result(accountant, query, stages, notes)
    else:
        notes.append("PrivacyBuckets rows omitted: no single composed PLD for mixed shifts")
    results = AuditResults(one, composed, exact_adp, exact_pdp, ma["tight"], ma["paper"], buckets)
    description = pair_list[0].description if len(pair_list) == 1 else shift_note
    dimension = None
    if any(is_dp_sgd_pair(p) for p in pair_list):
        dimension = 1
        notes.insert(0, one_coordinate_note())
    mechanism = AuditMechanism(
        description, shift_note, len(pair_list), upper_bound_dimension=dimension
    )
    return AuditReport(mechanism, query, results, notes=tuple(notes))


def _ma_delta(accountant: ExtendedMA, eps: float) -> MomentsResult:
    details = accountant.delta_details(eps)
    return MomentsResult(
        Directional(details.a_over_b.delta, details.b_over_a.delta),
        Directional(details.a_over_b.lam, details.b_over_a.lam),
    )


def audit_query(
    times: int, epsilon: float | None, target_delta: float | None, direction: Direction
) -> AuditQuery:
    """The checked query: exactly one of ``epsilon`` (delta query) and ``target_delta``
    (eps query), after ``times`` releases, in ``direction``."""
    direction = check_direction("direction", direction)
    if (epsilon is None) == (target_delta is None):
        raise InvalidInputError(
            f"give exactly one of epsilon and target_delta, got epsilon={epsilon!r} and "
            f"target_delta={target_delta!r}"
        )
    if epsilon is not None:
        epsilon = float(check_epsilons("epsilon", check_finite_real("epsilon", epsilon)))
    else:
        target_delta = check_target_delta("target_delta", target_delta)
    return AuditQuery(times, epsilon, target_delta, direction)


@overload
def audited_accountant(pairs: WorstCasePair, times: int) -> PrivacyBuckets: ...
@overload
def audited_accountant(
    pairs: WorstCasePair | Sequence[WorstCasePair], times: int
) -> PrivacyBuckets | ExtendedMA: ...
def audited_accountant(
    pairs: WorstCasePair | Sequence[WorstCasePair], times: int
) -> PrivacyBuckets | ExtendedMA:
    """The accountant an audit of ``times`` releases of ``pairs`` composes (what
    ``accountant audit --save`` saves): PrivacyBuckets for one pair; for several (the
    worst case over shifts, which has no single composed PLD) the Extended MA, tight
    conversion."""
    if isinstance(pairs, WorstCasePair):
        return PrivacyBuckets().compose(pairs, times=times)
    if len(pairs) == 1:
        return PrivacyBuckets().compose(pairs[0], times=times)
    return ExtendedMA(conversion="tight").compose(tuple(pairs), times)


def moments_results(
    accountants: dict[str, ExtendedMA], query: AuditQuery, notes: list[str]
) -> dict[str, MomentsResult]:
    """The Extended MA rows, per conversion: delta with its optimal lambda, or eps."""
    if query.epsilon is not None:
        return {c: _ma_delta(a, query.epsilon) for c, a in accountants.items()}
    label = f"Extended MA, n = {query.compositions}"
    # audit_query gives it when epsilon is None (a None is refused by epsilon's own check)
    target = cast(float, query.target_delta)
    return {
        c: MomentsResult(
            Directional(
                *(
                    _guarded(label, _upper_epsilon(a, target), d, query, notes)
                    for d in ONE_DIRECTION
                )
            )
        )
        for c, a in accountants.items()
    }


def _upper_epsilon(accountant: ExtendedMA, target: float) -> Callable[[OneDirection], float]:
    """``d -> accountant.epsilon(target, d).upper``."""
    return lambda d: accountant.epsilon(target, d).upper


def buckets_result(
    buckets: PrivacyBuckets | DPSGDAccountant, query: AuditQuery, stages: _Stages, notes: list[str]
) -> BucketsResult:
    """Certified ADP and PDP brackets (of delta, or of eps) of the ``buckets`` accountant.

    The query is checked (:func:`audit_query`), so what the accountant refuses here is the
    composition itself: ``times`` releases whose privacy-loss distribution the bucket
    budget cannot hold. That refusal names ``times`` (the cause is kept)."""
    n = query.compositions
    stages(f"PrivacyBuckets composition, n = {n}")
    try:
        return _brackets(buckets, query, stages, notes)
    except InvalidInputError as exc:
        raise InvalidInputError(too_many_releases(f"times={n}", n, exc)) from exc


def too_many_releases(shown: str, times: int, cause: BaseException) -> str:
    """The refusal of ``times`` releases whose composition the PrivacyBuckets budget
    cannot hold (``cause``: the accountant's own message), naming the count as ``shown``
    (``"times=N"``; the command line passes its option)."""
    return (
        f"{shown}: the composition of {times} releases does not fit the PrivacyBuckets "
        f"bucket budget ({cause}); audit fewer releases"
    )


def _brackets(
    buckets: PrivacyBuckets | DPSGDAccountant, query: AuditQuery, stages: _Stages, notes: list[str]
) -> BucketsResult:
    n = query.compositions
    brackets = {}
    kinds: tuple[Kind, ...] = ("ADP", "PDP")
    for kind in kinds:
        label = f"PrivacyBuckets {kind}, n = {n}"
        stages(f"{label}: bounds")
        compute: Callable[[OneDirection], tuple[float, ...]]
        if query.epsilon is not None:
            method = buckets.delta if kind == "ADP" else buckets.delta_pdp

            def delta_bracket(d: OneDirection, method: Any = method) -> tuple[float, ...]:
                return tuple(method(query.epsilon, d))

            compute = delta_bracket
        else:

            def epsilon_bracket(d: OneDirection, kind: Kind = kind) -> tuple[float, ...]:
                # audit_query gives target_delta when epsilon is None (a None is refused by
                # epsilon's own check)
                target = cast(float, query.target_delta)
                return tuple(buckets.epsilon(target, d, kind=kind))

            compute = epsilon_bracket

        found = {
            d: _guarded(label, compute, d, query, notes, fallback=(math.inf, math.inf))
            for d in ONE_DIRECTION
        }
        brackets[kind] = Bracket(
            Directional(found["A/B"][0], found["B/A"][0]),
            Directional(found["A/B"][1], found["B/A"][1]),
        )
    return BucketsResult(brackets["ADP"], brackets["PDP"])


def _requested(direction: str, query: AuditQuery) -> bool:
    return query.direction in ("max", direction)


def _guarded(
    label: str,
    compute: Callable[[OneDirection], Any],
    direction: OneDirection,
    query: AuditQuery,
    notes: list[str],
    fallback: Any = math.inf,
) -> Any:
    """``compute(direction)``; an infeasible target in a direction that was not asked for
    gives ``fallback`` (no finite eps: ``inf``) and a note, unless a note on that
    direction's composed floor already explains it; in a requested direction the error
    propagates."""
    try:
        return compute(direction)
    except InfeasibleTargetError as exc:
        if _requested(direction, query):
            raise
        if not any(note.startswith(f"direction {direction} ") for note in notes):
            notes.append(f"direction {direction} (not requested), {label}: {exc}")
        return fallback


def _check_composed_floor(
    target: float,
    query: AuditQuery,
    one: Directional | None,
    composed: Directional,
    notes: list[str],
) -> None:
    """Refuse an eps query whose target is below the distinguishing mass after n releases
    in a requested direction; in a direction not requested, add a note instead."""
    for d in ONE_DIRECTION:
        floor = composed.value(d)
        if target >= floor:
            continue
        text = (
            f"target_delta={target!r} is below the distinguishing mass after "
            f"n = {query.compositions} releases, {floor:.4g} (direction {d}"
            + ("" if one is None else f"; one release: {one.value(d):.4g}")
            + "), so no eps reaches it"
        )
        if _requested(d, query):
            raise InfeasibleTargetError(
                f"{text}; a wider cut (a larger bound) or fewer releases lowers that floor"
            )
        notes.append(f"direction {d} (not requested): {text}; its values after n releases are inf")


def audit_additive(
    noise: NoiseDistribution,
    sensitivity: float,
    times: int,
    *,
    epsilon: float | None = 0.3,
    target_delta: float | None = None,
    direction: Direction = "max",
    description: str | None = None,
    progress: Progress | None = None,
) -> AuditReport:
    """Audit additive ``noise`` with ``sensitivity``: the full shift alone when the noise is
    symmetric and monotone (paper, Theorem "Shift Invariance"), else every grid shift."""
    pairs = additive_shift_pairs(noise, sensitivity)
    if len(pairs) == 1:
        note = "noise is symmetric and monotone: the full sensitivity bounds every smaller shift"
    else:
        note = (
            "noise is NOT symmetric and monotone: worst case over every grid shift "
            f"1..{len(pairs)} (x {noise.step:g})"
        )
    report = audit_pairs(
        pairs,
        times,
        epsilon=epsilon,
        target_delta=target_delta,
        direction=direction,
        shift_note=note,
        progress=progress,
    )
    if description is not None:
        mechanism = attrs.evolve(report.mechanism, description=description)
        report = attrs.evolve(report, mechanism=mechanism)
    return report
