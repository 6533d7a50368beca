"""What accountants answer: certified intervals or certified upper bounds, never bare
numbers (:class:`accountant.protocol.Accountant`)."""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.validation import Direction, Kind

__all__ = [
    "Bounds",
    "DeltaUpperBound",
    "EpsilonBounds",
    "EpsilonUpperBound",
    "SamplerDeltaBounds",
    "SamplerEpsilonBounds",
]


@attrs.frozen(eq=False)
class Bounds:
    """Certified ``lower <= true delta <= upper`` at ``epsilon`` (arrays when many eps).

    ``achieved_accuracy`` is the largest relative bracket ``(upper - lower) / upper`` over
    the eps asked for; ``accuracy`` is what was requested; ``bucket_width`` is the loss
    width the engine chose. ``atom`` (PDP): the A-mass of composed losses lying at eps to
    within the rounding of the losses computed from the masses as given, which the bracket
    spans (whether those losses exceed eps is not resolved at that rounding: no accuracy can
    remove it); the requested accuracy applies to the rest of the bracket, ``(upper - atom -
    lower) / upper``. 0 for ADP.
    """

    lower: float | np.ndarray
    upper: float | np.ndarray
    epsilon: float | np.ndarray
    kind: Kind
    direction: Direction
    releases: int
    accuracy: float
    achieved_accuracy: float
    bucket_width: float
    atom: float | np.ndarray = 0.0

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))


@attrs.frozen
class EpsilonBounds:
    """Certified bounds on the smallest eps with ``delta(eps) <= delta``: every eps at or
    above ``upper`` is certified; no eps below ``lower`` can be (arrays when many deltas)."""

    lower: float | np.ndarray
    upper: float | np.ndarray
    delta: float | np.ndarray
    kind: Kind
    direction: Direction
    releases: int
    accuracy: float
    bucket_width: float

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))


@attrs.frozen(eq=False)
class DeltaUpperBound:
    """A certified ``true delta <= upper`` at ``epsilon`` (arrays when many eps), from an
    accountant that has no lower bound (the Extended MA). Field for field a
    :class:`Bounds` without ``lower``."""

    upper: float | np.ndarray
    epsilon: float | np.ndarray
    kind: Kind
    direction: Direction
    releases: int

    def __float__(self) -> float:
        """The bound as a number (a single eps only)."""
        return float(self.upper)


@attrs.frozen(eq=False)
class EpsilonUpperBound:
    """A certified eps: ``delta(eps) <= delta`` for every eps at or above ``upper``, from an
    accountant that has no lower bound. Field for field an :class:`EpsilonBounds` without
    ``lower``."""

    upper: float
    delta: float
    kind: Kind
    direction: Direction
    releases: int

    def __float__(self) -> float:
        """The bound as a number."""
        return float(self.upper)


@attrs.frozen
class SamplerDeltaBounds:
    """A certified ``lower <= delta(epsilon) <= upper`` for ``epochs`` epochs of an epoch
    sampler (:func:`accountant.epoch_samplers.shuffled_epochs_delta`), beside ``poisson``: the
    certified upper delta a Poisson accountant gives the same run (rate ``b/n``, ``steps``
    releases, add-remove), which is *not* a bound for this sampler.

    ``lower`` comes from an explicit pair of datasets (the max statistic), ``upper`` from the
    dominating Gaussian; ``sampler``, ``neighbours``, ``batches_per_epoch`` and ``intervals``
    (of the max statistic's partition) say what was accounted: ``epochs`` started, of which
    ``completed_epochs`` ran to their end (``None``: all), ``steps`` taken; ``cut``,
    ``dimension`` and ``truncation`` the noise (``cut`` infinite: Gaussian)."""

    lower: float
    upper: float
    poisson: float
    epsilon: float
    epochs: int
    steps: int
    batches_per_epoch: int
    sampler: str
    neighbours: str
    intervals: int
    cut: float = math.inf
    dimension: int = 1
    truncation: str = "renormalised"
    completed_epochs: int | None = None

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))


@attrs.frozen
class SamplerEpsilonBounds:
    """Certified bounds on the smallest eps with ``delta(eps) <= delta`` for ``epochs`` epochs
    of an epoch sampler (:func:`accountant.epoch_samplers.shuffled_epochs_epsilon`): every eps
    at or above ``upper`` is certified, none below ``lower`` can be. ``poisson``: the
    certified eps a Poisson accountant gives the same run (rate ``b/n``, ``steps`` releases,
    add-remove), which is *not* a bound for this sampler. Other fields as
    :class:`SamplerDeltaBounds`."""

    lower: float
    upper: float
    poisson: float
    delta: float
    epochs: int
    steps: int
    batches_per_epoch: int
    sampler: str
    neighbours: str
    intervals: int
    cut: float = math.inf
    dimension: int = 1
    truncation: str = "renormalised"
    completed_epochs: int | None = None

    def __iter__(self):
        """Unpack as ``lower, upper = bounds``."""
        return iter((self.lower, self.upper))
