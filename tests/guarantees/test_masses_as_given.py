"""Masses are accounted exactly as given (issue 11, item 11).

A pmf may sum to 1 only up to the validation tolerance (1e-9). Every path composes the
arrays as they are: ``n`` releases of a pair whose A-side sums to ``S`` with finite part
``F`` have total mass ``S^n``, distinguishing mass ``S^n - F^n`` (not ``1 - (1 - omega)^n``),
and the finite outcomes of the product measure. The references here compose the given
floats exactly (mpmath, or enumeration), so any path that assumes a total of 1 fails.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, PrivacyBuckets, WorstCasePair, exact_delta
from accountant.errors import CertificationWarning
from tests import brute_force

mpmath.mp.prec = 200


def _one_finite_outcome_delta(a: list[float], b: list[float], times: int, eps: float) -> mpmath.mpf:
    """Exact ADP delta, direction A/B, of ``times`` releases of ``A = (d, x, 0)``,
    ``B = (0, y, z)``: ``S^n - x^n`` distinguishing, plus ``max(0, x^n - e^eps y^n)``."""
    d, x = (mpmath.mpf(v) for v in a[:2])
    y = mpmath.mpf(b[1])
    total = (d + x) ** times
    return total - x**times + max(mpmath.mpf(0), x**times - mpmath.exp(eps) * y**times)


ISSUE_A_ABOVE = [2.0**-20, 1.0 - 2.0**-20 + 2.0**-30, 0.0]  # sums to 1 + 2^-30
ISSUE_A_BELOW = [2.0**-20, 1.0 - 2.0**-20 - 2.0**-30, 0.0]  # sums to 1 - 2^-30
ISSUE_B = [0.0, 1.0 - 2.0**-20, 2.0**-20]


@pytest.mark.parametrize("a", [ISSUE_A_ABOVE, ISSUE_A_BELOW], ids=["above-1", "below-1"])
def test_the_issue_example_is_bracketed_at_a_hundred_thousand_releases(a):
    pair = WorstCasePair.from_arrays(a, ISSUE_B)
    times, eps = 100_000, 1.0
    exact = _one_finite_outcome_delta(a, ISSUE_B, times, eps)
    # the other direction: B's distinguishing outcome is outcome 2 (A = 0); its finite loss
    # ln(y / x) is negative, so delta_{B/A} = 1 - y^n exactly (B sums to 1)
    y = mpmath.mpf(ISSUE_B[1])
    other = (y + mpmath.mpf(ISSUE_B[2])) ** times - y**times
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        a_over_b = PrivacyBuckets().compose(pair, times).delta(eps, direction="A/B")
        both = PrivacyBuckets().compose(pair, times).delta(eps)
    assert a_over_b.lower <= exact <= a_over_b.upper
    assert both.lower <= max(exact, other) <= both.upper
    for conversion in ("tight", "paper"):
        moments = ExtendedMA(conversion=conversion).compose(pair, times)
        assert moments.delta(eps, "A/B").upper >= exact
        assert moments.delta(eps).upper >= max(exact, other)
    # the old rule, 1 - (1 - omega)^n, is ~1e-4 relative off here: the test can fail
    d, x = mpmath.mpf(a[0]), mpmath.mpf(a[1])
    distinguishing = (d + x) ** times - x**times
    naive = 1 - (1 - d) ** times
    assert abs(naive - distinguishing) > 1e-5 * distinguishing


def test_one_release_exact_delta_is_the_defining_sum_of_the_given_floats():
    pair = WorstCasePair.from_arrays(ISSUE_A_ABOVE, ISSUE_B)
    for eps in (0.0, 1e-9, 0.5):
        exact = _one_finite_outcome_delta(ISSUE_A_ABOVE, ISSUE_B, 1, eps)
        assert exact_delta(pair, eps, "A/B") == pytest.approx(float(exact), rel=4e-16)


def _perturbed(draw, size: int) -> np.ndarray:
    weights = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
    if weights.sum() <= 0.0:
        weights[0] = 1.0
    pmf = weights / weights.sum()
    # move the total off 1 by up to the validation tolerance, on either side
    pmf[int(np.argmax(pmf))] += draw(st.sampled_from([-8e-10, -3e-10, 3e-10, 8e-10]))
    return pmf


@st.composite
def _pairs_off_one(draw) -> WorstCasePair:
    size = draw(st.integers(2, 4))
    # outcome 0 only under A, the last only under B: distinguishing events both ways
    a = np.append(_perturbed(draw, size), 0.0)
    b = np.insert(_perturbed(draw, size), 0, 0.0)
    return WorstCasePair.from_arrays(a, b)


@settings(max_examples=40, deadline=None)
@given(pair=_pairs_off_one(), times=st.integers(1, 5), eps=st.floats(0.0, 3.0))
def test_every_path_brackets_the_exact_composition_of_the_arrays_as_given(pair, times, eps):
    """Totals off 1 by up to 8e-10: S^n - (S - omega)^n differs from 1 - (1 - omega)^n by
    ~n 1e-9 relative, far above the 1e-12 slack of the float enumeration below."""
    parts = [(pair.a, pair.b, times)]
    exact = {d: brute_force.composed_adp_delta(parts, eps, d) for d in ("A/B", "B/A")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        accountant = PrivacyBuckets().compose(pair, times)
        for direction, value in exact.items():
            bounds = accountant.delta(eps, direction=direction)
            assert bounds.lower <= value * (1 + 1e-12) + 1e-300
            assert bounds.upper >= value * (1 - 1e-12)
    for conversion in ("tight", "paper"):
        moments = ExtendedMA(conversion=conversion).compose(pair, times)
        for direction, value in exact.items():
            assert moments.delta(eps, direction).upper >= value * (1 - 1e-12)
    if times == 1:
        for direction, value in exact.items():
            assert exact_delta(pair, eps, direction) == pytest.approx(value, rel=1e-12, abs=0)


def test_a_family_sums_to_at_most_one_within_a_few_ulps():
    from accountant import noise

    w3 = noise.truncated_gaussian(100.0, 500.0, 1.0 / 60.0)  # 60,001 points
    ratios = np.log(w3.pmf[1:] / w3.pmf[:-1])  # a lattice of losses: evenly spaced
    assert np.abs(np.diff(ratios) - np.diff(ratios).mean()).max() < 1e-13
    for pmf in (
        w3.pmf,
        noise.truncated_gaussian(1.0, 5.0, 0.5).pmf,
        noise.truncated_laplace(1000.0, 30000.0, 1.0).pmf,
        noise.staircase(1.0, 0.3, 5.0, 0.01).pmf,
        noise.uniform(7.0, 0.5).pmf,
    ):
        excess = math.fsum([*pmf.tolist(), -1.0])  # the exact sum minus 1, correctly rounded
        assert -1e-15 <= excess <= 0.0
