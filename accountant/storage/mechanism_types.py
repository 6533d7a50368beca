"""The registration of every mechanism type an accountant accepts, one line each.

``PrivacyBuckets.compose`` takes a :class:`~accountant.pairs.worst_case.WorstCasePair`, a
:class:`~accountant.pairs.pld.PrivacyLossDistribution` or an analytic mechanism;
``ExtendedMA.compose`` takes a pair, a sequence of pairs (the worst case over them), a
:class:`~accountant.moments.log_moments.PairLogMoments` or an analytic mechanism. Every
analytic mechanism listed in ``accountant.mechanisms.__all__`` (a frozen attrs class
built from its init arguments) is registered by the loop at the end: a new family added
there needs no line here.
"""

from __future__ import annotations

from typing import Any

import attrs

from accountant import mechanisms
from accountant.moments.log_moments import PairLogMoments
from accountant.numerics.directed import LogInterval, MassLogs
from accountant.pairs.outcomes import OutcomeIndex
from accountant.pairs.pld import PrivacyLossDistribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.storage.registry import exactly, register

__all__: list[str] = []


def _init_arguments(instance: Any) -> dict[str, Any]:
    """The init arguments that rebuild a frozen attrs ``instance``."""
    return {f.alias: getattr(instance, f.name) for f in attrs.fields(type(instance)) if f.init}


def _attrs_type(cls: type) -> None:
    """Register ``cls``, built again from its attrs init arguments."""
    register(cls.__name__, exactly(cls), _init_arguments, lambda parameters: cls(**parameters))


def _is_pair_sequence(mechanism: Any) -> bool:
    return (
        isinstance(mechanism, list | tuple)
        and len(mechanism) > 0
        and all(type(p) is WorstCasePair for p in mechanism)
    )


def _pairs(parameters: dict[str, Any]) -> tuple[WorstCasePair, ...]:
    return tuple(WorstCasePair(**pair) for pair in parameters["pairs"])


def _pld_parameters(pld: PrivacyLossDistribution) -> dict[str, Any]:
    logs = pld.mass_logs
    assert logs is not None  # set by PrivacyLossDistribution.__attrs_post_init__
    outcomes = None if pld.outcomes is None else _init_arguments(pld.outcomes)
    return {
        **_init_arguments(pld),
        "mass_logs": {
            "total": [logs.total.low, logs.total.high],
            "finite_fraction": [logs.finite_fraction.low, logs.finite_fraction.high],
        },
        "outcomes": outcomes,
    }


def _pld_from(parameters: dict[str, Any]) -> PrivacyLossDistribution:
    logs = parameters.pop("mass_logs")
    outcomes = parameters.pop("outcomes")
    return PrivacyLossDistribution(
        **parameters,
        mass_logs=MassLogs(LogInterval(*logs["total"]), LogInterval(*logs["finite_fraction"])),
        outcomes=None if outcomes is None else OutcomeIndex(**outcomes),
    )


_attrs_type(WorstCasePair)
register(
    "WorstCasePairs",
    _is_pair_sequence,
    lambda m: {"pairs": [_init_arguments(p) for p in m]},
    _pairs,
)
register(
    "PairLogMoments",
    exactly(PairLogMoments),
    lambda m: {"pairs": [_init_arguments(p) for p in m.pairs]},
    lambda parameters: PairLogMoments(_pairs(parameters)),
)
register("PrivacyLossDistribution", exactly(PrivacyLossDistribution), _pld_parameters, _pld_from)
# every analytic family registered in accountant.mechanisms (its one registration line
# there) is saved from its init arguments: a new family needs nothing here
for _name in mechanisms.__all__:
    _attrs_type(getattr(mechanisms, _name))
