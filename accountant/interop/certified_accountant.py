"""``CertifiedAccountant``: dp_accounting's ``PrivacyAccountant`` interface on
:class:`~accountant.PrivacyBuckets`.

Each composed ``DpEvent`` is mapped to this library's mechanisms
(:mod:`~accountant.interop.event_mapping`) and composed in PrivacyBuckets (SPEC section 2),
which answers certified brackets ``lower <= delta(eps) <= upper`` for the composition of
all releases, in both directions (dp_accounting's add and remove adjacency; we report
their maximum as dp_accounting does).

**Queries.** The accountant keeps one :class:`~accountant.PrivacyBuckets` between queries
(compositions are kept in its memo, rounded releases for the process), with the tail mass
fixed at the engine's default for delta queries (``DEFAULT_TAIL_MASS``; any tail mass is
sound, the cut mass counts in full): left automatic, each eps query at another delta would
cut another tail and compose afresh, where now every eps query after the first reads the
compositions the earlier ones made. Answers are kept per target too, until the next
:meth:`compose`. An answer depends only on what was composed and on the target.

dp_accounting's accessors answer one number that must be safe, so :meth:`get_delta` is
the certified **upper** bound on delta and :meth:`get_epsilon` the certified upper bound
on eps (``inf`` where no eps the buckets cover reaches the target, as dp_accounting
answers ``inf``). :meth:`delta_bounds` and :meth:`epsilon_bounds` give the brackets.
A ``NonPrivateDpEvent`` (or a noise multiplier 0) makes every answer ``delta = 1`` and
``eps = inf``, as dp_accounting's accountants do.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from accountant.buckets import PrivacyBuckets
from accountant.buckets.engine import DEFAULT_TAIL_MASS
from accountant.errors import InfeasibleTargetError, InvalidInputError
from accountant.interop.composed_export import composed_to_dp_accounting_pld
from accountant.interop.event_mapping import (
    RELATIONS,
    EventNotSupportedError,
    event_releases,
    mechanism_of,
)
from accountant.interop.requirement import require_dp_accounting
from accountant.results import Bounds, EpsilonBounds
from accountant.validation import (
    check_epsilons,
    check_positive_int,
    check_positive_real,
    check_target_delta,
    shown,
)

__all__ = ["CertifiedAccountant"]

# dp_accounting ships no type information: its classes are Any to the type checker.
_privacy_accountant: Any = require_dp_accounting().privacy_accountant
_ADD_OR_REMOVE_ONE = _privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE


class CertifiedAccountant(_privacy_accountant.PrivacyAccountant):
    """A dp_accounting ``PrivacyAccountant`` whose answers are certified by PrivacyBuckets.

    ``neighboring_relation``: ``ADD_OR_REMOVE_ONE`` (dp_accounting's default) or
    ``REPLACE_ONE`` (:mod:`~accountant.interop.event_mapping` says what each event is under
    each; ``REPLACE_SPECIAL`` is refused).
    ``accuracy``: the requested relative width of each certified bracket (PrivacyBuckets).

    >>> from dp_accounting import dp_event
    >>> acc = CertifiedAccountant().compose(dp_event.GaussianDpEvent(10.0), 100)
    >>> bounds = acc.delta_bounds(1.0)
    >>> bounds.lower <= bounds.upper == acc.get_delta(1.0)
    True
    """

    def __init__(
        self,
        neighboring_relation: Any = _ADD_OR_REMOVE_ONE,
        *,
        accuracy: float = 1e-4,
    ):
        if neighboring_relation not in RELATIONS:
            raise InvalidInputError(
                "neighboring_relation must be NeighboringRelation.ADD_OR_REMOVE_ONE or "
                "NeighboringRelation.REPLACE_ONE (the relations the events here are accounted "
                f"under), got {shown(neighboring_relation)}"
            )
        super().__init__(neighboring_relation)
        accuracy = check_positive_real("accuracy", accuracy)
        self._buckets = PrivacyBuckets(accuracy=accuracy, tail_mass=DEFAULT_TAIL_MASS)
        self._mechanisms: dict[Any, Any] = {}
        self._non_private = False
        self._answers: dict[tuple[str, float], Any] = {}

    @property
    def buckets(self) -> PrivacyBuckets:
        """The PrivacyBuckets accountant holding every release composed so far."""
        return self._buckets

    @property
    def non_private(self) -> bool:
        """Whether a non-private step was composed (then delta is 1 and eps is ``inf``)."""
        return self._non_private

    def compose(self, event: Any, count: int = 1) -> CertifiedAccountant:
        """Account ``count`` (a positive integer) applications of ``event``; raises
        dp_accounting's ``EventNotSupportedErrorError`` for an event :meth:`supports` refuses."""
        check_positive_int("count", count)
        return super().compose(event, int(count))

    def _maybe_compose(self, event: Any, count: int, do_compose: bool) -> Any:
        try:
            releases = event_releases(event, count, self.neighboring_relation)
        except EventNotSupportedError as unsupported:
            return self.CompositionErrorDetails(
                invalid_event=unsupported.event, error_message=unsupported.reason
            )
        if do_compose:
            buckets = self._buckets
            for leaf, times in releases.releases:
                if leaf not in self._mechanisms:
                    self._mechanisms[leaf] = mechanism_of(leaf, self.neighboring_relation)
                buckets = buckets.compose(self._mechanisms[leaf], times)
            self._buckets = buckets
            self._non_private = self._non_private or releases.non_private
            self._answers.clear()
        return None

    def delta_bounds(self, target_epsilon: float | np.ndarray) -> Bounds:
        """Certified ``Bounds`` on delta at ``target_epsilon`` (one eps or an array), both
        directions; ``upper`` is 1 once a non-private step was composed."""
        eps = check_epsilons("target_epsilon", target_epsilon)
        if eps.ndim:
            bounds = self._buckets.delta(eps)
        else:
            key = ("delta", float(eps))
            if key not in self._answers:
                self._answers[key] = self._buckets.delta(float(eps))
            bounds = self._answers[key]
        if self._non_private:
            return attrs.evolve(bounds, upper=np.ones_like(bounds.upper)[()] * 1.0)
        return bounds

    def epsilon_bounds(self, target_delta: float) -> EpsilonBounds:
        """Certified ``EpsilonBounds`` on the smallest eps with delta(eps) <= ``target_delta``
        (raises :class:`~accountant.errors.InfeasibleTargetError` when no eps the buckets
        cover reaches it); ``upper`` is ``inf`` once a non-private step was composed."""
        delta = check_target_delta("target_delta", target_delta)
        key = ("epsilon", delta)
        if key not in self._answers:
            try:
                self._answers[key] = self._buckets.epsilon(delta)
            except InfeasibleTargetError as error:
                self._answers[key] = error
        bounds = self._answers[key]
        if isinstance(bounds, InfeasibleTargetError):
            raise bounds
        return attrs.evolve(bounds, upper=math.inf) if self._non_private else bounds

    def get_delta(self, target_epsilon: float) -> float:
        """The certified upper bound on delta at ``target_epsilon`` (safe to report)."""
        return float(self.delta_bounds(float(_one("target_epsilon", target_epsilon))).upper)

    def get_epsilon(self, target_delta: float) -> float:
        """The certified upper bound on eps at ``target_delta`` (safe to report); ``inf``
        when no eps reaches it."""
        if self._non_private:
            check_target_delta("target_delta", target_delta)
            return math.inf
        try:
            return float(self.epsilon_bounds(target_delta).upper)
        except InfeasibleTargetError:
            return math.inf

    def to_dp_accounting_pld(
        self, *, value_discretization_interval: float = 1e-4, accuracy: float = 1e-2
    ):
        """Everything composed so far as a pessimistic dp_accounting
        ``PrivacyLossDistribution``
        (:func:`~accountant.interop.composed_export.composed_to_dp_accounting_pld`): its delta
        is at least the true one at every eps, and dp_accounting may compose it further."""
        return composed_to_dp_accounting_pld(
            self, value_discretization_interval=value_discretization_interval, accuracy=accuracy
        )


def _one(name: str, value: Any) -> float:
    eps = check_epsilons(name, value)
    if eps.ndim:
        raise InvalidInputError(f"{name} must be one number, got {shown(value)}")
    return float(eps)
