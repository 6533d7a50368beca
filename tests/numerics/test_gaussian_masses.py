"""``numerics.gaussian``: the scalar ``ln(Phi(hi) - Phi(lo))`` against mpmath and against the
vectorised routine, for half-lines, whole lines, narrow and wide intervals, deep tails."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.numerics.gaussian import (
    log_normal_between,
    log_normal_between_scalar,
    normal_mass_between,
)

mp.mp.dps = 60

ENDS = st.one_of(
    st.floats(min_value=-40.0, max_value=40.0, allow_nan=False),
    st.sampled_from([-math.inf, math.inf, 0.0, -1e-300, 5e-324]),
)


def _exact_log(lo: float, hi: float) -> mp.mpf:
    """``ln(Phi(hi) - Phi(lo))`` in 60 digits."""

    def cdf(x: float) -> mp.mpf:
        if math.isinf(x):
            return mp.mpf(0 if x < 0 else 1)
        return mp.ncdf(mp.mpf(x))

    if math.isfinite(lo) and math.isfinite(hi) and hi - lo < 1e-3:  # no cancellation
        return mp.log(mp.quad(mp.npdf, [mp.mpf(lo), mp.mpf(hi)]))
    if lo >= 0.0 and math.isfinite(lo):  # upper tails: no cancellation in erfc
        lower = mp.erfc(mp.mpf(lo) / mp.sqrt(2)) / 2
        upper = 0 if math.isinf(hi) else mp.erfc(mp.mpf(hi) / mp.sqrt(2)) / 2
        return mp.log(lower - upper)
    return mp.log(cdf(hi) - cdf(lo))


@settings(max_examples=400, deadline=None)
@given(ENDS, ENDS)
def test_scalar_matches_mpmath_and_the_vector_routine(a, b):
    lo, hi = min(a, b), max(a, b)
    got = log_normal_between_scalar(lo, hi)
    vector = float(log_normal_between(np.array([lo]), np.array([hi]))[0])
    if not hi > lo:
        assert got == -math.inf and vector == -math.inf
        return
    exact = _exact_log(lo, hi)
    if exact == -mp.inf or exact < -700:  # below the float range of the mass itself
        return
    assert abs(got - float(exact)) <= 1e-12 * max(1.0, abs(float(exact)))
    assert abs(got - vector) <= 1e-12 * max(1.0, abs(vector))


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (-math.inf, math.inf, 1.0),
        (0.0, math.inf, 0.5),
        (-math.inf, 0.0, 0.5),
        (1.0, 1.0, 0.0),
        (2.0, 1.0, 0.0),
    ],
)
def test_normal_mass_between_exact_cases(lo, hi, expected):
    assert normal_mass_between(lo, hi) == pytest.approx(expected, rel=1e-15, abs=0.0)
