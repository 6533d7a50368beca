"""Certified brackets for DP-SGD whose epochs cover every example once: shuffled fixed-size
batches and balls-and-bins batches (:class:`~accountant.mechanisms.shuffled.ShuffledEpoch`),
with the figure a Poisson accountant would report beside them.

For ``E`` epochs of ``T = ceil(n/b)`` batches:

* ``upper``: PrivacyBuckets' certified upper bound of the dominating Gaussian composed ``E``
  times (sensitivity ``C`` add-remove, ``2C`` replace-one; no amplification claimed);
* ``lower``: the larger of PrivacyBuckets' certified lower bounds (direction A/B) of the two
  max-statistic pairs of :meth:`~accountant.mechanisms.shuffled.ShuffledEpoch.lower_bound_pairs`
  composed ``E`` times (Chua et al., ICML 2024: an explicit pair of datasets, so the true
  delta of the sampler is at least this);
* ``poisson``: PrivacyBuckets' certified upper bound for ``E T`` releases of the Poisson
  subsampled Gaussian at rate ``b/n`` (add-remove), what Opacus, dp_accounting or PRV would
  report if the run were accounted as Poisson-sampled. It bounds nothing about these
  samplers: it may lie below ``lower``.

The arguments are those of a DP-SGD run (``sigma``, ``batch_size``, ``dataset_size``,
``epochs``), so an Opacus ``poisson_sampling=False`` run maps onto them directly.

**Truncated noise** (``cut`` finite: each of the ``dimension`` noise coordinates of every
step cut at ``+-cut sigma C``, ``truncation`` as for
:class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian`): the cut
run is coupled with the uncut one (:mod:`accountant.dpsgd.coupling`; the noise is
independent of the data and of the batches, so the coupling holds for any sampler). The
upper end is the uncut run's, raised by the chance ``tau`` that some of the ``dimension x
E T`` coordinates reaches its cut; the lower end is the explicit pair's, lowered by the
chance ``tau_1`` that one of its ``E T`` one-dimensional draws does (its other coordinates
carry no gradient, and any function of the output is post-processing); ``poisson`` is
:class:`~accountant.dpsgd.DPSGDAccountant`'s upper bound for the Poisson twin with the same
cut and dimension.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from accountant.buckets import PrivacyBuckets
from accountant.dpsgd import DPSGDAccountant
from accountant.dpsgd.coupling import (
    coupled_delta,
    coupled_epsilon,
    escape_probability,
    lowered_delta,
    raised_target,
)
from accountant.errors import InvalidInputError
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS, ShuffledEpoch
from accountant.mechanisms.subsampled_gaussian import TRUNCATIONS, SubsampledTruncatedGaussian
from accountant.results import SamplerDeltaBounds, SamplerEpsilonBounds
from accountant.validation import (
    check_choice,
    check_nonnegative_real,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)

__all__ = ["shuffled_epochs_delta", "shuffled_epochs_epsilon"]


@attrs.frozen
class _Run:
    epoch: ShuffledEpoch
    epochs: int
    intervals: int
    accountant: PrivacyBuckets
    cut: float = math.inf
    dimension: int = 1
    truncation: str = "renormalised"

    @property
    def steps(self) -> int:
        return self.epochs * self.epoch.batches

    @property
    def escape(self) -> float:
        """``tau``: some of the ``dimension x steps`` noise coordinates reaches the cut."""
        return escape_probability([(self.cut, self.dimension * self.steps)])

    @property
    def one_dimensional_escape(self) -> float:
        """``tau_1``: one of the explicit pair's ``steps`` one-dimensional draws does."""
        return escape_probability([(self.cut, self.steps)])

    def upper(self) -> PrivacyBuckets:
        return self.accountant.compose(self.epoch.dominating_mechanism, times=self.epochs)

    def lower(self) -> list[PrivacyBuckets]:
        return [
            self.accountant.compose(pair, times=self.epochs)
            for pair in self.epoch.lower_bound_pairs(self.intervals)
        ]

    def poisson(self):
        """The Poisson twin's accountant: PrivacyBuckets uncut, DPSGDAccountant cut."""
        if self.cut == math.inf:
            return self.accountant.compose(self.epoch.poisson_twin, times=self.steps)
        twin = self.epoch.poisson_twin
        cut = SubsampledTruncatedGaussian(
            sigma=twin.sigma,
            sampling_rate=twin.sampling_rate,
            cut=self.cut,
            clip=twin.clip,
            truncation=self.truncation,
        )
        accountant = DPSGDAccountant(dimension=self.dimension, accuracy=self.accountant.accuracy)
        return accountant.compose(cut, times=self.steps)

    def described(self) -> dict[str, object]:
        """The fields both results share: what was run."""
        return {
            "epochs": self.epochs,
            "steps": self.steps,
            "batches_per_epoch": self.epoch.batches,
            "sampler": self.epoch.sampler,
            "neighbours": self.epoch.neighbours,
            "intervals": self.intervals,
            "cut": self.cut,
            "dimension": self.dimension,
            "truncation": self.truncation,
        }


def _run(
    sigma: float,
    batch_size: int,
    dataset_size: int,
    epochs: int,
    neighbours: str,
    sampler: str,
    intervals: int,
    accuracy: float,
    cut: float = math.inf,
    dimension: int | None = None,
    truncation: str = "renormalised",
) -> _Run:
    epoch = ShuffledEpoch(
        sigma=sigma,
        batch_size=batch_size,
        dataset_size=dataset_size,
        neighbours=neighbours,
        sampler=sampler,
    )
    truncation = check_choice("truncation", truncation, TRUNCATIONS)
    if not (isinstance(cut, (int, float)) and cut == math.inf):
        cut = check_positive_real("cut", cut)
        if dimension is None:
            raise InvalidInputError(
                f"dimension is required with a finite cut (cut={cut!r}): the number of "
                "noise coordinates of each step, each cut separately"
            )
    dimension = 1 if dimension is None else check_positive_int("dimension", dimension)
    return _Run(
        epoch,
        check_positive_int("epochs", epochs),
        check_positive_int("intervals", intervals),
        PrivacyBuckets(accuracy=check_open_fraction("accuracy", accuracy)),
        cut,
        dimension,
        truncation,
    )


def shuffled_epochs_delta(
    sigma: float,
    batch_size: int,
    dataset_size: int,
    epochs: int,
    epsilon: float,
    *,
    neighbours: str = "add-remove",
    sampler: str = "shuffle",
    intervals: int = DEFAULT_INTERVALS,
    accuracy: float = 1e-4,
    cut: float = math.inf,
    dimension: int | None = None,
    truncation: str = "renormalised",
) -> SamplerDeltaBounds:
    """Certified ``lower <= delta(epsilon) <= upper`` for ``epochs`` epochs of DP-SGD with
    ``sampler`` ``"shuffle"`` (a random permutation cut into batches of ``batch_size``; a short
    last batch when ``batch_size`` does not divide ``dataset_size``, handled as it is) or
    ``"balls-and-bins"``, noise multiplier ``sigma``, ``neighbours`` ``"add-remove"`` (zero-out
    for fixed-size batches) or ``"replace-one"``; ``delta`` the larger of both orders of the
    neighbours. ``intervals``: the partition of the max statistic (the lower bound rises as it
    is refined); ``accuracy``: PrivacyBuckets' relative bracket. ``cut``, ``dimension``
    (required with a finite cut) and ``truncation``: noise cut per coordinate (module
    docstring). See the module docstring and :mod:`accountant.mechanisms.shuffled` for what is
    computed and why it is certified."""
    run = _run(
        sigma,
        batch_size,
        dataset_size,
        epochs,
        neighbours,
        sampler,
        intervals,
        accuracy,
        cut,
        dimension,
        truncation,
    )
    epsilon = check_nonnegative_real("epsilon", epsilon)
    lower = max(float(pb.delta(epsilon, direction="A/B").lower) for pb in run.lower())
    upper = float(run.upper().delta(epsilon).upper)
    if run.cut != math.inf:
        lower = float(lowered_delta(lower, epsilon, run.one_dimensional_escape, run.truncation))
        upper = float(coupled_delta(np.array([upper]), epsilon, run.escape, run.truncation)[0])
    return SamplerDeltaBounds(
        lower=max(lower, 0.0),
        upper=upper,
        poisson=float(run.poisson().delta(epsilon).upper),
        epsilon=epsilon,
        **run.described(),
    )


def shuffled_epochs_epsilon(
    sigma: float,
    batch_size: int,
    dataset_size: int,
    epochs: int,
    delta: float,
    *,
    neighbours: str = "add-remove",
    sampler: str = "shuffle",
    intervals: int = DEFAULT_INTERVALS,
    accuracy: float = 1e-4,
    cut: float = math.inf,
    dimension: int | None = None,
    truncation: str = "renormalised",
) -> SamplerEpsilonBounds:
    """Certified bounds on the smallest eps with ``delta(eps) <= delta`` for the run of
    :func:`shuffled_epochs_delta` (same arguments): ``upper`` is certified for the sampler
    (the dominating Gaussian; with a finite cut, coupled with the cut run), no eps below
    ``lower`` can be (the explicit pair's certified lower delta exceeds ``delta`` there);
    ``poisson`` is the Poisson accountant's eps."""
    run = _run(
        sigma,
        batch_size,
        dataset_size,
        epochs,
        neighbours,
        sampler,
        intervals,
        accuracy,
        cut,
        dimension,
        truncation,
    )
    delta = check_target_delta("delta", delta)
    gaussian = run.upper()
    upper = float(gaussian.epsilon(delta).upper)
    below = delta
    if run.cut != math.inf:
        upper = coupled_epsilon(
            lambda budget: float(gaussian.epsilon(budget).upper),
            delta,
            run.escape,
            run.truncation,
            upper,
            f"{run.dimension} x {run.steps} noise coordinates (dimension={run.dimension})",
        )
        # every eps below the pair's certified lower eps at delta + penalty(upper) (and at
        # most upper) leaves the cut run's delta above delta: penalty grows with eps
        below = raised_target(delta, upper, run.one_dimensional_escape, run.truncation)
    lower = 0.0
    if below < 1.0:
        lower = max(float(pb.epsilon(below, direction="A/B").lower) for pb in run.lower())
    return SamplerEpsilonBounds(
        lower=min(max(lower, 0.0), upper),
        upper=upper,
        poisson=float(run.poisson().epsilon(delta).upper),
        delta=delta,
        **run.described(),
    )
