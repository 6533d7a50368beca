"""Certificates for a noise under composition (paper, Section 6: the certified bracket
every learned noise is reported with).

:func:`certify` wraps the certified PrivacyBuckets bracket on delta(eps) (both directions,
the larger) for ``times`` releases of one pair map applied to a noise, together with the
noise's utility loss. :func:`certified_bounds` is the bracket alone, for searches that
certify many noises (:mod:`~accountant.learning.gaussian_baseline`).
"""

from __future__ import annotations

import attrs

from accountant.buckets import Bounds, PrivacyBuckets
from accountant.errors import InvalidInputError
from accountant.noise import NoiseDistribution
from accountant.pairs.pair_maps import AdditivePairMap, SubsampledPairMap
from accountant.validation import (
    Kind,
    check_choice,
    check_finite_real,
    check_noise,
    check_nonnegative_real,
    check_positive_int,
)

__all__ = ["KINDS", "Certificate", "buckets_of", "certified_bounds", "certify", "check_pair_map"]

#: The kinds of delta a certificate bounds: approximate DP and probabilistic DP.
KINDS = ("ADP", "PDP")


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


def check_pair_map(value: object) -> AdditivePairMap | SubsampledPairMap:
    """An :class:`AdditivePairMap` or :class:`SubsampledPairMap`."""
    if not isinstance(value, AdditivePairMap | SubsampledPairMap):
        raise InvalidInputError(
            "pair_map must be an AdditivePairMap or SubsampledPairMap (see "
            f"accountant.pairs.pair_maps.pair_map), got {type(value).__name__}"
        )
    return value


def buckets_of(accuracy: object) -> PrivacyBuckets:
    """An empty PrivacyBuckets with the given accuracy (validated by its constructor)."""
    check_finite_real("accuracy", accuracy)
    return PrivacyBuckets(accuracy=float(accuracy))


def certified_bounds(
    buckets: PrivacyBuckets,
    noise: NoiseDistribution,
    pair_map: AdditivePairMap | SubsampledPairMap,
    epsilon: float,
    times: int,
    kind: str,
) -> tuple[Bounds, str]:
    """The certified bracket on delta (``kind`` ``"ADP"`` or ``"PDP"``, direction
    ``"max"``) at ``epsilon`` after ``times`` releases of ``pair_map.pair(noise)``, by
    ``buckets``, and the pair's description. Arguments are taken as validated."""
    pair = pair_map.pair(noise)
    composed = buckets.compose(pair, times=times)
    bounds = composed.delta(epsilon) if kind == "ADP" else composed.delta_pdp(epsilon)
    return bounds, pair.description


def certify(
    noise: NoiseDistribution,
    pair_map: AdditivePairMap | SubsampledPairMap,
    *,
    epsilon: float,
    times: int,
    kind: Kind = "ADP",
    accuracy: float = 1e-3,
) -> Certificate:
    """The certified PrivacyBuckets bracket on delta at ``epsilon`` (``kind`` ``"ADP"`` or
    ``"PDP"``, direction ``"max"``: both directions, the larger) for ``times`` releases of
    ``pair_map.pair(noise)``, with the noise's utility losses.

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
