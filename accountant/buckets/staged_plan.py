"""Composing many rounded releases in two stages, so that no FFT spans the whole composition
at the finest width (issue 26).

A composition of ``N`` rounded releases at width ``w`` has a bracket of order ``V = N w^2``
(:mod:`accountant.buckets.rounding`): the accuracy asked for fixes ``w`` near ``sqrt(V /
N)``, and composing at once (:class:`~accountant.buckets.rounded_plan.RoundedPlan`) spans the
whole composition's window at that width, ``span / w`` points, which grows like ``sqrt(N)``
and passes the memory budget beyond about ``10^6`` releases.

The composed distribution is smooth on a much coarser scale, and a lattice only needs to be
fine where it is used many times. Stage 0 composes blocks of ``b`` releases at ``w`` (their
window is ``sqrt(N / b)`` times narrower); each block's composition is split onto the lattice
of width ``W = r w`` (:func:`~accountant.buckets.rounding.round_coarser`, ``r`` a power of
two), which keeps a dominating pair dominating, and its merged counterpart is merged onto it
(:func:`~accountant.buckets.merged_lattice.merge_coarser`), which keeps a dominated pair
dominated; stage 1 composes the ``N / b`` blocks at ``W``. The bracket's order becomes

    V = N w^2 + (N / b) W^2

(and for PDP, whose Hoeffding slack reads it, every rounding step, the blocks' coarser one
included, is a bounded step whose mean is at most a eighth of its width squared, given what
it rounds: the steps are martingale differences and the Azuma-Hoeffding inequality gives the
same tail bound). ``r`` is the largest power of two with ``(N / b) W^2 <= VARIANCE_SHARE * N
w^2``, and ``b`` a block size (a power of two) whose two stages each fit the memory budget.
Releases composed fewer than ``b`` times are pooled into blocks of about ``b`` releases.

Which ``b``: each block's composition carries the FFT's certified round-off, a floor over
its whole window, into stage 1 as an absolute error of the block's mass, and stage 1
counts it once per use (``N / b`` times). Small blocks are narrow beside their windows
(the heavy upper tail of a subsampled loss), so that floor dominates: sigma 0.5, q 1e-4,
10^7 steps in blocks of 64 ended at rel 8.4e-4, in blocks of 2^16 at rel 7.5e-5, and at
about the same cost (the cost of two stages, in FFT work, hardly depends on ``b``). Of the
plans within :data:`COST_SLACK` of the cheapest, the one with the largest blocks is taken.

Everything else is as for one stage: each block's composition carries its certified errors
(FFT round-off, cut tails, relative errors) into stage 1 as a release's, the tail moments of
a block are the sums of its releases' raised for the coarser step (Hoeffding's lemma around
its mean), and both stages take the same tilt (:mod:`accountant.buckets.rounded_plan`): the
largest up to the one asked for that every block's window affords, since a block's errors are
relative to the density of the tilt it was composed with.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.rounded_plan import RoundedPlan, compose_releases
from accountant.buckets.rounding import round_coarser
from accountant.buckets.tails import chernoff_window

__all__ = ["COST_SLACK", "FFT_TARGET", "VARIANCE_SHARE", "Block", "StagedPlan"]

#: A composition at once whose window exceeds this many points takes two stages (the
#: cheapest, when some fit the memory budget).
FFT_TARGET = 1 << 18
#: Two-stage plans costing at most this many times the cheapest one compete on block size
#: (the largest wins: module note).
COST_SLACK = 1.5
#: The largest share of the first stage's Hoeffding variance the coarser rounding of the
#: blocks may add.
VARIANCE_SHARE = 0.25
#: The unstaged plan with no memory limit (for windows and tilts only).
_UNLIMITED = 1 << 62


@attrs.frozen
class Block:
    """One stage-0 composition: ``counts[i]`` releases of each release ``i``, entering stage 1
    ``uses`` times."""

    counts: tuple[int, ...]
    uses: int


@attrs.frozen(eq=False)
class StagedPlan:
    """The composition of ``counts[i]`` rounded releases ``make(i)`` (all at one width), at
    once (``blocks`` empty) or in two stages (module note). ``whole`` is the one-stage plan
    of the whole composition, without memory limit: its window and moments give the tilts
    and the Chernoff estimates."""

    whole: RoundedPlan
    make: Callable[[int], BucketedPLD]
    counts: tuple[int, ...]
    blocks: tuple[Block, ...]
    factor: int
    tail_mass: float
    max_buckets: int

    @classmethod
    def build(
        cls,
        make: Callable[[int], BucketedPLD],
        counts: list[int],
        tail_mass: float,
        max_buckets: int,
    ) -> StagedPlan | None:
        """One stage up to :data:`FFT_TARGET` points, beyond it two stages within
        ``max_buckets / 2`` points per FFT (one if none fits): of those costing at most
        :data:`COST_SLACK` times the cheapest, the one with the largest blocks (module
        note). ``None`` when composing at once does not apply (releases on different
        widths). Raises :class:`~accountant.buckets.bucketed.BucketBudgetError` when no plan
        fits."""
        whole = RoundedPlan.build(make, counts, tail_mass, _UNLIMITED)
        if whole is None:
            return None
        limit = max_buckets // 2
        window = whole.stop - whole.start + 1
        best = None
        if window > FFT_TARGET:  # two stages, if any fit
            choices = [
                staged
                for size in _block_sizes(sum(counts))
                if (staged := _staged_choice(whole, counts, size, tail_mass, limit)) is not None
            ]
            if choices:
                cheapest = min(cost for cost, _, _ in choices)
                # (sizes ascend: the last affordable choice has the largest blocks)
                best = [c for c in choices if c[0] <= COST_SLACK * cheapest][-1]
        if best is None:
            if window > limit:
                raise BucketBudgetError(window)
            best = (0.0, (), 1)
        _, blocks, factor = best
        return cls(whole, make, tuple(counts), blocks, factor, tail_mass, max_buckets)

    @property
    def staged(self) -> bool:
        """Whether the composition takes two stages."""
        return bool(self.blocks)

    # -- estimates from the whole composition ------------------------------------------

    def tilt_for_eps(self, eps: float) -> float:
        """:meth:`RoundedPlan.tilt_for_eps` of the whole composition."""
        return self.whole.tilt_for_eps(eps)

    def tilt_for_delta(self, delta: float) -> float:
        """:meth:`RoundedPlan.tilt_for_delta` of the whole composition."""
        return self.whole.tilt_for_delta(delta)

    def chernoff_eps(self, delta: float) -> float:
        """:meth:`RoundedPlan.chernoff_eps` of the whole composition."""
        return self.whole.chernoff_eps(delta)

    def chernoff_slope(self, delta: float) -> float:
        """:meth:`RoundedPlan.chernoff_slope` of the whole composition."""
        return self.whole.chernoff_slope(delta)

    def eps_slope(self, eps: float) -> float:
        """:meth:`RoundedPlan.eps_slope` of the whole composition."""
        return self.whole.eps_slope(eps)

    @property
    def variance_factor(self) -> float:
        """``V / (N w^2)``: how much the stages' coarser rounding adds to the first stage's
        Hoeffding variance (1 for one stage)."""
        if not self.blocks:
            return 1.0
        uses = sum(block.uses for block in self.blocks)
        return 1.0 + uses * self.factor**2 / sum(self.counts)

    # -- composing ----------------------------------------------------------------------

    def compose(self, tilt: float = 0.0) -> BucketedPLD | None:
        """The composition tilted by ``tilt`` (0: untilted), with its merged counterpart
        (second pass: the releases ``make(i)`` read again); ``None`` when its tilted window
        does not fit (the caller then composes untilted)."""
        if not self.blocks:
            plan = attrs.evolve(self.whole, tail_mass=self.tail_mass, max_buckets=self.max_buckets)
            return compose_releases(plan, self.make, tilt)
        blocks = [self._block(block, tilt) for block in self.blocks]
        coarse = [composed for composed, _ in blocks]
        top = RoundedPlan.build(
            lambda index: coarse[index],
            [block.uses for block in self.blocks],
            self.tail_mass,
            self.max_buckets,
        )
        if top is None:  # pragma: no cover - every block is at the same width
            return None
        # A block composed with a smaller tilt carries errors relative to that tilt's
        # density: tilting it further at the top would amplify them. All at the smallest.
        common = min([tilt, *(block_tilt for _, block_tilt in blocks)])
        common = top.affordable(common) if common > 0.0 else 0.0
        return compose_releases(top, lambda index: coarse[index], common)

    def _block(self, block: Block, tilt: float) -> tuple[BucketedPLD, float]:
        """``(composition, tilt)`` of one block at the first width, under the largest grid
        tilt up to ``tilt`` its window affords (:meth:`RoundedPlan.affordable`), rounded
        onto the coarser lattice (its merged counterpart merged onto it)."""
        members = [i for i, count in enumerate(block.counts) if count]
        plan = RoundedPlan.of_summaries(
            tuple(self.whole.summaries[i] for i in members),
            [block.counts[i] for i in members],
            self.tail_mass,
            self.max_buckets,
        )
        if plan is None:  # pragma: no cover - every release is at the same width
            raise BucketBudgetError(0)

        def local(index: int) -> BucketedPLD:
            return self.make(members[index])

        affordable = plan.affordable(tilt) if tilt > 0.0 else 0.0
        composed = compose_releases(plan, local, affordable) if affordable > 0.0 else None
        if composed is None:
            composed, affordable = compose_releases(plan, local, 0.0), 0.0
        # untilted, the window fits (RoundedPlan.of_summaries refuses one that does not)
        assert composed is not None
        return round_coarser(composed, self.factor), affordable


def _cost(points: int, spectra: int) -> float:
    """The work of one composition at once: ``spectra + 1`` FFTs of about ``points``."""
    return (spectra + 1) * points * math.log2(max(points, 2))


def _block_sizes(releases: int) -> list[int]:
    """Candidate block sizes: powers of two from 16 to a quarter of the releases."""
    sizes, size = [], 16
    while size <= releases // 4:
        sizes.append(size)
        size *= 2
    return sizes


def _blocks(counts: list[int], size: int) -> list[Block]:
    """Blocks of ``size`` releases of one kind (used ``counts[i] // size`` times), and the
    rest pooled in order into blocks of at most ``size`` releases (used once)."""
    blocks, pool = [], [0] * len(counts)
    pooled = 0
    for index, count in enumerate(counts):
        if count >= size:
            whole = [0] * len(counts)
            whole[index] = size
            blocks.append(Block(tuple(whole), count // size))
        rest = count % size if count >= size else count
        while rest:
            take = min(rest, size - pooled)
            pool[index] += take
            pooled += take
            rest -= take
            if pooled == size:
                blocks.append(Block(tuple(pool), 1))
                pool, pooled = [0] * len(counts), 0
    if pooled:
        blocks.append(Block(tuple(pool), 1))
    return blocks


def _window(whole: RoundedPlan, counts: tuple[int, ...], tail_mass: float, width: float) -> int:
    """Points of the Chernoff window of ``counts`` releases of ``whole``'s summaries at
    ``width`` (a multiple of theirs), within their support."""
    pairs = [(s, c) for s, c in zip(whole.summaries, counts, strict=True) if c]
    step = whole.width
    moments = tuple((m, k * c) for s, c in pairs for m, k in s.tail_moments)
    low = sum(c * (s.first_index * step + s.offset_low) for s, c in pairs)
    high = sum(c * ((s.first_index + s.size - 1) * step + s.offset_high) for s, c in pairs)
    if moments:
        cut_low, cut_high = chernoff_window(moments, tail_mass)
        low, high = max(low, cut_low), min(high, cut_high)
    return int(max(high - low, 0.0) / width) + 3


def _staged_choice(
    whole: RoundedPlan, counts: list[int], size: int, tail_mass: float, limit: int
) -> tuple[float, tuple[Block, ...], int] | None:
    """``(cost, blocks, factor)`` of two stages with blocks of ``size`` (``None`` if a stage
    would not fit in ``limit`` points or there would be one block)."""
    width = whole.width
    releases = sum(counts)
    blocks = _blocks(counts, size)
    uses = sum(block.uses for block in blocks)
    if len(blocks) < 2 and uses < 2:
        return None
    factor = 1
    while uses * (2 * factor * width) ** 2 <= VARIANCE_SHARE * releases * width * width:
        factor *= 2
    if factor == 1:
        return None
    cost = 0.0
    for block in blocks:
        points = _window(whole, block.counts, tail_mass, width)
        if points > limit:
            return None
        cost += _cost(points, sum(1 for c in block.counts if c))
    top = (whole.stop - whole.start + 1) // factor + 2 * len(blocks) + 3
    if top > limit:
        return None
    cost += _cost(top, len(blocks))
    return cost, tuple(blocks), factor
