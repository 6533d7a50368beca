"""The bookkeeping every accountant shares: which mechanisms were composed how often,
the readable history, and the state an accountant is saved as and rebuilt from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self, cast

import attrs

from accountant.errors import InvalidInputError
from accountant.validation import check_positive_int

__all__ = [
    "STATE_VERSION",
    "Component",
    "ComposedReleases",
    "add_releases",
    "history",
    "rebuild",
    "state_of",
]


@attrs.frozen(eq=False, repr=False)
class Component:
    """``times`` independent releases of one ``mechanism``, with the ``source`` an
    accountant made of it (its release for PrivacyBuckets, its log moments for the
    Extended MA)."""

    mechanism: Any
    source: Any
    times: int

    @property
    def description(self) -> str:
        """What was composed, e.g. ``"truncated Gaussian(sigma=100, ...), sensitivity 1"``."""
        return self.source.description

    def __repr__(self) -> str:
        return f"Component({self.times} x {self.description})"


def history(components: tuple) -> str:
    """A short readable history: ``"10 x truncated Gaussian(...), 5 x Laplace (...)"`` (each
    component's ``times`` and the ``description`` of what was composed), ``"nothing"``
    for an accountant that composed nothing."""
    if not components:
        return "nothing"
    return "; ".join(f"{c.times} x {c.description}" for c in components)


def add_releases(
    components: tuple, mechanism: Any, times: Any, build: Callable[[Any, int], Any]
) -> tuple:
    """``components`` with ``times`` more releases of ``mechanism``: the count of the same
    object (by identity) grows, else ``build(mechanism, times)`` is appended. Each
    component has ``mechanism`` and ``times`` attributes."""
    times = check_positive_int("times", times)
    for index, component in enumerate(components):
        if component.mechanism is mechanism:
            grown = attrs.evolve(component, times=component.times + times)
            return (*components[:index], grown, *components[index + 1 :])
    return (*components, build(mechanism, times))


#: Version of the :meth:`state_dict` format of every accountant.
STATE_VERSION = 1


def state_of(kind: str, settings: dict[str, Any], components: tuple) -> dict[str, Any]:
    """An accountant's state: ``{"kind", "version", "settings", "components"}`` with each
    component as ``{"mechanism": <the object composed>, "times": n}``, in order."""
    return {
        "kind": kind,
        "version": STATE_VERSION,
        "settings": dict(settings),
        "components": [{"mechanism": c.mechanism, "times": c.times} for c in components],
    }


def rebuild(cls: Any, state: Any, settings: tuple[str, ...]) -> Any:
    """The accountant of class ``cls`` described by ``state`` (from :func:`state_of`):
    built from the settings, then each component composed again in order. Refuses a
    state of another kind or version, or with missing or unknown settings, naming them."""
    kind = cls.__name__
    if not isinstance(state, dict):
        raise InvalidInputError(f"state must be a dict from {kind}.state_dict(), got {state!r}")
    if state.get("kind") != kind:
        raise InvalidInputError(f"state describes a {state.get('kind')!r}, not a {kind}")
    if state.get("version") != STATE_VERSION:
        raise InvalidInputError(
            f"state has version {state.get('version')!r}; this library reads {STATE_VERSION}"
        )
    given = state.get("settings")
    if not isinstance(given, dict) or set(given) != set(settings):
        raise InvalidInputError(
            f"state settings must have exactly the keys {sorted(settings)}, got {given!r}"
        )
    components = state.get("components")
    if not isinstance(components, list) or not all(
        isinstance(c, dict) and set(c) == {"mechanism", "times"} for c in components
    ):
        raise InvalidInputError(
            "state components must be a list of {'mechanism': ..., 'times': n}, "
            f"got {components!r}"
        )
    accountant = cls(**given)
    for component in components:
        accountant = accountant.compose(component["mechanism"], component["times"])
    return accountant


class ComposedReleases:
    """What every accountant does with its ``components`` the same way: :meth:`compose`,
    :attr:`releases`, :attr:`history`, :meth:`state_dict` and :meth:`from_state_dict`.

    A mixin for frozen attrs accountants (it has no state of its own). A subclass names
    its ``SETTINGS`` (the init arguments its state keeps) and says, in
    :meth:`source_of`, what it makes of a mechanism (its release, its log moments)."""

    __slots__ = ()

    SETTINGS: ClassVar[tuple[str, ...]] = ()
    components: tuple[Component, ...]

    @staticmethod
    def source_of(mechanism: Any) -> Any:
        """What this accountant computes from ``mechanism`` (validated here)."""
        raise NotImplementedError

    def compose(self, mechanism: Any, times: int = 1) -> Self:
        """Add ``times`` releases of ``mechanism`` (any positive integer; heterogeneous
        composition by composing again). Composing the same object adds to its count.
        Returns a new accountant; this one is unchanged."""
        components = add_releases(
            self.components,
            mechanism,
            times,
            lambda m, n: Component(m, self.source_of(m), n),
        )
        # Every subclass is an attrs class (the mixin itself is not, hence the cast).
        return attrs.evolve(cast(Any, self), components=components)

    @property
    def releases(self) -> int:
        """Total number of composed releases."""
        return sum(c.times for c in self.components)

    @property
    def history(self) -> str:
        """What was composed, readably: ``"128 x truncated Gaussian(sigma=100, ...)"``."""
        return history(self.components)

    def state_dict(self) -> dict[str, Any]:
        """Settings and components (:func:`state_of`)."""
        settings = {name: getattr(self, name) for name in self.SETTINGS}
        return state_of(type(self).__name__, settings, self.components)

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Self:
        """The accountant :meth:`state_dict` described (:func:`rebuild`)."""
        return rebuild(cls, state, cls.SETTINGS)
