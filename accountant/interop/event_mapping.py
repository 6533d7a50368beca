"""Which of this library's mechanisms each dp_accounting ``DpEvent`` is, under the
neighbouring relation of the accountant (``ADD_OR_REMOVE_ONE`` or ``REPLACE_ONE``).

A ``DpEvent`` tree is walked down to its releases, each with a count:
``SelfComposedDpEvent(e, k)`` multiplies the count, ``ComposedDpEvent`` lists its events,
``NoOpDpEvent`` and a sampling probability (or sample size) 0 release nothing,
``NonPrivateDpEvent`` and a noise multiplier 0 are not private. Each release is then one
mechanism (clip ``C`` = 1, noise in units of ``C`` as dp_accounting defines its noise
multipliers).

``ADD_OR_REMOVE_ONE`` (the sensitivity is ``C``):

* ``GaussianDpEvent(sigma)``: ``mechanisms.GaussianMechanism(sigma)``;
* ``LaplaceDpEvent(b)``: ``mechanisms.LaplaceMechanism(b)``;
* ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``:
  ``SubsampledTruncatedGaussian(sigma, q, cut=inf)`` (the untruncated subsampled Gaussian);
* ``PoissonSampledDpEvent(q, LaplaceDpEvent(b))``: ``mechanisms.SubsampledLaplace(b, q)``
  (``LaplaceMechanism(b)`` for ``q = 1``);
* ``TruncatedNoiseDpEvent(noise, s)``: ``WorstCasePair.additive(noise, s)``;
* ``PoissonSampledDpEvent(q, TruncatedNoiseDpEvent(noise, s))``:
  ``WorstCasePair.subsampled(noise, q, clip=s)``.

``REPLACE_ONE`` (one record replaced: the sum moves by up to ``2C``; noise multipliers stay
relative to the clip ``C``, as DP-SGD's are and as dp_accounting's ``PLDAccountant`` reads a
``GaussianDpEvent`` under ``REPLACE_ONE``; its ``RdpAccountant`` reads them relative to the
replace-one sensitivity ``2C`` instead, so its figures match ours at half the multiplier):

* ``GaussianDpEvent(sigma)``: ``GaussianMechanism(sigma, sensitivity=2)`` (as dp_accounting's
  ``REPLACE`` adjacency, which shifts by the sensitivity both ways);
* ``LaplaceDpEvent(b)``: ``LaplaceMechanism(b, sensitivity=2)`` (values of L1 norm at most
  ``C``: the sum moves by at most ``2C`` in L1; dp_accounting refuses it);
* ``TruncatedNoiseDpEvent(noise, s)``: ``WorstCasePair.additive(noise, 2 s)``;
* ``SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(sigma))``:
  ``mechanisms.WithoutReplacementGaussian(sigma, m/n)``, the symmetric dominating pair
  of Balle, Barthe and Gaboardi's bound (:mod:`accountant.mechanisms.without_replacement`;
  ``GaussianMechanism(sigma, sensitivity=2)`` for ``m = n``);
* ``SampledWithoutReplacementDpEvent(n, m, TruncatedNoiseDpEvent(noise, s))``:
  :func:`~accountant.mechanisms.without_replacement.without_replacement_pair`.

Refused by name, with the reason: Poisson sampling under ``REPLACE_ONE`` (dp_accounting's
pair ``(1 - q) N(0) + q N(+-1)`` is tight for opposite values, but no proof that it bounds
every pair of values under composition is established here; the bound this library can
prove is that of sampling without replacement, which is far looser), sampling without
replacement under ``ADD_OR_REMOVE_ONE`` (the sample size is fixed, the dataset's is not) or
of another event, sampling with replacement, and every other event.
Malformed parameters (negative, NaN, a probability outside ``[0, 1]``, a sample larger than
the dataset) raise :class:`~accountant.errors.InvalidInputError` naming the event field and
the value.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.interop.events import TruncatedNoiseDpEvent
from accountant.interop.requirement import require_dp_accounting
from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SubsampledLaplace,
    WithoutReplacementGaussian,
)
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.mechanisms.without_replacement import without_replacement_pair
from accountant.pairs.worst_case import WorstCasePair
from accountant.validation import check_nonnegative_real, check_probability, shown

__all__ = [
    "RELATIONS",
    "EventNotSupportedError",
    "EventReleases",
    "event_releases",
    "mechanism_of",
]

_dp_accounting = require_dp_accounting()
_events = _dp_accounting.dp_event
_relations = _dp_accounting.privacy_accountant.NeighboringRelation
ADD_OR_REMOVE_ONE = _relations.ADD_OR_REMOVE_ONE
REPLACE_ONE = _relations.REPLACE_ONE
#: The neighbouring relations events are mapped under.
RELATIONS = (ADD_OR_REMOVE_ONE, REPLACE_ONE)


class EventNotSupportedError(Exception):
    """``event`` (a sub-event of what was composed) has no mechanism here: ``reason``."""

    def __init__(self, event: Any, reason: str):
        super().__init__(reason)
        self.event = event
        self.reason = reason


@attrs.frozen
class EventReleases:
    """What a ``DpEvent`` composed ``count`` times releases: ``releases``, pairs
    ``(leaf event, times)`` in order, and whether a non-private step is among them."""

    releases: tuple[tuple[Any, int], ...] = ()
    non_private: bool = False

    def __add__(self, other: EventReleases) -> EventReleases:
        return EventReleases(self.releases + other.releases, self.non_private or other.non_private)


_NOTHING = EventReleases()


def _noise_multiplier(event: Any) -> float:
    name = f"{type(event).__name__}.noise_multiplier"
    return check_nonnegative_real(name, event.noise_multiplier)


def _count(event: Any) -> int:
    count = event.count
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidInputError(
            f"SelfComposedDpEvent.count must be a non-negative integer, got {shown(count)}"
        )
    return count


def _check_relation(relation: Any) -> Any:
    if relation not in RELATIONS:
        raise InvalidInputError(
            "neighboring_relation must be NeighboringRelation.ADD_OR_REMOVE_ONE or "
            f"NeighboringRelation.REPLACE_ONE, got {shown(relation)}"
        )
    return relation


def event_releases(event: Any, count: int, relation: Any = ADD_OR_REMOVE_ONE) -> EventReleases:
    """The releases of ``event`` composed ``count`` times under ``relation`` (module
    docstring); raises :class:`EventNotSupportedError` for an event no mechanism here
    describes (under that relation)."""
    relation = _check_relation(relation)
    if isinstance(event, _events.NoOpDpEvent):
        return _NOTHING
    if isinstance(event, _events.NonPrivateDpEvent):
        return _non_private(count)
    if isinstance(event, _events.SelfComposedDpEvent):
        return event_releases(event.event, count * _count(event), relation)
    if isinstance(event, _events.ComposedDpEvent):
        result = _NOTHING
        for inner in event.events:
            result = result + event_releases(inner, count, relation)
        return result
    if isinstance(event, (_events.GaussianDpEvent, _events.LaplaceDpEvent)):
        return _non_private(count) if _noise_multiplier(event) == 0.0 else _leaf(event, count)
    if isinstance(event, TruncatedNoiseDpEvent):
        _check_shape(event)
        return _leaf(event, count)
    if isinstance(event, _events.PoissonSampledDpEvent):
        if relation is REPLACE_ONE:
            raise EventNotSupportedError(event, POISSON_REPLACE_ONE)
        return _poisson(event, count)
    if isinstance(event, _events.SampledWithoutReplacementDpEvent):
        return _without_replacement(event, count, relation)
    return _unsupported(event)


#: Why Poisson sampling is refused under ``REPLACE_ONE``.
POISSON_REPLACE_ONE = (
    "PoissonSampledDpEvent is not supported under NeighboringRelation.REPLACE_ONE: "
    "dp_accounting's pair (1 - q) N(0) + q N(+-1) is tight for two opposite values, but no "
    "proof that it bounds every pair of values under composition is established here (the "
    "bound this library can prove, that of sampling without replacement, is far looser); "
    "account it under ADD_OR_REMOVE_ONE, or sample without replacement"
)


def _check_shape(event: TruncatedNoiseDpEvent) -> None:
    if not (event.noise.is_symmetric() and event.noise.is_monotone()):
        raise EventNotSupportedError(
            event,
            "the noise is not symmetric and monotone, so the shift by the full "
            "sensitivity does not bound smaller shifts (audit every shift with "
            "accountant.additive_shift_pairs)",
        )


def _unsupported(event: Any) -> EventReleases:
    raise EventNotSupportedError(event, f"Unsupported event {type(event).__name__}.")


def _poisson(event: Any, count: int) -> EventReleases:
    q = check_probability(
        "PoissonSampledDpEvent.sampling_probability", event.sampling_probability, allow_zero=True
    )
    inner = event.event
    if isinstance(inner, (_events.GaussianDpEvent, _events.LaplaceDpEvent)):
        if q == 0.0:
            return _NOTHING
        return _non_private(count) if _noise_multiplier(inner) == 0.0 else _leaf(event, count)
    if isinstance(inner, TruncatedNoiseDpEvent):
        return _NOTHING if q == 0.0 else _leaf(event, count)
    raise EventNotSupportedError(
        event,
        "the event of a PoissonSampledDpEvent must be a GaussianDpEvent, a LaplaceDpEvent "
        f"or a TruncatedNoiseDpEvent, got {type(inner).__name__}",
    )


def _sizes(event: Any) -> tuple[int, int]:
    """``(n, m)`` of a ``SampledWithoutReplacementDpEvent``, checked."""
    sizes = []
    for field in ("source_dataset_size", "sample_size"):
        value = getattr(event, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(
                f"SampledWithoutReplacementDpEvent.{field} must be a non-negative integer, "
                f"got {shown(value)}"
            )
        sizes.append(value)
    n, m = sizes
    if m > n:
        raise InvalidInputError(
            "SampledWithoutReplacementDpEvent.sample_size must be at most source_dataset_size "
            f"= {n}, got {m}"
        )
    return n, m


def _without_replacement(event: Any, count: int, relation: Any) -> EventReleases:
    m = _sizes(event)[1]
    if relation is not REPLACE_ONE:
        raise EventNotSupportedError(
            event,
            "SampledWithoutReplacementDpEvent is accounted under "
            "NeighboringRelation.REPLACE_ONE only (the sample size is fixed, so adding or "
            "removing a record changes the sampling rate; dp_accounting's RdpAccountant "
            "asks the same)",
        )
    inner = event.event
    if isinstance(inner, _events.GaussianDpEvent):
        if m == 0:
            return _NOTHING
        return _non_private(count) if _noise_multiplier(inner) == 0.0 else _leaf(event, count)
    if isinstance(inner, TruncatedNoiseDpEvent):
        _check_shape(inner)
        return _NOTHING if m == 0 else _leaf(event, count)
    raise EventNotSupportedError(
        event,
        "the event of a SampledWithoutReplacementDpEvent must be a GaussianDpEvent or a "
        f"TruncatedNoiseDpEvent (the symmetric dominating pairs implemented here), got "
        f"{type(inner).__name__}",
    )


def _leaf(event: Any, count: int) -> EventReleases:
    """``count`` releases of ``event`` (none for ``count = 0``, as ``supports`` asks)."""
    return EventReleases(((event, count),)) if count > 0 else _NOTHING


def _non_private(count: int) -> EventReleases:
    return EventReleases(non_private=True) if count > 0 else _NOTHING


def mechanism_of(event: Any, relation: Any = ADD_OR_REMOVE_ONE) -> Any:
    """The mechanism or pair of one release of a leaf event of :func:`event_releases` under
    ``relation``."""
    relation = _check_relation(relation)
    factor = 2.0 if relation is REPLACE_ONE else 1.0  # the sensitivity, in units of C
    if isinstance(event, _events.GaussianDpEvent):
        return GaussianMechanism(sigma=event.noise_multiplier, sensitivity=factor)
    if isinstance(event, _events.LaplaceDpEvent):
        return LaplaceMechanism(scale=event.noise_multiplier, sensitivity=factor)
    if isinstance(event, TruncatedNoiseDpEvent):
        return WorstCasePair.additive(event.noise, factor * event.sensitivity)
    if isinstance(event, _events.PoissonSampledDpEvent) and relation is ADD_OR_REMOVE_ONE:
        q, inner = event.sampling_probability, event.event
        if isinstance(inner, TruncatedNoiseDpEvent):
            return inner.subsampled_pair(q)
        if isinstance(inner, _events.LaplaceDpEvent):
            if q == 1.0:
                return LaplaceMechanism(scale=inner.noise_multiplier, sensitivity=1.0)
            return SubsampledLaplace(scale=inner.noise_multiplier, sampling_rate=q)
        return SubsampledTruncatedGaussian(
            sigma=inner.noise_multiplier, sampling_rate=q, cut=math.inf
        )
    if isinstance(event, _events.SampledWithoutReplacementDpEvent) and relation is REPLACE_ONE:
        n, m = _sizes(event)
        inner = event.event
        if isinstance(inner, TruncatedNoiseDpEvent):
            if m == n:
                return WorstCasePair.additive(inner.noise, 2.0 * inner.sensitivity)
            return without_replacement_pair(inner.noise, inner.sensitivity, m / n)
        if m == n:
            return GaussianMechanism(sigma=inner.noise_multiplier, sensitivity=2.0)
        return WithoutReplacementGaussian(sigma=inner.noise_multiplier, sampling_rate=m / n)
    raise InvalidInputError(
        f"event must be a leaf of event_releases() under {shown(relation)}, got {shown(event)}"
    )
