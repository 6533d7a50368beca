"""Analytic mechanisms refuse bad input with messages naming the argument."""

from __future__ import annotations

import math

import pytest

from accountant.errors import InvalidInputError
from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
)

# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: GaussianMechanism(0.0), "sigma"),
        (lambda: GaussianMechanism(-1.0), "sigma"),
        (lambda: GaussianMechanism(math.nan), "sigma"),
        (lambda: GaussianMechanism(math.inf), "sigma"),
        (lambda: GaussianMechanism("1"), "sigma"),
        (lambda: GaussianMechanism(1.0, sensitivity=0.0), "sensitivity"),
        (lambda: LaplaceMechanism(-2.0), "scale"),
        (lambda: LaplaceMechanism(1.0, sensitivity=math.nan), "sensitivity"),
        (lambda: TruncatedGaussianMechanism(1.0, 0.0), "bound"),
        (lambda: TruncatedGaussianMechanism(1.0, math.inf), "bound"),
        (lambda: TruncatedGaussianMechanism(math.nan, 3.0), "sigma"),
        (lambda: TruncatedGaussianMechanism(1.0, 1.0, sensitivity=2.0), "sensitivity"),
        (lambda: TruncatedGaussianMechanism(1.0, 1.0, sensitivity=5.0), "sensitivity"),
        (lambda: TruncatedLaplaceMechanism(0.0, 3.0), "scale"),
        (lambda: TruncatedLaplaceMechanism(1.0, -3.0), "bound"),
        (lambda: TruncatedLaplaceMechanism(1.0, 0.5, sensitivity=1.0), "sensitivity"),
        (lambda: GaussianMechanism(1.0).log_moment(1.0, "max"), "direction"),
        (lambda: LaplaceMechanism(1.0).log_moment_slope(1.0, "AB"), "direction"),
        (lambda: TruncatedGaussianMechanism(1, 3).distinguishing_mass("b/a"), "direction"),
        (lambda: TruncatedLaplaceMechanism(1, 3).max_finite_loss(None), "direction"),
        (lambda: TruncatedGaussianMechanism(1, 3).log_moment(-0.5, "A/B"), "lam"),
        (lambda: TruncatedLaplaceMechanism(1, 3).log_moment_slope(math.nan, "A/B"), "lam"),
        (lambda: GaussianMechanism(1.0).pair(0.0), "step"),
        (lambda: TruncatedGaussianMechanism(1.0, 3.0).pair(0.7), "bound"),
    ],
)
def test_bad_input_is_refused_with_the_argument_named(build, name):
    with pytest.raises(InvalidInputError, match=name) as info:
        build()
    assert isinstance(info.value, ValueError)
