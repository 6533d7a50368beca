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
from tests.bad_input_cases import (
    GOOD_NOISE,
    GOOD_PAIR,
    GOOD_PLD,
    _call,
    _direction_cases,
    _epsilon_cases,
    _finite_real_cases,
    _pmf_cases,
    _positive_int_cases,
    _positive_real_cases,
    _target_delta_cases,
)

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
    *_target_delta_cases("exact_epsilon-pdp", lambda v: exact_epsilon(GOOD_PAIR, v, kind="PDP")),
    *_target_delta_cases("pld.epsilon", lambda v: GOOD_PLD.epsilon(v)),
    *_target_delta_cases("pld.epsilon_pdp", lambda v: GOOD_PLD.epsilon_pdp(v)),
    *[
        pytest.param(
            lambda kind=kind: exact_epsilon(GOOD_PAIR, 0.6, kind=kind),
            InvalidInputError,
            rf"kind must be 'ADP' or 'PDP', got {shown}",
            id=f"exact_epsilon-kind-{kind}",
        )
        for kind, shown in [("adp", "'adp'"), ("rdp", "'rdp'"), (None, "None")]
    ],
    # impossible targets: delta below the distinguishing mass omega = 0.5
    *[
        pytest.param(
            call,
            InfeasibleTargetError,
            r"delta=0\.1 is below the distinguishing mass of one release 0\.5; no epsilon "
            r"reaches it",
            id=f"infeasible-{cid}",
        )
        for cid, call in [
            ("exact_epsilon-adp", _call(exact_epsilon, GOOD_PAIR, 0.1)),
            ("exact_epsilon-pdp", _call(exact_epsilon, GOOD_PAIR, 0.1, kind="PDP")),
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
