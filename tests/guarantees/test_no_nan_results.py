"""No NaN result anywhere: valid but awkward inputs (huge eps, masses near the smallest
float) give finite numbers, in the library and through the torch wrappers."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from accountant import (
    CertificationWarning,
    ExtendedMA,
    PrivacyBuckets,
    WorstCasePair,
    certify,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    kl_divergence,
    mechanisms,
    noise,
    noise_bound,
    pair_map,
)

try:
    import torch

    from optimizers import buckets_delta, extended_ma_delta
except ImportError:  # pragma: no cover - the [torch] extra is missing
    torch = None


from tests.bad_inputs.catalogue import (
    PAIR,
    PM,
    _certify,
    _noise_bound,
    _optimal,
    _smooth,
)

# ---------------------------------------------------------------------------------------
# no NaN result anywhere: valid but awkward inputs give finite numbers

TINY = np.array([5e-324, 1e-300, 1e-200, 0.25, 0.5, 0.25, 1e-200, 1e-300, 5e-324])
TINY[4] = 1.0 - math.fsum(np.delete(TINY, 4).tolist())
TINY_NOISE = noise.from_array(TINY, 0.5)  # symmetric, monotone, masses down to 5e-324
TINY_PAIR = WorstCasePair.additive(TINY_NOISE, 0.5)
SPIKE_PAIR = WorstCasePair.from_arrays([1.0 - 2e-300, 1e-300, 1e-300], [1e-300, 1e-300, 1 - 2e-300])

AWKWARD = {
    "exact_delta-eps-1e300": lambda: exact_delta(PAIR, 1e300),
    "exact_delta_pdp-eps-max-float": lambda: exact_delta_pdp(PAIR, 1.7e308),
    "exact_epsilon-delta-near-1": lambda: exact_epsilon(TINY_PAIR, 1.0 - 1e-16),
    "ExtendedMA-delta-eps-1e300": lambda: ExtendedMA().compose(PAIR, 10).delta(1e300).upper,
    "ExtendedMA-tiny-masses": lambda: ExtendedMA().compose(TINY_PAIR, 1000).delta([0.0, 1.0]).upper,
    "ExtendedMA-spike-epsilon": lambda: ExtendedMA().compose(SPIKE_PAIR, 5).epsilon(0.999999).upper,
    "ExtendedMA-gradient-tiny": lambda: (
        ExtendedMA().compose(TINY_PAIR, 5).delta_and_gradient(0.5).gradients[0][0].b
    ),
    "ExtendedMA-Gaussian-1e15-releases": lambda: (
        ExtendedMA().compose(mechanisms.GaussianMechanism(1.0), 10**15).epsilon(0.5).upper
    ),
    "PrivacyBuckets-delta-eps-1e6": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2).compose(PAIR, 10).delta([1e6, 1e300])
    ),
    "PrivacyBuckets-tiny-masses": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2).compose(TINY_PAIR, 100).delta(0.5)
    ),
    "PrivacyBuckets-mechanism-eps-1e300": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2)
        .compose(mechanisms.TruncatedLaplaceMechanism(1.0, 3.0), 10)
        .delta_pdp(1e300)
    ),
    "certify-eps-1e300": lambda: _certify(epsilon=1e300).delta_upper,
    "certify-tiny-masses": lambda: certify(TINY_NOISE, PM, epsilon=0.5, times=4).delta_upper,
    "smooth_bucket_delta-eps-1e-300": lambda: _smooth(epsilon=1e-300, times=10).gradient_a,
    "smooth_bucket_delta-eps-max-float": lambda: _smooth(epsilon=1.7e308).delta,
    "smooth_bucket_delta-tiny-masses": lambda: _smooth(pair=TINY_PAIR, times=100).gradient_b,
    "noise_bound-MA-tiny-q": lambda: (
        noise_bound(
            TINY_NOISE, 0.5, pair_map(0.5, 0.5, 1e-3), bound="MA", epsilon=0.5, times=4
        ).gradient
    ),
    "noise_bound-PDP-eps-1e300": lambda: _noise_bound(bound="PDP", epsilon=1e300).gradient,
    "kl_divergence-subnormal": lambda: kl_divergence(TINY_NOISE, TINY_NOISE),
    "truncated_gaussian-sigma-1e-300": lambda: noise.truncated_gaussian(1e-300, 3.0, 1.0).pmf,
    "truncated_gaussian-sigma-1e300": lambda: noise.truncated_gaussian(1e300, 3.0, 1.0).pmf,
    "truncated_laplace-scale-1e-300": lambda: noise.truncated_laplace(1e-300, 3.0, 1.0).pmf,
    "staircase-eps-1e6": lambda: noise.staircase(1.0, 1e6, 3.0, 1.0).pmf,
    "TruncatedGaussianMechanism-lam-1e6": lambda: mechanisms.TruncatedGaussianMechanism(
        1e-3, 3.0
    ).log_moment(1e6, "A/B"),
    "optimal_noise-eps-30": lambda: _optimal(epsilon=30.0, delta=0.5).noise.pmf,
}


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_awkward_but_valid_inputs_give_finite_results(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        result = AWKWARD[name]()
    values = np.asarray(result, dtype=np.float64)
    assert values.size > 0 and np.isfinite(values).all(), result


@pytest.mark.skipif(torch is None, reason="needs the [torch] extra")
@pytest.mark.parametrize("wrapper", ["extended_ma_delta", "buckets_delta"])
def test_torch_wrappers_give_finite_values_and_gradients_at_tiny_masses(wrapper):
    pmf = torch.tensor(TINY, dtype=torch.float64, requires_grad=True)
    function = extended_ma_delta if wrapper == "extended_ma_delta" else buckets_delta
    value = function(pmf, step=0.5, sensitivity=0.5, epsilon=0.5, times=8)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(pmf.grad).all()
