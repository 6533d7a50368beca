"""``calibrate_shuffled_noise_multiplier`` (issue 27): the noise multiplier of a shuffled,
balls-and-bins or fixed-order run certified to meet ``(eps, delta)``, checked against the
Gaussian's delta written out independently in mpmath (the dominating Gaussian of each epoch,
``mu = s sqrt(E) / sigma``), against ``shuffled_epochs_epsilon`` at the sigma found, and
against the Poisson calibration it reports beside it."""

from __future__ import annotations

import math

import mpmath
import pytest

from accountant import (
    PrivacyBuckets,
    calibrate_noise_multiplier,
    calibrate_shuffled_noise_multiplier,
    shuffled_epochs_epsilon,
)
from accountant.mechanisms import ShuffledEpoch

EPSILON, DELTA, BATCH, EXAMPLES, EPOCHS = 2.0, 1e-5, 16, 64, 3


def _gaussian_delta(mu: float, eps: float) -> mpmath.mpf:
    """ADP delta of N(mu, 1) against N(0, 1) at eps, in 60 digits."""
    with mpmath.workdps(60):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def _calibrate(**changes):
    values = {
        "epsilon": EPSILON,
        "delta": DELTA,
        "batch_size": BATCH,
        "dataset_size": EXAMPLES,
        "epochs": EPOCHS,
    }
    return calibrate_shuffled_noise_multiplier(**(values | changes))


@pytest.mark.parametrize(("neighbours", "sensitivity"), [("add-remove", 1), ("replace-one", 2)])
def test_sigma_meets_the_target_and_sigma_low_does_not(neighbours, sensitivity):
    found = _calibrate(neighbours=neighbours, tolerance=1e-4)
    assert found.sigma_low < found.sigma <= found.sigma_low * (1 + 1e-4)
    assert found.upper <= EPSILON
    # independently: the dominating Gaussian, E epochs of sensitivity s, at both ends
    mu = lambda sigma: sensitivity * math.sqrt(EPOCHS) / sigma  # noqa: E731
    assert _gaussian_delta(mu(found.sigma), EPSILON) <= DELTA
    assert _gaussian_delta(mu(found.sigma_low), EPSILON) > DELTA * (1 - 1e-9)
    assert found.neighbours == neighbours and found.epochs == EPOCHS
    assert found.steps == EPOCHS * math.ceil(EXAMPLES / BATCH) == EPOCHS * found.batches_per_epoch


def test_replace_one_needs_twice_the_noise():
    add_remove = _calibrate(tolerance=1e-4).sigma
    replace_one = _calibrate(neighbours="replace-one", tolerance=1e-4).sigma
    assert replace_one == pytest.approx(2 * add_remove, rel=2e-4)


def test_the_figures_beside_sigma_are_those_of_the_run_at_sigma():
    found = _calibrate()
    bounds = shuffled_epochs_epsilon(found.sigma, BATCH, EXAMPLES, EPOCHS, DELTA)
    assert (found.lower, found.upper, found.poisson) == (bounds.lower, bounds.upper, bounds.poisson)
    assert found.lower <= found.upper <= EPSILON
    # what a Poisson accountant calibrates for the same run: far less noise (not a bound)
    poisson = calibrate_noise_multiplier(
        epsilon=EPSILON,
        delta=DELTA,
        sampling_rate=BATCH / EXAMPLES,
        steps=found.steps,
        cut=math.inf,
    )
    assert found.poisson_sigma == pytest.approx(poisson.sigma, rel=2e-3)
    assert found.poisson_sigma < found.sigma


def test_fixed_order_epochs_are_the_dominating_gaussian_itself():
    """Same examples in the same batch every epoch: the bracket collapses onto the Gaussian."""
    fixed = _calibrate(sampler="fixed-order")
    shuffled = _calibrate()
    assert fixed.sigma == shuffled.sigma  # one dominating Gaussian for every sampler
    assert fixed.upper - fixed.lower <= 1e-9 * fixed.upper
    assert shuffled.lower < fixed.lower
    epoch = ShuffledEpoch(sigma=fixed.sigma, batch_size=BATCH, dataset_size=EXAMPLES)
    gaussian = PrivacyBuckets().compose(epoch.dominating_mechanism, times=EPOCHS).epsilon(DELTA)
    assert (fixed.lower, fixed.upper) == (float(gaussian.lower), float(gaussian.upper))
