"""Bad-input cases for worst-case pairs (``WorstCasePair`` and its builders,
``additive_shift_pairs``), privacy-loss distributions and the exact single-release
bounds (``exact_delta``, ``exact_delta_pdp``, ``exact_epsilon``)."""

from __future__ import annotations

import numpy as np

from accountant import (
    InfeasibleTargetError,
    WorstCasePair,
    additive_shift_pairs,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    privacy_loss_distribution,
)
from tests.bad_inputs.cases_noise import GOOD, PMF_ARRAYS, POSITIVE
from tests.bad_inputs.catalogue import INF, NAN, PAIR_OMEGA, case, each

GOOD_PLD = privacy_loss_distribution(PAIR_OMEGA, "A/B")
EXACT = {"exact_delta": exact_delta, "exact_delta_pdp": exact_delta_pdp}

#: eps for a query: one value or an array of them.
EPSILON_QUERIES = [
    (-0.1, "must be finite and >= 0, got -0.1"),
    (NAN, "must be finite and >= 0, got nan"),
    (INF, "must be finite and >= 0, got inf"),
    ([0.1, -1.0, 0.3], "must be finite and >= 0, got -1.0"),
    (np.array([0.1, np.nan]), "must be finite and >= 0, got nan"),
    ([], "must not be empty"),
    ("0.3", "must be a number or an array of numbers, got '0.3'"),
    (True, "must be a number or an array of numbers, got True"),
    (None, "must be a number or an array of numbers, got None"),
    (["0.3"], "must be a number or an array of numbers, got ['0.3']"),
    ([True, False], "must be a number or an array of numbers, got [True, False]"),
    (
        np.array([0.3, 0.5], dtype=object),
        "must be a number or an array of numbers, got array([0.3, 0.5], dtype=object)",
    ),
    ("abc", "must be a number or an array of numbers, got 'abc'"),
]
DIRECTIONS = [
    (value, f"direction must be one of ('max', 'A/B', 'B/A'), got {value!r}")
    for value in ("AB", "a/b", "max ", None, 1)
]
TARGET_DELTAS = [
    (0.0, "delta must lie in (0, 1), got 0.0"),
    (1.0, "delta must lie in (0, 1), got 1.0"),
    (-1e-5, "delta must lie in (0, 1), got -1e-05"),
    (1.5, "delta must lie in (0, 1), got 1.5"),
    (NAN, "delta must be finite, got nan"),
    (INF, "delta must be finite, got inf"),
    ("1e-5", "delta must be a real number, got '1e-5'"),
    (True, "delta must be a real number, got True"),
    (np.array([1e-5]), "delta must be a real number, got array"),
]
NOT_PAIRS = [
    ([], "pair must be a WorstCasePair or a non-empty sequence of them, got list"),
    ([PAIR_OMEGA, "pair"], "pair must be a WorstCasePair or a non-empty sequence of them"),
    (np.array([0.5, 0.5]), "got ndarray"),
    (5, "got int"),
    (None, "got NoneType"),
]
Q_VALUES = [
    (0.0, "q must lie in (0, 1], got 0.0"),
    (-0.1, "q must lie in (0, 1], got -0.1"),
    (1.5, "q must lie in (0, 1], got 1.5"),
    (NAN, "q must be finite, got nan"),
    (INF, "q must be finite, got inf"),
    ("0.5", "q must be a real number, got '0.5'"),
    (True, "q must be a real number, got True"),
]
HALVES = [0.5, 0.5, 0.0]


def _infeasible(target: str, call, tag: str):
    shown = "delta=0.1 is below the distinguishing mass of one release 0.5; no epsilon reaches it"
    return case(target, "delta", shown, lambda _: call(), InfeasibleTargetError, tag=tag)


PAIR_CASES = [
    # --- WorstCasePair ----------------------------------------------------------------
    *each("WorstCasePair", "a", lambda v: WorstCasePair(v, HALVES), PMF_ARRAYS),
    *each("WorstCasePair", "b", lambda v: WorstCasePair(HALVES, v), PMF_ARRAYS),
    *each(
        "WorstCasePair",
        "a",
        lambda v: WorstCasePair.from_arrays(v, HALVES),
        PMF_ARRAYS,
        tag="from_arrays",
    ),
    *each(
        "WorstCasePair",
        "b",
        lambda v: WorstCasePair.from_arrays(HALVES, v),
        PMF_ARRAYS,
        tag="from_arrays",
    ),
    case(
        "WorstCasePair",
        "a",
        "a and b must have the same length, got len(a)=2 and len(b)=3",
        lambda _: WorstCasePair([0.5, 0.5], [0.25, 0.25, 0.5]),
    ),
    case(
        "WorstCasePair",
        "a",
        "a and b must have the same length, got len(a)=1 and len(b)=2",
        lambda _: WorstCasePair.from_arrays([1.0], [0.5, 0.5]),
        tag="from_arrays lengths",
    ),
    *each(
        "WorstCasePair",
        "noise",
        lambda v: WorstCasePair.additive(v, 1.0),
        [(np.array([0.25, 0.5, 0.25]), "noise must be a NoiseDistribution, got ndarray")],
        tag="additive",
    ),
    *each(
        "WorstCasePair",
        "sensitivity",
        lambda v: WorstCasePair.additive(GOOD, v),
        [
            *POSITIVE,
            (
                0.3,
                "sensitivity=0.3 is not a whole number of grid steps (step=0.5); "
                "possible values are multiples of the step: 0.5, 1, 1.5",
            ),
        ],
        tag="additive",
    ),
    *each(
        "WorstCasePair",
        "noise",
        lambda v: WorstCasePair.subsampled(v, 0.5, 1.0),
        [("noise", "noise must be a NoiseDistribution, got str")],
        tag="subsampled",
    ),
    *each("WorstCasePair", "q", lambda v: WorstCasePair.subsampled(GOOD, v, 1.0), Q_VALUES),
    *each(
        "WorstCasePair",
        "clip",
        lambda v: WorstCasePair.subsampled(GOOD, 0.5, v),
        [*POSITIVE, (0.75, "clip=0.75 is not a whole number of grid steps")],
    ),
    # --- additive_shift_pairs ---------------------------------------------------------
    case(
        "additive_shift_pairs",
        "noise",
        "noise must be a NoiseDistribution, got list",
        lambda _: additive_shift_pairs([0.5, 0.5], 1.0),
    ),
    *each(
        "additive_shift_pairs",
        "sensitivity",
        lambda v: additive_shift_pairs(GOOD, v),
        [*POSITIVE, (1.2, "sensitivity=1.2 is not a whole number of grid steps")],
    ),
    # --- exact bounds and PLDs ----------------------------------------------------------
    *(
        entry
        for name, function in EXACT.items()
        for entry in (
            *each(name, "epsilon", lambda v, f=function: f(PAIR_OMEGA, v), EPSILON_QUERIES),
            *each(name, "direction", lambda v, f=function: f(PAIR_OMEGA, 0.1, v), DIRECTIONS),
            *each(name, "pair", lambda v, f=function: f(v, 0.1), NOT_PAIRS),
        )
    ),
    *each("PrivacyLossDistribution", "epsilon", GOOD_PLD.delta, EPSILON_QUERIES, tag="delta"),
    *each("PrivacyLossDistribution", "epsilon", GOOD_PLD.delta_pdp, EPSILON_QUERIES, tag="pdp"),
    *each("PrivacyLossDistribution", "delta", GOOD_PLD.epsilon, TARGET_DELTAS, tag="adp"),
    *each("PrivacyLossDistribution", "delta", GOOD_PLD.epsilon_pdp, TARGET_DELTAS, tag="pdp"),
    *each("exact_epsilon", "direction", lambda v: exact_epsilon(PAIR_OMEGA, 0.6, v), DIRECTIONS),
    *each("exact_epsilon", "pair", lambda v: exact_epsilon(v, 0.1), NOT_PAIRS),
    *each("exact_epsilon", "delta", lambda v: exact_epsilon(PAIR_OMEGA, v), TARGET_DELTAS),
    *each(
        "exact_epsilon",
        "delta",
        lambda v: exact_epsilon(PAIR_OMEGA, v, kind="PDP"),
        TARGET_DELTAS,
        tag="pdp",
    ),
    *each(
        "exact_epsilon",
        "kind",
        lambda v: exact_epsilon(PAIR_OMEGA, 0.6, kind=v),
        [(kind, f"kind must be 'ADP' or 'PDP', got {kind!r}") for kind in ("adp", "rdp", None)],
    ),
    *each(
        "privacy_loss_distribution",
        "direction",
        lambda v: privacy_loss_distribution(PAIR_OMEGA, v),
        DIRECTIONS,
    ),
    *each(
        "privacy_loss_distribution",
        "direction",
        lambda v: privacy_loss_distribution(PAIR_OMEGA, v),
        [("max", "direction must be 'A/B' or 'B/A' for one PLD, got 'max'")],
        tag="one PLD",
    ),
    case(
        "privacy_loss_distribution",
        "pair",
        "pair must be a WorstCasePair, got tuple",
        lambda _: privacy_loss_distribution(([0.5, 0.5], [0.5, 0.5])),
    ),
    # --- impossible targets: delta below the distinguishing mass omega = 0.5 ------------
    _infeasible("exact_epsilon", lambda: exact_epsilon(PAIR_OMEGA, 0.1), "adp"),
    _infeasible("exact_epsilon", lambda: exact_epsilon(PAIR_OMEGA, 0.1, kind="PDP"), "pdp"),
    _infeasible("exact_epsilon", lambda: exact_epsilon(PAIR_OMEGA, 0.1, "A/B"), "A/B"),
    _infeasible("exact_epsilon", lambda: exact_epsilon(PAIR_OMEGA, 0.1, "B/A"), "B/A"),
    _infeasible(
        "exact_epsilon",
        lambda: exact_epsilon([PAIR_OMEGA, PAIR_OMEGA.flipped()], 0.1),
        "several",
    ),
    _infeasible("PrivacyLossDistribution", lambda: GOOD_PLD.epsilon(0.1), "adp"),
    _infeasible("PrivacyLossDistribution", lambda: GOOD_PLD.epsilon_pdp(0.1), "pdp"),
]
