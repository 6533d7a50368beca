"""Calibrating DP-SGD whose epochs cover every example once (shuffled, balls-and-bins or
fixed-order batches, issue 27): the noise multiplier certified to meet a target
``(eps, delta)``.

What is certified for such a sampler (:mod:`accountant.epoch_samplers`) is the dominating
Gaussian of each epoch, composed ``E`` times: sensitivity ``C`` add-remove, ``2C``
replace-one, no amplification by the sampler claimed. Its eps depends on ``sigma`` only
through ``mu = s sqrt(E) / sigma`` (``s`` the sensitivity in units of ``C``) and falls as
``sigma`` grows, so :func:`calibrate_shuffled_noise_multiplier` bisects ``ln sigma`` on
PrivacyBuckets' certified upper eps (the Gaussian's closed form, rounded outwards) until
``sigma`` (certified: upper eps at most the target) and ``sigma_low`` (not certified by
that bound) are ``tolerance`` apart.

**Truncated noise** (``cut`` finite, each of the ``dimension`` coordinates of every step
cut at ``+-cut sigma C``): the upper end is coupled with the uncut run
(:mod:`accountant.epoch_samplers`); the coupling's penalty depends on ``cut`` and the
number of coordinates, not on ``sigma``, so the upper eps still falls as ``sigma`` grows and
the same bisection applies.

Beside it, for the user to see what the sampler costs: at ``sigma``, the certified lower eps
of the explicit pair of datasets (no analysis can certify less for this sampler:
:func:`~accountant.epoch_samplers.shuffled_epochs_epsilon`; for fixed-order batches, whose
epochs are the dominating Gaussian itself, that Gaussian's lower end), the eps a Poisson accountant
would report for the same run, and the noise multiplier a Poisson accountant would have
calibrated (:func:`~accountant.learning.calibration.calibrate_noise_multiplier`, rate
``b/n``, ``E T`` steps). The gap between ``sigma`` and ``poisson_sigma`` is the price of
certifying a shuffled run without an amplification theorem; the gap between ``lower`` and
``epsilon`` bounds how much a sharper analysis could recover.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from accountant.epoch_samplers import (
    EPOCH_SAMPLERS,
    shuffled_epochs_epsilon,
    shuffled_epochs_upper_epsilon,
)
from accountant.errors import InfeasibleTargetError, warnings_said_of
from accountant.learning.calibration import calibrate_noise_multiplier
from accountant.mechanisms.shuffled import DEFAULT_INTERVALS, ShuffledEpoch
from accountant.validation import (
    check_choice,
    check_open_fraction,
    check_positive_int,
    check_positive_real,
    check_target_delta,
)

__all__ = [
    "SAMPLERS",
    "SAMPLER_CALIBRATION_SCHEMA_VERSION",
    "SamplerCalibration",
    "calibrate_shuffled_noise_multiplier",
]

#: Version of :meth:`SamplerCalibration.to_dict`'s layout (the JSON Schema shipped as
#: ``accountant/schemas/calibrate-sampler.schema.json``); raised whenever a key is renamed,
#: moved or removed.
SAMPLER_CALIBRATION_SCHEMA_VERSION = 1

#: The bisection starts this many times on either side of the Gaussian-DP guess.
_START_SPAN = 2.0
#: The samplers calibrated: :data:`accountant.epoch_samplers.EPOCH_SAMPLERS` (shuffled,
#: balls-and-bins and fixed-order batches).
SAMPLERS = EPOCH_SAMPLERS


@attrs.frozen
class SamplerCalibration:
    """The noise multiplier of an epoch-sampled DP-SGD run certified to meet
    ``(epsilon, delta)`` (:func:`calibrate_shuffled_noise_multiplier`).

    ``sigma``: its certified upper eps (``upper``, from the dominating Gaussian: no
    amplification by the sampler claimed) is at most ``epsilon``. ``sigma_low``: that bound
    does not certify ``epsilon`` there (``sigma / sigma_low - 1 <= tolerance``); a sharper
    analysis of the sampler might. ``lower``: at ``sigma``, no eps below it can be certified
    for the sampler (an explicit pair of datasets). ``poisson``: the eps a Poisson accountant
    reports at ``sigma`` (not a bound for this sampler); ``poisson_sigma``: the noise
    multiplier it would have calibrated to ``epsilon``. ``evaluations``: the PrivacyBuckets
    queries of the search. ``batch_size``, ``dataset_size``, ``tolerance``: as asked;
    ``cut``, ``dimension``, ``truncation``: the noise (``cut`` infinite: Gaussian)."""

    sigma: float
    sigma_low: float
    epsilon: float
    delta: float
    upper: float
    lower: float
    poisson: float
    poisson_sigma: float
    epochs: int
    steps: int
    batches_per_epoch: int
    sampler: str
    neighbours: str
    evaluations: int
    batch_size: int
    dataset_size: int
    tolerance: float
    cut: float = math.inf
    dimension: int = 1
    truncation: str = "renormalised"

    def __float__(self) -> float:
        """The noise multiplier as a number."""
        return float(self.sigma)

    def to_dict(self, seconds: float | None = None, notes: tuple[str, ...] = ()) -> dict:
        """The JSON form ``accountant/schemas/calibrate-sampler.schema.json`` fixes
        (``{"schema_version", "run", "target", "result", "notes", "seconds"}``; ``cut`` the
        string ``"inf"`` for Gaussian noise); ``seconds``: the wall time, if measured;
        ``notes``: the caveats warned on the way."""
        return {
            "schema_version": SAMPLER_CALIBRATION_SCHEMA_VERSION,
            "run": {
                "sampler": self.sampler,
                "neighbours": self.neighbours,
                "batch_size": self.batch_size,
                "dataset_size": self.dataset_size,
                "epochs": self.epochs,
                "steps": self.steps,
                "batches_per_epoch": self.batches_per_epoch,
                "cut": self.cut if math.isfinite(self.cut) else "inf",
                "dimension": self.dimension,
                "truncation": self.truncation,
            },
            "target": {"epsilon": self.epsilon, "delta": self.delta, "tolerance": self.tolerance},
            "result": {
                "sigma": self.sigma,
                "sigma_low": self.sigma_low,
                "upper": self.upper,
                "lower": self.lower,
                "poisson": self.poisson,
                "poisson_sigma": self.poisson_sigma,
                "evaluations": self.evaluations,
            },
            "notes": list(notes),
            "seconds": seconds,
        }


def calibrate_shuffled_noise_multiplier(
    *,
    epsilon: float,
    delta: float,
    batch_size: int,
    dataset_size: int,
    epochs: int,
    neighbours: str = "add-remove",
    sampler: str = "shuffle",
    tolerance: float = 1e-3,
    intervals: int = DEFAULT_INTERVALS,
    accuracy: float = 1e-4,
    max_sigma: float = 1e4,
    cut: float = math.inf,
    dimension: int | None = None,
    truncation: str = "renormalised",
) -> SamplerCalibration:
    """The smallest noise multiplier found (within ``tolerance``, relative) whose certified
    upper eps at ``delta`` is at most ``epsilon`` for ``epochs`` epochs of ``sampler``
    (:data:`SAMPLERS`) batches of ``batch_size`` out of ``dataset_size`` examples,
    ``neighbours`` ``"add-remove"`` or ``"replace-one"`` (module docstring). ``intervals``,
    ``accuracy``, ``cut``, ``dimension`` (required with a finite cut) and ``truncation`` as
    for :func:`~accountant.epoch_samplers.shuffled_epochs_epsilon`.

    Raises :class:`~accountant.errors.InvalidInputError` (naming the argument) on bad input
    and :class:`~accountant.errors.InfeasibleTargetError` when even ``max_sigma`` is not
    certified to meet the target."""
    epsilon = check_positive_real("epsilon", epsilon)
    delta = check_target_delta("delta", delta)
    tolerance = check_open_fraction("tolerance", tolerance)
    max_sigma = check_positive_real("max_sigma", max_sigma)
    epochs = check_positive_int("epochs", epochs)
    accuracy = check_open_fraction("accuracy", accuracy)
    sampler = check_choice("sampler", sampler, SAMPLERS)
    # (validates batch_size, dataset_size and neighbours by name; every sampler's epoch is
    # dominated by the same Gaussian)
    template = ShuffledEpoch(
        sigma=1.0,
        batch_size=batch_size,
        dataset_size=dataset_size,
        neighbours=neighbours,
        sampler="balls-and-bins" if sampler == "balls-and-bins" else "shuffle",
    )
    noise: dict[str, Any] = {"cut": cut, "dimension": dimension, "truncation": truncation}
    evaluations = 0

    def upper_eps(sigma: float) -> float:
        nonlocal evaluations
        evaluations += 1
        return shuffled_epochs_upper_epsilon(
            sigma,
            batch_size,
            dataset_size,
            epochs,
            delta,
            neighbours=neighbours,
            accuracy=accuracy,
            **noise,
        )

    if upper_eps(max_sigma) > epsilon:
        raise InfeasibleTargetError(
            f"no noise multiplier up to max_sigma={max_sigma!r} is certified to meet "
            f"epsilon={epsilon!r} at delta={delta!r} for {epochs} {sampler} epochs "
            f"({neighbours}): raise max_sigma"
        )
    low, high = _bracket(upper_eps, epsilon, delta, epochs, template, max_sigma)
    while high / low - 1.0 > tolerance:
        middle = math.sqrt(low * high)
        if upper_eps(middle) <= epsilon:
            high = middle
        else:
            low = middle
    bounds = shuffled_epochs_epsilon(
        high,
        batch_size,
        dataset_size,
        epochs,
        delta,
        neighbours=neighbours,
        sampler=sampler,
        intervals=intervals,
        accuracy=accuracy,
        **noise,
    )
    subject = f"the Poisson accountant's sigma (poisson_sigma, not a bound for {sampler} epochs)"
    with warnings_said_of(subject):
        poisson_sigma = calibrate_noise_multiplier(
            epsilon=epsilon,
            delta=delta,
            sampling_rate=template.poisson_twin.sampling_rate,
            steps=bounds.steps,
            tolerance=tolerance,
            **noise,
        ).sigma
    return SamplerCalibration(
        sigma=high,
        sigma_low=low,
        epsilon=epsilon,
        delta=delta,
        upper=bounds.upper,
        lower=bounds.lower,
        poisson=bounds.poisson,
        poisson_sigma=float(poisson_sigma),
        epochs=epochs,
        steps=bounds.steps,
        batches_per_epoch=bounds.batches_per_epoch,
        sampler=sampler,
        neighbours=neighbours,
        evaluations=evaluations,
        batch_size=batch_size,
        dataset_size=dataset_size,
        tolerance=tolerance,
        cut=bounds.cut,
        dimension=bounds.dimension,
        truncation=bounds.truncation,
    )


def _bracket(upper_eps, epsilon, delta, epochs, template, max_sigma) -> tuple[float, float]:
    """``(low, high)``: ``upper_eps(low) > epsilon >= upper_eps(high)``, ``high <= max_sigma``,
    starting from the Gaussian-DP guess ``mu = s sqrt(E) / sigma`` with
    ``eps = mu^2 / 2 + mu sqrt(2 ln(1 / delta))``."""
    root = math.sqrt(2.0 * math.log(1.0 / delta))
    mu = -root + math.sqrt(root * root + 2.0 * epsilon)
    sensitivity = 2.0 if template.neighbours == "replace-one" else 1.0
    guess = min(max_sigma, sensitivity * math.sqrt(epochs) / mu)
    high = guess
    while upper_eps(high) > epsilon:
        high = min(max_sigma, high * _START_SPAN)
    low = high / _START_SPAN
    while upper_eps(low) <= epsilon:
        high, low = low, low / _START_SPAN
    return low, high
