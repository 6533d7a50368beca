"""Bad-input cases for the analytic mechanisms of :mod:`accountant.mechanisms`: their
parameters and the arguments of their log-moment methods (values not already in
``cases_engines.py``)."""

from __future__ import annotations

import math

from accountant.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    SubsampledLaplace,
    TruncatedGaussianMechanism,
    TruncatedLaplaceMechanism,
    WithoutReplacementGaussian,
)
from tests.bad_inputs.catalogue import each

GAUSSIAN = "mechanisms.GaussianMechanism"
LAPLACE = "mechanisms.LaplaceMechanism"
TRUNCATED_GAUSSIAN = "mechanisms.TruncatedGaussianMechanism"
TRUNCATED_LAPLACE = "mechanisms.TruncatedLaplaceMechanism"
SUBSAMPLED_LAPLACE = "mechanisms.SubsampledLaplace"
WITHOUT_REPLACEMENT = "mechanisms.WithoutReplacementGaussian"
DIRECTION = "direction must be 'A/B' or 'B/A'"

MECHANISM_CASES = [
    *each(
        GAUSSIAN,
        "sigma",
        GaussianMechanism,
        [(0.0, "got 0.0"), (-1.0, "got -1.0"), (math.nan, "got nan"), (math.inf, "got inf")],
    ),
    *each(GAUSSIAN, "sigma", GaussianMechanism, [("1", "got '1'")]),
    *each(
        GAUSSIAN, "sensitivity", lambda v: GaussianMechanism(1.0, sensitivity=v), [(0.0, "got 0.0")]
    ),
    *each(
        GAUSSIAN,
        "direction",
        lambda v: GaussianMechanism(1.0).log_moment(1.0, v),
        [("max", f"{DIRECTION}, got 'max'")],
    ),
    *each(GAUSSIAN, "step", lambda v: GaussianMechanism(1.0).pair(v), [(0.0, "got 0.0")]),
    *each(LAPLACE, "scale", LaplaceMechanism, [(-2.0, "got -2.0")]),
    *each(
        LAPLACE, "sensitivity", lambda v: LaplaceMechanism(1.0, sensitivity=v), [(math.nan, "nan")]
    ),
    *each(
        LAPLACE,
        "direction",
        lambda v: LaplaceMechanism(1.0).log_moment_slope(1.0, v),
        [("AB", "got 'AB'")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "bound",
        lambda v: TruncatedGaussianMechanism(1.0, v),
        [(0.0, "got 0.0"), (math.inf, "got inf")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "sigma",
        lambda v: TruncatedGaussianMechanism(v, 3.0),
        [(math.nan, "got nan")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "sensitivity",
        lambda v: TruncatedGaussianMechanism(1.0, 1.0, sensitivity=v),
        [(2.0, "got sensitivity=2.0"), (5.0, "got sensitivity=5.0")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "direction",
        lambda v: TruncatedGaussianMechanism(1, 3).distinguishing_mass(v),
        [("b/a", "got 'b/a'")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "lam",
        lambda v: TruncatedGaussianMechanism(1, 3).log_moment(v, "A/B"),
        [(-0.5, "got -0.5")],
    ),
    *each(
        TRUNCATED_GAUSSIAN,
        "bound",
        lambda v: TruncatedGaussianMechanism(1.0, 3.0).pair(v),
        [(0.7, "step=0.7")],
        tag="pair",
    ),
    *each(
        TRUNCATED_LAPLACE, "scale", lambda v: TruncatedLaplaceMechanism(v, 3.0), [(0.0, "got 0.0")]
    ),
    *each(
        TRUNCATED_LAPLACE,
        "bound",
        lambda v: TruncatedLaplaceMechanism(1.0, v),
        [(-3.0, "got -3.0")],
    ),
    *each(
        TRUNCATED_LAPLACE,
        "sensitivity",
        lambda v: TruncatedLaplaceMechanism(1.0, 0.5, sensitivity=v),
        [(1.0, "got sensitivity=1.0")],
    ),
    *each(
        TRUNCATED_LAPLACE,
        "direction",
        lambda v: TruncatedLaplaceMechanism(1, 3).max_finite_loss(v),
        [(None, "got None")],
    ),
    *each(
        TRUNCATED_LAPLACE,
        "lam",
        lambda v: TruncatedLaplaceMechanism(1, 3).log_moment_slope(v, "A/B"),
        [(math.nan, "got nan")],
    ),
    *each(
        SUBSAMPLED_LAPLACE,
        "scale",
        lambda v: SubsampledLaplace(scale=v, sampling_rate=0.1),
        [(0.0, "got 0.0"), (math.inf, "got inf")],
    ),
    *each(
        SUBSAMPLED_LAPLACE,
        "sampling_rate",
        lambda v: SubsampledLaplace(scale=1.0, sampling_rate=v),
        [(1.0, "LaplaceMechanism), got 1.0"), (0.0, "got 0.0"), (1.5, "got 1.5")],
    ),
    *each(
        SUBSAMPLED_LAPLACE,
        "clip",
        lambda v: SubsampledLaplace(scale=1.0, sampling_rate=0.1, clip=v),
        [(math.nan, "got nan")],
    ),
    *each(
        SUBSAMPLED_LAPLACE,
        "direction",
        lambda v: SubsampledLaplace(scale=1.0, sampling_rate=0.1).log_moment(1.0, v),
        [("max", f"{DIRECTION}, got 'max'")],
    ),
    *each(
        WITHOUT_REPLACEMENT,
        "sigma",
        lambda v: WithoutReplacementGaussian(sigma=v, sampling_rate=0.1),
        [(-1.0, "got -1.0"), (math.nan, "got nan")],
    ),
    *each(
        WITHOUT_REPLACEMENT,
        "sampling_rate",
        lambda v: WithoutReplacementGaussian(sigma=1.0, sampling_rate=v),
        [(1.0, "GaussianMechanism), got 1.0"), (1.5, "got 1.5")],
    ),
    *each(
        WITHOUT_REPLACEMENT,
        "clip",
        lambda v: WithoutReplacementGaussian(sigma=1.0, sampling_rate=0.1, clip=v),
        [(0.0, "got 0.0")],
    ),
]
