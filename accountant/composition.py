"""The bookkeeping both accountants share: which mechanisms were composed how often."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from accountant.validation import check_positive_int

__all__ = ["Component", "add_releases", "history"]


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
