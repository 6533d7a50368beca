"""PrivacyBuckets composes analytic mechanisms through the dominating lattice split from
``ROUNDING_RELEASES`` releases on, and the certified brackets hold: the Gaussian mechanism
against its closed form (``n`` Gaussians of ``mu`` compose to one of ``mu sqrt(n)``) up to
``10^6`` releases, and the subsampled truncated Gaussian against the independent certified
bracket of interval bucketing (the true delta lies in both, so they must meet)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accountant import PrivacyBuckets, mechanisms
from accountant.buckets import engine

# Brackets that miss the requested accuracy warn; they must still be certified.
pytestmark = pytest.mark.filterwarnings("ignore::accountant.errors.CertificationWarning")

ROUNDED = {
    "gaussian": mechanisms.GaussianMechanism(sigma=20.0, sensitivity=1.0),
    "truncated": mechanisms.TruncatedGaussianMechanism(sigma=20.0, sensitivity=1.0, bound=100.0),
    "subsampled": mechanisms.SubsampledTruncatedGaussian(sigma=1.1, sampling_rate=0.004, cut=8.0),
    "clamped": mechanisms.SubsampledTruncatedGaussian(
        sigma=1.1, sampling_rate=0.004, cut=8.0, truncation="clamped"
    ),
    "laplace": mechanisms.LaplaceMechanism(scale=20.0, sensitivity=1.0),
    "truncated laplace": mechanisms.TruncatedLaplaceMechanism(
        scale=20.0, bound=60.0, sensitivity=1.0
    ),
}


@pytest.mark.parametrize("name", sorted(ROUNDED))
def test_analytic_mechanisms_take_the_lattice_path(name):
    smooth = getattr(
        PrivacyBuckets().compose(ROUNDED[name]).components[0].source, "smooth_losses", False
    )
    threshold = engine.SMOOTH_ROUNDING_RELEASES if smooth else engine.ROUNDING_RELEASES
    many = PrivacyBuckets().compose(ROUNDED[name], threshold)
    few = PrivacyBuckets().compose(ROUNDED[name], threshold - 1)
    for direction in ("A/B", "B/A"):
        assert many._rounds(many._start(direction))
        assert not few._rounds(few._start(direction))


def gaussian_delta(eps: float, mu: float) -> float:
    """``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` at 40 digits."""
    mp.mp.dps = 40
    eps, mu = mp.mpf(eps), mp.mpf(mu)
    return float(mp.ncdf(-eps / mu + mu / 2) - mp.e**eps * mp.ncdf(-eps / mu - mu / 2))


EPSILONS = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 5.0])


def _allowed(releases: int) -> float:
    """Relative delta bracket asked of the closed-form comparison: 1% up to 10^4 releases;
    from 10^5 on the memory budget keeps the width, and the second-order correction at
    delta ~ 3e-10 measures 1.06% at 10^5 and up to 11% at 10^6."""
    if releases < 10**5:
        return 1e-2
    return 2e-2 if releases < 10**6 else 0.2


@pytest.mark.parametrize(
    "releases",
    [100, *(pytest.param(n, marks=pytest.mark.slow) for n in (1000, 100_000, 10**6))],
)
@pytest.mark.parametrize("total_mu", [0.5, 1.5])
def test_gaussian_composition_brackets_its_closed_form(releases, total_mu):
    m = mechanisms.GaussianMechanism(sigma=math.sqrt(releases) / total_mu, sensitivity=1.0)
    pb = PrivacyBuckets().compose(m, releases)
    assert pb._rounds(pb._start("A/B"))
    exact = np.array([gaussian_delta(e, total_mu) for e in EPSILONS])
    for direction in ("A/B", "B/A", "max"):
        bounds = pb.delta(EPSILONS, direction=direction)
        assert np.all(bounds.lower <= exact), (direction, bounds.lower - exact)
        assert np.all(exact <= bounds.upper), (direction, bounds.upper - exact)
        # not vacuous where delta is not far below the tail mass and round-off (at 10^6
        # releases the memory budget keeps the width, and so the second-order terms, larger)
        sizeable = exact > 1e-12
        width = (bounds.upper - bounds.lower)[sizeable]
        assert np.all(width <= _allowed(releases) * exact[sizeable])


@pytest.mark.slow
@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
@pytest.mark.parametrize("direction", ["A/B", "B/A"])
def test_subsampled_composition_meets_interval_bucketing(truncation, direction, monkeypatch):
    """200 releases of q = 0.5, sigma = 1, cut at 3 sigma: the rounded bracket (narrow:
    relative width below 1e-3) and the bracket of interval bucketing must intersect at every
    eps (deltas from 0.9 down to 1e-6 in A/B)."""
    m = mechanisms.SubsampledTruncatedGaussian(
        sigma=1.0, sampling_rate=0.5, cut=3.0, truncation=truncation
    )
    eps = np.array([2.0, 10.0, 20.0, 30.0, 40.0, 50.0])
    rounded = PrivacyBuckets().compose(m, 200)
    assert rounded._rounds(rounded._start(direction))
    fine = rounded.delta(eps, direction=direction)
    assert np.all(fine.upper - fine.lower <= 1e-3 * fine.upper)
    monkeypatch.setattr(engine, "ROUNDING_RELEASES", None)
    bucketed = PrivacyBuckets(accuracy=1e-3).compose(m, 200)
    assert not bucketed._rounds(bucketed._start(direction))
    coarse = bucketed.delta(eps, direction=direction)
    assert np.all(fine.lower <= coarse.upper), fine.lower - coarse.upper
    assert np.all(coarse.lower <= fine.upper), coarse.lower - fine.upper


@pytest.mark.parametrize(
    "mechanism",
    [
        mechanisms.LaplaceMechanism(scale=10.0, sensitivity=1.0),
        mechanisms.TruncatedLaplaceMechanism(scale=10.0, bound=40.0, sensitivity=1.0),
    ],
    ids=["laplace", "truncated"],
)
def test_laplace_composition_meets_interval_bucketing(mechanism, monkeypatch):
    """500 Laplace releases: the rounded bracket (relative width below 1e-3) and the bracket
    of interval bucketing intersect at every eps."""
    eps = np.array([0.5, 2.0, 5.0, 8.0])
    rounded = PrivacyBuckets().compose(mechanism, 500)
    assert rounded._rounds(rounded._start("A/B"))
    fine = rounded.delta(eps)
    assert np.all(fine.upper - fine.lower <= 1e-3 * fine.upper)
    monkeypatch.setattr(engine, "ROUNDING_RELEASES", None)
    coarse = PrivacyBuckets(accuracy=1e-3).compose(mechanism, 500).delta(eps)
    assert np.all(fine.lower <= coarse.upper), fine.lower - coarse.upper
    assert np.all(coarse.lower <= fine.upper), coarse.lower - fine.upper
