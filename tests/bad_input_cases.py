"""Bad-input tables and case builders for tests/test_bad_inputs.py (one case per input)."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import (
    InvalidInputError,
    WorstCasePair,
    noise,
    privacy_loss_distribution,
)

GOOD_NOISE = noise.from_array([0.25, 0.5, 0.25], step=0.5)  # symmetric, monotone
GOOD_PAIR = WorstCasePair.from_arrays([0.5, 0.3, 0.2, 0.0], [0.0, 0.2, 0.3, 0.5])  # omega 0.5
GOOD_PLD = privacy_loss_distribution(GOOD_PAIR, "A/B")

# pmf-shaped bad values: (id, value, pattern after the argument's name)
BAD_PMFS = [
    ("nan", [0.5, float("nan"), 0.5], r"must be finite, got (np\.float64\()?nan\)? at index 1"),
    ("inf", [0.5, float("inf")], r"must be finite, got (np\.float64\()?inf\)? at index 1"),
    (
        "negative_mass",
        [0.6, -0.1, 0.5],
        r"must be non-negative, got (np\.float64\()?-0\.1\)? at index 1",
    ),
    ("sum_below_one", [0.3, 0.3, 0.3], r"must sum to 1 .*got sum 0\.8999999"),
    ("sum_above_one", [0.5, 0.6, 0.5], r"must sum to 1 .*got sum 1\.6"),
    ("sum_one_plus_1e-6", [0.5, 0.500001, 0.0], r"must sum to 1 .*got sum 1\.000001"),
    ("empty", [], r"must not be empty"),
    ("two_dimensional", [[0.5, 0.5], [0.0, 0.0]], r"must be one-dimensional, got shape \(2, 2\)"),
    ("scalar", 1.0, r"must be one-dimensional, got shape \(\)"),
    ("strings", ["0.5", "0.5", "0"], r"must have a numeric dtype, got dtype <U3"),
    ("bytes", b"abc", r"must be an array of probabilities, got b'abc'"),
    ("text", "0.5,0.5", r"must be an array of probabilities, got '0\.5,0\.5'"),
    ("bools", [True, False, False], r"must have a numeric dtype, got dtype bool"),
    (
        "objects",
        np.array([0.5, 0.5, 0.0], dtype=object),
        r"must have a numeric dtype, got dtype object",
    ),
    ("none", None, r"must (be one-dimensional|have a numeric dtype|be an array)"),
    ("ragged", [[0.5], [0.25, 0.25]], r"must be an array of probabilities"),
]


def _pmf_cases(label: str, name: str, build):
    cases = []
    for case_id, value, pattern in BAD_PMFS:
        cases.append(
            pytest.param(
                lambda value=value: build(value),
                InvalidInputError,
                rf"{name} {pattern}",
                id=f"{label}-{name}-{case_id}",
            )
        )
    return cases


def _call(function, *args, **kwargs):
    return lambda: function(*args, **kwargs)


# real-valued bad scalars: (id, value, message pattern after "<name> must ...")
NON_FINITE_OR_WRONG_TYPE = [
    ("nan", float("nan"), r"must be finite, got nan"),
    ("inf", float("inf"), r"must be finite, got inf"),
    ("minus_inf", -float("inf"), r"must be finite, got -inf"),
    ("string", "1", r"must be a real number, got '1'"),
    ("bool", True, r"must be a real number, got True"),
    ("none", None, r"must be a real number, got None"),
    ("list", [1.0], r"must be a real number, got \[1\.0\]"),
    ("complex", 1j, r"must be a real number, got 1j"),
]
NOT_POSITIVE = [
    ("zero", 0.0, r"must be > 0, got 0\.0"),
    ("negative", -1.5, r"must be > 0, got -1\.5"),
]


def _positive_real_cases(label: str, name: str, build):
    return [
        pytest.param(
            lambda value=value: build(value),
            InvalidInputError,
            rf"{name} {pattern}",
            id=f"{label}-{name}-{cid}",
        )
        for cid, value, pattern in NON_FINITE_OR_WRONG_TYPE + NOT_POSITIVE
    ]


def _finite_real_cases(label: str, name: str, build):
    return [
        pytest.param(
            lambda value=value: build(value),
            InvalidInputError,
            rf"{name} {pattern}",
            id=f"{label}-{name}-{cid}",
        )
        for cid, value, pattern in NON_FINITE_OR_WRONG_TYPE
    ]


BAD_POSITIVE_INTS = [
    ("zero", 0, r"must be a positive integer, got 0"),
    ("negative", -3, r"must be a positive integer, got -3"),
    ("float", 2.0, r"must be a positive integer, got 2\.0"),
    ("fraction", 2.5, r"must be a positive integer, got 2\.5"),
    ("string", "10", r"must be a positive integer, got '10'"),
    ("bool", True, r"must be a positive integer, got True"),
    ("none", None, r"must be a positive integer, got None"),
    ("nan", float("nan"), r"must be a positive integer, got nan"),
]


def _positive_int_cases(label: str, name: str, build):
    return [
        pytest.param(
            lambda value=value: build(value),
            InvalidInputError,
            rf"{name} {pattern}",
            id=f"{label}-{name}-{cid}",
        )
        for cid, value, pattern in BAD_POSITIVE_INTS
    ]


BAD_EPSILONS = [
    ("negative", -0.1, r"must be finite and >= 0, got (np\.float64\()?-0\.1"),
    ("nan", float("nan"), r"must be finite and >= 0, got .*nan"),
    ("inf", float("inf"), r"must be finite and >= 0, got .*inf"),
    ("negative_in_array", [0.1, -1.0, 0.3], r"must be finite and >= 0, got .*-1\.0"),
    ("nan_in_array", np.array([0.1, np.nan]), r"must be finite and >= 0, got .*nan"),
    ("empty", [], r"must not be empty"),
    ("string", "0.3", r"must be a number or an array of numbers, got '0\.3'"),
    ("bool", True, r"must be a number or an array of numbers, got True"),
    ("none", None, r"must be .*(number|finite).*"),
    ("string_array", ["0.3"], r"must be a number or an array of numbers, got \['0\.3'\]"),
    ("bool_array", [True, False], r"must be a number or an array of numbers, got \[True, False\]"),
    (
        "object_array",
        np.array([0.3, 0.5], dtype=object),
        r"must be a number or an array of numbers, got array\(\[0\.3, 0\.5\], dtype=object\)",
    ),
    ("not_a_number", "abc", r"must be a number or an array of numbers, got 'abc'"),
]


def _epsilon_cases(label: str, function):
    return [
        pytest.param(
            lambda value=value: function(GOOD_PAIR, value),
            InvalidInputError,
            rf"epsilon {pattern}",
            id=f"{label}-epsilon-{cid}",
        )
        for cid, value, pattern in BAD_EPSILONS
    ]


BAD_DIRECTIONS = [
    ("unknown", "AB", r"'AB'"),
    ("lower_case", "a/b", r"'a/b'"),
    ("padded", "max ", r"'max '"),
    ("none", None, r"None"),
    ("number", 1, r"1"),
]


def _direction_cases(label: str, call):
    return [
        pytest.param(
            lambda value=value: call(value),
            InvalidInputError,
            rf"direction must be one of \('max', 'A/B', 'B/A'\), got {pattern}",
            id=f"{label}-direction-{cid}",
        )
        for cid, value, pattern in BAD_DIRECTIONS
    ]


BAD_TARGET_DELTAS = [
    ("zero", 0.0, r"delta must lie in \(0, 1\), got 0\.0"),
    ("one", 1.0, r"delta must lie in \(0, 1\), got 1\.0"),
    ("negative", -1e-5, r"delta must lie in \(0, 1\), got -1e-05"),
    ("above_one", 1.5, r"delta must lie in \(0, 1\), got 1\.5"),
    ("nan", float("nan"), r"delta must be finite, got nan"),
    ("inf", float("inf"), r"delta must be finite, got inf"),
    ("string", "1e-5", r"delta must be a real number, got '1e-5'"),
    ("bool", True, r"delta must be a real number, got True"),
    ("array", np.array([1e-5]), r"delta must be a real number, got array"),
]


def _target_delta_cases(label: str, call):
    return [
        pytest.param(
            lambda value=value: call(value), InvalidInputError, pattern, id=f"{label}-{cid}"
        )
        for cid, value, pattern in BAD_TARGET_DELTAS
    ]
