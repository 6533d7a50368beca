"""Which of this library's mechanisms each dp_accounting ``DpEvent`` is (neighbouring
relation ``ADD_OR_REMOVE_ONE``).

A ``DpEvent`` tree is walked down to its releases, each with a count:
``SelfComposedDpEvent(e, k)`` multiplies the count, ``ComposedDpEvent`` lists its events,
``NoOpDpEvent`` and a sampling probability 0 release nothing, ``NonPrivateDpEvent`` and a
noise multiplier 0 are not private. Each release is then one mechanism (sensitivity ``C``
= 1, noise in units of ``C`` as dp_accounting defines its noise multipliers):

* ``GaussianDpEvent(sigma)``: ``mechanisms.GaussianMechanism(sigma)``;
* ``LaplaceDpEvent(b)``: ``mechanisms.LaplaceMechanism(b)``;
* ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma))``:
  ``SubsampledTruncatedGaussian(sigma, q, cut=inf)`` (the untruncated subsampled Gaussian);
* ``TruncatedNoiseDpEvent(noise, s)``: ``WorstCasePair.additive(noise, s)``;
* ``PoissonSampledDpEvent(q, TruncatedNoiseDpEvent(noise, s))``:
  ``WorstCasePair.subsampled(noise, q, clip=s)``.

Every other event (sampling without replacement, RDP-only events, ...) is unsupported.
Malformed parameters (negative, NaN, a probability outside ``[0, 1]``) raise
:class:`~accountant.errors.InvalidInputError` naming the event field and the value.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from accountant.errors import InvalidInputError
from accountant.interop.events import TruncatedNoiseDpEvent
from accountant.interop.requirement import require_dp_accounting
from accountant.mechanisms import GaussianMechanism, LaplaceMechanism
from accountant.mechanisms.subsampled_gaussian import SubsampledTruncatedGaussian
from accountant.validation import check_nonnegative_real, check_probability, shown

__all__ = ["EventNotSupportedError", "EventReleases", "event_releases", "mechanism_of"]

_events = require_dp_accounting().dp_event


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


def event_releases(event: Any, count: int) -> EventReleases:
    """The releases of ``event`` composed ``count`` times (module docstring); raises
    :class:`EventNotSupportedError` for an event no mechanism here describes."""
    if isinstance(event, _events.NoOpDpEvent):
        return _NOTHING
    if isinstance(event, _events.NonPrivateDpEvent):
        return _non_private(count)
    if isinstance(event, _events.SelfComposedDpEvent):
        return event_releases(event.event, count * _count(event))
    if isinstance(event, _events.ComposedDpEvent):
        result = _NOTHING
        for inner in event.events:
            result = result + event_releases(inner, count)
        return result
    if isinstance(event, (_events.GaussianDpEvent, _events.LaplaceDpEvent)):
        return _non_private(count) if _noise_multiplier(event) == 0.0 else _leaf(event, count)
    if isinstance(event, TruncatedNoiseDpEvent):
        if not (event.noise.is_symmetric() and event.noise.is_monotone()):
            raise EventNotSupportedError(
                event,
                "the noise is not symmetric and monotone, so the shift by the full "
                "sensitivity does not bound smaller shifts (audit every shift with "
                "accountant.additive_shift_pairs)",
            )
        return _leaf(event, count)
    if isinstance(event, _events.PoissonSampledDpEvent):
        return _poisson(event, count)
    return _unsupported(event)


def _unsupported(event: Any) -> EventReleases:
    raise EventNotSupportedError(event, f"Unsupported event {type(event).__name__}.")


def _poisson(event: Any, count: int) -> EventReleases:
    q = check_probability(
        "PoissonSampledDpEvent.sampling_probability", event.sampling_probability, allow_zero=True
    )
    inner = event.event
    if isinstance(inner, _events.GaussianDpEvent):
        if q == 0.0:
            return _NOTHING
        return _non_private(count) if _noise_multiplier(inner) == 0.0 else _leaf(event, count)
    if isinstance(inner, TruncatedNoiseDpEvent):
        return _NOTHING if q == 0.0 else _leaf(event, count)
    raise EventNotSupportedError(
        event,
        "the event of a PoissonSampledDpEvent must be a GaussianDpEvent or a "
        f"TruncatedNoiseDpEvent, got {type(inner).__name__}",
    )


def _leaf(event: Any, count: int) -> EventReleases:
    """``count`` releases of ``event`` (none for ``count = 0``, as ``supports`` asks)."""
    return EventReleases(((event, count),)) if count > 0 else _NOTHING


def _non_private(count: int) -> EventReleases:
    return EventReleases(non_private=True) if count > 0 else _NOTHING


def mechanism_of(event: Any) -> Any:
    """The mechanism or pair of one release of a leaf event of :func:`event_releases`."""
    if isinstance(event, _events.GaussianDpEvent):
        return GaussianMechanism(sigma=event.noise_multiplier, sensitivity=1.0)
    if isinstance(event, _events.LaplaceDpEvent):
        return LaplaceMechanism(scale=event.noise_multiplier, sensitivity=1.0)
    if isinstance(event, TruncatedNoiseDpEvent):
        return event.pair()
    if isinstance(event, _events.PoissonSampledDpEvent):
        q, inner = event.sampling_probability, event.event
        if isinstance(inner, TruncatedNoiseDpEvent):
            return inner.subsampled_pair(q)
        return SubsampledTruncatedGaussian(
            sigma=inner.noise_multiplier, sampling_rate=q, cut=math.inf
        )
    raise InvalidInputError(f"event must be a leaf of event_releases(), got {shown(event)}")
