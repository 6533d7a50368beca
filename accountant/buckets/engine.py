"""``PrivacyBuckets``: certified lower and upper delta(eps) under composition.

The user states an accuracy (relative width of the certified bracket); the engine
chooses the bucket width and placement itself (SPEC section 2), composes lazily on the
first query, refines the width on a fixed ladder while a bracket is too wide because of
bucketing, intersects the certified brackets of every width it tried
(:mod:`accountant.buckets.refinement`), and warns with the achieved figure and the reason
when it cannot reach the accuracy.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import numpy as np

from accountant._checks import (
    check_direction,
    check_epsilons,
    check_finite_real,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)
from accountant._composition import add_releases, history
from accountant._directed import MassLogs
from accountant.buckets.analytic import analytic_release
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.convolution import compose_pair, compose_power
from accountant.buckets.epsilon import epsilon_interval
from accountant.buckets.fft_power import compose_rounded
from accountant.buckets.many_deltas import epsilon_for_many
from accountant.buckets.progress import query_progress
from accountant.buckets.refinement import (
    BUCKETING,
    MAX_RUNGS,
    SEARCH_TOLERANCE,
    WIDTH_RATIO,
    Intersection,
    bracket_terms,
    bucketing_gaps,
    eps_refinable,
    intervals,
    largest_other,
    monotone_envelope,
    relative_bracket,
    stop_reason,
    worth_refining,
)
from accountant.buckets.results import Bounds, EpsilonBounds
from accountant.buckets.sources import PLDRelease, ReleaseSource
from accountant.buckets.widths import StartingWidth, initial_width, refined_width
from accountant.errors import CertificationWarning, InfeasibleTargetError, InvalidInputError
from accountant.pairs import WorstCasePair
from accountant.pld import PrivacyLossDistribution, privacy_loss_distribution

__all__ = ["PrivacyBuckets"]

#: From this many releases on, losses that the buckets cannot follow on a lattice are
#: rounded onto one, keeping their means (``_rounds``): the bracket then carries the
#: second-order corrections of :mod:`~accountant.buckets.second_order` (order ``V = n w^2``)
#: instead of loss intervals that widen like ``n w``. ``None`` turns rounding off.
ROUNDING_RELEASES: int | None = 64

_DIRECTIONS = ("A/B", "B/A")


def _as_release(mechanism: Any) -> ReleaseSource:
    if isinstance(mechanism, WorstCasePair):
        return PLDRelease(privacy_loss_distribution(mechanism, "A/B"), mechanism.description)
    if isinstance(mechanism, PrivacyLossDistribution):
        return PLDRelease(mechanism, "privacy-loss distribution")
    release = analytic_release(mechanism)
    if release is not None:
        return release
    if isinstance(mechanism, list | tuple):
        raise InvalidInputError(
            "PrivacyBuckets composes one pair per release; a sequence of pairs (the worst "
            "case over shifts) has no single composed PLD. Compose each pair separately, "
            "or use ExtendedMA, which bounds the worst case over the sequence"
        )
    raise InvalidInputError(
        "mechanism must be a WorstCasePair, a PrivacyLossDistribution or an analytic "
        f"mechanism from accountant.mechanisms, got {type(mechanism).__name__}"
    )


@attrs.frozen(eq=False, repr=False)
class _Component:
    mechanism: Any
    release: ReleaseSource
    times: int

    @property
    def description(self) -> str:
        """What was composed (the release's description)."""
        return self.release.description

    def __repr__(self) -> str:
        return f"Component({self.times} x {self.description})"


def _check_accuracy(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    check_positive_real(attribute.name, value)
    if value >= 1.0:
        raise InvalidInputError(f"{attribute.name} must lie in (0, 1), got {value!r}")


def _check_tail_mass(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    mass = check_finite_real(attribute.name, value)
    if not 0.0 <= mass < 1.0:
        raise InvalidInputError(f"{attribute.name} must lie in [0, 1), got {mass!r}")


def _check_budget(instance: Any, attribute: attrs.Attribute, value: int) -> None:
    check_positive_int(attribute.name, value)
    if value < 1024:
        raise InvalidInputError(f"{attribute.name} must be at least 1024, got {value!r}")


@attrs.frozen(eq=False)
class PrivacyBuckets:
    """Certified PrivacyBuckets accountant. Immutable: :meth:`compose` returns a new one.

    ``accuracy``: the requested relative width ``(upper - lower) / upper`` of every
    certified delta bracket. ``max_buckets``: memory budget per array.
    ``tail_mass``: A-mass that may be cut from each tail of each array (counted in full
    in every upper bound).
    """

    accuracy: float = attrs.field(default=1e-4, validator=_check_accuracy)
    max_buckets: int = attrs.field(default=1 << 23, validator=_check_budget)
    tail_mass: float = attrs.field(default=1e-24, validator=_check_tail_mass)
    components: tuple[_Component, ...] = attrs.field(default=(), repr=False)
    _cache: dict = attrs.field(factory=dict, init=False, repr=False)

    def compose(self, mechanism: Any, times: int = 1) -> PrivacyBuckets:
        """Add ``times`` releases of ``mechanism`` (any positive integer; heterogeneous
        composition by composing again). Composing the same object adds to its count."""
        components = add_releases(
            self.components, mechanism, times, lambda m, n: _Component(m, _as_release(m), n)
        )
        return attrs.evolve(self, components=components)

    @property
    def releases(self) -> int:
        """Total number of composed releases."""
        return sum(c.times for c in self.components)

    @property
    def history(self) -> str:
        """What was composed, readably: ``"128 x truncated Gaussian(sigma=100, ...)"``."""
        return history(self.components)

    # -- choosing the width -------------------------------------------------------------

    def _start(self, direction: str) -> StartingWidth:
        """Rung 0 of ``direction`` (:func:`~accountant.buckets.widths.initial_width`)."""
        key = ("start", direction)
        if key not in self._cache:
            stats = [
                (c.release.statistics(direction, self.tail_mass), c.times) for c in self.components
            ]
            start = initial_width(stats, self.max_buckets)
            if self._rounds(start):
                start = initial_width(stats, self.max_buckets, rounded=True)
            self._cache[key] = start
        return self._cache[key]

    def _rounds(self, start: StartingWidth) -> bool:
        """Whether losses are rounded onto a lattice (mean kept, Hoeffding slack in the
        bounds: an eps slack growing like ``w sqrt(n)``) instead of bucketed with intervals
        (``n w``): when the buckets cannot follow a loss lattice exactly (there is none, or
        it is finer than the budget allows) and there are many releases, and every release
        can be rounded (pairs and PLDs; analytic mechanisms are bucketed)."""
        return (
            ROUNDING_RELEASES is not None
            and (start.spacing is None or start.width > start.spacing)
            and self.releases >= ROUNDING_RELEASES
            and all(hasattr(c.release, "lattice") for c in self.components)
        )

    def _anchor(self, component: _Component, direction: str) -> float:
        return component.release.statistics(direction, self.tail_mass).anchor

    # -- composing ----------------------------------------------------------------------

    def _composed(self, direction: str, width: float) -> BucketedPLD:
        key = (direction, width)
        if key not in self._cache:
            if all(c.release.same_directions() for c in self.components) and (
                ("A/B", width) in self._cache or ("B/A", width) in self._cache
            ):
                other = "B/A" if direction == "A/B" else "A/B"
                self._cache[key] = self._cache[(other, width)]
            else:
                self._cache[key] = self._compose_at(direction, width)
        return self._cache[key]

    def _compose_at(self, direction: str, width: float) -> BucketedPLD:
        if not self.components:
            return BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, MassLogs(), releases=0)
        rounds = self._rounds(self._start(direction))

        def single(index: int) -> BucketedPLD:
            component = self.components[index]
            place = component.release.lattice if rounds else component.release.bucket
            anchor = self._anchor(component, direction)
            return place(direction, width, anchor, self.tail_mass, self.max_buckets)

        if rounds:  # one FFT per release over the composition's window, if it fits
            counts = [c.times for c in self.components]
            composed = compose_rounded(single, counts, self.tail_mass, self.max_buckets)
            if composed is not None:
                return composed
        result: BucketedPLD | None = None
        half = self.max_buckets // 2  # coarsen (not fail) when an array outgrows this
        for index, component in enumerate(self.components):
            release = single(index)
            self._check_size(release)
            powered = compose_power(release, component.times, self.tail_mass, max_size=half)
            self._check_size(powered)
            result = (
                powered
                if result is None
                else compose_pair(result, powered, self.tail_mass, max_size=half)
            )
            self._check_size(result)
        return result

    def _check_size(self, pld: BucketedPLD) -> None:
        if pld.size > self.max_buckets:
            raise BucketBudgetError(pld.size)

    def _composed_within_budget(self, direction: str, width: float) -> BucketedPLD:
        for _ in range(40):
            try:
                return self._composed(direction, width)
            except BucketBudgetError:
                width *= 2.0
        raise InvalidInputError(  # pragma: no cover - defensive
            f"could not fit the composition into max_buckets={self.max_buckets}"
        )

    # -- queries ------------------------------------------------------------------------

    def delta(self, epsilon: float | np.ndarray, direction: str = "max") -> Bounds:
        """Certified ADP ``Bounds(lower, upper)`` on delta(eps); vectorised over eps;
        ``direction="max"`` bounds ``max(delta_{A/B}, delta_{B/A})``."""
        return self._query(epsilon, direction, "ADP")

    def delta_pdp(self, epsilon: float | np.ndarray, direction: str = "max") -> Bounds:
        """Certified PDP bounds on ``P_A[L > eps]`` (distinguishing events included)."""
        return self._query(epsilon, direction, "PDP")

    def _rung_width(self, direction: str, rung: int) -> float:
        """Requested width of ``rung`` of the refinement ladder (:mod:`.refinement`)."""
        if not self.components:
            return 1.0
        start = self._start(direction)
        if rung == 0:
            return start.width
        return refined_width(start, start.width * WIDTH_RATIO**rung, self.max_buckets)

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

    def _rung(self, direction: str, rung: int) -> BucketedPLD:
        return self._composed_within_budget(direction, self._rung_width(direction, rung))

    def _stop(self, terms: np.ndarray, refinable: np.ndarray, steps, relevant, rung) -> Any:
        """Why the walk stops at ``rung`` (:func:`~accountant.buckets.refinement.stop_reason`,
        then the ladder's end), or None."""
        reason = stop_reason(terms, refinable, self.accuracy, steps)
        if reason is None:
            reason = self._no_finer_rung(relevant, rung)
        if reason is None and rung == MAX_RUNGS:
            reason = f"refinement stopped after {MAX_RUNGS} narrower widths"
        return reason

    def _query(self, epsilon: Any, direction: str, kind: str) -> Bounds:
        with query_progress(f"PrivacyBuckets {kind} delta"):
            return self._query_quietly(epsilon, direction, kind)

    def _query_quietly(self, epsilon: Any, direction: str, kind: str) -> Bounds:
        """The work of :meth:`delta` and :meth:`delta_pdp`, inside the progress display."""
        direction = check_direction("direction", direction)
        eps = check_epsilons("epsilon", epsilon)
        flat = eps.reshape(-1)
        directions = _directions(direction)
        running = Intersection(directions, flat.size)
        steps: list[tuple[np.ndarray, np.ndarray]] = []
        brackets: dict = {}
        relevant = list(directions)
        for rung in range(MAX_RUNGS + 1):
            # Directions that can no longer change the result, or whose width did not
            # change, are not recomputed (a choice that does not depend on the accuracy).
            for d in (d for d in relevant if not rung or self._finer(d, rung)):
                pld = self._rung(d, rung)
                low, high = intervals(pld, flat, kind)
                running.add(d, low, high)
                brackets[d] = (pld, low, high)
            lower, upper = monotone_envelope(flat, *running.combined())
            terms = bracket_terms(lower, upper)
            refinable = self._refinable(flat, kind, terms, brackets, running.limiting())
            relevant = running.relevant()
            reason = self._stop(terms, refinable, steps, relevant, rung)
            if reason is not None:
                break
            steps.append((terms, refinable))
        achieved = relative_bracket(lower, upper)
        if achieved > self.accuracy:
            if not refinable[int(np.argmax(terms))]:
                reason = BUCKETING  # whatever stopped the walk, the widest one is not bucketing
            warnings.warn(
                f"PrivacyBuckets reached a relative bracket of {achieved:.3g}, not the requested "
                f"accuracy {self.accuracy:g}: {reason} (bounds still certified)",
                CertificationWarning,
                stacklevel=4,
            )
        shape = eps.shape
        return Bounds(
            lower=_reshape(lower, shape),
            upper=_reshape(upper, shape),
            epsilon=_reshape(flat, shape),
            kind=kind,
            direction=direction,
            releases=self.releases,
            accuracy=self.accuracy,
            achieved_accuracy=achieved,
            bucket_width=max(b[0].width for b in brackets.values()),
        )

    def _refinable(
        self, eps: np.ndarray, kind: str, terms: np.ndarray, brackets: dict, limiting: list[str]
    ) -> np.ndarray:
        """Which entries are wider than the accuracy and worth refining in the direction
        that sets their upper bound (:func:`~accountant.buckets.refinement.worth_refining`
        of that direction's bracket at this rung)."""
        refinable = terms > self.accuracy
        for d, (pld, low, high) in brackets.items():
            mine = np.array([x == d for x in limiting], dtype=bool)
            chosen = np.flatnonzero(refinable & mine)
            if chosen.size:
                gaps = bucketing_gaps(pld, eps[chosen], kind, low[chosen], high[chosen])
                width = high[chosen] - low[chosen]
                refinable[chosen] = worth_refining(gaps, width)
        return refinable

    def epsilon(
        self, delta: float | np.ndarray, direction: str = "max", kind: str = "ADP"
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
        with query_progress(f"PrivacyBuckets {kind} eps"):
            if np.ndim(delta) == 0:
                return self._epsilon_quietly(delta, direction, kind)
            return epsilon_for_many(
                delta, lambda d: self._epsilon_quietly(d, direction, kind), self.accuracy
            )

    def _epsilon_quietly(self, delta: float, direction: str, kind: str) -> EpsilonBounds:
        """The work of :meth:`epsilon`, inside its progress display."""
        target = check_target_delta("delta", delta)
        direction = check_direction("direction", direction)
        if kind not in ("ADP", "PDP"):
            raise InvalidInputError(f"kind must be 'ADP' or 'PDP', got {kind!r}")
        directions = _directions(direction)
        low = dict.fromkeys(directions, 0.0)
        high = dict.fromkeys(directions, math.inf)
        steps: list[tuple[np.ndarray, np.ndarray]] = []
        plds: dict = {}
        relevant = list(directions)
        for rung in range(MAX_RUNGS + 1):
            try:
                for d in (d for d in relevant if not rung or self._finer(d, rung)):
                    plds[d] = self._rung(d, rung)
                    within = (low[d], high[d]) if rung else None
                    found = epsilon_interval(plds[d], target, kind, within, SEARCH_TOLERANCE)
                    low[d], high[d] = max(low[d], found[0]), min(high[d], found[1])
            except InfeasibleTargetError:
                if rung == 0:
                    raise
                reason = "a finer bucket width could not certify the target"
                break
            lower, upper = max(low.values()), max(high.values())
            term = np.array([(upper - lower) / upper if upper > 0.0 else 0.0])
            # a direction matters while its eps may exceed every other direction's lower end
            relevant = [d for d in directions if high[d] > largest_other(low, d)]
            refinable = term > self.accuracy
            if refinable[0]:
                ends = np.array([upper, lower])
                refinable[0] = any(eps_refinable(plds[d], ends, kind) for d in relevant)
            reason = self._stop(term, refinable, steps, relevant, rung)
            if reason is not None:
                break
            steps.append((term, refinable))
        achieved = (upper - lower) / upper if upper > 0.0 else 0.0
        if achieved > self.accuracy:
            warnings.warn(
                f"PrivacyBuckets reached a relative eps bracket of {achieved:.3g} "
                f"([{lower:.6g}, {upper:.6g}]), not the requested accuracy {self.accuracy:g}: "
                f"{reason} (bounds still certified)",
                CertificationWarning,
                stacklevel=3,
            )
        return EpsilonBounds(
            lower=lower,
            upper=upper,
            delta=target,
            kind=kind,
            direction=direction,
            releases=self.releases,
            accuracy=self.accuracy,
            bucket_width=max(p.width for p in plds.values()),
        )


def _directions(direction: str) -> tuple[str, ...]:
    return _DIRECTIONS if direction == "max" else (direction,)


def _reshape(values: np.ndarray, shape: tuple) -> float | np.ndarray:
    return float(values[0]) if shape == () else values.reshape(shape)
