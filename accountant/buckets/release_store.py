"""Rounded single releases kept between the two passes of a composition (pure caching).

:class:`~accountant.buckets.rounded_plan.RoundedPlan` reads every release twice: once for
its summary (sizes, moments, the window) and once for its spectrum. Computing a release
from its CDFs dominates both passes for the analytic mechanisms, so the first pass keeps
what the second needs (the A-masses and their per-entry errors) within a byte budget.

Policy: releases are grouped by ``(direction, width)``; a group is never evicted for a
member of itself (a pass reads its releases in order, so evicting the oldest would make the
second pass miss every one), at most ``groups`` groups are kept (the newest), and a release
that would exceed the budget is simply not kept (the second pass recomputes it). Keeping
a release changes no number: it is the same array the second pass would compute.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

__all__ = ["ReleaseStore"]


class ReleaseStore:
    """``(direction, width, index) -> (mass_a, entry_errors)`` within ``budget`` bytes."""

    def __init__(self, budget: int, groups: int = 1) -> None:
        self.budget = budget
        self.groups = max(1, groups)
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple, dict[int, tuple]] = OrderedDict()
        self._bytes = 0

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return self._bytes

    def get(self, group: tuple, index: int) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The kept masses of release ``index`` of ``group``, or ``None``."""
        with self._lock:
            members = self._kept.get(group)
            return None if members is None else members.get(index)

    def put(
        self, group: tuple, index: int, mass_a: np.ndarray, entry_errors: np.ndarray | None
    ) -> None:
        """Keep release ``index`` of ``group`` if it fits (see the module's policy)."""
        size = mass_a.nbytes + (0 if entry_errors is None else entry_errors.nbytes)
        with self._lock:
            if group not in self._kept:
                while len(self._kept) >= self.groups:
                    _, dropped = self._kept.popitem(last=False)
                    self._bytes -= sum(_nbytes(kept) for kept in dropped.values())
                self._kept[group] = {}
            members = self._kept[group]
            if index in members or self._bytes + size > self.budget:
                return
            members[index] = (mass_a, entry_errors)
            self._bytes += size


def _nbytes(kept: tuple) -> int:
    mass_a, entry_errors = kept
    return mass_a.nbytes + (0 if entry_errors is None else entry_errors.nbytes)
