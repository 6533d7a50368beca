"""noise_bound: the accountant's values, and gradients that are directional derivatives
of the value with respect to the noise pmf."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import ExtendedMA, WorstCasePair, noise
from accountant.errors import InvalidInputError
from accountant.learning.smooth_loss import smooth_bucket_delta
from accountant.learning.training_losses import noise_bound
from accountant.pairs.pair_maps import pair_map


def _asymmetric_pmf() -> np.ndarray:
    rng = np.random.default_rng(3)
    values = rng.random(11) + 0.1
    return values / values.sum()


def test_values_are_the_accountants():
    p = noise.truncated_gaussian(1.5, 3.0, 0.5)
    pair = WorstCasePair.additive(p, 1.0)
    mapping = pair_map(0.5, 1.0)
    ma = noise_bound(p.pmf, 0.5, mapping, bound="MA", epsilon=0.5, times=8)
    assert ma.value == pytest.approx(ExtendedMA().compose(pair, 8).delta(0.5).upper, rel=1e-14)
    adp = noise_bound(p, 0.5, mapping, bound="ADP", epsilon=0.5, times=8)
    assert adp.value == smooth_bucket_delta(pair, 0.5, 8).delta


@pytest.mark.parametrize("bound", ["ADP", "PDP", "MA"])
@pytest.mark.parametrize("q", [None, 0.2])
def test_gradient_is_the_directional_derivative(bound, q):
    pmf = _asymmetric_pmf()
    mapping = pair_map(0.5, 1.0, q)
    options = {"bound": bound, "epsilon": 0.4, "times": 3, "width": 0.0071}
    if bound == "MA":
        del options["width"]
    result = noise_bound(pmf, 0.5, mapping, **options)
    rng = np.random.default_rng(5)
    for _ in range(3):
        direction = rng.standard_normal(pmf.size)
        direction -= direction.mean()  # stay on the simplex
        h = 1e-7
        up = noise_bound(pmf + h * direction, 0.5, mapping, **options).value
        down = noise_bound(pmf - h * direction, 0.5, mapping, **options).value
        numeric = (up - down) / (2 * h)
        assert result.gradient @ direction == pytest.approx(numeric, rel=1e-5, abs=1e-8)


def test_bad_input():
    pmf = _asymmetric_pmf()
    with pytest.raises(InvalidInputError, match="bound"):
        noise_bound(pmf, 0.5, pair_map(0.5, 1.0), bound="RDP", epsilon=0.3, times=1)
    with pytest.raises(InvalidInputError, match="pair_map"):
        noise_bound(pmf, 0.5, "additive", bound="MA", epsilon=0.3, times=1)
    with pytest.raises(InvalidInputError, match="pmf"):
        noise_bound(pmf * 2, 0.5, pair_map(0.5, 1.0), bound="ADP", epsilon=0.3, times=1)
    with pytest.raises(InvalidInputError, match="direction"):
        noise_bound(pmf, 0.5, pair_map(0.5, 1.0), bound="ADP", epsilon=0.3, times=1, direction="x")
