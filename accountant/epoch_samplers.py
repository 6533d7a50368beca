"""Certified brackets for DP-SGD whose epochs cover every example once: shuffled fixed-size
batches and balls-and-bins batches (:class:`~accountant.mechanisms.shuffled.ShuffledEpoch`),
and fixed-order batches (the same batches in the same order every epoch), with the figure a
Poisson accountant would report beside them.

For ``E`` epochs of ``T = ceil(n/b)`` batches:

* ``upper``: PrivacyBuckets' certified upper bound of the dominating Gaussian composed ``E``
  times (sensitivity ``C`` add-remove, ``2C`` replace-one; no amplification claimed);
* ``lower``: the larger of PrivacyBuckets' certified lower bounds (direction A/B) of the two
  max-statistic pairs of :meth:`~accountant.mechanisms.shuffled.ShuffledEpoch.lower_bound_pairs`
  composed ``E`` times (Chua et al., ICML 2024: an explicit pair of datasets, so the true
  delta of the sampler is at least this);
* ``lower``, fixed order: the dominating Gaussian's own certified lower bound. A fixed
  order is exactly that composition: the example in the first batch, with a gradient of
  norm ``C`` (add-remove; ``C`` against ``-C``, replace-one) along one axis that does not
  depend on the model and every other gradient 0, shifts the first release of every epoch
  by the sensitivity and nothing else, which is the Gaussian pair once per epoch;
* ``poisson``: PrivacyBuckets' certified upper bound for ``E T`` releases of the Poisson
  subsampled Gaussian at rate ``b/n`` (add-remove), what Opacus, dp_accounting or PRV would
  report if the run were accounted as Poisson-sampled. It bounds nothing about these
  samplers: it may lie below ``lower``.

**Epochs stopped early** (``steps`` fewer than ``E T``; ``E`` then counts the epochs
started, ``completed_epochs`` those run to their end, by default ``floor(steps / T)``: a
last epoch stopped early): each example is released at most once in an epoch, so the upper
end still composes ``E`` Gaussians. The lower end keeps only what the explicit pair
describes: the completed epochs for shuffled and balls-and-bins batches (dropping the
partial epochs' releases is post-processing, and the pair assumes each epoch ran to its
end), all ``E`` for a fixed order (a partial epoch has released its first batch).
``poisson`` counts ``steps`` releases.

The arguments are those of a DP-SGD run (``sigma``, ``batch_size``, ``dataset_size``,
``epochs``), so an Opacus ``poisson_sampling=False`` run maps onto them directly.

**Truncated noise** (``cut`` finite: each of the ``dimension`` noise coordinates of every
step cut at ``+-cut sigma C``, ``truncation`` as for
:class:`~accountant.mechanisms.subsampled_gaussian.SubsampledTruncatedGaussian`): the cut
run is coupled with the uncut one (:mod:`accountant.dpsgd.coupling`; the noise is
independent of the data and of the batches, so the coupling holds for any sampler). The
upper end is the uncut run's, raised by the chance ``tau`` that some of the ``dimension x
steps`` coordinates reaches its cut; the lower end is the explicit pair's, lowered by the
chance ``tau_1`` that one of the one-dimensional draws it reads does (those of the
completed epochs' ``T`` steps each; one per epoch for a fixed order, the first batch's: its
other coordinates carry no gradient, and any function of the output is post-processing);
``poisson`` is
:class:`~accountant.dpsgd.DPSGDAccountant`'s upper bound for the Poisson twin with the same
cut and dimension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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
from accountant.errors import InvalidInputError, warnings_said_of
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS, ShuffledEpoch
from accountant.mechanisms.shuffled import SAMPLERS as RANDOM_SAMPLERS
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

__all__ = [
    "EPOCH_SAMPLERS",
    "shuffled_epochs_delta",
    "shuffled_epochs_epsilon",
    "shuffled_epochs_upper_epsilon",
]

#: The samplers bounded: those of :class:`~accountant.mechanisms.shuffled.ShuffledEpoch`
#: (``"shuffle"``, ``"balls-and-bins"``) and ``"fixed-order"`` (the same batches in the
#: same order every epoch).
EPOCH_SAMPLERS = (*RANDOM_SAMPLERS, "fixed-order")


@attrs.frozen
class _Run:
    epoch: ShuffledEpoch
    epochs: int
    intervals: int
    accountant: PrivacyBuckets
    cut: float = math.inf
    dimension: int = 1
    truncation: str = "renormalised"
    sampler: str = "shuffle"
    steps: int = 0
    completed_epochs: int = 0

    @property
    def read_epochs(self) -> int:
        """The epochs the lower end's pair reads: the completed ones (all started ones for
        a fixed order, whose pair reads each epoch's first batch)."""
        return self.epochs if self.sampler == "fixed-order" else self.completed_epochs

    @property
    def escape(self) -> float:
        """``tau``: some of the ``dimension x steps`` noise coordinates reaches the cut."""
        return escape_probability([(self.cut, self.dimension * self.steps)])

    @property
    def one_dimensional_escape(self) -> float:
        """``tau_1``: one of the one-dimensional draws the explicit pair reads does."""
        per_epoch = 1 if self.sampler == "fixed-order" else self.epoch.batches
        return escape_probability([(self.cut, self.read_epochs * per_epoch)])

    def upper(self) -> PrivacyBuckets:
        return self.accountant.compose(self.epoch.dominating_mechanism, times=self.epochs)

    def lower(self) -> list[PrivacyBuckets]:
        """The explicit pairs composed over :attr:`read_epochs` (none when it is 0)."""
        if self.read_epochs == 0:
            return []
        pairs: Sequence[Any] = (
            [self.epoch.dominating_mechanism]
            if self.sampler == "fixed-order"
            else self.epoch.lower_bound_pairs(self.intervals)
        )
        return [self.accountant.compose(pair, times=self.read_epochs) for pair in pairs]

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

    @property
    def poisson_subject(self) -> str:
        """What the Poisson figure's warnings are said of."""
        return f"the Poisson figure (poisson, not a bound for {self.sampler} epochs)"

    def described(self) -> dict[str, Any]:
        """The fields both results share: what was run."""
        return {
            "epochs": self.epochs,
            "steps": self.steps,
            "batches_per_epoch": self.epoch.batches,
            "sampler": self.sampler,
            "neighbours": self.epoch.neighbours,
            "intervals": self.intervals,
            "cut": self.cut,
            "dimension": self.dimension,
            "truncation": self.truncation,
            "completed_epochs": self.completed_epochs,
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
    steps: int | None = None,
    completed_epochs: int | None = None,
) -> _Run:
    sampler = check_choice("sampler", sampler, EPOCH_SAMPLERS)
    epoch = ShuffledEpoch(  # a fixed order shares a shuffled epoch's Gaussian and twin
        sigma=sigma,
        batch_size=batch_size,
        dataset_size=dataset_size,
        neighbours=neighbours,
        sampler="shuffle" if sampler == "fixed-order" else sampler,
    )
    epochs = check_positive_int("epochs", epochs)
    steps, completed_epochs = _checked_progress(epochs, epoch.batches, steps, completed_epochs)
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
        epochs,
        check_positive_int("intervals", intervals),
        PrivacyBuckets(accuracy=check_open_fraction("accuracy", accuracy)),
        cut,
        dimension,
        truncation,
        sampler,
        steps,
        completed_epochs,
    )


def _checked_progress(
    epochs: int, batches: int, steps: object, completed_epochs: object
) -> tuple[int, int]:
    """``(steps, completed_epochs)`` of ``epochs`` started epochs of ``batches`` steps
    (defaults: all run to their end; ``completed_epochs`` ``floor(steps / batches)``), checked
    to describe a run: each partial epoch took from 1 to ``batches - 1`` steps."""
    whole = epochs * batches
    steps = whole if steps is None else check_positive_int("steps", steps)
    if completed_epochs is None:
        completed_epochs = min(epochs, steps // batches)
    elif not isinstance(completed_epochs, int) or isinstance(completed_epochs, bool):
        raise InvalidInputError(f"completed_epochs must be an integer, got {completed_epochs!r}")
    if not 0 <= completed_epochs <= epochs:
        raise InvalidInputError(
            f"completed_epochs must lie in [0, epochs={epochs}], got {completed_epochs!r}"
        )
    partial = epochs - completed_epochs
    least = completed_epochs * batches + partial
    most = completed_epochs * batches + partial * (batches - 1)
    if not least <= steps <= most:
        raise InvalidInputError(
            f"steps={steps!r} cannot be taken in {epochs} started epochs of {batches} "
            f"batches of which completed_epochs={completed_epochs} ran to their end (each "
            f"other one stops after 1 to {batches - 1} steps): steps must lie in "
            f"[{least}, {most}]"
        )
    return steps, completed_epochs


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
    steps: int | None = None,
    completed_epochs: int | None = None,
) -> SamplerDeltaBounds:
    """Certified ``lower <= delta(epsilon) <= upper`` for ``epochs`` epochs of DP-SGD with
    ``sampler`` ``"shuffle"`` (a random permutation cut into batches of ``batch_size``; a short
    last batch when ``batch_size`` does not divide ``dataset_size``, handled as it is),
    ``"balls-and-bins"`` or ``"fixed-order"`` (:data:`EPOCH_SAMPLERS`), noise multiplier
    ``sigma``, ``neighbours`` ``"add-remove"`` (zero-out for fixed-size batches) or
    ``"replace-one"``; ``delta`` the larger of both orders of the neighbours. ``intervals``:
    the partition of the max statistic (the lower bound rises as it is refined);
    ``accuracy``: PrivacyBuckets' relative bracket. ``cut``, ``dimension`` (required with a
    finite cut) and ``truncation``: noise cut per coordinate. ``steps`` and
    ``completed_epochs``: epochs stopped early (default: none; ``steps`` alone, a last epoch
    stopped after ``steps - (epochs - 1) T`` steps). See the module
    docstring and :mod:`accountant.mechanisms.shuffled` for what is computed and why it is
    certified."""
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
        steps,
        completed_epochs,
    )
    epsilon = check_nonnegative_real("epsilon", epsilon)
    lower = max(
        (float(pb.delta(epsilon, direction="A/B").lower) for pb in run.lower()), default=0.0
    )
    upper = float(run.upper().delta(epsilon).upper)
    if run.cut != math.inf:
        lower = float(lowered_delta(lower, epsilon, run.one_dimensional_escape, run.truncation))
        upper = float(coupled_delta(np.array([upper]), epsilon, run.escape, run.truncation)[0])
    with warnings_said_of(run.poisson_subject):
        poisson = float(run.poisson().delta(epsilon).upper)
    return SamplerDeltaBounds(
        lower=max(lower, 0.0),
        upper=upper,
        poisson=poisson,
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
    steps: int | None = None,
    completed_epochs: int | None = None,
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
        steps,
        completed_epochs,
    )
    delta = check_target_delta("delta", delta)
    upper = _upper_epsilon(run, delta)
    below = delta
    if run.cut != math.inf:
        # every eps below the pair's certified lower eps at delta + penalty(upper) (and at
        # most upper) leaves the cut run's delta above delta: penalty grows with eps
        below = raised_target(delta, upper, run.one_dimensional_escape, run.truncation)
    lower = 0.0
    if below < 1.0:
        lower = max(
            (float(pb.epsilon(below, direction="A/B").lower) for pb in run.lower()), default=0.0
        )
    with warnings_said_of(run.poisson_subject):
        poisson = float(run.poisson().epsilon(delta).upper)
    return SamplerEpsilonBounds(
        lower=min(max(lower, 0.0), upper),
        upper=upper,
        poisson=poisson,
        delta=delta,
        **run.described(),
    )


def _upper_epsilon(run: _Run, delta: float) -> float:
    """The certified upper eps of ``run`` at ``delta``: the dominating Gaussian's, coupled
    with the cut run when the noise is cut (module docstring)."""
    gaussian = run.upper()
    upper = float(gaussian.epsilon(delta).upper)
    if run.cut == math.inf:
        return upper
    return coupled_epsilon(
        lambda budget: float(gaussian.epsilon(budget).upper),
        delta,
        run.escape,
        run.truncation,
        upper,
        f"{run.dimension} x {run.steps} noise coordinates (dimension={run.dimension})",
    )


def shuffled_epochs_upper_epsilon(
    sigma: float,
    batch_size: int,
    dataset_size: int,
    epochs: int,
    delta: float,
    *,
    neighbours: str = "add-remove",
    accuracy: float = 1e-4,
    cut: float = math.inf,
    dimension: int | None = None,
    truncation: str = "renormalised",
) -> float:
    """The ``upper`` end of :func:`shuffled_epochs_epsilon` alone (the same for every
    sampler of :data:`EPOCH_SAMPLERS`, whole epochs), without the lower end's pairs or the
    Poisson figure: what a calibration evaluates once per noise multiplier."""
    run = _run(
        sigma,
        batch_size,
        dataset_size,
        epochs,
        neighbours,
        "shuffle",
        DEFAULT_INTERVALS,
        accuracy,
        cut,
        dimension,
        truncation,
    )
    return _upper_epsilon(run, check_target_delta("delta", delta))
