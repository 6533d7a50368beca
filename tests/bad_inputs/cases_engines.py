"""Bad-input cases for PrivacyBuckets, ExtendedMA, log-moments, PLDs, mechanisms and noise."""

from __future__ import annotations

from accountant import (
    ExtendedMA,
    InfeasibleTargetError,
    PairLogMoments,
    PrivacyBuckets,
    PrivacyLossDistribution,
    mechanisms,
    noise,
)
from tests.bad_inputs.catalogue import (
    COMPOSED_BUCKETS,
    COMPOSED_MA,
    EPSILON,
    EPSILONS,
    FINITE,
    INF,
    NAN,
    PAIR,
    PAIR_OMEGA,
    PLD_ARGS,
    POSITIVE_INT,
    TARGET_DELTA,
    TG,
    case,
    each,
)

ENGINE_CASES = [
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
            (True, "got True"),
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
    *each(
        "PrivacyBuckets",
        "mechanism",
        lambda v: PrivacyBuckets().compose(v),
        [
            ([PAIR, PAIR], "got a list of 2: PrivacyBuckets composes one pair per release"),
            ((PAIR,), "or use ExtendedMA, which bounds the worst case over the sequence"),
        ],
    ),
    *each(
        "PrivacyBuckets",
        "kind",
        lambda v: PrivacyBuckets().epsilon(1e-3, kind=v),
        [("RDP", "kind must be 'ADP' or 'PDP', got 'RDP'")],
    ),
    *each(
        "ExtendedMA",
        "conversion",
        lambda v: ExtendedMA(conversion=v),
        [("markov", "conversion must be one of ('tight', 'paper'), got 'markov'")],
    ),
    # --- analytic mechanisms (more in cases_mechanisms.py) ----------
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
    *each(
        "mechanisms.TruncatedDiscreteLaplaceMechanism",
        "scale",
        lambda v: mechanisms.TruncatedDiscreteLaplaceMechanism(scale=v, bound=3),
        [(NAN, "got nan"), (-1.0, "got -1.0"), ("2", "got '2'")],
    ),
    *each(
        "mechanisms.TruncatedDiscreteLaplaceMechanism",
        "bound",
        lambda v: mechanisms.TruncatedDiscreteLaplaceMechanism(scale=1.0, bound=v),
        [(2.5, "got 2.5"), (0, "got 0"), (True, "got True")],
    ),
    *each(
        "mechanisms.TruncatedDiscreteLaplaceMechanism",
        "sensitivity",
        lambda v: mechanisms.TruncatedDiscreteLaplaceMechanism(scale=1.0, bound=3, sensitivity=v),
        [(6, "got sensitivity=6"), (-1, "got -1")],
    ),
    # --- noise families (more in cases_noise.py) -------------------------
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
