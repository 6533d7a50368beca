"""Opacus's accountant state, read back with every field checked.

Every accountant of this package follows Opacus's convention (``history``: a list of
``(noise_multiplier, sample_rate, steps)``; ``mechanism``: its name);
:meth:`TruncatedAccountant.state_dict` adds ``settings`` (the cut and truncation the
history was accounted with) and ``dimension``. A state that is not a mapping, names a
mechanism the accountant does not account, lacks a key, was accounted with other
settings, or holds a malformed history entry is refused with
:class:`~accountant.InvalidInputError` naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accountant import InvalidInputError
from accountant.validation import (
    check_positive_int,
    check_positive_real,
    check_probability,
    shown,
)
from optimizers.opacus.settings import TruncationSettings

__all__ = [
    "CERTIFIED",
    "GAUSSIAN_MECHANISMS",
    "MECHANISM",
    "SHUFFLED_EPOCHS",
    "HistoryEntry",
    "checked_dimension",
    "checked_entries",
    "checked_history",
    "checked_mechanism",
    "checked_settings",
]

#: The name of the truncated accountant (its ``mechanism()`` and its states'
#: ``"mechanism"``); Opacus's ``create_accountant`` refuses it
#: (:mod:`optimizers.opacus.registry`).
MECHANISM = "truncated"
#: The name Opacus knows the certified Gaussian accountant by
#: (``PrivacyEngine(accountant="certified")``).
CERTIFIED = "certified"
#: The name of the accountant of shuffled or fixed-order epochs
#: (:class:`~optimizers.opacus.epochs.ShuffledEpochsAccountant`, not registered with
#: Opacus: its epoch structure comes from the data loader).
SHUFFLED_EPOCHS = "shuffled-epochs"
#: Accountants whose history describes steps of the (untruncated) subsampled Gaussian:
#: this package's ``"certified"`` and Opacus's own; the certified accountant loads the
#: state of any of them.
GAUSSIAN_MECHANISMS = (CERTIFIED, "prv", "rdp", "gdp")

#: One entry of Opacus's history: ``(noise_multiplier, sample_rate, steps)``.
HistoryEntry = tuple[float, float, int]


def _require(state: Any, key: str) -> Any:
    if not isinstance(state, Mapping):
        raise InvalidInputError(
            f"state_dict must be a mapping from an accountant's state_dict(), got {shown(state)}"
        )
    if key not in state:
        raise InvalidInputError(f"state_dict lacks the key {key!r}, got keys {sorted(state)!r}")
    return state[key]


def checked_mechanism(state: Any, accepted: tuple[str, ...]) -> None:
    """Refuse a state whose ``mechanism`` is not one of ``accepted`` (its history would
    describe other noise)."""
    mechanism = _require(state, "mechanism")
    if mechanism not in accepted:
        names = repr(accepted[0]) if len(accepted) == 1 else f"one of {accepted!r}"
        raise InvalidInputError(f"state_dict['mechanism'] must be {names}, got {shown(mechanism)}")


def checked_settings(state: Any, expected: TruncationSettings) -> None:
    """Refuse a state accounted with other settings than ``expected`` (its history would
    describe other noise)."""
    settings = _require(state, "settings")
    if not isinstance(settings, Mapping) or set(settings) != {"cut", "truncation"}:
        raise InvalidInputError(
            "state_dict['settings'] must be {'cut': ..., 'truncation': ...}, "
            f"got {shown(settings)}"
        )
    given = TruncationSettings(cut=settings["cut"], truncation=settings["truncation"])
    if not given.same_law(expected):
        raise InvalidInputError(
            f"state_dict['settings'] describes noise with {given}, but this accountant "
            f"accounts {expected}: build it with the same cut and truncation"
        )


def checked_dimension(state: Any, expected: int | None) -> int | None:
    """The ``dimension`` of ``state`` (``None``: not yet known), refused when it differs
    from a known ``expected`` (the history would describe another model)."""
    dimension = _require(state, "dimension")
    if dimension is not None:
        dimension = check_positive_int("state_dict['dimension']", dimension)
    if expected is not None and dimension is not None and dimension != expected:
        raise InvalidInputError(
            f"state_dict['dimension'] must be {expected} (this accountant's), got {dimension}"
        )
    return expected if dimension is None else dimension


def checked_history(state: Any) -> list[HistoryEntry]:
    """The history of ``state``, each entry checked (naming its index and field)."""
    return checked_entries(_require(state, "history"), "state_dict['history']")


def checked_entries(history: Any, name: str) -> list[HistoryEntry]:
    """``history`` (called ``name`` in messages) as a list of checked entries."""
    if not isinstance(history, list | tuple):
        raise InvalidInputError(f"{name} must be a list, got {shown(history)}")
    entries = []
    for index, entry in enumerate(history):
        where = f"{name}[{index}]"
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise InvalidInputError(
                f"{where} must be (noise_multiplier, sample_rate, steps), got {shown(entry)}"
            )
        sigma, rate, steps = entry
        entries.append(
            (
                check_positive_real(f"{where} noise_multiplier", sigma),
                check_probability(f"{where} sample_rate", rate),
                check_positive_int(f"{where} steps", steps),
            )
        )
    return entries
