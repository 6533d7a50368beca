"""The Extended MA rounds up to the last bit (issue 11, item 12).

An upper bound is never below the exact delta, and is 0 only when the exact delta is 0.
The references compose the given floats exactly with mpmath.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accountant import ExtendedMA, WorstCasePair
from accountant.mechanisms import GaussianMechanism, TruncatedGaussianMechanism
from accountant.pairs.pld import privacy_loss_distribution

mpmath.mp.prec = 160


def _exact_adp(pair: WorstCasePair, eps: float, direction: str) -> mpmath.mpf:
    """``sum_o max(0, A(o) - e^eps B(o))`` of one release, exactly."""
    a, b = (pair.a, pair.b) if direction == "A/B" else (pair.b, pair.a)
    scale = mpmath.exp(mpmath.mpf(eps))
    return mpmath.fsum(
        max(mpmath.mpf(0), mpmath.mpf(x) - scale * mpmath.mpf(y)) for x, y in zip(a, b, strict=True)
    )


def test_an_underflowing_delta_is_not_reported_as_zero():
    # Gaussian, sigma 20, n = 64, eps = 20: the exact delta is about 1.9e-543, below the
    # smallest float; an upper bound must then be the smallest positive float, not 0.
    ma = ExtendedMA().compose(GaussianMechanism(sigma=20.0), 64)
    assert 0.0 < ma.delta(20.0).upper <= 4 * math.ulp(0.0)


def test_zero_only_when_the_exact_delta_is_zero():
    pair = WorstCasePair.from_arrays([0.25, 0.5, 0.25], [0.2, 0.5, 0.3])
    ma = ExtendedMA().compose(pair, 3)
    top = 3 * math.log(0.25 / 0.2)
    assert ma.delta(2 * top).upper == 0.0  # every composed loss is far below eps
    assert ma.delta(top * (1 - 1e-9)).upper > 0.0


@st.composite
def _small_pairs(draw) -> WorstCasePair:
    size = draw(st.integers(2, 5))
    raw_a = draw(st.lists(st.floats(1e-6, 1.0), min_size=size, max_size=size))
    raw_b = draw(st.lists(st.floats(1e-6, 1.0), min_size=size, max_size=size))
    a = np.array(raw_a) / math.fsum(raw_a)
    b = np.array(raw_b) / math.fsum(raw_b)
    return WorstCasePair.from_arrays(a, b)


@settings(max_examples=200, deadline=None)
@given(pair=_small_pairs(), conversion=st.sampled_from(["tight", "paper"]))
def test_at_the_largest_computed_loss_the_bound_stays_above_the_exact_delta(pair, conversion):
    """eps = the largest loss as computed (``ln A - ln B`` in floats, possibly an ulp
    below the true one): the exact delta may be ~1e-17 > 0 and the bound must cover it."""
    ma = ExtendedMA(conversion=conversion).compose(pair, 1)
    for direction in ("A/B", "B/A"):
        eps = privacy_loss_distribution(pair, direction).max_finite_loss
        if eps < 0.0:
            continue
        exact = _exact_adp(pair, eps, direction)
        bound = ma.delta(eps, direction).upper
        assert bound >= exact
        assert bound > 0.0 or exact == 0


@settings(max_examples=200, deadline=None)
@given(
    omega=st.floats(1e-300, 0.5),
    times=st.integers(1, 10**6),
    conversion=st.sampled_from(["tight", "paper"]),
)
@example(omega=5e-324 * 3, times=1000, conversion="tight")  # subnormal
@example(omega=1e-17, times=7, conversion="paper")
def test_only_distinguishing_mass_left_is_never_rounded_down(omega, times, conversion):
    """Past every finite loss, delta is the composed distinguishing mass ``S^n - F^n``
    (``1 - (1 - w)^n`` here); a plain float evaluation lands an ulp low in about a third
    of such cases."""
    pair = WorstCasePair.from_arrays([omega, 1.0 - omega, 0.0], [0.0, 1.0 - omega, omega])
    ma = ExtendedMA(conversion=conversion).compose(pair, times)
    with mpmath.workprec(4000):  # 1 + 1e-300 exactly, and its millionth power
        total = mpmath.mpf(omega) + mpmath.mpf(1.0 - omega)
        exact = total**times - mpmath.mpf(1.0 - omega) ** times
    for direction in ("A/B", "B/A", "max"):
        assert ma.delta(1.0, direction).upper >= exact


def test_truncated_gaussian_mechanism_bound_covers_its_declared_errors():
    # the analytic path: omega with its declared relative error, Gamma with its own
    mechanism = TruncatedGaussianMechanism(sigma=1.0, bound=3.0)
    ma = ExtendedMA().compose(mechanism, 1000)
    omega_high = mpmath.mpf(mechanism.distinguishing_mass("A/B")) * (1 + mpmath.mpf(1e-10))
    assert ma.delta(1e3).upper >= 1 - (1 - omega_high) ** 1000
