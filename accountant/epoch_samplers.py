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
"""

from __future__ import annotations

import attrs

from accountant.buckets import PrivacyBuckets
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS, ShuffledEpoch
from accountant.results import SamplerDeltaBounds, SamplerEpsilonBounds
from accountant.validation import (
    check_nonnegative_real,
    check_open_fraction,
    check_positive_int,
    check_target_delta,
)

__all__ = ["shuffled_epochs_delta", "shuffled_epochs_epsilon"]


@attrs.frozen
class _Run:
    epoch: ShuffledEpoch
    epochs: int
    intervals: int
    accountant: PrivacyBuckets

    @property
    def steps(self) -> int:
        return self.epochs * self.epoch.batches

    def upper(self) -> PrivacyBuckets:
        return self.accountant.compose(self.epoch.dominating_mechanism, times=self.epochs)

    def lower(self) -> list[PrivacyBuckets]:
        return [
            self.accountant.compose(pair, times=self.epochs)
            for pair in self.epoch.lower_bound_pairs(self.intervals)
        ]

    def poisson(self) -> PrivacyBuckets:
        return self.accountant.compose(self.epoch.poisson_twin, times=self.steps)

    def described(self) -> dict[str, object]:
        """The fields both results share: what was run."""
        return {
            "epochs": self.epochs,
            "steps": self.steps,
            "batches_per_epoch": self.epoch.batches,
            "sampler": self.epoch.sampler,
            "neighbours": self.epoch.neighbours,
            "intervals": self.intervals,
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
) -> _Run:
    epoch = ShuffledEpoch(
        sigma=sigma,
        batch_size=batch_size,
        dataset_size=dataset_size,
        neighbours=neighbours,
        sampler=sampler,
    )
    return _Run(
        epoch,
        check_positive_int("epochs", epochs),
        check_positive_int("intervals", intervals),
        PrivacyBuckets(accuracy=check_open_fraction("accuracy", accuracy)),
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
) -> SamplerDeltaBounds:
    """Certified ``lower <= delta(epsilon) <= upper`` for ``epochs`` epochs of DP-SGD with
    ``sampler`` ``"shuffle"`` (a random permutation cut into batches of ``batch_size``; a short
    last batch when ``batch_size`` does not divide ``dataset_size``, handled as it is) or
    ``"balls-and-bins"``, noise multiplier ``sigma``, ``neighbours`` ``"add-remove"`` (zero-out
    for fixed-size batches) or ``"replace-one"``; ``delta`` the larger of both orders of the
    neighbours. ``intervals``: the partition of the max statistic (the lower bound rises as it
    is refined); ``accuracy``: PrivacyBuckets' relative bracket. See the module docstring and
    :mod:`accountant.mechanisms.shuffled` for what is computed and why it is certified."""
    run = _run(sigma, batch_size, dataset_size, epochs, neighbours, sampler, intervals, accuracy)
    epsilon = check_nonnegative_real("epsilon", epsilon)
    lower = max(float(pb.delta(epsilon, direction="A/B").lower) for pb in run.lower())
    return SamplerDeltaBounds(
        lower=max(lower, 0.0),
        upper=float(run.upper().delta(epsilon).upper),
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
) -> SamplerEpsilonBounds:
    """Certified bounds on the smallest eps with ``delta(eps) <= delta`` for the run of
    :func:`shuffled_epochs_delta` (same arguments): ``upper`` is certified for the sampler
    (the dominating Gaussian), no eps below ``lower`` can be (the explicit pair's certified
    lower delta exceeds ``delta`` there); ``poisson`` is the Poisson accountant's eps."""
    run = _run(sigma, batch_size, dataset_size, epochs, neighbours, sampler, intervals, accuracy)
    delta = check_target_delta("delta", delta)
    lower = max(float(pb.epsilon(delta, direction="A/B").lower) for pb in run.lower())
    return SamplerEpsilonBounds(
        lower=max(lower, 0.0),
        upper=float(run.upper().epsilon(delta).upper),
        poisson=float(run.poisson().epsilon(delta).upper),
        delta=delta,
        **run.described(),
    )
