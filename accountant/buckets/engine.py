"""``PrivacyBuckets``: certified lower and upper delta(eps) under composition.

The user states an accuracy (relative width of the certified bracket); the engine
chooses the bucket width and placement itself (SPEC section 2), composes lazily on the
first query, refines the width on a fixed ladder while a bracket is too wide because of
bucketing, intersects the certified brackets of every width it tried
(:mod:`accountant.buckets.refinement`), and warns with the achieved figure and the reason
when it cannot reach the accuracy.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import attrs
import numpy as np

from accountant.buckets import vector_kernels
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.chernoff import ChernoffEstimate
from accountant.buckets.convolution import compose_pair, compose_power
from accountant.buckets.many_deltas import epsilon_for_many
from accountant.buckets.memo import EngineMemo
from accountant.buckets.progress import query_progress
from accountant.buckets.refinement import (
    AIMED_WIDTHS,
    LARGEST_RATIO,
    MAX_RUNGS,
    START_ACCURACY,
    WIDTH_RATIO,
    aimed_ratio,
    stop_reason,
)
from accountant.buckets.release_cache import cached_composition, cached_lattice
from accountant.buckets.sources import release_source
from accountant.buckets.staged_plan import StagedPlan
from accountant.buckets.walks import delta_walk, epsilon_walk
from accountant.buckets.widths import StartingWidth, grid_width, initial_width, refined_width
from accountant.composition import Component, ComposedReleases
from accountant.errors import InvalidInputError
from accountant.numerics.directed import MassLogs
from accountant.results import Bounds, EpsilonBounds
from accountant.validation import (
    Direction,
    Kind,
    OneDirection,
    check_finite_real,
    check_positive_int,
    check_positive_real,
)

__all__ = ["PrivacyBuckets"]

#: From this many releases on, losses that the buckets cannot follow on a lattice are
#: split onto one (``_rounds``): a dominating pair above and a merged one below
#: (:mod:`~accountant.buckets.rounding`), whose bracket is of order ``V = n w^2`` instead of
#: loss intervals that widen like ``n w``. ``None`` turns rounding off.
ROUNDING_RELEASES: int | None = 64
#: ... and from this many on for releases whose losses have a smooth law (a source with
#: ``smooth_losses = True``: the subsampled Gaussian of DP-SGD), where the split and merged
#: pairs are of second order per release while loss intervals are of first order.
SMOOTH_ROUNDING_RELEASES = 2
#: Threads composing the directions of a rung at once (1, the default: one after the
#: other; on two cores two threads gained nothing measurable on DP-SGD rows once releases
#: were kept between passes). Two hold both directions' arrays at once, so they do only for
#: compositions estimated to span at most :data:`PARALLEL_BUCKETS` buckets each.
WORKERS = 1
PARALLEL_BUCKETS = 1 << 20
#: The model of :meth:`PrivacyBuckets._aim_epsilon`: the eps bracket of a composition of
#: rounded releases (the dominating pair above, the merged one below) is about this times
#: ``(lambda + 1) V`` in eps (measured: 0.10 to 0.133 on DP-SGD and Gaussian compositions
#: from 10^3 to 10^6 releases, at every width: it scales like ``V``).
BRACKET_PER_VARIANCE = 0.15
#: Rung 0 of an eps query aims at this share of the accuracy.
START_MARGIN = 0.75
#: A direction estimated below another is aimed at this share of the estimates' gap.
LESSER_SHARE = 0.25
#: Rung 0 aimed from the estimates is at most this many times the starting width.
APPROACH = 4.0
#: The tail mass of delta queries when ``tail_mass`` is automatic (``None``).
DEFAULT_TAIL_MASS = 1e-24
#: An eps query with the automatic tail mass cuts at most this share of ``accuracy * delta``
#: (:meth:`PrivacyBuckets._for_target`) ...
AUTO_TAIL_SHARE = 1e-3
#: ... and at most this much per side of every array.
LARGEST_TAIL = 1e-12
#: Largest share of an eps query's target delta a given tail mass may take; a target
#: smaller than that asks for a smaller tail mass (:meth:`PrivacyBuckets._for_target`) ...
TAIL_SHARE = 1e-6
#: ... down to this.
SMALLEST_TAIL = 1e-290
#: An eps query of rounded releases starts this many times coarser than the starting width
#: (an eighth of its work), and measures there how far to go.
ESTIMATE_COARSENING = 8.0
#: For an accuracy coarser than the starting width's, the estimate is made at most this
#: many times coarser still (:meth:`PrivacyBuckets._aim_start`).
ESTIMATE_ACCURACY_REACH = 10.0
#: A coarse bracket wider than this (relative) is not extrapolated from: the model aims.
SATURATED = 0.05


def _check_accuracy(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    check_positive_real(attribute.name, value)
    if value >= 1.0:
        raise InvalidInputError(f"{attribute.name} must lie in (0, 1), got {value!r}")


def _check_tail_mass(instance: Any, attribute: attrs.Attribute, value: float | None) -> None:
    if value is None:  # automatic
        return
    mass = check_finite_real(attribute.name, value)
    if not 0.0 <= mass < 1.0:
        raise InvalidInputError(f"{attribute.name} must lie in [0, 1), got {mass!r}")


def _check_budget(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    check_positive_int(attribute.name, value)
    if value < 1024:
        raise InvalidInputError(f"{attribute.name} must be at least 1024, got {value!r}")


@attrs.frozen(eq=False)
class PrivacyBuckets(ComposedReleases):
    """Certified PrivacyBuckets accountant. Immutable: :meth:`compose` returns a new one.

    ``accuracy``: the requested relative width ``(upper - lower) / upper`` of every
    certified delta bracket. ``max_buckets``: memory budget per array.
    ``tail_mass``: A-mass that may be cut from each tail of each array (counted in full
    in every upper bound); ``None`` (the default): :data:`DEFAULT_TAIL_MASS` for delta
    queries, and for an eps query the largest power of ten that keeps the mass cut below
    :data:`AUTO_TAIL_SHARE` of the accuracy's share of the target delta (a narrower
    range for every release and every composition: no bracket notices it).
    """

    accuracy: float = attrs.field(default=1e-4, validator=_check_accuracy)
    max_buckets: int = attrs.field(default=1 << 23, validator=_check_budget)
    tail_mass: float | None = attrs.field(default=None, validator=_check_tail_mass)
    components: tuple[Component, ...] = attrs.field(default=(), repr=False)
    _memo: EngineMemo = attrs.field(factory=EngineMemo, init=False, repr=False)

    SETTINGS: ClassVar[tuple[str, ...]] = ("accuracy", "max_buckets", "tail_mass")
    source_of = staticmethod(release_source)

    @property
    def _tail(self) -> float:
        """The tail mass cut (``tail_mass``, or :data:`DEFAULT_TAIL_MASS` if automatic)."""
        return DEFAULT_TAIL_MASS if self.tail_mass is None else self.tail_mass

    # -- choosing the width -------------------------------------------------------------

    def _start(self, direction: str) -> StartingWidth:
        """Rung 0 of ``direction`` (:func:`~accountant.buckets.widths.initial_width`)."""
        direction = self._canonical(direction)
        starts = self._memo.starts
        if direction not in starts:
            stats = [(c.source.statistics(direction, self._tail), c.times) for c in self.components]
            start = initial_width(stats, self.max_buckets)
            if self._rounds(start):
                start = initial_width(stats, self.max_buckets, rounded=True)
            starts[direction] = start
        return starts[direction]

    def _rounds(self, start: StartingWidth) -> bool:
        """Whether losses are rounded onto a lattice (a dominating and a merged pair: a bracket
        of order ``n w^2``) instead of bucketed with intervals (``n w``): when the buckets
        cannot follow a loss lattice exactly (there is none, or it is finer than the budget
        allows) and there are many releases (:data:`ROUNDING_RELEASES`, or
        :data:`SMOOTH_ROUNDING_RELEASES` for smooth laws), and every release can be rounded
        (pairs, PLDs and the analytic mechanisms, from their CDFs:
        :mod:`~accountant.buckets.analytic_lattice`)."""
        if ROUNDING_RELEASES is None:
            return False
        smooth = all(getattr(c.source, "smooth_losses", False) for c in self.components)
        return (
            (start.spacing is None or start.width > start.spacing)
            and self.releases
            >= min(ROUNDING_RELEASES, SMOOTH_ROUNDING_RELEASES if smooth else ROUNDING_RELEASES)
            and all(hasattr(c.source, "lattice") for c in self.components)
        )

    def _anchor(self, component: Component, direction: str) -> float:
        return component.source.statistics(direction, self._tail).anchor

    # -- composing ----------------------------------------------------------------------

    def _composed(self, direction: str, width: float, tilt: float = 0.0) -> BucketedPLD:
        """The composition of ``direction`` at ``width`` and ``tilt`` (memoised). When
        every release is the same in both directions, B/A is A/B's composition, whichever
        direction was asked for first: an answer never depends on earlier queries."""
        direction = self._canonical(direction)
        composed, key = self._memo.composed, (direction, width, tilt)
        if key not in composed:
            if self.components and self._rounds(self._start(direction)):
                parts = [(c.source, c.times) for c in self.components]
                composed[key] = cached_composition(
                    parts,
                    (direction, width, tilt, self._tail, self.max_buckets),
                    lambda: self._compose_at(direction, width, tilt),
                )
            else:
                composed[key] = self._compose_at(direction, width, tilt)
        return composed[key]

    def _canonical(self, direction: str) -> str:
        """``"A/B"`` for ``"B/A"`` when every release is the same in both directions (then
        one composition, one plan and one start serve both), else ``direction``."""
        if direction == "B/A":
            if self._memo.same_directions is None:
                self._memo.same_directions = all(
                    c.source.same_directions() for c in self.components
                )
            if self._memo.same_directions:
                return "A/B"
        return direction

    def _single(self, direction: str, width: float, rounds: bool):
        """``make(i)``: release ``i`` bucketed (or rounded, if ``rounds``) at ``width``;
        rounded releases are kept for every accountant of the process
        (:mod:`~accountant.buckets.release_cache`)."""

        def single(index: int) -> BucketedPLD:
            component = self.components[index]
            anchor = self._anchor(component, direction)
            if rounds:
                return cached_lattice(
                    component.source, direction, width, anchor, self._tail, self.max_buckets
                )
            return component.source.bucket(direction, width, anchor, self._tail, self.max_buckets)

        return single

    def _plan(self, direction: str, width: float) -> StagedPlan | None:
        """The first pass of composing rounded releases at once (cached; ``None`` when
        rounding does not apply or the composition does not fit at once)."""
        direction = self._canonical(direction)
        plans, key = self._memo.plans, (direction, width)
        if key not in plans:
            plan: Any = None
            if self.components and self._rounds(self._start(direction)):
                single = self._single(direction, width, True)
                counts = [c.times for c in self.components]
                try:
                    plan = StagedPlan.build(single, counts, self._tail, self.max_buckets)
                except BucketBudgetError as error:
                    plan = error  # remembered: the first pass is not repeated
            plans[key] = plan
        if isinstance(plans[key], BucketBudgetError):
            raise plans[key]
        return plans[key]

    def _compose_at(self, direction: str, width: float, tilt: float) -> BucketedPLD:
        if not self.components:
            return BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, MassLogs(), releases=0)
        rounds = self._rounds(self._start(direction))
        single = self._single(direction, width, rounds)
        plan = self._plan(direction, width)
        if plan is not None:  # one FFT per release over the composition's window
            composed = plan.compose(tilt)
            if composed is not None:
                return composed
        if tilt > 0.0:  # the tilted window did not fit: the untilted composition
            return self._composed(direction, width)
        result: BucketedPLD | None = None
        half = self.max_buckets // 2  # coarsen (not fail) when an array outgrows this
        for index, component in enumerate(self.components):
            release = single(index)
            self._check_size(release)
            powered = compose_power(release, component.times, self._tail, max_size=half)
            self._check_size(powered)
            result = (
                powered
                if result is None
                else compose_pair(result, powered, self._tail, max_size=half)
            )
            self._check_size(result)
        assert result is not None  # components is not empty (returned above)
        return result

    def _check_size(self, pld: BucketedPLD) -> None:
        if pld.size > self.max_buckets:
            raise BucketBudgetError(pld.size)

    def _composed_within_budget(self, direction: str, width: float, tilt: float) -> BucketedPLD:
        for _ in range(40):
            try:
                return self._composed(direction, width, tilt)
            except BucketBudgetError:
                width *= 2.0
        raise InvalidInputError(  # pragma: no cover - defensive
            f"could not fit the composition into max_buckets={self.max_buckets}"
        )

    def _rung_plan(self, direction: str, rung: int) -> StagedPlan | None:
        """The rounded plan of ``rung`` at the width :meth:`_rung` composes (``None``: no
        tilting applies there)."""
        width = self._rung_width(direction, rung)
        for _ in range(40):
            try:
                return self._plan(direction, width)
            except BucketBudgetError:
                width *= 2.0
        return None  # pragma: no cover - defensive

    def _tilts(self, direction: str, rung: int, eps: np.ndarray) -> np.ndarray:
        """The tilt of :mod:`~accountant.buckets.rounded_plan` for each eps (0: none)."""
        plan = self._rung_plan(direction, rung)
        if plan is None:
            return np.zeros(eps.size)
        return np.array([plan.tilt_for_eps(float(e)) for e in eps])

    def _tilt_for_delta(self, direction: str, rung: int, delta: float) -> float:
        """The tilt towards the eps where the Chernoff bound reaches ``delta``."""
        plan = self._rung_plan(direction, rung)
        return 0.0 if plan is None else plan.tilt_for_delta(delta)

    # -- queries ------------------------------------------------------------------------

    def delta(self, epsilon: float | np.ndarray, direction: Direction = "max") -> Bounds:
        """Certified ADP ``Bounds(lower, upper)`` on delta(eps); vectorised over eps;
        ``direction="max"`` bounds ``max(delta_{A/B}, delta_{B/A})``."""
        return self._query(epsilon, direction, "ADP")

    def delta_pdp(self, epsilon: float | np.ndarray, direction: Direction = "max") -> Bounds:
        """Certified PDP bounds on ``P_A[L > eps]`` (distinguishing events included)."""
        return self._query(epsilon, direction, "PDP")

    def _rung_width(self, direction: str, rung: int) -> float:
        """Requested width of ``rung`` of the refinement ladder (:mod:`.refinement`)."""
        if not self.components:
            return 1.0
        start = self._start(direction)
        aimed = AIMED_WIDTHS.get()
        if rung == 0 and (aimed is None or (direction, 0) not in aimed):
            return start.width
        wanted = start.width * WIDTH_RATIO**rung
        if aimed is not None and (direction, rung) in aimed:
            wanted = aimed[(direction, rung)]
        width = refined_width(start, wanted, self.max_buckets)
        # rounded releases: on the grid of widths, shared across accountants
        return grid_width(width) if start.finest is not None and width > start.finest else width

    def _aim_start(
        self,
        direction: str,
        relative_variance: Callable[[Any], float],
        approach: float = APPROACH,
        scaled: bool = False,
    ) -> None:
        """Aim rung 0 of the running query (rounded releases) at the width a model of the
        bracket gives: Hoeffding variance ``V = relative_variance(plan)``
        (:data:`BRACKET_PER_VARIANCE`) from Chernoff estimates: the releases' own
        (:meth:`_estimate`) where every release gives them, else those of the plan at
        :data:`ESTIMATE_COARSENING` times the starting width (an eighth of its work: the
        moments barely depend on the width); at most ``approach`` times the starting width
        or that estimate width, whichever is coarser (where the plan was rendered, rung 0
        then reuses its releases); kept as the fallback of later rungs (:meth:`_aim`).

        The starting width is chosen for
        :data:`~accountant.buckets.refinement.START_ACCURACY`; a coarser accuracy ``a``
        takes a bracket ``a / START_ACCURACY`` times wider, which rounded releases reach
        at ``sqrt(a / START_ACCURACY)`` times the width (the bracket scales like ``w^2``),
        so with ``scaled`` (eps queries) the estimate is made that much coarser too (at
        most :data:`ESTIMATE_ACCURACY_REACH` times). Delta queries keep the estimate at
        :data:`ESTIMATE_COARSENING` times the starting width: a noise calibration asks for
        the delta accuracy that decides its tolerance and needs the bracket well inside
        it."""
        aimed = AIMED_WIDTHS.get()
        start = self._start(direction)
        if aimed is None or not self.components or not self._rounds(start):
            return
        scale = 1.0
        if scaled:
            scale = min(
                math.sqrt(max(self.accuracy / START_ACCURACY, 1.0)), ESTIMATE_ACCURACY_REACH
            )
        coarse = grid_width(ESTIMATE_COARSENING * scale * start.width)
        plan: Any = self._estimate(direction)
        if plan is None:  # the releases rendered at the coarse width
            try:
                plan = self._plan(direction, coarse)
            except BucketBudgetError:
                return
            if plan is None:
                return
        variance = relative_variance(plan)
        if not (math.isfinite(variance) and variance > 0.0):
            return
        wanted = math.sqrt(variance / (self.releases * plan.variance_factor))
        prior = grid_width(min(wanted, max(approach * start.width, coarse)))
        aimed[("estimate", direction)] = coarse
        aimed[("prior", direction)] = prior
        aimed[(direction, 0)] = prior  # rung 0: where the model puts the bracket

    def _estimate(self, direction: str) -> ChernoffEstimate | None:
        """The Chernoff estimates of the composition from its releases' own estimated
        log-moment-generating functions (``estimated_log_mgf``), when every release gives
        one: no release rendered before its width is chosen (with many distinct releases,
        rendering each at a coarse width first cost as much as the composition)."""
        sources = [c.source for c in self.components]
        if not all(hasattr(source, "estimated_log_mgf") for source in sources):
            return None
        high = sum(c.times * c.source.estimated_log_mgf(direction) for c in self.components)
        return ChernoffEstimate(np.asarray(high, dtype=np.float64))

    def _aim_epsilon(self, direction: str, delta: float) -> float:
        """:meth:`_aim_start` for an eps query at ``delta``: the eps bracket of rounded
        releases is about ``BRACKET_PER_VARIANCE (lambda + 1) V`` at the Chernoff slope
        ``lambda``. Returns the Chernoff estimate of eps (``-inf`` if none was made)."""
        estimate = -math.inf

        def variance(plan: Any) -> float:
            nonlocal estimate
            estimate, slope = plan.chernoff_eps(delta), plan.chernoff_slope(delta)
            return START_MARGIN * self.accuracy * estimate / (BRACKET_PER_VARIANCE * (slope + 1.0))

        self._aim_start(direction, variance, scaled=True)
        return estimate

    def _aim_delta(self, direction: str, eps: np.ndarray) -> None:
        """:meth:`_aim_start` for a delta query at ``eps``: at the Chernoff slope ``lambda``
        of ``eps`` (:meth:`~accountant.buckets.rounded_plan.RoundedPlan.eps_slope`) the
        relative delta bracket is about ``lambda`` times the eps bracket,
        ``BRACKET_PER_VARIANCE lambda (lambda + 1) V``; aimed at the steepest eps asked
        (no aim where no eps has a slope: the ladder's rung 0 then), at most as coarse as
        the estimate itself (whose rounded releases rung 0 then reuses: a delta bracket
        too wide costs one more rung, not a failed search as an eps query's would)."""

        def variance(plan: Any) -> float:
            slope = max((plan.eps_slope(float(e)) for e in eps), default=0.0)
            if not slope > 0.0:
                return math.nan
            return START_MARGIN * self.accuracy / (BRACKET_PER_VARIANCE * slope * (slope + 1.0))

        self._aim_start(direction, variance, ESTIMATE_COARSENING)

    def _aim_lesser(self, estimates: dict[OneDirection, float]) -> None:
        """Aim rung 0 of a direction whose Chernoff estimate of eps lies below another's
        coarser: it only has to be settled below that one, so at :data:`LESSER_SHARE` of the
        estimates' relative gap (the bracket scales like ``w^2``); a miss costs a rung. At
        most as coarse as the estimate's width (where the estimate rendered its releases,
        rung 0 then reuses them instead of rendering every release once more)."""
        aimed = AIMED_WIDTHS.get()
        finite = {d: e for d, e in estimates.items() if math.isfinite(e) and e > 0.0}
        if aimed is None or len(finite) < 2:
            return
        top = max(finite.values())
        for direction, estimate in finite.items():
            goal = LESSER_SHARE * (top - estimate) / top
            if (direction, 0) in aimed and goal > self.accuracy:
                coarser = aimed[(direction, 0)] * math.sqrt(goal / self.accuracy)
                estimate_width = aimed.get(("estimate", direction), math.inf)
                aimed[(direction, 0)] = min(coarser, max(estimate_width, aimed[(direction, 0)]))

    def _aim(self, direction: str, rung: int, term: float, rounded: bool, goal: float) -> None:
        """Aim rung ``rung + 1`` of the running eps query, whose relative bracket at rung
        ``rung`` is ``term``, at the relative bracket ``goal`` (the accuracy, or what settles
        a direction below another): from the coarse rung 0 of rounded releases, the width
        whose bracket the measured one extrapolates to :data:`START_MARGIN` of ``goal`` (it
        scales like ``V``, so like ``w^2``), or the model's width where rung 0's bracket is
        beyond :data:`SATURATED` (unless rung 0 was at the model's width already: then the
        measured ratio); else the ladder's
        (:func:`~accountant.buckets.refinement.aimed_ratio`)."""
        aimed = AIMED_WIDTHS.get()
        if aimed is None:
            return
        width = self._rung_width(direction, rung)
        prior = aimed.get(("prior", direction)) if rung == 0 else None
        if prior is None:
            wanted = width * aimed_ratio(term, goal, rounded)
        elif rounded and 0.0 < term <= SATURATED:
            ratio = math.sqrt(START_MARGIN * goal / term)
            wanted = width * min(ratio, LARGEST_RATIO)
        else:  # the model's width, for the goal (the bracket scales like w^2)
            wanted = prior * math.sqrt(goal / self.accuracy)
            if wanted >= width:  # this rung was at the model's width and missed: measured
                wanted = width * aimed_ratio(term, goal, rounded)
        aimed[(direction, rung + 1)] = wanted

    def _hold(self, direction: str, rung: int) -> None:
        """Keep rung ``rung + 1`` of the running eps query at rung ``rung``'s width in
        ``direction`` (no finer width would narrow the query's bracket there)."""
        aimed = AIMED_WIDTHS.get()
        if aimed is not None:
            aimed[(direction, rung + 1)] = self._rung_width(direction, rung)

    def _no_finer_rung(self, directions: list[str], rung: int) -> str | None:
        """Why rung ``rung + 1`` would be no finer than ``rung`` in any of ``directions``
        (those that still matter), or None."""
        if any(self._finer(d, rung + 1) for d in directions):
            return None
        if all(self._start(d).spacing == self._rung_width(d, rung) for d in directions):
            return "the buckets already follow the loss lattice"
        return f"the memory budget max_buckets={self.max_buckets} allows no finer width"

    def _finer(self, direction: str, rung: int) -> bool:
        """Whether ``rung`` is finer than the rung before it in ``direction``."""
        return self._rung_width(direction, rung) < self._rung_width(direction, rung - 1)

    def _in_parallel(self, jobs: list, directions: Sequence[str], rung: int) -> None:
        """Run ``jobs`` (compositions filling the cache: ``directions`` at ``rung``) on up to
        :data:`WORKERS` threads while each composition is estimated to span at most
        :data:`PARALLEL_BUCKETS` buckets (beyond, one after the other: two at once would
        hold both directions' arrays); the FFTs, numpy and the numba kernels release the
        GIL."""
        small = all(
            self._start(d).span <= PARALLEL_BUCKETS * self._rung_width(d, rung) for d in directions
        )
        if len(jobs) < 2 or WORKERS < 2 or not small:
            for job in jobs:
                job()
            return
        with ThreadPoolExecutor(max_workers=min(len(jobs), WORKERS)) as pool:
            # each job in a copy of this context: the query's progress bar goes along
            for future in [pool.submit(contextvars.copy_context().run, job) for job in jobs]:
                future.result()

    def _rung(self, direction: str, rung: int, tilt: float = 0.0) -> BucketedPLD:
        width = self._rung_width(direction, rung)
        return self._composed_within_budget(direction, width, tilt)

    def _stop(self, terms: np.ndarray, refinable: np.ndarray, steps, relevant, rung) -> Any:
        """Why the walk stops at ``rung`` (:func:`~accountant.buckets.refinement.stop_reason`,
        then the ladder's end), or None."""
        reason = stop_reason(terms, refinable, self.accuracy, steps)
        if reason is None:
            reason = self._no_finer_rung(relevant, rung)
        if reason is None and rung == MAX_RUNGS:
            reason = f"refinement stopped after {MAX_RUNGS} narrower widths"
        return reason

    def _query(self, epsilon: Any, direction: Direction, kind: Kind) -> Bounds:
        with query_progress(f"PrivacyBuckets {kind} delta"), self._kernels():
            return delta_walk(self, epsilon, direction, kind)

    def _kernels(self) -> Any:
        """The kernel choice of this accountant's queries: numba whatever the size for
        :data:`~accountant.buckets.vector_kernels.COMPILED_COMPONENTS` distinct releases or
        more (:func:`~accountant.buckets.vector_kernels.compiled_kernels`)."""
        many = len(self.components) >= vector_kernels.COMPILED_COMPONENTS
        return vector_kernels.compiled_kernels(many)

    def epsilon(
        self, delta: float | np.ndarray, direction: Direction = "max", kind: Kind = "ADP"
    ) -> EpsilonBounds:
        """Certified bounds on the smallest eps with delta(eps) <= ``delta`` (``kind``
        ``"ADP"`` or ``"PDP"``); for an array of deltas, arrays of bounds from the same
        compositions (:mod:`~accountant.buckets.many_deltas`). Raises
        :class:`~accountant.errors.InfeasibleTargetError` when even the largest eps the
        buckets cover cannot reach ``delta``; warns
        (:class:`~accountant.errors.CertificationWarning`, with the achieved figure) when
        ``(upper - lower) / upper`` exceeds ``accuracy``.

        The width is refined on the ladder of :mod:`~accountant.buckets.refinement`, as
        for delta queries: the eps brackets of every rung visited are intersected, and a
        rung is added while the delta bracket at an end of the eps bracket is limited by
        bucketing."""
        with query_progress(f"PrivacyBuckets {kind} eps"), self._kernels():
            if np.ndim(delta) == 0:
                return epsilon_walk(self._for_target(delta), delta, direction, kind)
            return epsilon_for_many(
                delta,
                lambda d: epsilon_walk(self._for_target(d), d, direction, kind),
                self.accuracy,
            )

    def _for_target(self, delta: Any) -> PrivacyBuckets:
        """The accountant an eps query at ``delta`` runs on: with the automatic tail mass,
        this one cutting the largest power of ten whose cut mass (at most ``2 (N + 2)
        tail_mass`` in all, counted in full in every upper bound) stays below
        :data:`AUTO_TAIL_SHARE` of ``accuracy * delta``; with a given tail mass, this one,
        or for a target so small that its cuts would take more than :data:`TAIL_SHARE` of
        it, the same cutting less. Any tail mass is sound (the cut mass is counted); the
        windows grow only like ``sqrt(ln(1 / tail_mass))``. Kept in the memo."""
        try:
            target = float(delta)
        except (TypeError, ValueError):
            return self  # refused by name by the query itself
        if not (target > 0.0 and math.isfinite(target)):
            return self
        arrays = 2.0 * (self.releases + 2)
        if self.tail_mass is None:
            share = AUTO_TAIL_SHARE * self.accuracy * target / arrays
            wanted = min(10.0 ** math.floor(math.log10(max(share, SMALLEST_TAIL))), LARGEST_TAIL)
        elif arrays * self.tail_mass <= TAIL_SHARE * target:
            return self
        else:
            wanted = max(TAIL_SHARE * target / arrays, SMALLEST_TAIL)
        other = self._memo.tails.get(wanted)
        if other is None:
            other = attrs.evolve(self, tail_mass=wanted)
            self._memo.tails[wanted] = other
        return other
