"""The registry of mechanism types a saved accountant can hold.

A :class:`MechanismType` names a type in the file (``"WorstCasePair"``) and says how a
mechanism of that type becomes parameters (plain values and numpy arrays, which
:mod:`accountant.storage.values` writes to JSON and the sidecar) and how it is built again
from them. :mod:`accountant.storage.mechanism_types` registers every type the accountants
accept, one line each; a mechanism of any other type is refused when saving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from accountant.errors import InvalidInputError

__all__ = ["MechanismType", "exactly", "register", "registered_names", "type_named", "type_of"]


@attrs.frozen
class MechanismType:
    """How one type of mechanism is saved (``to_parameters``) and loaded
    (``from_parameters``); ``matches(mechanism)`` tells whether a mechanism is of it."""

    name: str
    matches: Callable[[Any], bool]
    to_parameters: Callable[[Any], dict[str, Any]]
    from_parameters: Callable[[dict[str, Any]], Any]


_TYPES: dict[str, MechanismType] = {}


def exactly(cls: type) -> Callable[[Any], bool]:
    """Matches instances of ``cls`` itself, not of subclasses (whose extra state the
    parameters of ``cls`` would not keep)."""
    return lambda mechanism: type(mechanism) is cls


def register(
    name: str,
    matches: Callable[[Any], bool],
    to_parameters: Callable[[Any], dict[str, Any]],
    from_parameters: Callable[[dict[str, Any]], Any],
) -> MechanismType:
    """Register a mechanism type under ``name`` (refused if the name is taken)."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"name must be a non-empty string, got {name!r}")
    if name in _TYPES:
        raise InvalidInputError(f"mechanism type {name!r} is already registered")
    _TYPES[name] = MechanismType(name, matches, to_parameters, from_parameters)
    return _TYPES[name]


def registered_names() -> tuple[str, ...]:
    """The names of every registered mechanism type, sorted."""
    return tuple(sorted(_TYPES))


def type_of(mechanism: Any) -> MechanismType:
    """The registered type of ``mechanism``; refuses a mechanism of no registered type,
    naming its type."""
    for kind in _TYPES.values():
        if kind.matches(mechanism):
            return kind
    raise InvalidInputError(
        f"cannot save a mechanism of type {type(mechanism).__qualname__}: it is not a "
        f"registered mechanism type (registered: {', '.join(registered_names())})"
    )


def type_named(name: Any) -> MechanismType:
    """The registered type called ``name``; refuses an unknown name, naming it."""
    if not isinstance(name, str) or name not in _TYPES:
        raise InvalidInputError(
            f"unknown mechanism type {name!r} (registered: {', '.join(registered_names())})"
        )
    return _TYPES[name]
