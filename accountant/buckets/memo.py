"""What one :class:`~accountant.buckets.engine.PrivacyBuckets` has computed, each kind in
its own table keyed by what it depends on (the components are fixed per accountant:
``compose`` returns a new accountant with an empty memo).

- ``starts``: rung 0 of a direction (:func:`~accountant.buckets.widths.initial_width`);
- ``plans``: the first pass of a rounded composition at ``(direction, width)``
  (:class:`~accountant.buckets.staged_plan.StagedPlan`, ``None`` where rounding does not
  apply, or the budget error that pass raised, so that it is not repeated);
- ``composed``: the composition at ``(direction, width, tilt)``;
- ``same_directions``: whether every release is the same in both directions (``None``:
  not yet asked); then B/A is served by A/B's entries;
- ``tails``: the same accountant with another tail mass, by tail mass, for eps queries
  (the automatic tail mass, or a smaller one for targets the given one would swamp).

Entries are only ever added; every one is a pure function of its key and the components.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["EngineMemo"]


@attrs.define(eq=False)
class EngineMemo:
    """The tables of the module note."""

    starts: dict[str, Any] = attrs.field(factory=dict)
    plans: dict[tuple[str, float], Any] = attrs.field(factory=dict)
    composed: dict[tuple[str, float, float], Any] = attrs.field(factory=dict)
    same_directions: bool | None = None
    tails: dict[float, Any] = attrs.field(factory=dict)
