"""Bad-input cases for the noise families, ``from_array``, ``NoiseDistribution`` and its
methods (``utility``, ``shift_steps``, ``sample``)."""

from __future__ import annotations

import numpy as np

from accountant import NoiseDistribution, noise
from tests.bad_inputs.catalogue import (
    FINITE,
    NAN,
    PMF,
    POSITIVE_INT,
    POSITIVE_REAL,
    WRONG_TYPE,
    case,
    each,
)

#: Finite real numbers only: non-finite values and wrong types (complex included).
FINITE_REAL = [*FINITE, *WRONG_TYPE, (1j, "got 1j")]
#: Positive reals: :data:`FINITE_REAL` and values <= 0.
POSITIVE = [*POSITIVE_REAL, (1j, "got 1j")]
#: Positive integers, ``None`` included (no argument here defaults on ``None``).
INTEGER = [*POSITIVE_INT, (None, "got None")]
#: Probability arrays: the shared table and the shapes and types only arrays can have.
PMF_ARRAYS = [
    *PMF,
    ([0.5, 0.6, 0.5], "got sum 1.6"),
    (1.0, "must be one-dimensional, got shape ()"),
    (b"abc", "must be an array of probabilities, got b'abc'"),
    ("0.5,0.5", "must be an array of probabilities, got '0.5,0.5'"),
    (np.array([0.5, 0.5, 0.0], dtype=object), "must have a numeric dtype, got dtype object"),
    (None, "must have a numeric dtype, got dtype object"),
    ([[0.5], [0.25, 0.25]], "must be an array of probabilities"),
]
GOOD = noise.from_array([0.25, 0.5, 0.25], step=0.5)  # symmetric, monotone


def _rng():
    return np.random.default_rng(0)


NOISE_CASES = [
    # --- families ---------------------------------------------------------------------
    *each(
        "noise.truncated_gaussian",
        "sigma",
        lambda v: noise.truncated_gaussian(v, 2.0, 0.5),
        POSITIVE,
    ),
    *each(
        "noise.truncated_gaussian",
        "bound",
        lambda v: noise.truncated_gaussian(1.0, v, 0.5),
        POSITIVE,
    ),
    *each(
        "noise.truncated_gaussian",
        "step",
        lambda v: noise.truncated_gaussian(1.0, 2.0, v),
        POSITIVE,
    ),
    *each(
        "noise.truncated_gaussian",
        "bound",
        lambda v: noise.truncated_gaussian(1.0, v, 0.5),
        [
            (1.3, "bound=1.3 must be a positive whole number of grid steps (step=0.5)"),
            (0.2, "bound=0.2 must be a positive whole number of grid steps"),
        ],
        tag="grid",
    ),
    *each(
        "noise.truncated_laplace", "scale", lambda v: noise.truncated_laplace(v, 2.0, 0.5), POSITIVE
    ),
    *each(
        "noise.truncated_laplace",
        "bound",
        lambda v: noise.truncated_laplace(1.0, v, 0.5),
        [(NAN, "bound must be finite, got nan")],
    ),
    *each(
        "noise.truncated_laplace",
        "step",
        lambda v: noise.truncated_laplace(1.0, 2.0, v),
        [(-0.5, "step must be > 0, got -0.5")],
    ),
    *each("noise.staircase", "sensitivity", lambda v: noise.staircase(v, 0.3, 2.0, 0.5), POSITIVE),
    *each("noise.staircase", "epsilon", lambda v: noise.staircase(1.0, v, 2.0, 0.5), POSITIVE),
    *each(  # gamma=None means the optimal gamma, so None is not a bad input here
        "noise.staircase",
        "gamma",
        lambda v: noise.staircase(1.0, 0.3, 2.0, 0.5, gamma=v),
        [
            *(entry for entry in FINITE_REAL if entry[0] is not None),
            (1.5, "gamma must lie in [0, 1], got 1.5"),
            (-0.1, "gamma must lie in [0, 1], got -0.1"),
        ],
    ),
    *each(
        "noise.staircase",
        "bound",
        lambda v: noise.staircase(1.0, 0.3, v, 0.5),
        [(2.1, "bound=2.1 must be a positive whole number of grid steps")],
    ),
    *each("noise.uniform", "bound", lambda v: noise.uniform(v, 0.5), [(float("inf"), "got inf")]),
    *each(  # issue 25: a grid memory cannot hold, refused before it is allocated
        "noise.truncated_gaussian",
        "step",
        lambda v: noise.truncated_gaussian(100.0, 500.0, v),
        [(1e-7, "step=1e-07 with bound=500.0 makes a grid of 10,000,000,001 points")],
        tag="memory",
    ),
    *each(
        "noise.uniform",
        "step",
        lambda v: noise.uniform(1e300, v),
        [(1e-300, "step=1e-300 with bound=1e+300 makes a grid of more than 10^308 points")],
        tag="memory",
    ),
    *each(
        "noise.uniform",
        "step",
        lambda v: noise.uniform(2.0, v),
        [(0.0, "step must be > 0, got 0.0"), ("0.5", "step must be a real number, got '0.5'")],
    ),
    # --- from_array ---------------------------------------------------------------------
    *each(
        "noise.from_array", "pmf", lambda v: noise.from_array(v, step=0.5, start=0.0), PMF_ARRAYS
    ),
    case(
        "noise.from_array",
        "pmf",
        "pmf has even length 4, so it cannot be centred on 0; pass start=",
        lambda _: noise.from_array([0.25, 0.25, 0.25, 0.25], 0.5),
    ),
    *each(
        "noise.from_array",
        "step",
        lambda v: noise.from_array([0.5, 0.5], v, start=0.0),
        POSITIVE,
    ),
    *each(  # start=None centres the grid on 0, so None is not a bad input here
        "noise.from_array",
        "start",
        lambda v: noise.from_array([0.5, 0.5], 0.5, start=v),
        [entry for entry in FINITE_REAL if entry[0] is not None],
    ),
    # --- NoiseDistribution and its methods ----------------------------------------------
    *each(
        "NoiseDistribution",
        "pmf",
        lambda v: NoiseDistribution(pmf=v, step=0.5, start=0.0),
        PMF_ARRAYS,
    ),
    *each(
        "noise.NoiseDistribution",
        "step",
        lambda v: noise.NoiseDistribution(pmf=[1.0], step=v, start=0.0),
        POSITIVE,
    ),
    *each(
        "NoiseDistribution",
        "start",
        lambda v: NoiseDistribution(pmf=[1.0], step=1.0, start=v),
        FINITE_REAL,
    ),
    *each(
        "NoiseDistribution",
        "kind",
        GOOD.utility,
        [("L3", "kind must be 'L1' or 'L2', got 'L3'")],
        tag="utility",
    ),
    *each(
        "NoiseDistribution",
        "sensitivity",
        GOOD.shift_steps,
        [
            *POSITIVE,
            (0.7, "sensitivity=0.7 is not a whole number of grid steps (step=0.5)"),
        ],
        tag="shift_steps",
    ),
    *each("NoiseDistribution", "size", lambda v: GOOD.sample(v, _rng()), INTEGER, tag="sample"),
    *each(
        "NoiseDistribution",
        "dimension",
        lambda v: GOOD.sample(5, _rng(), dimension=v),
        INTEGER,
        tag="sample",
    ),
    *each(
        "NoiseDistribution",
        "rng",
        lambda v: GOOD.sample(5, v),
        [
            (42, "rng must be a numpy.random.Generator, got 42"),
            (np.random.RandomState(0), "rng must be a numpy.random.Generator, got RandomState"),
        ],
        tag="sample",
    ),
]
