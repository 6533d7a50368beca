"""Numerical extremes of the public API, part 1: n, eps, target delta and the CLI.

Guarantee checked (SPEC section 2: "A result that cannot be certified is an error or a
warning, never a silent number"): every extreme case is either answered with certified
bounds (``0 <= lower <= upper <= 1``, no NaN, the reference value inside the bracket where
one exists, a CertificationWarning naming the achieved figure exactly when the accuracy is
missed) or refused with a specific exception whose message names the argument and value.

* n from 1 to 10^6 (Gaussian closed form, randomized response by the binomial formula);
* eps = 0, eps = 50 and far beyond (1e3, 1e6, 1e300: ``math.exp(eps)`` overflows there);
* target delta 1e-15 in ``epsilon(...)``: certified, or InfeasibleTargetError;
* ``accountant audit`` at such extremes: exit 0 with numbers, or exit 2 with one line.

Noise extremes (sensitivity near the noise range, masses below 1e-300, nearly degenerate
noise) are in ``test_extremes_noise.py``.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pytest
from numpy.typing import ArrayLike
from scipy.special import log_ndtr
from scipy.stats import binom

from accountant import (
    Bounds,
    CertificationWarning,
    EpsilonBounds,
    ExtendedMA,
    InfeasibleTargetError,
    PrivacyBuckets,
    WorstCasePair,
    exact_delta,
    exact_delta_pdp,
    exact_epsilon,
    noise,
)
from accountant.mechanisms import GaussianMechanism
from accountant.report.cli import main
from tests.buckets.test_soundness import exact_all

T = TypeVar("T")
CONVERSIONS = ("tight", "paper")
#: Far beyond every loss: e^eps overflows a float above ~709.78.
HUGE_EPS = (1e3, 1e6, 1e300)


# ---------------------------------------------------------------------------------------
# shared checks (also used by test_extremes_noise.py)


def certified(
    bounds: Bounds,
    truth: ArrayLike | None = None,
    *,
    rtol: float = 0.0,
    atol: float = 0.0,
    total: float = 1.0,
) -> None:
    """``0 <= lower <= upper <= total`` without NaN (``total``: the composed total mass of
    the masses as given, 1 unless they sum above 1), and ``lower <= truth <= upper`` within
    the reference's own error ``rtol * truth + atol`` when a reference is given."""
    lower, upper = np.atleast_1d(bounds.lower), np.atleast_1d(bounds.upper)
    assert not (np.isnan(lower).any() or np.isnan(upper).any()), bounds
    assert ((lower >= 0.0) & (lower <= upper) & (upper <= total)).all(), bounds
    if truth is not None:
        truth = np.broadcast_to(np.asarray(truth, dtype=float), lower.shape)
        slack = rtol * truth + atol
        assert (lower <= truth + slack).all(), ("lower", lower, truth)
        assert (upper >= truth - slack).all(), ("upper", upper, truth)


def recorded(call: Callable[[], T]) -> tuple[T, list[str]]:
    """``(result, CertificationWarning messages)`` of ``call()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    messages = [str(w.message) for w in caught if issubclass(w.category, CertificationWarning)]
    return result, messages


def warned_iff_missed(bounds: Bounds, messages: list[str]) -> None:
    """A CertificationWarning naming the achieved figure exactly when it is missed (for
    PDP, by the bracket apart from a lattice atom at eps, which ``atom`` reports)."""
    lower, upper = np.atleast_1d(bounds.lower), np.atleast_1d(bounds.upper)
    atom = np.broadcast_to(np.asarray(bounds.atom, dtype=float), upper.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        decided = np.where(upper > 0.0, (upper - atom - lower) / upper, 0.0)
    if float(np.max(decided, initial=0.0)) > bounds.accuracy:
        assert len(messages) == 1 and f"{bounds.achieved_accuracy:.3g}" in messages[0], messages
    else:
        assert messages == [], messages


def epsilon_warned_iff_missed(found: EpsilonBounds, messages: list[str]) -> None:
    achieved = (found.upper - found.lower) / found.upper if found.upper > 0.0 else 0.0
    if achieved > found.accuracy:
        assert len(messages) == 1 and f"{achieved:.3g}" in messages[0], messages
    else:
        assert messages == [], messages


def infeasible(call: Callable[[], object], target: float) -> None:
    """``call`` raises InfeasibleTargetError naming the target and the distinguishing mass."""
    with pytest.raises(InfeasibleTargetError) as info:
        call()
    assert f"delta={target!r}" in str(info.value) and "distinguishing mass" in str(info.value)


def gaussian_delta(mu: float, eps: float) -> float:
    """Closed-form ADP delta of the Gaussian mechanism with ``mu = sensitivity /
    sigma_eff`` (``s = 1/mu``): ``Phi(-eps s + 1/(2s)) - e^eps Phi(-eps s - 1/(2s))``,
    in log space so tiny tails keep their relative accuracy."""
    first = float(log_ndtr(-eps / mu + mu / 2.0))
    if first == -math.inf:  # eps ~ 1e300: below every float
        return 0.0
    second = eps + float(log_ndtr(-eps / mu - mu / 2.0))
    return math.exp(first) * -math.expm1(second - first)


# ---------------------------------------------------------------------------------------
# n from 1 to 10^6


N_CASES = [
    (1, 1e-4),
    (1000, 1e-2),
    pytest.param(10**6, 1e-4, marks=pytest.mark.slow),  # ~35 s: 2^22 buckets, FFT
]


@pytest.mark.parametrize(("times", "accuracy"), N_CASES)
def test_gaussian_mechanism_from_one_to_a_million_releases(times: int, accuracy: float) -> None:
    """sigma = sqrt(n): every n gives sigma_eff = 1, the same closed-form delta."""
    mechanism = GaussianMechanism(sigma=math.sqrt(times))
    eps = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    truth = np.array([gaussian_delta(1.0, e) for e in eps])
    accountant = PrivacyBuckets(accuracy=accuracy).compose(mechanism, times=times)
    bounds, messages = recorded(lambda: accountant.delta(eps))
    certified(bounds, truth, rtol=1e-12)
    warned_iff_missed(bounds, messages)
    assert bounds.releases == times
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(mechanism, times=times)
        assert (ma.delta(eps).upper >= truth * (1.0 - 1e-12)).all(), conversion
        found = ma.epsilon(1e-5).upper
        assert gaussian_delta(1.0, found) <= 1e-5 * (1.0 + 1e-12), (conversion, found)


def _randomized_response(a: float) -> WorstCasePair:
    p = math.exp(a) / (1.0 + math.exp(a))
    return WorstCasePair(np.array([p, 1.0 - p]), np.array([1.0 - p, p]))


def _binomial_delta(pair: WorstCasePair, times: int, eps: float) -> float:
    """``sum_k C(n,k) p^k q^(n-k) max(0, 1 - e^(eps - (2k - n) a))`` with the pair's own
    float masses (a = ln(p/q)); scipy's binomial pmf is accurate to ~1e-13 here."""
    p, q = float(pair.a[0]), float(pair.a[1])
    k = np.arange(times + 1)
    losses = (2.0 * k - times) * (math.log(p) - math.log(q))
    above = losses > eps
    return float(np.sum(binom.pmf(k[above], times, p) * -np.expm1(eps - losses[above])))


def test_randomized_response_a_million_releases_against_the_binomial_formula() -> None:
    """A lattice of 10^6 + 1 losses: the engine follows it, so the bracket is tiny and the
    default accuracy is met without a warning."""
    pair, times = _randomized_response(1e-3), 10**6
    eps = np.array([0.0, 1.0, 3.0, 5.0])
    truth = np.array([_binomial_delta(pair, times, e) for e in eps])
    accountant = PrivacyBuckets().compose(pair, times=times)
    bounds, messages = recorded(lambda: accountant.delta(eps))
    certified(bounds, truth, rtol=1e-9)
    assert messages == [] and bounds.achieved_accuracy <= accountant.accuracy
    found, messages = recorded(lambda: accountant.epsilon(1e-6))
    epsilon_warned_iff_missed(found, messages)
    assert _binomial_delta(pair, times, found.upper) <= 1e-6 * (1.0 + 1e-9)
    assert _binomial_delta(pair, times, found.lower * (1.0 - 1e-9)) >= 1e-6 * (1.0 - 1e-9)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
        assert (ma.delta(eps).upper >= bounds.lower).all(), conversion
        assert ma.epsilon(1e-6).upper >= found.lower, conversion


# ---------------------------------------------------------------------------------------
# eps = 0, eps = 50 and beyond


def _small_gaussian_pair() -> WorstCasePair:
    """11 outcomes, largest loss 2.5 (< 50): delta(50) is the distinguishing mass."""
    return WorstCasePair.additive(noise.truncated_gaussian(1.0, 2.0, 0.5), 1.0)


@pytest.mark.parametrize("times", [1, 3])
def test_eps_zero_fifty_and_beyond_on_a_pair(times: int) -> None:
    pair = _small_gaussian_pair()
    eps = (0.0, 50.0, *HUGE_EPS)
    exact = exact_all([(pair.a, pair.b, times)], eps)
    omega = 1.0 - (1.0 - float(pair.a[:2].sum())) ** times  # B = 0 on the first 2 steps
    accountant = PrivacyBuckets().compose(pair, times=times)
    for direction in ("A/B", "B/A", "max"):
        for kind, query in (("ADP", accountant.delta), ("PDP", accountant.delta_pdp)):
            bounds, messages = recorded(lambda q=query, d=direction: q(np.array(eps), d))
            certified(bounds, [float(v) for v in exact[(kind, direction)]])
            warned_iff_missed(bounds, messages)
            # beyond every loss only the distinguishing mass is left: a tight bracket
            np.testing.assert_allclose(bounds.upper[1:], omega, rtol=1e-9)
            np.testing.assert_allclose(bounds.lower[1:], omega, rtol=1e-9)
        for conversion in CONVERSIONS:
            ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
            values = ma.delta(np.array(eps), direction=direction).upper
            truth = np.array([float(v) for v in exact[("ADP", direction)]])
            assert (values >= truth * (1.0 - 1e-12)).all(), (conversion, values, truth)
            np.testing.assert_allclose(values[1:], omega, rtol=1e-12)
    if times == 1:
        for query, kind in ((exact_delta, "ADP"), (exact_delta_pdp, "PDP")):
            np.testing.assert_allclose(
                query(pair, np.array(eps)),
                [float(v) for v in exact[(kind, "max")]],
                rtol=1e-12,
                atol=1e-300,
            )


def test_eps_zero_fifty_and_beyond_on_the_gaussian_mechanism() -> None:
    """No largest loss: delta(50) ~ e^-1250 underflows; the bracket must still hold and
    eps beyond ~709.78 (where e^eps overflows) must not raise OverflowError."""
    mechanism = GaussianMechanism(sigma=1.0)
    eps = np.array([0.0, 50.0, *HUGE_EPS])
    truth = np.array([gaussian_delta(1.0, e) for e in eps])
    bounds, messages = recorded(lambda: PrivacyBuckets().compose(mechanism, 2).delta(eps))
    certified(bounds, [gaussian_delta(math.sqrt(2.0), e) for e in eps], rtol=1e-12)
    warned_iff_missed(bounds, messages)
    assert bounds.upper[-1] <= 1e-20  # only the cut tails remain
    pdp, messages = recorded(lambda: PrivacyBuckets().compose(mechanism).delta_pdp(eps))
    certified(pdp)
    warned_iff_missed(pdp, messages)
    single, _ = recorded(lambda: PrivacyBuckets().compose(mechanism).delta(eps))
    certified(single, truth, rtol=1e-12)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(mechanism)
        assert (ma.delta(eps).upper >= truth).all() and ma.delta(0.0).upper <= 1.0


# ---------------------------------------------------------------------------------------
# target delta 1e-15


def test_target_delta_1e15_gaussian_mechanism() -> None:
    """eps ~ 50 for delta = 1e-15: e^eps scales the FFT round-off of the B-masses, so the
    eps bracket is wide; it must still hold, and the width must be announced."""
    mechanism, times, target = GaussianMechanism(sigma=2.0), 100, 1e-15
    mu = math.sqrt(times) / 2.0
    found, messages = recorded(
        lambda: PrivacyBuckets().compose(mechanism, times=times).epsilon(target)
    )
    epsilon_warned_iff_missed(found, messages)
    assert 0.0 < found.lower <= found.upper and found.delta == target
    assert gaussian_delta(mu, found.upper) <= target * (1.0 + 1e-9)
    assert gaussian_delta(mu, found.lower * (1.0 - 1e-9)) > target
    for conversion in CONVERSIONS:
        eps = (
            ExtendedMA(conversion=conversion).compose(mechanism, times=times).epsilon(target).upper
        )
        assert eps >= found.lower and gaussian_delta(mu, eps) <= target * (1.0 + 1e-9)


def test_a_target_below_the_default_cut_tails_is_certified() -> None:
    """A million releases cut ``2 (N + 2) 1e-24 = 2e-18`` from their tails by default,
    more than delta = 1e-18: the query takes a smaller tail mass instead of refusing
    (it was refused: "the mass the engine could not place is 1.98e-18")."""
    mechanism, times, target = GaussianMechanism(sigma=1000.0), 10**6, 1e-18
    mu = math.sqrt(times) / 1000.0
    found, messages = recorded(
        lambda: PrivacyBuckets().compose(mechanism, times=times).epsilon(target)
    )
    epsilon_warned_iff_missed(found, messages)
    assert gaussian_delta(mu, found.upper) <= target * (1.0 + 1e-9)
    assert gaussian_delta(mu, found.lower * (1.0 - 1e-9)) > target
    assert (found.upper - found.lower) / found.upper <= 1e-4


def test_target_delta_1e15_single_release_pair_against_exact() -> None:
    """A wide truncation (omega ~ 1e-88 < 1e-15): the exact single-release eps lies in the
    certified bracket, and the Extended MA eps is no smaller."""
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 20.0, 0.5), 1.0)
    target = 1e-15
    truth = exact_epsilon(pair, target)
    assert exact_delta(pair, truth) <= target < exact_delta(pair, truth - 5 * math.ulp(truth))
    found, messages = recorded(lambda: PrivacyBuckets().compose(pair).epsilon(target))
    epsilon_warned_iff_missed(found, messages)
    # (1e-12: exact_epsilon bisects on the rounded losses ln A - ln B)
    assert found.lower - 1e-12 <= truth <= found.upper + 1e-12, (found, truth)
    for conversion in CONVERSIONS:
        assert ExtendedMA(conversion=conversion).compose(pair).epsilon(target).upper >= truth
    pdp = exact_epsilon(pair, target, kind="PDP")
    assert exact_delta_pdp(pair, pdp) <= target
    found, _ = recorded(lambda: PrivacyBuckets().compose(pair).epsilon(target, kind="PDP"))
    assert found.lower - 1e-12 <= pdp <= found.upper + 1e-12, (found, pdp)


@pytest.mark.parametrize("times", [1, 50])
def test_target_delta_1e15_below_the_distinguishing_mass_is_refused(times: int) -> None:
    """Truncation at 4 sigma: omega ~ 7e-5 per release, far above 1e-15."""
    pair = WorstCasePair.additive(noise.truncated_gaussian(1.0, 4.0, 0.5), 1.0)
    target = 1e-15
    infeasible(lambda: PrivacyBuckets().compose(pair, times=times).epsilon(target), target)
    for conversion in CONVERSIONS:
        ma = ExtendedMA(conversion=conversion).compose(pair, times=times)
        infeasible(lambda m=ma: m.epsilon(target).upper, target)
    if times == 1:
        infeasible(lambda: exact_epsilon(pair, target), target)
        infeasible(lambda: exact_epsilon(pair, target, kind="PDP"), target)


# ---------------------------------------------------------------------------------------
# the CLI at extremes


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict | None, str]:
    """Run ``accountant audit ... --json``: ``(exit status, rows by name, stderr)``."""
    status = main(["audit", *args, "--json"])
    captured = capsys.readouterr()
    if status != 0:
        return status, None, captured.err
    return status, _rows(json.loads(captured.out)), captured.err


def _rows(payload: dict) -> dict[str, dict]:
    """The JSON report's values by the labels of the printed table."""
    query, results = payload["query"], payload["results"]
    what, n = ("delta" if query["quantity"] == "delta" else "eps"), query["compositions"]
    rows = {
        "distinguishing mass, one release": results["distinguishing_mass"]["one_release"],
        f"distinguishing mass, after n = {n}": results["distinguishing_mass"]["composed"],
        f"exact {what}, one release (ADP)": results["exact"]["adp"],
        f"exact {what}, one release (PDP)": results["exact"]["pdp"],
    }
    for conversion in ("tight", "paper"):
        label = f"Extended MA {what}, {conversion} conversion, n = {n}"
        rows[label] = results["extended_ma"][conversion]
    for kind, bracket in (results["privacy_buckets"] or {}).items():
        for side in ("lower", "upper"):
            rows[f"PrivacyBuckets {kind.upper()} {what} {side}, n = {n}"] = bracket[side]
    return rows


def _number(row: dict) -> float:
    value = row["reported"]
    return math.inf if value == "inf" else float(value)


@pytest.mark.parametrize(
    "query", [("--epsilon", "50"), ("--epsilon", "1000"), ("--target-delta", "1e-15")]
)
def test_cli_audit_at_extremes_prints_certified_numbers(
    capsys: pytest.CaptureFixture[str], query: tuple[str, str]
) -> None:
    """eps = 50, eps = 1000 (an OverflowError traceback before the fix) and target delta
    1e-15, after 10 releases of a truncated Gaussian whose edge masses underflow."""
    noise_args = ("--sigma", "1", "--bound", "40", "--step", "0.5", "-n", "10")
    status, rows, err = _audit(capsys, *noise_args, *query)
    assert status == 0, err
    values = {name: _number(row) for name, row in rows.items()}
    assert not any(math.isnan(v) for v in values.values()), values
    if query[0] == "--epsilon":
        low, high = (values[f"PrivacyBuckets ADP delta {s}, n = 10"] for s in ("lower", "upper"))
        assert 0.0 <= low <= high <= 1.0
        for conversion in CONVERSIONS:
            assert values[f"Extended MA delta, {conversion} conversion, n = 10"] >= low
    else:
        low, high = (values[f"PrivacyBuckets ADP eps {s}, n = 10"] for s in ("lower", "upper"))
        assert 0.0 < low <= high < math.inf
        for conversion in CONVERSIONS:
            assert values[f"Extended MA eps, {conversion} conversion, n = 10"] >= low


@pytest.mark.parametrize(
    ("query", "needle"),
    [(("--target-delta", "1e-15"), "delta=1e-15"), (("-n", "0"), "-n/--compositions")],
)
def test_cli_audit_refuses_impossible_extremes_in_one_line(
    capsys: pytest.CaptureFixture[str], query: tuple[str, str], needle: str
) -> None:
    """Sensitivity beyond the noise range: no eps reaches any delta < 1."""
    args = ("--sigma", "1", "--bound", "4", "--step", "0.5", "--sensitivity", "8.5", *query)
    status, _, err = _audit(capsys, *args)
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err


def test_cli_audit_sensitivity_beyond_the_range_reports_delta_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("--sigma", "1", "--bound", "4", "--step", "0.5", "--sensitivity", "8.5")
    status, rows, err = _audit(capsys, *args, "--epsilon", "0", "-n", "3")
    assert status == 0, err
    for name, row in rows.items():
        if "delta" in name:
            assert _number(row) == pytest.approx(1.0, abs=1e-12), name
