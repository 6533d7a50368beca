"""``PrivacyBuckets``: certified lower and upper delta(eps) under composition.

The user states an accuracy (relative width of the certified bracket); the engine
chooses the bucket width and placement itself (SPEC section 2), composes lazily on the
first query, refines the width while the bracket is too wide because of bucketing,
and warns with the achieved figure when it cannot reach the accuracy.
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
from accountant._composition import add_releases
from accountant.buckets.analytic import analytic_release
from accountant.buckets.bounds import adp_interval, pdp_interval
from accountant.buckets.bucketed import BucketBudgetError, BucketedPLD
from accountant.buckets.convolution import compose_pair, compose_power
from accountant.buckets.epsilon import epsilon_interval
from accountant.buckets.results import Bounds, EpsilonBounds
from accountant.buckets.sources import PLDRelease, ReleaseSource, estimated_span
from accountant.errors import CertificationWarning, InvalidInputError
from accountant.pairs import WorstCasePair
from accountant.pld import PrivacyLossDistribution, privacy_loss_distribution

__all__ = ["PrivacyBuckets"]

_DIRECTIONS = ("A/B", "B/A")
#: How often the width is refined for one query before the engine settles.
MAX_REFINEMENTS = 4
# A loss lattice finer than the generic width by more than this factor is ignored.
LATTICE_FINENESS = 64.0
#: Bucket count the first composition aims at before any refinement.
INITIAL_BUCKETS = 1 << 18


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


@attrs.frozen(eq=False)
class _Component:
    mechanism: Any
    release: ReleaseSource
    times: int


def _check_accuracy(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    check_positive_real(attribute.name, value)
    if value >= 1.0:
        raise InvalidInputError(f"{attribute.name} must lie in (0, 1), got {value!r}")


def _check_tail_mass(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    # Reliability fix: tail_mass was not validated at all (NaN, inf, negative, strings
    # and None were accepted and failed, or poisoned the bounds, at the first query).
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

    # -- choosing the width -------------------------------------------------------------

    def _initial_width(self, direction: str) -> float:
        if ("width", direction) in self._cache:
            return self._cache[("width", direction)]
        if not self.components:
            self._cache[("span", direction)] = 1.0
            return 1.0
        stats = [
            (c.release.statistics(direction, self.tail_mass), c.times) for c in self.components
        ]
        releases = self.releases
        deviation = math.sqrt(sum(n * s.variance for s, n in stats))
        lattices = [s.lattice for s, _ in stats]
        span = max(estimated_span(stats), 1e-300)
        self._cache[("span", direction)] = span
        spacing = _common_lattice(lattices)
        generic = 4.0 * math.sqrt(self.accuracy) * deviation / releases
        if spacing is not None and spacing > 0.0 and spacing * LATTICE_FINENESS >= generic:
            # Bucket edges on the lattice: the spacing itself makes the composition exact,
            # a multiple of it is used only when the memory budget demands.
            self._cache[("lattice", direction)] = spacing
            width = spacing * max(1, math.ceil(span / spacing / self.max_buckets))
        elif spacing == 0.0:
            width = max(span, 1.0)
        else:
            # No lattice, or one so fine (e.g. a DP-SGD mixture's accidental common
            # divisor) that following it would fill the memory budget for no gain.
            # Start coarse (a few hundred thousand buckets at most); the query refines the
            # width only where bucketing, not round-off or lost mass, limits the bracket.
            width = max(generic, span / INITIAL_BUCKETS, 2.0 * span / self.max_buckets, 1e-12)
        return width

    def _refined_width(self, direction: str, wanted: float) -> float:
        """``wanted`` limited by the memory budget, and snapped to a lattice multiple."""
        width = max(wanted, self._finest_width(direction))
        spacing = self._cache.get(("lattice", direction))
        if spacing:
            width = spacing * max(
                1, math.ceil(self._finest_width(direction) / spacing), math.floor(width / spacing)
            )
        return width

    def _finest_width(self, direction: str) -> float:
        """The smallest width whose composition fits in ``max_buckets / 2``."""
        self._initial_width(direction)
        return 2.0 * self._cache[("span", direction)] / self.max_buckets

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
        result: BucketedPLD | None = None
        for component in self.components:
            single = component.release.bucket(
                direction,
                width,
                self._anchor(component, direction),
                self.tail_mass,
                self.max_buckets,
            )
            self._check_size(single)
            # Coarsen (not fail) when a composed array outgrows half the budget.
            half = self.max_buckets // 2
            powered = compose_power(single, component.times, self.tail_mass, max_size=half)
            self._check_size(powered)
            result = (
                powered
                if result is None
                else compose_pair(result, powered, self.tail_mass, max_size=half)
            )
            self._check_size(result)
        if result is None:
            return BucketedPLD(width, 0, np.zeros(1), np.zeros(1), 0.0, 0.0, 0.0, releases=0)
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

    def _intervals(self, eps: np.ndarray, direction: str, kind: str, widths: dict) -> tuple:
        lower = np.zeros(eps.size)
        upper = np.zeros(eps.size)
        gap = np.zeros(eps.size)
        for d in _directions(direction):
            pld = self._composed_within_budget(d, widths[d])
            widths[d] = pld.width
            edges = pld.edges()
            for k, e in enumerate(eps):
                if kind == "ADP":
                    low, high, bucketing = adp_interval(pld, float(e), edges)
                else:
                    low, high = pdp_interval(pld, float(e), edges)
                    bucketing = high - low
                if high >= upper[k]:
                    gap[k] = bucketing
                lower[k] = max(lower[k], low)
                upper[k] = max(upper[k], high)
        lower, upper = _monotone_envelope(eps, lower, upper)
        return lower, upper, gap

    def _query(self, epsilon: Any, direction: str, kind: str) -> Bounds:
        direction = check_direction("direction", direction)
        eps = check_epsilons("epsilon", epsilon)
        flat = eps.reshape(-1)
        widths = (
            {d: self._initial_width(d) for d in _directions(direction)}
            if self.components
            else {d: 1.0 for d in _directions(direction)}
        )
        lower, upper, gap = self._intervals(flat, direction, kind, widths)
        for _ in range(MAX_REFINEMENTS):
            achieved = _relative_bracket(lower, upper)
            if achieved <= self.accuracy or kind == "PDP":
                break
            # Refine for the widest bracket that bucketing limits. (Taking the widest of all
            # and stopping when bucketing does not limit it let one eps whose bracket is the
            # tail mass, e.g. a delta below tail_mass, block refinement at every other eps
            # of a vector query: 9e-3 at eps = 0 next to eps = 50, 6e-13 alone.)
            terms = _bracket_terms(lower, upper)
            refinable = (terms > self.accuracy) & (gap > 0.0) & (gap >= 0.5 * (upper - lower))
            if not refinable.any():
                break  # bucketing is not what limits the brackets
            worst = int(np.argmax(np.where(refinable, terms, -1.0)))
            wanted = 0.8 * math.sqrt(self.accuracy * upper[worst] / gap[worst])
            # At most 0.6: a real step, so that only the memory budget trips the test below.
            factor = min(0.6, max(0.125, wanted))
            finer = {d: self._refined_width(d, w * factor) for d, w in widths.items()}
            if all(finer[d] > 0.7 * widths[d] for d in widths):
                break  # the memory budget allows no real refinement
            widths = finer
            new_lower, new_upper, gap = self._intervals(flat, direction, kind, widths)
            # Both results are certified, so their intersection is too: never worse.
            lower, upper = np.maximum(lower, new_lower), np.minimum(upper, new_upper)
            self._cache.update({("width", d): w for d, w in widths.items()})
        achieved = _relative_bracket(lower, upper)
        if achieved > self.accuracy:
            warnings.warn(
                f"PrivacyBuckets reached a relative bracket of {achieved:.3g}, not the requested "
                f"accuracy {self.accuracy:g} (bounds still certified)",
                CertificationWarning,
                stacklevel=3,
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
            bucket_width=max(widths.values()),
        )

    def epsilon(self, delta: float, direction: str = "max", kind: str = "ADP") -> EpsilonBounds:
        """Certified bounds on the smallest eps with delta(eps) <= ``delta`` (``kind``
        ``"ADP"`` or ``"PDP"``). Raises :class:`~accountant.errors.InfeasibleTargetError`
        when even the largest eps the buckets cover cannot reach ``delta``; warns
        (:class:`~accountant.errors.CertificationWarning`, with the achieved figure) when
        ``(upper - lower) / upper`` exceeds ``accuracy``."""
        target = check_target_delta("delta", delta)
        direction = check_direction("direction", direction)
        if kind not in ("ADP", "PDP"):
            raise InvalidInputError(f"kind must be 'ADP' or 'PDP', got {kind!r}")
        for attempt in range(2):
            lower, upper = 0.0, 0.0
            for d in _directions(direction):
                pld = self._composed_within_budget(d, self._initial_width(d))
                low, high = epsilon_interval(pld, target, kind)
                lower, upper = max(lower, low), max(upper, high)
            if attempt or upper - lower <= self.accuracy * upper or kind == "PDP":
                break
            with warnings.catch_warnings():  # refine the widths around the answer
                warnings.simplefilter("ignore", CertificationWarning)
                self._query(upper, direction, kind)
        # Like delta(), say so when the bracket is wider than asked (it used to be silent).
        achieved = (upper - lower) / upper if upper > 0.0 else 0.0
        if achieved > self.accuracy:
            warnings.warn(
                f"PrivacyBuckets reached a relative eps bracket of {achieved:.3g} "
                f"([{lower:.6g}, {upper:.6g}]), not the requested accuracy {self.accuracy:g} "
                "(bounds still certified)",
                CertificationWarning,
                stacklevel=2,
            )
        return EpsilonBounds(
            lower=lower,
            upper=upper,
            delta=target,
            kind=kind,
            direction=direction,
            releases=self.releases,
            accuracy=self.accuracy,
            bucket_width=max(self._initial_width(d) for d in _directions(direction)),
        )


def _monotone_envelope(
    eps: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ADP and PDP delta are non-increasing in eps, so a lower bound at a larger eps holds at
    every smaller one and an upper bound at a smaller eps at every larger one: tighten both
    to their monotone envelope over the eps asked for. This also makes the certified lower
    bound non-increasing (the error terms alone, which shrink as fewer buckets count, can
    make the raw lower bound rise by rounding-sized amounts)."""
    order = np.argsort(eps, kind="stable")
    tight_lower = np.empty_like(lower)
    tight_upper = np.empty_like(upper)
    tight_lower[order] = np.maximum.accumulate(lower[order][::-1])[::-1]
    tight_upper[order] = np.minimum.accumulate(upper[order])
    return tight_lower, tight_upper


def _directions(direction: str) -> tuple[str, ...]:
    return _DIRECTIONS if direction == "max" else (direction,)


def _common_lattice(lattices: list[float | None]) -> float | None:
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


def _bracket_terms(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(upper > 0.0, (upper - lower) / np.where(upper > 0, upper, 1.0), 0.0)


def _relative_bracket(lower: np.ndarray, upper: np.ndarray) -> float:
    return float(np.max(_bracket_terms(lower, upper))) if lower.size else 0.0


def _reshape(values: np.ndarray, shape: tuple) -> float | np.ndarray:
    return float(values[0]) if shape == () else values.reshape(shape)
