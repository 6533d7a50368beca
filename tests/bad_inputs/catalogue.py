"""Shared pieces of the bad-input catalogue (``tests/bad_inputs/``):
small valid inputs, the ``case``/``each`` builders that record which public callable a
case covers, and the tables of bad values with how messages show them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from accountant import (
    ExtendedMA,
    InvalidInputError,
    PrivacyBuckets,
    WorstCasePair,
    best_truncated_gaussian,
    certify,
    noise,
    noise_bound,
    optimal,
    pair_map,
    smooth_bucket_delta,
)

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
            target,
            argument,
            shown,
            lambda tmp, v=value: build(v),
            tag=f"{prefix} {type(value).__name__} {value!r}",
            **kw,
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


_BTG_ARGUMENTS = {
    "bound": 2.0,
    "step": 0.5,
    "pair_map": PM,
    "epsilon": 1.0,
    "times": 2,
    "target_delta": 0.3,
}


def _btg(**changes):
    return best_truncated_gaussian(**(_BTG_ARGUMENTS | changes))


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
