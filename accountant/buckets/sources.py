"""Single releases as the engine sees them: loss statistics (to choose bucket width and
placement) and the bucketing itself, per direction.

:class:`PLDRelease` covers pairs and user PLDs; analytic mechanisms provide the same
interface from CDFs (:mod:`accountant.buckets.analytic_release`).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from accountant.buckets.bucketed import BucketedPLD, bucket_pld
from accountant.buckets.release_cache import shared_source
from accountant.buckets.rounding import round_to_lattice
from accountant.errors import InvalidInputError
from accountant.pairs.pld import PrivacyLossDistribution, privacy_loss_distribution
from accountant.pairs.worst_case import WorstCasePair
from accountant.protocol import AnalyticMechanism, LossStatistics, ReleaseSource

__all__ = ["LossStatistics", "PLDRelease", "ReleaseSource", "lattice_spacing", "release_source"]

#: Losses count as a lattice when every ``(L - L_0) / g`` is this close to an integer.
LATTICE_TOLERANCE = 1e-7


def lattice_spacing(losses: np.ndarray) -> float | None:
    """The spacing ``g`` of a lattice ``L_0 + k g`` holding all ``losses`` (sorted): their
    smallest gap, refined over the whole range; ``0.0`` for a single value, ``None`` when
    the losses are not on the lattice of their smallest gap (even if they lie on a finer
    one: no lattice is then followed, which is never wrong, only slower)."""
    unique = np.unique(losses)
    if unique.size <= 1:
        return 0.0
    gaps = np.diff(unique)
    scale = max(1.0, float(np.max(np.abs(unique))))
    gaps = gaps[gaps > 1e-12 * scale]
    if gaps.size == 0:
        return 0.0
    spacing = float(np.min(gaps))
    # refine the spacing over the whole range (the smallest gap carries rounding error)
    spacing = float(unique[-1] - unique[0]) / round(float(unique[-1] - unique[0]) / spacing)
    steps = (unique - unique[0]) / spacing
    if np.max(np.abs(steps - np.round(steps))) > LATTICE_TOLERANCE * max(1.0, float(steps[-1])):
        return None
    return spacing


def pld_statistics(pld: PrivacyLossDistribution, tail_mass: float) -> LossStatistics:
    """:class:`LossStatistics` of a PLD (masses of the finite part, normalised)."""
    if pld.losses.size == 0:
        return LossStatistics(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    total = float(np.sum(pld.mass_a))
    weights = pld.mass_a / total
    mean = float(np.dot(weights, pld.losses))
    variance = float(np.dot(weights, (pld.losses - mean) ** 2))
    head = np.cumsum(pld.mass_a)
    low_index = min(int(np.searchsorted(head, tail_mass, side="right")), pld.losses.size - 1)
    tail = np.cumsum(pld.mass_a[::-1])
    high_index = (
        pld.losses.size
        - 1
        - min(int(np.searchsorted(tail, tail_mass, side="right")), pld.losses.size - 1)
    )
    low = float(pld.losses[low_index])
    high = float(max(pld.losses[high_index], low))
    return LossStatistics(
        mean=mean,
        variance=variance,
        low=low,
        high=high,
        anchor=float(pld.losses[np.argmax(pld.mass_a)]),
        lattice=lattice_spacing(pld.losses),
    )


class PLDRelease:
    """A release given by its privacy-loss distribution (both directions)."""

    def __init__(
        self,
        a_over_b: PrivacyLossDistribution,
        description: str = "pld",
        b_over_a: PrivacyLossDistribution | None = None,
    ):
        """``b_over_a``: the other direction when it is known from the pair (its mass
        bounds are then those of the pair's exact sums); default ``a_over_b.reversed()``.

        When the two directions have the same losses and masses but other certified mass
        bounds (a symmetric PLD given by arrays, whose reversal bounds its masses anew),
        both take the hull of the two bounds: sound for each, and then the directions are
        the same to the last bit, so one composition serves both."""
        b_over_a = a_over_b.reversed() if b_over_a is None else b_over_a
        if a_over_b.mass_logs != b_over_a.mass_logs and _same_masses(a_over_b, b_over_a):
            # both set by PrivacyLossDistribution.__attrs_post_init__
            assert a_over_b.mass_logs is not None and b_over_a.mass_logs is not None
            logs = a_over_b.mass_logs.hull(b_over_a.mass_logs)
            a_over_b = attrs.evolve(a_over_b, mass_logs=logs)
            b_over_a = attrs.evolve(b_over_a, mass_logs=logs)
        self._plds = {"A/B": a_over_b, "B/A": b_over_a}
        self._same = a_over_b.mass_logs == b_over_a.mass_logs and _same_masses(a_over_b, b_over_a)
        self.description = description
        self._moments: dict = {}  # tail moments of rounded releases, kept between passes

    def statistics(self, direction: str, tail_mass: float) -> LossStatistics:
        return pld_statistics(self._plds[direction], tail_mass)

    def bucket(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        return bucket_pld(self._plds[direction], width, anchor, tail_mass, max_buckets)

    def lattice(
        self,
        direction: str,
        width: float,
        anchor: float,
        tail_mass: float,
        max_buckets: int = 1 << 62,
    ) -> BucketedPLD:
        """The losses split onto the lattice ``anchor + J width`` (a dominating pair, with its
        merged counterpart)
        (:func:`~accountant.buckets.rounding.round_to_lattice`)."""
        key = (direction, width, anchor, tail_mass)
        rounded = round_to_lattice(
            self._plds[direction], width, anchor, tail_mass, max_buckets, self._moments.get(key)
        )
        self._moments[key] = rounded.tail_moments
        return rounded

    def same_directions(self) -> bool:
        """Whether the two directions are the same PLD to the last bit, the certified
        logs of their masses included."""
        return self._same


def _same_masses(first: PrivacyLossDistribution, second: PrivacyLossDistribution) -> bool:
    """The same losses, masses and distinguishing mass, to the last bit."""
    return (
        first.distinguishing_mass == second.distinguishing_mass
        and np.array_equal(first.losses, second.losses)
        and np.array_equal(first.mass_a, second.mass_a)
        and np.array_equal(first.mass_b, second.mass_b)
    )


def estimated_span(stats: list[tuple[LossStatistics, int]]) -> float:
    """A generous estimate of the loss range the composition occupies after tail cuts."""
    deviation = math.sqrt(sum(n * s.variance for s, n in stats))
    total_range = sum(n * (s.high - s.low) for s, n in stats)
    widest = max((s.high - s.low for s, _ in stats), default=0.0)
    return min(total_range, 24.0 * deviation + widest) + widest


def release_source(mechanism: Any) -> ReleaseSource:
    """What PrivacyBuckets composes for ``mechanism``: a pair's or a PLD's
    :class:`PLDRelease`, an analytic mechanism's ``bucket_release()`` (one per equal
    mechanism, :func:`~accountant.buckets.release_cache.shared_source`)."""
    if isinstance(mechanism, WorstCasePair):
        return PLDRelease(
            privacy_loss_distribution(mechanism, "A/B"),
            mechanism.description,
            privacy_loss_distribution(mechanism, "B/A"),
        )
    if isinstance(mechanism, PrivacyLossDistribution):
        return PLDRelease(mechanism, "privacy-loss distribution")
    if isinstance(mechanism, AnalyticMechanism):
        try:
            hash(mechanism)
        except TypeError:  # not hashable by value: a source of its own
            return mechanism.bucket_release()
        return shared_source(mechanism, lambda m: m.bucket_release())
    if isinstance(mechanism, list | tuple):
        raise InvalidInputError(
            f"mechanism must be one pair, got a {type(mechanism).__name__} of "
            f"{len(mechanism)}: PrivacyBuckets composes one pair per release; a sequence "
            "of pairs (the worst case over shifts) has no single composed PLD. Compose each "
            "pair separately, "
            "or use ExtendedMA, which bounds the worst case over the sequence"
        )
    raise InvalidInputError(
        "mechanism must be a WorstCasePair, a PrivacyLossDistribution or an analytic "
        "mechanism (accountant.protocol.AnalyticMechanism, e.g. from accountant.mechanisms), "
        f"got {type(mechanism).__name__}"
    )
