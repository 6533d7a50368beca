"""Certificates for a noise under composition (paper, Section 6: the certified bracket
every learned noise is reported with).

:func:`certify` wraps the certified PrivacyBuckets bracket on delta(eps) (both directions,
the larger) for ``times`` releases of one pair map applied to a noise, together with the
noise's utility loss. :func:`certified_bounds` is the bracket alone, for searches that
certify many noises (:mod:`~accountant.learning.gaussian_baseline`).

Every query difference (:class:`~accountant.pairs.pair_maps.AllShiftsPairMap`): a query
of sensitivity ``m`` grid steps may move each release by any ``s_i`` in ``-m..m``, and
SPEC section 1 composes independent releases of different pairs. A release with
``s_i = 0`` can be dropped (post-processing), ``-s`` is ``+s`` with outcomes relabelled
for symmetric noise and the flipped pair ``(B_s, A_s)`` otherwise. So the certified delta
is the largest, over every multiset ``{s_1, ..., s_n}`` of the shifts to cover, of the
PrivacyBuckets upper bound of the heterogeneous composition of their pairs (both
directions): ``C(k + n - 1, n)`` compositions for ``k`` pair kinds (``k = m`` for
symmetric noise, ``2m`` otherwise; for ``n = 1`` the flipped pairs are the other
direction and ``k = m``). Its lower bound is that of the worst composition. Symmetric
noise falling monotonically from 0 needs the full shift alone (paper, Theorem "Shift
Invariance"; checked exactly, see :meth:`~accountant.pairs.pair_maps.AllShiftsPairMap.shifts`).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import attrs

from accountant.buckets import Bounds, PrivacyBuckets
from accountant.errors import InvalidInputError
from accountant.noise import NoiseDistribution
from accountant.noise.distribution import check_noise
from accountant.pairs.pair_maps import AdditivePairMap, AllShiftsPairMap, SubsampledPairMap
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import (
    Kind,
    check_choice,
    check_finite_real,
    check_nonnegative_real,
    check_positive_int,
)

__all__ = [
    "KINDS",
    "MAX_SHIFT_COMBINATIONS",
    "Certificate",
    "buckets_of",
    "certified_bounds",
    "certify",
    "check_pair_map",
    "shift_combinations",
]

#: The kinds of delta a certificate bounds: approximate DP and probabilistic DP.
KINDS: tuple[Kind, ...] = ("ADP", "PDP")
#: Most compositions an all-shift certificate runs (one per multiset of shifts); beyond
#: it the certificate is refused rather than left to run for hours.
MAX_SHIFT_COMBINATIONS = 2000

PairMap = AdditivePairMap | SubsampledPairMap | AllShiftsPairMap


@attrs.frozen
class Certificate:
    """Certified ``delta_lower <= delta <= delta_upper`` at ``epsilon`` after ``times``
    releases of the pair described by ``description`` built from ``noise``.

    ``kind`` is ``"ADP"`` (approximate DP delta) or ``"PDP"`` (probabilistic DP,
    ``P_A[L > eps]``); the bracket bounds the larger of the two directions.
    ``accuracy_achieved`` is the relative bracket ``(upper - lower) / upper`` reached by
    PrivacyBuckets. ``utility_l1`` and ``utility_l2`` are the noise's utility losses.
    """

    noise: NoiseDistribution
    epsilon: float
    times: int
    kind: str
    delta_upper: float
    delta_lower: float
    utility_l1: float
    utility_l2: float
    accuracy_achieved: float
    description: str

    def utility(self, kind: str = "L1") -> float:
        """The utility loss ``"L1"`` (mean ``|x|``) or ``"L2"`` (root mean square) of the
        certified noise (the same numbers as ``utility_l1`` and ``utility_l2``)."""
        return self.noise.utility(kind)


def check_pair_map(value: object) -> PairMap:
    """An :class:`AdditivePairMap`, :class:`SubsampledPairMap` or :class:`AllShiftsPairMap`."""
    if not isinstance(value, PairMap):
        raise InvalidInputError(
            "pair_map must be an AdditivePairMap, SubsampledPairMap or AllShiftsPairMap (see "
            f"accountant.pairs.pair_maps.pair_map), got {type(value).__name__}"
        )
    return value


def shift_combinations(
    noise: NoiseDistribution, pair_map: AllShiftsPairMap, times: int
) -> tuple[tuple[int, ...], ...]:
    """Every multiset of ``times`` signed shifts (grid steps, sorted) an all-shift
    certificate of ``noise`` composes (module docstring): shifts from
    ``pair_map.shifts(noise)``, and their negatives too when ``times > 1`` and the noise
    is not exactly symmetric. Refused (naming ``times``) beyond
    :data:`MAX_SHIFT_COMBINATIONS`."""
    times = check_positive_int("times", times)
    kinds = list(pair_map.shifts(noise))
    if times > 1 and not noise.is_symmetric(rtol=0.0, atol=0.0):
        kinds = [-s for s in reversed(kinds)] + kinds
    count = math.comb(len(kinds) + times - 1, times)
    if count > MAX_SHIFT_COMBINATIONS:
        raise InvalidInputError(
            f"times={times!r} releases under each of {len(kinds)} shifts need {count} "
            f"compositions for an all-shift certificate, more than {MAX_SHIFT_COMBINATIONS}"
        )
    return tuple(itertools.combinations_with_replacement(kinds, times))


def _signed_pair(noise: NoiseDistribution, pair_map: AllShiftsPairMap, shift: int):
    pair = pair_map.shift_map(abs(shift)).pair(noise)
    if shift > 0:
        return pair
    return WorstCasePair(
        pair.b,
        pair.a,
        description=f"{pair.description}, negative",
        mass_tolerance=pair.mass_tolerance,
    )


def _all_shift_bounds(
    buckets: PrivacyBuckets,
    noise: NoiseDistribution,
    pair_map: AllShiftsPairMap,
    epsilon: float,
    times: int,
    kind: str,
) -> tuple[Bounds, str]:
    """The bracket of the worst multiset of shifts (by upper bound) and a description."""
    pairs: dict[int, WorstCasePair] = {}
    found: list[tuple[Bounds, tuple[int, ...]]] = []
    for combination in shift_combinations(noise, pair_map, times):
        composed = buckets
        for shift, count in sorted(Counter(combination).items()):
            if shift not in pairs:
                pairs[shift] = _signed_pair(noise, pair_map, shift)
            composed = composed.compose(pairs[shift], times=count)
        bounds = composed.delta(epsilon) if kind == "ADP" else composed.delta_pdp(epsilon)
        found.append((bounds, combination))
    # (the first of the largest upper bounds; there is at least one shift)
    bounds, combination = max(found, key=lambda item: float(item[0].upper))
    mix = ", ".join(f"{count} x {shift}" for shift, count in sorted(Counter(combination).items()))
    covered = pair_map.shifts(noise)
    span = f"{covered[0]}" if len(covered) == 1 else f"1..{covered[-1]}"
    description = (
        f"{noise.description}, every shift {span} of {pair_map.steps} grid steps "
        f"(worst: {mix} steps)"
    )
    return bounds, description


def buckets_of(accuracy: float) -> PrivacyBuckets:
    """An empty PrivacyBuckets with the given accuracy (validated by its constructor)."""
    check_finite_real("accuracy", accuracy)
    return PrivacyBuckets(accuracy=float(accuracy))


def certified_bounds(
    buckets: PrivacyBuckets,
    noise: NoiseDistribution,
    pair_map: PairMap,
    epsilon: float,
    times: int,
    kind: str,
) -> tuple[Bounds, str]:
    """The certified bracket on delta (``kind`` ``"ADP"`` or ``"PDP"``, direction
    ``"max"``) at ``epsilon`` after ``times`` releases of ``pair_map.pair(noise)``, by
    ``buckets``, and the pair's description; for an :class:`AllShiftsPairMap` the worst
    mix of shifts (module docstring). Arguments are taken as validated."""
    if isinstance(pair_map, AllShiftsPairMap):
        return _all_shift_bounds(buckets, noise, pair_map, epsilon, times, kind)
    pair = pair_map.pair(noise)
    composed = buckets.compose(pair, times=times)
    bounds = composed.delta(epsilon) if kind == "ADP" else composed.delta_pdp(epsilon)
    return bounds, pair.description


def certify(
    noise: NoiseDistribution,
    pair_map: PairMap,
    *,
    epsilon: float,
    times: int,
    kind: Kind = "ADP",
    accuracy: float = 1e-3,
) -> Certificate:
    """The certified PrivacyBuckets bracket on delta at ``epsilon`` (``kind`` ``"ADP"`` or
    ``"PDP"``, direction ``"max"``: both directions, the larger) for ``times`` releases of
    ``pair_map.pair(noise)``, with the noise's utility losses. For an
    :class:`~accountant.pairs.pair_maps.AllShiftsPairMap`: the largest over every mix of
    query differences the releases can have (module docstring).

    A :class:`~accountant.errors.CertificationWarning` from PrivacyBuckets (requested
    ``accuracy`` not reached; the bracket is still certified) is passed on to the caller.
    """
    noise = check_noise("noise", noise)
    pair_map = check_pair_map(pair_map)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    times = check_positive_int("times", times)
    kind = check_choice("kind", kind, KINDS)
    bounds, description = certified_bounds(
        buckets_of(accuracy), noise, pair_map, epsilon, times, kind
    )
    return Certificate(
        noise=noise,
        epsilon=epsilon,
        times=times,
        kind=kind,
        delta_upper=float(bounds.upper),
        delta_lower=float(bounds.lower),
        utility_l1=noise.utility_l1,
        utility_l2=noise.utility_l2,
        accuracy_achieved=float(bounds.achieved_accuracy),
        description=description,
    )
