"""Bucket widths: where the refinement ladder starts, and how far down it may go (pure).

Rung 0 (:func:`initial_width`): the spacing of a common loss lattice when there is one
(buckets on the lattice compose exactly), a multiple of it only when the memory budget
demands; else a width from the loss variance and the number of releases, chosen for
:data:`~accountant.buckets.refinement.START_ACCURACY` whatever the accuracy asked (so that
every accuracy walks the same ladder), and a few hundred thousand buckets at most.
Finer rungs (:func:`refined_width`) are snapped to lattice multiples and never finer than
the budget allows (:func:`finest_width`).
"""

from __future__ import annotations

import math

import attrs

from accountant.buckets.refinement import START_ACCURACY
from accountant.buckets.sources import LossStatistics, estimated_span

__all__ = [
    "WIDTH_GRID",
    "StartingWidth",
    "common_lattice",
    "finest_width",
    "grid_width",
    "initial_width",
    "refined_width",
]

#: A loss lattice finer than the generic width by more than this factor is ignored.
LATTICE_FINENESS = 64.0
#: Bucket count the first composition aims at before any refinement.
INITIAL_BUCKETS = 1 << 18
#: Widths of rounded releases lie on the grid ``2^(k / WIDTH_GRID)`` (``k`` an integer):
#: accountants of a few more or fewer steps of the same mechanisms then round it at the same
#: widths, and share the rounded releases (:mod:`~accountant.buckets.release_cache`),
#: while every answer stays a function of the accountant and the query alone.
WIDTH_GRID = 4


def grid_width(width: float) -> float:
    """The largest ``2^(k / WIDTH_GRID)`` not above ``width`` (at most ``2^(1/4)`` finer)."""
    return 2.0 ** (math.floor(math.log2(width) * WIDTH_GRID) / WIDTH_GRID)


@attrs.frozen
class StartingWidth:
    """Rung 0 of one direction: its ``width``, the loss ``span`` the composition occupies,
    and the lattice ``spacing`` the buckets follow (``None`` if they follow none).
    ``finest``: the smallest width a rung may take (``None``: the one that fits the whole
    composition in ``max_buckets / 2``; rounded releases compose in stages
    (:mod:`~accountant.buckets.staged_plan`), so only the widest single release must fit)."""

    width: float
    span: float
    spacing: float | None
    finest: float | None = None


def initial_width(
    stats: list[tuple[LossStatistics, int]], max_buckets: int, rounded: bool = False
) -> StartingWidth:
    """Rung 0 for the components' loss statistics ``(statistics, times)``. With ``rounded``
    (losses rounded onto a lattice, :mod:`~accountant.buckets.rounding`) the eps slack grows
    like ``w sqrt(n)`` rather than ``n w``, so the generic width is ``sqrt(n) / 8`` coarser,
    and a loss lattice is not followed."""
    if not stats:
        return StartingWidth(1.0, 1.0, None)
    releases = sum(n for _, n in stats)
    deviation = math.sqrt(sum(n * s.variance for s, n in stats))
    span = max(estimated_span(stats), 1e-300)
    spacing = None if rounded else common_lattice([s.lattice for s, _ in stats])
    generic = 4.0 * math.sqrt(START_ACCURACY) * deviation / releases
    if rounded:
        generic *= math.sqrt(releases) / 8.0
    if spacing is not None and spacing > 0.0 and spacing * LATTICE_FINENESS >= generic:
        return StartingWidth(
            spacing * max(1, math.ceil(span / spacing / max_buckets)), span, spacing
        )
    if spacing == 0.0:
        return StartingWidth(max(span, 1.0), span, None)
    # No lattice, or one so fine (e.g. a DP-SGD mixture's accidental common divisor) that
    # following it would fill the memory budget for no gain.
    width = max(generic, span / INITIAL_BUCKETS, 2.0 * span / max_buckets, 1e-12)
    if rounded:
        widest = max(s.high - s.low for s, _ in stats)
        finest = max(4.0 * widest / max_buckets, 1e-12)
        start = grid_width(max(generic, span / INITIAL_BUCKETS, finest))
        return StartingWidth(start, span, None, finest)
    return StartingWidth(width, span, None)


def finest_width(start: StartingWidth, max_buckets: int) -> float:
    """The smallest width a rung may take: whose composition fits in ``max_buckets / 2``,
    or :attr:`StartingWidth.finest` when given."""
    if start.finest is not None:
        return start.finest
    return 2.0 * start.span / max_buckets


def refined_width(start: StartingWidth, wanted: float, max_buckets: int) -> float:
    """``wanted`` limited by the memory budget, and snapped to a lattice multiple."""
    finest = finest_width(start, max_buckets)
    width = max(wanted, finest)
    if start.spacing:
        spacing = start.spacing
        width = spacing * max(1, math.ceil(finest / spacing), math.floor(width / spacing))
    return width


def common_lattice(lattices: list[float | None]) -> float | None:
    """A spacing every component's lattice is a multiple of: ``None`` if some component has
    no lattice or the spacings are incommensurate, ``0.0`` if every loss is a single point."""
    if any(g is None for g in lattices):
        return None
    positive = [g for g in lattices if g and g > 0.0]
    if not positive:
        return 0.0
    smallest = min(positive)
    for g in positive:
        ratio = g / smallest
        if abs(ratio - round(ratio)) > 1e-9 * ratio:
            return None
    return smallest
