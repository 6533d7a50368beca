"""The subsampled truncated Gaussian as a log-moment source: closed forms and quadrature
against mpmath (``tests/dpsgd_reference.py``), reductions to the additive mechanisms, the
grid pair, and the Extended MA against the certified PrivacyBuckets lower bound."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accountant import ExtendedMA, PrivacyBuckets, exact_delta, mechanisms
from accountant.errors import InvalidInputError
from accountant.mechanisms import GaussianMechanism, TruncatedGaussianMechanism
from accountant.mechanisms.subsampled_gaussian import (
    DISTINGUISHING_RELATIVE_ERROR,
    SubsampledTruncatedGaussian,
)
from tests import dpsgd_reference as ref

S = SubsampledTruncatedGaussian
DIRECTIONS = ("A/B", "B/A")

#: DP-SGD settings (the issue's), small cuts where the atoms and omega are large, a clamped
#: cut, no cut, q = 1, and small sigma where the B/A integrand has two peaks.
MECHANISMS = [
    S(sigma=1.1, sampling_rate=0.004, cut=8.0),
    S(sigma=0.8, sampling_rate=0.3, cut=3.0, truncation="clamped"),
    S(sigma=2.0, sampling_rate=0.05, cut=1.5),
    S(sigma=1.0, sampling_rate=0.5, cut=math.inf),
    S(sigma=1.5, sampling_rate=1.0, cut=2.5),
    S(sigma=0.5, sampling_rate=0.01, cut=6.0),
    S(sigma=0.3, sampling_rate=0.1, cut=10.0, truncation="clamped"),
]
IDS = [m.description for m in MECHANISMS]


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_distinguishing_mass_matches_mpmath(mechanism, direction):
    atom = ref.parts(mechanism)[4]  # the A-mass where b = (1 - q) a, or the B-only atom
    if atom > 0:
        geometry = mechanism.geometry
        assert abs(math.exp(geometry.log_atom) - atom) <= geometry.atom_error * atom
        assert geometry.atom_error < 1e-11
    exact = ref.omega(mechanism, direction)
    value = mechanism.distinguishing_mass(direction)
    assert abs(value - exact) <= 1e-3 * DISTINGUISHING_RELATIVE_ERROR * exact
    logs = mechanism.mass_logs(direction)
    assert logs.total.low == logs.total.high == 0.0  # a probability measure: S = 1 exactly
    low, high = logs.finite_fraction.low, logs.finite_fraction.high
    assert low <= float(mp.log(1 - exact)) <= high


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_max_finite_loss_is_a_tight_upper_bound(mechanism, direction):
    exact = ref.sup_loss(mechanism, direction)
    bound = mechanism.max_finite_loss(direction)
    if mp.isinf(exact):
        assert bound == math.inf
    else:
        assert exact <= bound <= exact * (1 + 1e-13) + 1e-15


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lam", [0.0, 0.5, 4.0, 60.0])
def test_log_moment_within_its_stated_error_of_mpmath(mechanism, direction, lam):
    exact = ref.log_moment(mechanism, lam, direction)
    value = mechanism.log_moment(lam, direction)
    error = mechanism.log_moment_error(lam, direction)
    assert abs(value - exact) <= error
    assert error <= 1e-10 * max(1.0, abs(value))  # the stated error is small, not vacuous


@pytest.mark.parametrize("mechanism", MECHANISMS[:4], ids=IDS[:4])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_slope_is_the_derivative(mechanism, direction):
    for lam in (0.3, 5.0):
        step = 1e-4 * lam
        difference = (
            mechanism.log_moment(lam + step, direction)
            - mechanism.log_moment(lam - step, direction)
        ) / (2 * step)
        slope = mechanism.log_moment_slope(lam, direction)
        assert slope == pytest.approx(difference, rel=1e-6, abs=1e-12)
        assert slope <= mechanism.max_finite_loss(direction)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_huge_orders_stay_finite_and_below_lambda_times_sup_loss(direction):
    mechanism = S(sigma=1.1, sampling_rate=0.004, cut=8.0)
    top = mechanism.max_finite_loss(direction)
    for lam in (1e3, 1e6, 1e9, 1e12):
        gamma = mechanism.log_moment(lam, direction)
        assert math.isfinite(gamma) and math.isfinite(mechanism.log_moment_error(lam, direction))
        assert gamma <= lam * top + mechanism.log_moment_error(lam, direction)


def test_sampling_rate_one_is_the_truncated_gaussian_mechanism():
    subsampled = S(sigma=1.5, sampling_rate=1.0, cut=2.5)
    additive = TruncatedGaussianMechanism(sigma=1.5, bound=2.5 * 1.5, sensitivity=1.0)
    for direction in DIRECTIONS:
        assert subsampled.distinguishing_mass(direction) == pytest.approx(
            additive.distinguishing_mass(direction), rel=1e-13
        )
        assert subsampled.max_finite_loss(direction) == pytest.approx(
            additive.max_finite_loss(direction), rel=1e-13
        )
        for lam in (0.0, 0.7, 9.0, 150.0):
            assert subsampled.log_moment(lam, direction) == pytest.approx(
                additive.log_moment(lam, direction), rel=1e-12, abs=1e-14
            )


def test_sampling_rate_one_without_cut_is_the_gaussian_mechanism():
    subsampled = S(sigma=2.0, sampling_rate=1.0, cut=math.inf)
    gaussian = GaussianMechanism(sigma=2.0)
    for direction in DIRECTIONS:
        assert subsampled.distinguishing_mass(direction) == 0.0
        assert subsampled.max_finite_loss(direction) == math.inf
        for lam in (0.5, 3.0, 40.0):
            assert subsampled.log_moment(lam, direction) == pytest.approx(
                gaussian.log_moment(lam, direction), rel=1e-13
            )


def test_resampled_is_the_renormalised_law():
    renormalised = S(sigma=0.9, sampling_rate=0.2, cut=3.0)
    resampled = S(sigma=0.9, sampling_rate=0.2, cut=3.0, truncation="resampled")
    clamped = S(sigma=0.9, sampling_rate=0.2, cut=3.0, truncation="clamped")
    for direction in DIRECTIONS:
        assert resampled.log_moment(2.0, direction) == renormalised.log_moment(2.0, direction)
        assert resampled.distinguishing_mass(direction) == renormalised.distinguishing_mass(
            direction
        )
    # the clamped law is a different one: more B-only mass (the atoms at 1 - r and 1 + r)
    assert clamped.distinguishing_mass("B/A") > renormalised.distinguishing_mass("B/A")


def test_a_larger_cut_approaches_the_uncut_mechanism():
    uncut = S(sigma=1.1, sampling_rate=0.004, cut=math.inf)
    for direction in DIRECTIONS:
        gaps = [
            abs(
                S(sigma=1.1, sampling_rate=0.004, cut=k).log_moment(8.0, direction)
                - uncut.log_moment(8.0, direction)
            )
            for k in (4.0, 6.0, 8.0)
        ]
        assert gaps[0] > gaps[1] > gaps[2]
        assert gaps[2] < 1e-7


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"sigma": 0.0}, "sigma"),
        ({"sigma": -1.0}, "sigma"),
        ({"sampling_rate": 0.0}, "sampling_rate"),
        ({"sampling_rate": 1.0000001}, "sampling_rate"),
        ({"cut": 0.0}, "cut"),
        ({"cut": -math.inf}, "cut"),
        ({"cut": 0.5, "sigma": 1.0}, "cut"),  # cut * sigma = 1/2: no overlap
        ({"truncation": "renormalized"}, "truncation"),
        ({"clip": math.inf}, "clip"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(arguments, name):
    full = {"sigma": 1.1, "sampling_rate": 0.004, "cut": 8.0} | arguments
    with pytest.raises(InvalidInputError, match=rf"\b{name}\b"):
        S(**full)


def test_arguments_are_keyword_only_and_public_in_mechanisms():
    with pytest.raises(TypeError):
        S(1.1, 0.004, 8.0)  # sigma, q and k are too easily swapped
    assert mechanisms.SubsampledTruncatedGaussian is S
    assert "sampling_rate" not in S(sigma=1.1, sampling_rate=0.004, cut=8.0).description
    assert "q=0.004" in S(sigma=1.1, sampling_rate=0.004, cut=8.0).description


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_grid_pair_approaches_the_continuous_delta(truncation):
    mechanism = S(sigma=1.0, sampling_rate=0.2, cut=3.0, truncation=truncation, clip=1.0)
    for direction in DIRECTIONS:
        exact = float(ref.exact_delta(mechanism, 0.1, direction))
        coarse, fine = (
            exact_delta(mechanism.pair(step), 0.1, direction=direction) for step in (0.02, 0.005)
        )
        assert abs(fine - exact) < abs(coarse - exact) or abs(fine - exact) < 1e-6
        assert fine == pytest.approx(exact, rel=2e-3)
    pair = mechanism.pair(0.01)
    atoms = 4 if truncation == "clamped" else 0  # clamped: the atoms are outcomes of their own
    assert pair.a.size == pair.b.size == 601 + 100 + atoms
    if truncation == "clamped":  # B alone at 1 - r and 1 + r: q Phi(-3) each
        tail = 0.5 * math.erfc(3.0 / math.sqrt(2.0))
        np.testing.assert_allclose(pair.a[-4:], [tail, tail, 0.0, 0.0], rtol=1e-14)
        np.testing.assert_allclose(pair.b[-2:], [0.2 * tail, 0.2 * tail], rtol=1e-14)


@pytest.mark.parametrize("truncation", ["renormalised", "clamped"])
def test_extended_ma_is_above_the_certified_lower_bound(truncation):
    mechanism = S(sigma=0.9, sampling_rate=0.05, cut=4.0, truncation=truncation)
    eps = np.array([0.2, 0.5, 1.0, 2.0])
    moments = ExtendedMA().compose(mechanism, times=40).delta(eps).upper
    buckets = PrivacyBuckets(accuracy=1e-3).compose(mechanism, times=40).delta(eps)
    assert np.all(moments >= buckets.lower)
    assert np.all(buckets.lower <= buckets.upper)


def test_quadrature_stops_at_the_rounding_of_huge_exponents():
    """No cut, tiny q, B/A: ``v`` reaches ~1e11 for the orders the lambda search tries, so
    its rounding (~1e-5 relative) is what the quadrature can reach; it stops there and says
    so instead of halving panels without end (this ran out of memory)."""
    mechanism = S(sigma=1.7358718513630675, sampling_rate=1e-4, cut=math.inf)
    for lam in (1e3, 1e6, 1e9):
        gamma = mechanism.log_moment(lam, "B/A")
        error = mechanism.log_moment_error(lam, "B/A")
        assert math.isfinite(gamma) and 0.0 < error < 1e-9 * abs(gamma)
    delta = ExtendedMA().compose(mechanism, times=1).delta(1e-4, "B/A").upper
    assert 0.0 < delta < 1.0
