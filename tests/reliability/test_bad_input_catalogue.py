"""A catalogue of bad inputs through every public entry point and through the CLI.

For each public callable of ``accountant`` and ``optimizers`` that takes user input, and
each bad-value category of the issue that applies to it (NaN, inf, negative or
non-normalised mass, mismatched lengths, empty arrays, wrong dtypes, eps < 0, n not a
positive integer, sensitivity not a multiple of the grid step, q outside (0, 1],
impossible targets), the call raises a specific exception (``InvalidInputError``,
``InfeasibleTargetError`` or ``CheckpointError``, all ``ValueError``\\ s) whose one-line
message names the argument and shows the bad value. ``accountant audit`` and
``accountant learn`` exit with status 2 and one line on stderr, never a traceback.

The older tables (``tests/test_bad_inputs.py`` for noise, pairs and PLDs,
``tests/test_mechanisms_bad_input.py``, ``tests/test_cli.py``) are extended here, not
repeated: a meta-test checks that every public name is catalogued here, covered there,
or listed as taking no user input, and that no CLI case here repeats one in
``tests/test_cli.py``. A last group checks that valid but awkward inputs (eps huge,
masses near the smallest float) give finite results.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import accountant
from accountant import (
    AdditivePairMap,
    CertificationWarning,
    ExtendedMA,
    InfeasibleTargetError,
    InvalidInputError,
    PairLogMoments,
    PrivacyBuckets,
    PrivacyLossDistribution,
    SubsampledPairMap,
    WorstCasePair,
    best_truncated_gaussian,
    certify,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    kl_divergence,
    mechanisms,
    noise,
    noise_bound,
    optimal,
    pair_map,
    smooth_bucket_delta,
)
from accountant.cli import main

try:
    import torch

    import optimizers
    from optimizers import (
        LearnedNoise,
        LearningProblem,
        LogIncrementModel,
        Schedule,
        SigmoidStackModel,
        buckets_delta,
        build_model,
        extended_ma_delta,
        learn,
    )
except ImportError:  # pragma: no cover - the [torch] extra is missing
    torch = None

NAN, INF = float("nan"), float("inf")

TG = noise.truncated_gaussian(1.0, 2.0, 0.5)  # 9 points, symmetric and monotone
PM = pair_map(0.5, 0.5)  # additive, one grid step
PAIR = WorstCasePair.additive(TG, 0.5)
# distinguishing mass 0.5 in A/B and 0.5 in B/A: no epsilon reaches delta = 0.1
PAIR_OMEGA = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5])
PLD_ARGS = {
    "losses": [0.1, 0.2],
    "mass_a": [0.5, 0.5],
    "mass_b": [0.5, 0.5],
    "log_mass_a": np.log([0.5, 0.5]),
    "distinguishing_mass": 0.0,
    "impossible_mass_b": 0.0,
}

# ---------------------------------------------------------------------------------------
# the catalogue: every case names its public callable ("target"), the argument and how
# the bad value is shown in the message

CATALOGUED: set[str] = set()


def case(
    target: str,
    argument: str,
    shown: str,
    call: Callable[[Path], Any],
    error: type[Exception] = InvalidInputError,
    *,
    tag: str = "",
) -> Any:
    """One bad input: ``call(tmp_path)`` must raise ``error`` with a one-line message that
    contains ``argument`` (as a word) and ``shown`` (literally)."""
    CATALOGUED.add(target)
    slug = re.sub(r"[^A-Za-z0-9.+-]+", "_", tag or shown).strip("_")[:60]
    return pytest.param(call, error, argument, shown, id=f"{target}-{argument}-{slug}")


def each(target: str, argument: str, build: Callable[[Any], Any], values, **kw) -> list:
    """One case per ``(value, shown)``: ``build(value)`` is called (``tmp_path`` unused)."""
    prefix = kw.pop("tag", "")
    return [
        case(
            target, argument, shown, lambda tmp, v=value: build(v), tag=f"{prefix} {value!r}", **kw
        )
        for value, shown in values
    ]


# value tables: (value, how the message shows it)
FINITE = [(NAN, "got nan"), (INF, "got inf"), (-INF, "got -inf")]
WRONG_TYPE = [("1", "got '1'"), (None, "got None"), (True, "got True"), ([1.0], "got [1.0]")]
NOT_POSITIVE = [(0.0, "must be > 0, got 0.0"), (-2.5, "must be > 0, got -2.5")]
POSITIVE_REAL = FINITE + WRONG_TYPE + NOT_POSITIVE
POSITIVE_INT = [
    (0, "got 0"),
    (-3, "got -3"),
    (2.5, "got 2.5"),
    (2.0, "got 2.0"),
    (NAN, "got nan"),
    ("2", "got '2'"),
    (True, "got True"),
]
EPSILON = [
    (NAN, "got nan"),
    (INF, "got inf"),
    (-0.5, "got -0.5"),
    ("0.5", "got '0.5'"),
]
EPSILONS = [  # vectorised queries additionally refuse empty and non-numeric arrays
    *EPSILON,
    ([], "must not be empty"),
    ([0.1, NAN], "got nan"),
    ([0.2, -1.0], "got -1.0"),
    (["0.1"], "got ['0.1']"),
]
Q = [
    (0.0, "got 0.0"),
    (-0.1, "got -0.1"),
    (1.5, "got 1.5"),
    (NAN, "got nan"),
    (INF, "got inf"),
]
TARGET_DELTA = [(0.0, "got 0.0"), (1.0, "got 1.0"), (-1e-5, "got -1e-05"), (NAN, "got nan")]
PMF = [
    ([0.25, NAN, 0.5, 0.25, 0.0], "got nan at index 1"),
    ([0.25, INF, 0.5], "got inf at index 1"),
    ([0.6, -0.1, 0.5], "got -0.1 at index 1"),
    ([0.3, 0.3, 0.3], "got sum 0.8999999999999999"),
    ([0.5, 0.500001, 0.0], "got sum 1.000001"),
    ([], "must not be empty"),
    ([[0.5, 0.5], [0.0, 0.0]], "got shape (2, 2)"),
    (["0.5", "0.5", "0"], "got dtype <U3"),
    ([True, False, False], "got dtype bool"),
]


def _certify(**changes):
    arguments = {"epsilon": 1.0, "times": 2} | changes
    noise_value = arguments.pop("noise", TG)
    mapping = arguments.pop("pair_map", PM)
    return certify(noise_value, mapping, **arguments)


def _btg(**changes):
    arguments = {
        "bound": 2.0,
        "step": 0.5,
        "pair_map": PM,
        "epsilon": 1.0,
        "times": 2,
        "target_delta": 0.3,
    }
    return best_truncated_gaussian(**(arguments | changes))


def _noise_bound(**changes):
    arguments = {"bound": "ADP", "epsilon": 1.0, "times": 2} | changes
    pmf = arguments.pop("pmf", TG.pmf)
    step = arguments.pop("step", 0.5)
    mapping = arguments.pop("pair_map", PM)
    return noise_bound(pmf, step, mapping, **arguments)


def _smooth(**changes):
    arguments = {"epsilon": 1.0, "times": 2} | changes
    return smooth_bucket_delta(arguments.pop("pair", PAIR), **arguments)


def _optimal(**changes):
    arguments = {"bound": 2.0, "step": 0.5, "epsilon": 1.0, "delta": 0.1} | changes
    return optimal.optimal_noise(**arguments)


COMPOSED_BUCKETS = PrivacyBuckets(accuracy=1e-3).compose(PAIR, 3)
COMPOSED_MA = ExtendedMA().compose(PAIR, 3)

ACCOUNTANT_CASES = [
    # --- certify -----------------------------------------------------------------------
    *each("certify", "epsilon", lambda v: _certify(epsilon=v), EPSILON),
    *each("certify", "times", lambda v: _certify(times=v), POSITIVE_INT),
    *each("certify", "kind", lambda v: _certify(kind=v), [("adp", "got 'adp'")]),
    *each(
        "certify",
        "accuracy",
        lambda v: _certify(accuracy=v),
        [(NAN, "got nan"), (0.0, "got 0.0"), (1.0, "got 1.0"), ("x", "got 'x'")],
    ),
    *each("certify", "noise", lambda v: _certify(noise=v), [([0.5, 0.5], "got list")]),
    *each("certify", "pair_map", lambda v: _certify(pair_map=v), [(0.5, "got float")]),
    # --- best_truncated_gaussian ----------------------------------------------------------
    *each(
        "best_truncated_gaussian",
        "bound",
        lambda v: _btg(bound=v),
        [(NAN, "got nan"), (-1.0, "got -1.0"), (2.2, "bound=2.2")],
    ),
    *each(
        "best_truncated_gaussian",
        "step",
        lambda v: _btg(step=v),
        [(INF, "got inf"), (0.0, "got 0.0"), (0.3, "step=0.3")],
    ),
    *each("best_truncated_gaussian", "epsilon", lambda v: _btg(epsilon=v), EPSILON),
    *each("best_truncated_gaussian", "times", lambda v: _btg(times=v), POSITIVE_INT[:4]),
    *each("best_truncated_gaussian", "target_delta", lambda v: _btg(target_delta=v), TARGET_DELTA),
    *each("best_truncated_gaussian", "utility", lambda v: _btg(utility=v), [("L3", "'L3'")]),
    *each("best_truncated_gaussian", "kind", lambda v: _btg(kind=v), [("RDP", "'RDP'")]),
    *each("best_truncated_gaussian", "accuracy", lambda v: _btg(accuracy=v), [(2.0, "2.0")]),
    *each(
        "best_truncated_gaussian",
        "rtol",
        lambda v: _btg(rtol=v),
        [(NAN, "got nan"), (0.0, "got 0.0"), (1.5, "got 1.5")],
    ),
    *each(
        "best_truncated_gaussian",
        "pair_map",
        lambda v: _btg(pair_map=v),
        [("additive", "got str")],
    ),
    case(
        "best_truncated_gaussian",
        "target_delta",
        "target_delta=1e-30",
        lambda tmp: _btg(target_delta=1e-30),
        InfeasibleTargetError,
        tag="impossible",
    ),
    # --- kl_divergence -----------------------------------------------------------------
    case("kl_divergence", "p", "got list", lambda tmp: kl_divergence([1.0], TG)),
    case("kl_divergence", "q", "got NoneType", lambda tmp: kl_divergence(TG, None)),
    case(
        "kl_divergence",
        "size",
        "p.size=3, q.size=9",
        lambda tmp: kl_divergence(noise.uniform(0.5, 0.5), TG),
        tag="mismatched_lengths",
    ),
    case(
        "kl_divergence",
        "step",
        "p.step=0.5, q.step=1.0",
        lambda tmp: kl_divergence(noise.uniform(2.0, 0.5), noise.uniform(4.0, 1.0)),
    ),
    case(
        "kl_divergence",
        "start",
        "p.start=-2.0, q.start=0.0",
        lambda tmp: kl_divergence(TG, noise.from_array(TG.pmf, 0.5, start=0.0)),
    ),
    # --- noise_bound -------------------------------------------------------------------
    *each("noise_bound", "pmf", lambda v: _noise_bound(pmf=v), PMF),
    *each("noise_bound", "step", lambda v: _noise_bound(step=v), FINITE + NOT_POSITIVE),
    *each("noise_bound", "pair_map", lambda v: _noise_bound(pair_map=v), [("x", "got str")]),
    *each("noise_bound", "bound", lambda v: _noise_bound(bound=v), [("RDP", "got 'RDP'")]),
    *each("noise_bound", "epsilon", lambda v: _noise_bound(epsilon=v), EPSILON),
    *each(
        "noise_bound",
        "epsilon",
        lambda v: _noise_bound(bound="MA", epsilon=v),
        EPSILON,
        tag="MA",
    ),
    *each("noise_bound", "epsilon", lambda v: _noise_bound(epsilon=v), [([1.0, 2.0], "2 values")]),
    *each("noise_bound", "times", lambda v: _noise_bound(times=v), POSITIVE_INT),
    *each("noise_bound", "direction", lambda v: _noise_bound(direction=v), [("up", "'up'")]),
    # a conversion or width that does not apply to the bound was accepted silently
    *each("noise_bound", "conversion", lambda v: _noise_bound(conversion=v), [("x", "'x'")]),
    *each(
        "noise_bound",
        "width",
        lambda v: _noise_bound(bound="MA", width=v),
        [(NAN, "got nan"), (-1.0, "got -1.0")],
    ),
    *each("noise_bound", "width", lambda v: _noise_bound(width=v), [(0.0, "got 0.0")]),
    # --- smooth_bucket_delta -------------------------------------------------------------
    *each("smooth_bucket_delta", "pair", lambda v: _smooth(pair=v), [(TG, "NoiseDistribution")]),
    *each("smooth_bucket_delta", "epsilon", lambda v: _smooth(epsilon=v), EPSILONS[:6]),
    *each("smooth_bucket_delta", "times", lambda v: _smooth(times=v), POSITIVE_INT),
    *each("smooth_bucket_delta", "kind", lambda v: _smooth(kind=v), [("MA", "'MA'")]),
    *each("smooth_bucket_delta", "direction", lambda v: _smooth(direction=v), [("ab", "'ab'")]),
    *each("smooth_bucket_delta", "width", lambda v: _smooth(width=v), FINITE + NOT_POSITIVE),
    *each("smooth_bucket_delta", "loss_cap", lambda v: _smooth(loss_cap=v), [(0.0, "0.0")]),
    case(
        "smooth_bucket_delta",
        "width",
        "width=1e-09",
        lambda tmp: _smooth(width=1e-9, times=100),
        tag="lattice_too_large",
    ),
    # --- pair maps ---------------------------------------------------------------------
    *each("pair_map", "step", lambda v: pair_map(v, 1.0), POSITIVE_REAL),
    *each("pair_map", "sensitivity", lambda v: pair_map(0.5, v), FINITE + NOT_POSITIVE),
    *each(
        "pair_map",
        "sensitivity",
        lambda v: pair_map(0.5, v),
        [(0.3, "sensitivity=0.3 is not a whole number of grid steps (step=0.5)")],
        tag="not_a_multiple",
    ),
    *each(
        "pair_map",
        "clip",
        lambda v: pair_map(0.5, v, 0.1),
        [(0.75, "clip=0.75 is not a whole number of grid steps")],
    ),
    *each("pair_map", "q", lambda v: pair_map(0.5, 1.0, v), Q),
    *each("AdditivePairMap", "steps", AdditivePairMap, POSITIVE_INT),
    *each("SubsampledPairMap", "steps", lambda v: SubsampledPairMap(v, 0.5), POSITIVE_INT[:3]),
    *each("SubsampledPairMap", "q", lambda v: SubsampledPairMap(1, v), Q),
    case("AdditivePairMap", "noise", "got list", lambda tmp: AdditivePairMap(1).pair([1.0])),
    case(
        "SubsampledPairMap",
        "noise",
        "got ndarray",
        lambda tmp: SubsampledPairMap(1, 0.5).pair(TG.pmf),
    ),
    case(
        "AdditivePairMap",
        "grad_b",
        "must have shape (4,)",
        lambda tmp: AdditivePairMap(1).noise_gradient(np.ones(4), np.ones(3)),
        tag="mismatched_lengths",
    ),
    case(
        "AdditivePairMap",
        "grad_a",
        "got nan at index 1",
        lambda tmp: AdditivePairMap(1).noise_gradient([1.0, NAN, 1.0, 1.0], np.ones(4)),
    ),
    case(
        "AdditivePairMap",
        "grad_a",
        "got length 2",
        lambda tmp: AdditivePairMap(3).noise_gradient(np.ones(2), np.ones(2)),
        tag="shorter_than_the_shift",
    ),
    case(
        "AdditivePairMap",
        "grad_a",
        "got length 0",
        lambda tmp: AdditivePairMap(1).noise_gradient([], []),
        tag="empty",
    ),
    case(
        "SubsampledPairMap",
        "grad_a",
        "got 'ab'",
        lambda tmp: SubsampledPairMap(1, 0.5).noise_gradient("ab", "ab"),
        tag="strings",
    ),
    # --- optimal.optimal_noise ---------------------------------------------------------
    *each("optimal.optimal_noise", "bound", lambda v: _optimal(bound=v), FINITE[:2]),
    *each(
        "optimal.optimal_noise",
        "step",
        lambda v: _optimal(step=v),
        [(0.0, "got 0.0"), (0.3, "(step=0.3)")],
    ),
    *each("optimal.optimal_noise", "epsilon", lambda v: _optimal(epsilon=v), EPSILON),
    *each(
        "optimal.optimal_noise",
        "epsilon",
        lambda v: _optimal(epsilon=v),
        [(100.0, "got 100.0"), (1e300, "got 1e+300")],
        tag="beyond_the_solver",
    ),
    *each(
        "optimal.optimal_noise",
        "delta",
        lambda v: _optimal(delta=v),
        [(NAN, "got nan"), (-0.1, "got -0.1"), (1.0, "got 1.0")],
    ),
    *each(
        "optimal.optimal_noise",
        "sensitivity",
        lambda v: _optimal(sensitivity=v),
        [(0.0, "got 0.0"), (NAN, "got nan"), (0.3, "sensitivity=0.3")],
    ),
    *each("optimal.optimal_noise", "utility", lambda v: _optimal(utility=v), [("L3", "'L3'")]),
    *each("optimal.optimal_noise", "symmetric", lambda v: _optimal(symmetric=v), [("y", "'y'")]),
    *each("optimal.optimal_noise", "monotone", lambda v: _optimal(monotone=v), [(None, "None")]),
    case(
        "optimal.optimal_noise",
        "delta",
        "delta=0.0",
        lambda tmp: _optimal(delta=0.0),
        InfeasibleTargetError,
        tag="impossible",
    ),
    # --- PrivacyBuckets --------------------------------------------------------------------
    *each(
        "PrivacyBuckets",
        "accuracy",
        lambda v: PrivacyBuckets(accuracy=v),
        [(NAN, "got nan"), (0.0, "got 0.0"), (1.0, "got 1.0"), ("0.1", "got '0.1'")],
    ),
    *each(
        "PrivacyBuckets",
        "max_buckets",
        lambda v: PrivacyBuckets(max_buckets=v),
        [(100, "got 100"), (2.5, "got 2.5"), (0, "got 0"), (NAN, "got nan")],
    ),
    *each(  # tail_mass was not validated at all
        "PrivacyBuckets",
        "tail_mass",
        lambda v: PrivacyBuckets(tail_mass=v),
        [
            (NAN, "got nan"),
            (INF, "got inf"),
            (-1e-9, "got -1e-09"),
            (1.0, "got 1.0"),
            ("1e-9", "got '1e-9'"),
            (None, "got None"),
        ],
    ),
    *each(
        "PrivacyBuckets",
        "times",
        lambda v: PrivacyBuckets().compose(PAIR, v),
        POSITIVE_INT,
        tag="compose",
    ),
    case(
        "PrivacyBuckets",
        "mechanism",
        "got NoiseDistribution",
        lambda tmp: PrivacyBuckets().compose(TG),
    ),
    case(
        "PrivacyBuckets",
        "sequence of pairs",
        "no single composed PLD",
        lambda tmp: PrivacyBuckets().compose([PAIR, PAIR]),
    ),
    *each("PrivacyBuckets", "epsilon", COMPOSED_BUCKETS.delta, EPSILONS, tag="delta"),
    *each("PrivacyBuckets", "epsilon", COMPOSED_BUCKETS.delta_pdp, EPSILONS[:4], tag="pdp"),
    case(
        "PrivacyBuckets",
        "direction",
        "got 'A>B'",
        lambda tmp: COMPOSED_BUCKETS.delta(0.1, "A>B"),
    ),
    *each("PrivacyBuckets", "delta", COMPOSED_BUCKETS.epsilon, TARGET_DELTA, tag="epsilon"),
    case(
        "PrivacyBuckets", "kind", "got 'adp'", lambda tmp: COMPOSED_BUCKETS.epsilon(0.5, kind="adp")
    ),
    case(
        "PrivacyBuckets",
        "delta",
        "delta=0.1",
        lambda tmp: PrivacyBuckets(accuracy=1e-3).compose(PAIR_OMEGA, 2).epsilon(0.1),
        InfeasibleTargetError,
        tag="impossible",
    ),
    # --- ExtendedMA ------------------------------------------------------------------------
    case("ExtendedMA", "conversion", "got 'exact'", lambda tmp: ExtendedMA(conversion="exact")),
    *each("ExtendedMA", "times", lambda v: ExtendedMA().compose(PAIR, v), POSITIVE_INT),
    *each(
        "ExtendedMA",
        "mechanism",
        lambda v: ExtendedMA().compose(v),
        [("pair", "got str"), ([], "got list"), ([PAIR, "pair"], "got list")],
    ),
    *each("ExtendedMA", "epsilon", COMPOSED_MA.delta, EPSILONS, tag="delta"),
    *each("ExtendedMA", "epsilon", COMPOSED_MA.delta_details, EPSILON, tag="details"),
    *each("ExtendedMA", "epsilon", COMPOSED_MA.delta_and_gradient, EPSILON, tag="gradient"),
    case(
        "ExtendedMA",
        "direction",
        "got 'a/b'",
        lambda tmp: COMPOSED_MA.delta_and_gradient(0.1, "a/b"),
    ),
    *each("ExtendedMA", "delta", COMPOSED_MA.epsilon, TARGET_DELTA, tag="epsilon"),
    case(
        "ExtendedMA",
        "delta",
        "delta=0.1",
        lambda tmp: ExtendedMA().compose(PAIR_OMEGA, 2).epsilon(0.1),
        InfeasibleTargetError,
        tag="impossible",
    ),
    # log_moment took lam and direction unchecked (NaN out, KeyError)
    *each(
        "ExtendedMA",
        "lam",
        lambda v: COMPOSED_MA.log_moment(v),
        [*FINITE, (-1.0, "got -1.0"), ("1", "got '1'")],
    ),
    *each(
        "ExtendedMA",
        "direction",
        lambda v: COMPOSED_MA.log_moment(1.0, v),
        [("max", "got 'max'"), (None, "got None")],
        tag="log_moment",
    ),
    case(
        "ExtendedMA",
        "direction",
        "got 'both'",
        lambda tmp: COMPOSED_MA.distinguishing_mass("both"),
    ),
    # --- PairLogMoments (constructor and methods took anything) ------------------------------
    *each(
        "PairLogMoments",
        "pairs",
        PairLogMoments,
        [([], "got list"), (None, "got NoneType"), ([PAIR, TG], "got list")],
    ),
    *each(
        "PairLogMoments",
        "lam",
        lambda v: PairLogMoments(PAIR).log_moment(v, "A/B"),
        [(NAN, "got nan"), (-0.5, "got -0.5")],
    ),
    *each(
        "PairLogMoments",
        "lam",
        lambda v: PairLogMoments(PAIR).log_moment_slope(v, "A/B"),
        [(INF, "got inf")],
        tag="slope",
    ),
    *each(
        "PairLogMoments",
        "lam",
        lambda v: PairLogMoments(PAIR).log_moment_log_gradient(v, "A/B"),
        [(-1.0, "got -1.0")],
        tag="gradient",
    ),
    *each(
        "PairLogMoments",
        "direction",
        lambda v: PairLogMoments(PAIR).distinguishing_mass(v),
        [("max", "got 'max'"), ("x", "got 'x'")],
    ),
    case(
        "PairLogMoments",
        "direction",
        "got None",
        lambda tmp: PairLogMoments(PAIR).log_moment(1.0, None),
    ),
    # --- PrivacyLossDistribution (the constructor took anything) ----------------------------
    *[
        case(
            "PrivacyLossDistribution",
            name,
            shown,
            lambda tmp, name=name, value=value: PrivacyLossDistribution(
                **(PLD_ARGS | {name: value})
            ),
        )
        for name, value, shown in [
            ("losses", [0.1, NAN], "got nan at index 1"),
            ("losses", [0.2, 0.1], "got 0.1 at index 1 after 0.2"),
            ("losses", "ab", "got 'ab'"),
            ("mass_a", [0.5], "got shape (1,)"),
            ("mass_b", [-0.1, 0.5], "got -0.1 at index 0"),
            ("mass_b", [0.5, INF], "got inf at index 1"),
            ("log_mass_a", [0.0, -INF], "got -inf at index 1"),
            ("distinguishing_mass", NAN, "got nan"),
            ("distinguishing_mass", 1.5, "got 1.5"),
            ("impossible_mass_b", -0.25, "got -0.25"),
        ]
    ],
    # --- analytic mechanisms (values not in tests/test_mechanisms_bad_input.py) ----------
    *each("mechanisms.GaussianMechanism", "sigma", mechanisms.GaussianMechanism, [(-INF, "-inf")]),
    *each(
        "mechanisms.GaussianMechanism",
        "sensitivity",
        lambda v: mechanisms.GaussianMechanism(1.0, sensitivity=v),
        [(INF, "got inf"), (-1.0, "got -1.0"), ("1", "got '1'")],
    ),
    *each(
        "mechanisms.GaussianMechanism",
        "sensitivity",
        lambda v: mechanisms.GaussianMechanism(1.0).pair(v),
        [(0.3, "sensitivity=1.0 is not a whole number of grid steps")],
        tag="pair_step",
    ),
    *each(
        "mechanisms.GaussianMechanism",
        "lam",
        lambda v: mechanisms.GaussianMechanism(1.0).log_moment(v, "A/B"),
        [(INF, "got inf"), (NAN, "got nan")],
    ),
    *each(
        "mechanisms.LaplaceMechanism",
        "scale",
        mechanisms.LaplaceMechanism,
        [(NAN, "got nan"), (INF, "got inf"), (0.0, "got 0.0"), (None, "got None")],
    ),
    *each(
        "mechanisms.TruncatedGaussianMechanism",
        "sensitivity",
        lambda v: mechanisms.TruncatedGaussianMechanism(1.0, 3.0, sensitivity=v),
        [(NAN, "got nan"), (6.0, "got sensitivity=6.0")],
    ),
    *each(
        "mechanisms.TruncatedGaussianMechanism",
        "step",
        lambda v: mechanisms.TruncatedGaussianMechanism(1.0, 3.0).pair(v),
        [(NAN, "got nan"), (-0.5, "got -0.5")],
    ),
    *each(
        "mechanisms.TruncatedLaplaceMechanism",
        "scale",
        lambda v: mechanisms.TruncatedLaplaceMechanism(v, 3.0),
        [(NAN, "got nan"), ("2", "got '2'")],
    ),
    *each(
        "mechanisms.TruncatedLaplaceMechanism",
        "lam",
        lambda v: mechanisms.TruncatedLaplaceMechanism(1.0, 3.0).log_moment(v, "B/A"),
        [(-0.5, "got -0.5")],
    ),
    # --- noise families (values not in tests/test_bad_inputs.py) -------------------------
    *each(
        "noise.uniform", "bound", lambda v: noise.uniform(v, 0.5), [(NAN, "nan"), (-1.0, "-1.0")]
    ),
    *each("noise.uniform", "bound", lambda v: noise.uniform(v, 0.5), [(1.3, "bound=1.3")]),
    *each(
        "noise.truncated_laplace",
        "bound",
        lambda v: noise.truncated_laplace(1.0, v, 0.5),
        [(2.2, "bound=2.2 must be a positive whole number of grid steps")],
    ),
]

if torch is not None:

    def _problem(**changes):
        values = {"bound": 4.0, "step": 0.25, "epsilon": 1.0, "times": 2, "target_delta": 0.2}
        return LearningProblem(**(values | changes))

    PMF_TENSOR = torch.tensor(TG.pmf, dtype=torch.float64, requires_grad=True)
    WRAPPER = {"step": 0.5, "sensitivity": 1.0, "epsilon": 1.0, "times": 2}

    def _write_result(tmp: Path, record: Any, arrays: dict | None = None) -> Path:
        directory = tmp / "result"
        directory.mkdir()
        (directory / "result.json").write_text(
            record if isinstance(record, str) else json.dumps(record)
        )
        np.savez(directory / "noise.npz", **(arrays or {"pmf": np.ones(1)}))
        return directory

    OPTIMIZER_CASES = [
        # --- LearningProblem (values not in tests/optimizers/test_learner.py) --------------
        *each(
            "LearningProblem", "bound", lambda v: _problem(bound=v), [(INF, "inf"), ("4", "'4'")]
        ),
        *each("LearningProblem", "step", lambda v: _problem(step=v), [(NAN, "nan"), (0.3, "0.3")]),
        *each("LearningProblem", "epsilon", lambda v: _problem(epsilon=v), EPSILON[:2]),
        *each("LearningProblem", "epsilon", lambda v: _problem(epsilon=v), [([1, 2], "2 values")]),
        *each("LearningProblem", "times", lambda v: _problem(times=v), POSITIVE_INT[1:]),
        *each(
            "LearningProblem",
            "sensitivity",
            lambda v: _problem(sensitivity=v),
            [
                (NAN, "got nan"),
                (0.6, "sensitivity=0.6 is not a whole number of grid steps (step=0.25)"),
                (8.0, "sensitivity=8.0 must be smaller than the noise range 2 * bound = 8.0"),
            ],
        ),
        *each("LearningProblem", "q", lambda v: _problem(q=v), Q[:2] + Q[3:]),
        *each("LearningProblem", "utility", lambda v: _problem(utility=v), [(None, "None")]),
        *each("LearningProblem", "conversion", lambda v: _problem(conversion=v), [("x", "'x'")]),
        *each(
            "LearningProblem",
            "target_delta",
            lambda v: _problem(target_delta=v),
            [(0.0, "got 0.0"), (NAN, "got nan"), (-0.1, "got -0.1")],
        ),
        *each(
            "LearningProblem",
            "bucket_width",
            lambda v: _problem(bucket_width=v),
            [(NAN, "got nan"), (0.0, "got 0.0")],
        ),
        # --- Schedule ------------------------------------------------------------------
        *each("Schedule", "epochs", lambda v: Schedule(epochs=v), POSITIVE_INT[1:]),
        *each(
            "Schedule",
            "learning_rate",
            lambda v: Schedule(learning_rate=v),
            [(0.0, "got 0.0"), (INF, "got inf")],
        ),
        *each(
            "Schedule",
            "learning_rate_decay",
            lambda v: Schedule(learning_rate_decay=v),
            [(0.0, "got 0.0"), (NAN, "got nan")],
        ),
        *each("Schedule", "utility_weight", lambda v: Schedule(utility_weight=v), NOT_POSITIVE),
        *each("Schedule", "weight_half_life", lambda v: Schedule(weight_half_life=v), FINITE[1:2]),
        *each("Schedule", "weight_min", lambda v: Schedule(weight_min=v), [(-1.0, "got -1.0")]),
        *each("Schedule", "penalty", lambda v: Schedule(penalty=v), [(NAN, "nan"), (0, "0.0")]),
        *each("Schedule", "sigmoids", lambda v: Schedule(sigmoids=v), POSITIVE_INT[:3]),
        *each(
            "Schedule",
            "seed",
            lambda v: Schedule(seed=v),
            [(1.5, "got 1.5"), (NAN, "got nan"), ("0", "got '0'"), (True, "got True")],
        ),
        *each("Schedule", "checkpoint_every", lambda v: Schedule(checkpoint_every=v), POSITIVE_INT),
        *each("Schedule", "model", lambda v: Schedule(model=v), [(None, "got None")]),
        # --- learn (refused before any training) -----------------------------------------
        case(
            "learn",
            "checkpoint",
            "when resume=True, got None",
            lambda tmp: learn(_problem(), Schedule(epochs=2), resume=True),
            tag="resume_without_checkpoint",
        ),
        case("learn", "problem", "got dict", lambda tmp: learn({"bound": 4.0}, Schedule())),
        case("learn", "schedule", "got dict", lambda tmp: learn(_problem(), {"epochs": 2})),
        case("learn", "checkpoint", "got int", lambda tmp: learn(_problem(), checkpoint=3)),
        case("learn", "resume", "got 'yes'", lambda tmp: learn(_problem(), resume="yes")),
        *each(
            "learn",
            "time_limit",
            lambda v: learn(_problem(), time_limit=v),
            [(NAN, "got nan"), (-1.0, "got -1.0"), ("60", "got '60'")],
        ),
        *each(
            "learn",
            "certify_accuracy",
            lambda v: learn(_problem(), certify_accuracy=v),
            [(NAN, "got nan"), (2.0, "got 2.0")],
        ),
        # --- LearnedNoise.load -------------------------------------------------------------
        case(
            "LearnedNoise",
            "directory",
            "missing",
            lambda tmp: LearnedNoise.load(tmp / "missing"),
            tag="missing",
        ),
        case("LearnedNoise", "directory", "got int: 5", lambda tmp: LearnedNoise.load(5)),
        case(
            "LearnedNoise",
            "directory",
            "Expecting value",
            lambda tmp: LearnedNoise.load(_write_result(tmp, "")),
            tag="empty_json",
        ),
        case(
            "LearnedNoise",
            "directory",
            "missing entry 'problem'",
            lambda tmp: LearnedNoise.load(_write_result(tmp, {})),
        ),
        case(
            "LearnedNoise",
            "directory",
            "list indices must be integers",
            lambda tmp: LearnedNoise.load(_write_result(tmp, [1, 2])),
        ),
        # --- models --------------------------------------------------------------------------
        *each("SigmoidStackModel", "half_size", lambda v: SigmoidStackModel(v, 1.0), POSITIVE_INT),
        *each("SigmoidStackModel", "bound", lambda v: SigmoidStackModel(3, v), POSITIVE_REAL),
        *each(
            "SigmoidStackModel",
            "sigmoids",
            lambda v: SigmoidStackModel(3, 1.0, sigmoids=v),
            [(0, "0")],
        ),
        *each(
            "SigmoidStackModel",
            "slope",
            lambda v: SigmoidStackModel(3, 1.0, slope=v),
            [(NAN, "nan"), (0.0, "0.0")],
        ),
        *each(
            "SigmoidStackModel",
            "generator",
            lambda v: SigmoidStackModel(3, 1.0, generator=v),
            [(0, "got int")],
        ),
        *each("LogIncrementModel", "half_size", LogIncrementModel, POSITIVE_INT[:3]),
        *each(
            "LogIncrementModel",
            "init_increments",
            lambda v: LogIncrementModel(3, init_increments=v),
            [
                ([0.1, NAN, 0.1], "got nan at index 1"),
                (-1.0, "got -1.0 at index 0"),
                ([0.1, 0.1], "got shape (2,)"),
                ([], "got shape (0,)"),
                ("a", "got 'a'"),
            ],
        ),
        *each("LogIncrementModel", "pmf", LogIncrementModel.from_pmf, PMF, tag="from_pmf"),
        *each(
            "LogIncrementModel",
            "pmf",
            LogIncrementModel.from_pmf,
            [
                ([0.25, 0.25, 0.25, 0.25], "got length 4"),
                ([0.0, 1.0, 0.0], "got 0.0 at index 0"),
                ([0.1, 0.5, 0.4], "relative difference 0.75"),
                ([0.3, 0.1, 0.2, 0.1, 0.3], "pmf[0] = 0.3 > pmf[1] = 0.1"),
                (torch.tensor([0.25, NAN, 0.25]), "got nan at index 1"),
            ],
            tag="from_pmf_shape",
        ),
        *[
            case("build_model", name, shown, lambda tmp, a=arguments: build_model(**a))
            for name, arguments, shown in [
                ("name", {"name": "mlp"}, "got 'mlp'"),
                ("half_size", {"half_size": 0}, "got 0"),
                ("bound", {"bound": NAN}, "got nan"),
                ("seed", {"seed": -1}, "got -1"),
                ("seed", {"seed": 1.5}, "got 1.5"),
                ("sigmoids", {"sigmoids": 2.5}, "got 2.5"),
            ]
            for arguments in [
                {"name": "sigmoid", "half_size": 3, "bound": 1.0, "seed": 0} | arguments
            ]
        ],
    ]
    for wrapper in (extended_ma_delta, buckets_delta):
        label = wrapper.__name__

        def call(changes, wrapper=wrapper, pmf=None):
            return wrapper(PMF_TENSOR if pmf is None else pmf, **(WRAPPER | changes))

        OPTIMIZER_CASES += [
            *each(label, "step", lambda v, c=call: c({"step": v}), FINITE + NOT_POSITIVE),
            *each(
                label,
                "sensitivity",
                lambda v, c=call: c({"sensitivity": v}),
                [(0.3, "sensitivity=0.3 is not a whole number of grid steps (step=0.5)")],
            ),
            *each(label, "sensitivity", lambda v, c=call: c({"sensitivity": v}), NOT_POSITIVE),
            *each(label, "epsilon", lambda v, c=call: c({"epsilon": v}), EPSILON),
            *each(label, "times", lambda v, c=call: c({"times": v}), POSITIVE_INT[:3]),
            *each(label, "q", lambda v, c=call: c({"q": v}), Q),
            *each(label, "direction", lambda v, c=call: c({"direction": v}), [("AB", "'AB'")]),
            *each(
                label,
                "pmf",
                lambda v, c=call: c({}, pmf=v),
                [
                    (torch.tensor([0.25, NAN, 0.25, 0.25, 0.25]), "got nan at index 1"),
                    (torch.full((5,), 0.25, dtype=torch.float64), "got sum 1.25"),
                    (torch.ones(3, 3) / 9, "got shape (3, 3)"),
                    (torch.tensor([], dtype=torch.float64), "must not be empty"),
                    ([0.25, 0.5, 0.25], "got list"),
                    (torch.tensor([0, 1, 0]), "got tensor of dtype torch.int64"),
                ],
            ),
        ]
    OPTIMIZER_CASES += [
        case(
            "extended_ma_delta",
            "conversion",
            "got 'exact'",
            lambda tmp: extended_ma_delta(PMF_TENSOR, **WRAPPER, conversion="exact"),
        ),
        *each(
            "buckets_delta",
            "kind",
            lambda v: buckets_delta(PMF_TENSOR, **WRAPPER, kind=v),
            [("MA", "got 'MA'"), ("x", "got 'x'")],
        ),
        *each(
            "buckets_delta",
            "width",
            lambda v: buckets_delta(PMF_TENSOR, **WRAPPER, width=v),
            [(NAN, "got nan"), (-0.01, "got -0.01")],
        ),
    ]
else:  # pragma: no cover
    OPTIMIZER_CASES = []

CASES = ACCOUNTANT_CASES + OPTIMIZER_CASES


@pytest.mark.parametrize(("call", "error", "argument", "shown"), CASES)
def test_bad_input_is_refused_naming_the_argument_and_the_value(
    call, error, argument, shown, tmp_path
):
    with pytest.raises(error) as info:
        call(tmp_path)
    assert isinstance(info.value, ValueError)  # both library errors subclass ValueError
    message = str(info.value)
    assert "\n" not in message and message.strip() == message, message
    assert re.search(rf"(?<![A-Za-z_]){re.escape(argument)}(?![A-Za-z_])", message), message
    assert shown in message, message


def test_case_ids_are_unique():
    ids = [c.id for c in CASES]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


# ---------------------------------------------------------------------------------------
# every public name is catalogued, covered by an older table, or takes no user input

#: Public names that take no user input: exceptions, warnings, a protocol, and result
#: records the library builds (users only read them).
NO_USER_INPUT = {
    "AccountantError": "exception",
    "CertificationWarning": "warning",
    "InfeasibleTargetError": "exception",
    "InvalidInputError": "exception",
    "ShiftInvarianceWarning": "warning",
    "CheckpointError": "exception",
    "NoiseCollapseError": "exception",
    "LogMomentSource": "protocol (typing.Protocol, not instantiated)",
    "Bounds": "result of PrivacyBuckets.delta",
    "EpsilonBounds": "result of PrivacyBuckets.epsilon",
    "Certificate": "result of certify",
    "GaussianBaseline": "result of best_truncated_gaussian",
    "DirectionalBound": "result of ExtendedMA.delta_details",
    "MomentsDelta": "result of ExtendedMA.delta_details",
    "MomentsGradient": "result of ExtendedMA.delta_and_gradient",
    "PairGradient": "result of ExtendedMA.delta_and_gradient",
    "NoiseBound": "result of noise_bound",
    "SmoothDelta": "result of smooth_bucket_delta",
    "optimal.OptimalNoise": "result of optimal_noise",
}

#: Public names whose bad inputs the older catalogue ``tests/test_bad_inputs.py`` covers,
#: with the id prefix of their cases there.
COVERED_IN_TEST_BAD_INPUTS = {
    "NoiseDistribution": "NoiseDistribution-",
    "WorstCasePair": "WorstCasePair-",
    "additive_shift_pairs": "additive_shift_pairs-",
    "exact_delta": "exact_delta-",
    "exact_delta_pdp": "exact_delta_pdp-",
    "exact_epsilon": "exact_epsilon-",
    "privacy_loss_distribution": "privacy_loss_distribution-",
    "noise.NoiseDistribution": "NoiseDistribution-",
    "noise.from_array": "from_array-",
    "noise.staircase": "staircase-",
    "noise.truncated_gaussian": "truncated_gaussian-",
}


def _public_callables(package) -> set[str]:
    names = set()
    for name in package.__all__:
        value = getattr(package, name)
        if isinstance(value, type(accountant)):  # a public submodule: its own __all__
            names |= {
                f"{name}.{inner}" for inner in value.__all__ if callable(getattr(value, inner))
            }
        elif callable(value):
            names.add(name)
    return names


def test_every_public_callable_is_in_a_catalogue_or_takes_no_input():
    from tests.test_bad_inputs import CASES as OLDER_CASES

    older_ids = [c.id for c in OLDER_CASES]
    for name, prefix in COVERED_IN_TEST_BAD_INPUTS.items():
        assert any(i.startswith(prefix) for i in older_ids), (name, prefix)
    public = _public_callables(accountant)
    if torch is not None:
        public |= _public_callables(optimizers)
    known = CATALOGUED | set(NO_USER_INPUT) | set(COVERED_IN_TEST_BAD_INPUTS)
    assert sorted(public - known) == [], "new public API without bad-input cases"
    assert sorted(CATALOGUED - public) == []  # no stale names in the catalogue


# ---------------------------------------------------------------------------------------
# the command line: exit status 2, exactly one line on stderr naming the argument


def _pmf_files(directory: Path) -> None:
    np.save(directory / "nan.npy", np.array([0.25, np.nan, 0.5, 0.25, 0.0]))
    np.save(directory / "unnormalised.npy", np.array([0.25, 0.5, 0.5]))
    np.save(directory / "empty.npy", np.array([]))
    np.save(directory / "negative.npy", np.array([0.6, -0.1, 0.5]))
    np.save(directory / "strings.npy", np.array(["0.5", "0.5", "0"]))
    (directory / "empty.txt").write_text("")
    (directory / "nan.csv").write_text("0.25,nan,0.25,0.25,0.25\n")
    (directory / "words.txt").write_text("0.25 abc 0.25\n")
    (directory / "fake.npy").write_bytes(b"\x93NUMPY not really")
    (directory / "a_file").write_text("x")
    (directory / "folder.png").mkdir(exist_ok=True)


SMALL_AUDIT = ["--sigma", "2", "--bound", "4", "--step", "0.5", "-n", "2"]
SMALL_LEARN = ["--bound", "4", "--step", "0.25", "--epsilon", "1", "-n", "2"]
LEARN_RUN = [*SMALL_LEARN, "--target-delta", "0.2", "--epochs", "2", "--no-progress"]


def _file(name: str) -> list[str]:
    return ["--family", "file", "--pmf-file", "{tmp}/" + name, "--step", "0.5"]


# (arguments, the argument's name as the message shows it, the value as shown)
AUDIT_CASES = [
    (["--sigma", "inf"], "sigma", "got inf"),
    (["--family", "truncated-laplace", "--scale", "nan"], "scale", "got nan"),
    (["--family", "truncated-laplace", "--scale=-2"], "scale", "got -2.0"),
    (["--family", "staircase", "--stair-epsilon", "nan"], "epsilon", "got nan"),
    (["--family", "staircase", "--stair-epsilon", "0"], "epsilon", "got 0.0"),
    (["--family", "staircase", "--gamma", "1.5"], "gamma", "got 1.5"),
    (["--bound", "nan"], "bound", "got nan"),
    (["--bound", "inf"], "bound", "got inf"),
    (["--bound=-1"], "bound", "got -1.0"),
    (["--step", "0"], "step", "got 0.0"),
    (["--step", "nan"], "step", "got nan"),
    (["--step", "0.3"], "bound", "(step=0.3)"),
    (["--sensitivity", "nan"], "sensitivity", "got nan"),
    (["--sensitivity=-1"], "sensitivity", "got -1.0"),
    (["--sensitivity", "inf"], "sensitivity", "got inf"),
    (["--sensitivity", "0.75"], "sensitivity", "sensitivity=0.75 is not a whole number"),
    (["--sampling-rate", "0"], "q", "got 0.0"),
    (["--sampling-rate=-0.1"], "q", "got -0.1"),
    (["--sampling-rate", "nan"], "q", "got nan"),
    (["--sampling-rate", "inf"], "q", "got inf"),
    (["--sampling-rate", "0.1", "--sensitivity", "0.25"], "clip", "clip=0.25"),
    (["-n=-3"], "-n/--compositions", "got -3"),
    (["-n", "nan"], "-n/--compositions", "'nan'"),
    (["-n", "1e3"], "-n/--compositions", "'1e3'"),
    (["--epsilon", "nan"], "epsilon", "got nan"),
    (["--epsilon", "inf"], "epsilon", "got inf"),
    (["--epsilon=-0.1"], "epsilon", "got -0.1"),
    (["--target-delta", "0"], "target_delta", "got 0.0"),
    (["--target-delta", "nan"], "target_delta", "got nan"),
    (["--target-delta=-1e-5"], "target_delta", "got -1e-05"),
    (["--target-delta", "1"], "target_delta", "got 1.0"),
    (["--target-delta", "1e-12"], "delta", "delta=1e-12"),  # impossible: below omega
    (_file("nan.npy"), "--pmf-file", "got nan at index 1"),
    (_file("nan.csv"), "--pmf-file", "got nan at index 1"),
    (_file("unnormalised.npy"), "--pmf-file", "got sum 1.25"),
    (_file("empty.npy"), "--pmf-file", "must not be empty"),
    (_file("empty.txt"), "--pmf-file", "must not be empty"),
    (_file("negative.npy"), "--pmf-file", "got -0.1 at index 1"),
    (_file("strings.npy"), "--pmf-file", "got dtype <U3"),
    (_file("words.txt"), "--pmf-file", "'abc'"),
    (_file("fake.npy"), "--pmf-file", "fake.npy"),
    (_file("missing.npy"), "--pmf-file", "missing.npy"),
    (["--family", "file", "--pmf-file", "{tmp}"], "--pmf-file", "Is a directory"),
    ([*_file("unnormalised.npy"), "--start", "nan"], "--pmf-file", "got sum 1.25"),
    (["--plot", "{tmp}/a_file/curves.png"], "--plot", "a_file' is not a directory"),
    (["--plot", "{tmp}/folder.png"], "--plot", "folder.png', which is a directory"),
]

LEARN_CASES = [
    (["--epsilon", "nan"], "epsilon", "got nan"),
    (["--epsilon", "inf"], "epsilon", "got inf"),
    (["--epsilon=-1"], "epsilon", "got -1.0"),
    (["-n", "0"], "times", "got 0"),
    (["-n=-1"], "times", "got -1"),
    (["-n", "2.5"], "-n/--times", "'2.5'"),
    (["--bound", "nan"], "bound", "got nan"),
    (["--bound", "0"], "bound", "got 0.0"),
    (["--bound", "4.1"], "bound", "bound=4.1"),
    (["--step", "nan"], "step", "got nan"),
    (["--step", "0.3"], "bound", "(step=0.3)"),
    (["--sensitivity", "0.3"], "sensitivity", "sensitivity=0.3 is not a whole number"),
    (["--sensitivity", "nan"], "sensitivity", "got nan"),
    (["--sensitivity", "inf"], "sensitivity", "got inf"),
    (["--sensitivity", "9"], "sensitivity", "sensitivity=9.0"),
    (["--sampling-rate", "0"], "q", "got 0.0"),
    (["--sampling-rate", "1.5"], "q", "got 1.5"),
    (["--sampling-rate", "nan"], "q", "got nan"),
    (["--target-delta", "nan"], "target_delta", "got nan"),
    (["--target-delta", "1"], "target_delta", "got 1.0"),
    (["--target-delta=-0.1"], "target_delta", "got -0.1"),
    (["--epochs=-1"], "epochs", "got -1"),
    (["--epochs", "2.5"], "--epochs", "'2.5'"),
    (["--learning-rate", "nan"], "learning_rate", "got nan"),
    (["--learning-rate", "0"], "learning_rate", "got 0.0"),
    (["--learning-rate-decay", "1.5"], "learning_rate_decay", "got 1.5"),
    (["--utility-weight", "inf"], "utility_weight", "got inf"),
    (["--weight-half-life", "0"], "weight_half_life", "got 0.0"),
    (["--weight-min=-1"], "weight_min", "got -1.0"),
    (["--penalty", "nan"], "penalty", "got nan"),
    (["--sigmoids", "0"], "sigmoids", "got 0"),
    (["--seed=-1"], "seed", "got -1"),
    (["--checkpoint-every", "0"], "checkpoint_every", "got 0"),
    (["--utility", "L3"], "--utility", "'L3'"),
    (["--model", "mlp"], "--model", "'mlp'"),
    (["--resume"], "checkpoint", "got None"),
    (["--resume", "--checkpoint", "{tmp}/missing.ckpt"], "checkpoint", "does not exist"),
    (["--resume", "--checkpoint", "{tmp}/a_file"], "checkpoint", "not a checkpoint"),
    (["--checkpoint", "{tmp}/a_file/run.ckpt"], "--checkpoint", "a_file' is not a directory"),
    (["--checkpoint", "{tmp}"], "--checkpoint", "which is a directory"),
    (["--output", "{tmp}/a_file"], "--output", "a_file', which is a file"),
    (["--plot", "{tmp}/a_file/noise.png"], "--plot", "a_file' is not a directory"),
]


def _run_main(args: list[str], tmp_path: Path) -> tuple[int, str, str]:
    _pmf_files(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", CertificationWarning)
        status = main(args)
    return status, out.getvalue(), err.getvalue()


def _assert_one_line(status: int, out: str, err: str, argument: str, shown: str) -> None:
    assert status == 2, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("accountant"), lines[0]
    assert argument in lines[0] and shown in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "argument", "shown"),
    [pytest.param(a, n, s, id=" ".join(a)) for a, n, s in AUDIT_CASES],
)
def test_audit_bad_flag_exits_2_with_one_line(args, argument, shown, tmp_path):
    status, out, err = _run_main(["audit", *SMALL_AUDIT, *args], tmp_path)
    _assert_one_line(status, out, err, argument, shown)


@pytest.mark.skipif(torch is None, reason="accountant learn needs the [torch] extra")
@pytest.mark.parametrize(
    ("args", "argument", "shown"),
    [pytest.param(a, n, s, id=" ".join(a)) for a, n, s in LEARN_CASES],
)
def test_learn_bad_flag_exits_2_with_one_line(args, argument, shown, tmp_path):
    status, out, err = _run_main(["learn", *LEARN_RUN, *args], tmp_path)
    _assert_one_line(status, out, err, argument, shown)


def test_no_cli_case_repeats_tests_test_cli():
    from tests.test_cli import test_bad_arguments_exit_2_with_one_line as older

    (marker,) = [m for m in older.pytestmark if m.name == "parametrize"]
    older_args = {tuple(args) for args, _ in marker.args[1]}
    ours = {("audit", *args) for args, _, _ in AUDIT_CASES}
    ours |= {("learn", *args) for args, _, _ in LEARN_CASES}
    assert older_args and not (ours & older_args)
    assert len(AUDIT_CASES) == len({tuple(a) for a, _, _ in AUDIT_CASES})
    assert len(LEARN_CASES) == len({tuple(a) for a, _, _ in LEARN_CASES})


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["audit", *SMALL_AUDIT, "--plot", "{tmp}/a_file/curves.png"],
        pytest.param(
            ["learn", *LEARN_RUN, "--output", "{tmp}/a_file"],
            marks=pytest.mark.skipif(torch is None, reason="needs the [torch] extra"),
        ),
    ],
    ids=["audit-plot-in-a-file", "learn-output-is-a-file"],
)
def test_a_real_process_prints_one_line_and_no_traceback(args, tmp_path):
    _pmf_files(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "accountant", *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---------------------------------------------------------------------------------------
# no NaN result anywhere: valid but awkward inputs give finite numbers

TINY = np.array([5e-324, 1e-300, 1e-200, 0.25, 0.5, 0.25, 1e-200, 1e-300, 5e-324])
TINY[4] = 1.0 - math.fsum(np.delete(TINY, 4).tolist())
TINY_NOISE = noise.from_array(TINY, 0.5)  # symmetric, monotone, masses down to 5e-324
TINY_PAIR = WorstCasePair.additive(TINY_NOISE, 0.5)
SPIKE_PAIR = WorstCasePair.from_arrays([1.0 - 2e-300, 1e-300, 1e-300], [1e-300, 1e-300, 1 - 2e-300])

AWKWARD = {
    "exact_delta-eps-1e300": lambda: exact_delta(PAIR, 1e300),
    "exact_delta_pdp-eps-max-float": lambda: exact_delta_pdp(PAIR, 1.7e308),
    "exact_epsilon-delta-near-1": lambda: exact_epsilon(TINY_PAIR, 1.0 - 1e-16),
    "ExtendedMA-delta-eps-1e300": lambda: ExtendedMA().compose(PAIR, 10).delta(1e300),
    "ExtendedMA-tiny-masses": lambda: ExtendedMA().compose(TINY_PAIR, 1000).delta([0.0, 1.0]),
    "ExtendedMA-spike-epsilon": lambda: ExtendedMA().compose(SPIKE_PAIR, 5).epsilon(0.999999),
    "ExtendedMA-gradient-tiny": lambda: (
        ExtendedMA().compose(TINY_PAIR, 5).delta_and_gradient(0.5).gradients[0][0].b
    ),
    "ExtendedMA-Gaussian-1e15-releases": lambda: (
        ExtendedMA().compose(mechanisms.GaussianMechanism(1.0), 10**15).epsilon(0.5)
    ),
    "PrivacyBuckets-delta-eps-1e6": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2).compose(PAIR, 10).delta([1e6, 1e300])
    ),
    "PrivacyBuckets-tiny-masses": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2).compose(TINY_PAIR, 100).delta(0.5)
    ),
    "PrivacyBuckets-mechanism-eps-1e300": lambda: tuple(
        PrivacyBuckets(accuracy=1e-2)
        .compose(mechanisms.TruncatedLaplaceMechanism(1.0, 3.0), 10)
        .delta_pdp(1e300)
    ),
    "certify-eps-1e300": lambda: _certify(epsilon=1e300).delta_upper,
    "certify-tiny-masses": lambda: certify(TINY_NOISE, PM, epsilon=0.5, times=4).delta_upper,
    "smooth_bucket_delta-eps-1e-300": lambda: _smooth(epsilon=1e-300, times=10).gradient_a,
    "smooth_bucket_delta-eps-max-float": lambda: _smooth(epsilon=1.7e308).delta,
    "smooth_bucket_delta-tiny-masses": lambda: _smooth(pair=TINY_PAIR, times=100).gradient_b,
    "noise_bound-MA-tiny-q": lambda: (
        noise_bound(
            TINY_NOISE, 0.5, pair_map(0.5, 0.5, 1e-3), bound="MA", epsilon=0.5, times=4
        ).gradient
    ),
    "noise_bound-PDP-eps-1e300": lambda: _noise_bound(bound="PDP", epsilon=1e300).gradient,
    "kl_divergence-subnormal": lambda: kl_divergence(TINY_NOISE, TINY_NOISE),
    "truncated_gaussian-sigma-1e-300": lambda: noise.truncated_gaussian(1e-300, 3.0, 1.0).pmf,
    "truncated_gaussian-sigma-1e300": lambda: noise.truncated_gaussian(1e300, 3.0, 1.0).pmf,
    "truncated_laplace-scale-1e-300": lambda: noise.truncated_laplace(1e-300, 3.0, 1.0).pmf,
    "staircase-eps-1e6": lambda: noise.staircase(1.0, 1e6, 3.0, 1.0).pmf,
    "TruncatedGaussianMechanism-lam-1e6": lambda: mechanisms.TruncatedGaussianMechanism(
        1e-3, 3.0
    ).log_moment(1e6, "A/B"),
    "optimal_noise-eps-30": lambda: _optimal(epsilon=30.0, delta=0.5).noise.pmf,
}


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_awkward_but_valid_inputs_give_finite_results(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CertificationWarning)
        result = AWKWARD[name]()
    values = np.asarray(result, dtype=np.float64)
    assert values.size > 0 and np.isfinite(values).all(), result


@pytest.mark.skipif(torch is None, reason="needs the [torch] extra")
@pytest.mark.parametrize("wrapper", ["extended_ma_delta", "buckets_delta"])
def test_torch_wrappers_give_finite_values_and_gradients_at_tiny_masses(wrapper):
    pmf = torch.tensor(TINY, dtype=torch.float64, requires_grad=True)
    function = extended_ma_delta if wrapper == "extended_ma_delta" else buckets_delta
    value = function(pmf, step=0.5, sensitivity=0.5, epsilon=0.5, times=8)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(pmf.grad).all()
