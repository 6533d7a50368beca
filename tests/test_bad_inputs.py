"""A catalogue of bad inputs (ARCHITECTURE, "Conventions"): every public entry point of
noise / pairs / pld refuses each class of bad input with a specific exception whose
message names the argument and shows the value. Never a NaN result, never a silent clip,
never a silent renormalisation."""

from __future__ import annotations

import numpy as np
import pytest

from accountant import (
    InfeasibleTargetError,
    InvalidInputError,
    NoiseDistribution,
    WorstCasePair,
    additive_shift_pairs,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
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


CASES = [
    # --- noise families -----------------------------------------------------------------
    *_positive_real_cases(
        "truncated_gaussian", "sigma", lambda v: noise.truncated_gaussian(v, 2.0, 0.5)
    ),
    *_positive_real_cases(
        "truncated_gaussian", "bound", lambda v: noise.truncated_gaussian(1.0, v, 0.5)
    ),
    *_positive_real_cases(
        "truncated_gaussian", "step", lambda v: noise.truncated_gaussian(1.0, 2.0, v)
    ),
    pytest.param(
        _call(noise.truncated_gaussian, 1.0, 1.3, 0.5),
        InvalidInputError,
        r"bound=1\.3 must be a positive whole number of grid steps \(step=0\.5\)",
        id="gaussian-bound-not-multiple-of-step",
    ),
    pytest.param(
        _call(noise.truncated_gaussian, 1.0, 0.2, 0.5),
        InvalidInputError,
        r"bound=0\.2 must be a positive whole number of grid steps",
        id="gaussian-bound-below-one-step",
    ),
    *_positive_real_cases(
        "truncated_laplace", "scale", lambda v: noise.truncated_laplace(v, 2.0, 0.5)
    ),
    pytest.param(
        _call(noise.truncated_laplace, 1.0, float("nan"), 0.5),
        InvalidInputError,
        r"bound must be finite, got nan",
        id="laplace-bound-nan",
    ),
    pytest.param(
        _call(noise.truncated_laplace, 1.0, 2.0, -0.5),
        InvalidInputError,
        r"step must be > 0, got -0\.5",
        id="laplace-step-negative",
    ),
    *_positive_real_cases("staircase", "sensitivity", lambda v: noise.staircase(v, 0.3, 2.0, 0.5)),
    *_positive_real_cases("staircase", "epsilon", lambda v: noise.staircase(1.0, v, 2.0, 0.5)),
    *[  # gamma=None means the default gamma*, so it is not a bad input here
        case
        for case in _finite_real_cases(
            "staircase", "gamma", lambda v: noise.staircase(1.0, 0.3, 2.0, 0.5, gamma=v)
        )
        if not case.id.endswith("-none")
    ],
    pytest.param(
        _call(noise.staircase, 1.0, 0.3, 2.0, 0.5, gamma=1.5),
        InvalidInputError,
        r"gamma must lie in \[0, 1\], got 1\.5",
        id="staircase-gamma-above-one",
    ),
    pytest.param(
        _call(noise.staircase, 1.0, 0.3, 2.0, 0.5, gamma=-0.1),
        InvalidInputError,
        r"gamma must lie in \[0, 1\], got -0\.1",
        id="staircase-gamma-negative",
    ),
    pytest.param(
        _call(noise.staircase, 1.0, 0.3, 2.1, 0.5),
        InvalidInputError,
        r"bound=2\.1 must be a positive whole number of grid steps",
        id="staircase-bound-not-multiple",
    ),
    pytest.param(
        _call(noise.uniform, float("inf"), 0.5),
        InvalidInputError,
        r"bound must be finite, got inf",
        id="uniform-bound-inf",
    ),
    pytest.param(
        _call(noise.uniform, 2.0, 0.0),
        InvalidInputError,
        r"step must be > 0, got 0\.0",
        id="uniform-step-zero",
    ),
    pytest.param(
        _call(noise.uniform, 2.0, "0.5"),
        InvalidInputError,
        r"step must be a real number, got '0\.5'",
        id="uniform-step-string",
    ),
    # --- from_array ---------------------------------------------------------------------
    *_pmf_cases("from_array", "pmf", lambda v: noise.from_array(v, step=0.5, start=0.0)),
    pytest.param(
        _call(noise.from_array, [0.25, 0.25, 0.25, 0.25], 0.5),
        InvalidInputError,
        r"pmf has even length 4, so it cannot be centred on 0; pass start=",
        id="from_array-even-length-no-start",
    ),
    *_positive_real_cases(
        "from_array", "step", lambda v: noise.from_array([0.5, 0.5], v, start=0.0)
    ),
    *[  # start=None means "centre the grid on 0", so it is not a bad input here
        case
        for case in _finite_real_cases(
            "from_array", "start", lambda v: noise.from_array([0.5, 0.5], 0.5, start=v)
        )
        if not case.id.endswith("-none")
    ],
    # --- NoiseDistribution --------------------------------------------------------------
    *_pmf_cases(
        "NoiseDistribution", "pmf", lambda v: NoiseDistribution(pmf=v, step=0.5, start=0.0)
    ),
    *_positive_real_cases(
        "NoiseDistribution", "step", lambda v: NoiseDistribution(pmf=[1.0], step=v, start=0.0)
    ),
    *_finite_real_cases(
        "NoiseDistribution", "start", lambda v: NoiseDistribution(pmf=[1.0], step=1.0, start=v)
    ),
    pytest.param(
        lambda: GOOD_NOISE.utility("L3"),
        InvalidInputError,
        r"kind must be 'L1' or 'L2', got 'L3'",
        id="utility-kind",
    ),
    *_positive_real_cases("shift_steps", "sensitivity", lambda v: GOOD_NOISE.shift_steps(v)),
    pytest.param(
        lambda: GOOD_NOISE.shift_steps(0.7),
        InvalidInputError,
        r"sensitivity=0\.7 is not a whole number of grid steps \(step=0\.5\)",
        id="shift_steps-not-multiple",
    ),
    # --- sample ---------------------------------------------------------------------------
    *_positive_int_cases(
        "sample", "size", lambda v: GOOD_NOISE.sample(v, np.random.default_rng(0))
    ),
    *_positive_int_cases(
        "sample", "dimension", lambda v: GOOD_NOISE.sample(5, np.random.default_rng(0), dimension=v)
    ),
    pytest.param(
        lambda: GOOD_NOISE.sample(5, 42),
        InvalidInputError,
        r"rng must be a numpy\.random\.Generator, got 42",
        id="sample-rng-int-seed",
    ),
    pytest.param(
        lambda: GOOD_NOISE.sample(5, np.random.RandomState(0)),
        InvalidInputError,
        r"rng must be a numpy\.random\.Generator, got RandomState",
        id="sample-rng-legacy",
    ),
    # --- WorstCasePair ----------------------------------------------------------------------
    *_pmf_cases("WorstCasePair", "a", lambda v: WorstCasePair(v, [0.5, 0.5, 0.0])),
    *_pmf_cases("WorstCasePair", "b", lambda v: WorstCasePair([0.5, 0.5, 0.0], v)),
    *_pmf_cases("from_arrays", "a", lambda v: WorstCasePair.from_arrays(v, [0.5, 0.5, 0.0])),
    *_pmf_cases("from_arrays", "b", lambda v: WorstCasePair.from_arrays([0.5, 0.5, 0.0], v)),
    pytest.param(
        _call(WorstCasePair, [0.5, 0.5], [0.25, 0.25, 0.5]),
        InvalidInputError,
        r"a and b must have the same length, got len\(a\)=2 and len\(b\)=3",
        id="pair-mismatched-lengths",
    ),
    pytest.param(
        _call(WorstCasePair.from_arrays, [1.0], [0.5, 0.5]),
        InvalidInputError,
        r"a and b must have the same length, got len\(a\)=1 and len\(b\)=2",
        id="from_arrays-mismatched-lengths",
    ),
    pytest.param(
        _call(WorstCasePair.additive, np.array([0.25, 0.5, 0.25]), 1.0),
        InvalidInputError,
        r"noise must be a NoiseDistribution, got ndarray",
        id="additive-noise-array",
    ),
    *_positive_real_cases(
        "additive", "sensitivity", lambda v: WorstCasePair.additive(GOOD_NOISE, v)
    ),
    pytest.param(
        _call(WorstCasePair.additive, GOOD_NOISE, 0.3),
        InvalidInputError,
        r"sensitivity=0\.3 is not a whole number of grid steps \(step=0\.5\); "
        r"possible values are multiples of the step: 0\.5, 1, 1\.5",
        id="additive-sensitivity-not-multiple",
    ),
    pytest.param(
        _call(WorstCasePair.subsampled, "noise", 0.5, 1.0),
        InvalidInputError,
        r"noise must be a NoiseDistribution, got str",
        id="subsampled-noise-string",
    ),
    *[
        pytest.param(
            _call(WorstCasePair.subsampled, GOOD_NOISE, q, 1.0),
            InvalidInputError,
            pattern,
            id=f"subsampled-q-{cid}",
        )
        for cid, q, pattern in [
            ("zero", 0.0, r"q must lie in \(0, 1\], got 0\.0"),
            ("negative", -0.1, r"q must lie in \(0, 1\], got -0\.1"),
            ("above_one", 1.5, r"q must lie in \(0, 1\], got 1\.5"),
            ("nan", float("nan"), r"q must be finite, got nan"),
            ("inf", float("inf"), r"q must be finite, got inf"),
            ("string", "0.5", r"q must be a real number, got '0\.5'"),
            ("bool", True, r"q must be a real number, got True"),
        ]
    ],
    *_positive_real_cases(
        "subsampled", "clip", lambda v: WorstCasePair.subsampled(GOOD_NOISE, 0.5, v)
    ),
    pytest.param(
        _call(WorstCasePair.subsampled, GOOD_NOISE, 0.5, 0.75),
        InvalidInputError,
        r"clip=0\.75 is not a whole number of grid steps",
        id="subsampled-clip-not-multiple",
    ),
    pytest.param(
        _call(additive_shift_pairs, [0.5, 0.5], 1.0),
        InvalidInputError,
        r"noise must be a NoiseDistribution, got list",
        id="shift_pairs-noise-list",
    ),
    *_positive_real_cases(
        "additive_shift_pairs", "sensitivity", lambda v: additive_shift_pairs(GOOD_NOISE, v)
    ),
    pytest.param(
        _call(additive_shift_pairs, GOOD_NOISE, 1.2),
        InvalidInputError,
        r"sensitivity=1\.2 is not a whole number of grid steps",
        id="shift_pairs-sensitivity-not-multiple",
    ),
    # --- pld ------------------------------------------------------------------------------
    *_epsilon_cases("exact_delta", exact_delta),
    *_epsilon_cases("exact_delta_pdp", exact_delta_pdp),
    *_epsilon_cases("pld.delta", lambda _pair, v: GOOD_PLD.delta(v)),
    *_epsilon_cases("pld.delta_pdp", lambda _pair, v: GOOD_PLD.delta_pdp(v)),
    *_direction_cases("exact_delta", lambda d: exact_delta(GOOD_PAIR, 0.1, d)),
    *_direction_cases("exact_delta_pdp", lambda d: exact_delta_pdp(GOOD_PAIR, 0.1, d)),
    *_direction_cases("exact_epsilon", lambda d: exact_epsilon(GOOD_PAIR, 0.6, d)),
    *_direction_cases(
        "privacy_loss_distribution", lambda d: privacy_loss_distribution(GOOD_PAIR, d)
    ),
    pytest.param(
        _call(privacy_loss_distribution, GOOD_PAIR, "max"),
        InvalidInputError,
        r"direction must be 'A/B' or 'B/A' for one PLD, got 'max'",
        id="privacy_loss_distribution-direction-max",
    ),
    pytest.param(
        _call(privacy_loss_distribution, ([0.5, 0.5], [0.5, 0.5])),
        InvalidInputError,
        r"pair must be a WorstCasePair, got tuple",
        id="privacy_loss_distribution-pair-tuple",
    ),
    pytest.param(
        _call(exact_delta, [], 0.1),
        InvalidInputError,
        r"pair must be a WorstCasePair or a non-empty sequence of them, got list",
        id="exact_delta-pair-empty-list",
    ),
    pytest.param(
        _call(exact_delta, [GOOD_PAIR, "pair"], 0.1),
        InvalidInputError,
        r"pair must be a WorstCasePair or a non-empty sequence of them, got list",
        id="exact_delta-pair-list-with-string",
    ),
    pytest.param(
        _call(exact_delta_pdp, np.array([0.5, 0.5]), 0.1),
        InvalidInputError,
        r"pair must be a WorstCasePair or a non-empty sequence of them, got ndarray",
        id="exact_delta_pdp-pair-array",
    ),
    pytest.param(
        _call(exact_delta, 5, 0.1),
        InvalidInputError,
        r"pair must be a WorstCasePair or a non-empty sequence of them, got int",
        id="exact_delta-pair-int",
    ),
    pytest.param(
        _call(exact_epsilon, None, 0.1),
        InvalidInputError,
        r"pair must be a WorstCasePair or a non-empty sequence of them, got NoneType",
        id="exact_epsilon-pair-none",
    ),
    *_target_delta_cases("exact_epsilon-adp", lambda v: exact_epsilon(GOOD_PAIR, v)),
    *_target_delta_cases("exact_epsilon-pdp", lambda v: exact_epsilon(GOOD_PAIR, v, kind="pdp")),
    *_target_delta_cases("pld.epsilon", lambda v: GOOD_PLD.epsilon(v)),
    *_target_delta_cases("pld.epsilon_pdp", lambda v: GOOD_PLD.epsilon_pdp(v)),
    *[
        pytest.param(
            lambda kind=kind: exact_epsilon(GOOD_PAIR, 0.6, kind=kind),
            InvalidInputError,
            rf"kind must be 'adp' or 'pdp', got {shown}",
            id=f"exact_epsilon-kind-{kind}",
        )
        for kind, shown in [("ADP", "'ADP'"), ("rdp", "'rdp'"), (None, "None")]
    ],
    # impossible targets: delta below the distinguishing mass omega = 0.5
    *[
        pytest.param(
            call,
            InfeasibleTargetError,
            r"delta=0\.1 is below the distinguishing mass 0\.5; no epsilon reaches it",
            id=f"infeasible-{cid}",
        )
        for cid, call in [
            ("exact_epsilon-adp", _call(exact_epsilon, GOOD_PAIR, 0.1)),
            ("exact_epsilon-pdp", _call(exact_epsilon, GOOD_PAIR, 0.1, kind="pdp")),
            ("exact_epsilon-A/B", _call(exact_epsilon, GOOD_PAIR, 0.1, "A/B")),
            ("exact_epsilon-B/A", _call(exact_epsilon, GOOD_PAIR, 0.1, "B/A")),
            ("exact_epsilon-several", _call(exact_epsilon, [GOOD_PAIR, GOOD_PAIR.flipped()], 0.1)),
            ("pld.epsilon", _call(GOOD_PLD.epsilon, 0.1)),
            ("pld.epsilon_pdp", _call(GOOD_PLD.epsilon_pdp, 0.1)),
        ]
    ],
]


@pytest.mark.parametrize(("call", "error", "pattern"), CASES)
def test_bad_input_is_refused_with_a_clear_message(call, error, pattern):
    with pytest.raises(error, match=pattern) as info:
        call()
    assert isinstance(info.value, ValueError)  # both error types subclass ValueError


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates


# ---------------------------------------------------------------------------------------
# no silent renormalisation, no NaN results


@pytest.mark.parametrize("excess", [1e-6, -1e-6, 1e-8])
def test_pmfs_just_outside_the_tolerance_are_refused_everywhere(excess):
    pmf = [0.25, 0.5, 0.25 + excess]
    builders = [
        lambda: noise.from_array(pmf, step=1.0),
        lambda: NoiseDistribution(pmf=pmf, step=1.0, start=-1.0),
        lambda: WorstCasePair(pmf, [0.25, 0.5, 0.25]),
        lambda: WorstCasePair([0.25, 0.5, 0.25], pmf),
        lambda: WorstCasePair.from_arrays(pmf, [0.25, 0.5, 0.25]),
    ]
    for build in builders:
        with pytest.raises(InvalidInputError, match=r"must sum to 1 \(tolerance 1e-09\)"):
            build()


def test_pmfs_within_the_tolerance_are_kept_as_given():
    pmf = np.array([0.25, 0.5, 0.25 + 5e-10])
    assert noise.from_array(pmf, step=1.0).pmf[2] == pmf[2]
    assert NoiseDistribution(pmf=pmf, step=1.0, start=-1.0).pmf[2] == pmf[2]
    assert WorstCasePair(pmf, pmf).a[2] == pmf[2]


def test_bad_inputs_never_produce_a_nan_result():
    """Every entry point above raises rather than returning NaN: spot-check the ones most
    likely to propagate a NaN silently (array epsilons and pair arrays)."""
    with pytest.raises(InvalidInputError):
        exact_delta(GOOD_PAIR, np.array([0.1, np.nan, 0.2]))
    with pytest.raises(InvalidInputError):
        WorstCasePair([0.5, np.nan, 0.5], [0.5, 0.5, 0.0])
    values = exact_delta(GOOD_PAIR, np.array([0.0, 1e-300, 700.0]))
    assert np.isfinite(values).all()
