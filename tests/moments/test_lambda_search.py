"""Direct tests of the moment-order search (``accountant.moments.lambda_search.increasing_root``):
roots of increasing functions of lambda across the whole range, exact hits, and the two
ends (0 below ``LAMBDA_MIN``, inf beyond ``LAMBDA_MAX``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.moments.lambda_search import LAMBDA_MAX, LAMBDA_MIN, increasing_root


@settings(deadline=None)  # (the first call imports scipy.optimize)
@given(st.floats(min_value=-25.0, max_value=25.0))
def test_finds_the_root_of_an_increasing_function_anywhere_in_range(log_root):
    root = math.exp(log_root)
    found = increasing_root(lambda lam: math.log(lam) - log_root)
    assert found == pytest.approx(root, rel=1e-12)


def test_an_exact_zero_on_the_bracketing_walk_is_returned_as_is():
    assert increasing_root(lambda lam: lam - 4.0) == 4.0
    assert increasing_root(lambda lam: lam - 1.0) == 1.0


def test_ends_of_the_range():
    assert increasing_root(lambda lam: 1.0) == 0.0  # already >= 0 below LAMBDA_MIN
    assert increasing_root(lambda lam: -1.0) == math.inf  # still < 0 beyond LAMBDA_MAX
    assert increasing_root(lambda lam: lam - 0.1 * LAMBDA_MIN) == 0.0
    assert increasing_root(lambda lam: lam - 10.0 * LAMBDA_MAX) == math.inf


def test_convex_objective_minimiser():
    # f(lam) = lam^2 / 2 - 3 lam: f' = lam - 3 increasing, minimiser 3
    assert increasing_root(lambda lam: lam - 3.0) == pytest.approx(3.0, rel=1e-13)
